// Integer operands of data-movement blocks (lower_copy.h, lower_view.h): axes, starts, shapes,
// read at run time from int32 or int64 tensors.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ir/tensor.h"
#include "lowering/core/copy_kernels.h"

namespace rnnc {

// An int32 / int64 operand of at most `capacity` elements (any shape, as the reference reads it)
// into `values`; false for anything else.
inline bool read_ints(const Tensor& tensor, int64_t* values, size_t capacity, size_t& count) {
  if (tensor.numel() > static_cast<int64_t>(capacity)) return false;
  count = static_cast<size_t>(tensor.numel());
  if (tensor.dtype() == DType::kInt64) {
    std::copy_n(tensor.data<int64_t>(), count, values);
  } else if (tensor.dtype() == DType::kInt32) {
    std::copy_n(tensor.data<int32_t>(), count, values);
  } else {
    return false;
  }
  return true;
}

// Normalizes axes against `rank` (at most 32): false for one out of range or named twice
// (lowering/core/copy_kernels.h, which the AOT driver runs too).
inline bool normalize_axes(int64_t* axes, size_t count, int64_t rank) {
  return rn_normalize_axes(axes, static_cast<int>(count), rank) != 0;
}

}  // namespace rnnc
