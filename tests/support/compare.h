// Tensor comparison for tests: exact for integers, bools and strings; for floats
// |actual - expected| <= atol + rtol * |expected|, NaN matching NaN and infinities matching exactly.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace rnnc::testing {

struct Tolerance {
  double rtol;
  double atol;
};

struct Comparison {
  bool ok = true;
  std::string message;  // the first mismatch, or a dtype/shape mismatch
  double max_abs_diff = 0;
};

Comparison compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tolerance);
// The same for any value: sequences element by element (their lengths equal), an empty optional
// only against an empty optional.
Comparison compare_values(const Tensor& actual, const Tensor& expected, Tolerance tolerance);

}  // namespace rnnc::testing
