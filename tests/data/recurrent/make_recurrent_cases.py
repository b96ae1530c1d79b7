#!/usr/bin/python3
"""Generates the LSTM / GRU / RNN numeric cases of tests/unit/recurrent_test.cc.

Each case is a folder in the ONNX backend test layout (model.onnx, test_data_set_0/input_N.pb,
output_N.pb) holding one recurrent node with random weights and inputs, and outputs computed here
in float64 by an implementation written independently of rnnc's reference kernel: it steps the
whole batch at once with masks for sequence_lens, where the kernel loops over batch entries.
Wherever torch.nn.LSTM / GRU / RNN can express a case (default activations, no clip, peepholes or
input_forget), the NumPy result is also checked against torch before it is written, so the NumPy
reference is itself tested on the gate orders, directions and sequence_lens handling.

Run with Debian's Python (torch 1.13, onnx 1.12, numpy):
    /usr/bin/python3 tests/data/recurrent/make_recurrent_cases.py
The output is deterministic (fixed seeds); commit the regenerated folders.
"""
import os
import shutil

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 14

# ---- activations, as the ONNX spec lists them -------------------------------------------------

DEFAULT_ALPHA = {"affine": 1.0, "leakyrelu": 0.01, "thresholdedrelu": 1.0, "scaledtanh": 1.0,
                 "hardsigmoid": 0.2, "elu": 1.0}
DEFAULT_BETA = {"affine": 0.0, "scaledtanh": 1.0, "hardsigmoid": 0.5}


def activation(name, alpha, beta):
    name = name.lower()
    return {
        "relu": lambda x: np.maximum(x, 0),
        "tanh": np.tanh,
        "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "affine": lambda x: alpha * x + beta,
        "leakyrelu": lambda x: np.where(x >= 0, x, alpha * x),
        "thresholdedrelu": lambda x: np.where(x >= alpha, x, 0),
        "scaledtanh": lambda x: alpha * np.tanh(beta * x),
        "hardsigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1)),
        "softsign": lambda x: x / (1 + np.abs(x)),
        "softplus": lambda x: np.log(1 + np.exp(x)),
    }[name]


def activation_functions(names, alphas, betas):
    """activation_alpha / activation_beta are consumed in order by the activations that take
    them; the rest keep the default of the ONNX operator of the same name."""
    alphas, betas = list(alphas), list(betas)
    functions = []
    for name in names:
        key = name.lower()
        alpha = alphas.pop(0) if key in DEFAULT_ALPHA and alphas else DEFAULT_ALPHA.get(key, 0.0)
        beta = betas.pop(0) if key in DEFAULT_BETA and betas else DEFAULT_BETA.get(key, 0.0)
        functions.append(activation(name, alpha, beta))
    assert not alphas and not betas, "unconsumed activation_alpha/beta values"
    return functions


# ---- one time step of each cell, for the whole batch ------------------------------------------

def clipper(clip):
    return (lambda x: x) if clip is None else (lambda x: np.clip(x, -clip, clip))


def lstm_cell(W, R, Wb, Rb, P, acts, clip, input_forget):
    f, g, h = acts
    clamp = clipper(clip)
    Wi, Wo, Wf, Wc = np.split(W, 4)
    Ri, Ro, Rf, Rc = np.split(R, 4)
    Wbi, Wbo, Wbf, Wbc = np.split(Wb, 4)
    Rbi, Rbo, Rbf, Rbc = np.split(Rb, 4)
    Pi, Po, Pf = np.split(P, 3)

    def step(x, H, C):
        i = f(clamp(x @ Wi.T + H @ Ri.T + Pi * C + Wbi + Rbi))
        if input_forget:
            fg = 1 - i
        else:
            fg = f(clamp(x @ Wf.T + H @ Rf.T + Pf * C + Wbf + Rbf))
        c = g(clamp(x @ Wc.T + H @ Rc.T + Wbc + Rbc))
        C_new = fg * C + i * c
        o = f(clamp(x @ Wo.T + H @ Ro.T + Po * C_new + Wbo + Rbo))
        return o * h(C_new), C_new
    return step


