#!/usr/bin/python3
"""PyTorch exports the graph_opt tests hold the layout and fusion passes to
(tests/unit/graph_opt_layout_test.cc).

Three small models as torch.onnx.export writes them (opset 14, dynamic seq and batch axes, no
initial state passed, so the exporter builds the zero states from the input's shape):
  lstm_bidirectional  2-layer bidirectional LSTM (input 8, hidden 16) -> Linear(32, 4): the
                      Y -> Transpose(0, 2, 1, 3) -> Reshape([0, 0, -1]) pattern per layer;
  gru                 2-layer GRU (input 8, hidden 16) -> Linear(16, 4): Y -> Squeeze(1) per layer;
  lstm_batch_first    1-layer LSTM with batch_first=True (input 8, hidden 16) -> Linear(16, 4) ->
                      Tanh: the batch-major input/output Transposes around the recurrent node.
For each, one input (seq 5, batch 3) and PyTorch's output for it.

Run from the repository root:  /usr/bin/python3 tests/data/graph_opt/make_exports.py
Writes tests/data/graph_opt/<name>.onnx, <name>_input.npy, <name>_expected.npy. Deterministic.
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
INPUT, HIDDEN, CLASSES = 8, 16, 4
SEQ, BATCH = 5, 3


class BidirectionalLstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True)
        self.head = torch.nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y)


class Gru(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(INPUT, HIDDEN, num_layers=2)
        self.head = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y)


class BatchFirstLstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(INPUT, HIDDEN, batch_first=True)
        self.head = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        y, _ = self.rnn(x)
        return torch.tanh(self.head(y))


def export(name, model, example, axes):
    with torch.inference_mode():
        expected = model(example)
    torch.onnx.export(
        model, (example,), os.path.join(HERE, name + ".onnx"),
        input_names=["x"], output_names=["y"],
        dynamic_axes={"x": axes, "y": axes}, opset_version=14)
    np.save(os.path.join(HERE, name + "_input.npy"), example.numpy())
    np.save(os.path.join(HERE, name + "_expected.npy"), expected.numpy())


def main():
    torch.manual_seed(20260317)
    seq_major = {0: "seq", 1: "batch"}
    export("lstm_bidirectional", BidirectionalLstm().eval(), torch.randn(SEQ, BATCH, INPUT),
           seq_major)
    export("gru", Gru().eval(), torch.randn(SEQ, BATCH, INPUT), seq_major)
    export("lstm_batch_first", BatchFirstLstm().eval(), torch.randn(BATCH, SEQ, INPUT),
           {0: "batch", 1: "seq"})
    print("wrote lstm_bidirectional, gru, lstm_batch_first (.onnx, _input.npy, _expected.npy);"
          " torch", torch.__version__)


if __name__ == "__main__":
    main()
