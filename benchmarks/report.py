#!/usr/bin/python3
"""Turns one benchmark run into the committed docs: merges rnnc_bench's JSON (rnnc and ONNX
Runtime, same process) with torch_runner.py's JSON (PyTorch) into docs/benchmarks-<cpu>.json,
writes the tables as the run's CPU section of docs/benchmarks.md and a speedup-over-ONNX-Runtime
bar chart to docs/benchmarks-<cpu>.png. <cpu> names the CPU kind (cpu_kind below: "amd-epyc-zen-4",
"intel-xeon"); a run replaces its own CPU's section and keeps the other CPUs' sections and the
sections other tools measured (after KEPT_MARKER), so the report holds the latest run per CPU.

  /usr/bin/python3 benchmarks/report.py --bench B.json --torch T.json --out-dir docs \
      --command "scripts/bench.sh" --workloads models/workloads.json [--no-chart]

Ratios are rnnc / peer latency (median over per-run samples); below 1 means rnnc is faster. The
speedup in the chart is the inverse, peer / rnnc. Every ratio compares numbers from one run. When
rnnc_bench measured the machine bounds (its "machine_bounds" object), a section compares the
recurrent stacks with the weight-streaming floor derived from them (weight_floor).
"""
import argparse
import json
import math
import os


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", required=True, help="rnnc_bench --json output")
    parser.add_argument("--torch", help="torch_runner.py --json output")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--command", default="scripts/bench.sh")
    parser.add_argument("--workloads", help="models/workloads.json (model structure for the "
                        "bandwidth and floor tables)")
    parser.add_argument("--no-chart", action="store_true",
                        help="skip the chart (no matplotlib needed)")
    return parser.parse_args()


def fmt_us(value):
    if value is None:
        return "-"
    if value >= 100000:
        return f"{value / 1000:.0f} ms"
    if value >= 10000:
        return f"{value / 1000:.1f} ms"
    if value >= 1000:
        return f"{value / 1000:.2f} ms"
    return f"{value:.0f} µs" if value >= 100 else f"{value:.1f} µs"


def fmt_ratio(value):
    if value is None:
        return "-"
    return f"{value:.3g}"


def stack_matrices(workload):
    """Per layer and direction of a recurrent stack: (R elements, W elements), or None for
    workloads that are not plain LSTM/GRU/RNN stacks (another cell, or an output layer)."""
    cell = workload.get("cell")
    if cell not in ("lstm", "gru", "rnn") or workload.get("head"):
        return None
    gates = {"lstm": 4, "gru": 3, "rnn": 1}[cell]
    hidden, dirs = workload["hidden_size"], 2 if workload.get("bidirectional") else 1
    matrices = []
    for layer in range(workload["layers"]):
        inputs = workload["input_size"] if layer == 0 else hidden * dirs
        matrices += [(gates * hidden * hidden, gates * hidden * inputs)] * dirs
    return matrices


def weight_traffic_bytes(workload):
    """Weight bytes a run must read at least: each layer's recurrent matrix once per step (it
    cannot stay in registers across steps) and its input matrix once (one GEMM over all steps).
    None for workloads that are not plain recurrent stacks."""
    matrices = stack_matrices(workload)
    if matrices is None:
        return None
    return sum(4 * (r * workload["seq"] + w) for r, w in matrices)


def fmt_bytes(size):
    return f"{size >> 20} MiB" if size >= 2**20 else f"{size >> 10} KiB"


def stream_rate(bounds, level, size):
    """Bytes per µs of the best call of the measured stream set for a cache level: the smallest
    set of that level that holds `size` bytes, else its largest."""
    sets = sorted((m for m in bounds["stream"] if m["level"] == level), key=lambda m: m["bytes"])
    if not sets:
        return None
    chosen = next((m for m in sets if m["bytes"] >= size), sets[-1])
    return chosen["gbps_best"] * 1e3


def weight_floor(workload, bounds, meta, weight_bytes, ops_per_us):
    """The weight-streaming floor of one batch-1 run of a recurrent stack on one core: (floor µs,
    reads alone µs, weight bytes), or None for workloads that are not batch-1 LSTM/GRU/RNN stacks.

    Per layer and direction, with R = gates·H·H and W = gates·H·input weights of `weight_bytes`:
    - the model's weights stay between runs in the smallest level that holds them all (L2 per
      core, L3, else DRAM), so each run reads W and its first R from there;
    - the other seq - 1 steps read R again: the part the L2 can keep from the step before (a
      step walks its tiles backwards every other step, so that part is the one read last) at the
      L2 rate, the rest from L3 (DRAM if R is larger than L3);
    - the input projection (2·seq·input·gates·H ops, at the measured peak: FMA for float, VNNI
      for int8) overlaps W's read: the larger of the two counts.
    The recurrent product's own arithmetic runs on R as it arrives and is not counted. Rates are
    the best call's of the stream set of that level (Machine bounds)."""
    matrices = stack_matrices(workload)
    if matrices is None or workload.get("batch") != 1:
        return None
    seq = workload["seq"]
    l2 = meta.get("l2_bytes_per_core") or 2**20
    l3 = meta.get("l3_bytes") or max(
        [m["bytes"] for m in bounds["stream"] if m["level"] == "L3"] or [16 << 20])
    total = sum(weight_bytes * (r + w) for r, w in matrices)
    home = "L2" if total <= l2 else "L3" if total <= l3 else "DRAM"
    home_rate = stream_rate(bounds, home, total)
    if home_rate is None or stream_rate(bounds, "L2", l2) is None:
        return None
    floor_us = reads_us = 0.0
    for r_elements, w_elements in matrices:
        r, w = weight_bytes * r_elements, weight_bytes * w_elements
        ops = 2 * seq * w_elements  # 2·seq·input·gates·H
        kept = min(r, l2)
        rest = r - kept
        rest_rate = stream_rate(bounds, "L3" if r <= l3 else "DRAM", r) or home_rate
        reread_us = kept / stream_rate(bounds, "L2", kept) + rest / rest_rate
        first_us = r / home_rate
        w_us = w / home_rate
        floor_us += max(w_us, ops / ops_per_us) + first_us + (seq - 1) * reread_us
        reads_us += w_us + first_us + (seq - 1) * reread_us
    return floor_us, reads_us, total


