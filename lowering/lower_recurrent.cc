#include "lowering/lower_recurrent.h"

#include <Halide.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "ir/error.h"
#include "ir/quantization.h"
#include "lowering/quantized_operands.h"

namespace rnnc {

namespace {

// Input and output positions, common to the three ops.
constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6,
                 kP = 7;

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// ---- reading the node --------------------------------------------------------------------------

// The spec's activation list: which of activation_alpha / activation_beta each consumes, and the
// defaults of the ONNX operator of the same name (docs/ops/recurrent.md).
struct ActivationInfo {
  RecurrentActivation::Kind kind;
  bool takes_alpha, takes_beta;
  float default_alpha, default_beta;
};

constexpr ActivationInfo kActivations[] = {
    {RecurrentActivation::Kind::kRelu, false, false, 0.0f, 0.0f},
    {RecurrentActivation::Kind::kTanh, false, false, 0.0f, 0.0f},
    {RecurrentActivation::Kind::kSigmoid, false, false, 0.0f, 0.0f},
    {RecurrentActivation::Kind::kAffine, true, true, 1.0f, 0.0f},
    {RecurrentActivation::Kind::kLeakyRelu, true, false, 0.01f, 0.0f},
    {RecurrentActivation::Kind::kThresholdedRelu, true, false, 1.0f, 0.0f},
    {RecurrentActivation::Kind::kScaledTanh, true, true, 1.0f, 1.0f},
    {RecurrentActivation::Kind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {RecurrentActivation::Kind::kElu, true, false, 1.0f, 0.0f},
    {RecurrentActivation::Kind::kSoftsign, false, false, 0.0f, 0.0f},
    {RecurrentActivation::Kind::kSoftplus, false, false, 0.0f, 0.0f},
};

// 'activations' with 'activation_alpha' / 'activation_beta', read as the reference kernel reads
// them: per_direction * num_directions entries, forward direction first.
std::vector<RecurrentActivation> read_activations(const Node& node,
                                                  const std::vector<std::string>& defaults,
                                                  int num_directions) {
  std::vector<std::string> names;
  for (int d = 0; d < num_directions; ++d)
    names.insert(names.end(), defaults.begin(), defaults.end());
  if (node.has_attr("activations")) {
    std::vector<std::string> given = node.attr_strings("activations");
    // RNN's schema default ["Tanh", "Tanh"] is accepted for one direction (exporters write it).
    if (node.op_type() == "RNN" && num_directions == 1 && given.size() == 2 &&
        lowercase(given[0]) == "tanh" && lowercase(given[1]) == "tanh") {
      given.resize(1);
    }
    if (given.size() != names.size()) {
      raise_invalid_model(cat(node.describe(), ": attribute 'activations' has ", given.size(),
                              " entries, expected ", names.size()));
    }
    names = given;
  }
  const std::vector<float> alphas = node.attr_floats("activation_alpha");
  const std::vector<float> betas = node.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<RecurrentActivation> activations;
  for (const std::string& name : names) {
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& entry : kActivations) {
      if (lowercase(activation_name(entry.kind)) == lowercase(name)) info = &entry;
    }
    if (!info) {
      raise_invalid_model(
          cat(node.describe(), ": attribute 'activations': unknown activation '", name, "'"));
    }
    RecurrentActivation activation{info->kind, info->default_alpha, info->default_beta};
    if (info->takes_alpha && next_alpha < alphas.size()) activation.alpha = alphas[next_alpha++];
    if (info->takes_beta && next_beta < betas.size()) activation.beta = betas[next_beta++];
    activations.push_back(activation);
  }
  if (next_alpha < alphas.size() || next_beta < betas.size()) {
    raise_invalid_model(
        cat(node.describe(), ": attribute 'activation_alpha' / 'activation_beta' have ",
            alphas.size(), " / ", betas.size(), " values, but the activations consume only ",
            next_alpha, " / ", next_beta));
  }
  return activations;
}

// A weight input's data: it must be a constant fixed at compile time (an initializer or a folded
// value; a graph input with a default may be overridden, so it is not one) of element type float.
const Tensor* constant_weight(const Node& node, size_t index, const char* name, bool required) {
  const Value* value = node.input(index);
  if (!value) {
    if (required) raise_invalid_model(cat(node.describe(), ": input '", name, "' is missing"));
    return nullptr;
  }
  if (!value->is_constant() || value->is_graph_input()) {
    raise_unsupported(cat(node.describe(), ": input '", name,
                          "' is computed at run time; Halide lowering needs constant weights"));
  }
  const Tensor& tensor = *value->constant();
  if (tensor.dtype() != DType::kFloat32) {
    raise_unsupported(cat(node.describe(), ": element type ", dtype_onnx_name(tensor.dtype()),
                          " is not lowered to Halide (float32 only)"));
  }
  return &tensor;
}

void check_shape(const Node& node, const Tensor& tensor, const char* name,
                 const std::vector<int64_t>& expected) {
  if (tensor.shape() != expected) {
    raise_invalid_model(cat(node.describe(), ": input '", name, "' has shape ",
                            shape_text(tensor.shape()), ", expected ", shape_text(expected)));
  }
}

std::optional<Tensor> constant_input(const Node& node, size_t index) {
  const Value* value = node.input(index);
  if (value && value->is_constant() && !value->is_graph_input()) return *value->constant();
  return std::nullopt;
}

// Halide buffers (without the LargeBuffers feature) must stay below 2 GB.
constexpr int64_t kMaxBufferBytes = std::numeric_limits<int32_t>::max();

// ---- slot layouts ------------------------------------------------------------------------------

struct AxisSizes {
  int64_t seq, batch, dir, hidden, input;
};

std::vector<std::string> split_axes(const std::string& layout) {
  std::vector<std::string> axes;
  size_t start = 0;
  while (start <= layout.size()) {
    size_t end = layout.find('_', start);
    if (end == std::string::npos) end = layout.size();
    axes.push_back(layout.substr(start, end - start));
    start = end + 1;
  }
  return axes;
}

using Axis = RecurrentAxis;
using Axes = std::vector<RecurrentAxis>;

int64_t axis_size(Axis axis, const AxisSizes& sizes) {
  switch (axis) {
    case Axis::kSeq:
      return sizes.seq;
    case Axis::kBatch:
      return sizes.batch;
    case Axis::kDir:
      return sizes.dir;
    case Axis::kHidden:
      return sizes.hidden;
    case Axis::kInput:
      return sizes.input;
    case Axis::kDirHidden:
      return sizes.dir * sizes.hidden;
  }
  return 0;
}

// A slot's shape without allocating (a slot has at most 4 axes).
struct SlotShape {
  int64_t dims[4] = {};
  size_t rank = 0;
  bool operator==(const std::vector<int64_t>& shape) const {
    return shape.size() == rank && std::equal(shape.begin(), shape.end(), dims);
  }
  std::vector<int64_t> to_vector() const { return {dims, dims + rank}; }
};

SlotShape layout_shape(const Axes& axes, const AxisSizes& sizes) {
  SlotShape shape;
  RNNC_CHECK(axes.size() <= 4, "a recurrent slot layout with ", axes.size(), " axes");
  for (Axis axis : axes) shape.dims[shape.rank++] = axis_size(axis, sizes);
  return shape;
}

// Element stride of a logical axis (seq, batch, dir, hidden, input) in a slot's layout; 0 for a
// dir the layout squeezed out (it has one index).
int64_t layout_stride(const Axes& axes, const AxisSizes& sizes, Axis axis) {
  int64_t stride = 1;
  for (size_t i = axes.size(); i-- > 0;) {
    if (axes[i] == axis) return stride;
    if (axes[i] == Axis::kDirHidden && (axis == Axis::kDir || axis == Axis::kHidden)) {
      return axis == Axis::kHidden ? stride : stride * sizes.hidden;
    }
    stride *= axis_size(axes[i], sizes);
  }
  return 0;
}

// A slot's layout, checked: every axis of `required` once, `innermost` last (hidden may come as
// dirhidden), dir optional for a one-direction node.
Axes parse_layout(const std::string& describe, const char* slot, const std::string& layout,
                  const std::vector<std::string>& required, const std::string& innermost,
                  int num_directions) {
  std::vector<std::string> axes = split_axes(layout);
  std::vector<std::string> seen;
  for (const std::string& axis : axes) {
    if (axis == "dirhidden") {
      seen.push_back("dir");
      seen.push_back("hidden");
    } else {
      seen.push_back(axis);
    }
  }
  if (num_directions == 1 && std::find(seen.begin(), seen.end(), "dir") == seen.end() &&
      std::find(required.begin(), required.end(), "dir") != required.end()) {
    seen.push_back("dir");
  }
  std::vector<std::string> sorted_seen = seen, sorted_required = required;
  std::sort(sorted_seen.begin(), sorted_seen.end());
  std::sort(sorted_required.begin(), sorted_required.end());
  const std::string& last = axes.back();
  if (sorted_seen != sorted_required ||
      !(last == innermost || (innermost == "hidden" && last == "dirhidden"))) {
    raise_unsupported(cat(describe, ": ", slot, " layout '", layout,
                          "' is not one the Halide lowering reads or writes"));
  }
  const std::pair<const char*, Axis> names[] = {
      {"seq", Axis::kSeq},       {"batch", Axis::kBatch}, {"dir", Axis::kDir},
      {"hidden", Axis::kHidden}, {"input", Axis::kInput}, {"dirhidden", Axis::kDirHidden}};
  Axes parsed;
  for (const std::string& axis : axes) {
    for (const auto& [name, value] : names) {
      if (axis == name) parsed.push_back(value);
    }
  }
  return parsed;
}

}  // namespace

// ---- lowering ----------------------------------------------------------------------------------

RecurrentLayouts onnx_recurrent_layouts(const Node& node) {
  if (node.attr_int("layout", 0) == 1) {
    return {"batch_seq_input",      "batch_dir_hidden", "batch_dir_hidden",
            "batch_seq_dir_hidden", "batch_dir_hidden", "batch_dir_hidden"};
  }
  return {"seq_batch_input",      "dir_batch_hidden", "dir_batch_hidden",
          "seq_dir_batch_hidden", "dir_batch_hidden", "dir_batch_hidden"};
}

RecurrentLayouts annotated_recurrent_layouts(const Node& node) {
  RecurrentLayouts layouts = onnx_recurrent_layouts(node);
  const std::pair<const char*, std::string*> slots[] = {{"x", &layouts.x},
                                                        {"initial_h", &layouts.initial_h},
                                                        {"initial_c", &layouts.initial_c},
                                                        {"y", &layouts.y},
                                                        {"y_h", &layouts.y_h},
                                                        {"y_c", &layouts.y_c}};
  for (const auto& [slot, layout] : slots) {
    const std::string name = slot_layout_annotation(slot);
    if (node.has_attr(name)) *layout = node.attr_string(name, *layout);
  }
  return layouts;
}

std::unique_ptr<ExecutionBlock> lower_recurrent(const Node& node, HalideCache& cache) {
  return lower_recurrent(node, cache, onnx_recurrent_layouts(node));
}

namespace {

// One direction's ONNX weights: W [G * H, I], R [G * H, H], B [2 * G * H] (Wb then Rb) and
// P [3 * H] (LSTM peepholes i, o, f), rows of ONNX gate order; b and p may be null.
struct NodeWeights {
  const float* w;
  const float* r;
  const float* b;
  const float* p;
  int onnx_gates;
};

// Gate g of hidden unit j = jo * T + ji is column n = (jo * G + g) * T + ji of Wt, the bias and XW.
int64_t column(int64_t g, int64_t j, int64_t gates, int64_t tile) {
  return (j / tile * gates + g) * tile + j % tile;
}

// bias[n] = Wb + Rb of n's row (GRU linear_before_reset keeps the h gate's Rb apart, in rbh: rt
// multiplies it). Padding columns are zero.
void pack_bias(RecurrentBlock::Direction& part, const RecurrentSchedule& schedule,
               const NodeWeights& weights) {
  const RecurrentCell& cell = part.cell;
  const int64_t hidden = cell.hidden_size, tile = schedule.hidden_tile;
  const int64_t gates = static_cast<int64_t>(cell.gates.size());
  part.bias = Tensor(DType::kFloat32, {gates * schedule.padded_hidden});
  float* bias = part.bias.data<float>();
  const float* b = weights.b;
  for (int64_t g = 0; g < gates && b; ++g) {
    const int onnx_gate = cell.gates[static_cast<size_t>(g)];
    const bool fold_rb = !(cell.linear_before_reset && onnx_gate == kGruH);
    for (int64_t j = 0; j < hidden; ++j) {
      const int64_t row = onnx_gate * hidden + j;
      bias[column(g, j, gates, tile)] =
          b[row] + (fold_rb ? b[weights.onnx_gates * hidden + row] : 0.0f);
    }
  }
  if (cell.linear_before_reset) {
    part.rbh = Tensor(DType::kFloat32, {schedule.padded_hidden});
    if (b) {
      const float* rbh = b + (weights.onnx_gates + kGruH) * hidden;
      std::copy(rbh, rbh + hidden, part.rbh.data<float>());
    }
  }
}

// Float products: Wt in column panels (ni, k, no), R as [jo][k][g][ji].
void pack_float_weights(RecurrentBlock::Direction& part, const RecurrentSchedule& schedule,
                        const NodeWeights& weights) {
  const RecurrentCell& cell = part.cell;
  const int64_t hidden = cell.hidden_size, input_size = cell.input_size;
  const int64_t padded = schedule.padded_hidden, tile = schedule.hidden_tile;
  const int64_t gates = static_cast<int64_t>(cell.gates.size()), panel = projection_panel(schedule);
  part.wt = marshaled_weight_tensor(DType::kFloat32, {gates * padded / panel, input_size, panel});
  part.r = marshaled_weight_tensor(DType::kFloat32, {padded / tile, hidden, gates, tile});
  float* wt = part.wt.data<float>();
  float* rt = part.r.data<float>();
  for (int64_t g = 0; g < gates; ++g) {
    const int onnx_gate = cell.gates[static_cast<size_t>(g)];
    for (int64_t j = 0; j < hidden; ++j) {
      const int64_t jo = j / tile, ji = j % tile;
      const int64_t n = column(g, j, gates, tile), row = onnx_gate * hidden + j;
      for (int64_t k = 0; k < input_size; ++k) {
        wt[((n / panel) * input_size + k) * panel + n % panel] = weights.w[row * input_size + k];
      }
      for (int64_t k = 0; k < hidden; ++k) {
        rt[((jo * hidden + k) * gates + g) * tile + ji] = weights.r[row * hidden + k];
      }
    }
  }
}

// Integer products (recurrent_pipelines.h): Wt as (kl, ni, ko, no), R as (kl, ji, g, ko, jo),
// lane() consecutive k of one output innermost; per-output scale, column sum and zero point
// indexed like XW's n. Padding is zero. first_row: the direction's first row in wq and rq.
void pack_integer_weights(RecurrentBlock::Direction& part, const RecurrentSchedule& schedule,
                          const IntegerWeight& wq, const IntegerWeight& rq, int64_t first_row) {
  const RecurrentCell& cell = part.cell;
  const int64_t hidden = cell.hidden_size, input_size = cell.input_size;
  const int64_t padded = schedule.padded_hidden, tile = schedule.hidden_tile;
  const int64_t gates = static_cast<int64_t>(cell.gates.size()), n_extent = gates * padded;
  const int64_t panel = projection_panel(schedule);
  const int64_t lane = cell.quant->lane();
  const DType storage = cell.quant->wide_operands() ? DType::kInt16 : DType::kInt8;
  const int64_t ko_input = packed_ko(cell.quant->input_widths);
  const int64_t ko_hidden = packed_ko(cell.quant->state_widths);
  part.wq = marshaled_weight_tensor(storage, {n_extent / panel, ko_input, panel, lane});
  part.rq = marshaled_weight_tensor(storage, {padded / tile, ko_hidden, gates, tile, lane});
  for (Tensor* vector : {&part.w_scale, &part.r_scale})
    *vector = Tensor(DType::kFloat32, {n_extent});
  for (Tensor* vector : {&part.w_colsum, &part.w_zero, &part.r_colsum, &part.r_zero}) {
    *vector = Tensor(DType::kInt32, {n_extent});
  }
  auto store = [&](Tensor& packed, int64_t at, int16_t q) {
    if (storage == DType::kInt16) {
      packed.data<int16_t>()[at] = q;
    } else {
      packed.data<int8_t>()[at] = static_cast<int8_t>(q);
    }
  };
  for (int64_t g = 0; g < gates; ++g) {
    const int onnx_gate = cell.gates[static_cast<size_t>(g)];
    for (int64_t j = 0; j < hidden; ++j) {
      const int64_t jo = j / tile, ji = j % tile;
      const int64_t n = column(g, j, gates, tile);
      const int64_t row = first_row + onnx_gate * hidden + j;
      int32_t w_sum = 0, r_sum = 0;
      for (int64_t k = 0; k < input_size; ++k) {
        const int16_t q = wq.q[static_cast<size_t>(row * input_size + k)];
        store(part.wq, (((n / panel) * ko_input + k / lane) * panel + n % panel) * lane + k % lane,
              q);
        w_sum += q;
      }
      for (int64_t k = 0; k < hidden; ++k) {
        const int16_t q = rq.q[static_cast<size_t>(row * hidden + k)];
        store(part.rq, ((((jo * ko_hidden) + k / lane) * gates + g) * tile + ji) * lane + k % lane,
              q);
        r_sum += q;
      }
      part.w_scale.data<float>()[n] = wq.scale[static_cast<size_t>(row)];
      part.r_scale.data<float>()[n] = rq.scale[static_cast<size_t>(row)];
      part.w_zero.data<int32_t>()[n] = wq.zero_point[static_cast<size_t>(row)];
      part.r_zero.data<int32_t>()[n] = rq.zero_point[static_cast<size_t>(row)];
      part.w_colsum.data<int32_t>()[n] = w_sum;
      part.r_colsum.data<int32_t>()[n] = r_sum;
    }
  }
}

// LSTM peepholes [3][Hp] (i, o, f), padding zero.
void pack_peepholes(RecurrentBlock::Direction& part, const RecurrentSchedule& schedule,
                    const float* p) {
  const int64_t hidden = part.cell.hidden_size, padded = schedule.padded_hidden;
  part.peepholes = Tensor(DType::kFloat32, {3, padded});
  for (int64_t q = 0; q < 3; ++q) {
    std::copy(p + q * hidden, p + (q + 1) * hidden, part.peepholes.data<float>() + q * padded);
  }
}

}  // namespace

std::unique_ptr<ExecutionBlock> lower_recurrent(const Node& node, HalideCache& cache,
                                                const RecurrentLayouts& layouts) {
  auto block = std::make_unique<RecurrentBlock>();
  block->describe_ = node.describe();
  for (size_t i = 0; i < node.num_outputs() && i < (node.op_type() == "LSTM" ? 3u : 2u); ++i) {
    block->has_output_.push_back(node.output(i) != nullptr);
  }
  const std::string& op = node.op_type();
  int onnx_gates = 0;
  std::vector<std::string> default_activations;
  if (op == "LSTM") {
    block->op_ = RecurrentOp::kLstm;
    onnx_gates = 4;
    default_activations = {"Sigmoid", "Tanh", "Tanh"};
  } else if (op == "GRU") {
    block->op_ = RecurrentOp::kGru;
    onnx_gates = 3;
    default_activations = {"Sigmoid", "Tanh"};
  } else if (op == "RNN") {
    block->op_ = RecurrentOp::kRnn;
    onnx_gates = 1;
    default_activations = {"Tanh"};
  } else {
    raise_unsupported(cat(node.describe(), ": not a recurrent op"));
  }
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    raise_unsupported(cat(node.describe(), ": domain '", node.domain(), "' is not ai.onnx"));
  }
  const Value* x = node.input(kX);
  if (!x || x->type.dtype != DType::kFloat32) {
    raise_unsupported(cat(node.describe(), ": element type ",
                          x ? dtype_onnx_name(x->type.dtype) : "?",
                          " is not lowered to Halide (float32 only)"));
  }

