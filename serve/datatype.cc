#include "serve/datatype.h"

#include "ir/error.h"
#include "serve/status.h"

namespace rnnc::serve {

namespace {

struct DatatypeName {
  ElementType type;
  const char* name;
};

constexpr DatatypeName kDatatypes[] = {
    {ElementType::kBool, "BOOL"},     {ElementType::kUInt8, "UINT8"},
    {ElementType::kUInt16, "UINT16"}, {ElementType::kUInt32, "UINT32"},
    {ElementType::kUInt64, "UINT64"}, {ElementType::kInt8, "INT8"},
    {ElementType::kInt16, "INT16"},   {ElementType::kInt32, "INT32"},
    {ElementType::kInt64, "INT64"},   {ElementType::kFloat16, "FP16"},
    {ElementType::kFloat32, "FP32"},  {ElementType::kFloat64, "FP64"},
    {ElementType::kBFloat16, "BF16"},
};

}  // namespace

const char* datatype_name(ElementType type) {
  for (const DatatypeName& entry : kDatatypes) {
    if (entry.type == type) return entry.name;
  }
  return "UNKNOWN";
}

std::optional<ElementType> parse_datatype(const std::string& name) {
  for (const DatatypeName& entry : kDatatypes) {
    if (name == entry.name) return entry.type;
  }
  return std::nullopt;
}

ElementType input_datatype(const std::string& input, const std::string& name) {
  if (name == "BYTES") {
    raise_request(StatusCode::kInvalidArgument,
                  cat("input '", input,
                      "': datatype BYTES is not supported (rnnc models take "
                      "numeric tensors)"));
  }
  std::optional<ElementType> type = parse_datatype(name);
  if (!type) {
    raise_request(StatusCode::kInvalidArgument,
                  cat("input '", input, "': unknown datatype '", name, "'"));
  }
  return *type;
}

}  // namespace rnnc::serve
