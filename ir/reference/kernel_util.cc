#include <algorithm>

#include "ir/reference/kernel.h"

namespace rnnc {

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                      const KernelContext& context) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      auto text = [](const std::vector<int64_t>& s) {
        std::string t = "[";
        for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
        return t + "]";
      };
      context.fail_input(cat("shapes ", text(a), " and ", text(b), " cannot be broadcast"));
    }
    out[k] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) strides[k - 1] = strides[k] * shape[k];
  return strides;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_shape,
                                       const std::vector<int64_t>& out_shape) {
  std::vector<int64_t> in_strides = row_major_strides(in_shape);
  std::vector<int64_t> strides(out_shape.size(), 0);
  size_t offset = out_shape.size() - in_shape.size();
  for (size_t k = 0; k < in_shape.size(); ++k) {
    strides[k + offset] = in_shape[k] == 1 ? 0 : in_strides[k];
  }
  return strides;
}

Tensor widen_half(const Tensor& tensor) {
  if (tensor.dtype() == DType::kFloat16 || tensor.dtype() == DType::kBFloat16) {
    return tensor.cast(DType::kFloat32);
  }
  return tensor;
}

Tensor narrow_to(const Tensor& tensor, DType dtype) {
  return tensor.dtype() == dtype ? tensor : tensor.cast(dtype);
}

std::vector<int64_t> tensor_to_int64s(const Tensor& tensor) {
  std::vector<int64_t> values(static_cast<size_t>(tensor.numel()));
  for (int64_t i = 0; i < tensor.numel(); ++i) values[static_cast<size_t>(i)] = tensor.get_int64(i);
  return values;
}

}  // namespace rnnc
