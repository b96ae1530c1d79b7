// lower_dense_quant: a MatMul or Gemm that quant/ annotated with an activation quantization
// (ir/quantization.h), whose B is a quantized constant (graph_opt/fold_quantized_weights: float
// values + QuantParams), with its fused elementwise epilogue -> one Halide pipeline of integer
// products (docs/quant.md):
//
//   %m = MatMul (%x, %W)    aq(k, m)   = A's row m quantized to u8 (dynamic or static coefficients)
//   %y = Relu (%m + %b)  -> dot(n, m)  = sum_k i32(aq(k, m)) * i32(bq(k % 4, n, k / 4))   (s32)
//                           out(n, m)  = relu(alpha * float(dot - za(m) colsum(n)
//                                          - zb(n) (sum_k aq(k, m) - K za(m))) * sa(m) sb(n)
//                                          + beta * C + b(n))
//
// B's integers are recovered exactly and packed at lowering time as [K/4][N][4] int8 (uint8
// weights shifted by -128; K and N padded with zeros to 4 and to the register tile), with its
// scales per tensor or per output column, its column sums and zero points per column. The dot
// product takes four k at a time (`.atomic().vectorize(r)` of a 4-long RDom over a u8 x s8
// widening product): AVX-512 VNNI `vpdpbusd` on a target with avx512_sapphirerapids, 16-bit
// `pmaddwd` products on AVX2. Register tiles, loops and the epilogue are the float GEMM's
// (lower_dense.h): mr rows x nr columns of int32 accumulators, A's rows quantized once per row
// tile (K bytes each, in L1), rows merged across batch dims where every operand allows.
//
// The integers are exact; only the final float scaling rounds differently from the reference
// kernels' fake quantization (float sums of the dequantized values).
#pragma once

#include <memory>

#include "lowering/block.h"
#include "lowering/halide_cache.h"
#include "lowering/lower_dense.h"

namespace rnnc {

// kUnsupported (so the group runs on the reference kernels, which compute the same quantized
// product) for activations or weights wider than 8 bits, a B that is not a quantized 2-D
// constant, weight scales along K, or a Softmax/LogSoftmax in the group.
std::unique_ptr<ExecutionBlock> lower_quantized_gemm_group(const FusionGroup& group,
                                                           const GemmGroupShape& shape,
                                                           HalideCache& cache);

}  // namespace rnnc