def gru_cell(W, R, Wb, Rb, acts, clip, linear_before_reset):
    f, g = acts
    clamp = clipper(clip)
    Wz, Wr, Wh = np.split(W, 3)
    Rz, Rr, Rh = np.split(R, 3)
    Wbz, Wbr, Wbh = np.split(Wb, 3)
    Rbz, Rbr, Rbh = np.split(Rb, 3)

    def step(x, H, C):
        z = f(clamp(x @ Wz.T + H @ Rz.T + Wbz + Rbz))
        r = f(clamp(x @ Wr.T + H @ Rr.T + Wbr + Rbr))
        if linear_before_reset:
            hh = g(clamp(x @ Wh.T + r * (H @ Rh.T + Rbh) + Wbh))
        else:
            hh = g(clamp(x @ Wh.T + (r * H) @ Rh.T + Rbh + Wbh))
        return (1 - z) * hh + z * H, C
    return step


def rnn_cell(W, R, Wb, Rb, acts, clip):
    (f,) = acts
    clamp = clipper(clip)

    def step(x, H, C):
        return f(clamp(x @ W.T + H @ R.T + Wb + Rb)), C
    return step


def run_direction(step, X, lens, reverse, H0, C0):
    """X: [seq, batch, input] (layout 0). Entry b runs over its own lens[b] steps, in reverse
    from step lens[b]-1 when `reverse`; Y past lens[b] stays 0."""
    seq, batch = X.shape[:2]
    Y = np.zeros((seq, batch, H0.shape[-1]))
    H, C = H0.copy(), C0.copy()
    rows = np.arange(batch)
    for s in range(seq):
        active = s < lens
        t = np.where(active, lens - 1 - s if reverse else s, 0)
        H_new, C_new = step(X[t, rows], H, C)
        H = np.where(active[:, None], H_new, H)
        C = np.where(active[:, None], C_new, C)
        Y[t[active], rows[active]] = H_new[active]
    return Y, H, C


def reference(op, inputs, attrs):
    """Outputs (Y, Y_h[, Y_c]) in layout 0 for layout-0 inputs, computed in float64."""
    X = inputs["X"].astype(np.float64)
    W, R = inputs["W"].astype(np.float64), inputs["R"].astype(np.float64)
    dirs, _, hidden = R.shape
    seq, batch, _ = X.shape
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    B = inputs.get("B", np.zeros((dirs, 2 * gates * hidden))).astype(np.float64)
    H0 = inputs.get("initial_h", np.zeros((dirs, batch, hidden))).astype(np.float64)
    C0 = inputs.get("initial_c", np.zeros((dirs, batch, hidden))).astype(np.float64)
    P = inputs.get("P", np.zeros((dirs, 3 * hidden))).astype(np.float64)
    lens = inputs.get("sequence_lens", np.full(batch, seq)).astype(np.int64)
    direction = attrs.get("direction", "forward")
    defaults = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}
    names = attrs.get("activations", defaults[op] * dirs)
    acts = activation_functions(names, attrs.get("activation_alpha", []),
                                attrs.get("activation_beta", []))
    per_dir = len(acts) // dirs
    clip = attrs.get("clip")
    Y = np.zeros((seq, dirs, batch, hidden))
    Y_h = np.zeros((dirs, batch, hidden))
    Y_c = np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        Wb, Rb = np.split(B[d], 2)
        act = acts[d * per_dir:(d + 1) * per_dir]
        if op == "LSTM":
            step = lstm_cell(W[d], R[d], Wb, Rb, P[d], act, clip, attrs.get("input_forget", 0))
        elif op == "GRU":
            step = gru_cell(W[d], R[d], Wb, Rb, act, clip, attrs.get("linear_before_reset", 0))
        else:
            step = rnn_cell(W[d], R[d], Wb, Rb, act, clip)
        reverse = direction == "reverse" or (direction == "bidirectional" and d == 1)
        Y[:, d], Y_h[d], Y_c[d] = run_direction(step, X, lens, reverse, H0[d], C0[d])
    return [Y, Y_h, Y_c] if op == "LSTM" else [Y, Y_h]


