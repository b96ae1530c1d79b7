// lower_group: one execution block's nodes -> one Halide block, dispatched on the group's shape
// (lower_elementwise.h FusionGroup):
//
//   a MatMul / Gemm root (+ elementwise epilogue, + Softmax / LogSoftmax)  -> lower_gemm_group
//   a Conv root (+ elementwise epilogue)                                   -> lower_conv_group
//   a ConvTranspose root (+ elementwise epilogue)                 -> lower_conv_transpose_group
//   a CumSum alone                                                         -> lower_cumsum
//   a DFT or STFT alone                                                    -> lower_dft
//   a Resize or Upsample alone                                             -> lower_resize
//   a Softmax / LogSoftmax (+ elementwise prologue)                  -> lower_normalizer_group
//   a Reduce* node                                                         -> lower_reduction
//   elementwise nodes only                                          -> lower_elementwise_group
//
// Anything else throws kUnsupported (raise_unsupported) so the caller keeps the reference kernels
// for the block; kInvalidModel only for a node the reference kernel would reject too. The block
// runs single-threaded Halide code (oneTBB parallelizes above it) compiled through `cache`.
#pragma once

#include <memory>
#include <vector>

#include "lowering/block.h"
#include "lowering/halide_cache.h"

namespace rnnc {

std::unique_ptr<ExecutionBlock> lower_nodes(const std::vector<const Node*>& group,
                                            HalideCache& cache);

}  // namespace rnnc
