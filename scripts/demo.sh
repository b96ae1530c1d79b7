#!/usr/bin/env bash
# Installs what is missing, builds rnnc (Release) and runs the bundled demo model: a 2-layer LSTM
# acoustic model (models/demo) on a stored 50-frame input, printing its outputs and time per run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}

"$root/scripts/setup.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target rnnc -j "$(nproc)"
"$build/tools/rnnc" run "$root/models/demo/lstm_demo.onnx" \
  --input "features=$root/models/demo/input.npy" --repeat 20
