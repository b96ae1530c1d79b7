#!/usr/bin/env bash
# End-to-end checks of the `rnnc` command: the bundled demo model against PyTorch's stored output,
# the info/run outputs people read, and the one-line errors for bad invocations.
#   cli_test.sh RNNC TENSOR_COMPARE SOURCE_DIR
set -u
rnnc=$1 compare=$2 src=$3
demo=$src/models/demo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 checks=0

pass() { checks=$((checks + 1)); }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $*"; }

# expect_ok NAME PATTERN CMD...: the command succeeds and its stdout matches PATTERN.
expect_ok() {
  local name=$1 pattern=$2; shift 2
  local out
  if ! out=$("$@" 2>&1); then fail "$name: exited non-zero: $out"; return; fi
  if ! grep -qE -- "$pattern" <<<"$out"; then fail "$name: output lacks /$pattern/: $out"; return; fi
  pass
}

# expect_error NAME PATTERN CMD...: the command fails with exit 1 and one stderr line matching.
expect_error() {
  local name=$1 pattern=$2; shift 2
  local err code
  err=$("$@" 2>&1 >/dev/null); code=$?
  if [[ $code -ne 1 ]]; then fail "$name: exit code $code, expected 1 ($err)"; return; fi
  if [[ $(wc -l <<<"$err") -ne 1 ]]; then fail "$name: expected one error line, got: $err"; return; fi
  if ! grep -qF -- "$pattern" <<<"$err"; then fail "$name: error lacks '$pattern': $err"; return; fi
  pass
}

# The demo model's output equals PyTorch's (stored when the model was exported). Tolerance:
# rtol 1e-4, atol 1e-5 on log-probabilities of magnitude ~3.5 - float32 rounding accumulated over
# 50 recurrent steps of two layers, computed in a different order than PyTorch's.
expect_ok "demo run writes outputs" "wrote .*log_probs.pb" \
  "$rnnc" run "$demo/lstm_demo.onnx" --input "features=$demo/input.npy" --output-dir "$tmp/out"
expect_ok "demo output matches PyTorch" "max abs diff" \
  "$compare" "$tmp/out/log_probs.pb" "$demo/expected_output.npy" 1e-4 1e-5

expect_ok "run prints a summary and timing" "time per run .* median [0-9.]+ us, min" \
  "$rnnc" run "$demo/lstm_demo.onnx" --input "features=$demo/input.npy" --repeat 3
expect_ok "run --random binds symbolic dims" "log_probs: f32\[17, 1, 32\]" \
  "$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=17 --dim batch=1
# --compare-env: a second load (B) under an environment variable, timed against A in one process.
# XW chunks of any size compute the same sums in the same order, so B's outputs equal A's.
expect_ok "run --compare-env times B against A in rounds" \
  "compare: B \(RNNC_XW_CHUNK_KIB=0\) against A, 2 rounds of 3 runs each: B/A median [0-9]+\.[0-9]{3} \([0-9]+\.[0-9]{3}\.\.[0-9]+\.[0-9]{3}\) per round; max \|B - A\| over the float outputs 0$" \
  "$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=17 --dim batch=1 --repeat 3 --rounds 2 \
  --compare-env RNNC_XW_CHUNK_KIB=0
expect_ok "run --compare-env loads A first and B first in turn" \
  "compare round 2 \(B loaded first\): A median [0-9.]+ us, B median [0-9.]+ us" \
  "$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=17 --dim batch=1 --repeat 1 --rounds 2 \
  --compare-env RNNC_XW_CHUNK_KIB=0
expect_error "--compare-env without --repeat" "--compare-env needs --repeat N (the runs per round)" \
  "$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=17 --dim batch=1 \
  --compare-env RNNC_XW_CHUNK_KIB=0
expect_error "--compare-env without a value" "--compare-env expects NAME=VALUE, got 'RNNC_TARGET'" \
  "$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=17 --dim batch=1 --repeat 1 \
  --compare-env RNNC_TARGET
expect_ok "info shows symbolic dims" "features: f32\[seq, batch, 40\]" \
  "$rnnc" info "$demo/lstm_demo.onnx"
expect_ok "info counts parameters" "parameters: [0-9]+ bytes" "$rnnc" info "$demo/lstm_demo.onnx"
expect_ok "info --ir prints the text form" "= LSTM '" "$rnnc" info --ir "$demo/lstm_demo.onnx"
expect_ok "dump-dir writes every intermediate" "wrote" \
  "$rnnc" run "$demo/lstm_demo.onnx" --input "features=$demo/input.npy" --dump-dir "$tmp/dump" \
  --output-dir "$tmp/out2"
