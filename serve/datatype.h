// The protocol's tensor datatype names ("FP32", "INT64", ...) for rnnc's element types.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "rnnc/rnnc.h"

namespace rnnc::serve {

const char* datatype_name(ElementType type);
// nullopt for names rnnc holds no element type for (BYTES) and for unknown names.
std::optional<ElementType> parse_datatype(const std::string& name);
// The element type of a request's input `input` of datatype `name`; RequestError
// (INVALID_ARGUMENT) naming the input for BYTES and for unknown names.
ElementType input_datatype(const std::string& input, const std::string& name);

// BOOL elements are one byte each, 0 or 1: C++ bool's representation here.
static_assert(sizeof(bool) == 1, "BOOL tensors hold one byte per element");

// Calls f(T{}) with the C++ type that holds `type`'s elements (bool for BOOL) and returns true;
// returns false without calling it for the types that have none here (FP16, BF16).
template <typename F>
bool with_element_type(ElementType type, F&& f) {
  switch (type) {
    case ElementType::kBool:
      f(bool{});
      return true;
    case ElementType::kUInt8:
      f(uint8_t{});
      return true;
    case ElementType::kInt8:
      f(int8_t{});
      return true;
    case ElementType::kUInt16:
      f(uint16_t{});
      return true;
    case ElementType::kInt16:
      f(int16_t{});
      return true;
    case ElementType::kUInt32:
      f(uint32_t{});
      return true;
    case ElementType::kInt32:
      f(int32_t{});
      return true;
    case ElementType::kUInt64:
      f(uint64_t{});
      return true;
    case ElementType::kInt64:
      f(int64_t{});
      return true;
    case ElementType::kFloat32:
      f(float{});
      return true;
    case ElementType::kFloat64:
      f(double{});
      return true;
    default:
      return false;
  }
}

// Element k of a tensor's bytes as T. BOOL's bytes are read as bytes (nonzero is true): a
// request's raw data may hold any byte there, which is not a valid bool object.
template <typename T>
T element_at(const void* data, size_t k) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<const uint8_t*>(data)[k] != 0;
  } else {
    return static_cast<const T*>(data)[k];
  }
}

// Whether the integer `value` is one of the integer type T's values.
template <typename T, typename V>
bool integer_fits(V value) {
  static_assert(std::is_integral_v<T> && std::is_integral_v<V>);
  if constexpr (std::is_signed_v<V>) {
    if (value < 0) {
      return std::is_signed_v<T> &&
             static_cast<int64_t>(value) >= static_cast<int64_t>(std::numeric_limits<T>::min());
    }
  }
  return static_cast<uint64_t>(value) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
}

}  // namespace rnnc::serve