# ---- torch cross-check ------------------------------------------------------------------------

# Rows of ONNX's gate blocks in torch's order: LSTM iofc -> ifco (torch's i, f, g, o), GRU zrh ->
# rzh (torch's r, z, n).
TORCH_GATE_ORDER = {"LSTM": [0, 2, 3, 1], "GRU": [1, 0, 2], "RNN": [0]}


def torch_reference(op, inputs, attrs):
    """The same outputs from torch.nn.LSTM / GRU / RNN (GRU: linear_before_reset=1 only), one
    batch entry at a time on its own truncated sequence so sequence_lens (including 0) is exact."""
    X = torch.from_numpy(inputs["X"].astype(np.float64))
    W, R = inputs["W"].astype(np.float64), inputs["R"].astype(np.float64)
    dirs, _, hidden = R.shape
    seq, batch, input_size = X.shape
    order = TORCH_GATE_ORDER[op]
    gates = len(order)
    B = inputs.get("B", np.zeros((dirs, 2 * gates * hidden))).astype(np.float64)
    H0 = torch.from_numpy(inputs.get("initial_h", np.zeros((dirs, batch, hidden))).astype(np.float64))
    C0 = torch.from_numpy(inputs.get("initial_c", np.zeros((dirs, batch, hidden))).astype(np.float64))
    lens = inputs.get("sequence_lens", np.full(batch, seq))
    module_type = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNN": torch.nn.RNN}[op]
    module = module_type(input_size, hidden, bidirectional=dirs == 2).double()

    def permute(matrix):
        return torch.from_numpy(np.concatenate([np.split(matrix, gates)[k] for k in order]))
    with torch.no_grad():
        for d in range(dirs):
            suffix = "_l0" + ("_reverse" if d == 1 else "")
            Wb, Rb = np.split(B[d], 2)
            getattr(module, "weight_ih" + suffix).copy_(permute(W[d]))
            getattr(module, "weight_hh" + suffix).copy_(permute(R[d]))
            getattr(module, "bias_ih" + suffix).copy_(permute(Wb))
            getattr(module, "bias_hh" + suffix).copy_(permute(Rb))
    reverse_only = attrs.get("direction") == "reverse"
    Y = np.zeros((seq, dirs, batch, hidden))
    Y_h, Y_c = H0.numpy().copy(), C0.numpy().copy()
    with torch.no_grad():
        for b in range(batch):
            length = int(lens[b])
            if length == 0:
                continue
            x = X[:length, b:b + 1]
            if reverse_only:  # torch has no reverse-only mode: run forward on the flipped sequence
                x = torch.flip(x, [0])
            state = (H0[:, b:b + 1], C0[:, b:b + 1]) if op == "LSTM" else H0[:, b:b + 1]
            y, final = module(x, state)
            if reverse_only:
                y = torch.flip(y, [0])
            Y[:length, :, b] = y[:, 0].reshape(length, dirs, hidden).numpy()
            if op == "LSTM":
                Y_h[:, b], Y_c[:, b] = final[0][:, 0].numpy(), final[1][:, 0].numpy()
            else:
                Y_h[:, b] = final[:, 0].numpy()
    return [Y, Y_h, Y_c] if op == "LSTM" else [Y, Y_h]


# ---- writing cases ----------------------------------------------------------------------------

INPUT_NAMES = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]


