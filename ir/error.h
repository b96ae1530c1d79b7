// Errors, three kinds kept apart:
//   kInvalidModel / kInvalidInput / kIo - the user's model, input or file is wrong;
//   kUnsupported                        - valid ONNX that rnnc does not handle (yet);
//   kInternal                           - an rnnc invariant broke (our bug): RNNC_CHECK only.
// All are rnnc::Error, so an embedding service catches one type and can still tell them apart.
// Messages name what is wrong: the node (name, op type, opset) and the ONNX field, or the input
// and what was expected.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

// The error vocabulary is public API: one definition, in the public headers (include/rnnc/),
// thrown by every stage.
#include "rnnc/error.h"

namespace rnnc {

// Concatenates anything streamable into a string: cat("rank ", 3, " != ", 2).
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream stream;
  (stream << ... << args);
  return stream.str();
}

[[noreturn]] void raise(ErrorKind kind, const std::string& message);

[[noreturn]] inline void raise_invalid_model(const std::string& message) {
  raise(ErrorKind::kInvalidModel, message);
}
[[noreturn]] inline void raise_invalid_input(const std::string& message) {
  raise(ErrorKind::kInvalidInput, message);
}
[[noreturn]] inline void raise_unsupported(const std::string& message) {
  raise(ErrorKind::kUnsupported, message);
}

// Internal invariant: never for anything user input can trigger.
#define RNNC_CHECK(cond, ...)                                                               \
  do {                                                                                      \
    if (!(cond))                                                                            \
      ::rnnc::raise(::rnnc::ErrorKind::kInternal,                                           \
                    ::rnnc::cat("internal error at ", __FILE__, ":", __LINE__, ": '", #cond, \
                                "' failed. " __VA_OPT__(, ) __VA_ARGS__));                  \
  } while (0)

}  // namespace rnnc
