#!/usr/bin/python3
"""Builds rnnc's bundled demo model with Debian's PyTorch (python3-torch) and stores one input
and PyTorch's output for it.

The model stands for a small streaming acoustic model: 40 filterbank features per 10 ms frame ->
2-layer LSTM (hidden 128) -> Linear -> LogSoftmax over 32 output classes (e.g. characters).
The initial LSTM state is created from the input's batch size, so the export contains the
Shape -> Gather -> Unsqueeze -> Concat -> ConstantOfShape chain real exporters emit.

Run from the repository root:  /usr/bin/python3 models/demo/make_demo_model.py
Writes models/demo/{lstm_demo.onnx, input.npy, expected_output.npy}. Deterministic (fixed seed).
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
FEATURES, HIDDEN, LAYERS, CLASSES = 40, 128, 2, 32
SEQ, BATCH = 50, 1


class AcousticModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(FEATURES, HIDDEN, num_layers=LAYERS)
        self.head = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, features):
        batch = features.size(1)
        h0 = torch.zeros(LAYERS, batch, HIDDEN)
        c0 = torch.zeros(LAYERS, batch, HIDDEN)
        hidden, _ = self.lstm(features, (h0, c0))
        return torch.log_softmax(self.head(hidden), dim=-1)


def main():
    torch.manual_seed(20261121)
    model = AcousticModel().eval()
    features = torch.randn(SEQ, BATCH, FEATURES)
    with torch.inference_mode():
        expected = model(features)
    torch.onnx.export(
        model, (features,), os.path.join(HERE, "lstm_demo.onnx"),
        input_names=["features"], output_names=["log_probs"],
        dynamic_axes={"features": {0: "seq", 1: "batch"}, "log_probs": {0: "seq", 1: "batch"}},
        opset_version=14)
    np.save(os.path.join(HERE, "input.npy"), features.numpy())
    np.save(os.path.join(HERE, "expected_output.npy"), expected.numpy())
    print("wrote lstm_demo.onnx, input.npy, expected_output.npy; torch", torch.__version__)


if __name__ == "__main__":
    main()
