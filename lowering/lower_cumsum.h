// lower_cumsum: a CumSum node whose axis is a constant -> one Halide scan.
//
// The input is viewed as (inner, length, outer) around the axis (the dims after it merged, the
// dims before it merged), and the output is a scan along `length` whose update runs the inner
// dim innermost as vectors: each step adds one contiguous row of the input to the previous row of
// the output.
//
//   y(i, 0, o) = x(i, 0, o)                     (exclusive: 0)
//   y(i, p, o) = y(i, p - 1, o) + x(i, p, o)    (exclusive: x(i, p - 1, o); reverse walks p down)
//
// float32 sums in float32 in axis order (the reference accumulates in double); int32 and int64
// wrap modulo 2^bits as the reference's. With the axis last (inner extent 1) the scan is scalar.
#pragma once

#include <memory>

#include "lowering/block.h"
#include "lowering/halide_cache.h"

namespace rnnc {

// kUnsupported for an axis computed at run time, other element types (float16, float64, the
// unsigned ones) and an input of unknown rank.
std::unique_ptr<ExecutionBlock> lower_cumsum(const Node& node, HalideCache& cache);

}  // namespace rnnc
