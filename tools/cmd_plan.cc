// rnnc plan: how a model is compiled - its execution blocks, their nodes, plans and costs. Reads
// ONNX or the IR text form, so the partitioner's and the lowerings' decisions have text tests
// (tests/lowering/*.ir).
#include <iostream>

#include "ir/error.h"
#include "ir/onnx_export.h"
#include "ir/text_parser.h"
#include "rnnc/rnnc.h"
#include "tools/commands.h"

namespace rnnc::cli {

namespace {

int run_plan(const Parsed& args) {
  if (args.positional.size() != 1) raise_invalid_input("expects one MODEL argument");
  ModelOptions options;
  options.target = args.get("target");
  options.cache_dir = args.get("cache-dir");
  options.threads = static_cast<int>(args.get_int("threads", 1));
  options.plan = parse_plan(args.get("plan", "auto"));
  options.expose_recurrent_state = false;
  // The program compiled for these dims and inputs, as ModelOptions::fixed_dims / fixed_inputs
  // (or a session's shape specialization) compiles it.
  options.fixed_dims = parse_dims(args);
  options.fixed_inputs = parse_fixed_inputs(args);
  const std::string& path = args.positional[0];
  std::shared_ptr<const CompiledModel> model;
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".ir") == 0) {
    const std::string bytes = export_onnx_bytes(*parse_model_text_file(path));
    model = CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
  } else {
    model = CompiledModel::load(path, options);
  }
  std::cout << model->describe();
  return 0;
}

}  // namespace

const Command kPlanCommand{
    "plan",
    "rnnc plan MODEL [--threads N] [--plan auto|sequential|parallel|pipeline] [--fix NAME=V]... "
    "[--dim NAME=N]... [--target T] [--cache-dir DIR]",
    "Compile a model and print its execution blocks (kind, nodes, plan per dynamic axis, cost),\n"
    "the executor's plan and the chains of recurrent layers it pipelines. MODEL is an ONNX file,\n"
    "or IR text (the form `rnnc info --ir` prints) if it ends in .ir.",
    {
        {"threads", "N", "executor threads (default 1)"},
        {"plan", "P", "auto (default: pipeline with threads > 1 and a layer chain), sequential, "
                      "parallel or pipeline"},
        {"fix", "NAME=V[,V...]", "compile an integer input in as a constant, e.g. --fix sr=16000 (repeatable)"},
        {"dim", "NAME=N", "compile a symbolic dim in as a size, e.g. --dim batch=1 (repeatable)"},
        {"target", "T", kTargetHelp},
        {"cache-dir", "DIR", "compiled kernel cache (default $RNNC_CACHE_DIR, else ~/.cache/rnnc; docs/install.md)"},
    },
    run_plan,
};

}  // namespace rnnc::cli
