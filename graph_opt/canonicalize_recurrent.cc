// canonicalize_recurrent: every LSTM, GRU and RNN node in one form, so lowering reads one set of
// attributes and inputs instead of every spelling ONNX allows.
//
//   %Y, %Y_h = GRU(%x, %W, %R) {layout=1}
//     ->
//   %x_t = Transpose(%x) {perm=[1, 0, 2]}
//   %Y_0, %Y_h_0 = GRU(%x_t, %W, %R, %zero_B) {activations=["Sigmoid", "Tanh"],
//                                              direction="forward", hidden_size=4}
//   %Y = Transpose(%Y_0) {perm=[2, 0, 1, 3]}
//   %Y_h = Transpose(%Y_h_0) {perm=[1, 0, 2]}
//
// Rules, per node (docs/ops/recurrent.md states the defaults and how the lists are read):
//
//   layout=1                -> layout 0: Transposes on X, initial_h, initial_c in and on the used
//                              outputs Y, Y_h, Y_c out (which keep their names); the attribute goes
//   layout=0                -> no attribute (0 is the default; below opset 14 it cannot exist)
//   direction absent        -> direction="forward"
//   hidden_size absent      -> hidden_size from R's shape [num_directions, G*hidden, hidden]
//   activations absent      -> the defaults for each direction: LSTM Sigmoid, Tanh, Tanh;
//                              GRU Sigmoid, Tanh; RNN Tanh
//   activations "tanh"      -> "Tanh": the ONNX spelling (names match case-insensitively)
//   RNN ["Tanh", "Tanh"]    -> ["Tanh"] for one direction (the schema default exporters write)
//   activation_alpha/beta   -> one value for each activation that takes one: a short list is
//                              completed with that activation's default; an empty or unneeded
//                              list goes. Only activations that take a parameter add values, so
//                              Sigmoid/Tanh-only nodes get no lists.
//   B absent                -> a zero initializer [num_directions, 2*G*hidden_size] (only when
//                              hidden_size and the element type are known)
//
// sequence_lens stays absent when absent: lowering treats that as every batch entry running
// the full seq_length. A constant full-length tensor would pin batch and seq_length to sizes
// and give lowering a data-dependent loop bound to prove constant again. initial_h, initial_c
// and P stay absent too (zeros by definition); clip, input_forget and linear_before_reset are
// left as written.
//
// Explicit activation parameters also pin rnnc's reading into an exported model: ONNX Runtime
// defaults Affine, ThresholdedRelu and ScaledTanh parameters differently when lists run short.
// Type inference re-runs over the model afterwards. Run near the end of the pipeline (after
// folding, before dce), so lowering gets exactly this form.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"
#include "ir/error.h"
#include "ir/op_schema.h"

