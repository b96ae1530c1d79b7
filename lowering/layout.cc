#include "lowering/layout.h"

#include <algorithm>
#include <cstring>

#include "ir/error.h"

namespace rnnc {

std::string Layout::to_string() const {
  switch (kind) {
    case Kind::kNative: return "native";
    case Kind::kTiled: return cat("tiled(d", dim, ", ", tile, ")");
    case Kind::kPermutedPadded: return cat("permuted_padded(d", dim, ", ", tile, ")");
  }
  return "native";
}


namespace {


template <typename T>
std::vector<T> without(const std::vector<T>& values, size_t k) {
  std::vector<T> rest;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i != k) rest.push_back(values[i]);
  }
  return rest;
}

}  // namespace

LayoutMap::LayoutMap(std::vector<int64_t> logical_shape, Layout layout)
    : logical_(std::move(logical_shape)), layout_(layout) {
  if (layout_.is_native()) {
    physical_ = logical_;
    return;
  }
  RNNC_CHECK(layout_.dim >= 0 && layout_.dim < static_cast<int>(logical_.size()), "layout ",
             layout_.to_string(), " for a tensor of rank ", logical_.size());
  RNNC_CHECK(layout_.tile > 0, "layout ", layout_.to_string(), " needs a positive tile");
  size_t k = static_cast<size_t>(layout_.dim);
  int64_t extent = logical_[k];
  int64_t tiles = (extent + layout_.tile - 1) / layout_.tile;
  physical_ = without(logical_, k);
  if (layout_.kind == Layout::Kind::kTiled) {
    physical_.insert(physical_.begin(), tiles);
    physical_.push_back(layout_.tile);
  } else {
    physical_.push_back(tiles * layout_.tile);
  }
}

std::vector<int64_t> LayoutMap::physical_index(const std::vector<int64_t>& logical) const {
  RNNC_CHECK(logical.size() == logical_.size(), "index rank ", logical.size(), " for ",
             to_string());
  if (layout_.is_native()) return logical;
  size_t k = static_cast<size_t>(layout_.dim);
  std::vector<int64_t> physical = without(logical, k);
  if (layout_.kind == Layout::Kind::kTiled) {
    physical.insert(physical.begin(), logical[k] / layout_.tile);
    physical.push_back(logical[k] % layout_.tile);
  } else {
    physical.push_back(logical[k]);
  }
  return physical;
}

int64_t LayoutMap::physical_offset(const std::vector<int64_t>& logical) const {
  std::vector<int64_t> index = physical_index(logical);
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) offset = offset * physical_[i] + index[i];
  return offset;
}

std::vector<Halide::Expr> LayoutMap::physical_coords(
    const std::vector<Halide::Expr>& logical) const {
  RNNC_CHECK(logical.size() == logical_.size(), "index rank ", logical.size(), " for ",
             to_string());
  if (layout_.is_native()) return logical;
  // Row-major order in, the map, innermost-first order out.
  std::vector<Halide::Expr> row_major(logical.rbegin(), logical.rend());
  size_t k = static_cast<size_t>(layout_.dim);
  Halide::Expr tile = static_cast<int>(layout_.tile);
  std::vector<Halide::Expr> physical = without(row_major, k);
  if (layout_.kind == Layout::Kind::kTiled) {
    physical.insert(physical.begin(), row_major[k] / tile);
    physical.push_back(row_major[k] % tile);
  } else {
    physical.push_back(row_major[k]);
  }
  return std::vector<Halide::Expr>(physical.rbegin(), physical.rend());
}

Tensor LayoutMap::marshal(const Tensor& native) const {
  RNNC_CHECK(native.shape() == logical_, "marshaling a ", shape_text(native.shape()),
             " tensor with ", to_string());
  Tensor physical = marshaled_weight_tensor(native.dtype(), physical_);  // zero: the padding
  if (native.numel() == 0) return physical;
  size_t element = dtype_size(native.dtype());
  RNNC_CHECK(element > 0, "cannot marshal ", dtype_name(native.dtype()), " tensors");
  const auto* from = static_cast<const uint8_t*>(native.raw_data());
  auto* to = static_cast<uint8_t*>(physical.raw_data());
  std::vector<int64_t> index(logical_.size(), 0);
  for (int64_t i = 0; i < native.numel(); ++i) {
    std::memcpy(to + static_cast<size_t>(physical_offset(index)) * element,
                from + static_cast<size_t>(i) * element, element);
    for (size_t d = index.size(); d-- > 0;) {  // odometer step, innermost first
      if (++index[d] < logical_[d]) break;
      index[d] = 0;
    }
  }
  return physical;
}

std::string LayoutMap::to_string() const {
  return cat(layout_.to_string(), " ", shape_text(logical_), " -> ", shape_text(physical_));
}

Tensor marshaled_weight_tensor(DType dtype, std::vector<int64_t> shape) {
  constexpr int64_t kHugePagesFrom = int64_t{1} << 20;
  if (shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype)) >= kHugePagesFrom) {
    return Tensor::huge_page_backed(dtype, std::move(shape));
  }
  return Tensor(dtype, std::move(shape));
}

}  // namespace rnnc
