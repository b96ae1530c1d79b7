// fusion_groups: marks chains of elementwise nodes that lowering runs as one fused loop.
//
// An elementwise node joins the group of a producer when the tensor between them has that node as
// its only reader (the tensor reference count rule: a tensor read by two nodes is materialized and
// fused into neither), is not a graph output (graph outputs end a group), and has the node's
// output shape (no broadcasting inside a group, so nothing is computed twice): equal dims, or,
// where a dim is unknown, every other operand of the node a single value. A MatMul, Gemm, Conv
// or ConvTranspose whose output is such a tensor joins as the group's root: its epilogue (bias add,
// activation) runs in the same loop. Each member gets `rnnc.fusion_group = N`, the root also
// `rnnc.fusion_root = 1`; groups are numbered per graph from 0 in the order their last node
// appears, which is a topological order of the groups.
//
//   %m = MatMul (%h, %W)        %m = MatMul (%h, %W) {rnnc.fusion_group=0, rnnc.fusion_root=1}
//   %b = Add (%m, %bias)   ->   %b = Add (%m, %bias) {rnnc.fusion_group=0}
//   %y = Tanh (%b)              %y = Tanh (%b) {rnnc.fusion_group=0}
//
// What lowering can rely on for each group:
// - it has at least two nodes, each with one output; every member's output but the sink's (the
//   member last in node order) is read by exactly one node, a member, and is not a graph output,
//   so the sink's output is the group's only result and nothing else needs storage;
// - every member's output has the sink's output shape (inputs from outside may broadcast);
// - at most one member is not elementwise: the root (MatMul/Gemm/Conv/ConvTranspose), reading
//   only values from outside the group; the group is convex (no path leaves it and comes back),
//   so it can run at the sink's position. A node without `rnnc.fusion_group` is a loop of its own.
// The marks are annotations: the evaluator ignores them and ONNX export drops them. The pass
// recomputes them from scratch (running it twice changes nothing) and must run last, after every
// pass that rewrites nodes: it ends lowering_pipeline().
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"

namespace rnnc {

namespace {


// Ops computing each output element from the same-index elements of their (broadcast) inputs.
// clang-format off
const std::set<std::string> kElementwiseOps = {
    // arithmetic
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "Max", "Min", "Sum", "Mean",
    // comparison and logic
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor",
    "Where",
    // unary math
    "Abs", "Neg", "Sign", "Sqrt", "Exp", "Log", "Reciprocal", "Floor", "Ceil", "Round", "Erf",
    "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "IsNaN", "IsInf",
    // activations
    "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "ThresholdedRelu", "Sigmoid",
    "HardSigmoid", "HardSwish", "Tanh", "Softplus", "Softsign", "Clip",
    // conversion and copies
    "Cast", "CastLike", "Identity",
};
// clang-format on

// Producers whose elementwise epilogue a group may absorb, as the group's root.
const std::set<std::string> kEpilogueRoots = {"MatMul", "Gemm", "Conv", "ConvTranspose"};

bool has_string_operand(const Node& node) {
  for (const Value* value : node.inputs()) {
    if (value && value->type.dtype == DType::kString) return true;
  }
  for (const Value* value : node.outputs()) {
    if (value && value->type.dtype == DType::kString) return true;
  }
  return false;
}

bool in_op_set(const Node& node, const std::set<std::string>& ops) {
  return node.domain().empty() && ops.count(node.op_type()) && node.num_outputs() == 1 &&
         !has_string_operand(node);
}

bool is_elementwise(const Node& node) { return in_op_set(node, kElementwiseOps); }
bool is_epilogue_root(const Node& node) { return in_op_set(node, kEpilogueRoots); }

bool read_only_by(const Value* value, const Node* reader, const std::set<const Value*>& escaping) {
  if (escaping.count(value) || value->uses().empty()) return false;
  for (const Use& use : value->uses()) {
    if (use.node != reader) return false;
  }
  return true;
}

bool same_shape(const Value* a, const Value* b) {
  return a->type.shape && b->type.shape && *a->type.shape == *b->type.shape;
}

// A single value (every dim 1) of at most `rank` dims: broadcasting it changes no shape.
bool single_value(const Value* value, size_t rank) {
  if (!value || !value->type.shape || value->type.shape->size() > rank) return false;
  for (const Dim& dim : *value->type.shape) {
    if (!dim.is_known() || dim.value() != 1) return false;
  }
  return true;
}

// Whether elementwise `node`'s output has the shape of its operand `input`: their dims compare
// equal, or every other operand is a single value of no higher rank. The second form holds for
// dims shape inference cannot name (a strided convolution's output length over a dynamic axis is
// unknown, and unknown dims never compare equal): Conv -> Relu, Add -> Sqrt, x -> Pow(x, 2).
bool output_has_shape_of(const Node& node, const Value* input) {
  if (same_shape(input, node.output(0))) return true;
  if (!input->type.shape || !node.output(0)->type.shape ||
      input->type.shape->size() != node.output(0)->type.shape->size()) {
    return false;
  }
  for (const Value* other : node.inputs()) {
    if (other != input && !single_value(other, input->type.shape->size())) return false;
  }
  return true;
}

// Groups as a union-find over nodes; each set knows its root (epilogue producer), if any.
class Groups {
 public:
  const Node* find(const Node* node) {
    auto it = parent_.find(node);
    if (it == parent_.end()) return node;
    const Node* top = find(it->second);
    parent_[node] = top;
    return top;
  }
  const Node* root_of(const Node* node) {
    auto it = root_.find(find(node));
    return it == root_.end() ? nullptr : it->second;
  }
  // Joins the sets of a and b unless both have a root; `root_a` makes a the root of its side.
  bool join(const Node* a, const Node* b, const Node* root_a = nullptr) {
    const Node* ta = find(a);
    const Node* tb = find(b);
    if (ta == tb) return true;
    const Node* ra = root_a ? root_a : root_of(ta);
    const Node* rb = root_of(tb);
    if (ra && rb) return false;
    parent_[ta] = tb;
    root_.erase(ta);
    if (ra || rb) root_[tb] = ra ? ra : rb;
    return true;
  }

