// eliminate_layout_ops: layout ops that cancel go; those around LSTM/GRU/RNN become free views.
//
// Exporters surround recurrent nodes with data-movement ops: PyTorch squeezes the direction axis
// out of every layer's Y, joins a bidirectional layer's directions with Transpose + Reshape, and
// transposes batch_first models in and out of the time-major layout. This pass does two things.
//
// 1. Layout-op pairs that cancel or compose are rewritten for real (the graph shrinks; the result
//    is plain ONNX): kPairRules and kSingleRules below, e.g. Transpose(Transpose(x, p),
//    inverse(p)) -> x, and a Reshape/Squeeze/Unsqueeze/Flatten restoring its input's shape -> x.
//
// 2. The layout ops next to a recurrent node are folded into it as views. The ops stay in the
//    graph; each is marked `rnnc.layout_of = "<node>.<slot>"` and the node records the layout it
//    reads or writes that slot in (`rnnc.y_layout = "seq_batch_dirhidden"`, ...):
//
//      %Y = LSTM 'l' (%x, ...) {direction="bidirectional"}            [seq, 2, batch, H]
//      %t = Transpose (%Y) {perm=[0, 2, 1, 3]}                        [seq, batch, 2, H]
//      %r = Reshape (%t, [0, 0, -1])                                  [seq, batch, 2H]
//    ->
//      %Y = LSTM 'l' (%x, ...) {..., rnnc.y_layout="seq_batch_dirhidden"}
//      %t = Transpose (%Y) {perm=[0, 2, 1, 3], rnnc.layout_of="l.y"}
//      %r = Reshape (%t, [0, 0, -1]) {rnnc.layout_of="l.y"}
//
// Why marks and not removal: ONNX's LSTM/GRU/RNN cannot write Y as [seq, batch, 2H], so dropping
// the ops would leave a graph that is not ONNX (`rnnc optimize` must write a model every runtime
// loads) and that the reference evaluator would compute differently. With marks the graph keeps
// its full standard meaning - the evaluator runs every op, ONNX export drops the `rnnc.*`
// annotations - and lowering, which reads them, emits no data movement for the marked ops.
//
// What lowering can rely on after this pass (and until a later pass rewrites the graph):
// - `rnnc.<slot>_layout = L` on a recurrent node, slot one of y, y_h, y_c: the slot's value is read
//   only by a chain of layout ops marked `rnnc.layout_of = "<node>.<slot>"`, each value of the
//   chain but the last read only by the next op and none a graph output. The chain's last value
//   holds the slot's elements in axis order L: write them there, emit nothing for the chain.
// - `rnnc.<slot>_layout = L`, slot x, initial_h or initial_c: the slot's value is produced by one
//   Transpose marked `rnnc.layout_of = "<node>.<slot>"` and read by nothing else; the Transpose's
//   input holds the elements in axis order L: read it there and emit nothing for the Transpose.
// - Layout names list the axes outermost first, joined by `_`: seq, batch, dir (num_directions),
//   hidden, input; `dirhidden` is dir and hidden merged into one axis of size dir*hidden (dir
//   outer), what PyTorch calls the concatenated directions. A slot with no annotation has the ONNX
//   layout its `layout` attribute says.
// - A layout op belongs to at most one chain (the first recurrent slot in node order claims it).
//
// Only the views in kViewRules are folded, and only into a slot no other reader sees in the ONNX
// layout: a Y also read by a second node, or a graph output, keeps its ONNX layout and its ops
// stay unmarked. The pass recomputes every mark from scratch, so running it twice changes nothing.
// Runs in lowering_pipeline(), after canonicalize_recurrent (which turns layout=1 nodes into
// Transposes around a layout-0 node: exactly the views folded here) and dce. `rnnc optimize` does
// not run it: the marks would be dropped from the ONNX it writes anyway.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"

