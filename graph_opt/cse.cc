// cse: common subexpression elimination.
//
// Two nodes that compute the same thing from the same values become one. Exporters repeat work
// per use site: PyTorch emits a Shape -> Gather chain for every use of x.size(0), and folding
// turns per-layer copies of the same weights or zero states into identical constants.
//
//   %s1 = Shape(%x)                          %s1 = Shape(%x)
//   %s2 = Shape(%x)                   ->     %y = Concat(%s1, %s1)
//   %y = Concat(%s1, %s2)
//
// Rules, per graph (a nested graph's nodes merge only with nodes of the same nested graph):
//
//   const a, const b with the same dtype, shape and bytes        -> b reads a
//   n1, n2 with the same op, domain, opset, inputs (the same values, in the same order) and
//   attributes (compared exactly: floats bit for bit), same outputs present -> n2's read n1's
//
// Nodes that hold nested graphs (If, Loop) are never merged, nor random ops (each draw
// differs). Constants are compared by tensor_hash, then bitwise_equal. The later one goes; graph
// outputs keep their names: the surviving value takes the name of a graph output that merged
// into it, and two values that are both graph outputs both stay (a graph output must stay a
// distinct value). The graph is walked in topological order, so once two nodes merge, their users
// see equal inputs and merge in the same sweep; sweeps repeat until one merges nothing.
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"
#include "ir/printer.h"