def to_layout1(name, array):
    """Layout 1 shapes from layout 0 ones: X, Y move batch first; states swap their first two."""
    if name == "X":
        return array.transpose(1, 0, 2)
    if name == "Y":
        return array.transpose(2, 0, 1, 3)
    if name in ("initial_h", "initial_c", "Y_h", "Y_c"):
        return array.transpose(1, 0, 2)
    return array


def write_case(name, op, inputs, attrs, torch_check=False, layout=0, dtype=np.float32):
    """inputs: layout-0 arrays (already of the model's element type); the case is written in
    `layout`, its expected outputs transposed to match."""
    outputs = reference(op, inputs, attrs)
    if torch_check:
        expected = torch_reference(op, inputs, attrs)
        for mine, theirs in zip(outputs, expected):
            np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12, err_msg=name)
    output_names = ["Y", "Y_h", "Y_c"][:len(outputs)]
    if layout == 1:
        inputs = {k: to_layout1(k, v) for k, v in inputs.items()}
        outputs = [to_layout1(k, v) for k, v in zip(output_names, outputs)]
    outputs = [v.astype(dtype) for v in outputs]

    node_inputs = [n if n in inputs else "" for n in INPUT_NAMES]
    while node_inputs[-1] == "":
        node_inputs.pop()
    node_attrs = dict(attrs)
    if layout == 1:
        node_attrs["layout"] = 1
    node = helper.make_node(op, node_inputs, output_names, name=name, **node_attrs)
    elem = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]
    graph_inputs = [helper.make_tensor_value_info(
        n, onnx.TensorProto.INT32 if n == "sequence_lens" else elem, inputs[n].shape)
        for n in INPUT_NAMES if n in inputs]
    graph_outputs = [helper.make_tensor_value_info(n, elem, v.shape)
                     for n, v in zip(output_names, outputs)]
    graph = helper.make_graph([node], name, graph_inputs, graph_outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="make_recurrent_cases.py")
    model.ir_version = 7
    onnx.checker.check_model(model, full_check=True)

    folder = os.path.join(HERE, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "test_data_set_0"))
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for k, n in enumerate(n for n in INPUT_NAMES if n in inputs):
        tensor = numpy_helper.from_array(inputs[n], n)
        with open(os.path.join(folder, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())
    for k, (n, v) in enumerate(zip(output_names, outputs)):
        with open(os.path.join(folder, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, n).SerializeToString())


def random_inputs(op, seed, seq=4, batch=3, input_size=3, hidden=4, dirs=1, bias=True,
                  initial=True, peepholes=False, lens=None, dtype=np.float32):
    rng = np.random.default_rng(seed)
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]

    def uniform(*shape, scale=1.0):
        return (rng.uniform(-scale, scale, shape)).astype(dtype)
    inputs = {
        "X": uniform(seq, batch, input_size),
        "W": uniform(dirs, gates * hidden, input_size, scale=0.7),
        "R": uniform(dirs, gates * hidden, hidden, scale=0.7),
    }
    if bias:
        inputs["B"] = uniform(dirs, 2 * gates * hidden, scale=0.5)
    if lens is not None:
        inputs["sequence_lens"] = np.array(lens, dtype=np.int32)
    if initial:
        inputs["initial_h"] = uniform(dirs, batch, hidden, scale=0.5)
        if op == "LSTM":
            inputs["initial_c"] = uniform(dirs, batch, hidden, scale=0.5)
    if peepholes:
        inputs["P"] = uniform(dirs, 3 * hidden, scale=0.5)
    return inputs


