// Type and shape inference for the recurrent ops LSTM, GRU and RNN (ai.onnx opsets 7 and 14).
//
// The three ops share one signature: X, W, R, optional B, sequence_lens, initial_h (and for LSTM
// initial_c, P) in; optional Y, Y_h (and for LSTM Y_c) out. They differ only in how many gate
// blocks W and R stack (LSTM 4: iofc, GRU 3: zrh, RNN 1) and how many activation functions each
// direction takes (LSTM 3, GRU 2, RNN 1), so one inference function serves all three.
//
// Every attribute is validated here, so a model that imports is one the reference kernel
// (ir/reference/kernels_recurrent.cc) can run; docs/ops/recurrent.md states the semantics.
// Shapes are checked only where both sides are known sizes: symbolic dims pass through.
#include <algorithm>
#include <cctype>

#include "ir/op_schema.h"

namespace rnnc {

namespace {

// What distinguishes the three ops for inference.
struct RecurrentOp {
  int gates;                      // gate blocks stacked along W's and R's dim 1
  int activations_per_direction;  // f (RNN); f, g (GRU); f, g, h (LSTM)
  const char* activation_roles;   // for messages
  bool has_cell;                  // LSTM: initial_c, P inputs and Y_c output
};

constexpr RecurrentOp kLstm{4, 3, "f, g, h", true};
constexpr RecurrentOp kGru{3, 2, "f, g", false};
constexpr RecurrentOp kRnn{1, 1, "f", false};

// Input positions, common to the three ops.
constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6,
                 kP = 7;

// The activation functions the spec lists, and which of activation_alpha / activation_beta each
// one consumes (see docs/ops/recurrent.md for how the lists are read).
struct ActivationSpec {
  const char* name;
  bool takes_alpha;
  bool takes_beta;
};

// clang-format off
constexpr ActivationSpec kActivationSpecs[] = {
    // name             alpha  beta
    {"Relu",            false, false},
    {"Tanh",            false, false},
    {"Sigmoid",         false, false},
    {"Affine",          true,  true},
    {"LeakyRelu",       true,  false},
    {"ThresholdedRelu", true,  false},
    {"ScaledTanh",      true,  true},
    {"HardSigmoid",     true,  true},
    {"Elu",             true,  false},
    {"Softsign",        false, false},
    {"Softplus",        false, false},
};
// clang-format on

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Names are matched case-insensitively, as exporters write both "Tanh" and "tanh".
const ActivationSpec* find_activation(const std::string& name) {
  for (const ActivationSpec& spec : kActivationSpecs) {
    if (lowercase(spec.name) == lowercase(name)) return &spec;
  }
  return nullptr;
}

std::string activation_list() {
  std::string names;
  for (const ActivationSpec& spec : kActivationSpecs) {
    names += (names.empty() ? "" : ", ") + std::string(spec.name);
  }
  return names;
}

// Checks 'activations', 'activation_alpha' and 'activation_beta' together.
void check_activations(const InferenceContext& context, const RecurrentOp& op,
                       int64_t num_directions, const std::string& direction) {
  const Node& node = context.node();
  std::vector<std::string> names = node.attr_strings("activations");
  if (node.has_attr("activations")) {
    size_t expected = static_cast<size_t>(op.activations_per_direction * num_directions);
    // RNN's schema default is ["Tanh", "Tanh"] whatever the direction, so exporters that write
    // the default out give a single-direction RNN two entries; that exact list is accepted.
    bool rnn_default = node.op_type() == "RNN" && num_directions == 1 && names.size() == 2 &&
                       lowercase(names[0]) == "tanh" && lowercase(names[1]) == "tanh";
    if (names.size() != expected && !rnn_default) {
      context.fail(cat("attribute 'activations' has ", names.size(), " entries, expected ",
                       expected, " (", op.activation_roles,
                       num_directions == 2 ? " for forward, then for reverse)"
                                           : " for direction '" + direction + "')"));
    }
    if (rnn_default) names.resize(1);
  }
  size_t alpha_takers = 0, beta_takers = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    const ActivationSpec* spec = find_activation(names[k]);
    if (!spec) {
      context.fail(cat("attribute 'activations'[", k, "] = '", names[k],
                       "' is not a recurrent activation (one of ", activation_list(), ")"));
    }
    alpha_takers += spec->takes_alpha;
    beta_takers += spec->takes_beta;
  }
  // Values past the last activation that takes one would be silently ignored; that only happens
  // when the exporter meant another reading of the lists, so it is an error rather than a guess.
  for (const auto& [attribute, takers] :
       {std::pair<const char*, size_t>{"activation_alpha", alpha_takers},
        std::pair<const char*, size_t>{"activation_beta", beta_takers}}) {
    size_t count = node.attr_floats(attribute).size();
    if (count > takers) {
      context.fail(cat("attribute '", attribute, "' has ", count, " values, but only ", takers,
                       " of the activations take one (values are consumed, in order, only by "
                       "the activations that use them)"));
    }
  }
}

// One expected dim with the name a message shows for it: "4*hidden_size=512".
struct NamedDim {
  std::string name;
  Dim dim;
};

// Fails if the input's rank differs or a known dim differs from a known expected dim (an input of
// unknown rank passes: nothing about it is known).
void check_shape(const InferenceContext& context, size_t index, const char* input_name,
                 const std::vector<NamedDim>& expected) {
  if (!context.input_type(index).shape) return;
  const Shape& shape = *context.input_type(index).shape;
  bool ok = shape.size() == expected.size();
  for (size_t axis = 0; ok && axis < shape.size(); ++axis) {
    const Dim& want = expected[axis].dim;
    ok = !(shape[axis].is_known() && want.is_known() && shape[axis].value() != want.value());
  }
  if (ok) return;
  std::string wanted;
  for (const NamedDim& named : expected) {
    wanted += (wanted.empty() ? "" : ", ") + named.name + "=" + named.dim.to_string();
  }
  context.fail(cat("input '", input_name, "' has shape ", shape_to_string(shape), ", expected [",
                   wanted, "]"));
}

// Takes a better-determined candidate: a known size beats a symbolic dim beats an unknown one.
void refine(Dim& dim, const Dim& candidate) {
  if (!dim.is_known() && candidate.is_known()) {
    dim = candidate;
  } else if (dim.is_unknown() && !candidate.is_unknown()) {
    dim = candidate;
  }
}

// The dim at `axis` of an optional input, or unknown when the input is absent or of another rank
// (check_shape reports the latter).
Dim optional_dim(const InferenceContext& context, size_t index, size_t rank, size_t axis) {
  if (!context.has_input(index) || !context.input_type(index).shape) return Dim::unknown();
  const Shape& shape = *context.input_type(index).shape;
  return shape.size() == rank ? shape[axis] : Dim::unknown();
}

void check_element_type(const InferenceContext& context, size_t index, const char* input_name,
                        DType x_dtype) {
  if (!context.has_input(index)) return;
  DType dtype = context.input_type(index).dtype;
  if (dtype != DType::kUndefined && x_dtype != DType::kUndefined && dtype != x_dtype) {
    context.fail(cat("input '", input_name, "' has element type ", dtype_onnx_name(dtype),
                     ", expected ", dtype_onnx_name(x_dtype), " (the element type of X)"));
  }
}

void infer_recurrent(InferenceContext& context, const RecurrentOp& op) {
  const Node& node = context.node();

  // ---- attributes ----
  std::string direction = node.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    context.fail(cat("attribute 'direction' = '", direction,
                     "', must be one of forward, reverse, bidirectional"));
  }
  int64_t num_directions = direction == "bidirectional" ? 2 : 1;
  if (node.has_attr("layout") && node.opset() < 14) {
    context.fail("attribute 'layout' exists only from opset 14");
  }
  int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) {
    context.fail(cat("attribute 'layout' = ", layout, ", must be 0 or 1"));
  }
  if (node.has_attr("hidden_size") && node.attr_int("hidden_size", 0) <= 0) {
    context.fail(
        cat("attribute 'hidden_size' = ", node.attr_int("hidden_size", 0), ", must be > 0"));
  }
  if (node.has_attr("clip") && !(node.attr_float("clip", 0) > 0)) {
    context.fail(cat("attribute 'clip' = ", node.attr_float("clip", 0), ", must be > 0"));
  }
  if (op.has_cell) {
    int64_t input_forget = node.attr_int("input_forget", 0);
    if (input_forget != 0 && input_forget != 1) {
      context.fail(cat("attribute 'input_forget' = ", input_forget, ", must be 0 or 1"));
    }
  }
  check_activations(context, op, num_directions, direction);

  // ---- element types ----
  DType dtype = context.input_type(kX).dtype;
  if (dtype != DType::kUndefined && dtype != DType::kFloat16 && dtype != DType::kFloat32 &&
      dtype != DType::kFloat64) {
    context.fail(cat("input 'X' has element type ", dtype_onnx_name(dtype),
                     ", expected float16, float or double"));
  }
  check_element_type(context, kW, "W", dtype);
  check_element_type(context, kR, "R", dtype);
  check_element_type(context, kB, "B", dtype);
  check_element_type(context, kInitialH, "initial_h", dtype);
  if (op.has_cell) {
    check_element_type(context, kInitialC, "initial_c", dtype);
    check_element_type(context, kP, "P", dtype);
  }
  if (context.has_input(kSequenceLens)) {
    DType lens_dtype = context.input_type(kSequenceLens).dtype;
    if (lens_dtype != DType::kUndefined && lens_dtype != DType::kInt32) {
      context.fail(cat("input 'sequence_lens' has element type ", dtype_onnx_name(lens_dtype),
                       ", expected int32"));
    }
  }

  // ---- the dims every shape is made of ----
  // X of unknown rank still gives outputs of known rank, with unknown dims.
  const Shape x_shape = context.input_type(kX).shape.value_or(Shape(3, Dim::unknown()));
  if (x_shape.size() != 3) {
    context.fail(cat("input 'X' has shape ", shape_to_string(x_shape), ", expected rank 3 ",
                     layout == 0 ? "[seq_length, batch_size, input_size]"
                                 : "[batch_size, seq_length, input_size]"));
  }
  Dim seq_length = x_shape[layout == 0 ? 0 : 1];
  Dim batch = x_shape[layout == 0 ? 1 : 0];
  Dim input_size = x_shape[2];
  Dim directions(num_directions);
  Dim gates(op.gates);
  // hidden_size: the attribute, else R's last dim; either may be refined by the other inputs.
  Dim hidden = node.has_attr("hidden_size") ? Dim(node.attr_int("hidden_size", 0))
                                            : optional_dim(context, kR, 3, 2);
  refine(hidden, optional_dim(context, kR, 3, 1).exact_div(gates));
  refine(hidden, optional_dim(context, kW, 3, 1).exact_div(gates));
  refine(hidden, optional_dim(context, kB, 2, 1).exact_div(Dim(2 * op.gates)));
  refine(hidden, optional_dim(context, kInitialH, 3, 2));
  refine(input_size, optional_dim(context, kW, 3, 2));
  size_t state_batch_axis = layout == 0 ? 1 : 0;
  refine(batch, optional_dim(context, kSequenceLens, 1, 0));
  refine(batch, optional_dim(context, kInitialH, 3, state_batch_axis));
  if (op.has_cell) {
    refine(hidden, optional_dim(context, kP, 2, 1).exact_div(Dim(3)));
    refine(hidden, optional_dim(context, kInitialC, 3, 2));
    refine(batch, optional_dim(context, kInitialC, 3, state_batch_axis));
  }

  // ---- input shapes ----
  std::string gates_name = op.gates == 1 ? "hidden_size" : cat(op.gates, "*hidden_size");
  NamedDim nd{"num_directions", directions};
  check_shape(context, kW, "W", {nd, {gates_name, gates * hidden}, {"input_size", input_size}});
  check_shape(context, kR, "R", {nd, {gates_name, gates * hidden}, {"hidden_size", hidden}});
  if (context.has_input(kB)) {
    check_shape(context, kB, "B", {nd, {cat(2 * op.gates, "*hidden_size"), 2 * gates * hidden}});
  }
  if (context.has_input(kSequenceLens)) {
    check_shape(context, kSequenceLens, "sequence_lens", {{"batch_size", batch}});
  }
  std::vector<NamedDim> state_dims = {nd, {"batch_size", batch}, {"hidden_size", hidden}};
  if (layout == 1) std::swap(state_dims[0], state_dims[1]);
  if (context.has_input(kInitialH)) check_shape(context, kInitialH, "initial_h", state_dims);
  if (op.has_cell && context.has_input(kInitialC)) {
    check_shape(context, kInitialC, "initial_c", state_dims);
  }
  if (op.has_cell && context.has_input(kP)) {
    check_shape(context, kP, "P", {nd, {"3*hidden_size", Dim(3) * hidden}});
  }

  // ---- outputs: Y, Y_h (and Y_c) ----
  Shape y = layout == 0 ? Shape{seq_length, directions, batch, hidden}
                        : Shape{batch, seq_length, directions, hidden};
  Shape state = layout == 0 ? Shape{directions, batch, hidden} : Shape{batch, directions, hidden};
  context.set_output(0, dtype, y);
  context.set_output(1, dtype, state);
  if (op.has_cell) context.set_output(2, dtype, state);
}

void infer_lstm(InferenceContext& context) { infer_recurrent(context, kLstm); }
void infer_gru(InferenceContext& context) { infer_recurrent(context, kGru); }
void infer_rnn(InferenceContext& context) { infer_recurrent(context, kRnn); }

}  // namespace

void register_recurrent_schemas(std::vector<OpSchema>& registry) {
  // {op, since opset, inputs min..max, outputs min..max (all outputs are optional), inference}
  registry.push_back({"LSTM", 7, 3, 8, 0, 3, infer_lstm});
  registry.push_back({"GRU", 7, 3, 6, 0, 2, infer_gru});
  registry.push_back({"RNN", 7, 3, 6, 0, 2, infer_rnn});
}

}  // namespace rnnc
