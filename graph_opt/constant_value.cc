#include "graph_opt/constant_value.h"

#include "ir/error.h"

namespace rnnc {

namespace {

// Graph::replace_all_uses rewires use records and the graph's own outputs; a nested graph that
// returns an outer value directly has no use record, so its return list is rewired here.
void replace_in_nested_returns(const Graph& graph, Value* from, Value* to) {
  for (const auto& node : graph.nodes()) {
    for (Graph* sub : node->subgraphs()) {
      std::vector<Value*> outputs = sub->outputs();
      for (Value*& output : outputs) {
        if (output == from) output = to;
      }
      sub->set_outputs(std::move(outputs));
      replace_in_nested_returns(*sub, from, to);
    }
  }
}

}  // namespace

bool is_known_constant(const Value* value) {
  return value && value->is_constant() && !value->is_graph_input();
}

void replace_value_everywhere(Value* from, Value* to) {
  Graph& graph = *from->owner();
  graph.replace_all_uses(from, to);
  replace_in_nested_returns(graph, from, to);
}

Value* replace_with_constant(Value* value, Tensor data) {
  Node* producer = value->producer();
  RNNC_CHECK(producer, "'", value->name(), "' is not a node output");
  Graph& graph = *value->owner();
  const std::string name = value->name();
  // The name is still taken by `value`: park the data under a temporary name, drop the output,
  // then give the data the freed name.
  Value* parked = graph.add_initializer(graph.unique_name(name), data);
  replace_value_everywhere(value, parked);
  graph.remove_node_output(producer, static_cast<size_t>(value->producer_output()));
  bool producer_dead = true;
  for (const Value* output : producer->outputs()) producer_dead = producer_dead && !output;
  if (producer_dead) graph.remove_node(producer);
  Value* kept = graph.add_initializer(name, std::move(data));
  replace_value_everywhere(parked, kept);
  graph.remove_initializer(parked);
  return kept;
}

}  // namespace rnnc
