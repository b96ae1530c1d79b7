// lower_conv_transpose: a ConvTranspose (1-D or 2-D, float32, constant weights) with its fused
// elementwise epilogue (graph_opt's fusion group rooted at it) -> one Halide pipeline.
//
// Gather form: an output position sums the input positions whose taps reach it. Per batch item
// the input is scattered once into a zero buffer U at stride s (U(i * s - lo) = X(i), lo =
// pad_begin - (k - 1) * dilation), and the output is then a stride-1 direct convolution of U with
// the flipped kernel, tiled and vectorized as Conv's (lower_dense.h schedule_conv_tiles):
//
//   Y[n, m, o] = B[m] + sum over c in group(m), taps t  of  Wf[m, c, t] * U[n, c, o + t * dilation]
//   Wf[m, c, t] = W[c + group_start, m - group_output_start, k - 1 - t]   (marshaled once)
//
// so an output position never tests which taps reach it: the taps that fall between input
// positions read U's zeros (the stride's phases multiply zeros, s times the MACs of a polyphase
// form, in exchange for dense vector loops). Every attribute is handled: groups, strides,
// dilations, pads and auto_pad, output_padding, output_shape. Where the pads follow from the input
// size (output_shape, SAME_UPPER/SAME_LOWER) the input's spatial extents must be static;
// otherwise any extent runs through one kernel.
#pragma once

#include <memory>

#include "lowering/block.h"
#include "lowering/halide_cache.h"
#include "lowering/lower_elementwise.h"

namespace rnnc {

// kUnsupported (the block then runs on the reference kernels) for other element types, weights
// computed at run time, spatial ranks other than 1 and 2, attributes that do not match W's rank,
// and pads that depend on a run-time input size.
std::unique_ptr<ExecutionBlock> lower_conv_transpose_group(const FusionGroup& group,
                                                           HalideCache& cache);

}  // namespace rnnc