if grep -q "LSTM '" "$tmp/dump/index.txt" 2>/dev/null; then pass; else fail "dump index lacks LSTM"; fi
expect_ok "--version names the version, the CPU and the kernel target" "kernel target: host \\(" \
  "$rnnc" --version
expect_ok "--version names the kernel cache" "kernel cache: $tmp/version-cache\$" \
  env RNNC_CACHE_DIR="$tmp/version-cache" "$rnnc" --version

# rnnc cache: what the kernels take; --trim applies RNNC_CACHE_MAX_MIB (least recently used first,
# kernels used within the hour kept), --clear removes every kernel and leaves other files.
cache=$tmp/kernel-cache
"$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=3 --dim batch=1 --cache-dir "$cache" >/dev/null
expect_ok "cache reports what the kernels take" "holds: [1-9][0-9]* kernels \([0-9]+ files\), [0-9.]+ MiB" \
  "$rnnc" cache --cache-dir "$cache"
head -c 3145728 /dev/zero >"$cache/rnnc_00000000000000aa.so" && touch -d "3 days ago" "$cache/rnnc_00000000000000aa.so"
head -c 3145728 /dev/zero >"$cache/rnnc_00000000000000bb.so" && touch -d "2 days ago" "$cache/rnnc_00000000000000bb.so"
echo keep >"$cache/notes.txt"
expect_ok "cache --trim removes the least recently used beyond the bound" "bound: 5 MiB" \
  env RNNC_CACHE_MAX_MIB=5 "$rnnc" cache --cache-dir "$cache" --trim
if [[ ! -e $cache/rnnc_00000000000000aa.so && -e $cache/rnnc_00000000000000bb.so ]] &&
  "$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=3 --dim batch=1 --cache-dir "$cache" >/dev/null; then
  pass
else
  fail "cache --trim: expected the 3-day-old kernel gone, the 2-day-old one kept and the model to run"
fi
expect_ok "cache --clear removes every kernel" "removed: [1-9][0-9]* kernels" \
  "$rnnc" cache --cache-dir "$cache" --clear
if [[ -z $(ls "$cache" | grep -E '^(rnnc_|halide_runtime_)') && -e $cache/notes.txt ]]; then pass; else
  fail "cache --clear left kernels or removed other files: $(ls "$cache")"
fi
expect_error "cache with a bound that is not a number" "RNNC_CACHE_MAX_MIB = 'lots': must be a whole number" \
  env RNNC_CACHE_MAX_MIB=lots "$rnnc" cache --cache-dir "$cache"
for command in info run; do
  expect_ok "$command --help" "usage: rnnc $command" "$rnnc" "$command" --help
done

expect_error "missing model file" "cannot open model file '$tmp/none.onnx'" \
  "$rnnc" run "$tmp/none.onnx" --random
mkdir -p "$tmp/directory.onnx" "$tmp/directory.npy" "$tmp/directory.pb"
expect_error "a directory as the model" "cannot open model file '$tmp/directory.onnx'" \
  "$rnnc" info "$tmp/directory.onnx"
expect_error "a directory as an .npy input" "cannot open '$tmp/directory.npy'" \
  "$rnnc" run "$demo/lstm_demo.onnx" --input "features=$tmp/directory.npy"
expect_error "a directory as a .pb input" "cannot open tensor file '$tmp/directory.pb'" \
  "$rnnc" run "$demo/lstm_demo.onnx" --input "features=$tmp/directory.pb"
head -c 1000 "$demo/lstm_demo.onnx" >"$tmp/truncated.onnx"
expect_error "truncated model" "is not a valid ONNX protobuf (truncated or corrupt" \
  "$rnnc" info "$tmp/truncated.onnx"
expect_error "missing input" "input 'features' (f32[seq, batch, 40]) is missing" \
  "$rnnc" run "$demo/lstm_demo.onnx"
expect_error "unknown option" "unknown option '--bogus' for 'rnnc run'" \
  "$rnnc" run "$demo/lstm_demo.onnx" --bogus
expect_error "unbound symbolic dim" "input 'features' dim 0 is 'seq': bind it with --dim seq=N" \
  "$rnnc" run "$demo/lstm_demo.onnx" --random
expect_error "wrong input name" "'feats' is not an input of the model (inputs: 'features')" \
  "$rnnc" run "$demo/lstm_demo.onnx" --input "feats=$demo/input.npy"
cp "$demo/make_demo_model.py" "$tmp/not_a_tensor.npy"
expect_error "bad tensor file" "is not a .npy file (bad magic)" \
  "$rnnc" run "$demo/lstm_demo.onnx" --input "features=$tmp/not_a_tensor.npy"

