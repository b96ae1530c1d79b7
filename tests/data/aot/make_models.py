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

# lstm_sequence_lens.onnx: one bidirectional LSTM (input 8, hidden 16, peepholes) over a batch of
# 3 whose sequence_lens is the constant [5, 2, 0]: the entries stop at different steps, the
# reverse direction starts each entry at its own last step, Y stays zero past each length.
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(25)
hidden, inputs, dirs = 16, 8, 2


def weight(name, *shape):
    return numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)


graph = helper.make_graph(
    [helper.make_node("LSTM", ["x", "W", "R", "B", "sequence_lens", "", "", "P"],
                      ["y", "y_h", "y_c"], hidden_size=hidden, direction="bidirectional")],
    "lstm_sequence_lens",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 3, inputs])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", dirs, 3, hidden]),
     helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [dirs, 3, hidden]),
     helper.make_tensor_value_info("y_c", TensorProto.FLOAT, [dirs, 3, hidden])],
    [weight("W", dirs, 4 * hidden, inputs), weight("R", dirs, 4 * hidden, hidden),
     weight("B", dirs, 8 * hidden), weight("P", dirs, 3 * hidden),
     numpy_helper.from_array(np.array([5, 2, 0], dtype=np.int32), "sequence_lens")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "lstm_sequence_lens.onnx"))

# slice_pad_run_time.onnx: a Slice whose start, a Pad whose pads and a Reshape whose shape are
# graph inputs (int64), so the extents they give depend on the values: the library names them as
# data-dependent dims, sizes the Tanh and Mul after them from the run's values and returns y and z
# in its own memory.
# The outputs' dims are named as exporters name them, by no input.
graph = helper.make_graph(
    [helper.make_node("Slice", ["x", "start", "ends", "axes"], ["window"], name="window"),
     helper.make_node("Tanh", ["window"], ["y"], name="squash"),
     helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad", mode="edge"),
     helper.make_node("Mul", ["padded", "padded"], ["squared"], name="square"),
     helper.make_node("Reshape", ["squared", "shape"], ["z"], name="flatten")],
    "slice_pad_run_time",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 16]),
     helper.make_tensor_value_info("start", TensorProto.INT64, [1]),
     helper.make_tensor_value_info("pads", TensorProto.INT64, [4]),
     helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", "window"]),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, ["rows", "columns"])],
    [numpy_helper.from_array(np.array([1], dtype=np.int64), "axes"),
     numpy_helper.from_array(np.array([2**62], dtype=np.int64), "ends")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "slice_pad_run_time.onnx"))

# decoder.onnx: a speech-enhancement decoder's tail as PyTorch 1.13 exports it at opset 14, time
# dynamic: a strided ConvTranspose1d with ReLU and a CumSum over time, and a ConvTranspose2d mask
# (output_padding) with a Sigmoid. Each is a Halide block (the epilogues fused), so the library
# holds no reference block.


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.ConvTranspose1d(16, 8, kernel_size=4, stride=2, padding=1)
        self.mask = torch.nn.ConvTranspose2d(2, 1, kernel_size=(3, 2), stride=(1, 2),
                                             padding=(1, 0), output_padding=(0, 1))

    def forward(self, x, s):
        y = torch.relu(self.up(x))
        return torch.cumsum(y, dim=2), torch.sigmoid(self.mask(s))


torch.onnx.export(
    Decoder(), (torch.randn(1, 16, 5), torch.randn(1, 2, 6, 5)), os.path.join(here, "decoder.onnx"),
    opset_version=14, input_names=["x", "s"], output_names=["y", "mask"],
    dynamic_axes={"x": {0: "batch", 2: "time"}, "s": {0: "batch", 3: "time"},
                  "y": {0: "batch", 2: "time2"}, "mask": {0: "batch", 3: "time2"}})

# front_end.onnx: a speech front-end exported inside the graph (opset 17): an STFT of a 400-sample
# chunk (frame 64, step 16, a constant periodic Hann window, onesided) and a real DFT of a
# [batch, 24, 1] signal zero-padded to dft_length 32, onesided. Both are Halide GEMMs against their
# transform matrices (tests/aot/aot_test.sh).
n_fft = 64
hann = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
graph = helper.make_graph(
    [helper.make_node("STFT", ["signal", "step", "window"], ["spectrum"], name="stft"),
     helper.make_node("DFT", ["x", "dft_length"], ["bins"], name="dft", onesided=1)],
    "front_end",
    [helper.make_tensor_value_info("signal", TensorProto.FLOAT, [1, 400, 1]),
     helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 24, 1])],
    [helper.make_tensor_value_info("spectrum", TensorProto.FLOAT, [1, 22, 33, 2]),
     helper.make_tensor_value_info("bins", TensorProto.FLOAT, ["batch", 17, 2])],
    [numpy_helper.from_array(np.array(16, dtype=np.int64), "step"),
     numpy_helper.from_array(hann.astype(np.float32), "window"),
     numpy_helper.from_array(np.array(32, dtype=np.int64), "dft_length")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "front_end.onnx"))

# stft_conv.onnx: an STFT written as a Conv, as Silero VAD exports it (opset 15): the chunk
# reflect-padded by 32 on each side, then a Conv of stride 16 whose 66 filters are a Hann window
# times cos (33 real parts) and -sin (33 imaginary parts) of the 64-point DFT basis, then the
# frames moved first (Transpose). rnnc runs the Conv as two short DFTs (lowering/lower_dft_conv.h)
# and the Transpose as a copy block (tests/aot/aot_test.sh).
n_fft, bins = 64, 33
taps = np.arange(n_fft)
window = 0.5 - 0.5 * np.cos(2 * np.pi * taps / n_fft)
phase = 2 * np.pi * np.outer(np.arange(bins), taps) / n_fft
basis = np.concatenate([window * np.cos(phase), -window * np.sin(phase)])[:, None, :]
graph = helper.make_graph(
    [helper.make_node("Pad", ["signal", "pads"], ["padded"], name="pad", mode="reflect"),
     helper.make_node("Conv", ["padded", "basis"], ["spectrum"], name="stft_conv", strides=[16]),
     helper.make_node("Transpose", ["spectrum"], ["frames"], name="frames_first", perm=[0, 2, 1])],
    "stft_conv",
    [helper.make_tensor_value_info("signal", TensorProto.FLOAT, ["batch", 1, 400])],
    [helper.make_tensor_value_info("frames", TensorProto.FLOAT, ["batch", 26, 66])],
    [numpy_helper.from_array(np.array([0, 0, 32, 0, 0, 32], dtype=np.int64), "pads"),
     numpy_helper.from_array(basis.astype(np.float32), "basis")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "stft_conv.onnx"))

# upsampler.onnx: a vocoder's upsampling as PyTorch 1.13 exports it at opset 14: linear x4 along a
# static time axis (half_pixel) and a 2-D nearest x2 (asymmetric, floor), batch dynamic.
# Both are Halide resize blocks (tests/aot/aot_test.sh).


class Upsampler(torch.nn.Module):
    def forward(self, x, s):
        return (torch.nn.functional.interpolate(x, scale_factor=4, mode="linear"),
                torch.nn.functional.interpolate(s, scale_factor=2, mode="nearest"))


torch.onnx.export(
    Upsampler(), (torch.randn(1, 4, 10), torch.randn(1, 2, 3, 5)),
    os.path.join(here, "upsampler.onnx"), opset_version=14, input_names=["x", "s"],
    output_names=["y", "grid"], dynamic_axes={"x": {0: "batch"}, "s": {0: "batch"},
                                              "y": {0: "batch"}, "grid": {0: "batch"}})
