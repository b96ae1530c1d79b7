// Slice and Range element counts by the ONNX spec's rules, on known numbers: what the reference
// kernels compute and what shape inference infers for a known axis, from one definition.

#pragma once

#include <algorithm>
#include <cstdint>

namespace rnnc {

// ceil(distance / |step|) elements for a positive distance, else none; exact for every int64 step.
inline int64_t step_count(int64_t distance, int64_t step) {
  if (distance <= 0) return 0;
  uint64_t magnitude = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  return static_cast<int64_t>((static_cast<uint64_t>(distance) - 1) / magnitude + 1);
}

struct SliceRange {
  int64_t start = 0;
  int64_t count = 0;
};

// The spec's clamping on an axis of size d: negative bounds count from the end; starts clamp to
// [0, d] going forward and [0, d - 1] going backward, ends to [0, d] and [-1, d - 1].
inline SliceRange resolve_slice(int64_t d, int64_t start, int64_t end, int64_t step) {
  if (d == 0) return {0, 0};  // nothing to take (and no clamp into [0, -1] going backward)
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
  } else {
    start = std::clamp<int64_t>(start, 0, d - 1);
    end = std::clamp<int64_t>(end, -1, d - 1);
  }
  return {start, step_count(step > 0 ? end - start : start - end, step)};
}

}  // namespace rnnc
