// fold_quantized_weights: DequantizeLinear of a constant integer weight -> the float constant it
// computes, annotated with the quantization it came from. Lowering pipeline only.
//
//   const %wq: i8[1, 512, 128] = {...}                const %w: f32[1, 512, 128]
//   %w: f32[1, 512, 128] = DequantizeLinear      ->       quant=<axis 1, 512 scales, 8 bits>
//         (%wq, %scale, %zero_point) {axis = 1}      %y, ... = LSTM (%x, %w, ...)
//   %y, ... = LSTM (%x, %w, ...)
//
// Why: the default pipeline keeps a quantized weight quantized (the model stays small and other
// runtimes see the standard form), but lowering wants constants. Every consumer can then read the
// weight as the float it means (reference kernels, float Halide kernels of weights-only
// quantization), and a node quant/ annotated with an activation quantization recovers the exact
// integers from the float values and the annotation (lower_recurrent.cc) for its integer kernels.
//
// Folded: DequantizeLinear (default domain) whose x is an int8/uint8/int32 initializer and whose
// scale and zero point are initializers, per tensor or per axis; computed by its reference
// kernel, so the float values are bitwise what the node computes at run time. The annotation's
// bit width is the effective one of the stored integers: 8 for uint8, else the signed width of
// the largest |q| (a 4-bit weight stored as int8 is 4 bits; quant/ stores 9- to 16-bit weights as
// int32), which the integer kernels size their operands and sums by (ir/quantization.h
// ProductWidths). Others stay: int32 values beyond 16 bits, a scale computed at run time.
#include <algorithm>
#include <cstdlib>

#include "graph_opt/constant_value.h"
#include "graph_opt/pass.h"
#include "ir/reference/kernel.h"

namespace rnnc {

namespace {

// The width the stored integers need: 8 for uint8 storage, else the signed width of max |q|
// (at least 2, the narrowest scheme).
int effective_bits(const Tensor& q) {
  if (q.dtype() == DType::kUInt8) return 8;
  int64_t largest = 0;
  for (int64_t i = 0; i < q.numel(); ++i) largest = std::max(largest, std::abs(q.get_int64(i)));
  int bits = 2;
  while ((int64_t{1} << (bits - 1)) - 1 < largest) ++bits;
  // int8's -128 is still 8 bits (ProductWidths bounds a b-bit weight by 2^(b-1)).
  return q.dtype() == DType::kInt8 ? std::min(bits, 8) : bits;
}

bool fold_in_graph(Graph& graph, PassStats& stats) {
  bool changed = false;
  std::vector<Node*> order;
  for (const auto& node : graph.nodes()) order.push_back(node.get());
  for (Node* node : order) {
    if (node->op_type() != "DequantizeLinear" || !node->domain().empty()) continue;
    const Value* x = node->input(0);
    const Value* scale = node->input(1);
    const Value* zero_point = node->input(2);
    if (!is_known_constant(x) || !is_known_constant(scale) ||
        (zero_point && !is_known_constant(zero_point))) {
      continue;
    }
    const DType dtype = x->constant()->dtype();
    if (dtype != DType::kInt8 && dtype != DType::kUInt8 && dtype != DType::kInt32) continue;
    const int bits = effective_bits(*x->constant());
    if (bits > 16) {
      ++stats["int32 weights wider than 16 bits left unfolded"];
      continue;
    }
    Kernel kernel = find_kernel("DequantizeLinear");
    if (!kernel) continue;
    KernelContext context{*node, {}, {}, {}};
    for (const Value* input : node->inputs()) {
      context.inputs.push_back(input ? input->constant().get() : nullptr);
    }
    context.outputs.resize(1);
    try {
      kernel(context);
    } catch (const Error& error) {
      if (error.kind() == ErrorKind::kInternal) throw;
      ++stats["dequantizations whose kernel failed"];  // the error shows when the model runs
      continue;
    }

    auto params = std::make_shared<QuantParams>();
    params->bits = bits;
    params->is_signed = dtype == DType::kInt8;
    const Tensor& scales = *scale->constant();
    for (int64_t i = 0; i < scales.numel(); ++i) {
      params->scales.push_back(static_cast<float>(scales.get_double(i)));
    }
    if (zero_point) {
      const Tensor& points = *zero_point->constant();
      for (int64_t i = 0; i < points.numel(); ++i) {
        params->zero_points.push_back(static_cast<int32_t>(points.get_int64(i)));
      }
    }
    params->symmetric = true;
    for (int32_t point : params->zero_points) params->symmetric = params->symmetric && point == 0;
    if (scales.numel() > 1 || scales.rank() == 1) {
      // Per axis (opset 13; a 1-element 1-D scale is per axis over a size-1 axis).
      int64_t axis = node->attr_int("axis", 1);
      if (axis < 0) axis += x->constant()->rank();
      params->granularity = QuantParams::Granularity::kAxis;
      params->axis = static_cast<int>(axis);
    }
    Value* folded = replace_with_constant(node->output(0), std::move(context.outputs[0]));
    folded->type.quant = std::move(params);
    ++stats["quantized weights folded"];
    changed = true;
  }
  return changed;
}

}  // namespace

bool fold_quantized_weights(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  return fold_in_graph(*model.graph, stats);
}

}  // namespace rnnc