def model_floor(cost, bounds, meta, flops_per_us):
    """The floor of one run of a model from its counted cost (rnnc_bench's `cost`: the compute
    nodes' multiply-adds and weight bytes, ir/model_cost.h): the weight bytes at the L2 stream
    rate (the set that holds them, else the largest L2 set) plus the arithmetic at the FMA peak.
    (floor µs, weight bytes, MFLOP), or None without a cost."""
    if not cost or "macs" not in cost or cost.get("unknown"):
        return None
    weights, flops = cost["weight_bytes"], 2 * cost["macs"]
    rate = stream_rate(bounds, "L2", weights)
    if rate is None:
        return None
    return weights / rate + flops / flops_per_us, weights, flops / 1e6


def model_floor_section(add, bounds, meta, workloads, info, by_key, flops_per_us):
    """The model floor table for the workloads the stack floors do not cover (Silero VAD), with
    the floor of each node that holds a tenth of the weights or of the arithmetic."""
    rows = []
    for w in workloads:
        result = by_key.get((w, 1))
        if not result or weight_floor(info[w], bounds, meta, 4, flops_per_us) is not None:
            continue
        cost = result.get("cost")
        whole = model_floor(cost, bounds, meta, flops_per_us)
        if whole is not None:
            rows.append((w, result, cost, whole))
    if not rows:
        return
    add("### Model floor of the other workloads, 1 thread")
    add("")
    add("Counted on the graph rnnc compiles for the workload's inputs (rnnc_bench's `cost`, "
        "ir/model_cost.h: Conv, ConvTranspose, MatMul, Gemm and recurrent nodes): their weight "
        "bytes at the L2 stream rate plus their arithmetic (2 flops per multiply-add) at the FMA "
        "peak, best calls above (benchmarks/report.py `model_floor`). Elementwise and data "
        "movement ops are not counted. Below each workload whose floor is a microsecond or more, "
        "the nodes with a tenth or more of its weights or arithmetic, each with its own floor. "
        "Medians of the 1-thread latency tables.")
    add("")
    add("| workload | weights | MFLOP | floor | ONNX Runtime | rnnc | ONNX Runtime / floor | "
        "rnnc / floor |")
    add("|---|---|---|---|---|---|---|---|")
    for w, result, cost, (floor_us, weights, mflop) in rows:
        peer, rnnc = median(result.get("onnxruntime")), median(result.get("rnnc"))
        add(f"| {w} | {weights / 1e6:.2f} MB | {mflop:.2f} | {fmt_us(floor_us)} | "
            f"{fmt_us(peer)} | {fmt_us(rnnc)} | {fmt_ratio(ratio(peer, floor_us))} | "
            f"{fmt_ratio(ratio(rnnc, floor_us))} |")
        # Parts of a sub-microsecond floor say nothing (call overhead is the run); equal nodes
        # (a stack's layers) are one row.
        parts = {}
        for node in cost["nodes"]:
            if floor_us < 1 or (node["weight_bytes"] < 0.1 * cost["weight_bytes"] and
                                node["macs"] < 0.1 * cost["macs"]):
                continue
            parts.setdefault((node["op"], node["macs"], node["weight_bytes"]), []).append(node["node"])
        for (op, macs, weight_bytes), names in parts.items():
            part = model_floor({"macs": macs, "weight_bytes": weight_bytes}, bounds, meta,
                               flops_per_us)
            label = f"{op} `{names[0]}`" if len(names) == 1 else f"{len(names)} × {op}, each"
            add(f"| ↳ {label} | {part[1] / 1e6:.3f} MB | {part[2]:.3f} | {fmt_us(part[0])} "
                "| | | | |")
    add("")


def machine_bounds_section(add, bounds, meta, workloads, info, by_key, threads_list):
    add("## Machine bounds")
    add("")
    add(f"What one core of this host does, measured by rnnc_bench at the start of this run "
        f"(benchmarks/machine_bounds.h): Halide kernels JIT-compiled for `{bounds['target']}`, "
        f"{bounds['vector_lanes']} float lanes × {bounds['accumulators']} independent "
        "accumulators in registers. Stream: a float32 buffer of the given size summed over and "
        "over (GB/s = bytes read / time); FMA: independent multiply-add chains (2 flops per "
        "lane); int8 dot products, where the CPU has VNNI: 15 int32 accumulators each updated by "
        "vpdpbusd in assembly (4 multiply-adds per lane, 2 ops each). "
        f"Each figure is over {bounds['repetitions']} timed calls of about "
        f"{bounds['seconds_per_call'] * 1000:g} ms: the median, the best (fastest call) and the "
        "worst; every call's result is checked exactly. The machine is shared: the best call is "
        "the closest to what the hardware can do.")
    add("")
    add("| measurement | stands for | median | best | worst |")
    add("|---|---|---|---|---|")
    for m in bounds["stream"]:
        add(f"| stream read {fmt_bytes(m['bytes'])} | {m['level']} | "
            f"{m['gbps_median']:.1f} GB/s | {m['gbps_best']:.1f} GB/s | "
            f"{m['gbps_worst']:.1f} GB/s |")
    fma = bounds["fma"]
    add(f"| float32 FMA | peak compute | {fma['gflops_median']:.1f} GFLOP/s | "
        f"{fma['gflops_best']:.1f} GFLOP/s | {fma['gflops_worst']:.1f} GFLOP/s |")
    vnni = bounds.get("vnni")
    if vnni:
        add(f"| int8 dot products ({vnni['instruction']}) | peak int8 compute | "
            f"{vnni['gops_median']:.1f} GOP/s | {vnni['gops_best']:.1f} GOP/s | "
            f"{vnni['gops_worst']:.1f} GOP/s |")
    add("")

    if 1 not in threads_list:
        return
    model_floor_section(add, bounds, meta, workloads, info, by_key, fma["gflops_best"] * 1e3)
    float_floors = [(w, weight_floor(info[w], bounds, meta, 4, fma["gflops_best"] * 1e3))
                    for w in workloads if (w, 1) in by_key]
    float_floors = [(w, f) for w, f in float_floors if f is not None]
    if not float_floors:
        return
    l2 = meta.get("l2_bytes_per_core") or 2**20
    l3 = meta.get("l3_bytes")
    add("### Weight-streaming floor of the batch-1 stacks, 1 thread")
    add("")
    add("The least time a run can take on one core given where its weights must come from "
        "(benchmarks/report.py `weight_floor`): per layer and direction, W and the first read of "
        "R from the level that holds the whole model between runs (L2 per core, "
        f"{fmt_bytes(l2)} here; L3, {fmt_bytes(l3) if l3 else 'the 16 MiB set'}; else DRAM), "
        "then every later step's R again: the part the L2 keeps from the step before (the step "
        "walks its tiles backwards every other step) at the L2 rate, the rest at the L3 rate; "
        "plus the input projection's arithmetic at the FMA (float) or VNNI (int8) peak, counted "
        "where it exceeds W's read, which it overlaps. The recurrent product's arithmetic runs on "
        "R as it streams in and is not counted; \"reads alone\" leaves out the projection "
        "too. Rates are the best calls above. Medians of the 1-thread latency tables.")
    add("")
    floor_table(add, float_floors, by_key, "ONNX Runtime", "onnxruntime", "rnnc", "rnnc")
    if not vnni:
        return
    int8_floors = [(w, weight_floor(info[w], bounds, meta, 1, vnni["gops_best"] * 1e3))
                   for w, _ in float_floors if "rnnc_int8" in by_key[(w, 1)]]
    int8_floors = [(w, f) for w, f in int8_floors if f is not None]
    if not int8_floors:
        return
    add("The same floor for int8 weights (one byte each; the per-row scales and column sums, "
        "3% of the bytes or less, left out), with the projection at the VNNI peak: rnnc int8 and "
        "ONNX Runtime's DynamicQuantizeLSTM from the Quantized table below.")
    add("")
    floor_table(add, int8_floors, by_key, "DynamicQuantizeLSTM", "ort_dqlstm", "rnnc int8",
                "rnnc_int8")


