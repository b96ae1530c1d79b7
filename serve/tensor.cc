#include "serve/tensor.h"

#include <cstring>
#include <limits>

#include "ir/error.h"
#include "serve/datatype.h"
#include "serve/status.h"

namespace rnnc::serve {

void HostTensor::resize_bytes(size_t bytes) {
  storage_.assign((bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t), 0);
  bytes_ = bytes;
}

NamedTensor HostTensor::view() const {
  return {name, {type, shape, const_cast<uint64_t*>(storage_.data())}};
}

HostTensor HostTensor::copy_of(const NamedTensor& tensor) {
  HostTensor copy;
  copy.name = tensor.name;
  copy.type = tensor.tensor.type;
  copy.shape = tensor.tensor.shape;
  copy.resize_bytes(tensor.tensor.byte_size());
  if (copy.bytes_ > 0) std::memcpy(copy.data(), tensor.tensor.data, copy.bytes_);
  return copy;
}

size_t tensor_bytes(const std::string& name, ElementType type, const std::vector<int64_t>& shape,
                    size_t max_bytes) {
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] < 0) {
      raise_request(StatusCode::kInvalidArgument,
                    cat("input '", name, "': dim ", k, " is ", shape[k], ", must be >= 0"));
    }
  }
  // Past the limit (or 64 bits) the product is only marked as over it: a later zero dim still
  // makes it 0.
  size_t bytes = element_size(type);
  bool over = false;
  for (int64_t d : shape) {
    if (d == 0) return 0;
    over =
        over || __builtin_mul_overflow(bytes, static_cast<size_t>(d), &bytes) || bytes > max_bytes;
  }
  if (over) {
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    raise_request(StatusCode::kInvalidArgument,
                  cat("input '", name, "' (", datatype_name(type), "[", dims,
                      "]) is larger than the server's limit of ", max_bytes,
                      " bytes per tensor (--max-tensor-bytes)"));
  }
  return bytes;
}

void check_bool_bytes(const HostTensor& tensor, const char* source) {
  if (tensor.type != ElementType::kBool) return;
  const auto* bytes = static_cast<const uint8_t*>(tensor.data());
  for (size_t k = 0; k < tensor.byte_size(); ++k) {
    if (bytes[k] > 1) {
      raise_request(StatusCode::kInvalidArgument,
                    cat("input '", tensor.name, "': byte ", k, " of its BOOL ", source, " is ",
                        static_cast<int>(bytes[k]), ", not 0 or 1"));
    }
  }
}

}  // namespace rnnc::serve
