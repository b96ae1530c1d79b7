// The protocol's tensor datatype names ("FP32", "INT64", ...) for rnnc's element types.
#pragma once

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

}  // namespace rnnc::serve