namespace rnnc {

namespace {

// ---- the three ops and their activations -------------------------------------------------------

struct RecurrentOp {
  const char* op_type;
  int64_t gates;                                 // blocks stacked in W and R
  std::vector<std::string> default_activations;  // per direction
};

const RecurrentOp kRecurrentOps[] = {
    {"LSTM", 4, {"Sigmoid", "Tanh", "Tanh"}},
    {"GRU", 3, {"Sigmoid", "Tanh"}},
    {"RNN", 1, {"Tanh"}},
};

// Input and output positions shared by the three ops.
constexpr size_t kX = 0, kR = 2, kB = 3, kInitialH = 5, kInitialC = 6;
constexpr size_t kY = 0;
const char* const kInputNames[] = {"X",         "W",         "R", "B", "sequence_lens",
                                   "initial_h", "initial_c", "P"};
const char* const kOutputNames[] = {"Y", "Y_h", "Y_c"};

struct Activation {
  const char* name;  // the ONNX spelling
  bool takes_alpha;
  float alpha;
  bool takes_beta;
  float beta;
};

// The defaults are those of the ONNX operators of the same name (docs/ops/recurrent.md).
// clang-format off
constexpr Activation kActivations[] = {
    // name             alpha         beta
    {"Relu",            false, 0.f,   false, 0.f},
    {"Tanh",            false, 0.f,   false, 0.f},
    {"Sigmoid",         false, 0.f,   false, 0.f},
    {"Affine",          true,  1.f,   true,  0.f},
    {"LeakyRelu",       true,  0.01f, false, 0.f},
    {"ThresholdedRelu", true,  1.f,   false, 0.f},
    {"ScaledTanh",      true,  1.f,   true,  1.f},
    {"HardSigmoid",     true,  0.2f,  true,  0.5f},
    {"Elu",             true,  1.f,   false, 0.f},
    {"Softsign",        false, 0.f,   false, 0.f},
    {"Softplus",        false, 0.f,   false, 0.f},
};
// clang-format on

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Shape inference has validated the names, so every one is found.
const Activation& find_activation(const Node& node, const std::string& name) {
  for (const Activation& activation : kActivations) {
    if (lowercase(activation.name) == lowercase(name)) return activation;
  }
  RNNC_CHECK(false, node.describe(), ": activation '", name, "' passed inference but is unknown");
  return kActivations[0];
}

// ---- attributes --------------------------------------------------------------------------------

// R is [num_directions, G*hidden_size, hidden_size]; 0 when neither dim is known.
int64_t hidden_size_from_r(const Node& node, const RecurrentOp& op) {
  const Value* r = node.input(kR);
  if (!r || !r->type.shape || r->type.shape->size() != 3) return 0;
  const Shape& shape = *r->type.shape;
  if (shape[2].is_known()) return shape[2].value();
  if (shape[1].is_known() && shape[1].value() % op.gates == 0) return shape[1].value() / op.gates;
  return 0;
}

// Sets the attributes to their canonical form on `node`; returns how many it changed.
int64_t canonicalize_attributes(Node& node, const RecurrentOp& op) {
  int64_t changed = 0;
  auto set_if_different = [&](const std::string& name, bool different, Attribute attribute) {
    if (!different) return;
    node.set_attr(name, std::move(attribute));
    ++changed;
  };
  auto remove_if_present = [&](const std::string& name) {
    if (!node.has_attr(name)) return;
    node.remove_attr(name);
    ++changed;
  };

  std::string direction = node.attr_string("direction", "forward");
  set_if_different("direction", !node.has_attr("direction"), Attribute::of_string(direction));
  size_t num_directions = direction == "bidirectional" ? 2 : 1;

  if (!node.has_attr("hidden_size")) {
    int64_t hidden_size = hidden_size_from_r(node, op);
    set_if_different("hidden_size", hidden_size > 0, Attribute::of_int(hidden_size));
  }

  std::vector<std::string> names;
  for (size_t d = 0; d < num_directions; ++d) {
    for (const std::string& name : op.default_activations) names.push_back(name);
  }
  if (node.has_attr("activations")) {
    names = node.attr_strings("activations");
    // RNN's schema default ["Tanh", "Tanh"] on one direction (accepted by inference) is ["Tanh"].
    bool is_rnn = std::string(op.op_type) == "RNN";
    if (is_rnn && num_directions == 1 && names.size() == 2) names.resize(1);
    for (std::string& name : names) name = find_activation(node, name).name;
  }
  set_if_different("activations", node.attr_strings("activations") != names, Attribute::of_strings(names));

  // Each activation that takes a parameter consumes the next value; a list that runs out leaves
  // the rest at their defaults, which become explicit here.
  std::vector<float> alphas = node.attr_floats("activation_alpha");
  std::vector<float> betas = node.attr_floats("activation_beta");
  size_t alpha_takers = 0, beta_takers = 0;
  for (const std::string& name : names) {
    const Activation& activation = find_activation(node, name);
    if (activation.takes_alpha && ++alpha_takers > alphas.size()) {
      alphas.push_back(activation.alpha);
    }
    if (activation.takes_beta && ++beta_takers > betas.size()) betas.push_back(activation.beta);
  }
  for (const auto& [attribute, values, takers] :
       {std::make_tuple("activation_alpha", alphas, alpha_takers),
        std::make_tuple("activation_beta", betas, beta_takers)}) {
    if (takers == 0) {
      remove_if_present(attribute);
    } else {
      set_if_different(attribute, node.attr_floats(attribute) != values, Attribute::of_floats(values));
    }
  }

  if (node.attr_int("layout", 0) == 0) remove_if_present("layout");
  return changed;
}

// ---- inputs and layout -------------------------------------------------------------------------

// A zero B [num_directions, 2*G*hidden_size] when B is omitted and its shape and type are known.
Value* zero_bias(Graph& graph, const Node& node, const RecurrentOp& op) {
  int64_t hidden_size = node.attr_int("hidden_size", 0);
  DType dtype = node.input(kX)->type.dtype;
  if (hidden_size <= 0 || dtype == DType::kUndefined) return nullptr;
  int64_t num_directions = node.attr_string("direction", "forward") == "bidirectional" ? 2 : 1;
  Tensor zeros(dtype, {num_directions, 2 * op.gates * hidden_size});
  return graph.add_initializer(graph.unique_name(node.name() + "_zero_B"), std::move(zeros));
}

Value* add_transpose(Graph& graph, const std::string& node_name, Value* input,
                     const std::string& output_name, std::vector<int64_t> perm, int opset,
                     const TensorType* declared) {
  Node* transpose = graph.add_node("Transpose", node_name, {input}, {output_name}, opset);
  transpose->set_attr("perm", Attribute::of_ints(std::move(perm)));
  if (declared) transpose->output(0)->type = *declared;
  infer_node(*transpose);
  return transpose->output(0);
}

// Replaces `old` by the same op over `inputs` with `attributes`. With to_layout0 the inputs are
// already transposed; the new node's outputs get fresh names, and Transposes back to layout 1 take
// over the names and references of the old outputs that are used. Otherwise the new node's
// outputs take over the old ones, names included. Arguments are taken by value: callers pass
// parts of `old`.
void rebuild(Graph& graph, Node* old, std::vector<Value*> inputs,
             std::map<std::string, Attribute> attributes, bool to_layout0) {
  std::vector<std::string> names(old->num_outputs()), original(old->num_outputs());
  for (size_t i = 0; i < old->num_outputs(); ++i) {
    Value* out = old->output(i);
    if (!out) continue;
    original[i] = out->name();
    names[i] = to_layout0 ? graph.unique_name(out->name() + "_layout0") : out->name();
    if (to_layout0 && !is_used(graph, out)) continue;
    // The name goes to the new output or to the Transpose that takes this one's place.
    graph.rename_value(out, graph.unique_name(out->name()));
  }
  Node* node =
      graph.add_node(old->op_type(), old->name(), inputs, names, old->opset(), old->domain());
  for (auto& [attr_name, attribute] : attributes) node->set_attr(attr_name, std::move(attribute));
  for (size_t i = 0; i < names.size(); ++i) {
    if (!to_layout0 && node->output(i)) node->output(i)->type = old->output(i)->type;
  }
  infer_node(*node);
  for (size_t i = 0; i < names.size(); ++i) {
    Value* out = old->output(i);
    if (!out || !is_used(graph, out)) continue;
    Value* result = node->output(i);
    if (to_layout0) {
      // Y [seq, dirs, batch, hidden] -> [batch, seq, dirs, hidden]; Y_h, Y_c swap batch and dirs.
      std::vector<int64_t> perm =
          i == kY ? std::vector<int64_t>{2, 0, 1, 3} : std::vector<int64_t>{1, 0, 2};
      result = add_transpose(graph, cat(node->name(), "/", kOutputNames[i], "_to_layout1"), result,
                             original[i], perm, node->opset(), &out->type);
    }
    graph.replace_all_uses(out, result);
  }
  graph.remove_node(old);
}

bool canonicalize_node(Graph& graph, Node* node, const RecurrentOp& op, PassStats& stats) {
  bool to_layout0 = node->attr_int("layout", 0) == 1;
  int64_t attributes_changed = canonicalize_attributes(*node, op);
  std::vector<Value*> inputs = node->inputs();
  bool inputs_changed = false;
  if (!node->input(kB)) {
    if (Value* bias = zero_bias(graph, *node, op)) {
      inputs.resize(std::max(inputs.size(), kB + 1), nullptr);
      inputs[kB] = bias;
      inputs_changed = true;
      ++stats["biases added"];
    }
  }
  if (to_layout0) {
    // X [batch, seq, input] -> [seq, batch, input]; initial_h, initial_c swap batch and dirs.
    for (size_t i : {kX, kInitialH, kInitialC}) {
      if (i >= inputs.size() || !inputs[i]) continue;
      inputs[i] = add_transpose(graph, cat(node->name(), "/", kInputNames[i], "_to_layout0"),
                                inputs[i], graph.unique_name(inputs[i]->name() + "_layout0"),
                                {1, 0, 2}, node->opset(), nullptr);
    }
    node->remove_attr("layout");
    ++stats["layouts rewritten"];
  }
  if (attributes_changed) stats["attributes made canonical"] += attributes_changed;
  if (to_layout0 || inputs.size() > node->num_inputs()) {
    rebuild(graph, node, inputs, node->attributes(), to_layout0);
  } else if (inputs_changed) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] != node->input(i)) node->set_input(i, inputs[i]);
    }
  }
  return to_layout0 || inputs_changed || attributes_changed > 0;
}

bool canonicalize_in_graph(Graph& graph, PassStats& stats) {
  std::vector<std::pair<Node*, const RecurrentOp*>> recurrent;
  for (const auto& node : graph.nodes()) {
    if (!node->domain().empty() && node->domain() != "ai.onnx") continue;
    for (const RecurrentOp& op : kRecurrentOps) {
      if (node->op_type() == op.op_type) recurrent.emplace_back(node.get(), &op);
    }
  }
  bool changed = false;
  for (const auto& [node, op] : recurrent) {
    changed = canonicalize_node(graph, node, *op, stats) || changed;
  }
  if (changed) graph.sort_topologically();  // Transposes and rebuilt nodes were appended
  return changed;
}

}  // namespace

bool canonicalize_recurrent(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  bool changed = false;
  for_each_graph(model,
                 [&](Graph& graph) { changed = canonicalize_in_graph(graph, stats) || changed; });
  if (changed) infer_graph(*model.graph);
  return changed;
}

}  // namespace rnnc
