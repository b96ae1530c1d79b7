#include "graph_opt/constant_value.h"

#include "ir/error.h"

namespace rnnc {

bool is_known_constant(const Value* value) {
  return value && value->is_constant() && !value->is_graph_input();
}

const Tensor* known_constant(const Value* value) {
  return is_known_constant(value) ? value->constant().get() : nullptr;
}

Value* replace_with_constant(Value* value, Tensor data) {
  Node* producer = value->producer();
  RNNC_CHECK(producer, "'", value->name(), "' is not a node output");
  Graph& graph = *value->owner();
  const std::string name = value->name();
  // The name is still taken by `value`: park the data under a temporary name, drop the output,
  // then give the data the freed name.
  Value* parked = graph.add_initializer(graph.unique_name(name), data);
  graph.replace_all_uses(value, parked);
  graph.remove_node_output(producer, static_cast<size_t>(value->producer_output()));
  bool producer_dead = true;
  for (const Value* output : producer->outputs()) producer_dead = producer_dead && !output;
  if (producer_dead) graph.remove_node(producer);
  Value* kept = graph.add_initializer(name, std::move(data));
  graph.replace_all_uses(parked, kept);
  graph.remove_initializer(parked);
  return kept;
}

}  // namespace rnnc
