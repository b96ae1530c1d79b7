// rnnc plan: how a model is compiled - its execution blocks, their nodes, plans and costs.
#include <iostream>

#include "ir/onnx_import.h"
#include "lowering/program.h"
#include "tools/commands.h"

namespace rnnc::cli {

namespace {

int run_plan(const Parsed& args) {
  if (args.positional.size() != 1) raise_invalid_input("expects one MODEL argument");
  ProgramOptions options;
  options.target = args.get("target");
  options.cache_dir = args.get("cache-dir");
  auto program = compile_model(import_onnx_file(args.positional[0]), options);
  std::cout << program->describe();
  return 0;
}

}  // namespace

const Command kPlanCommand{
    "plan",
    "rnnc plan MODEL [--target host|avx2] [--cache-dir DIR]",
    "Compile a model and print its execution blocks: kind, nodes, plan per dynamic axis, cost.",
    {
        {"target", "T", "Halide target: host (default), avx2, or a Halide target string"},
        {"cache-dir", "DIR", "compiled kernel cache (default $RNNC_CACHE_DIR or ~/.cache/rnnc)"},
    },
    run_plan,
};

}  // namespace rnnc::cli
