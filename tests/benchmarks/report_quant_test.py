#!/usr/bin/python3
"""The quantized paths of rnnc_bench end to end on the smoke models: every stateless LSTM and GRU
workload has rnnc int8 with dynamic and with calibrated static activations, both loaded and
timed, with a measured error against float ONNX Runtime within the guard's budget's reach (2% of
an output's range: < 0.05 on these outputs), and the static path's quantizer summary; report.py
renders the static table with a row per such workload.

  report_quant_test.py REPORT_PY BENCH_JSON WORKLOADS_JSON OUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys


def fail(message):
    print(f"report_quant_test: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    report_py, bench_json, workloads_json, out_dir = sys.argv[1:5]
    shutil.rmtree(out_dir, ignore_errors=True)
    with open(bench_json) as f:
        bench = json.load(f)
    with open(workloads_json) as f:
        workloads = {w["name"]: w for w in json.load(f)["workloads"]}
    expected = [name for name, w in workloads.items()
                if w["family"] in ("lstm", "gru") and not w.get("carry")]
    if not expected:
        fail(f"{workloads_json} has no stateless LSTM or GRU workload")
    results = {r["workload"]: r for r in bench["results"] if r.get("threads", 1) == 1}
    for name in expected:
        result = results.get(name)
        if result is None:
            fail(f"{name}: not in {bench_json}")
        for engine, error_key in (("rnnc_int8", "rnnc_int8_max_abs_error"),
                                  ("rnnc_int8_static", "rnnc_int8_static_max_abs_error")):
            entry = result.get(engine)
            if not entry or entry.get("status") != "ok":
                fail(f"{name}: {engine} is {entry and entry.get('status')}: "
                     f"{entry and entry.get('error')}")
            if not entry.get("round_medians_us"):
                fail(f"{name}: {engine} was not timed")
            error = result.get(error_key, -1)
            if not 0 <= error < 0.05:
                fail(f"{name}: {error_key} = {error}, expected in [0, 0.05)")
        summary = result["rnnc_int8_static"].get("quantization", "")
        if "calibration sample" not in summary:
            fail(f"{name}: the static path's summary does not name its calibration: {summary!r}")
    subprocess.run(["/usr/bin/python3", report_py, "--bench", bench_json, "--out-dir", out_dir,
                    "--workloads", workloads_json, "--no-chart", "--command", "ctest"], check=True)
    with open(os.path.join(out_dir, "benchmarks.md")) as f:
        markdown = f.read()
    header = "| workload | rnnc int8 dynamic | rnnc int8 static |"
    if header not in markdown:
        fail("the report has no static int8 table")
    table = markdown.split(header, 1)[1].split("\n\n", 1)[0]
    for name in expected:
        if f"| {name} |" not in table:
            fail(f"the static int8 table has no row for {name}")
    print(f"report_quant_test: ok ({len(expected)} workloads)")


main()
