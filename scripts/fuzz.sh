#!/usr/bin/env bash
# Builds the parser fuzz target with clang's libFuzzer + ASan/UBSan and runs it for a bounded time
# on a seed corpus of real models and tensors (the demo model, ONNX backend test cases).
#   scripts/fuzz.sh [SECONDS]      default 60
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
build=$root/build-fuzz

"$root/scripts/setup.sh"
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRNNC_FUZZ=ON -DRNNC_BUILD_TESTS=ON -DRNNC_SANITIZE=address,undefined >/dev/null
cmake --build "$build" --target fuzz_import -j "$(nproc)"

corpus=$build/corpus
mkdir -p "$corpus"
# The first byte selects the parser: 0 model, 1 TensorProto, 2 .npy.
seed() { { printf "\\x$(printf %02x "$1")"; cat "$2"; } >"$corpus/$3"; }
seed 0 "$root/models/demo/lstm_demo.onnx" demo_model
seed 2 "$root/models/demo/input.npy" demo_input
data=/usr/share/libonnx-testdata/data/node
for case in test_lstm_defaults test_gru_defaults test_if test_conv_with_strides_padding; do
  [[ -f $data/$case/model.onnx ]] && seed 0 "$data/$case/model.onnx" "$case"
  [[ -f $data/$case/test_data_set_0/input_0.pb ]] && seed 1 "$data/$case/test_data_set_0/input_0.pb" "${case}_input"
done
"$build/tests/fuzz_import" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=1048576 \
  -print_final_stats=1 "$corpus"
