# lit configuration for the partitioner's and the lowerings' text tests: each
# tests/lowering/<case>.ir file holds IR text, a RUN line compiling it with `rnnc plan`, and
# FileCheck CHECK / CHECK-NOT lines on the blocks it prints (kind, nodes, plan per axis).
# Run through ctest (lowering_golden); by hand:
#   /usr/bin/python3 /usr/lib/llvm-14/build/utils/lit/lit.py -v build/tests/lowering
import os

import lit.formats

config.name = "rnnc lowering"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".ir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.rnnc_build_dir, "tests", "lowering")
config.substitutions.append(("%rnnc", config.rnnc_binary))
config.substitutions.append(("%FileCheck", config.filecheck))
# The build's kernel cache, shared with the other tests (kernels compile once per build).
config.substitutions.append(("%cache", os.path.join(config.rnnc_build_dir, "kernel_cache")))
