// lower_dense: a MatMul, Gemm or Conv with its fused elementwise epilogue (graph_opt's fusion group
// rooted at it) -> one Halide pipeline: a tiled, vectorized, unrolled reduction whose output stage
// is the epilogue, inlined (bias add, activation, ...), optionally ending in a Softmax or
// LogSoftmax along N (the classifier head: the row statistics are computed over a tile of rows
// while it is in cache).
//
//   %m = MatMul (%x, %W)            prod(n, m) = sum_k Ap(k, m) * Bt(n % nr, k, n / nr)
//   %b = Add (%m, %bias)      ->    out(n, m)  = tanh(prod(n, m) + bias(n))
//   %y = Tanh (%b)
//
// GEMM schedule (schedule_table.h): the output is tiled into mr rows x nr columns; per tile the mr
// rows of A are packed (Ap), and the k loop runs innermost over mr * nr / lanes vector
// accumulators held in registers (unrolled over the tile, vectorized over n). Rows are the
// output's leading dims merged (seq * batch for an LSTM's input projection) whenever B is 2-D and
// the epilogue's operands broadcast alike over them; fewer than mr rows at run time (a batch-1
// step) run one row at a time. A constant B is marshaled once through LayoutMap into N-tiles of nr
// columns (tiled(dN, nr)) or, when N fits one tile, N permuted innermost and padded
// (permuted_padded(dN, nr)); Gemm's transB = 1 is the same physical array, so the transpose costs
// nothing. A run-time B is packed the same way inside the pipeline, once per call.
//
// Conv (1-D and 2-D, groups, dilations, pads, strides): direct convolution. The input is padded
// once per batch item (zero outside, taps in the padding read zero), W is marshaled tiled(d0, mr)
// so a tile's mr output channels' weights sit together, and the output is tiled into mr channels x
// (vectors * lanes) positions accumulated in registers over (c, ky, kx).
//
// Everything is single-threaded Halide code; oneTBB parallelizes across blocks and plans.
#pragma once

#include <memory>

#include "lowering/block.h"
#include "lowering/halide_cache.h"
#include "lowering/lower_elementwise.h"

namespace rnnc {

// A group rooted at a MatMul or Gemm (float32). kUnsupported for other dtypes, a root output
// whose shape differs from the group's result, or a normalizer not along N.
std::unique_ptr<ExecutionBlock> lower_gemm_group(const FusionGroup& group, HalideCache& cache);

// A group rooted at a Conv with constant weights, 1-D or 2-D (float32).
std::unique_ptr<ExecutionBlock> lower_conv_group(const FusionGroup& group, HalideCache& cache);

}  // namespace rnnc
