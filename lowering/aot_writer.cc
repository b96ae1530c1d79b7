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

void ExecutionBlock::write_aot(AotWriter&, const AotBlockIO&) const {
  std::string names;
  for (const Node* node : nodes) names += cat(names.empty() ? "" : ", ", node->describe());
  raise_unsupported(cat("ahead-of-time export: ", names.empty() ? kind() : names,
                        " runs as '", kind(), "', which needs rnnc's C++ at run time; Halide, "
                        "recurrent, view and copy (Concat, Slice, Pad) blocks compile into a "
                        "standalone library"));
}

}  // namespace rnnc
