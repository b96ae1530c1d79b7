#include "ir/verifier.h"

#include <set>

#include "ir/error.h"
#include "ir/op_schema.h"

namespace rnnc {

namespace {

void verify(const Graph& graph, std::set<const Value*>& visible) {
  std::set<const Value*> local;
  auto define = [&](const Value* value) {
    RNNC_CHECK(value->owner() == &graph, "value '", value->name(), "' is listed in graph '",
               graph.name(), "' but owned by another graph");
    local.insert(value);
    visible.insert(value);
  };
  for (const Value* input : graph.inputs()) define(input);
  for (const Value* init : graph.initializers()) define(init);

  for (const auto& node_ptr : graph.nodes()) {
    const Node& node = *node_ptr;
    RNNC_CHECK(node.owner() == &graph, node.describe(), " is in graph '", graph.name(),
               "' but owned by another");
    RNNC_CHECK(find_op_schema(node.domain(), node.op_type()), node.describe(),
               " has no registered op schema");
    for (size_t i = 0; i < node.num_inputs(); ++i) {
      const Value* input = node.input(i);
      if (!input) continue;
      RNNC_CHECK(visible.count(input), node.describe(), " input ", i, " '", input->name(),
                 "' is used before it is defined (or is dangling)");
      bool recorded = false;
      for (const Use& use : input->uses()) {
        recorded = recorded || (use.node == &node && use.input_index == static_cast<int>(i));
      }
      RNNC_CHECK(recorded, "value '", input->name(), "' lacks the use record for ",
                 node.describe(), " input ", i);
    }
    for (Graph* sub : node.subgraphs()) {
      RNNC_CHECK(sub->parent() == &graph, "a nested graph of ", node.describe(),
                 " does not point at its parent graph");
      std::set<const Value*> inner = visible;
      verify(*sub, inner);
    }
    for (size_t i = 0; i < node.num_outputs(); ++i) {
      const Value* output = node.output(i);
      if (!output) continue;
      RNNC_CHECK(output->producer() == &node && output->producer_output() == static_cast<int>(i),
                 "value '", output->name(), "' does not record ", node.describe(),
                 " as its producer");
      RNNC_CHECK(!visible.count(output), "value '", output->name(), "' is produced twice");
      RNNC_CHECK(output->type.dtype != DType::kUndefined, node.describe(), " output '",
                 output->name(), "' has no inferred type");
      define(output);
    }
  }
  for (const auto& value : graph.values()) {
    for (const Use& use : value->uses()) {
      RNNC_CHECK(use.node->input(static_cast<size_t>(use.input_index)) == value.get(), "value '",
                 value->name(), "' records a use by ", use.node->describe(),
                 " that the node does not have");
    }
  }
  for (const Value* output : graph.outputs()) {
    RNNC_CHECK(visible.count(output), "graph '", graph.name(), "' output '", output->name(),
               "' is not defined");
  }
}

}  // namespace

void verify_graph(const Graph& graph) {
  std::set<const Value*> visible;
  // Values of enclosing graphs are visible to a nested graph verified on its own.
  for (const Graph* g = graph.parent(); g; g = g->parent()) {
    for (const auto& value : g->values()) visible.insert(value.get());
  }
  verify(graph, visible);
}

void verify_model(const Model& model) { verify_graph(*model.graph); }

}  // namespace rnnc
