#include "graph_opt/pass.h"

namespace rnnc {

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = {
#define RNNC_PASS(name, function, summary) {#name, summary, function},
#include "graph_opt/passes.def"
#undef RNNC_PASS
  };
  return passes;
}

const PassInfo* find_pass(const std::string& name) {
  for (const PassInfo& pass : all_passes()) {
    if (name == pass.name) return &pass;
  }
  return nullptr;
}

namespace {

void visit_graph(Graph& graph, const std::function<void(Graph&)>& visit) {
  for (const auto& node : graph.nodes()) {
    for (Graph* sub : node->subgraphs()) visit_graph(*sub, visit);
  }
  visit(graph);
}

}  // namespace

void for_each_graph(Model& model, const std::function<void(Graph&)>& visit) {
  visit_graph(*model.graph, visit);
}

int64_t count_nodes(const Graph& graph) {
  int64_t count = 0;
  for (const auto& node : graph.nodes()) {
    ++count;
    for (const Graph* sub : node->subgraphs()) count += count_nodes(*sub);
  }
  return count;
}

}  // namespace rnnc
