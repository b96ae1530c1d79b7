#!/usr/bin/env bash
# Installs what is missing, builds rnnc (Release) and runs the whole test suite with ctest.
#   scripts/test.sh            from the repository root or anywhere
# Environment: BUILD_DIR (default build), JOBS (default: number of cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

"$root/scripts/setup.sh"
# ONNX Runtime (npm) for the benchmark harness's smoke test; quiet when already installed.
ort=$("$root/scripts/install-onnxruntime.sh" --quiet)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRNNC_ONNXRUNTIME_DIR="$ort" \
  >/dev/null
cmake --build "$build" -j "$jobs"
# Silero VAD (npm) for the real-model graph_opt and streaming tests.
"$root/models/fetch_silero.sh" "$build/models" 2>/dev/null
ctest --test-dir "$build" --output-on-failure -j "$jobs"
