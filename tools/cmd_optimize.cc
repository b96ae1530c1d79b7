// rnnc optimize: runs the graph_opt pipeline and writes the result back as ONNX.
#include <iostream>
#include <sstream>

#include "graph_opt/pipeline.h"
#include "graph_opt/specialize.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/printer.h"
#include "ir/text_parser.h"
#include "tools/commands.h"

namespace rnnc::cli {

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

int run_optimize(const Parsed& args) {
  if (args.has("list-passes")) {
    for (const PassInfo& pass : all_passes()) {
      std::cout << pass.name << "\t" << pass.summary << "\n";
    }
    return 0;
  }
  if (args.positional.size() != 1) raise_invalid_input("expects one MODEL argument");
  std::string output = args.get("o");
  bool printing = args.has("print-after-all") || args.has("print-after") || args.has("print-ir");
  if (output.empty() && !printing && !args.has("stats")) {
    raise_invalid_input("give -o OUT.onnx (or --print-ir / --print-after-all / --stats)");
  }
  const std::string& input = args.positional[0];
  bool is_text = input.size() > 3 && input.compare(input.size() - 3, 3, ".ir") == 0;
  auto model = is_text ? parse_model_text_file(input) : import_onnx_file(input);
  OptimizeOptions options;
  for (const auto& list : args.all("passes")) {
    for (const auto& name : split_list(list)) options.passes.push_back(name);
  }
  options.print_after_all = args.has("print-after-all");
  for (const auto& list : args.all("print-after")) {
    for (const auto& name : split_list(list)) options.print_after.insert(name);
  }
  options.log = &std::cout;
  options.context = parse_specialization(args, *model->graph);
  std::vector<PassReport> reports = optimize(*model, options);
  if (args.has("stats")) print_reports(reports, std::cerr);
  if (args.has("print-ir")) std::cout << to_text(*model);
  if (!output.empty()) export_onnx_file(*model, output);
  return 0;
}

}  // namespace

const Command kOptimizeCommand{
    "optimize",
    "rnnc optimize MODEL -o OUT.onnx [--fix NAME=VALUE]... [--dim NAME=N]... [--passes a,b,...] "
    "[--print-after-all] [--stats]",
    "Run the graph optimization pipeline and write the optimized model as ONNX.\n"
    "MODEL is an ONNX file, or IR text (the form `rnnc info --ir` prints) if it ends in .ir.",
    {
        {"o", "OUT.onnx", "where to write the optimized model"},
        {"passes", "LIST", "comma-separated passes to run instead of the default pipeline"},
        {"print-after-all", "", "print the IR after every pass"},
        {"print-after", "LIST", "print the IR after the named passes"},
        {"print-ir", "", "print the optimized IR to stdout"},
        {"fix", "NAME=VALUE",
         "fix an input: a number for an input of shape [] (or all 1s), or @FILE.npy / @FILE.pb "
         "(repeatable)"},
        {"dim", "NAME=N", "fix a symbolic dim to a size, e.g. --dim batch=1 (repeatable)"},
        {"stats", "", "print, per pass, node counts before/after and what it changed (stderr)"},
        {"list-passes", "", "list the available passes and exit"},
    },
    run_optimize,
};

}  // namespace rnnc::cli