  // Attributes.
  const std::string direction = node.attr_string("direction", "forward");
  std::vector<bool> reverse;
  if (direction == "forward" || direction == "reverse") {
    reverse = {direction == "reverse"};
  } else if (direction == "bidirectional") {
    reverse = {false, true};
  } else {
    raise_invalid_model(cat(node.describe(), ": attribute 'direction' = '", direction,
                            "', must be one of forward, reverse, bidirectional"));
  }
  block->direction_name_ = direction;
  const int dirs = static_cast<int>(reverse.size());
  const int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) {
    raise_invalid_model(
        cat(node.describe(), ": attribute 'layout' = ", layout, ", must be 0 or 1"));
  }
  const std::string& describe = block->describe_;
  const std::vector<std::string> state_axes = {"dir", "batch", "hidden"};
  block->x_axes_ = parse_layout(describe, "X", layouts.x, {"seq", "batch", "input"}, "input", dirs);
  block->initial_h_axes_ =
      parse_layout(describe, "initial_h", layouts.initial_h, state_axes, "hidden", dirs);
  block->initial_c_axes_ =
      parse_layout(describe, "initial_c", layouts.initial_c, state_axes, "hidden", dirs);
  block->y_axes_ =
      parse_layout(describe, "Y", layouts.y, {"seq", "dir", "batch", "hidden"}, "hidden", dirs);
  block->y_h_axes_ = parse_layout(describe, "Y_h", layouts.y_h, state_axes, "hidden", dirs);
  block->y_c_axes_ = parse_layout(describe, "Y_c", layouts.y_c, state_axes, "hidden", dirs);
  std::optional<float> clip;
  if (node.has_attr("clip")) {
    clip = node.attr_float("clip", 0);
    if (!(*clip > 0))
      raise_invalid_model(cat(node.describe(), ": attribute 'clip' = ", *clip, ", must be > 0"));
  }
  const std::vector<RecurrentActivation> activations =
      read_activations(node, default_activations, dirs);
  const bool input_forget = op == "LSTM" && node.attr_int("input_forget", 0) != 0;
  const bool linear_before_reset = op == "GRU" && node.attr_int("linear_before_reset", 0) != 0;
  std::optional<ActivationQuant> activation_quantization;
  if (has_activation_quant(node)) activation_quantization = activation_quant(node);

  // Weights: constants, with shapes checked as the reference kernel checks them.
  const Tensor* w = constant_weight(node, kW, "W", true);
  const Tensor* r = constant_weight(node, kR, "R", true);
  const Tensor* b = constant_weight(node, kB, "B", false);
  const Tensor* p = op == "LSTM" ? constant_weight(node, kP, "P", false) : nullptr;
  int64_t hidden = node.attr_int("hidden_size", r->rank() == 3 ? r->dim(2) : 0);
  if (hidden <= 0) {
    raise_invalid_model(
        cat(node.describe(), ": attribute 'hidden_size' = ", hidden, ", must be > 0"));
  }
  if (w->rank() != 3) {
    raise_invalid_model(cat(node.describe(), ": input 'W' has shape ", shape_text(w->shape()),
                            ", expected rank 3"));
  }
  const int64_t input_size = w->dim(2);
  check_shape(node, *w, "W", {dirs, onnx_gates * hidden, input_size});
  check_shape(node, *r, "R", {dirs, onnx_gates * hidden, hidden});
  if (b) check_shape(node, *b, "B", {dirs, 2 * onnx_gates * hidden});
  if (p) check_shape(node, *p, "P", {dirs, 3 * hidden});
  // Every buffer a pipeline reads must stay below 2 GB (Halide without LargeBuffers); the
  // marshaled weights are at most 4 gates x (hidden + 63) wide.
  const int64_t widest = 4 * (hidden + 63);
  if (widest * std::max(hidden, input_size) * 4 > kMaxBufferBytes) {
    raise_unsupported(cat(node.describe(), ": hidden_size ", hidden, " / input_size ", input_size,
                          " give weights beyond the Halide lowering's 2 GB buffer limit"));
  }
  block->hidden_size_ = hidden;
  block->input_size_ = input_size;
  std::optional<IntegerWeight> wq, rq;
  if (activation_quantization) {
    // Reduced along k (axis 2): scales per tensor, direction or row.
    wq = integer_weight(node, kW, "W", *w, 2);
    rq = integer_weight(node, kR, "R", *r, 2);
  }
  block->constant_sequence_lens_ = constant_input(node, kSequenceLens);
  block->may_have_sequence_lens_ = node.input(kSequenceLens) != nullptr;
  block->constant_initial_h_ = constant_input(node, kInitialH);
  if (op == "LSTM") block->constant_initial_c_ = constant_input(node, kInitialC);

  // One cell per direction (activations may differ); every direction shares the schedule.
  const size_t per_direction = default_activations.size();
  for (int d = 0; d < dirs; ++d) {
    RecurrentBlock::Direction direction_part;
    direction_part.reverse = reverse[static_cast<size_t>(d)];
    RecurrentCell& cell = direction_part.cell;
    cell.op = block->op_;
    cell.hidden_size = static_cast<int>(hidden);
    cell.input_size = static_cast<int>(input_size);
    if (op == "LSTM") {
      cell.gates = input_forget ? std::vector<int>{kLstmI, kLstmO, kLstmC}
                                : std::vector<int>{kLstmI, kLstmO, kLstmF, kLstmC};
    } else if (op == "GRU") {
      cell.gates = {kGruZ, kGruR, kGruH};
    } else {
      cell.gates = {0};
    }
    cell.activations.assign(
        activations.begin() + static_cast<std::ptrdiff_t>(d * per_direction),
        activations.begin() + static_cast<std::ptrdiff_t>((d + 1) * per_direction));
    cell.clip = clip;
    cell.input_forget = input_forget;
    cell.peepholes = p != nullptr;
    cell.linear_before_reset = linear_before_reset;
    if (activation_quantization) {
      // Zero-point terms where a stored weight has a nonzero zero point (uint8 shifted into
      // int8 with a zero point other than 128, or int8 with zero points), as the GEMM has them.
      cell.quant =
          recurrent_quant(*activation_quantization, static_cast<int>(input_size),
                          static_cast<int>(hidden), wq->bits, wq->has_zero_points, rq->bits,
                          rq->has_zero_points, u8_products_per_lane(cache.kernel_target()));
      cell.quant->count_overflow = cache.count_overflow();
    }
    block->directions_.push_back(std::move(direction_part));
  }
  block->schedule_ = choose_recurrent_schedule(block->directions_[0].cell, cache.kernel_target());
  block->batched_schedule_ =
      choose_recurrent_schedule(block->directions_[0].cell, cache.kernel_target(),
                                /*batched=*/true);
  const RecurrentSchedule& schedule = block->schedule_;

  // Pack the weights (layouts in recurrent_pipelines.h) per direction.
  for (int d = 0; d < dirs; ++d) {
    RecurrentBlock::Direction& part = block->directions_[static_cast<size_t>(d)];
    const NodeWeights weights{w->data<float>() + d * onnx_gates * hidden * input_size,
                              r->data<float>() + d * onnx_gates * hidden * hidden,
                              b ? b->data<float>() + d * 2 * onnx_gates * hidden : nullptr,
                              p ? p->data<float>() + d * 3 * hidden : nullptr, onnx_gates};
    pack_bias(part, schedule, weights);
    if (part.cell.quant) {
      pack_integer_weights(part, schedule, *wq, *rq, d * onnx_gates * hidden);
    } else {
      pack_float_weights(part, schedule, weights);
    }
    if (p) pack_peepholes(part, schedule, weights.p);
  }

  // Compile (or load) the pipelines.
  const RecurrentCell& first = block->directions_[0].cell;
  block->projection_ =
      cache.get(input_projection_key(first, schedule),
                [&](const std::string& path, const std::string& name, const KernelTarget& target) {
                  compile_input_projection(first, schedule, path, name, target);
                });
  block->compile_ms = block->projection_.compile_ms;
  block->from_cache = block->projection_.from_cache;
  for (RecurrentBlock::Direction& part : block->directions_) {
    for (bool batched : {false, true}) {
      const RecurrentSchedule& step_schedule = batched ? block->batched_schedule_ : schedule;
      CompiledPipeline& step = batched ? part.batched_step : part.step;
      step = cache.get(
          recurrent_step_key(part.cell, step_schedule),
          [&](const std::string& path, const std::string& name, const KernelTarget& target) {
            compile_recurrent_step(part.cell, step_schedule, path, name, target);
          });
      block->compile_ms += step.compile_ms;
      block->from_cache = block->from_cache && step.from_cache;
    }
  }
  block->nodes = {&node};
  block->plan.sequence = AxisPlan::kSequential;
  block->plan.batch = AxisPlan::kParallel;
  return block;
}

