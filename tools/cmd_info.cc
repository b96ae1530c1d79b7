// rnnc info: what a model is - inputs/outputs with symbolic dims, op histogram, parameter bytes.
#include <iostream>
#include <map>

#include "ir/onnx_import.h"
#include "ir/printer.h"
#include "tools/commands.h"

namespace rnnc::cli {

namespace {

void count_ops(const Graph& graph, std::map<std::string, int>& histogram, size_t& nodes) {
  for (const auto& node : graph.nodes()) {
    ++histogram[node->op_type()];
    ++nodes;
    for (const Graph* sub : node->subgraphs()) count_ops(*sub, histogram, nodes);
  }
}

size_t parameter_bytes(const Graph& graph) {
  size_t bytes = 0;
  for (const Value* value : graph.initializers()) bytes += value->constant()->nbytes();
  for (const Value* value : graph.inputs()) {
    if (value->is_constant()) bytes += value->constant()->nbytes();
  }
  for (const auto& node : graph.nodes()) {
    for (const Graph* sub : node->subgraphs()) bytes += parameter_bytes(*sub);
  }
  return bytes;
}

int run_info(const Parsed& args) {
  if (args.positional.size() != 1) raise_invalid_input("expects one MODEL argument");
  auto model = import_onnx_file(args.positional[0]);
  if (args.has("ir")) {
    std::cout << to_text(*model);
    return 0;
  }
  const Graph& graph = *model->graph;
  std::cout << "model: " << args.positional[0] << "\n";
  std::cout << "producer: " << (model->producer_name.empty() ? "?" : model->producer_name) << " "
            << model->producer_version << ", ir_version " << model->ir_version << ", opset "
            << model->default_opset() << "\n";
  std::cout << "inputs:\n";
  for (const Value* input : graph.inputs()) {
    std::cout << "  " << input->name() << ": " << input->type.to_string()
              << (input->is_constant() ? " (has a default initializer)" : "") << "\n";
  }
  std::cout << "outputs:\n";
  for (const Value* output : graph.outputs()) {
    std::cout << "  " << output->name() << ": " << output->type.to_string() << "\n";
  }
  std::map<std::string, int> histogram;
  size_t nodes = 0;
  count_ops(graph, histogram, nodes);
  std::cout << "nodes: " << nodes << "\n";
  for (const auto& [op, count] : histogram) std::cout << "  " << op << ": " << count << "\n";
  size_t bytes = parameter_bytes(graph);
  std::cout << "parameters: " << bytes << " bytes (" << bytes / 1024.0 / 1024.0 << " MiB)\n";
  return 0;
}

}  // namespace

const Command kInfoCommand{
    "info",
    "rnnc info MODEL [--ir]",
    "Print a model's inputs and outputs (with symbolic dims), op histogram and parameter bytes.",
    {{"ir", "", "print the whole IR in its text form instead"}},
    run_info,
};

}  // namespace rnnc::cli
