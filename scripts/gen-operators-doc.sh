#!/usr/bin/env bash
# Regenerates docs/operators.md from a run of the ONNX backend test cases (never edit it by hand).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
cmake --build "$build" --target onnx_backend_test >/dev/null
"$build/tests/onnx_backend_test" --report="$root/docs/operators.md" \
  --expected-failures="$root/tests/onnx_backend/expected_failures.txt" \
  --out-of-scope="$root/tests/onnx_backend/out_of_scope.txt" >/dev/null || true
echo "wrote $root/docs/operators.md"