// ---- running -----------------------------------------------------------------------------------

namespace {
// " int8" / " int16" (the stored operand width) for integer products, "" for float.
std::string quant_tag(const RecurrentCell& cell) {
  if (!cell.quant) return "";
  return cell.quant->wide_operands() ? " int16" : " int8";
}
}  // namespace

std::string RecurrentBlock::kind() const {
  const char* name = op_ == RecurrentOp::kLstm ? "lstm" : op_ == RecurrentOp::kGru ? "gru" : "rnn";
  return cat("halide ", name, quant_tag(directions_[0].cell), " ", direction_name_,
             " h=", hidden_size_, " in=", input_size_);
}

void RecurrentBlock::add_overflow(const int64_t counts[4]) const {
  for (int i = 0; i < 4; ++i) overflow_[i].fetch_add(counts[i], std::memory_order_relaxed);
}

std::vector<OverflowCounts> RecurrentBlock::overflow_counts() const {
  const RecurrentCell& cell = directions_[0].cell;
  if (!cell.quant || !cell.quant->count_overflow) return {};
  OverflowCounts counts;
  counts.node = describe_;
  counts.activation_bits = cell.quant->activations.bits;
  counts.accumulation_bits = cell.quant->activations.accumulation_bits;
  counts.above = overflow_[0].load();
  counts.below = overflow_[1].load();
  counts.sums_beyond = overflow_[2].load();
  counts.values = overflow_[3].load();
  return {counts};
}

