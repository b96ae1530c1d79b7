// lower_resize: a Resize or Upsample (nearest, linear, cubic) with constant scales or sizes -> one
// Halide pipeline over the tensor viewed as (width, height, rest): the last two axes may be
// resized, the others pass through.
//
// Each resized axis maps an output position to its input taps exactly as the reference kernel
// does (coordinate transform, nearest rounding, linear taps clamped at the edges; computed in
// double at lowering time), stored as tables the kernel indexes:
//
//   nearest: y(w, h, n) = x(iw[w], ih[h], n)
//   linear:  y(w, h, n) = sum over a, b in {0, 1} of  vh[b][h] * vw[a][w] * x(iw[a][w], ih[b][h],
//   n)
//
// vectorized along the width (the table lookups make the input reads gathers).
#pragma once

#include <memory>

#include "lowering/block.h"
#include "lowering/halide_cache.h"

namespace rnnc {

// kUnsupported (the node then runs on its reference kernel) for tf_crop_and_resize, scales or
// sizes computed at run time, a resized axis other than the last two or of a size known only at
// run time, and element types other than float32 (nearest: also int32 and int64).
std::unique_ptr<ExecutionBlock> lower_resize(const Node& node, HalideCache& cache);

}  // namespace rnnc
