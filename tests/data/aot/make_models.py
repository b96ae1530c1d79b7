#!/usr/bin/python3
"""Writes, as PyTorch 1.13 exports them at opset 14 with dynamic seq and batch:
  lstm_initial_states.onnx  torch.nn.LSTM(16, 32, num_layers=2) called with (h0, c0)
  gru_bidirectional.onnx    torch.nn.GRU(16, 24, num_layers=2, bidirectional=True) called with h0
The exports slice each layer's initial state out of h0 / c0 (Slice) and concatenate the final
states into h_n / c_n (Concat), so the models have copy blocks around their recurrent blocks; the
GRU's directions run in one block each, the backward one reversed, with linear_before_reset
(tests/aot/aot_test.sh).

  /usr/bin/python3 tests/data/aot/make_models.py   # rewrites the files beside it
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


class Bidirectional(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(16, 24, num_layers=2, bidirectional=True)

    def forward(self, x, h0):
        return self.rnn(x, h0)


here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "lstm_initial_states.onnx")
torch.onnx.export(
    Stack(), (torch.randn(5, 2, 16), torch.randn(2, 2, 32), torch.randn(2, 2, 32)), out,
    opset_version=14, input_names=["x", "h0", "c0"], output_names=["y", "h_n", "c_n"],
    dynamic_axes={"x": {0: "seq", 1: "batch"}, "h0": {1: "batch"}, "c0": {1: "batch"},
                  "y": {0: "seq", 1: "batch"}, "h_n": {1: "batch"}, "c_n": {1: "batch"}})
torch.onnx.export(
    Bidirectional(), (torch.randn(5, 2, 16), torch.randn(4, 2, 24)),
    os.path.join(here, "gru_bidirectional.onnx"), opset_version=14, input_names=["x", "h0"],
    output_names=["y", "h_n"],
    dynamic_axes={"x": {0: "seq", 1: "batch"}, "h0": {1: "batch"}, "y": {0: "seq", 1: "batch"},
                  "h_n": {1: "batch"}})
