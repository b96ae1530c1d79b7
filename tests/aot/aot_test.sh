#!/usr/bin/env bash
# The ahead-of-time libraries end to end (docs/aot.md): the example program built against the demo
# model's, the 4-layer stacked LSTM's and a wide LSTM's libraries (examples/aot), PyTorch's stacked
# LSTM with initial states and bidirectional GRU, an LSTM with sequence_lens, int8 models `rnnc
# quantize` wrote, view blocks, a decoder's ConvTranspose and CumSum blocks, a front-end's STFT
# and DFT blocks, an STFT written as a Conv and a vocoder's Resize blocks gives the JIT path's outputs (`rnnc run`, the
# runtime) bit for bit - same kernels for the same target, same time loop and copy code
# (lowering/core/) - for whole runs, batched runs and streams in uneven chunks; it links nothing of Halide, LLVM, oneTBB, protobuf or
# ONNX; rnnc compile's errors name what it cannot export.
#   aot_test.sh RNNC TENSOR_COMPARE EXAMPLES_DIR SOURCE_DIR KERNEL_CACHE [SANITIZERS]
# With SANITIZERS (a sanitizer build), the examples also link the sanitizer runtimes, so only the
# forbidden libraries are looked for.
set -u
rnnc=$1 compare=$2 examples=$3 src=$4 cache=$5 sanitizers=${6:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 checks=0
pass() { checks=$((checks + 1)); }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $*"; }

run() {  # run NAME CMD...: the command succeeds (its output shown on failure)
  local name=$1; shift
  local out
  if out=$("$@" 2>&1); then pass; else fail "$name: $out"; fi
}
same() {  # same NAME ACTUAL EXPECTED: equal bit for bit (tolerance 0)
  local out
  if out=$("$compare" "$2" "$3" 0 0 2>&1); then pass; else fail "$1: $out"; fi
}

demo=$src/models/demo
# Demo model: the stored 50-frame input, whole and streamed in chunks of 7 (the last one 1).
run "demo: AOT run" "$examples/aot_example_demo" "$examples/demo/demo.weights" --dim seq=50 \
  --dim batch=1 --input "features=$demo/input.npy" --out "$tmp" --repeat 5
run "demo: JIT run" "$rnnc" run "$demo/lstm_demo.onnx" --input "features=$demo/input.npy" \
  --output-dir "$tmp/jit" --cache-dir "$cache"
same "demo: AOT == JIT" "$tmp/log_probs.npy" "$tmp/jit/log_probs.pb"
mkdir -p "$tmp/chunked"
run "demo: AOT stream" "$examples/aot_example_demo" "$examples/demo/demo.weights" --dim seq=50 \
  --dim batch=1 --input "features=$demo/input.npy" --chunk 7 --out "$tmp/chunked"
same "demo: AOT stream == JIT run" "$tmp/chunked/log_probs.npy" "$tmp/jit/log_probs.pb"

# 4-layer stacked LSTM (h128): batch 1 (the single-entry step), batch 3 (the batched step), and
# a batch-3 stream in chunks of 4.
for shape in "17 1" "9 3"; do
  set -- $shape
  dir=$tmp/stack_$1_$2
  mkdir -p "$dir/in" "$dir/chunked"
  run "stack $1x$2: AOT run" "$examples/aot_example_stack" "$examples/stack/stack.weights" \
    --dim seq=$1 --dim batch=$2 --save-inputs "$dir/in" --out "$dir"
  run "stack $1x$2: JIT run" "$rnnc" run "$examples/lstm128_l4.onnx" --input "x=$dir/in/x.npy" \
    --output-dir "$dir/jit" --cache-dir "$cache"
  same "stack $1x$2: AOT == JIT" "$dir/y.npy" "$dir/jit/y.pb"
  run "stack $1x$2: AOT stream" "$examples/aot_example_stack" "$examples/stack/stack.weights" \
    --dim seq=$1 --dim batch=$2 --chunk 4 --out "$dir/chunked"
  same "stack $1x$2: AOT stream == JIT run" "$dir/chunked/y.npy" "$dir/jit/y.pb"
done

# One LSTM whose input weights stream (16-row projection tiles, 6-row tiles for 6 to 15 rows, one
# row with 4 panels): 17, 7 and 1 rows, and a stream in chunks of 3.
for seq in 17 7 1; do
  dir=$tmp/wide_$seq
  mkdir -p "$dir/in" "$dir/chunked"
  run "wide $seq: AOT run" "$examples/aot_example_wide" "$examples/wide/wide.weights" \
    --dim seq=$seq --dim batch=1 --save-inputs "$dir/in" --out "$dir"
  run "wide $seq: JIT run" "$rnnc" run "$examples/lstm256_i300.onnx" --input "x=$dir/in/x.npy" \
    --output-dir "$dir/jit" --cache-dir "$cache"
  same "wide $seq: AOT == JIT" "$dir/y.npy" "$dir/jit/y.pb"
  run "wide $seq: AOT stream" "$examples/aot_example_wide" "$examples/wide/wide.weights" \
    --dim seq=$seq --dim batch=1 --chunk 3 --out "$dir/chunked"
  same "wide $seq: AOT stream == JIT run" "$dir/chunked/y.npy" "$dir/jit/y.pb"
done

# Libraries compiled here (not by CMake): `rnnc compile MODEL`, then examples/aot/main.c built
# against the library with the C compiler alone.
compile_example() {  # compile_example NAME MODEL [COMPILE OPTION]...: $tmp/NAME/libNAME.a and
  local name=$1 model=$2  #   $tmp/aot_example_NAME
  shift 2
  run "$name: rnnc compile" "$rnnc" compile "$model" -o "$tmp/$name" --name "$name" \
    --cache-dir "$cache" "$@"
  run "$name: cc" cc -std=gnu11 -O2 -DAOT_HEADER="\"$name.h\"" -DAOT_MODEL="${name}_model" \
    "$src/examples/aot/main.c" -I"$tmp/$name" "$tmp/$name/lib$name.a" -lm -lpthread -ldl \
    -o "$tmp/aot_example_$name"
}

aot_equals_jit() {  # aot_equals_jit NAME MODEL "DIMS..." "INPUTS" "OUTPUTS": per DIMS (dims
  # joined by commas: seq=7,batch=1) the library's run on random inputs (saved) and `rnnc run` on
  # the same inputs, every output equal bit for bit.
  local name=$1 model=$2 dimsets=$3 inputs=$4 outputs=$5 dims dir input output d
  for dims in $dimsets; do
    dir=$tmp/${name}_${dims//[=,]/_}
    mkdir -p "$dir/in"
    local dim_args=() args=()
    for d in ${dims//,/ }; do dim_args+=(--dim "$d"); done
    run "$name $dims: AOT run" "$tmp/aot_example_$name" "$tmp/$name/$name.weights" \
      "${dim_args[@]}" --save-inputs "$dir/in" --out "$dir"
    for input in $inputs; do args+=(--input "$input=$dir/in/$input.npy"); done
    run "$name $dims: JIT run" "$rnnc" run "$model" "${args[@]}" --output-dir "$dir/jit" \
      --cache-dir "$cache"
    for output in $outputs; do
      same "$name $dims: AOT $output == JIT" "$dir/$output.npy" "$dir/jit/$output.pb"
    done
  done
}

# PyTorch's exports of a 2-layer LSTM called with (h0, c0) and of a 2-layer bidirectional GRU
# called with h0 (tests/data/aot/make_models.py): Slice blocks cut each layer's initial state out
# of h0 / c0, Concat blocks stack the final states; the library runs them (the copy kernels
# librnnc runs, lowering/core/copy_kernels.h) around the recurrent blocks (forward, and the GRU's
# reversed direction with linear_before_reset). Batch 1 and 3, every output.
for case in "pt lstm_initial_states x,h0,c0 y,h_n,c_n" "gru gru_bidirectional x,h0 y,h_n"; do
  set -- $case
  name=$1 model=$src/tests/data/aot/$2.onnx inputs=${3//,/ } outputs=${4//,/ }
  compile_example "$name" "$model"
  aot_equals_jit "$name" "$model" "seq=7,batch=1 seq=5,batch=3" "$inputs" "$outputs"
  if grep -q "rn_slice_copy" "$tmp/$name/${name}_driver.c" &&
      grep -q "rn_concat" "$tmp/$name/${name}_driver.c"; then
    pass
  else
    fail "$name: the driver runs no Slice or no Concat copy"
  fi
done

# A bidirectional LSTM with peepholes whose constant sequence_lens [5, 2, 0] stops the entries at
# different steps (the reverse direction starts each at its own last step): seq 6 and 5, every
# output; at seq 4 an entry's length is out of range, which the library reports as the runtime
# does.
sl=$src/tests/data/aot/lstm_sequence_lens.onnx
compile_example sl "$sl"
for seq in 6 5; do
  dir=$tmp/sl_$seq
  mkdir -p "$dir/in"
  run "sequence_lens seq $seq: AOT run" "$tmp/aot_example_sl" "$tmp/sl/sl.weights" --dim seq=$seq \
    --save-inputs "$dir/in" --out "$dir"
  run "sequence_lens seq $seq: JIT run" "$rnnc" run "$sl" --input "x=$dir/in/x.npy" \
    --output-dir "$dir/jit" --cache-dir "$cache"
  for output in y y_h y_c; do
    same "sequence_lens seq $seq: AOT $output == JIT" "$dir/$output.npy" "$dir/jit/$output.pb"
  done
done
err=$("$tmp/aot_example_sl" "$tmp/sl/sl.weights" --dim seq=4 --out "$tmp" 2>&1)
if [[ $? -ne 0 && $err == *"input 'sequence_lens'[0] = 5, must be in [0, seq_length = 4]"* ]]; then
  pass
else
  fail "sequence_lens beyond seq: expected the library's error, got: $err"
fi

# A decoder's tail (tests/data/aot/decoder.onnx, PyTorch): a strided ConvTranspose1d with its ReLU,
# a CumSum over time and a ConvTranspose2d with output_padding and its Sigmoid, each a Halide
# block: batch 1 and 2, two lengths, every output.
dec=$src/tests/data/aot/decoder.onnx
compile_example dec "$dec"
for driver_kind in "halide convtranspose+relu" "halide cumsum" "halide convtranspose+sigmoid"; do
  if grep -qF "$driver_kind" "$tmp/dec/dec_driver.c"; then
    pass
  else
    fail "decoder: no '$driver_kind' block"
  fi
done
for shape in "1 5" "2 9"; do
  set -- $shape
  dir=$tmp/dec_$1_$2
  mkdir -p "$dir/in"
  run "decoder $1x$2: AOT run" "$tmp/aot_example_dec" "$tmp/dec/dec.weights" --dim batch=$1 \
    --dim time=$2 --save-inputs "$dir/in" --out "$dir"
  run "decoder $1x$2: JIT run" "$rnnc" run "$dec" --input "x=$dir/in/x.npy" \
    --input "s=$dir/in/s.npy" --output-dir "$dir/jit" --cache-dir "$cache"
  for output in y mask; do
    same "decoder $1x$2: AOT $output == JIT" "$dir/$output.npy" "$dir/jit/$output.pb"
  done
done

# A front-end inside the graph (tests/data/aot/front_end.onnx): an STFT with a Hann window and a
# zero-padded onesided DFT, each a Halide GEMM against its transform matrix; batch 1 and 3.
fe=$src/tests/data/aot/front_end.onnx
compile_example fe "$fe"
for driver_kind in "halide stft" "halide dft"; do
  if grep -qF "$driver_kind" "$tmp/fe/fe_driver.c"; then
    pass
  else
    fail "front end: no '$driver_kind' block"
  fi
done
aot_equals_jit fe "$fe" "batch=1 batch=3" "signal x" "spectrum bins"

# An STFT written as a Conv (tests/data/aot/stft_conv.onnx, as Silero VAD exports it): a reflect
# Pad (a copy block), the Conv with a windowed DFT basis, run as two short DFTs, and a Transpose
# (a copy block); batch 1 and 2.
sc=$src/tests/data/aot/stft_conv.onnx
compile_example sc "$sc"
for driver_kind in "halide dft conv" "copy Transpose"; do
  if grep -qF "$driver_kind" "$tmp/sc/sc_driver.c"; then
    pass
  else
    fail "stft conv: no '$driver_kind' block"
  fi
done
aot_equals_jit sc "$sc" "batch=1 batch=2" "signal" "frames"

# A vocoder's upsampling (tests/data/aot/upsampler.onnx, PyTorch): a linear Resize along time and
# a 2-D nearest one, each a Halide block; batch 1 and 2.
up=$src/tests/data/aot/upsampler.onnx
compile_example up "$up"
if [[ $(grep -c "halide resize" "$tmp/up/up_driver.c") -ge 2 ]]; then
  pass
else
  fail "upsampler: fewer than two resize blocks"
fi
aot_equals_jit up "$up" "batch=1 batch=2" "x s" "y grid"

# Data-dependent extents (tests/data/aot/slice_pad_run_time.onnx): a Slice whose start, a Pad whose
# pads and a Reshape whose shape are int64 inputs. The library names the extents they give as
# data-dependent dims, sizes the Tanh and Mul after them from each run's values and returns y and
# z in its own memory: equal to the runtime's for two sets of values; through the typed API, the
# shapes, and a pad that crops below zero and a shape that does not hold the elements (the
# library's errors, as they are the runtime's).
rt=$src/tests/data/aot/slice_pad_run_time.onnx
compile_example rt "$rt"
for case in "5 3 1,2,0,3 3,-1" "7 0 0,0,2,1 -1,1"; do
  set -- $case
  dir=$tmp/rt_$1_$2
  mkdir -p "$dir/in"
  /usr/bin/python3 -c "import numpy as np; np.save('$dir/in/start.npy', np.array([$2], np.int64)); np.save('$dir/in/pads.npy', np.array([$3], np.int64)); np.save('$dir/in/shape.npy', np.array([$4], np.int64))"
  run "run-time slice $1/$2: AOT run" "$tmp/aot_example_rt" "$tmp/rt/rt.weights" --dim seq=$1 \
    --input "start=$dir/in/start.npy" --input "pads=$dir/in/pads.npy" \
    --input "shape=$dir/in/shape.npy" --save-inputs "$dir/in" \
    --out "$dir"
  run "run-time slice $1/$2: JIT run" "$rnnc" run "$rt" --input "x=$dir/in/x.npy" \
    --input "start=$dir/in/start.npy" --input "pads=$dir/in/pads.npy" \
    --input "shape=$dir/in/shape.npy" --output-dir "$dir/jit" \
    --cache-dir "$cache"
  for output in y z; do
    same "run-time slice $1/$2: AOT $output == JIT" "$dir/$output.npy" "$dir/jit/$output.pb"
  done
done
cat >"$tmp/rt_typed.c" <<'EOF'
#include <stdio.h>
#include "rt.h"
int main(int argc, char** argv) {
  rt_context* context = NULL;
  if (argc != 2 || rt_create_from_file(argv[1], &context)) return 2;
  float x[5 * 16] = {0};
  const int64_t start[1] = {3}, pads[4] = {1, 2, 0, 3}, crop[4] = {-9, 0, 0, 0};
  const int64_t shape[2] = {3, -1}, bad_shape[2] = {4, -1};
  const float *y = NULL, *z = NULL;
  int64_t y_shape[2], z_shape[2];
  int status = rt_run(context, 5, x, start, pads, shape, &y, &z);
  int ranks = rt_output_shape(context, 0, y_shape) * 10 + rt_output_shape(context, 1, z_shape);
  printf("%d %d y %lldx%lld z %lldx%lld %s\n", status, ranks, (long long)y_shape[0],
         (long long)y_shape[1], (long long)z_shape[0], (long long)z_shape[1],
         y && z ? "set" : "null");
  status = rt_run(context, 5, x, start, crop, shape, &y, &z);
  printf("%d %d %s\n", status, rt_output_shape(context, 0, y_shape), rt_last_error(context));
  status = rt_run(context, 5, x, start, pads, bad_shape, &y, &z);
  printf("%d %s\n", status, rt_last_error(context));
  rt_destroy(context);
  return 0;
}
EOF
if cc -O1 "$tmp/rt_typed.c" -I"$tmp/rt" "$tmp/rt/librt.a" -lm -lpthread -ldl -o "$tmp/rt_typed" \
    2>"$tmp/cc.log"; then
  got=$("$tmp/rt_typed" "$tmp/rt/rt.weights")
  expected="0 22 y 5x13 z 3x42 set
7 -1 Pad 'pad' (opset 14): the pads give a negative extent or pad an empty axis
7 Reshape 'flatten' (opset 14): the shape does not hold the input's elements"
  if [[ $got == "$expected" ]]; then pass; else fail "typed data-dependent API: got '$got'"; fi
else
  fail "building the typed data-dependent check: $(cat "$tmp/cc.log")"
fi

# A model `rnnc quantize` wrote (int8 LSTM products): the library runs the integer kernels the
# runtime runs, with the int8 weights, scales and column sums from its weight file.
run "int8: rnnc quantize" "$rnnc" quantize "$src/models/smoke/smoke_lstm64_l2.onnx" \
  -o "$tmp/lstm_q.onnx"
compile_example q "$tmp/lstm_q.onnx"
if grep -q "L.quantized = 1" "$tmp/q/q_driver.c"; then
  pass
else
  fail "the quantized model's library has no quantized recurrent block"
fi
for shape in "17 1" "9 3"; do
  set -- $shape
  dir=$tmp/q_$1_$2
  mkdir -p "$dir/in" "$dir/chunked"
  run "int8 $1x$2: AOT run" "$tmp/aot_example_q" "$tmp/q/q.weights" --dim seq=$1 \
    --dim batch=$2 --save-inputs "$dir/in" --out "$dir"
  run "int8 $1x$2: JIT run" "$rnnc" run "$tmp/lstm_q.onnx" --input "x=$dir/in/x.npy" \
    --output-dir "$dir/jit" --cache-dir "$cache"
  same "int8 $1x$2: AOT == JIT" "$dir/y.npy" "$dir/jit/y.pb"
  run "int8 $1x$2: AOT stream" "$tmp/aot_example_q" "$tmp/q/q.weights" --dim seq=$1 \
    --dim batch=$2 --chunk 4 --out "$dir/chunked"
  same "int8 $1x$2: AOT stream == JIT run" "$dir/chunked/y.npy" "$dir/jit/y.pb"
done

# The demo model as `rnnc quantize` writes it: int8 LSTMs and the int8 GEMM of its head (a Halide
# block of integer products), on its stored input, whole and streamed in chunks of 7.
run "demo int8: rnnc quantize" "$rnnc" quantize "$demo/lstm_demo.onnx" -o "$tmp/demo_q.onnx"
compile_example dq "$tmp/demo_q.onnx"
if grep -q "halide matmul+add int8" "$tmp/dq/dq_driver.c" &&
    grep -q "L.quantized = 1" "$tmp/dq/dq_driver.c"; then
  pass
else
  fail "the quantized demo's library has no int8 GEMM or no int8 LSTM"
fi
mkdir -p "$tmp/dq_run/chunked"
run "demo int8: AOT run" "$tmp/aot_example_dq" "$tmp/dq/dq.weights" --dim seq=50 --dim batch=1 \
  --input "features=$demo/input.npy" --out "$tmp/dq_run"
run "demo int8: JIT run" "$rnnc" run "$tmp/demo_q.onnx" --input "features=$demo/input.npy" \
  --output-dir "$tmp/dq_run/jit" --cache-dir "$cache"
same "demo int8: AOT == JIT" "$tmp/dq_run/log_probs.npy" "$tmp/dq_run/jit/log_probs.pb"
run "demo int8: AOT stream" "$tmp/aot_example_dq" "$tmp/dq/dq.weights" --dim seq=50 \
  --dim batch=1 --input "features=$demo/input.npy" --chunk 7 --out "$tmp/dq_run/chunked"
same "demo int8: AOT stream == JIT run" "$tmp/dq_run/chunked/log_probs.npy" \
  "$tmp/dq_run/jit/log_probs.pb"
# The same for the AVX2 level, whose integer kernels sum u8 x s8 products in pairs (no VNNI).
compile_example dq3 "$tmp/demo_q.onnx" --target x86-64-v3
mkdir -p "$tmp/dq3_run"
run "demo int8, x86-64-v3: AOT run" "$tmp/aot_example_dq3" "$tmp/dq3/dq3.weights" --dim seq=50 \
  --dim batch=1 --input "features=$demo/input.npy" --out "$tmp/dq3_run"
run "demo int8, x86-64-v3: JIT run" "$rnnc" run "$tmp/demo_q.onnx" --target x86-64-v3 \
  --input "features=$demo/input.npy" --output-dir "$tmp/dq3_run/jit" --cache-dir "$cache"
same "demo int8, x86-64-v3: AOT == JIT" "$tmp/dq3_run/log_probs.npy" \
  "$tmp/dq3_run/jit/log_probs.pb"

# The demo quantized by `rnnc compile --quantize default` itself (the guard's decision, as `rnnc run
# --quantize default` makes it at load, read from the same cache): the library equals that run.
compile_example dqc "$demo/lstm_demo.onnx" --quantize default
if grep -q "halide matmul+add int8" "$tmp/dqc/dqc_driver.c" &&
    grep -q "L.quantized = 1" "$tmp/dqc/dqc_driver.c"; then
  pass
else
  fail "rnnc compile --quantize default: the demo's library has no int8 GEMM or no int8 LSTM"
fi
mkdir -p "$tmp/dqc_run"
run "demo --quantize: AOT run" "$tmp/aot_example_dqc" "$tmp/dqc/dqc.weights" --dim seq=50 \
  --dim batch=1 --input "features=$demo/input.npy" --out "$tmp/dqc_run"
run "demo --quantize: JIT run" "$rnnc" run "$demo/lstm_demo.onnx" --quantize default \
  --input "features=$demo/input.npy" --output-dir "$tmp/dqc_run/jit" --cache-dir "$cache"
same "demo --quantize: AOT == JIT" "$tmp/dqc_run/log_probs.npy" "$tmp/dqc_run/jit/log_probs.pb"
err=$("$rnnc" compile "$demo/lstm_demo.onnx" -o "$tmp/bad" --no-guard 2>&1)
if [[ $err == *"--no-guard and --max-error go with --quantize CONFIG"* ]]; then
  pass
else
  fail "rnnc compile --no-guard without --quantize: got: $err"
fi

node=/usr/share/libonnx-testdata/data/node
# Pad and Slice blocks, their operands fixed to the ONNX test cases' own (--fix, so they are
# constants in the library; the JIT run reads them as inputs): a constant pad, a Slice with
# negative steps.
for case in "constant_pad pads=1 value=2" "slice_neg_steps starts=1 ends=2 axes=3 steps=4"; do
  set -- $case
  name=$1; shift
  fixes=() operands=()
  for fix in "$@"; do
    file=$node/test_$name/test_data_set_0/input_${fix#*=}.pb
    fixes+=(--fix "${fix%=*}=@$file")
    operands+=(--input "${fix%=*}=$file")
  done
  model=$node/test_$name/model.onnx
  run "$name: rnnc compile" "$rnnc" compile "$model" "${fixes[@]}" -o "$tmp/$name" --name "$name" \
    --cache-dir "$cache"
  run "$name: cc" cc -std=gnu11 -O2 -DAOT_HEADER="\"$name.h\"" -DAOT_MODEL="${name}_model" \
    "$src/examples/aot/main.c" -I"$tmp/$name" "$tmp/$name/lib$name.a" -lm -lpthread -ldl \
    -o "$tmp/aot_example_$name"
  mkdir -p "$tmp/${name}_run/in"
  run "$name: AOT run" "$tmp/aot_example_$name" "$tmp/$name/$name.weights" \
    --save-inputs "$tmp/${name}_run/in" --out "$tmp/${name}_run"
  run "$name: JIT run" "$rnnc" run "$model" "${operands[@]}" --input "x=$tmp/${name}_run/in/x.npy" \
    --output-dir "$tmp/${name}_run/jit" --cache-dir "$cache"
  same "$name: AOT == JIT" "$tmp/${name}_run/y.npy" "$tmp/${name}_run/jit/y.pb"
  if grep -qE "rn_(pad|slice)_copy\(&" "$tmp/$name/${name}_driver.c"; then
    pass
  else
    fail "$name: the driver runs no Pad or Slice copy"
  fi
done

# View blocks (Flatten, Identity): the library copies the elements the runtime's view aliases.
for case in "flatten test_flatten_axis1 a b" "identity test_identity x y"; do
  set -- $case
  compile_example "$1" "$node/$2/model.onnx"
  mkdir -p "$tmp/$1_run/in"
  run "$1: AOT run" "$tmp/aot_example_$1" "$tmp/$1/$1.weights" --save-inputs "$tmp/$1_run/in" \
    --out "$tmp/$1_run"
  run "$1: JIT run" "$rnnc" run "$node/$2/model.onnx" --input "$3=$tmp/$1_run/in/$3.npy" \
    --output-dir "$tmp/$1_run/jit" --cache-dir "$cache"
  same "$1: AOT == JIT" "$tmp/$1_run/$4.npy" "$tmp/$1_run/jit/$4.pb"
done

# Linked with the C runtime only.
for example in "$examples/aot_example_demo" "$examples/aot_example_stack" \
    "$examples/aot_example_wide" "$tmp/aot_example_pt" "$tmp/aot_example_gru" \
    "$tmp/aot_example_sl" "$tmp/aot_example_q"; do
  libs=$(ldd "$example" | awk '{print $1}')
  if grep -qiE 'halide|llvm|tbb|protobuf|onnx|rnnc' <<<"$libs"; then
    fail "$example links: $libs"
  elif [[ -z $sanitizers ]] && grep -vqE '^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|lib(c|m|pthread|dl)\.so\.[0-9]+)$' <<<"$libs"; then
    fail "$example links more than libc, libm, libpthread, libdl: $libs"
  else
    pass
  fi
done

# rnnc compile: what it writes, and its errors.
for file in demo.h libdemo.a demo.weights README.md; do
  if [[ -s $examples/demo/$file ]]; then pass; else fail "rnnc compile did not write $file"; fi
done
expect_error() {  # expect_error NAME PATTERN CMD...: exit 1, the last line matching PATTERN
  local name=$1 pattern=$2; shift 2
  local err code
  err=$("$@" 2>&1 >/dev/null); code=$?
  if [[ $code -ne 1 ]]; then fail "$name: exit code $code, expected 1 ($err)"; return; fi
  if ! tail -1 <<<"$err" | grep -qF -- "$pattern"; then fail "$name: error lacks '$pattern': $err"; return; fi
  pass
}
node=/usr/share/libonnx-testdata/data/node
expect_error "a reference block" "rnnc compile: unsupported: ahead-of-time export: ArgMax 'ArgMax_0' (opset 13) runs as 'reference ArgMax', which needs rnnc's C++ at run time" \
  "$rnnc" compile "$node/test_argmax_default_axis_example/model.onnx" -o "$tmp/bad" --cache-dir "$cache"
expect_error "a bad name" "rnnc compile: invalid input: --name '2x' is not a C identifier" \
  "$rnnc" compile "$demo/lstm_demo.onnx" -o "$tmp/bad" --name 2x --cache-dir "$cache"
expect_error "no output directory" "rnnc compile: invalid input: give the output directory with -o DIR" \
  "$rnnc" compile "$demo/lstm_demo.onnx"
expect_error "a bad target" "rnnc compile: invalid input: unknown target 'armv9' (use host, x86-64, x86-64-v2" \
  "$rnnc" compile "$demo/lstm_demo.onnx" -o "$tmp/bad" --target armv9 --cache-dir "$cache"

# A library compiled for Sapphire Rapids checks the CPU when a context is created: where this CPU
# lacks AVX512-FP16 (an AMD Zen 4, say) it returns RNNC_AOT_ERROR_CPU naming the feature instead
# of stopping at an illegal instruction; where it has every feature, it runs.
run "demo for sapphirerapids: compile" "$rnnc" compile "$demo/lstm_demo.onnx" -o "$tmp/spr" \
  --name demo --target sapphirerapids --cache-dir "$cache"
cat >"$tmp/cpu_check.c" <<'EOF'
#include <stdio.h>
#include "demo.h"
int main(int argc, char** argv) {
  demo_context* context = NULL;
  int status = demo_create_from_file(argv[1], &context);
  const char* missing = demo_missing_cpu_feature();
  printf("%d %s\n", status, missing ? missing : "none");
  if (context) demo_destroy(context);
  return argc == 2 ? 0 : 2;
}
EOF
if cc -O1 "$tmp/cpu_check.c" -I"$tmp/spr" "$tmp/spr/libdemo.a" -lm -lpthread -ldl \
    -o "$tmp/cpu_check" 2>"$tmp/cc.log"; then
  pass
  got=$("$tmp/cpu_check" "$tmp/spr/demo.weights")
  if grep -qw avx512_fp16 /proc/cpuinfo; then expected="0 none"; else expected="10 avx512fp16"; fi
  if [[ $got == "$expected" ]]; then pass; else fail "CPU check: got '$got', expected '$expected'"; fi
else
  fail "building the CPU check: $(cat "$tmp/cc.log")"
fi

echo "$checks checks, $failures failures"
[[ $failures -eq 0 ]]
