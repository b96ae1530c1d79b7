#!/usr/bin/env bash
# The kernels the rnnc command compiles are the ones librnnc loads (docs/install.md, "Kernel
# cache"): a cache filled by `rnnc plan`, as a container image is filled at build time, serves an
# application (here the Python module, which links librnnc.so) without a compile. Cache keys hold
# the generator's identity, a hash of the compiler's sources, not the path of the binary running.
#   cache_shared_test.sh RNNC PYTHON_MODULE_DIR MODEL WORK_DIR
set -euo pipefail
rnnc=$1 module=$2 model=$3 work=$4
rm -rf "$work"
mkdir -p "$work"

"$rnnc" plan "$model" --cache-dir "$work" >/dev/null
before=$(cd "$work" && ls rnnc_*.so halide_runtime_*.so)
[[ -n $before ]] || { echo "FAIL: rnnc plan left no kernels in $work"; exit 1; }

PYTHONPATH=$module /usr/bin/python3 - "$model" "$work" <<'PY'
import sys
import numpy as np
import rnnc
session = rnnc.InferenceSession(sys.argv[1], cache_dir=sys.argv[2])
# Zeros for every input, each symbolic dim 1.
feeds = {arg.name: np.zeros([d if isinstance(d, int) else 1 for d in arg.shape], np.float32)
         for arg in session.get_inputs()}
session.run(None, feeds)
PY

after=$(cd "$work" && ls rnnc_*.so halide_runtime_*.so)
if [[ $before != "$after" ]]; then
  echo "FAIL: librnnc compiled kernels the rnnc command had cached; new files:"
  comm -13 <(echo "$before") <(echo "$after")
  exit 1
fi
echo "OK: librnnc (Python) loaded the $(wc -l <<<"$before") files rnnc plan compiled, compiling none"