namespace rnnc {

namespace {


// ---- facts about a graph's values --------------------------------------------------------------

// Readers a value has beyond its use records: graph outputs, and nested graphs that return the
// value directly (an If branch returning an outer value records no use).
class Readers {
 public:
  explicit Readers(const Graph& graph) : escaping_(escaping_values(graph)) {}

  bool escapes(const Value* value) const { return escaping_.count(value) != 0; }

  // The one node that reads `value` (possibly at several inputs), or nullptr when none, several,
  // or a reader without a use record.
  Node* only_reader(const Value* value) const {
    if (!value || escapes(value) || value->uses().empty()) return nullptr;
    Node* reader = value->uses().front().node;
    for (const Use& use : value->uses()) {
      if (use.node != reader) return nullptr;
    }
    return reader;
  }

 private:
  std::set<const Value*> escaping_;
};

// ---- operands of layout ops --------------------------------------------------------------------

bool is_reshape_like(const Node& node) {
  const std::string& op = node.op_type();
  return node.domain().empty() &&
         (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten");
}

bool is_op(const Node& node, const char* op) {
  return node.domain().empty() && node.op_type() == op;
}

const Shape* known_rank_shape(const Value* value) {
  return value && value->type.shape ? &*value->type.shape : nullptr;
}

// Equal as dims (unknown dims are never equal, so this proves the shapes equal).
bool same_shape(const Value* a, const Value* b) {
  const Shape* sa = known_rank_shape(a);
  const Shape* sb = known_rank_shape(b);
  return sa && sb && *sa == *sb;
}

std::optional<std::vector<int64_t>> transpose_perm(const Node& node) {
  if (node.has_attr("perm")) return node.attr_ints("perm");
  const Shape* shape = known_rank_shape(node.input(0));
  if (!shape) return std::nullopt;
  std::vector<int64_t> reversed;
  for (int64_t axis = static_cast<int64_t>(shape->size()) - 1; axis >= 0; --axis) {
    reversed.push_back(axis);
  }
  return reversed;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Transpose(Transpose(x, p), q) == Transpose(x, p[q]).
std::vector<int64_t> compose(const std::vector<int64_t>& p, const std::vector<int64_t>& q) {
  std::vector<int64_t> r;
  for (int64_t axis : q) r.push_back(p.at(static_cast<size_t>(axis)));
  return r;
}

// Squeeze's axes, normalized against the input rank; nullopt when not constant or not given.
std::optional<std::vector<int64_t>> squeeze_axes(const Node& node) {
  std::vector<int64_t> axes;
  if (node.opset() < 13) {
    if (!node.has_attr("axes")) return std::nullopt;
    axes = node.attr_ints("axes");
  } else {
    const Value* operand = node.input(1);
    if (!operand || !operand->is_constant()) return std::nullopt;
    const Tensor& data = *operand->constant();
    for (int64_t i = 0; i < data.numel(); ++i) axes.push_back(data.get_int64(i));
  }
  const Shape* shape = known_rank_shape(node.input(0));
  if (!shape) return std::nullopt;
  const auto rank = static_cast<int64_t>(shape->size());
  for (int64_t& axis : axes) axis = axis < 0 ? axis + rank : axis;
  std::sort(axes.begin(), axes.end());
  return axes;
}

// Whether a Reshape's target means the same whatever its input: a constant without 0 entries (a 0
// copies the input's dim unless allowzero).
bool has_input_independent_target(const Node& reshape) {
  const Value* target = reshape.input(1);
  if (!target || !target->is_constant()) return false;
  if (reshape.attr_int("allowzero", 0) != 0) return true;
  const Tensor& data = *target->constant();
  for (int64_t i = 0; i < data.numel(); ++i) {
    if (data.get_int64(i) == 0) return false;
  }
  return true;
}

// ---- part 1: layout ops that cancel or compose -------------------------------------------------

// What a rule does to `outer` (and, through it, to `inner`, its data input's producer).
enum class Action {
  kBypass,       // outer's readers read inner's data input instead; outer goes
  kComposePerm,  // outer transposes inner's input directly by the composed permutation
  kReadThrough,  // outer reads inner's data input directly (its own operands say it all)
};

struct PairRule {
  const char* stat;  // counted in --stats under this name
  bool (*outer_op)(const Node&);
  bool (*inner_op)(const Node&);
  bool (*applies)(const Node& outer, const Node& inner, const Readers& readers);
  Action action;
};

bool is_transpose(const Node& node) { return is_op(node, "Transpose"); }
bool is_reshape(const Node& node) { return is_op(node, "Reshape"); }

bool perms_cancel(const Node& outer, const Node& inner, const Readers&) {
  auto p = transpose_perm(inner);
  auto q = transpose_perm(outer);
  return p && q && p->size() == q->size() && is_identity(compose(*p, *q));
}

bool inner_read_only_by_outer(const Node& outer, const Node& inner, const Readers& readers) {
  return readers.only_reader(inner.output(0)) == &outer && transpose_perm(inner) &&
         transpose_perm(outer);
}

bool restores_shape(const Node& outer, const Node& inner, const Readers&) {
  return same_shape(outer.output(0), inner.input(0));
}

bool target_ignores_input(const Node& outer, const Node& inner, const Readers& readers) {
  return readers.only_reader(inner.output(0)) == &outer && has_input_independent_target(outer);
}

// outer(inner(x)), outer reading inner's output as its data input; first match wins.
const PairRule kPairRules[] = {
    // Transpose(Transpose(x, p), inverse(p)) -> x
    {"transpose pairs cancelled", is_transpose, is_transpose, perms_cancel, Action::kBypass},
    // Transpose(Transpose(x, p), q) -> Transpose(x, p[q])    (the inner one read only here)
    {"transposes composed", is_transpose, is_transpose, inner_read_only_by_outer,
     Action::kComposePerm},
    // Squeeze(Unsqueeze(x, a), a) -> x; Reshape(Reshape(x, s), shape(x)) -> x; also Flatten
    {"reshape pairs cancelled", is_reshape_like, is_reshape_like, restores_shape, Action::kBypass},
    // Reshape(Squeeze(x), s) -> Reshape(x, s)    (s constant without 0 entries)
    {"reshapes collapsed", is_reshape, is_reshape_like, target_ignores_input, Action::kReadThrough},
};

struct SingleRule {
  const char* stat;
  bool (*op)(const Node&);
  bool (*applies)(const Node& node);
};

bool identity_perm(const Node& node) {
  auto perm = transpose_perm(node);
  return perm && is_identity(*perm);
}

bool keeps_shape(const Node& node) { return same_shape(node.output(0), node.input(0)); }

// A layout op that leaves its input as it is; its readers read the input instead.
const SingleRule kSingleRules[] = {
    {"identity transposes removed", is_transpose, identity_perm},  // Transpose(x, [0, 1, ..]) -> x
    {"no-op reshapes removed", is_reshape_like, keeps_shape},      // Reshape(x, shape(x)) -> x
};

// Removes `node` if nothing reads it, then the producers of its inputs that this left unread.
void remove_if_unread(Graph& graph, Node* node, PassStats& stats) {
  const Readers readers(graph);
  for (const Value* output : node->outputs()) {
    if (output && (!output->uses().empty() || readers.escapes(output))) return;
  }
  std::vector<Node*> producers;
  for (const Value* input : node->inputs()) {
    if (input && input->producer() && input->producer()->owner() == &graph) {
      producers.push_back(input->producer());
    }
  }
  graph.remove_node(node);
  ++stats["nodes removed"];
  for (Node* producer : producers) {
    bool still_there = false;
    for (const auto& n : graph.nodes()) still_there = still_there || n.get() == producer;
    if (still_there) remove_if_unread(graph, producer, stats);
  }
}

// Applies one rule somewhere in the graph; false when none applies.
bool rewrite_one(Graph& graph, PassStats& stats) {
  const Readers readers(graph);
  for (const auto& node_ptr : graph.nodes()) {
    Node* outer = node_ptr.get();
    Value* out = outer->output(0);
    if (!out || outer->num_inputs() == 0 || !outer->input(0)) continue;
    // Bypassing an op whose output is a graph output would rename the output: left alone.
    const bool bypassable = !readers.escapes(out);
    for (const SingleRule& rule : kSingleRules) {
      if (!bypassable || !rule.op(*outer) || !rule.applies(*outer)) continue;
      graph.replace_all_uses(out, outer->input(0));
      remove_if_unread(graph, outer, stats);
      ++stats[rule.stat];
      return true;
    }
    Node* inner = outer->input(0)->producer();
    if (!inner || inner->owner() != &graph || !inner->input(0) || !inner->output(0)) continue;
    for (const PairRule& rule : kPairRules) {
      if (!rule.outer_op(*outer) || !rule.inner_op(*inner)) continue;
      if (!rule.applies(*outer, *inner, readers)) continue;
      if (rule.action == Action::kBypass && !bypassable) continue;
      Value* x = inner->input(0);
      switch (rule.action) {
        case Action::kBypass:
          graph.replace_all_uses(out, x);
          remove_if_unread(graph, outer, stats);
          break;
        case Action::kComposePerm:
          outer->set_attr("perm",
                          Attribute::of_ints(compose(*transpose_perm(*inner), *transpose_perm(*outer))));
          outer->set_input(0, x);
          remove_if_unread(graph, inner, stats);
          break;
        case Action::kReadThrough:
          outer->set_input(0, x);
          remove_if_unread(graph, inner, stats);
          break;
      }
      ++stats[rule.stat];
      return true;
    }
  }
  return false;
}

// ---- part 2: layout ops around recurrent nodes as views ----------------------------------------

// One step of a view: a layout op turning a value in layout `from` into one in layout `to`.
// `operand` is the Transpose perm, the Squeeze axes, or the two adjacent axes a Reshape merges.
struct ViewRule {
  const char* from;
  const char* op;
  std::vector<int64_t> operand;
  const char* to;
};

// Read each as: a value in layout `from` -> op(operand) -> a value in layout `to`. Squeeze rules
// apply only when the squeezed axis is known to be 1 (dir of a one-direction node).
// clang-format off
const ViewRule kViewRules[] = {
    // Y of a layout-0 node: seq_dir_batch_hidden
    {"seq_dir_batch_hidden", "Squeeze",   {1},          "seq_batch_hidden"},      // (a) PyTorch
    {"seq_dir_batch_hidden", "Transpose", {0, 2, 1, 3}, "seq_batch_dir_hidden"},  // (b) PyTorch:
    {"seq_batch_dir_hidden", "Reshape",   {2, 3},       "seq_batch_dirhidden"},   //   [0, 0, -1]
    {"seq_batch_dir_hidden", "Squeeze",   {2},          "seq_batch_hidden"},
    {"seq_batch_hidden",     "Transpose", {1, 0, 2},    "batch_seq_hidden"},      // (d) PyTorch
    {"seq_batch_dirhidden",  "Transpose", {1, 0, 2},    "batch_seq_dirhidden"},   // (d) PyTorch
    {"seq_dir_batch_hidden", "Transpose", {2, 0, 1, 3}, "batch_seq_dir_hidden"},  // (d) layout=1
    // Y of a layout-1 node: batch_seq_dir_hidden
    {"batch_seq_dir_hidden", "Squeeze",   {2},          "batch_seq_hidden"},
    {"batch_seq_dir_hidden", "Reshape",   {2, 3},       "batch_seq_dirhidden"},
    {"batch_seq_dir_hidden", "Transpose", {1, 2, 0, 3}, "seq_dir_batch_hidden"},  // to layout 0
    {"batch_seq_hidden",     "Transpose", {1, 0, 2},    "seq_batch_hidden"},
    {"batch_seq_dirhidden",  "Transpose", {1, 0, 2},    "seq_batch_dirhidden"},
    // Y_h and Y_c (outputs), initial_h and initial_c (inputs)
    {"dir_batch_hidden",     "Transpose", {1, 0, 2},    "batch_dir_hidden"},      // (d) layout=1
    {"batch_dir_hidden",     "Transpose", {1, 0, 2},    "dir_batch_hidden"},      // (d) layout=1
    {"dir_batch_hidden",     "Squeeze",   {0},          "batch_hidden"},          // last state
    {"batch_dir_hidden",     "Squeeze",   {1},          "batch_hidden"},
    // X (input)
    {"batch_seq_input",      "Transpose", {1, 0, 2},    "seq_batch_input"},       // (d) PyTorch
    {"seq_batch_input",      "Transpose", {1, 0, 2},    "batch_seq_input"},       // (d) layout=1
};
// clang-format on

bool view_rule_matches(const ViewRule& rule, const Node& node) {
  if (!is_op(node, rule.op)) return false;
  const Shape* in = known_rank_shape(node.input(0));
  const Shape* out = known_rank_shape(node.output(0));
  if (!in || !out) return false;
  if (is_transpose(node)) {
    auto perm = transpose_perm(node);
    return perm && *perm == rule.operand;
  }
  if (is_op(node, "Squeeze")) {
    auto axes = squeeze_axes(node);
    if (!axes || *axes != rule.operand) return false;
    for (int64_t axis : *axes) {
      const Dim& dim = in->at(static_cast<size_t>(axis));
      if (!dim.is_known() || dim.value() != 1) return false;
    }
    return true;
  }
  // Reshape merging axes k and k+1: out == in with those two replaced by their product.
  const auto k = static_cast<size_t>(rule.operand[0]);
  if (in->size() != out->size() + 1 || k + 1 >= in->size()) return false;
  for (size_t i = 0; i < out->size(); ++i) {
    Dim expected = i < k ? (*in)[i] : i == k ? (*in)[k] * (*in)[k + 1] : (*in)[i + 1];
    if (expected != (*out)[i]) return false;
  }
  return true;
}

// The rule turning a value in `layout` into the output of `node`, or nullptr.
const ViewRule* find_view_rule(const std::string& layout, const Node& node) {
  for (const ViewRule& rule : kViewRules) {
    if (layout == rule.from && view_rule_matches(rule, node)) return &rule;
  }
  return nullptr;
}

// The rule that made a value in `layout` out of `node`'s input, or nullptr.
const ViewRule* find_inverse_view_rule(const std::string& layout, const Node& node) {
  for (const ViewRule& rule : kViewRules) {
    if (layout == rule.to && view_rule_matches(rule, node)) return &rule;
  }
  return nullptr;
}

bool is_recurrent(const Node& node) {
  return node.domain().empty() &&
         (node.op_type() == "LSTM" || node.op_type() == "GRU" || node.op_type() == "RNN");
}

struct Slot {
  const char* name;  // as in the annotations: rnnc.<name>_layout, "<node>.<name>"
  size_t index;
  const char* layout0;  // the ONNX layout of the slot for layout = 0 and layout = 1
  const char* layout1;
};

const Slot kInputSlots[] = {
    {"x", 0, "seq_batch_input", "batch_seq_input"},
    {"initial_h", 5, "dir_batch_hidden", "batch_dir_hidden"},
    {"initial_c", 6, "dir_batch_hidden", "batch_dir_hidden"},  // LSTM only
};
const Slot kOutputSlots[] = {
    {"y", 0, "seq_dir_batch_hidden", "batch_seq_dir_hidden"},
    {"y_h", 1, "dir_batch_hidden", "batch_dir_hidden"},
    {"y_c", 2, "dir_batch_hidden", "batch_dir_hidden"},  // LSTM only
};

std::string slot_annotation(const Slot& slot) {
  return slot_layout_annotation(slot.name);
}

bool is_layout_annotation(const std::string& name) {
  if (name == kLayoutOfAnnotation) return true;
  for (const Slot& slot : kInputSlots) {
    if (name == slot_annotation(slot)) return true;
  }
  for (const Slot& slot : kOutputSlots) {
    if (name == slot_annotation(slot)) return true;
  }
  return false;
}

// The annotations this pass would write for a graph: node -> (name -> value).
using Marks = std::map<const Node*, std::map<std::string, std::string>>;

void fold_views_of(const Node& node, const Readers& readers, Marks& marks, PassStats& stats) {
  const bool batch_major = node.attr_int("layout", 0) == 1;
  auto claimed = [&](const Node* op) {
    auto it = marks.find(op);
    return it != marks.end() && it->second.count(kLayoutOfAnnotation) != 0;
  };
  for (const Slot& slot : kInputSlots) {
    const Value* value = node.input(slot.index);
    if (!value || readers.only_reader(value) != &node) continue;
    const Node* producer = value->producer();
    if (!producer || producer->owner() != node.owner() || claimed(producer)) continue;
    const ViewRule* rule =
        find_inverse_view_rule(batch_major ? slot.layout1 : slot.layout0, *producer);
    if (!rule || !is_transpose(*producer)) continue;
    marks[producer][kLayoutOfAnnotation] = node.name() + "." + slot.name;
    marks[&node][slot_annotation(slot)] = rule->from;
    ++stats["layout ops made views"];
  }
  for (const Slot& slot : kOutputSlots) {
    const Value* value = node.output(slot.index);
    std::string layout = batch_major ? slot.layout1 : slot.layout0;
    std::vector<const Node*> chain;
    // Extend the chain while the current value has exactly one reader that is a view of it.
    while (const Node* reader = readers.only_reader(value)) {
      if (reader->input(0) != value || claimed(reader)) break;
      const ViewRule* rule = find_view_rule(layout, *reader);
      if (!rule) break;
      chain.push_back(reader);
      layout = rule->to;
      value = reader->output(0);
    }
    if (chain.empty()) continue;
    for (const Node* op : chain) marks[op][kLayoutOfAnnotation] = node.name() + "." + slot.name;
    marks[&node][slot_annotation(slot)] = layout;
    stats["layout ops made views"] += static_cast<int64_t>(chain.size());
  }
}

// Replaces the graph's layout annotations by `marks`; true if anything differs.
bool apply_marks(Graph& graph, const Marks& marks) {
  bool changed = false;
  for (const auto& node_ptr : graph.nodes()) {
    Node& node = *node_ptr;
    std::map<std::string, std::string> old;
    for (const auto& [name, attribute] : node.attributes()) {
      if (is_layout_annotation(name)) old[name] = attribute.s;
    }
    auto it = marks.find(&node);
    const std::map<std::string, std::string> none;
    const auto& wanted = it == marks.end() ? none : it->second;
    if (old == wanted) continue;
    for (const auto& [name, value] : old) node.remove_attr(name);
    for (const auto& [name, value] : wanted) node.set_attr(name, Attribute::of_string(value));
    changed = true;
  }
  return changed;
}

bool fold_views(Graph& graph, PassStats& stats) {
  const Readers readers(graph);
  Marks marks;
  for (const auto& node : graph.nodes()) {
    if (is_recurrent(*node)) {
      fold_views_of(*node, readers, marks, stats);
      if (marks.count(node.get())) ++stats["recurrent nodes with folded layouts"];
    }
  }
  return apply_marks(graph, marks);
}

}  // namespace

bool eliminate_layout_ops(Model& model, const PassContext& context, PassStats& stats) {
  bool changed = false;
  for_each_graph(model, [&](Graph& graph) {
    while (rewrite_one(graph, stats)) changed = true;
    changed = fold_views(graph, stats) || changed;
  });
  return changed;
}

}  // namespace rnnc
