#!/bin/sh
# The conformance runner must fail on a wrong expected output: generate three Exp tests, replace
# one test's expected output by its input (Exp has no fixed point, so every value now differs),
# and check that `rnnc_conform run` exits 1 naming that test as a mismatch.
#   detects_mismatch.sh RNNC_CONFORM WORK_DIR
set -u
conform=$1
dir=$2
rm -rf "$dir"
"$conform" gen --op Exp --profile smoke --count 3 --seed 1 --out "$dir" >/dev/null || exit 1
data="$dir/Exp_smoke_0001/test_data_set_0"
cp "$data/input_0.pb" "$data/output_0.pb"
out=$("$conform" run "$dir" 2>&1)
status=$?
if [ "$status" -ne 1 ]; then
  echo "expected exit status 1 from the run on a tampered suite, got $status:"
  echo "$out"
  exit 1
fi
if ! echo "$out" | grep -q "\[reference\] Exp_smoke_0001: mismatch: output 0"; then
  echo "the run did not report Exp_smoke_0001 as a mismatch:"
  echo "$out"
  exit 1
fi
if ! echo "$out" | grep -q "^Exp .* 2 pass, 1 FAIL"; then
  echo "the per-op line does not count 2 passes and 1 failure:"
  echo "$out"
  exit 1
fi
echo "tampered expected output detected"
