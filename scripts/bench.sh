#!/usr/bin/env bash
# One command for the benchmark report: installs what is missing (Debian packages with --python,
# ONNX Runtime from npm), builds rnnc_bench (Release), generates the workloads, runs rnnc and ONNX
# Runtime in one process and PyTorch in another at each thread count, and writes
#   docs/benchmarks.md          this CPU's section of the report (command, machine, versions,
#                               medians and spreads, ratios, the machine bounds measured at the
#                               start of the run); other CPUs' sections are kept (report.py)
#   docs/benchmarks-<cpu>.json  the raw results of both runs plus the derived ratios
#   docs/benchmarks-<cpu>.png   speedup over ONNX Runtime per workload
# <cpu> is the CPU kind: /proc/cpuinfo's model name, with the Zen generation for AMD (CPUID family
# and model): amd-epyc-zen-4, amd-epyc-zen-5, intel-xeon, ...
#   scripts/bench.sh      from the repository root or anywhere
# Environment: BUILD_DIR (default build-bench), MODELS_DIR (default build/models), THREADS
# (default 1,2), BUDGET (timed seconds per engine per workload, default 1.5), ROUNDS (timing rounds
# the budget is split into, the engines alternating in each, default 7), FILTER (workload regex),
# OUT_DIR (default docs), JOBS (default: number of cores).
# Exits non-zero if any engine's outputs disagree with ONNX Runtime's (after writing the report).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
models=${MODELS_DIR:-$root/build/models}
threads=${THREADS:-1,2}
budget=${BUDGET:-1.5}
rounds=${ROUNDS:-7}
filter=${FILTER:-}
out=${OUT_DIR:-$root/docs}
jobs=${JOBS:-$(nproc)}
step() { echo "== bench.sh: $*" >&2; }

command="scripts/bench.sh"
for var in THREADS BUDGET ROUNDS FILTER; do
  if [[ -n "${!var:-}" ]]; then command="$var=${!var} $command"; fi
done

step "setup: Debian packages (--python: torch, onnx, matplotlib, OpenBLAS)"
"$root/scripts/setup.sh" --python
step "ONNX Runtime"
ort=$("$root/scripts/install-onnxruntime.sh")
step "build rnnc_bench (Release) in $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRNNC_ONNXRUNTIME_DIR="$ort" \
  >/dev/null
cmake --build "$build" --target rnnc_bench -j "$jobs"
step "models into $models"
"$root/models/fetch_silero.sh" "$models"
/usr/bin/python3 "$root/models/make_workloads.py" --out "$models"

run=$build/bench-run
rm -rf "$run"
mkdir -p "$run"
status=0
step "rnnc and ONNX Runtime (one process), threads $threads"
"$build/benchmarks/rnnc_bench" --models="$models" --threads="$threads" --budget="$budget" \
  --rounds="$rounds" \
  ${filter:+--filter="$filter"} --dump-io="$run/io" --json="$run/rnnc_bench.json" \
  2>&1 | tee "$run/rnnc_bench.log" || status=1
if [[ ! -s "$run/rnnc_bench.json" ]]; then
  echo "bench.sh: rnnc_bench wrote no results (see $run/rnnc_bench.log)" >&2
  exit 1
fi
step "PyTorch (separate process), threads $threads"
/usr/bin/python3 "$root/benchmarks/torch_runner.py" --models "$models" --io "$run/io" \
  --threads "$threads" --budget "$budget" ${filter:+--filter "$filter"} \
  --json "$run/torch.json" || status=1
step "report into $out"
/usr/bin/python3 "$root/benchmarks/report.py" --bench "$run/rnnc_bench.json" \
  --torch "$run/torch.json" --out-dir "$out" --command "$command" \
  --workloads "$models/workloads.json"
echo "bench.sh: wrote this CPU's section of $out/benchmarks.md and $out/benchmarks-<cpu>.{json,png}" >&2
if [[ $status -ne 0 ]]; then
  echo "bench.sh: FAILED: an engine disagreed with ONNX Runtime or a run failed (see above)" >&2
fi
exit $status