rn_recurrent RecurrentBlock::compiled_loop() const {
  rn_recurrent loop;
  std::memset(&loop, 0, sizeof loop);
  const RecurrentCell& first = directions_[0].cell;
  loop.projection = projection_.argv_entry;
  loop.lstm = op_ == RecurrentOp::kLstm;
  loop.directions = num_directions();
  loop.hidden = hidden_size_;
  loop.input = input_size_;
  loop.gates = static_cast<int64_t>(first.gates.size());
  loop.padded = schedule_.padded_hidden;
  loop.tile = schedule_.hidden_tile;
  loop.batch_pad = batched_schedule_.batch_pad;
  loop.wt_panel = projection_panel(schedule_);
  loop.alternate_tiles = schedule_.alternate_tiles;
  loop.xw_chunk_bytes = schedule_.xw_chunk_bytes;
  loop.row_tile = schedule_.stream_weights ? schedule_.gemm_rows : 0;
  if (first.quant) {
    loop.quantized = 1;
    loop.weight_bits = first.quant->wide_operands() ? 16 : 8;
    loop.zero_points = first.quant->weight_zero_points;
    loop.count_overflow = first.quant->count_overflow;
    loop.lane = first.quant->lane();
    loop.w_ko = packed_ko(first.quant->input_widths);
    loop.r_ko = packed_ko(first.quant->state_widths);
  } else {
    loop.lane = 1;
    loop.w_ko = loop.r_ko = 1;
  }
  for (size_t d = 0; d < directions_.size(); ++d) {
    const Direction& part = directions_[d];
    rn_recurrent_direction& out = loop.dir[d];
    out.reverse = part.reverse;
    out.peepholes = part.cell.peepholes;
    out.linear_before_reset = part.cell.linear_before_reset;
    out.step = part.step.argv_entry;
    out.batched_step = part.batched_step.argv_entry;
    out.bias = part.bias.data<float>();
    out.peephole_weights = part.cell.peepholes ? part.peepholes.data<float>() : nullptr;
    out.rbh = part.cell.linear_before_reset ? part.rbh.data<float>() : nullptr;
    if (part.cell.quant) {
      out.wq = part.wq.raw_data();
      out.rq = part.rq.raw_data();
      out.w_scale = part.w_scale.data<float>();
      out.r_scale = part.r_scale.data<float>();
      out.w_colsum = part.w_colsum.data<int32_t>();
      out.r_colsum = part.r_colsum.data<int32_t>();
      out.w_zero = part.w_zero.data<int32_t>();
      out.r_zero = part.r_zero.data<int32_t>();
    } else {
      out.wt = part.wt.data<float>();
      out.r = part.r.data<float>();
    }
  }
  return loop;
}

