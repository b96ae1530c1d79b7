// conv_integer_to_float: a ConvInteger by a constant weight whose every reader is a Cast to
// float32 (ONNX Runtime's quantize_dynamic writes a Conv this way, followed by a Mul by
// x_scale * w_scale) becomes a float32 Conv of x - x_zero_point by the constant w - w_zero_point,
// which lowering compiles as a direct convolution (lower_dense) instead of running the integer
// convolution on a reference kernel.
//
//   %p = ConvInteger(%xq, %wq, %xz, %wz) {...}         %xf = Cast(%xq) {to = FLOAT}
//   %pf = Cast(%p) {to = FLOAT}                  ->    %zf = Cast(%xz) {to = FLOAT}
//                                                      %d = Sub(%xf, %zf)
//                                                      %pf = Conv(%d, %w) {...}
//                                                      (%w = %wq - %wz, a float32 constant)
//
// Exact, not approximately equal: x and its zero point are 8-bit, so |x - xz| <= 255, and every
// product and every partial sum of one output, in whatever order the convolution adds them
// (multiply-adds included), is an integer of magnitude at most 255 * sum |w - wz| over that
// output channel's taps. Where that bound is at most 2^24 for every channel, each of them is a
// float32 exactly, so the Conv computes ConvInteger's int32 sum and the Cast of it, bit for bit.
// Padding agrees too: ConvInteger's padded taps contribute 0 (padding acts as x_zero_point), and
// the Conv pads x - xz with 0. A weight over the bound stays a ConvInteger. (lower_dft_conv, the
// one Conv lowering that does not sum the products themselves, leaves integer weights alone.)
//
// Matched: x int8/uint8 with its zero point absent or a scalar of its type; %wq a constant
// int8/uint8; %wz absent or a constant of %wq's type with 1 or M (output channels) elements; %p
// read only by Casts to float32 (each of them is replaced), not a graph output or a nested graph's
// return.
// Lowering pipeline only.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "graph_opt/constant_value.h"
#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"
#include "ir/op_schema.h"

namespace rnnc {

namespace {

// Every product and partial sum stays an integer float32 represents exactly up to this.
constexpr double kExactFloatIntegers = 16777216.0;  // 2^24
// |x - x_zero_point| for 8-bit x and zero point.
constexpr double kLargestShiftedInput = 255.0;

bool is_8_bit(DType dtype) { return dtype == DType::kInt8 || dtype == DType::kUInt8; }

// w - w_zero_point[m] as float32, or nullopt when the weight is not constant 8-bit, its zero point
// is not 1 or M constants of its type, or some channel's sum bound exceeds 2^24.
std::optional<Tensor> shifted_weight(const Node& conv) {
  const Tensor* w = known_constant(conv.input(1));
  if (!w || !is_8_bit(w->dtype()) || w->rank() < 3 || w->dim(0) == 0) return std::nullopt;
  const int64_t channels = w->dim(0), taps = w->numel() / channels;
  const Tensor* zero_point = nullptr;
  if (conv.num_inputs() > 3 && conv.input(3)) {
    zero_point = known_constant(conv.input(3));
    if (!zero_point || zero_point->dtype() != w->dtype() ||
        (zero_point->numel() != 1 && zero_point->numel() != channels)) {
      return std::nullopt;
    }
  }
  Tensor shifted(DType::kFloat32, w->shape());
  float* out = shifted.data<float>();
  for (int64_t m = 0; m < channels; ++m) {
    const int64_t zero =
        zero_point ? zero_point->get_int64(zero_point->numel() == 1 ? 0 : m) : int64_t{0};
    double magnitude = 0;
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t value = w->get_int64(m * taps + t) - zero;
      out[m * taps + t] = static_cast<float>(value);
      magnitude += std::abs(static_cast<double>(value));
    }
    if (kLargestShiftedInput * magnitude > kExactFloatIntegers) return std::nullopt;
  }
  return shifted;
}

// The ConvInteger's x and zero point fit, and its output is read only by Casts to float32.
bool operands_fit(const Graph& graph, const Node& conv) {
  const Value* x = conv.input(0);
  if (!x || !is_8_bit(x->type.dtype)) return false;
  if (conv.num_inputs() > 2 && conv.input(2)) {
    const Value* zero_point = conv.input(2);
    const std::optional<Shape>& shape = zero_point->type.shape;
    if (zero_point->type.dtype != x->type.dtype || !shape || !shape_is_known(*shape) ||
        shape_numel(shape_values(*shape)) != 1) {
      return false;
    }
  }
  const Value* out = conv.output(0);
  return out && !out->uses().empty() && read_only_by(graph, out, is_float_cast);
}

Value* as_float(Graph& graph, Value* value, const std::string& name, int opset) {
  const std::string cast_name = graph.unique_name(name);
  Node* cast = graph.add_node("Cast", cast_name, {value}, {cast_name}, opset);
  cast->set_attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat32)));
  infer_node(*cast);
  return cast->output(0);
}

void rewrite(Graph& graph, Node* conv, Tensor weight, int opset) {
  const std::string base = conv->name().empty() ? conv->output(0)->name() : conv->name();
  Value* x = as_float(graph, conv->input(0), base + "_x_float", opset);
  if (conv->num_inputs() > 2 && conv->input(2)) {
    Value* zero_point = as_float(graph, conv->input(2), base + "_x_zero_point_float", opset);
    const std::string sub_name = graph.unique_name(base + "_x_shifted");
    Node* sub = graph.add_node("Sub", sub_name, {x, zero_point}, {sub_name}, opset);
    infer_node(*sub);
    x = sub->output(0);
  }
  Value* w = graph.add_initializer(graph.unique_name(base + "_weight_float"), std::move(weight));
  const std::string float_name = graph.unique_name(base + "_float");
  Node* float_conv = graph.add_node("Conv", float_name, {x, w}, {float_name}, opset);
  // ConvInteger's attributes are Conv's.
  for (const auto& [name, attribute] : conv->attributes()) float_conv->set_attr(name, attribute);
  infer_node(*float_conv);
  const std::vector<Use> casts = conv->output(0)->uses();
  for (const Use& use : casts) {
    graph.replace_all_uses(use.node->output(0), float_conv->output(0));
    graph.remove_node(use.node);
  }
  graph.remove_node(conv);
}

bool rewrite_in_graph(Graph& graph, int opset, PassStats& stats) {
  std::vector<Node*> convs;
  for (const auto& node : graph.nodes()) {
    if (is_op(node.get(), "ConvInteger")) convs.push_back(node.get());
  }
  bool changed = false;
  for (Node* conv : convs) {
    if (!operands_fit(graph, *conv)) continue;
    std::optional<Tensor> weight = shifted_weight(*conv);
    if (!weight) {
      ++stats["integer convolutions left (weight not constant 8-bit or sums beyond 2^24)"];
      continue;
    }
    rewrite(graph, conv, std::move(*weight), opset);
    ++stats["integer convolutions computed in float"];
    changed = true;
  }
  if (changed) graph.sort_topologically();
  return changed;
}

}  // namespace

bool conv_integer_to_float(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  const int opset = static_cast<int>(model.default_opset());
  bool changed = false;
  for_each_graph(model,
                 [&](Graph& graph) { changed = rewrite_in_graph(graph, opset, stats) || changed; });
  return changed;
}

}  // namespace rnnc
