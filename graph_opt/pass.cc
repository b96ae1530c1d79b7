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

bool is_op(const Node* node, const char* op_type) {
  return node && node->op_type() == op_type &&
         (node->domain().empty() || node->domain() == "ai.onnx");
}

bool is_float_cast(const Node& node) {
  return is_op(&node, "Cast") && node.attr_int("to", 0) == static_cast<int64_t>(DType::kFloat32);
}

void for_each_graph(Model& model, const std::function<void(Graph&)>& visit) {
  visit_graph(*model.graph, visit);
}

bool apply_peephole_rules(Graph& graph, const std::vector<PeepholeRule>& rules, PassStats& stats) {
  bool changed = false;
  for (bool progress = true; progress;) {
    progress = false;
    // A rule removes or changes only its own node, so the nodes still to visit stay valid.
    std::vector<Node*> order;
    for (const auto& node : graph.nodes()) order.push_back(node.get());
    for (Node* node : order) {
      if (!node->domain().empty() && node->domain() != "ai.onnx") continue;
      for (const PeepholeRule& rule : rules) {
        if (node->op_type() != rule.op_type) continue;
        progress = rule.apply(graph, node, stats) || progress;
        break;  // the rule may have removed the node
      }
    }
    if (progress) graph.sort_topologically();
    changed = changed || progress;
  }
  return changed;
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
