#include "graph_opt/value_refs.h"

namespace rnnc {

bool is_graph_output(const Graph& graph, const Value* value) {
  for (const Value* output : graph.outputs()) {
    if (output == value) return true;
  }
  return false;
}

bool returned_by_nested_graph(const Graph& graph, const Value* value) {
  for (const auto& node : graph.nodes()) {
    for (const Graph* sub : node->subgraphs()) {
      if (is_graph_output(*sub, value) || returned_by_nested_graph(*sub, value)) return true;
    }
  }
  return false;
}

bool is_used(const Graph& graph, const Value* value) {
  return value && (!value->uses().empty() || is_graph_output(graph, value) ||
                   returned_by_nested_graph(graph, value));
}

bool read_only_by(const Graph& graph, const Value* value,
                  const std::function<bool(const Node&)>& accept) {
  if (is_graph_output(graph, value) || returned_by_nested_graph(graph, value)) return false;
  for (const Use& use : value->uses()) {
    if (!accept(*use.node)) return false;
  }
  return true;
}

// A graph input's or initializer's name is part of the interface too, and a value in another
// graph cannot be renamed from here.
bool can_take_name(const Graph& graph, const Value* value) {
  return value->owner() == &graph && value->producer() && !is_graph_output(graph, value);
}

// captured_values also lists the outer values nested nodes read (those have use records too): the
// set holds every value read without a use record, and some read with one.
std::set<const Value*> escaping_values(const Graph& graph) {
  std::set<const Value*> escaping(graph.outputs().begin(), graph.outputs().end());
  for (const auto& node : graph.nodes()) {
    for (const Graph* sub : node->subgraphs()) {
      for (const Value* value : captured_values(*sub)) escaping.insert(value);
    }
  }
  return escaping;
}

}  // namespace rnnc
