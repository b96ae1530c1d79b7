# lit configuration for graph_opt golden tests: each tests/graph_opt/<pass>.ir file holds IR text,
# a RUN line running one pass, and FileCheck CHECK / CHECK-NOT lines on the printed result.
# Run through ctest (graph_opt_golden); by hand:
#   /usr/bin/python3 /usr/lib/llvm-14/build/utils/lit/lit.py -v build/tests/graph_opt
import os

import lit.formats

config.name = "rnnc graph_opt"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".ir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.rnnc_build_dir, "tests", "graph_opt")
config.substitutions.append(("%rnnc", config.rnnc_binary))
config.substitutions.append(("%FileCheck", config.filecheck))
