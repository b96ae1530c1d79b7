// fuse_integer_matmul: ONNX Runtime's dynamic quantization of a MatMul (quantize_dynamic writes
// a MatMul by a constant weight this way) becomes one MatMul whose activations are quantized as
// DynamicQuantizeLinear does, so lowering runs it as one integer GEMM (lower_dense_quant) instead
// of four reference kernels.
//
//   %xq, %xs, %xz = DynamicQuantizeLinear(%x)
//   %p = MatMulInteger(%xq, %wq, %xz, %wz)              %w = DequantizeLinear(%wq, %ws, %wz)
//   %pf = Cast(%p) {to = FLOAT}                    ->   %y = MatMul(%x, %w)
//   %s = Mul(%xs, %ws)                                       {quant = dynamic asymmetric bits=8
//   %y = Mul(%pf, %s)                                         per_tensor}
//
// It computes what the old form computes, bit for bit, on the integer kernels: the per_tensor
// scheme (ir/quantization.h) is DynamicQuantizeLinear's arithmetic (one scale and zero point from
// the whole of x, a divide, ties to even); the kernel's exact integer sum is MatMulInteger's; and
// it converts that sum to float and multiplies it by x's scale times the column's weight scale,
// the Cast and the two Muls in the same order. (The reference kernel of the new MatMul sums
// fake-quantized floats instead, equal up to float summation order.)
//
// Matched: %wq a constant int8/uint8 [K, N]; %wz absent or a constant of %wq's type with 1 or N
// elements; %ws a constant float32 of 1 element or shape [N]; %xz the zero point of the same
// DynamicQuantizeLinear whose %xq is the product's A; %y of %pf's shape; either operand order of
// both Muls. Per-column weight scales or zero points need DequantizeLinear's axis (opset 13):
// below it the old form stays. Other readers of %xq, %p or %pf keep the nodes they read (dce
// removes the rest), and a DynamicQuantizeLinear feeding several products gives each its own
// MatMul.
// Lowering pipeline only, before fold_quantized_weights (which folds the new DequantizeLinear).
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "graph_opt/constant_value.h"
#include "graph_opt/pass.h"
#include "ir/op_schema.h"
#include "ir/quantization.h"

namespace rnnc {

namespace {

struct Match {
  Node* dynamic_quantize = nullptr;
  Node* product = nullptr;  // MatMulInteger
  const Tensor* weight = nullptr;
  Value* scale_value = nullptr;
  const Tensor* weight_scale = nullptr;
  Value* zero_point_value = nullptr;          // may be null
  const Tensor* weight_zero_point = nullptr;  // may be null
  int64_t columns = 0;