 private:
  std::map<const Node*, const Node*> parent_;
  std::map<const Node*, const Node*> root_;
};

struct Annotation {
  int64_t group = -1;
  bool root = false;
  bool operator==(const Annotation& other) const {
    return group == other.group && root == other.root;
  }
};

bool mark_groups(Graph& graph, PassStats& stats) {
  const std::set<const Value*> escaping = escaping_values(graph);
  Groups groups;
  std::set<const Node*> roots;
  for (const auto& node_ptr : graph.nodes()) {
    const Node* node = node_ptr.get();
    if (!is_elementwise(*node)) continue;
    for (const Value* input : node->inputs()) {
      if (!input || !input->producer() || input->producer()->owner() != &graph) continue;
      const Node* producer = input->producer();
      if (!read_only_by(input, node, escaping) || !output_has_shape_of(*node, input)) continue;
      if (is_elementwise(*producer)) {
        groups.join(producer, node);  // a producer with a root cannot join a rooted group
      } else if (is_epilogue_root(*producer) && groups.join(producer, node, producer)) {
        roots.insert(producer);
      }
    }
  }

  // Members per set, in node order; the last member is the sink.
  std::map<const Node*, std::vector<const Node*>> members;
  std::vector<const Node*> sink_order;
  for (const auto& node_ptr : graph.nodes()) {
    const Node* node = node_ptr.get();
    if (is_elementwise(*node) || roots.count(node)) members[groups.find(node)].push_back(node);
  }
  for (const auto& node_ptr : graph.nodes()) {
    const Node* node = node_ptr.get();
    auto it = members.find(groups.find(node));
    if (it != members.end() && it->second.size() >= 2 && it->second.back() == node) {
      sink_order.push_back(it->first);
    }
  }
  std::map<const Node*, Annotation> wanted;
  for (size_t number = 0; number < sink_order.size(); ++number) {
    for (const Node* member : members[sink_order[number]]) {
      wanted[member] = {static_cast<int64_t>(number), roots.count(member) != 0};
    }
    ++stats["fusion groups"];
    stats["nodes fused"] += static_cast<int64_t>(members[sink_order[number]].size());
    if (groups.root_of(sink_order[number])) ++stats["epilogues absorbed"];
  }

  bool changed = false;
  for (const auto& node_ptr : graph.nodes()) {
    Node& node = *node_ptr;
    Annotation old;
    if (node.has_attr(kFusionGroupAnnotation)) old.group = node.attr_int(kFusionGroupAnnotation, -1);
    old.root = node.has_attr(kFusionRootAnnotation);
    auto it = wanted.find(&node);
    const Annotation want = it == wanted.end() ? Annotation{} : it->second;
    if (old == want) continue;
    node.remove_attr(kFusionGroupAnnotation);
    node.remove_attr(kFusionRootAnnotation);
    if (want.group >= 0) node.set_attr(kFusionGroupAnnotation, Attribute::of_int(want.group));
    if (want.root) node.set_attr(kFusionRootAnnotation, Attribute::of_int(1));
    changed = true;
  }
  return changed;
}

}  // namespace

bool mark_fusion_groups(Model& model, const PassContext& context, PassStats& stats) {
  bool changed = false;
  for_each_graph(model, [&](Graph& graph) { changed = mark_groups(graph, stats) || changed; });
  return changed;
}

}  // namespace rnnc