# rnnc quantize: writes a model that rnnc reloads with int8 kernels, a report, clear errors.
expect_ok "quantize writes a model" "3 of 3 nodes with weights quantized" \
  "$rnnc" quantize "$demo/lstm_demo.onnx" -o "$tmp/demo_q.onnx" --calibrate "$demo/input.npy" \
  --report "$tmp/report.md"
if grep -q "| LSTM | weights symmetric 8-bit per row" "$tmp/report.md" 2>/dev/null; then pass;
else fail "quantize report lacks the LSTM rows"; fi
if grep -q "| MatMul | weights symmetric 8-bit per channel" "$tmp/report.md" 2>/dev/null; then pass;
else fail "quantize report lacks the MatMul head's row"; fi
if grep -q "^## Error budget" "$tmp/report.md" 2>/dev/null && grep -q "calibration sample(s) with the reference evaluator" "$tmp/report.md"; then pass;
else fail "quantize report lacks the error budget measured on the calibration samples"; fi
expect_ok "quantized model runs int8 blocks" "halide lstm int8" "$rnnc" plan "$tmp/demo_q.onnx"

# rnnc plan --dim / --fix: the program compiled for those dims and inputs. A model whose If and
# Shape depend on dim n and on a scalar input k: generic, they run as reference blocks; with n
# and k fixed they fold away.
cat >"$tmp/shape_if.ir" <<'IR'
model opset=13
graph main(%x: f32[batch, n], %k: i64[]) {
  const %one: i64[] = {1}
  %shape = Shape 'shape' (%x)
  %n = Gather 'n' (%shape, %one)
  %wide = Greater 'wide' (%n, %k)
  %y: f32[batch, n] = If 'choose' (%wide)
    else_branch = graph narrow() {
      %a: f32[batch, n] = Neg 'narrow_neg' (%x)
      return %a
    }
    then_branch = graph wide() {
      %b: f32[batch, n] = Relu 'wide_relu' (%x)
      return %b
    }
  return %y
}
IR
expect_ok "plan: generic program runs the If" "reference If" "$rnnc" plan "$tmp/shape_if.ir"
plan_fixed=$("$rnnc" plan "$tmp/shape_if.ir" --dim n=16 --fix k=8 2>&1)
if [[ $plan_fixed == *"halide relu"* && $plan_fixed != *"reference"* ]]; then
  pass
else
  fail "plan --dim n=16 --fix k=8: expected the If folded to a Relu block, got: $plan_fixed"
fi
expect_ok "quantized head runs the integer GEMM" "halide matmul.* int8 \[K=" "$rnnc" plan "$tmp/demo_q.onnx"
expect_ok "quantized model runs" "log_probs: f32\[50, 1, 32\]" \
  "$rnnc" run "$tmp/demo_q.onnx" --input "features=$demo/input.npy"
expect_ok "overflow mode counts per node" \
  "LSTM '[^']*' \(opset [0-9]+\): 8400 activations quantized to 8 bits, [0-9]+ clamped above" \
  "$rnnc" run "$tmp/demo_q.onnx" --input "features=$demo/input.npy" --count-overflow
expect_ok "quantize specializes first" "3 of 3 nodes with weights quantized" \
  "$rnnc" quantize "$demo/lstm_demo.onnx" -o "$tmp/demo_q1.onnx" --dim batch=1
expect_ok "specialized quantized model runs" "log_probs: f32\[17, 1, 32\]" \
  "$rnnc" run "$tmp/demo_q1.onnx" --random --dim seq=17
expect_error "quantize --fix names the inputs" \
  "cannot fix 'nope': the model has no input of that name (inputs: 'features')" \
  "$rnnc" quantize "$demo/lstm_demo.onnx" -o "$tmp/x.onnx" --fix nope=1
printf '{"default": {"weights": {"bits": 20}}}' >"$tmp/bad_q.json"
expect_error "bad quantization config" "bad_q.json: default.weights.bits = 20, must be in 2..16" \
  "$rnnc" quantize "$demo/lstm_demo.onnx" -o "$tmp/x.onnx" --config "$tmp/bad_q.json"
# The quantization guard: one line saying what it chose and how it measured; its options.
expect_ok "run --quantize says what the guard chose" \
  "rnnc run: quantized: 3 quantized as configured; max error [0-9.e-]+% of output range \(target 1%, half the 2% budget\); measured on 4 generated inputs \(seed 0x726e6e63; dims batch=1, seq=17\): real data is better" \
  "$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=17 --dim batch=1 --quantize default \
  --cache-dir "$tmp/cache"
expect_ok "the guard's decision is cached" "decision read from the cache" \
  "$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=17 --dim batch=1 --quantize default \
  --cache-dir "$tmp/cache"
