// eliminate_identity: removes the nodes that do nothing at inference time.
//
// Exporters leave behind nodes that matter only for training or for naming: Identity (PyTorch
// writes one per shared parameter), Dropout (the identity at inference), and the statistics
// outputs of LayerNormalization. Lowering should never see them.
//
//   %w2 = Identity(%w)
//   %d, %mask = Dropout(%x)          ->    %y = MatMul(%x, %w)
//   %y = MatMul(%d, %w2)
//
// Rules, applied to every node of every graph until none applies:
//
//   y = Identity(x)                               -> every reference to y reads x
//   y, mask = Dropout(x, ...)      [inference]    -> the same; a used mask becomes a constant
//                                                    all-true tensor, an unused one goes
//   Y, Mean, InvStdDev = LayerNormalization(...)  -> Y  (Mean / InvStdDev dropped when unused)
//   y = Cast(x) {to = x's type}                   -> every reference to y reads x (PyTorch
//                                                    exports write float-to-float casts; each
//                                                    would run as a copy of its own)
//   y = Slice(x, ...) keeping all of x in order   -> the same (steps 1 and y's shape x's, both
//                                                    known: PyTorch writes x[:, a:b] as a Slice
//                                                    per axis, the whole-axis one a copy of x)
//
// Graph outputs are the model's interface, so their names never change. When y is a graph
// output (of the main graph or of a nested one):
//   - x produced by a node of the same graph, and not itself a graph output: x is renamed y and
//     the node goes;
//   - x a graph input, an initializer, an outer-scope value or another graph output: y stays the
//     output of an Identity (a Dropout becomes one) - a graph output must stay a distinct value
//     with its own name.
//
// Dropout is in inference when the opset is below 12 or training_mode is omitted or a constant
// false; a training_mode that is constant true or only known at run time leaves the node alone.
// A used mask becomes a constant only when its shape is fully known and it is not a graph output
// (a constant would have to take the output's name); otherwise the Dropout stays whole.
// BatchNormalization needs no rule: its running mean/var outputs exist only in training mode,
// which shape inference rejects (kUnsupported), so they never reach the IR.
//
// Run early (after specialize), so the passes after it see through the aliases; inline_if may
// leave Identities that keep graph output names, which a later run folds.
#include <optional>
#include <string>
#include <vector>

#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"
#include "ir/error.h"