def floor_table(add, floors, by_key, peer_name, peer_key, rnnc_name, rnnc_key):
    """One row per (workload, weight_floor's result): the two engines' 1-thread medians against
    the floor."""
    add(f"| workload | weights | floor | reads alone | {peer_name} | {rnnc_name} | "
        f"{peer_name} / floor | {rnnc_name} / floor |")
    add("|---|---|---|---|---|---|---|---|")
    for w, (floor_us, reads_us, weight_bytes) in floors:
        result = by_key[(w, 1)]
        peer, rnnc = median(result.get(peer_key)), median(result.get(rnnc_key))
        add(f"| {w} | {fmt_bytes(weight_bytes)} | {fmt_us(floor_us)} | "
            f"{fmt_us(reads_us)} | {fmt_us(peer)} | {fmt_us(rnnc)} | "
            f"{fmt_ratio(ratio(peer, floor_us))} | {fmt_ratio(ratio(rnnc, floor_us))} |")
    add("")


def latency_cell(latency):
    if not latency:
        return "-"
    return (f"{fmt_us(latency['median'])} "
            f"<sub>p90 {fmt_us(latency['p90'])}, min {fmt_us(latency['min'])}, "
            f"n={latency['count']}</sub>")


def error_cell(result, key):
    """A max |error| from the run's JSON, or "-" where it was not measured (-1 or absent)."""
    value = result.get(key)
    return f"{value:.2e}" if value is not None and value >= 0 else "-"


def median(engine):
    latency = (engine or {}).get("latency_us")
    return latency["median"] if latency else None


def ratio(a, b):
    return a / b if a is not None and b is not None and b > 0 else None


