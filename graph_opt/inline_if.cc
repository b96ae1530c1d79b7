// inline_if: an If whose condition is a constant becomes the branch it takes.
//
// After specialization (`--fix sr=16000`) and constant folding, the condition of a model's
// `if sr == 16000` is a constant; lowering should see the taken branch as plain nodes, not a
// nested graph it has to compile both sides of.
//
//   const %c: bool[] = {1}
//   %y = If(%c) then { %t = Mul(%x, %k); return %t }    ->   %t = Mul(%x, %k)
//               else { ... }                                  (uses of %y read %t)
//
// Precondition: the condition is a constant - its value carries data and is not a graph input
// (an input with a default can be overridden at run time) - with exactly one element. Any other
// If is left alone.
//
// The taken branch's initializers and nodes move into the enclosing graph, in front of the If
// (Graph::adopt_initializer / adopt_node; a name that clashes there is renamed). Its nodes'
// references to outer values already point at the right values, and the If nodes nested in it
// come along (for_each_graph visits nested graphs first, so those with a constant condition are
// already inlined). Every reference to the If's output i then reads the branch's output i. An If
// output that is a graph output keeps its name: the branch's value is renamed to it, or, when
// that value is an outer value, an initializer or already another output, `%y = Identity(%t)`
// keeps it. The If goes, and with it the untaken branch. Type inference re-runs over the model
// afterwards, so nodes downstream see the branch's types.
//
// Run after fold_constants (which makes conditions constant), then fold_constants again: the
// inlined nodes may now fold.
#include <string>
#include <vector>

#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"
#include "ir/error.h"
#include "ir/op_schema.h"

namespace rnnc {

namespace {

// ---- inlining ----------------------------------------------------------------------------------

// The branch a constant condition takes, or nullptr when the condition is not a constant.
Graph* taken_branch(const Node& node) {
  const Value* condition = node.input(0);
  if (!condition || !condition->is_constant() || condition->is_graph_input()) return nullptr;
  const Tensor& data = *condition->constant();
  if (data.numel() != 1) return nullptr;
  return node.attr_graph(data.get_int64(0) != 0 ? "then_branch" : "else_branch");
}

// Returns whether it appended nodes (the graph needs sorting).
bool inline_branch(Graph& graph, Node* node, Graph& branch, PassStats& stats) {
  for (Value* initializer : branch.initializers()) graph.adopt_initializer(branch, initializer);
  std::vector<Node*> body;
  for (const auto& inner : branch.nodes()) body.push_back(inner.get());
  for (Node* inner : body) graph.adopt_node(branch, inner, node);
  if (!body.empty()) stats["nodes inlined"] += static_cast<int64_t>(body.size());

  // If output i -> branch output i. A graph output keeps its name: the branch's value takes it
  // when it can, else an Identity under that name reads the value.
  const std::vector<Value*> results = branch.outputs();
  bool identities_added = false;
  for (size_t i = 0; i < node->num_outputs(); ++i) {
    Value* out = node->output(i);
    if (!out) continue;
    Value* result = results[i];
    if (!is_graph_output(graph, out)) {
      graph.replace_all_uses(out, result);
      continue;
    }
    std::string name = out->name();
    graph.rename_value(out, graph.unique_name(name));
    if (can_take_name(graph, result)) {
      graph.replace_all_uses(out, result);
      graph.rename_value(result, name);
      continue;
    }
    Node* identity =
        graph.add_node("Identity", cat(node->name(), "/", name), {result}, {name}, node->opset());
    identity->output(0)->type = out->type;
    infer_node(*identity);
    graph.replace_all_uses(out, identity->output(0));
    ++stats["identities added for graph outputs"];
    identities_added = true;
  }
  graph.remove_node(node);  // and the untaken branch with it
  return identities_added;
}

bool inline_in_graph(Graph& graph, PassStats& stats) {
  std::vector<Node*> ifs;
  for (const auto& node : graph.nodes()) {
    bool default_domain = node->domain().empty() || node->domain() == "ai.onnx";
    if (default_domain && node->op_type() == "If") ifs.push_back(node.get());
  }
  bool changed = false, appended = false;
  for (Node* node : ifs) {
    Graph* branch = taken_branch(*node);
    if (!branch) continue;
    appended = inline_branch(graph, node, *branch, stats) || appended;
    ++stats["Ifs inlined"];
    changed = true;
  }
  if (appended) graph.sort_topologically();
  return changed;
}

}  // namespace

bool inline_constant_ifs(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  bool changed = false;
  for_each_graph(model, [&](Graph& graph) { changed = inline_in_graph(graph, stats) || changed; });
  if (changed) infer_graph(*model.graph);
  return changed;
}

}  // namespace rnnc
