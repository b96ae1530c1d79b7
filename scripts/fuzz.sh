#!/usr/bin/env bash
# Builds the fuzz targets with clang's libFuzzer + ASan/UBSan and runs each for a bounded time on
# a seed corpus:
#   fuzz_import         ONNX models, TensorProto / .npy tensors (the demo model, the bench smoke
#                       model with ONNX Runtime's DynamicQuantizeLSTM, ONNX backend test cases),
#                       the IR text form and quantization configs (tests/graph_opt/ goldens,
#                       quant/configs/);
#   fuzz_serve_request  `rnnc serve`'s request decoders: REST JSON bodies, with and without binary
#                       data, and gRPC ModelInferRequest messages.
#   scripts/fuzz.sh [SECONDS]      default 60, split between the two targets
# The first build compiles everything rnnc_serve links (the runtime and lowering) with the
# sanitizers: about 30 minutes on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
build=$root/build-fuzz

"$root/scripts/setup.sh"
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRNNC_FUZZ=ON -DRNNC_BUILD_TESTS=ON -DRNNC_SANITIZE=address,undefined >/dev/null
cmake --build "$build" --target fuzz_import fuzz_serve_request -j "$(nproc)"

# Undefined behaviour stops the target like a crash: libFuzzer then saves the input
# (crash-<sha1>) and the run fails, rather than printing a report and going on.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$root/scripts/sanitizer-suppressions/ubsan.supp

run() {  # run TARGET CORPUS SECONDS
  "$build/tests/$1" -max_total_time="$3" -rss_limit_mb=4096 -max_len=1048576 \
    -print_final_stats=1 "$2"
}

# fuzz_import: the first byte selects the parser: 0 model, 1 TensorProto, 2 .npy, 3 SequenceProto,
# 4 OptionalProto, 5 IR text, 6 quantization config.
corpus=$build/corpus
mkdir -p "$corpus"
seed() { { printf "\\x$(printf %02x "$1")"; cat "$2"; } >"$corpus/$3"; }
seed 0 "$root/models/demo/lstm_demo.onnx" demo_model
seed 0 "$root/models/smoke/smoke_lstm64_l2.dqlstm.onnx" dqlstm_model
seed 2 "$root/models/demo/input.npy" demo_input
data=/usr/share/libonnx-testdata/data/node
for case in test_lstm_defaults test_gru_defaults test_if test_conv_with_strides_padding; do
  [[ -f $data/$case/model.onnx ]] && seed 0 "$data/$case/model.onnx" "$case"
  [[ -f $data/$case/test_data_set_0/input_0.pb ]] && seed 1 "$data/$case/test_data_set_0/input_0.pb" "${case}_input"
done
for ir in specialize dce_nested cse_nested fuse_lstm_cell canonicalize_recurrent; do
  [[ -f $root/tests/graph_opt/$ir.ir ]] && seed 5 "$root/tests/graph_opt/$ir.ir" "ir_$ir"
done
for config in "$root"/quant/configs/*.json; do seed 6 "$config" "config_$(basename "$config" .json)"; done
printf '\x06%s' '{"default": {"weights": {"bits": 8, "symmetric": true, "granularity": "row"},
 "activations": {"bits": 8, "symmetric": false, "dynamic": true}},
 "ops": {"GRU": {"activations": {"dynamic": false, "method": "percentile", "percentile": 99.9}}},
 "nodes": {"/LSTM_3": {"float": true}, "/LSTM": {"weights": {"bits": 4, "method": "mse"}}},
 "guard": {"max_error": 0.02}}' >"$corpus/config_overrides"
run fuzz_import "$corpus" $((seconds / 2))

# fuzz_serve_request: the first byte selects the form: 0 REST (all JSON), 1 REST with the next
# two bytes (little-endian) the JSON header's length and binary data after it, 2 gRPC.
serve_corpus=$build/corpus_serve
mkdir -p "$serve_corpus"
printf '\x00%s' '{"id": "a", "parameters": {"sequence_id": "s", "sequence_start": true},
 "inputs": [{"name": "f", "datatype": "FP32", "shape": [2, 2], "data": [[1, 2.5], [-3, 4e5]]},
            {"name": "b", "datatype": "BOOL", "shape": [2], "data": [true, false]},
            {"name": "i", "datatype": "INT8", "shape": [1], "data": [-7]}],
 "outputs": [{"name": "y", "parameters": {"binary_data": true}}]}' >"$serve_corpus/rest_json"
header='{"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "parameters": {"binary_data_size": 8}}]}'
{
  printf '\x01'
  printf "\\x$(printf %02x $((${#header} % 256)))\\x$(printf %02x $((${#header} / 256)))"
  printf '%s' "$header"
  printf '\x00\x00\x80\x3f\x00\x00\x00\x40'
} >"$serve_corpus/rest_binary"
# ModelInferRequest{model_name "m", inputs [{name "x", datatype "FP32", shape [2],
# contents.fp32_contents [1, 2]}]}, in protobuf's wire format.
printf '\x02\x0a\x01m\x2a\x18\x0a\x01x\x12\x04FP32\x1a\x01\x02\x2a\x0a\x32\x08\x00\x00\x80\x3f\x00\x00\x00\x40' \
  >"$serve_corpus/grpc_typed"
run fuzz_serve_request "$serve_corpus" $((seconds - seconds / 2))
