// The operands of the integer products (docs/quant.md), shared by every lowering that computes
// integer dot products (lower_recurrent's projection and step: u8 x s8 or s16 x s16;
// lower_dense_quant's GEMM: u8 x s8):
//
//   activations  a float operand quantized one row at a time inside the pipeline, with exactly
//                ir/quantization.h's arithmetic (dynamic coefficients from the row itself, or
//                the static ones), stored as the kernel's operand type (uint8 or int16);
//   weights      a quantized constant as graph_opt/fold_quantized_weights leaves it (the float
//                values of a DequantizeLinear with its QuantParams) turned back into its exact
//                integers at lowering time: w = (q - zp) * scale is the float nearest the real
//                value, so w / scale lies within 1e-6 of the integer q - zp. uint8 storage is
//                shifted by -128 into int8 (q - zp is unchanged), which u8 x s8 products take;
//                9- to 16-bit weights are int16.
#pragma once

#include <Halide.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/quantization.h"
#include "lowering/kernel_target.h"

namespace rnnc {

// Products per int32 lane of u8 x s8 operands on `target`: 4 where it has AVX512-VNNI, whose
// vpdpbusd sums four; else 2, the operands widened to 16 bits and each pair summed by pmaddwd.
// (A four-term sum there lowers to pmaddwd plus shuffles that add the pairs: docs/measurements.md,
// "Integer products in pairs without VNNI".) The sums are exact either way, so both give the same
// results bit for bit. The recurrent projection and step and the GEMM pack their weights with
// this many consecutive k of one output innermost.
int u8_products_per_lane(const KernelTarget& target);

// A float operand src(k, rows...), k in [0, n), quantized row by row and stored as `storage`
// (uint8 or int16: any activation scheme's q fits the int16). q(k, rows...) is 0 for k >= n (the
// weights there are zero padding) and bounded to whole vectors (storage_vector) from 0 up to
// padded_n; scale, zero_point and sum (the sum of q over k < n, for weight zero points) take the
// row coordinates; raw is round(x / scale) + zero_point before the clamp (float: overflow
// counts). Dynamic coefficients come from `params` (a Tuple of scale and zero point per row,
// computed at root: a caller may compute it elsewhere); `state` picks the static state
// coefficients instead of the input ones. A per_tensor scheme's coefficients come from every row
// at once: `row_extents` gives the extent of each row coordinate (from 0), and x is divided by
// the scale (ir/quantization.h).
struct QuantizedRows {
  Halide::Func q, scale, zero_point, sum, params, raw;
};
QuantizedRows quantize_rows(Halide::Func src, int n, int padded_n, const ActivationQuant& quant,
                            bool state, Halide::Type storage, int vector_width,
                            const std::string& name,
                            const std::vector<Halide::Expr>& row_extents = {});

// Overflow mode: the counts of one pipeline call, summed over its quantized operands and exact
// sums, as the int32 [4] output func(): activations quantized above qmax, below qmin (clamped),
// sums beyond the declared accumulation width, activations quantized.
class OverflowCounter {
 public:
  // Operand values raw(k, row...) for k < n over rows of `row_extents` (only where `active`).
  void add_operand(const QuantizedRows& rows, int n, const std::vector<Halide::Expr>& row_extents,
                   const ActivationQuant& quant,
                   const std::function<Halide::Expr(const std::vector<Halide::Expr>&)>& active);
  // The exact sums `sum` (int32 or int64) over `domain` (only where `on`) against the width.
  void add_sums(Halide::RDom domain, Halide::Expr sum, Halide::Expr on, int accumulation_bits);
  Halide::Func func() const;

 private:
  Halide::Expr above_ = 0, below_ = 0, sums_ = 0, values_ = 0;
};

// Elements of `storage` in one vector of `vector_width` floats.
int storage_vector(Halide::Type storage, int vector_width);

// A quantized constant weight as the integer kernels read it: q in the weight's own (row-major)
// order (int8 values up to 8 bits, int16 above), and a scale and a zero point per output, an
// output being one index of the weight's axes other than `reduction_axis` (row-major over them).
struct IntegerWeight {
  int bits = 8;  // QuantParams::bits: the effective width (fold_quantized_weights)
  std::vector<int16_t> q;
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  bool has_zero_points = false;
  bool shifted = false;  // uint8 storage shifted into int8: q in [-128, 127]
};
// Input `index` of `node` (named `name` in messages), whose constant is `weight`. kUnsupported,
// naming the node and input, for a float weight without quantization parameters, or scales
// along the reduction axis (they cannot be factored out of a dot product).
IntegerWeight integer_weight(const Node& node, size_t index, const char* name,
                             const Tensor& weight, int reduction_axis);

}  // namespace rnnc