namespace rnnc {

namespace {

// ---- what counts as the same -------------------------------------------------------------------

// Ops whose every evaluation draws new values.
const std::set<std::string> kRandomOps = {"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                          "RandomUniformLike", "Bernoulli",     "Multinomial"};

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool same_attribute(const Attribute& a, const Attribute& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Attribute::Kind::kFloat:
      return std::memcmp(&a.f, &b.f, sizeof(float)) == 0;
    case Attribute::Kind::kInt:
      return a.i == b.i;
    case Attribute::Kind::kString:
      return a.s == b.s;
    case Attribute::Kind::kTensor:
      return a.t.bitwise_equal(b.t);
    case Attribute::Kind::kFloats:
      return same_floats(a.floats, b.floats);
    case Attribute::Kind::kInts:
      return a.ints == b.ints;
    case Attribute::Kind::kStrings:
      return a.strings == b.strings;
    case Attribute::Kind::kTensors:
      if (a.tensors.size() != b.tensors.size()) return false;
      for (size_t i = 0; i < a.tensors.size(); ++i) {
        if (!a.tensors[i].bitwise_equal(b.tensors[i])) return false;
      }
      return true;
    case Attribute::Kind::kType:
      return a.tp.to_string() == b.tp.to_string();
    case Attribute::Kind::kGraph:
    case Attribute::Kind::kGraphs:
      return false;  // nodes with nested graphs are not merged
  }
  return false;
}

bool same_attributes(const Node& a, const Node& b) {
  if (a.attributes().size() != b.attributes().size()) return false;
  for (const auto& [name, attribute] : a.attributes()) {
    const Attribute* other = b.find_attr(name);
    if (!other || !same_attribute(attribute, *other)) return false;
  }
  return true;
}

bool same_outputs_present(const Node& a, const Node& b) {
  if (a.num_outputs() != b.num_outputs()) return false;
  for (size_t i = 0; i < a.num_outputs(); ++i) {
    if ((a.output(i) == nullptr) != (b.output(i) == nullptr)) return false;
  }
  return true;
}

bool mergeable(const Node& node) {
  return node.subgraphs().empty() && !kRandomOps.count(node.op_type()) && node.num_outputs() > 0;
}

bool same_constant(const Value& a, const Value& b) {
  return a.type.to_string() == b.type.to_string() && a.constant()->bitwise_equal(*b.constant());
}

// ---- merging -----------------------------------------------------------------------------------

// `gone` can merge into `kept` unless one of its graph outputs would need the name of a value of
// `kept` that is a graph output too (a graph output must stay a distinct value).
bool names_allow_merge(const Graph& graph, const std::vector<Value*>& gone,
                       const std::vector<Value*>& kept) {
  for (size_t i = 0; i < gone.size(); ++i) {
    if (gone[i] && is_graph_output(graph, gone[i]) && is_graph_output(graph, kept[i])) return false;
  }
  return true;
}

// Every reference to gone[i] reads kept[i]; a graph output's name passes to kept[i].
void merge_values(Graph& graph, const std::vector<Value*>& gone, const std::vector<Value*>& kept,
                  std::vector<std::string>& names_to_pass) {
  names_to_pass.assign(gone.size(), "");
  for (size_t i = 0; i < gone.size(); ++i) {
    if (!gone[i]) continue;
    if (is_graph_output(graph, gone[i])) names_to_pass[i] = gone[i]->name();
    graph.replace_all_uses(gone[i], kept[i]);
  }
}

void pass_names(Graph& graph, const std::vector<Value*>& kept,
                const std::vector<std::string>& names) {
  for (size_t i = 0; i < kept.size(); ++i) {
    if (!names[i].empty()) graph.rename_value(kept[i], names[i]);
  }
}

// One sweep over the constants: returns how many merged.
int64_t merge_constants(Graph& graph) {
  int64_t merged = 0;
  std::unordered_map<uint64_t, std::vector<Value*>> by_hash;
  for (Value* value : graph.initializers()) {
    std::vector<Value*>& bucket = by_hash[tensor_hash(*value->constant())];
    Value* equal = nullptr;
    for (Value* candidate : bucket) {
      if (same_constant(*candidate, *value) && names_allow_merge(graph, {value}, {candidate})) {
        equal = candidate;
      }
    }
    if (!equal) {
      bucket.push_back(value);
      continue;
    }
    std::vector<std::string> names;
    merge_values(graph, {value}, {equal}, names);
    graph.remove_initializer(value);
    pass_names(graph, {equal}, names);
    ++merged;
  }
  return merged;
}

// One sweep over the nodes in order: returns how many merged. Users come after their producers,
// so once two producers merge, their users see equal inputs in the same sweep.
int64_t merge_nodes(Graph& graph) {
  int64_t merged = 0;
  using Key = std::tuple<std::string, std::string, int, std::vector<Value*>>;
  std::map<Key, std::vector<Node*>> buckets;
  std::vector<Node*> order;
  for (const auto& node : graph.nodes()) order.push_back(node.get());
  for (Node* node : order) {
    if (!mergeable(*node)) continue;
    std::vector<Node*>& bucket =
        buckets[Key{node->op_type(), node->domain(), node->opset(), node->inputs()}];
    Node* equal = nullptr;
    for (Node* candidate : bucket) {
      if (same_attributes(*candidate, *node) && same_outputs_present(*candidate, *node) &&
          names_allow_merge(graph, node->outputs(), candidate->outputs())) {
        equal = candidate;
      }
    }
    if (!equal) {
      bucket.push_back(node);
      continue;
    }
    std::vector<std::string> names;
    merge_values(graph, node->outputs(), equal->outputs(), names);
    graph.remove_node(node);
    pass_names(graph, equal->outputs(), names);
    ++merged;
  }
  return merged;
}

bool eliminate_in_graph(Graph& graph, PassStats& stats) {
  bool changed = false;
  for (bool progress = true; progress;) {
    int64_t constants = merge_constants(graph);
    int64_t nodes = merge_nodes(graph);
    if (constants) stats["constants merged"] += constants;
    if (nodes) stats["nodes merged"] += nodes;
    progress = constants + nodes > 0;
    changed = changed || progress;
  }
  return changed;
}

}  // namespace

bool eliminate_common_subexpressions(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  bool changed = false;
  for_each_graph(model,
                 [&](Graph& graph) { changed = eliminate_in_graph(graph, stats) || changed; });
  return changed;
}

}  // namespace rnnc