rn_recurrent RecurrentBlock::begin(BlockIO& io, Workspace& workspace) const {
  auto input = [&](size_t i, const std::optional<Tensor>& constant) -> const Tensor* {
    if (i < io.inputs.size() && io.inputs[i]) return io.inputs[i];
    return constant ? &*constant : nullptr;
  };
  auto fail = [&](const std::string& message) {
    raise_invalid_input(cat(describe_, ": ", message));
  };
  const Tensor* x = input(kX, std::nullopt);
  if (!x) raise_invalid_model(cat(describe_, ": input 'X' is missing"));
  if (x->dtype() != DType::kFloat32) {
    raise_invalid_model(cat(describe_, ": input 'X' has element type ", dtype_onnx_name(x->dtype()),
                            ", expected float (the lowered element type)"));
  }
  // seq_length and batch_size from X's dims at their axes in X's layout.
  rn_recurrent run = compiled_loop();
  run.x = x->data<float>();
  if (x->rank() != static_cast<int64_t>(x_axes_.size()) ||
      x->dim(static_cast<int64_t>(x_position(Axis::kInput))) != input_size_) {
    fail(cat("input 'X' has shape ", shape_text(x->shape()), ", expected rank 3 with input_size ",
             input_size_));
  }
  run.seq = x->dim(static_cast<int64_t>(x_position(Axis::kSeq)));
  run.batch = x->dim(static_cast<int64_t>(x_position(Axis::kBatch)));
  const int64_t dirs = num_directions(), hidden = hidden_size_;
  const int64_t n_extent = run.gates * run.padded;
  const int64_t rows = run.seq * run.batch;
  if (rows * std::max(n_extent, input_size_) * 4 > kMaxBufferBytes) {
    raise_unsupported(cat(describe_, ": seq_length * batch_size = ", rows,
                          " rows give buffers beyond the Halide lowering's 2 GB limit"));
  }
  const AxisSizes sizes{run.seq, run.batch, dirs, hidden, input_size_};
  run.x_seq_stride = layout_stride(x_axes_, sizes, Axis::kSeq);
  run.x_batch_stride = layout_stride(x_axes_, sizes, Axis::kBatch);
  auto state_input = [&](size_t index, const char* name, const std::optional<Tensor>& constant,
                         const Axes& axes) -> const float* {
    const SlotShape state_shape = layout_shape(axes, sizes);
    const Tensor* tensor = input(index, constant);
    if (!tensor) return nullptr;
    if (tensor->dtype() != DType::kFloat32) {
      raise_invalid_model(cat(describe_, ": input '", name, "' has element type ",
                              dtype_onnx_name(tensor->dtype()),
                              ", expected float (the element type of X)"));
    }
    if (!(state_shape == tensor->shape())) {
      fail(cat("input '", name, "' has shape ", shape_text(tensor->shape()), ", expected ",
               shape_text(state_shape.to_vector())));
    }
    return tensor->data<float>();
  };
  run.initial_h = state_input(kInitialH, "initial_h", constant_initial_h_, initial_h_axes_);
  run.h0_dir = layout_stride(initial_h_axes_, sizes, Axis::kDir);
  run.h0_batch = layout_stride(initial_h_axes_, sizes, Axis::kBatch);
  if (op_ == RecurrentOp::kLstm) {
    run.initial_c = state_input(kInitialC, "initial_c", constant_initial_c_, initial_c_axes_);
    run.c0_dir = layout_stride(initial_c_axes_, sizes, Axis::kDir);
    run.c0_batch = layout_stride(initial_c_axes_, sizes, Axis::kBatch);
  }

  int64_t* lengths = workspace.allocate<int64_t>(run.batch);
  const void* lens_data = nullptr;
  int lens_bits = 0;
  const Tensor* lens = input(kSequenceLens, constant_sequence_lens_);
  if (lens) {
    if (!is_integer(lens->dtype())) {
      raise_invalid_model(cat(describe_, ": input 'sequence_lens' has element type ",
                              dtype_onnx_name(lens->dtype()), ", expected int32"));
    }
    if (lens->rank() != 1 || lens->dim(0) != run.batch) {
      fail(cat("input 'sequence_lens' has shape ", shape_text(lens->shape()), ", expected [",
               run.batch, "] (batch_size)"));
    }
    if (lens->dtype() == DType::kInt32 || lens->dtype() == DType::kInt64) {
      lens_data = lens->raw_data();
      lens_bits = lens->dtype() == DType::kInt32 ? 32 : 64;
    } else {  // other integer types, widened (the time loop reads int32 or int64)
      int64_t* wide = workspace.allocate<int64_t>(run.batch);
      for (int64_t b = 0; b < run.batch; ++b) wide[b] = lens->get_int64(b);
      lens_data = wide;
      lens_bits = 64;
    }
  }
  if (const int64_t bad = rn_recurrent_lengths(&run, lens_data, lens_bits, lengths); bad >= 0) {
    fail(cat("input 'sequence_lens'[", bad, "] = ", lens->get_int64(bad),
             ", must be in [0, seq_length = ", run.seq, "]"));
  }

  // Outputs in node output order; only those the node has. The previous run's tensors are
  // reused when their shapes still fit (a fresh tensor is zeros; Y must be zero past each entry's
  // length, so a reused Y with a short entry is cleared).
  io.outputs.resize(has_output_.size());
  for (size_t i = 0; i < has_output_.size(); ++i) {
    if (!has_output_[i]) {
      io.outputs[i] = Tensor();
      continue;
    }
    const SlotShape shape = layout_shape(i == 0 ? y_axes_ : i == 1 ? y_h_axes_ : y_c_axes_, sizes);
    const bool fresh = Tensor::recycle(io.outputs[i], DType::kFloat32, shape.dims, shape.rank);
    float* data = io.outputs[i].data<float>();
    if (!fresh && i == 0 && run.steps * run.batch > 0 && rn_recurrent_has_short_entry(&run)) {
      std::memset(data, 0, io.outputs[i].nbytes());
    }
    (i == 0 ? run.y : i == 1 ? run.y_h : run.y_c) = data;
  }
  run.y_seq = layout_stride(y_axes_, sizes, Axis::kSeq);
  run.y_dir = layout_stride(y_axes_, sizes, Axis::kDir);
  run.y_batch = layout_stride(y_axes_, sizes, Axis::kBatch);
  run.y_h_dir = layout_stride(y_h_axes_, sizes, Axis::kDir);
  run.y_h_batch = layout_stride(y_h_axes_, sizes, Axis::kBatch);
  run.y_c_dir = layout_stride(y_c_axes_, sizes, Axis::kDir);
  run.y_c_batch = layout_stride(y_c_axes_, sizes, Axis::kBatch);
  return run;
}