def paired_ratios(a, b):
    """Round by round, a's round median over b's: (median, lowest, highest) over the rounds both
    engines were timed in, or None. Engines alternate within each round, so a pair shares the
    machine's load of that moment; load that drifts between rounds cancels in each pair."""
    a_rounds = (a or {}).get("round_medians_us") or []
    b_rounds = (b or {}).get("round_medians_us") or []
    if not a_rounds or len(a_rounds) != len(b_rounds) or min(b_rounds) <= 0:
        return None
    pairs = sorted(x / y for x, y in zip(a_rounds, b_rounds))
    n = len(pairs)
    mid = pairs[n // 2] if n % 2 else 0.5 * (pairs[n // 2 - 1] + pairs[n // 2])
    return mid, pairs[0], pairs[-1]


def fmt_paired(paired, invert=False):
    """A paired-rounds cell: the median ratio and its range (inverted for speedups)."""
    if paired is None:
        return "-"
    mid, lo, hi = paired
    if invert:
        return f"{1 / mid:.2f}× <sub>{1 / hi:.2f}..{1 / lo:.2f}</sub>"
    return f"{mid:.3g} <sub>{lo:.3g}..{hi:.3g}</sub>"


def rnnc_status(result):
    if result["status"] != "ok":
        return f"{result['status']}: {result.get('detail', '')}"
    rnnc = result["rnnc"]
    if rnnc["status"] in ("unsupported", "failed"):
        error = rnnc.get("error", "").replace("|", "\\|").replace("\n", " ")
        return f"rnnc: {rnnc['status']} ({error[:160]})"
    if rnnc["status"] == "disagrees":
        return "rnnc: DISAGREES with ONNX Runtime"
    return "ok"


def main():
    args = parse_args()
    with open(args.bench) as f:
        bench = json.load(f)
    torch_data = {"meta": None, "results": []}
    if args.torch and os.path.exists(args.torch):
        with open(args.torch) as f:
            torch_data = json.load(f)
    meta = bench["meta"]
    threads_list = meta["threads"]
    tm = torch_data.get("meta") or {}

    by_key = {(r["workload"], r["threads"]): r for r in bench["results"]}
    torch_by_key = {(r["workload"], r["threads"]): r for r in torch_data["results"]}
    workloads = []
    for result in bench["results"]:
        if result["workload"] not in workloads:
            workloads.append(result["workload"])
    info = {r["workload"]: dict(r) for r in bench["results"]}
    # The manifest's structure fields (cell, hidden_size, layers, ...) for the bandwidth table.
    if args.workloads and os.path.exists(args.workloads):
        with open(args.workloads) as f:
            for entry in json.load(f)["workloads"]:
                if entry["name"] in info:
                    for key, value in entry.items():
                        info[entry["name"]].setdefault(key, value)

    def best(peer, workload):
        """The peer's fastest median over the thread counts measured, and that thread count."""
        candidates = []
        for n in threads_list:
            if peer == "ort":
                value = median(by_key.get((workload, n), {}).get("onnxruntime"))
            else:
                value = median(torch_by_key.get((workload, n)))
            if value is not None:
                candidates.append((value, n))
        return min(candidates) if candidates else (None, None)

    # The merged raw results, with the derived ratios, for later runs to compare against.
    merged_rows = []
    for workload in workloads:
        for n in threads_list:
            result = by_key.get((workload, n))
            if result is None:
                continue
            torch_result = torch_by_key.get((workload, n))
            rnnc_median = median(result["rnnc"])
            ort_best, ort_best_n = best("ort", workload)
            torch_best, torch_best_n = best("torch", workload)
            merged_rows.append({
                "workload": workload, "threads": n,
                "rnnc_over_ort_same_threads": ratio(rnnc_median, median(result["onnxruntime"])),
                "rnnc_over_ort_paired_rounds": paired_ratios(result["rnnc"],
                                                             result["onnxruntime"]),
                "rnnc_over_ort_best": ratio(rnnc_median, ort_best), "ort_best_threads": ort_best_n,
                "rnnc_over_torch_same_threads": ratio(rnnc_median, median(torch_result)),
                "rnnc_over_torch_best": ratio(rnnc_median, torch_best),
                "torch_best_threads": torch_best_n,
                "torch_over_ort_same_threads": ratio(median(torch_result),
                                                     median(result["onnxruntime"])),
            })
    os.makedirs(args.out_dir, exist_ok=True)
    title, slug = cpu_kind(meta["cpu"], meta.get("cpu_vendor", ""), meta.get("cpu_family", -1),
                           meta.get("cpu_model_number", -1))
    with open(os.path.join(args.out_dir, f"benchmarks-{slug}.json"), "w") as f:
        json.dump({"rnnc_bench": bench, "torch": torch_data, "ratios": merged_rows}, f, indent=1)
        f.write("\n")
    ratios = {(r["workload"], r["threads"]): r for r in merged_rows}

    blas = tm.get("blas", {})
    lines = []
    add = lines.append
    add(f"## {title}")
    add("")
    add(f"> **rnnc is measured through: {meta['rnnc_engine']}.** The public API "
        "(`rnnc::CompiledModel` + `Session`) on the oneTBB executor; at 1 thread the sequential "
        "plan, at 2 threads whatever `kAuto` chose for the workload's shape from duels of the "
        "overlapping plan against sequential (docs/runtime.md; the plan table below times both); "
        "ratios below 1 mean rnnc is faster.")
    add("")
    add(f"Produced by `{args.command}` on {meta['date_utc']} (raw results: "
        f"[benchmarks-{slug}.json](benchmarks-{slug}.json), chart: "
        f"[benchmarks-{slug}.png](benchmarks-{slug}.png)).")
    add("")
    add(f"- Machine: {meta['cpu']}, {meta['cores']} cores, {meta['kernel']} (a shared KVM guest: "
        "noisy; compare ratios from one run, not absolute times across runs). Load average "
        f"(1/5/15 min) at the start of the rnnc/ORT run: {meta.get('loadavg_start', '?')}, at "
        f"its end: {meta.get('loadavg_end', '?')}"
        + (f"; PyTorch run: {tm.get('loadavg_start')} → {tm.get('loadavg_end')}" if tm else "")
        + " (above 2 means other work shared the 2 cores).")
    add(f"- rnnc kernel target: {meta.get('kernel_target', '?')}; schedule class: "
        f"{meta.get('schedule_class', '?')} (docs/lowering.md, \"Targets and schedule classes\").")
    busy = []
    for label, value in (("rnnc/ORT run", meta.get("loadavg_end")),
                         ("PyTorch run", tm.get("loadavg_end") if tm else None)):
        if value and float(value.split()[0]) > meta["cores"]:
            busy.append(f"{label} ended at load {value.split()[0]}")
    if busy:
        add(f"- **The machine was busy** ({'; '.join(busy)} on {meta['cores']} cores): other "
            "processes shared the cores, which hurts multi-threaded runs most (a spinning "
            "worker thread that loses its core stalls every step). Treat the 2-thread numbers, "
            "and the p90s, as pessimistic; the 1-thread ratios are the steadier ones.")
    add(f"- ONNX Runtime **{meta['onnxruntime_version']}** (library version reported by the "
        "loaded libonnxruntime.so.1, npm onnxruntime-node@1.30.0): "
        f"{meta['onnxruntime_settings']}.")
    if tm:
        add(f"- PyTorch {tm['torch_version']} (Debian python3-torch), separate process: "
            f"{tm['settings']}. BLAS: {blas.get('library', '?')} — "
            f"{blas.get('config', blas.get('kind', '?'))}; kernel in use: "
            f"**{blas.get('corename', '?')}** (OPENBLAS_CORETYPE="
            f"{blas.get('env', {}).get('OPENBLAS_CORETYPE')} set for that process only, "
            "OPENBLAS_L2_SIZE unset there).")
    else:
        add("- PyTorch: not run.")
    add(f"- rnnc: {meta['rnnc_engine']}; `ModelOptions::threads` = the thread count, state "
        "fed by the harness (`expose_recurrent_state` off), kernels from the on-disk cache.")
    add(f"- Timing: per-run latency; each engine gets about {meta['budget_s_per_engine']} s per "
        f"workload in {meta['rounds']} rounds alternating ONNX Runtime and rnnc (each round starts "
        "with an untimed warm run). Cells show the median, with p90, min and the run count.")
    add(f"- Agreement: every output of rnnc and of PyTorch is checked against ONNX Runtime on the "
        f"same inputs: |x - ort| <= {meta['atol']:g} + {meta['rtol']:g}·|ort| elementwise "
        "(float32 with different summation orders differs by ~1e-7 here; a real bug is orders of "
        "magnitude larger). A disagreement fails the run.")
    add("")

    for n in threads_list:
        add(f"## Latency, {n} thread{'s' if n > 1 else ''}")
        add("")
        add("| workload | shape (seq×batch) | params | ONNX Runtime | PyTorch | rnnc | "
            "rnnc/ORT same-N | rnnc/ORT paired rounds | rnnc/ORT best | rnnc/torch same-N | "
            "rnnc/torch best |")
        add("|---|---|---|---|---|---|---|---|---|---|---|")
        for workload in workloads:
            result = by_key.get((workload, n))
            if result is None:
                continue
            torch_result = torch_by_key.get((workload, n))
            torch_cell = "-"
            if torch_result and torch_result.get("status") == "skipped":
                torch_cell = "skipped (no torch source)"
            elif torch_result:
                torch_cell = latency_cell(torch_result.get("latency_us"))
            rnnc_cell = latency_cell(result["rnnc"].get("latency_us"))
            if result["rnnc"]["status"] in ("unsupported", "failed", "disagrees"):
                rnnc_cell = result["rnnc"]["status"]
            r = ratios.get((workload, n), {})
            ort_best_n = r.get("ort_best_threads")
            torch_best_n = r.get("torch_best_threads")
            add(f"| {workload} | {result['seq']}×{result['batch']} | "
                f"{result['param_bytes'] / 2**20:.1f} MiB | "
                f"{latency_cell(result['onnxruntime'].get('latency_us'))} | {torch_cell} | "
                f"{rnnc_cell} | {fmt_ratio(r.get('rnnc_over_ort_same_threads'))} | "
                f"{fmt_paired(r.get('rnnc_over_ort_paired_rounds'))} | "
                f"{fmt_ratio(r.get('rnnc_over_ort_best'))}"
                f"{f' <sub>(ORT@{ort_best_n})</sub>' if ort_best_n else ''} | "
                f"{fmt_ratio(r.get('rnnc_over_torch_same_threads'))} | "
                f"{fmt_ratio(r.get('rnnc_over_torch_best'))}"
                f"{f' <sub>(torch@{torch_best_n})</sub>' if torch_best_n else ''} |")
        add("")
    add("Ratios are rnnc latency / peer latency (medians): **below 1 means rnnc is faster**. "
        "\"best\" is the peer's fastest thread count in this run. \"paired rounds\": per timing "
        "round, rnnc's median over ONNX Runtime's median in that round (the two ran back to back), "
        "the median of those ratios with the lowest and highest; on this shared machine the load "
        "changes between rounds, and a pair shares its round's load where the pooled medians of "
        "\"same-N\" mix rounds of different load.")
    add("")

    bounds = bench.get("machine_bounds")
    if bounds:
        machine_bounds_section(add, bounds, meta, workloads, info, by_key, threads_list)

    heavy = [w for w in workloads if info[w].get("param_bytes", 0) > 8 * 2**20
             and weight_traffic_bytes(info[w])]
    if heavy:
        add("## Weight bandwidth of the large models")
        add("")
        if bounds:
            streaming = ("A single-core streaming read measured in this run (Machine bounds "
                         "above; best call): " + ", ".join(
                             f"{m['gbps_best']:.0f} GB/s from {fmt_bytes(m['bytes'])} "
                             f"({m['level']})" for m in bounds["stream"]) + ".")
        else:
            streaming = ("A single-core streaming read (AVX-512 loads, nothing else running) "
                         "measured on the AMD EPYC host about 170-200 GB/s from L2, ~80 GB/s "
                         "from L3 (8 MiB) and ~22-25 GB/s from DRAM (64 MiB+); not measured on "
                         "the Intel host.")
        add("Weights these models must read per run (each layer's recurrent matrix once per step, "
            "its input matrix once), divided by the median latency. They do not fit a core's L2 "
            "(1 MiB on the AMD EPYC host, 2 MiB on the Intel Xeon host), so this is the number to "
            "hold against the machine's memory bandwidth. " + streaming)
        add("")
        add("| workload | threads | weight traffic per run | ONNX Runtime | rnnc |")
        add("|---|---|---|---|---|")
        for w in heavy:
            traffic = weight_traffic_bytes(info[w])
            for n in threads_list:
                result = by_key.get((w, n))
                if result is None:
                    continue

                def bandwidth(engine):
                    latency = (engine or {}).get("latency_us") or {}
                    if not latency.get("median"):
                        return "-"
                    return (f"{latency['median'] / 1000:.2f} ms = "
                            f"{traffic / (latency['median'] * 1e-6) / 1e9:.1f} GB/s")
                add(f"| {w} | {n} | {traffic / 2**20:.0f} MiB | "
                    f"{bandwidth(result['onnxruntime'])} | {bandwidth(result['rnnc'])} |")
        add("")

    plan_rows = [(w, n) for n in threads_list for w in workloads
                 if (by_key.get((w, n)) or {}).get("rnnc_other", {}).get("latency_us")
                 and (by_key.get((w, n)) or {}).get("rnnc", {}).get("latency_us")]
    if plan_rows:
        add("## rnnc execution plans at 2+ threads")
        add("")
        add("The same compiled model on the sequential plan and on the plan that overlaps work "
            "(pipeline for a chain of recurrent layers: layer k+1 runs time chunk c while layer "
            "k runs chunk c+1; parallel otherwise), timed in the same alternating rounds. "
            "\"auto\" is what `ModelOptions::plan = kAuto` chose for the workload's shape (timing "
            "duels of both on the shape's first runs, docs/runtime.md); its time is in the column of "
            "that plan, the other column is a second model forced to the other plan. kAuto "
            "duels again every 64 runs and follows the median of its last 9 duels, so when it "
            "revised its choice during the timing the auto time holds runs of both plans.")
        add("")
        add("| workload | threads | auto chose | sequential | overlapping plan | "
            "speedup over sequential |")
        add("|---|---|---|---|---|---|")
        for w, n in plan_rows:
            result = by_key[(w, n)]
            auto_plan = result.get("rnnc_plan", "?")
            other_plan = result.get("rnnc_other_plan", "?")
            if auto_plan == "sequential":
                seq, over, over_name = result["rnnc"], result["rnnc_other"], other_plan
            else:
                seq, over, over_name = result["rnnc_other"], result["rnnc"], auto_plan
            speedup = seq["latency_us"]["median"] / over["latency_us"]["median"]
            add(f"| {w} | {n} | {auto_plan} | {latency_cell(seq['latency_us'])} | "
                f"{over_name}: {latency_cell(over['latency_us'])} | {speedup:.2f}× |")
        add("")

    batched = [w for w in workloads if info[w]["batch"] > 1]
    if batched:
        add("## Throughput (batch > 1), sequences per second at the median latency")
        add("")
        add("| workload | threads | ONNX Runtime | PyTorch | rnnc |")
        add("|---|---|---|---|---|")
        for workload in batched:
            for n in threads_list:
                result = by_key.get((workload, n))
                if result is None:
                    continue
                torch_result = torch_by_key.get((workload, n)) or {}

                def tput(engine):
                    value = (engine or {}).get("throughput_seq_per_s")
                    return f"{value:,.0f}" if value else "-"
                add(f"| {workload} | {n} | {tput(result['onnxruntime'])} | {tput(torch_result)} | "
                    f"{tput(result['rnnc'])} |")
        add("")

    quantized = [(w, by_key[(w, 1)]) for w in workloads
                 if (w, 1) in by_key and "rnnc_int8" in by_key[(w, 1)]]
    if quantized:
        add("## Quantized, 1 thread: rnnc int8 against ONNX Runtime's DynamicQuantizeLSTM")
        add("")
        add("rnnc int8: `ModelOptions::quantization_config = \"default\"` (docs/quant.md: int8 "
            "per-row weights, dynamic u8 activations per row, u8 x s8 -> s32 VNNI products), loaded "
            "as a user loads it: the quantization guard on, which keeps a node float or widens it "
            "to 12 bits when the model's outputs would miss the error budget (the decision per "
            "workload is listed below the table). "
            "DynamicQuantizeLSTM: the same weights scheme (int8 per output unit), written by "
            "models/make_workloads.py as ONNX Runtime's quantize_dynamic writes a model (ONNX "
            "Runtime has no quantized GRU; Silero VAD's LSTM weights are computed, not constants, "
            "so its file quantizes only the Convs, as ConvInteger). Error: max |output - "
            "float ONNX Runtime| over the compared runs; lower is better. Speedups are ratios of "
            "medians from the same rounds; \"paired\" the median (and range) of the speedups per "
            "round, the engines back to back in each round.")
        add("")
        add("| workload | ONNX Runtime float | DynamicQuantizeLSTM | rnnc int8 | rnnc int8 vs "
            "float ORT | paired | vs DynamicQuantizeLSTM | paired | error rnnc int8 | "
            "error DynamicQuantizeLSTM |")
        add("|---|---|---|---|---|---|---|---|---|---|")
        for workload, result in quantized:
            ort, dq, q = (median(result.get(k)) for k in ("onnxruntime", "ort_dqlstm", "rnnc_int8"))

            def speed(base):
                value = ratio(base, q)
                return f"{value:.2f}×" if value else "-"
            add(f"| {workload} | {latency_cell(result['onnxruntime'].get('latency_us'))} | "
                f"{latency_cell((result.get('ort_dqlstm') or {}).get('latency_us'))} | "
                f"{latency_cell(result['rnnc_int8'].get('latency_us'))} | {speed(ort)} | "
                f"{fmt_paired(paired_ratios(result['rnnc_int8'], result['onnxruntime']), True)} | "
                f"{speed(dq)} | "
                f"{fmt_paired(paired_ratios(result['rnnc_int8'], result.get('ort_dqlstm')), True)} | "
                f"{error_cell(result, 'rnnc_int8_max_abs_error')} | "
                f"{error_cell(result, 'ort_dqlstm_max_abs_error')} |")
        add("")
        same_file = [(w, r) for w, r in quantized if "rnnc_dqlstm" in r and "ort_dqlstm" in r]
        if same_file:
            add("The DynamicQuantizeLSTM file itself in rnnc (DynamicQuantizeLSTM imported as "
                "int8 LSTMs, docs/ir.md, \"ONNX Runtime contrib operators\"; MatMulInteger on the "
                "int8 GEMM and ConvInteger as exact float Convs, docs/quant.md): what a user who "
                "quantized with ONNX Runtime gets by loading the same file. Error as above.")
            add("")
            add("| workload | ONNX Runtime | rnnc | speedup | paired | error ONNX Runtime | "
                "error rnnc |")
            add("|---|---|---|---|---|---|---|")
            for workload, result in same_file:
                value = ratio(median(result.get("ort_dqlstm")), median(result.get("rnnc_dqlstm")))
                add(f"| {workload} | {latency_cell(result['ort_dqlstm'].get('latency_us'))} | "
                    f"{latency_cell(result['rnnc_dqlstm'].get('latency_us'))} | "
                    f"{f'{value:.2f}×' if value else '-'} | "
                    f"{fmt_paired(paired_ratios(result['rnnc_dqlstm'], result['ort_dqlstm']), True)} | "
                    f"{error_cell(result, 'ort_dqlstm_max_abs_error')} | "
                    f"{error_cell(result, 'rnnc_dqlstm_max_abs_error')} |")
            add("")
        static = [(w, r) for w, r in quantized if "rnnc_int8_static" in r]
        if static:
            add("rnnc int8 with static activations: the model quantized offline as `rnnc quantize "
                "--config Q.json --calibrate ...` writes it (int8 per-row weights, u8 activations "
                "with one scale and zero point per node input, minmax over 8 calibration inputs "
                "generated like the timed ones with other seeds; the guard on), so no row's range "
                "is measured at run time. Dynamic: the rnnc int8 column above. Error as above.")
            add("")
            add("| workload | rnnc int8 dynamic | rnnc int8 static | static vs float ORT | "
                "paired | static vs dynamic, paired | error dynamic | error static |")
            add("|---|---|---|---|---|---|---|---|")
            for workload, result in static:
                value = ratio(median(result.get("onnxruntime")), median(result["rnnc_int8_static"]))
                add(f"| {workload} | {latency_cell(result['rnnc_int8'].get('latency_us'))} | "
                    f"{latency_cell(result['rnnc_int8_static'].get('latency_us'))} | "
                    f"{f'{value:.2f}×' if value else '-'} | "
                    f"{fmt_paired(paired_ratios(result['rnnc_int8_static'], result['onnxruntime']), True)} | "
                    f"{fmt_paired(paired_ratios(result['rnnc_int8_static'], result['rnnc_int8']), True)} | "
                    f"{error_cell(result, 'rnnc_int8_max_abs_error')} | "
                    f"{error_cell(result, 'rnnc_int8_static_max_abs_error')} |")
            add("")
        add("The quantization guard's decision per workload (`CompiledModel::quantization_summary`;"
            " static: `QuantizeResult::summary`):")
        add("")
        for workload, result in quantized:
            decision = result["rnnc_int8"].get("quantization") or result["rnnc_int8"].get("error")
            add(f"- {workload}: {decision or '-'}")
            if "rnnc_int8_static" in result:
                engine = result["rnnc_int8_static"]
                add(f"- {workload}, static: {engine.get('quantization') or engine.get('error') or '-'}")
        add("")

    add("## Load time and memory")
    add("")
    add("Load: ONNX Runtime session creation (graph optimizations included), rnnc's "
        "`CompiledModel::load` (import, graph_opt, partition, kernels loaded from the on-disk "
        "cache), PyTorch module construction plus copying the weights out "
        "of the ONNX file. Median of the timed loads (first load in brackets). Memory: resident "
        "bytes the loaded model added (RSS delta) and the peak over load and runs above the "
        "pre-load level (VmHWM reset through /proc/self/clear_refs), in MiB. The first workload's "
        "ONNX Runtime figures include the library's one-time initialisation (about 25 MiB).")
    add("")
    add("| workload | threads | ORT load | rnnc load | torch load | ORT RSS / peak | "
        "rnnc RSS / peak | torch RSS / peak |")
    add("|---|---|---|---|---|---|---|---|")
    for workload in workloads:
        for n in threads_list:
            result = by_key.get((workload, n))
            if result is None:
                continue
            torch_result = torch_by_key.get((workload, n)) or {}

            def load(engine):
                load_ms = engine.get("load_ms")
                if not load_ms:
                    return "-"
                return f"{load_ms['median']:.1f} ms ({load_ms['first']:.1f})"

            def memory(engine):
                if "model_rss_mb" not in engine:
                    return "-"
                return f"{engine['model_rss_mb']:.1f} / {engine['peak_rss_mb']:.1f}"
            torch_load = (f"{torch_result['load_ms']:.1f} ms" if "load_ms" in torch_result
                          else "-")
            add(f"| {workload} | {n} | {load(result['onnxruntime'])} | {load(result['rnnc'])} | "
                f"{torch_load} | {memory(result['onnxruntime'])} | {memory(result['rnnc'])} | "
                f"{memory(torch_result)} |")
    add("")

    add("## Agreement with ONNX Runtime (max |difference| over every output element)")
    add("")
    add("| workload | threads | rnnc vs ORT | PyTorch vs ORT | status |")
    add("|---|---|---|---|---|")
    for workload in workloads:
        for n in threads_list:
            result = by_key.get((workload, n))
            if result is None:
                continue
            torch_result = torch_by_key.get((workload, n)) or {}

            def diffs(outputs):
                cells = [f"{o['name']} {o['max_abs_diff']:.1e}" for o in outputs
                         if o.get("max_abs_diff") is not None]
                return ", ".join(cells) if cells else "-"
            runs = result["agreement"].get("runs_compared", 1)
            rnnc_cell = diffs(result["agreement"]["outputs"])
            if runs > 2:
                rnnc_cell += f" <sub>({runs} chunks, state carried)</sub>"
            torch_cell = diffs(torch_result.get("agreement", {}).get("outputs", []))
            add(f"| {workload} | {n} | {rnnc_cell} | {torch_cell} | {rnnc_status(result)} |")
    add("")
    add("Workloads, their shapes and what each stands for: "
        "[models/README.md](../models/README.md).")
    add("")
    # The run's section: its headings one level below the CPU's "## title".
    section = [lines[0]] + ["#" + line if line.startswith("##") else line for line in lines[1:]]
    write_cpu_section(os.path.join(args.out_dir, "benchmarks.md"), slug, "\n".join(section))

    if not args.no_chart:
        write_chart(args, meta, workloads, threads_list, by_key, torch_by_key, slug)


KEPT_MARKER = "<!-- Measured by other tools; report.py keeps everything below this line. -->"
HEADER = """# Benchmarks: rnnc against ONNX Runtime and PyTorch

One section per CPU kind, each the latest `scripts/bench.sh` run on that CPU: a run rewrites its
own CPU's section and keeps the others, so figures from different CPUs sit side by side but come
from different sittings (compare ratios within a section, not times across sections). The AMD
EPYC guests all report the model name "AMD EPYC"; their sections are told apart by Zen
generation (CPUID family and model), whose clocks, caches and 512-bit datapaths differ. Sections
measured by other tools follow the CPU sections.
"""


# AMD's display family and model ranges of each Zen generation (AMD's processor programming
# references): the cloud guests' model name ("AMD EPYC") does not tell Zen 4 from Zen 5, whose
# 512-bit datapaths and clocks differ, so their reports are kept apart.
AMD_MICROARCHITECTURES = [
    (25, range(0x00, 0x10), "Zen 3"), (25, range(0x20, 0x30), "Zen 3"),
    (25, range(0x40, 0x60), "Zen 3"), (25, range(0x10, 0x20), "Zen 4"),
    (25, range(0x60, 0x80), "Zen 4"), (25, range(0xa0, 0xb0), "Zen 4"),
    (26, range(0x00, 0x100), "Zen 5"),
]


def microarchitecture(vendor, family, model):
    """The AMD Zen generation of a CPUID display family and model, or None (other vendors: their
    model names already tell the kinds this project runs on apart)."""
    if vendor != "AuthenticAMD":
        return None
    for fam, models, name in AMD_MICROARCHITECTURES:
        if family == fam and model in models:
            return name
    return None


def host_cpu_fields(cpuinfo="/proc/cpuinfo"):
    """(model name, vendor, family, model) of the first CPU in /proc/cpuinfo."""
    fields = {}
    with open(cpuinfo) as f:
        for line in f:
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "vendor_id", "cpu family", "model") and key not in fields:
                fields[key] = value.strip()
            if not line.strip() and fields:
                break
    number = lambda key: int(fields[key]) if fields.get(key, "").isdigit() else -1
    return (fields.get("model name", "unknown"), fields.get("vendor_id", ""), number("cpu family"),
            number("model"))


