// dce: dead node elimination.
//
// Removes every node none of whose outputs is used - by another node (here or in a nested graph),
// as a graph output, or as the output of a nested graph that returns an outer value directly -
// and then every initializer nothing uses. Walks nodes in reverse order so a chain of dead nodes
// goes in one run.
//
//   %a = Relu(%x)        // %a unused
//   %b = Neg(%a)         // %b unused       ->   (both removed)
//   return %x
//
// Nodes have no side effects in ONNX inference, so an unused node is always removable.
#include <set>

#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"

namespace rnnc {

namespace {

// is_used(graph, value), with the readers that hold no use record collected once per graph.
bool is_live(const Value* value, const std::set<const Value*>& escaping) {
  return value && (!value->uses().empty() || escaping.count(value));
}

bool eliminate_in_graph(Graph& graph, PassStats& stats) {
  bool changed = false;
  const std::set<const Value*> escaping = escaping_values(graph);
  std::vector<Node*> order;
  for (const auto& node : graph.nodes()) order.push_back(node.get());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    bool live = false;
    for (const Value* output : node->outputs()) live = live || is_live(output, escaping);
    if (live) continue;
    graph.remove_node(node);
    ++stats["nodes removed"];
    changed = true;
  }
  for (Value* value : graph.initializers()) {
    if (!is_live(value, escaping)) {
      graph.remove_initializer(value);
      ++stats["initializers removed"];
      changed = true;
    }
  }
  return changed;
}

}  // namespace

bool eliminate_dead_nodes(Model& model, const PassContext& context, PassStats& stats) {
  bool changed = false;
  for_each_graph(model, [&](Graph& graph) { changed = eliminate_in_graph(graph, stats) || changed; });
  return changed;
}

}  // namespace rnnc
