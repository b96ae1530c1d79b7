#!/usr/bin/python3
"""The machine bounds end to end: rnnc_bench --bounds-quick's JSON holds positive rates for every
working set and the FMA peak, and report.py renders them as the "## Machine bounds" section with a
floor row for the smoke LSTM stack; the same JSON without "machine_bounds" (as written before
the bounds existed) still renders, without the section.

  report_bounds_test.py REPORT_PY BENCH_JSON WORKLOADS_JSON OUT_DIR
"""
import json
import os
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

    markdown = render(report_py, bench_json, workloads, os.path.join(out_dir, "with_bounds"))
    for expected in ("## Machine bounds", "| stream read 32 KiB | L1 |", "| stream read 256 KiB | L2 |",
                     "| float32 FMA | peak compute |", "### Floor of the batch-1 LSTM stacks",
                     "| smoke_lstm64_l2 |"):
        if expected not in markdown:
            fail(f"'{expected}' not in the report with machine bounds")

    del bench["machine_bounds"]
    old_json = os.path.join(out_dir, "without_bounds.json")
    with open(old_json, "w") as f:
        json.dump(bench, f)
    markdown = render(report_py, old_json, workloads, os.path.join(out_dir, "without_bounds"))
    if "## Machine bounds" in markdown:
        fail("a JSON without machine_bounds rendered a Machine bounds section")
    print("report_bounds_test: ok")


if __name__ == "__main__":
    main()