  // Weight scales or zero points per column: DequantizeLinear along axis 1.
  bool per_column() const {
    return weight_scale->numel() > 1 || (weight_zero_point && weight_zero_point->numel() > 1);
  }
};

// 1 element, or one per column: the forms MatMulInteger's b_zero_point and a broadcast Mul take.
bool per_tensor_or_column(const Tensor& tensor, int64_t columns) {
  return tensor.numel() == 1 || (tensor.rank() == 1 && tensor.dim(0) == columns);
}

// The MatMulInteger + DynamicQuantizeLinear behind `cast_out` * `scales`, if the pattern holds.
std::optional<Match> match_operands(const Value* cast_out, const Value* scales) {
  const Node* cast = cast_out->producer();
  if (!cast || !is_float_cast(*cast)) return std::nullopt;
  Match m;
  m.product = cast->input(0)->producer();
  if (!is_op(m.product, "MatMulInteger") || m.product->num_inputs() < 3) return std::nullopt;
  const Value* a = m.product->input(0);
  m.dynamic_quantize = a ? a->producer() : nullptr;
  if (!is_op(m.dynamic_quantize, "DynamicQuantizeLinear") || a->producer_output() != 0 ||
      m.product->input(2) != m.dynamic_quantize->output(2)) {
    return std::nullopt;
  }
  const Value* x = m.dynamic_quantize->input(0);
  if (!x || x->type.dtype != DType::kFloat32) return std::nullopt;
  m.weight = known_constant(m.product->input(1));
  if (!m.weight || m.weight->rank() != 2 ||
      (m.weight->dtype() != DType::kInt8 && m.weight->dtype() != DType::kUInt8)) {
    return std::nullopt;
  }
  m.columns = m.weight->dim(1);
  if (Value* zero_point = m.product->input(3)) {
    m.zero_point_value = zero_point;
    m.weight_zero_point = known_constant(zero_point);
    if (!m.weight_zero_point || m.weight_zero_point->dtype() != m.weight->dtype() ||
        !per_tensor_or_column(*m.weight_zero_point, m.columns)) {
      return std::nullopt;
    }
  }
  // scales = x_scale * w_scale, either order.
  const Node* scale_product = scales->producer();
  if (!is_op(scale_product, "Mul")) return std::nullopt;
  const Value* x_scale = m.dynamic_quantize->output(1);
  m.scale_value = scale_product->input(0) == x_scale   ? scale_product->input(1)
                  : scale_product->input(1) == x_scale ? scale_product->input(0)
                                                       : nullptr;
  m.weight_scale = known_constant(m.scale_value);
  if (!m.weight_scale || m.weight_scale->dtype() != DType::kFloat32 ||
      !per_tensor_or_column(*m.weight_scale, m.columns)) {
    return std::nullopt;
  }
  return m;
}

// `value` (1 element or N) as DequantizeLinear's parameter: N elements when `per_column`, else a
// scalar; `value` itself when it has that shape.
Value* as_parameter(Graph& graph, Value* value, bool per_column, int64_t columns,
                    const std::string& name) {
  const Tensor& tensor = *value->constant();
  const std::vector<int64_t> shape =
      per_column ? std::vector<int64_t>{columns} : std::vector<int64_t>{};
  if (tensor.shape() == shape) return value;
  Tensor out(tensor.dtype(), shape);
  const size_t size = dtype_size(tensor.dtype());
  for (int64_t n = 0; n < out.numel(); ++n) {
    const int64_t from = tensor.numel() == 1 ? 0 : n;
    std::memcpy(static_cast<uint8_t*>(out.raw_data()) + n * size,
                static_cast<const uint8_t*>(tensor.raw_data()) + from * size, size);
  }
  return graph.add_initializer(graph.unique_name(name), std::move(out));
}

void rewrite(Graph& graph, Node* mul, const Match& m, int opset) {
  const bool per_column = m.per_column();
  const std::string base = m.product->name().empty() ? mul->name() : m.product->name();
  std::vector<Value*> dequantize_inputs = {
      m.product->input(1),
      as_parameter(graph, m.scale_value, per_column, m.columns, base + "_weight_scale")};
  if (m.zero_point_value) {
    dequantize_inputs.push_back(as_parameter(graph, m.zero_point_value, per_column, m.columns,
                                             base + "_weight_zero_point"));
  }
  const std::string dequantize_name = graph.unique_name(base + "_dequantize");
  Node* dequantize = graph.add_node("DequantizeLinear", dequantize_name, dequantize_inputs,
                                    {graph.unique_name(base + "_weight")}, opset);
  if (per_column) dequantize->set_attr("axis", Attribute::of_int(1));
  infer_node(*dequantize);
  const std::string matmul_name = graph.unique_name(base + "_float_activations");
  Node* matmul =
      graph.add_node("MatMul", matmul_name, {m.dynamic_quantize->input(0), dequantize->output(0)},
                     {graph.unique_name(matmul_name)}, opset);
  ActivationQuant quant;
  quant.per_tensor = true;
  set_activation_quant(*matmul, quant);
  infer_node(*matmul);
  graph.replace_all_uses(mul->output(0), matmul->output(0));
  graph.remove_node(mul);
}

bool fuse_in_graph(Graph& graph, int opset, PassStats& stats) {
  bool changed = false;
  std::vector<Node*> muls;
  for (const auto& node : graph.nodes()) {
    if (is_op(node.get(), "Mul")) muls.push_back(node.get());
  }
  for (Node* mul : muls) {
    // The product's shape must be the Mul's: a scale of shape [1, 1] would add an axis to a
    // 1-D product.
    const Value* out = mul->output(0);
    if (!out || !out->type.shape) continue;
    auto same_shape = [&](const Value* operand) {
      return operand && operand->type.shape && *operand->type.shape == *out->type.shape;
    };
    std::optional<Match> m;
    if (same_shape(mul->input(0))) m = match_operands(mul->input(0), mul->input(1));
    if (!m && same_shape(mul->input(1))) m = match_operands(mul->input(1), mul->input(0));
    if (!m) continue;
    if (m->per_column() && opset < 13) {
      ++stats["per-column products left below opset 13"];
      continue;
    }
    rewrite(graph, mul, *m, opset);
    ++stats["integer products fused"];
    changed = true;
  }
  if (changed) graph.sort_topologically();
  return changed;
}

}  // namespace

bool fuse_integer_matmul(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  const int opset = static_cast<int>(model.default_opset());
  bool changed = false;
  for_each_graph(model,
                 [&](Graph& graph) { changed = fuse_in_graph(graph, opset, stats) || changed; });
  return changed;
}

}  // namespace rnnc
