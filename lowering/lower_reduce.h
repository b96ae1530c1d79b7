// lower_reduce: reductions over constant axes and the row normalizations, each one block.
//
//   Softmax / LogSoftmax along the last axis (the acoustic model's head), optionally fed by an
//   elementwise chain: per row, m = max(z), s = sum(exp(z - m)), then exp(z - m) / s or
//   (z - m) - log(s), in float32 (the reference sums in double);
//   ReduceSum / ReduceMean / ReduceMax / ReduceMin / ReduceSumSquare / ReduceL1 / ReduceL2 /
//   ReduceLogSum over constant axes (attribute, or a constant `axes` input), keepdims either way.
//
// A reduction along the innermost dim keeps `lanes` partial results per row (element n goes to
// lane n % lanes) and combines them at the end, so the loop vectorizes; a reduction over outer
// dims vectorizes across the kept innermost dim instead. The input's dims are merged into runs of
// reduced and kept dims (a ReduceMean over axis 1 of [seq, 4, 128] is (128 kept, 4 reduced,
// seq kept)); extents are run-time.
#pragma once

#include <Halide.h>

#include <functional>
#include <memory>
#include <vector>

#include "lowering/block.h"
#include "lowering/halide_cache.h"
#include "lowering/lower_elementwise.h"

namespace rnnc {

enum class RowOp { kSum, kMax, kMin };

// result(rows) = op over n in [0, extent) and over `outer` extents (further reduced dims) of
// value(n, outer indices), with rows the caller's pure vars: `partial` holds the lane partials.
struct RowReduction {
  Halide::Func partial;
  Halide::Func result;
};
RowReduction reduce_row(
    const std::string& name, RowOp op, int lanes, Halide::Expr extent,
    const std::vector<Halide::Expr>& outer_extents,
    const std::function<Halide::Expr(Halide::Expr, const std::vector<Halide::Expr>&)>& value,
    const std::vector<Halide::Var>& rows);
// Computes both Funcs of a reduction at `level` of their consumer, the partials vectorized.
void schedule_row_reduction(RowReduction& reduction, const Halide::LoopLevel& level, int lanes);

// Softmax / LogSoftmax of z over its first (innermost) var, `extent` elements per row: the value
// at (n, rows) and the row statistics to schedule.
struct RowNormalization {
  RowReduction max;
  RowReduction sum;
  Halide::Expr value;
};
RowNormalization normalize_row(bool log, Halide::Func z, const Halide::Var& n,
                               const std::vector<Halide::Var>& rows, Halide::Expr extent,
                               int lanes);

// kUnsupported unless the normalizer works along the last axis of its input.
void check_last_axis_normalizer(const Node& normalizer);

// A Softmax / LogSoftmax group without a GEMM root (its input possibly an elementwise chain).
std::unique_ptr<ExecutionBlock> lower_normalizer_group(const FusionGroup& group,
                                                       HalideCache& cache);

// A Reduce* node (alone in its group).
std::unique_ptr<ExecutionBlock> lower_reduction(const FusionGroup& group, HalideCache& cache);

}  // namespace rnnc
