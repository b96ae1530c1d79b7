// The operands of the integer products (docs/quant.md), shared by every lowering that computes
// u8 x s8 -> s32 dot products (lower_recurrent's projection and step, lower_dense_quant's GEMM):
//
//   activations  a float operand quantized one row at a time inside the pipeline, with exactly
//                ir/quantization.h's arithmetic (dynamic coefficients from the row itself, or
//                the static ones), stored as uint8 (int16 above 8 bits);
//   weights      a quantized constant as graph_opt/fold_quantized_weights leaves it (the float
//                values of a DequantizeLinear with its QuantParams) turned back into its exact
//                integers at lowering time: w = (q - zp) * scale is the float nearest the real
//                value, so w / scale lies within 1e-6 of the integer q - zp. uint8 storage is
//                shifted by -128 into int8 (q - zp is unchanged), which u8 x s8 products take.
#pragma once

#include <Halide.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/quantization.h"

namespace rnnc {

// A float operand src(k, rows...), k in [0, n), quantized row by row. q(k, rows...) is 0 for
// k >= n (the weights there are zero padding) and bounded to whole vectors of 4 * vector_width
// from 0; scale, zero_point and sum (the sum of q over k < n, for weight zero points) take the
// row coordinates. Dynamic coefficients come from `params` (a Tuple of scale and zero point per
// row, computed at root: a caller may compute it elsewhere); `state` picks the static state
// coefficients instead of the input ones.
struct QuantizedRows {
  Halide::Func q, scale, zero_point, sum, params;
};
QuantizedRows quantize_rows(Halide::Func src, int n, const ActivationQuant& quant, bool state,
                            int vector_width, const std::string& name);

// A quantized constant weight as the integer kernels read it: q in the weight's own (row-major)
// order, and a scale and a zero point per output, an output being one index of the weight's axes
// other than `reduction_axis` (row-major over them).
struct IntegerWeight {
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  bool has_zero_points = false;
};
// Input `index` of `node` (named `name` in messages), whose constant is `weight`. kUnsupported,
// naming the node and input, for a float weight without quantization parameters, a width above
// 8 bits, or scales along the reduction axis (they cannot be factored out of a dot product).
IntegerWeight integer_weight(const Node& node, size_t index, const char* name,
                             const Tensor& weight, int reduction_axis);

}  // namespace rnnc