rn_recurrent_state RecurrentBlock::start_direction(const rn_recurrent& run, int direction,
                                                   Workspace& workspace) const {
  // Every byte is written by rn_recurrent_start or by a projection before a step reads it.
  void* memory = workspace.allocate_uninitialized<uint8_t>(rn_recurrent_direction_bytes(&run));
  rn_recurrent_state state;
  rn_recurrent_start(&run, direction, memory, &state);
  return state;
}

void RecurrentBlock::advance(const rn_recurrent& run, int direction, rn_recurrent_state& state,
                             int64_t step_begin, int64_t step_end) const {
  const int status = rn_recurrent_advance(&run, direction, &state, step_begin, step_end);
  if (run.count_overflow) {
    add_overflow(state.overflow);
    std::fill_n(state.overflow, 4, 0);
  }
  if (status != 0) {
    const Direction& part = directions_.at(static_cast<size_t>(direction));
    const CompiledPipeline& failed = state.failed_pipeline == 1 ? projection_
                                     : run.batch > 1            ? part.batched_step
                                                                : part.step;
    failed.raise_error(status);
  }
}

void RecurrentBlock::run(BlockIO& io) const {
  Workspace local;
  Workspace& workspace = io.workspace ? *io.workspace : local;
  workspace.reset();
  const rn_recurrent run = begin(io, workspace);
  for (int d = 0; d < num_directions(); ++d) {
    rn_recurrent_state state = start_direction(run, d, workspace);
    advance(run, d, state, 0, run.steps);
    rn_recurrent_finish(&run, d, &state);
  }
}

