#!/usr/bin/python3
"""Writes lstm_initial_states.onnx: torch.nn.LSTM(16, 32, num_layers=2) called with (h0, c0), as
PyTorch 1.13 exports it at opset 14 with dynamic seq and batch. The export slices each layer's
initial state out of h0 / c0 (Slice) and concatenates the final states into h_n / c_n (Concat),
so the model has copy blocks around its recurrent blocks (tests/aot/aot_test.sh).

  /usr/bin/python3 tests/data/aot/make_lstm_initial_states.py   # rewrites the file beside it
"""
import os

import torch

torch.manual_seed(25)


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(16, 32, num_layers=2)

    def forward(self, x, h0, c0):
        return self.rnn(x, (h0, c0))


out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lstm_initial_states.onnx")
torch.onnx.export(
    Stack(), (torch.randn(5, 2, 16), torch.randn(2, 2, 32), torch.randn(2, 2, 32)), out,
    opset_version=14, input_names=["x", "h0", "c0"], output_names=["y", "h_n", "c_n"],
    dynamic_axes={"x": {0: "seq", 1: "batch"}, "h0": {1: "batch"}, "c0": {1: "batch"},
                  "y": {0: "seq", 1: "batch"}, "h_n": {1: "batch"}, "c_n": {1: "batch"}})
