#include "lowering/aot_writer.h"

#include <cstdio>

#include "ir/error.h"
#include "lowering/block.h"

namespace rnnc {

std::string c_string_literal(const std::string& text) {
  std::string literal = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      literal += '\\';
      literal += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\%03o", c);
      literal += escaped;
    } else {
      literal += static_cast<char>(c);
    }
  }
  return literal + "\"";
}

std::string run_time_ints(AotWriter& writer, const Node& node, const Value* value,
                          const char* name, size_t max_count, std::string& code, size_t& count) {
  const DType dtype = value->type.dtype;
  int64_t numel = -1;
  if (value->type.shape && shape_is_known(*value->type.shape)) {
    numel = 1;
    for (int64_t extent : shape_values(*value->type.shape)) numel *= extent;
  }
  if ((dtype != DType::kInt64 && dtype != DType::kInt32) || numel < 0 ||
      numel > static_cast<int64_t>(max_count)) {
    raise_unsupported(cat("ahead-of-time export: ", node.describe(), ": input '", name, "' is ",
                          value->type.to_string(), "; a run-time ", name,
                          " must be int32 or int64 with a static count of at most ", max_count,
                          " elements"));
  }
  count = static_cast<size_t>(numel);
  const std::string local = writer.fresh(name);
  code += cat("  int64_t ", local, "[", count > 0 ? count : 1, "];\n  rn_operand_ints(",
              writer.value(value), ", ", dtype == DType::kInt64 ? 1 : 0, ", ", count, ", ", local,
              ");\n");
  return local;
}

void ExecutionBlock::write_aot(AotWriter&, const AotBlockIO&) const {
  std::string names;
  for (const Node* node : nodes) names += cat(names.empty() ? "" : ", ", node->describe());
  raise_unsupported(cat("ahead-of-time export: ", names.empty() ? kind() : names,
                        " runs as '", kind(), "', which needs rnnc's C++ at run time; Halide, "
                        "recurrent, view and copy (Concat, Slice, Pad, Transpose, Expand) blocks "
                        "compile into a standalone library"));
}

}  // namespace rnnc