// ---- chunked runs (the runtime's pipeline plan) ------------------------------------------------

struct RecurrentBlock::ChunkState : BlockRunState {
  Workspace local;  // when the BlockIO brings no workspace
  rn_recurrent run;
  rn_recurrent_state directions[2];  // chunked runs use [0] (forward only); parts one per direction
  // Batch slices: each slice's run and direction states (kept across runs: no allocation once
  // the slice count repeats).
  struct Slice {
    rn_recurrent run;
    rn_recurrent_state directions[2];
  };
  std::vector<Slice> slices;
};

bool RecurrentBlock::chunkable() const {
  // Forward only, every entry the full length (chunks project their own time rows), and seq
  // outermost in X so a chunk's rows are contiguous.
  return directions_.size() == 1 && !directions_[0].reverse && !may_have_sequence_lens_ &&
         !x_axes_.empty() && x_axes_[0] == Axis::kSeq;
}

RecurrentBlock::ChunkState& RecurrentBlock::chunk_state(BlockIO& io) const {
  return run_state<ChunkState>(io);
}

void RecurrentBlock::begin_parts(BlockIO& io) const {
  RNNC_CHECK(num_directions() > 1, kind(), " has no parts");
  ChunkState& state = chunk_state(io);
  Workspace& workspace = io.workspace ? *io.workspace : state.local;
  workspace.reset();
  state.run = begin(io, workspace);
  // Both directions' memory is taken here, on one thread: the workspace is not thread-safe.
  for (int d = 0; d < num_directions(); ++d) {
    state.directions[d] = start_direction(state.run, d, workspace);
  }
}

