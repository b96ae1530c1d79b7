#include "tests/support/compare.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace rnnc::testing {

namespace {


}  // namespace

Comparison compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tolerance) {
  Comparison result;
  if (actual.dtype() != expected.dtype()) {
    result.ok = false;
    result.message = cat("dtype ", dtype_onnx_name(actual.dtype()), " != expected ",
                         dtype_onnx_name(expected.dtype()));
    return result;
  }
  if (actual.shape() != expected.shape()) {
    result.ok = false;
    result.message = cat("shape ", shape_text(actual.shape()), " != expected ",
                         shape_text(expected.shape()));
    return result;
  }
  if (actual.dtype() == DType::kString) {
    for (int64_t i = 0; i < actual.numel(); ++i) {
      const auto& a = actual.strings()[static_cast<size_t>(i)];
      const auto& e = expected.strings()[static_cast<size_t>(i)];
      if (a != e) {
        result.ok = false;
        result.message = cat("element ", i, ": \"", a, "\" != expected \"", e, "\"");
        return result;
      }
    }
    return result;
  }
  bool floating = is_floating(actual.dtype());
  int64_t mismatches = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    bool equal;
    double a = 0, e = 0;
    if (floating) {
      a = actual.get_double(i);
      e = expected.get_double(i);
      if (std::isnan(e) || std::isnan(a)) {
        equal = std::isnan(e) && std::isnan(a);
      } else if (std::isinf(e) || std::isinf(a)) {
        equal = a == e;
      } else {
        double diff = std::fabs(a - e);
        result.max_abs_diff = std::max(result.max_abs_diff, diff);
        equal = diff <= tolerance.atol + tolerance.rtol * std::fabs(e);
      }
    } else if (actual.dtype() == DType::kUInt64) {
      equal = actual.data<uint64_t>()[i] == expected.data<uint64_t>()[i];
      a = static_cast<double>(actual.data<uint64_t>()[i]);
      e = static_cast<double>(expected.data<uint64_t>()[i]);
    } else {
      equal = actual.get_int64(i) == expected.get_int64(i);
      a = static_cast<double>(actual.get_int64(i));
      e = static_cast<double>(expected.get_int64(i));
    }
    if (!equal) {
      if (mismatches == 0) {
        std::ostringstream msg;
        msg.precision(9);
        msg << "element " << i << ": " << a << " != expected " << e;
        if (floating) msg << " (rtol " << tolerance.rtol << ", atol " << tolerance.atol << ")";
        result.message = msg.str();
      }
      ++mismatches;
    }
  }
  if (mismatches) {
    result.ok = false;
    result.message += cat("; ", mismatches, " of ", actual.numel(), " elements differ");
  }
  return result;
}

Comparison compare_values(const Tensor& actual, const Tensor& expected, Tolerance tolerance) {
  auto kind = [](const Tensor& value) {
    return value.is_sequence() ? "a sequence" : value.is_none() ? "an empty optional" : "a tensor";
  };
  if (actual.holds() != expected.holds()) {
    Comparison mismatch;
    mismatch.ok = false;
    mismatch.message = cat("got ", kind(actual), ", expected ", kind(expected));
    return mismatch;
  }
  if (actual.is_tensor()) return compare_tensors(actual, expected, tolerance);
  Comparison result;
  if (actual.is_none()) return result;
  const std::vector<Tensor>& got = actual.elements();
  const std::vector<Tensor>& want = expected.elements();
  if (got.size() != want.size()) {
    result.ok = false;
    result.message = cat("a sequence of ", got.size(), " elements, expected ", want.size());
    return result;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison element = compare_tensors(got[i], want[i], tolerance);
    result.max_abs_diff = std::max(result.max_abs_diff, element.max_abs_diff);
    if (!element.ok) {
      element.message = cat("element ", i, ": ", element.message);
      return element;
    }
  }
  return result;
}

}  // namespace rnnc::testing