def cpu_kind(model_name, vendor="", family=-1, model=-1):
    """The CPU kind a /proc/cpuinfo model name (and, for AMD, its family and model) belongs to, as
    (title, slug): "Intel(R) Xeon(R) Processor" is ("Intel Xeon", "intel-xeon"); "AMD EPYC" of
    family 25 model 17 ("AMD EPYC (Zen 4)", "amd-epyc-zen-4")."""
    words = []
    for word in model_name.replace("(R)", " ").replace("(TM)", " ").split():
        if word in ("@", "CPU", "Processor") or word.endswith("GHz"):
            continue
        words.append(word)
    title = " ".join(words) or "unknown CPU"
    generation = microarchitecture(vendor, family, model)
    if generation:
        title += f" ({generation})"
    slug = "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")
    return title, "-".join(part for part in slug.split("-") if part)


def cpu_marker(slug, end=False):
    return f"<!-- cpu section {'end' if end else 'begin'}: {slug} -->"


def write_cpu_section(path, slug, text):
    """Replaces (or adds, in slug order) the CPU's section of the report at `path`."""
    sections, kept = {}, ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if KEPT_MARKER in old:
            old, kept = old[:old.index(KEPT_MARKER)], old[old.index(KEPT_MARKER):]
        start = 0
        while True:
            begin = old.find("<!-- cpu section begin: ", start)
            if begin < 0:
                break
            name = old[begin:].split(": ", 1)[1].split(" -->", 1)[0]
            end = old.find(cpu_marker(name, end=True), begin)
            if end < 0:
                raise SystemExit(f"report.py: {path}: the section of {name} has no end marker")
            body = old[begin + len(cpu_marker(name)):end].strip("\n")
            sections[name] = body
            start = end
    sections[slug] = text.strip("\n")
    with open(path, "w") as f:
        f.write(HEADER)
        f.write("\n")
        for name in sorted(sections):
            f.write(f"{cpu_marker(name)}\n{sections[name]}\n{cpu_marker(name, end=True)}\n\n")
        if kept:
            f.write(kept)