void RecurrentBlock::run_part(BlockIO& io, int part) const {
  ChunkState& state = chunk_state(io);
  rn_recurrent_state& direction = state.directions[part];
  advance(state.run, part, direction, 0, state.run.steps);
  rn_recurrent_finish(&state.run, part, &direction);
}

int64_t RecurrentBlock::begin_chunks(BlockIO& io) const {
  RNNC_CHECK(chunkable(), kind(), " cannot run in chunks");
  ChunkState& state = chunk_state(io);
  Workspace& workspace = io.workspace ? *io.workspace : state.local;
  workspace.reset();
  state.run = begin(io, workspace);
  state.directions[0] = start_direction(state.run, 0, workspace);
  return state.run.seq;
}

void RecurrentBlock::run_chunk(BlockIO& io, int64_t begin, int64_t end) const {
  ChunkState& state = chunk_state(io);
  advance(state.run, 0, state.directions[0], begin, end);
}

void RecurrentBlock::end_chunks(BlockIO& io) const {
  ChunkState& state = chunk_state(io);
  rn_recurrent_finish(&state.run, 0, &state.directions[0]);
}

// ---- batch slices (the runtime's split of a batch across threads) ----------------------------

int64_t RecurrentBlock::batch_slice_unit() const {
  return std::max(1, batched_schedule_.batch_tile);
}

int64_t RecurrentBlock::batch_size(BlockIO& io) const {
  const Tensor* x = kX < io.inputs.size() ? io.inputs[kX] : nullptr;
  if (!x || x->rank() != static_cast<int64_t>(x_axes_.size())) return -1;
  return x->dim(static_cast<int64_t>(x_position(Axis::kBatch)));
}

bool RecurrentBlock::begin_batch_slices(BlockIO& io, const int64_t* bounds, int slices) const {
  RNNC_CHECK(batch_slice_unit() > 0, kind(), " has no batch slices");
  ChunkState& state = chunk_state(io);
  Workspace& workspace = io.workspace ? *io.workspace : state.local;
  workspace.reset();
  state.run = begin(io, workspace);
  if (slices < 1 || bounds[0] != 0 || bounds[slices] != state.run.batch) return false;
  state.slices.resize(static_cast<size_t>(slices));
  // Every slice's memory is taken here, on one thread: the workspace is not thread-safe.
  for (int i = 0; i < slices; ++i) {
    ChunkState::Slice& slice = state.slices[static_cast<size_t>(i)];
    rn_recurrent_batch_slice(&state.run, bounds[i], bounds[i + 1], &slice.run);
    for (int d = 0; d < num_directions(); ++d) {
      slice.directions[d] = start_direction(slice.run, d, workspace);
    }
  }
  return true;
}

void RecurrentBlock::run_batch_slice(BlockIO& io, int slice) const {
  ChunkState::Slice& part = chunk_state(io).slices.at(static_cast<size_t>(slice));
  for (int d = 0; d < num_directions(); ++d) {
    advance(part.run, d, part.directions[d], 0, part.run.steps);
    rn_recurrent_finish(&part.run, d, &part.directions[d]);
  }
}

ExecutionBlock::SliceLayout RecurrentBlock::batch_slice_layout(const BlockIO& io) const {
  const ChunkState& state = static_cast<const ChunkState&>(*io.state);
  const rn_recurrent& run = state.run;
  return {run.x, run.y, run.x_seq_stride, run.x_batch_stride, run.y_seq, run.y_batch};
}

double RecurrentBlock::step_weight_bytes() const { return schedule_.step_weight_bytes; }

}  // namespace rnnc
