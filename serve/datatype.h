// The protocol's tensor datatype names ("FP32", "INT64", ...) for rnnc's element types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rnnc/rnnc.h"

namespace rnnc::serve {

const char* datatype_name(ElementType type);
// nullopt for names rnnc holds no element type for (BYTES) and for unknown names.
std::optional<ElementType> parse_datatype(const std::string& name);
// The element type of a request's input `input` of datatype `name`; RequestError
// (INVALID_ARGUMENT) naming the input for BYTES and for unknown names.
ElementType input_datatype(const std::string& input, const std::string& name);

// Calls f(T{}) with the C++ type that holds `type`'s elements (bool, one byte, for BOOL) and
// returns true; returns false without calling it for the types that have none here (FP16, BF16).
template <typename F>
bool with_element_type(ElementType type, F&& f) {
  switch (type) {
    case ElementType::kBool:
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

}  // namespace rnnc::serve
