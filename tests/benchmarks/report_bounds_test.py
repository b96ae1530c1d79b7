#!/usr/bin/python3
"""The machine bounds end to end: rnnc_bench --bounds-quick's JSON holds positive rates for every
working set, the FMA peak and (on a CPU with VNNI) the int8 dot-product peak, and report.py
renders them as the "### Machine bounds" section with a weight-streaming floor row for the smoke
LSTM stack; the same JSON without "machine_bounds" (as written before the bounds existed) still
renders, without the section. Paired rounds: every timed engine has one
median per round, and with round medians set to known values the report's paired-rounds cell is
their round-by-round ratio (median, lowest, highest), and "-" when the round counts differ. CPU
sections: runs on two CPU kinds into one directory leave one section per CPU (a CPU's second run
replaces its first), named JSON files per CPU, and the other tools' sections after them untouched.

  report_bounds_test.py REPORT_PY BENCH_JSON WORKLOADS_JSON OUT_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys


def fail(message):
    print(f"report_bounds_test: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def render(report_py, bench, workloads, out_dir):
    subprocess.run(["/usr/bin/python3", report_py, "--bench", bench, "--out-dir", out_dir,
                    "--workloads", workloads, "--no-chart", "--command", "ctest"], check=True)
    with open(os.path.join(out_dir, "benchmarks.md")) as f:
        return f.read()


def main():
    report_py, bench_json, workloads, out_dir = sys.argv[1:5]
    # report.py keeps the other CPUs' sections of the file it writes: an earlier run's files
    # would be read as this run's.
    shutil.rmtree(out_dir, ignore_errors=True)
    with open(bench_json) as f:
        bench = json.load(f)
    bounds = bench.get("machine_bounds")
    if not bounds:
        fail(f"{bench_json} has no machine_bounds object")
    sizes = [m["bytes"] for m in bounds["stream"]]
    if sizes != [32 << 10, 256 << 10]:
        fail(f"stream working sets {sizes}, expected the quick table [32768, 262144]")
    for m in bounds["stream"]:
        for key in ("gbps_median", "gbps_best", "gbps_worst", "passes_per_call"):
            if not m[key] > 0:
                fail(f"stream {m['bytes']} bytes: {key} = {m[key]}, expected > 0")
        if not m["gbps_worst"] <= m["gbps_median"] <= m["gbps_best"]:
            fail(f"stream {m['bytes']} bytes: worst <= median <= best does not hold: {m}")
    for key in ("gflops_median", "gflops_best", "gflops_worst", "fma_per_chain_per_call"):
        if not bounds["fma"][key] > 0:
            fail(f"fma: {key} = {bounds['fma'][key]}, expected > 0")
    # int8 dot products: measured where /proc/cpuinfo lists a VNNI flag, absent elsewhere.
    with open("/proc/cpuinfo") as f:
        flags = next((line for line in f if line.startswith("flags")), "").split()
    has_vnni = "avx512_vnni" in flags or "avx_vnni" in flags
    if has_vnni != ("vnni" in bounds):
        fail(f"vnni measured: {'vnni' in bounds}, but the CPU's VNNI flags say {has_vnni}")
    if has_vnni:
        for key in ("gops_median", "gops_best", "gops_worst", "per_accumulator_per_call"):
            if not bounds["vnni"][key] > 0:
                fail(f"vnni: {key} = {bounds['vnni'][key]}, expected > 0")

    markdown = render(report_py, bench_json, workloads, os.path.join(out_dir, "with_bounds"))
    for expected in ("### Machine bounds", "| stream read 32 KiB | L1 |", "| stream read 256 KiB | L2 |",
                     "| float32 FMA | peak compute |",
                     "#### Weight-streaming floor of the batch-1 stacks", "| smoke_lstm64_l2 |",
                     "reads alone"):
        if expected not in markdown:
            fail(f"'{expected}' not in the report with machine bounds")
    if has_vnni and "| int8 dot products (vpdpbusd" not in markdown:
        fail("the report has no int8 dot-product row")
    # A Python expression left in braces is a string that should have been an f-string.
    placeholder = re.search(r"\{[a-z_]+(\[[^]]*\])*\}", markdown)
    if placeholder:
        fail(f"the report holds the unformatted expression {placeholder.group(0)}")
    if f"Each figure is over {bounds['repetitions']} timed calls" not in markdown:
        fail("the machine bounds paragraph does not state the repetitions")

    # Reads alone: the whole stack fits the L2, so per layer W once and R seq times, all at the
    # best rate of the quick table's only L2 set (256 KiB).
    with open(workloads) as f:
        smoke = next(w for w in json.load(f)["workloads"] if w["name"] == "smoke_lstm64_l2")
    l2 = next(m for m in bounds["stream"] if m["bytes"] == 256 << 10)
    hidden = smoke["hidden_size"]
    weight_bytes = sum(16 * hidden * ((smoke["input_size"] if layer == 0 else hidden)
                                      + smoke["seq"] * hidden)
                       for layer in range(smoke["layers"]))
    model_bytes = sum(16 * hidden * ((smoke["input_size"] if layer == 0 else hidden) + hidden)
                      for layer in range(smoke["layers"]))
    if model_bytes > (bench["meta"].get("l2_bytes_per_core") or 2**20):
        fail(f"smoke_lstm64_l2 ({model_bytes} bytes) no longer fits the L2 this check assumes")
    reads_us = weight_bytes / (l2["gbps_best"] * 1e9) * 1e6
    row = next(line for line in markdown.splitlines() if line.startswith("| smoke_lstm64_l2 |")
               and "µs" in line and line.count("|") == 9)
    cells = [c.strip() for c in row.split("|")]
    if cells[4] != f"{reads_us:.1f} µs":
        fail(f"reads alone rendered as '{cells[4]}', expected {reads_us:.1f} µs: {row}")
    floor_us = float(cells[3].split()[0])
    if not reads_us <= floor_us:
        fail(f"the floor {cells[3]} is below the reads alone {cells[4]}")

    check_model_floor(report_py, bench, smoke, out_dir)

    del bench["machine_bounds"]
    old_json = os.path.join(out_dir, "without_bounds.json")
    with open(old_json, "w") as f:
        json.dump(bench, f)
    markdown = render(report_py, old_json, workloads, os.path.join(out_dir, "without_bounds"))
    if "### Machine bounds" in markdown:
        fail("a JSON without machine_bounds rendered a Machine bounds section")
    check_paired_rounds(report_py, bench, workloads, out_dir)
    check_cpu_sections(report_py, bench, workloads, out_dir)
    print("report_bounds_test: ok")


def check_model_floor(report_py, bench, smoke, out_dir):
    """rnnc_bench's counted cost of the smoke stack is its LSTMs' multiply-adds and weights; the
    same result under a workload that is not a stack (a copy of its entry without its cell) gets a Model floor row: weights at the best L2 rate plus 2 flops per multiply-add
    at the best FMA rate, and one row for its equal LSTMs."""
    result = next(r for r in bench["results"] if r["workload"] == "smoke_lstm64_l2")
    cost = result.get("cost") or {}
    hidden, seq, batch = smoke["hidden_size"], smoke["seq"], smoke.get("batch", 1)
    inputs = [smoke["input_size"] if layer == 0 else hidden for layer in range(smoke["layers"])]
    macs = sum(seq * batch * 4 * hidden * (i + hidden) for i in inputs)
    matrices = sum(4 * 4 * hidden * (i + hidden) for i in inputs)
    biases = 4 * 8 * hidden * smoke["layers"]
    if cost.get("macs") != macs or cost.get("weight_bytes") not in (matrices, matrices + biases):
        fail(f"counted cost {cost.get('macs')} multiply-adds, {cost.get('weight_bytes')} bytes; "
             f"expected {macs} and {matrices} (+{biases} of biases)")
    if [n["op"] for n in cost["nodes"]] != ["LSTM"] * smoke["layers"] or cost["unknown"]:
        fail(f"counted nodes {cost['nodes']}, unknown {cost['unknown']}")

    crafted = dict(bench, results=[dict(result, workload="smoke_model")])
    with open(os.path.join(out_dir, "model.json"), "w") as f:
        json.dump(crafted, f)
    entry = {k: v for k, v in smoke.items() if k != "cell"}
    entry["name"] = "smoke_model"
    with open(os.path.join(out_dir, "model_workloads.json"), "w") as f:
        json.dump({"workloads": [entry]}, f)
    markdown = render(report_py, os.path.join(out_dir, "model.json"),
                      os.path.join(out_dir, "model_workloads.json"),
                      os.path.join(out_dir, "model_floor"))
    bounds = bench["machine_bounds"]
    l2 = max((m for m in bounds["stream"] if m["level"] == "L2"), key=lambda m: m["bytes"])
    fits = [m for m in bounds["stream"] if m["level"] == "L2" and m["bytes"] >= cost["weight_bytes"]]
    rate = (min(fits, key=lambda m: m["bytes"]) if fits else l2)["gbps_best"] * 1e3
    floor_us = cost["weight_bytes"] / rate + 2 * macs / (bounds["fma"]["gflops_best"] * 1e3)
    row = next((line for line in markdown.splitlines() if line.startswith("| smoke_model |")
                and "MB" in line), None)
    if row is None or "Model floor of the other workloads" not in markdown:
        fail("no Model floor row for a workload that is not a stack")
    cells = [c.strip() for c in row.split("|")]
    if not 1 <= floor_us < 100:
        fail(f"the smoke stack's model floor {floor_us:.1f} µs left the range this check renders")
    expected = f"{floor_us:.1f} µs"
    if cells[4] != expected:
        fail(f"model floor rendered as '{cells[4]}', expected {expected}: {row}")
    # The smoke stack's layers are equal (input size = hidden size): one row for them.
    if f"| ↳ {smoke['layers']} × LSTM, each |" not in markdown:
        fail(f"expected one row for the {smoke['layers']} equal LSTMs under the model floor")


def check_cpu_sections(report_py, bench, workloads, out_dir):
    shared = os.path.join(out_dir, "cpus")
    os.makedirs(shared, exist_ok=True)
    kept = ("<!-- Measured by other tools; report.py keeps everything below this line. -->\n\n"
            "## Stream batcher\n\nkept text\n")
    with open(os.path.join(shared, "benchmarks.md"), "w") as f:
        f.write(kept)
    # AMD's guests all read "AMD EPYC": CPUID's family and model tell Zen 4 from Zen 5.
    runs = [("AMD EPYC", "AuthenticAMD", 25, 17, "2026-01-01T00:00:00Z"),
            ("Intel(R) Xeon(R) Processor", "GenuineIntel", 6, 143, "2026-01-02T00:00:00Z"),
            ("AMD EPYC", "AuthenticAMD", 25, 17, "2026-01-03T00:00:00Z"),
            ("AMD EPYC", "AuthenticAMD", 26, 2, "2026-01-04T00:00:00Z")]
    for cpu, vendor, family, model, date in runs:
        bench["meta"].update(cpu=cpu, cpu_vendor=vendor, cpu_family=family,
                             cpu_model_number=model, date_utc=date)
        path = os.path.join(out_dir, "cpu.json")
        with open(path, "w") as f:
            json.dump(bench, f)
        markdown = render(report_py, path, workloads, shared)
    for heading, count in (("\n## AMD EPYC (Zen 4)\n", 1), ("\n## AMD EPYC (Zen 5)\n", 1),
                           ("\n## Intel Xeon\n", 1), ("2026-01-04T00:00:00Z", 1),
                           ("2026-01-03T00:00:00Z", 1), ("2026-01-02T00:00:00Z", 1),
                           ("2026-01-01T00:00:00Z", 0), ("# Benchmarks:", 1)):
        if markdown.count(heading) != count:
            fail(f"CPU sections: {heading.strip()!r} appears {markdown.count(heading)} times, "
                 f"expected {count}")
    order = [markdown.index(h) for h in ("## AMD EPYC (Zen 4)", "## AMD EPYC (Zen 5)",
                                          "## Intel Xeon")]
    if not markdown.endswith(kept) or order != sorted(order):
        fail("CPU sections: the other tools' sections moved or the CPU sections are out of order")
    for name in ("benchmarks-amd-epyc-zen-4.json", "benchmarks-amd-epyc-zen-5.json",
                 "benchmarks-intel-xeon.json"):
        if not os.path.exists(os.path.join(shared, name)):
            fail(f"CPU sections: {name} was not written")


def check_paired_rounds(report_py, bench, workloads, out_dir):
    rounds = bench["meta"]["rounds"]
    result = bench["results"][0]
    for key in ("onnxruntime", "rnnc"):
        medians = result[key].get("round_medians_us")
        if not medians or len(medians) != rounds or not all(m > 0 for m in medians):
            fail(f"{key}: round_medians_us = {medians}, expected {rounds} positive medians")
        latency = result[key]["latency_us"]
        if not (latency["min"] <= min(medians) and max(medians) <= latency["max"]):
            fail(f"{key}: round medians {medians} outside the runs' [min, max] {latency}")
    # Known values: rnnc/ORT per round 0.5, 0.5, 2 -> median 0.5, range 0.5..2 (the ratio of the
    # pooled medians would be 1, and sorted rounds paired 1, 1, 0.5).
    bench["meta"]["rounds"] = 3
    result["rnnc"]["round_medians_us"] = [10.0, 30.0, 20.0]
    result["onnxruntime"]["round_medians_us"] = [20.0, 60.0, 10.0]
    crafted = os.path.join(out_dir, "paired.json")
    with open(crafted, "w") as f:
        json.dump(bench, f)
    cell = paired_cell(render(report_py, crafted, workloads, os.path.join(out_dir, "paired")),
                       result["workload"])
    if cell != "0.5 <sub>0.5..2</sub>":
        fail(f"paired-rounds cell for round ratios 0.5, 0.5, 2 is '{cell}', "
             "expected '0.5 <sub>0.5..2</sub>'")
    result["rnnc"]["round_medians_us"] = [10.0, 30.0]  # a round short
    with open(crafted, "w") as f:
        json.dump(bench, f)
    cell = paired_cell(render(report_py, crafted, workloads, os.path.join(out_dir, "unpaired")),
                       result["workload"])
    if cell != "-":
        fail(f"rounds of different counts paired anyway: '{cell}'")


def paired_cell(markdown, workload):
    """The first latency table's "rnnc/ORT paired rounds" cell of `workload`'s row."""
    lines = markdown.splitlines()
    header = next(i for i, line in enumerate(lines) if "rnnc/ORT paired rounds" in line)
    column = [c.strip() for c in lines[header].split("|")].index("rnnc/ORT paired rounds")
    row = next(line for line in lines[header:] if line.startswith(f"| {workload} |"))
    return [c.strip() for c in row.split("|")][column]


if __name__ == "__main__":
    main()