def write_chart(args, meta, workloads, threads_list, by_key, torch_by_key, slug):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = []  # (label, values, color, hatch, error bars or None)
    colors = {1: "#1f77b4", 2: "#ff7f0e", 4: "#2ca02c"}
    for n in threads_list:
        values, below, above = [], [], []
        for workload in workloads:
            result = by_key.get((workload, n))
            value = (ratio(median(result["onnxruntime"]), median(result["rnnc"]))
                     if result else None)
            values.append(value)
            # The bar's whisker: the lowest and highest per-round speedups (paired rounds).
            paired = paired_ratios(result["rnnc"], result["onnxruntime"]) if result else None
            if value is None or paired is None:
                below.append(0.0)
                above.append(0.0)
            else:
                below.append(max(0.0, value - 1 / paired[2]))
                above.append(max(0.0, 1 / paired[1] - value))
        series.append((f"rnnc fp32, {n} thr (vs ORT {n} thr)", values, colors.get(n, "#9467bd"),
                       None, [below, above]))
    for n in threads_list[:1]:
        values = []
        for workload in workloads:
            result = by_key.get((workload, n))
            torch_median = median(torch_by_key.get((workload, n)))
            values.append(ratio(median(result["onnxruntime"]), torch_median) if result else None)
        if any(v is not None for v in values):
            series.append((f"PyTorch fp32, {n} thr (vs ORT {n} thr)", values, "#7f7f7f", "//",
                           None))

    fig, ax = plt.subplots(figsize=(max(10, 0.9 * len(workloads) + 3), 6.5))
    width = 0.8 / len(series)
    na_labels = []
    for s, (label, values, color, hatch, whiskers) in enumerate(series):
        xs = [i + (s - (len(series) - 1) / 2) * width for i in range(len(workloads))]
        heights = [v if v is not None else float("nan") for v in values]
        bars = ax.bar(xs, heights, width, label=label, color=color, hatch=hatch,
                      edgecolor="white" if not hatch else "#444444", yerr=whiskers,
                      error_kw={"elinewidth": 0.8, "capsize": 1.5, "ecolor": "#333333"})
        tops = whiskers[1] if whiskers else [0.0] * len(values)
        for x, v, top in zip(xs, values, tops):
            if v is None:
                na_labels.append(x)
            else:
                ax.text(x, (v + top) * 1.08, f"{v:.2g}", ha="center", va="bottom", fontsize=7,
                        rotation=90)
        del bars
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=1)
    ax.text(-0.45, 1.05, "ONNX Runtime = 1", ha="left", va="bottom", fontsize=8)
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels(workloads, rotation=35, ha="right", fontsize=9)
    ax.set_ylabel("speedup over ONNX Runtime (ORT median / median), log scale;\n"
                  "whiskers: lowest and highest speedup of a timing round", fontsize=9)
    finite = [v for _, values, _, _, _ in series for v in values if v is not None]
    if finite:
        ax.set_ylim(min(finite + [1.0]) / 2.5, max(finite + [1.0]) * 3)
    for x in na_labels:
        ax.text(x, ax.get_ylim()[0] * 1.15, "not run", ha="center", va="bottom", fontsize=7,
                rotation=90, color="#555555")
    ax.set_title(f"Speedup over ONNX Runtime {meta['onnxruntime_version']} per workload "
                 f"(fp32; rnnc int8: the Quantized table of benchmarks.md)\nrnnc measured through: "
                 f"{meta['rnnc_engine']}",
                 fontsize=11)
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.text(0.01, 0.01, f"{meta['cpu']}, {meta['cores']} cores; {meta['date_utc']}; "
             f"`{args.command}`", fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(os.path.join(args.out_dir, f"benchmarks-{slug}.png"), dpi=110)


if __name__ == "__main__":
    main()