def main():
    # LSTM
    write_case("lstm_bidirectional", "LSTM", random_inputs("LSTM", 1, dirs=2),
               {"hidden_size": 4, "direction": "bidirectional"}, torch_check=True)
    write_case("lstm_reverse", "LSTM", random_inputs("LSTM", 2),
               {"hidden_size": 4, "direction": "reverse"}, torch_check=True)
    seq_lens = random_inputs("LSTM", 3, seq=5, batch=4, dirs=2, lens=[5, 0, 2, 3])
    write_case("lstm_sequence_lens", "LSTM", seq_lens,
               {"hidden_size": 4, "direction": "bidirectional"}, torch_check=True)
    # The same node and data in layout 1: the outputs must be the layout-0 ones transposed.
    write_case("lstm_sequence_lens_layout1", "LSTM", seq_lens,
               {"hidden_size": 4, "direction": "bidirectional"}, torch_check=True, layout=1)
    write_case("lstm_clip", "LSTM", random_inputs("LSTM", 4, lens=[4, 1, 3]),
               {"hidden_size": 4, "clip": 0.6})
    write_case("lstm_input_forget", "LSTM", random_inputs("LSTM", 5),
               {"hidden_size": 4, "input_forget": 1})
    write_case("lstm_peepholes", "LSTM", random_inputs("LSTM", 6, dirs=2, peepholes=True,
                                                       lens=[2, 4, 0]),
               {"hidden_size": 4, "direction": "bidirectional"})
    write_case("lstm_activations", "LSTM", random_inputs("LSTM", 7, dirs=2),
               {"hidden_size": 4, "direction": "bidirectional",
                "activations": ["HardSigmoid", "ScaledTanh", "Softsign",
                                "Sigmoid", "LeakyRelu", "Elu"],
                "activation_alpha": [0.3, 1.5, 0.05, 0.7], "activation_beta": [0.4, 0.8]})
    write_case("lstm_float16", "LSTM", random_inputs("LSTM", 8, dtype=np.float16),
               {"hidden_size": 4}, dtype=np.float16)
    # GRU
    write_case("gru_linear_before_reset", "GRU",
               random_inputs("GRU", 11, seq=5, batch=4, dirs=2, lens=[3, 5, 0, 1]),
               {"hidden_size": 4, "direction": "bidirectional", "linear_before_reset": 1},
               torch_check=True)
    write_case("gru_reset_before_linear", "GRU",
               random_inputs("GRU", 12, seq=5, batch=4, dirs=2, lens=[3, 5, 0, 1]),
               {"hidden_size": 4, "direction": "bidirectional"})
    write_case("gru_clip", "GRU", random_inputs("GRU", 13),
               {"hidden_size": 4, "clip": 0.5, "direction": "reverse"})
    write_case("gru_activations", "GRU", random_inputs("GRU", 14, dirs=2),
               {"hidden_size": 4, "direction": "bidirectional",
                "activations": ["HardSigmoid", "Affine", "sigmoid", "ThresholdedRelu"],
                "activation_alpha": [0.25, 0.9, 0.1], "activation_beta": [0.45, 0.1]})
    write_case("gru_float64", "GRU", random_inputs("GRU", 15, lens=[4, 2, 3], dtype=np.float64),
               {"hidden_size": 4}, dtype=np.float64)
    # RNN
    write_case("rnn_hidden_size_omitted", "RNN", random_inputs("RNN", 21, dirs=2),
               {"direction": "bidirectional"}, torch_check=True)
    write_case("rnn_reverse_sequence_lens", "RNN", random_inputs("RNN", 22, lens=[3, 0, 4]),
               {"hidden_size": 4, "direction": "reverse"}, torch_check=True)
    write_case("rnn_clip", "RNN", random_inputs("RNN", 23), {"hidden_size": 4, "clip": 0.3})
    write_case("rnn_activations", "RNN", random_inputs("RNN", 24, dirs=2),
               {"hidden_size": 4, "direction": "bidirectional",
                "activations": ["Relu", "Softplus"]})
    # LeakyRelu and Elu without activation_alpha: their defaults, 0.01 and 1.0.
    write_case("rnn_activation_defaults", "RNN", random_inputs("RNN", 25, dirs=2),
               {"hidden_size": 4, "direction": "bidirectional",
                "activations": ["LeakyRelu", "Elu"]})


if __name__ == "__main__":
    main()
