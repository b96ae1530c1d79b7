// ir/slice_bounds.h against a direct walk of the spec's rule on small axes: every start, end and
// step in a window around the axis (negative and out-of-range bounds included; empty axes too)
// selects the indices the walk selects, and the int64 extremes count without overflow.
#include "ir/slice_bounds.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace rnnc {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// The indices a Slice takes from an axis of size d, one at a time, as docs/ops/tensor.md states the
// spec: a negative bound counts from the end once; forward, the walk starts at the first index at
// or after start and stops before end or the axis' end; backward, it starts at the last index at
// or before start (at index 0 for a start before the axis, where the spec and numpy part) and
// stops after end or index 0.
std::vector<int64_t> walk(int64_t d, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += d;
  if (end < 0) end += d;
  std::vector<int64_t> taken;
  if (d == 0) return taken;
  if (step > 0) {
    for (int64_t i = start < 0 ? 0 : start; i < end && i < d; i += step) taken.push_back(i);
  } else {
    int64_t first = start < 0 ? 0 : start;
    if (first > d - 1) first = d - 1;
    for (int64_t i = first; i > end && i >= 0; i += step) taken.push_back(i);
  }
  return taken;
}

std::vector<int64_t> taken_by(const SliceRange& range, int64_t step) {
  std::vector<int64_t> taken;
  for (int64_t k = 0; k < range.count; ++k) taken.push_back(range.start + k * step);
  return taken;
}

TEST(SliceBounds, EveryBoundAndStepOnSmallAxesTakesTheWalksIndices) {
  for (int64_t d = 0; d <= 6; ++d) {
    for (int64_t start = -9; start <= 9; ++start) {
      for (int64_t end = -9; end <= 9; ++end) {
        for (int64_t step : {-7, -3, -2, -1, 1, 2, 3, 7}) {
          SCOPED_TRACE(testing::Message()
                       << "d " << d << " start " << start << " end " << end << " step " << step);
          EXPECT_EQ(taken_by(resolve_slice(d, start, end, step), step), walk(d, start, end, step));
        }
      }
    }
  }
}

TEST(SliceBounds, Int64ExtremesCountWithoutOverflow) {
  EXPECT_EQ(resolve_slice(5, 0, kInt64Max, 1).count, 5);
  const SliceRange reversed = resolve_slice(5, -1, kInt64Min, -1);  // x[::-1]
  EXPECT_EQ(reversed.start, 4);
  EXPECT_EQ(reversed.count, 5);
  EXPECT_EQ(resolve_slice(5, kInt64Min, kInt64Max, kInt64Max).count, 1);
  EXPECT_EQ(resolve_slice(5, kInt64Max, kInt64Min, kInt64Min).count, 1);
  EXPECT_EQ(step_count(kInt64Max, 1), kInt64Max);
  EXPECT_EQ(step_count(kInt64Max, kInt64Min), 1);
  EXPECT_EQ(step_count(kInt64Max, 2), kInt64Max / 2 + 1);
  EXPECT_EQ(step_count(0, 1), 0);
  EXPECT_EQ(step_count(-3, 1), 0);
}

}  // namespace
}  // namespace rnnc
