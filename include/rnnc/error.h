// rnnc::Error: the one exception type rnnc throws, with its kind.
//   kInvalidModel - the model is malformed or uses an operator wrongly (names the node and field);
//   kInvalidInput - a run's input is wrong: unknown or missing name, element type, rank, a dim that
//                   contradicts the model's (symbolic) shape; the message names the input;
//   kUnsupported  - valid ONNX that rnnc does not handle;
//   kIo           - a file cannot be read or written, or memory ran out;
//   kInternal     - an rnnc invariant broke (a bug: please report it);
//   kOverloaded   - a StreamBatcher's queue is full: retry later, or serve fewer streams;
//   kCancelled    - a queued chunk will not run: its StreamBatcher was destroyed first.
#pragma once

#include <stdexcept>
#include <string>

// Everything declared here is librnnc.so's public API (its symbols are exported).
#pragma GCC visibility push(default)

namespace rnnc {

enum class ErrorKind {
  kInvalidModel,
  kInvalidInput,
  kUnsupported,
  kIo,
  kInternal,
  kOverloaded,
  kCancelled,
};

// "invalid model", "invalid input", "unsupported", "I/O error", "internal error", "overloaded",
// "cancelled".
const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace rnnc

#pragma GCC visibility pop