expect_ok "run --no-guard measures nothing" "quantization guard off: error not measured" \
  "$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=17 --dim batch=1 --quantize default \
  --no-guard --cache-dir "$tmp/cache"
expect_error "--max-error out of range" \
  "--max-error expects a number in (0, 1] (a fraction of each output's range, e.g. 0.02), got '2'" \
  "$rnnc" run "$demo/lstm_demo.onnx" --random --dim seq=17 --dim batch=1 --quantize default \
  --max-error 2
expect_ok "quantize without calibration measures on generated inputs" \
  "measured on 4 generated inputs .*real data is better" \
  "$rnnc" quantize "$demo/lstm_demo.onnx" -o "$tmp/demo_q2.onnx" --dim batch=1 --dim seq=17
printf '{"default": {"activations": {"dynamic": false}}}' >"$tmp/static_q.json"
expect_error "static activations need calibration" "needs calibration data" \
  "$rnnc" quantize "$demo/lstm_demo.onnx" -o "$tmp/x.onnx" --config "$tmp/static_q.json"

# rnnc streams: real-time streams of the demo model (4-frame chunks of 10 ms), briefly; the fields
# people read, the batch sizes with batching on, and its errors.
expect_ok "streams prints latency per stream count" \
  "^4 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+ +[0-9]+ +(yes|no)$" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --streams 2,4 --seconds 0.4 --chunk-frames 4
expect_ok "streams header" "^streams  p50_ms   p99_ms   max_ms   mean_batch  chunks  late  dropped  kept_up$" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --streams 2 --seconds 0.2 --chunk-frames 4
expect_ok "streams with batching lists the batch sizes" "batch sizes \(size x runs\): 1x[0-9]+" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --streams 3 --seconds 0.3 --chunk-frames 4 \
  --max-wait-ms 1
expect_ok "streams without batching" "batching off, 2 thread\(s\)" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --streams 2 --seconds 0.2 --chunk-frames 4 \
  --batching off --threads 2
expect_ok "streams --find-max reports the largest count" "max streams with p99 <= 50 ms: [0-9]+" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --streams 1 --seconds 0.2 --chunk-frames 4 \
  --find-max --p99-ms 50 --max-batch 4
# --trials: each count runs that many times (a row each); --find-max judges the median trial and
# prints every trial's p99 in rank order.
out=$("$rnnc" streams "$demo/lstm_demo.onnx" --streams 3 --seconds 0.2 --chunk-frames 4 --trials 2 2>&1)
if [[ $(grep -cE "^3 +[0-9.]+ " <<<"$out") -eq 2 ]]; then pass; else fail "streams --trials 2 prints two rows per count: $out"; fi
expect_ok "streams --find-max --trials names the median" \
  "find-max: 1 streams: p99 [0-9.]+( \(fell behind\))? / [0-9.]+( \(fell behind\))? / [0-9.]+( \(fell behind\))? ms, median of 3 trials -> too many" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --streams 1 --seconds 0.2 --chunk-frames 4 \
  --find-max --p99-ms 0.0001 --trials 3
expect_ok "streams --find-max --trials reports the count" \
  "max streams with p99 <= 0.0001 ms: 0 \(median of 2 trials\)" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --streams 1 --seconds 0.2 --chunk-frames 4 \
  --find-max --p99-ms 0.0001 --trials 2
expect_error "streams --trials takes a count" "--trials must be >= 1" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --trials 0
expect_error "streams --batch-axis takes an axis" "--batch-axis x: 'one' is not -1 or an axis" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --batch-axis x=one
expect_error "streams --batch-axis checks the name" "BatcherOptions::batch_axes: 'nope' is not an input or output of the model" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --batch-axis nope=0 --seconds 0.1
expect_error "streams --batching takes on or off" "--batching expects on or off, got 'maybe'" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --batching maybe
expect_error "streams --find-max needs a budget" "--find-max needs --p99-ms X" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --find-max
expect_error "streams counts" "--streams expects counts >= 1 separated by commas, got '2,0'" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --streams 2,0
expect_error "streams needs the time dim bound" "input features: float[seq, batch, 40]: dim 'seq' is not bound: give it with --dim seq=N" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --time-dim frames --seconds 0.1
# Whether both streams keep up depends on the machine's speed (not under sanitizers): the row is
# what shows the file's chunks ran.
expect_ok "streams feeds --input files" "^2 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+ +[0-9]+ +(yes|no)$" \
  "$rnnc" streams "$demo/lstm_demo.onnx" --input "features=$demo/input.npy" --streams 2 \
  --seconds 0.5 --frame-ms 2 --chunk-frames 50
expect_ok "streams --help" "usage: rnnc streams" "$rnnc" streams --help

echo "$((checks - failures)) passed, $failures failed"
[[ $failures -eq 0 ]]