namespace rnnc {

namespace {

// ---- rules -------------------------------------------------------------------------------------

// y = op(x) where y is x (Identity; Dropout in inference, its mask already dealt with): every
// reference to y reads x. A graph output y keeps its name: x takes it, or, when x cannot, y stays
// the output of an Identity.
bool forward_input(Graph& graph, Node* node, PassStats& stats) {
  Value* x = node->input(0);
  Value* y = node->output(0);
  const std::string name = y->name(), op = node->op_type();
  bool is_output = is_graph_output(graph, y);
  if (is_output && !can_take_name(graph, x)) {
    if (op == "Identity") return false;
    graph.rename_value(y, graph.unique_name(name));
    Node* identity = graph.add_node("Identity", node->name(), {x}, {name}, node->opset());
    identity->output(0)->type = y->type;
    graph.replace_all_uses(y, identity->output(0));
    graph.remove_node(node);
    ++stats[op == "Cast"    ? "no-op casts turned into Identity"
            : op == "Slice" ? "whole slices turned into Identity"
                            : "dropouts turned into Identity"];
    return true;
  }
  ++stats[op == "Identity" ? "identities removed"
           : op == "Cast"   ? "no-op casts removed"
           : op == "Slice"  ? "whole slices removed"
                            : "dropouts removed"];
  graph.replace_all_uses(y, x);
  graph.remove_node(node);
  if (is_output) graph.rename_value(x, name);
  return true;
}

bool dropout_in_inference(const Node& dropout) {
  if (dropout.opset() < 12) return true;
  const Value* training = dropout.input(2);
  if (!training) return true;
  if (!training->is_constant() || training->is_graph_input()) return false;
  const Tensor& mode = *training->constant();
  return mode.numel() == 1 && mode.get_int64(0) == 0;
}

// y, mask = Dropout(x) [inference] -> x, mask -> a constant all-true tensor (or dropped).
bool remove_dropout(Graph& graph, Node* dropout, PassStats& stats) {
  if (!dropout_in_inference(*dropout)) return false;
  if (Value* mask = dropout->output(1); is_used(graph, mask)) {
    if (is_graph_output(graph, mask) || !mask->type.shape || !shape_is_known(*mask->type.shape)) {
      return false;
    }
    // The mask is bool from opset 10; before, it has the data's type.
    DType dtype = dropout->opset() >= 10 ? DType::kBool : mask->type.dtype;
    Tensor all_true(dtype, shape_values(*mask->type.shape));
    for (int64_t i = 0; i < all_true.numel(); ++i) all_true.set_double(i, 1.0);
    graph.replace_all_uses(
        mask, graph.add_initializer(graph.unique_name(mask->name()), std::move(all_true)));
    ++stats["dropout masks made constant"];
  }
  return forward_input(graph, dropout, stats);
}

// Y, Mean, InvStdDev = LayerNormalization(...) -> Y when Mean / InvStdDev are unused.
bool drop_unused_statistics(Graph& graph, Node* norm, PassStats& stats) {
  bool changed = false;
  for (size_t i = norm->num_outputs(); i-- > 1;) {
    Value* out = norm->output(i);
    if (!out || is_used(graph, out)) continue;
    graph.remove_node_output(norm, i);
    ++stats["training outputs dropped"];
    changed = true;
  }
  return changed;
}

// y = Cast(x) to x's own type -> x.
bool remove_noop_cast(Graph& graph, Node* cast, PassStats& stats) {
  const Value* x = cast->input(0);
  if (!x || !cast->has_attr("to")) return false;
  const std::optional<DType> to = dtype_from_onnx(static_cast<int32_t>(cast->attr_int("to", 0)));
  if (!to || *to != x->type.dtype) return false;
  return forward_input(graph, cast, stats);
}

// y = Slice(x, starts, ends, axes, steps) with y's shape x's (both known) and every step 1 ->
// x: a slice in order that keeps every index of every axis keeps all of x.
bool remove_whole_slice(Graph& graph, Node* slice, PassStats& stats) {
  const Value* x = slice->input(0);
  const Value* y = slice->output(0);
  if (!x || !y || !x->type.shape || !y->type.shape || !shape_is_known(*x->type.shape) ||
      !shape_is_known(*y->type.shape) ||
      shape_values(*x->type.shape) != shape_values(*y->type.shape)) {
    return false;
  }
  if (const Value* steps = slice->input(4)) {
    if (!steps->is_constant()) return false;
    const Tensor& values = *steps->constant();
    for (int64_t i = 0; i < values.numel(); ++i) {
      if (values.get_int64(i) != 1) return false;
    }
  }
  return forward_input(graph, slice, stats);
}

// clang-format off
const std::vector<PeepholeRule> kRules = {
    {"Identity",           forward_input},           // y = Identity(x)         -> x
    {"Dropout",            remove_dropout},          // y, mask = Dropout(x)    -> x, true
    {"LayerNormalization", drop_unused_statistics},  // Y, Mean, InvStdDev = .. -> Y
    {"Cast",               remove_noop_cast},        // y = Cast(x) {to=type x} -> x
    {"Slice",              remove_whole_slice},      // y = Slice(x) keeping x  -> x
};
// clang-format on

}  // namespace

bool eliminate_identity(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  bool changed = false;
  for_each_graph(model, [&](Graph& graph) {
    changed = apply_peephole_rules(graph, kRules, stats) || changed;
  });
  return changed;
}

}  // namespace rnnc
