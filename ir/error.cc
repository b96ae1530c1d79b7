#include "ir/error.h"

namespace rnnc {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidModel: return "invalid model";
    case ErrorKind::kInvalidInput: return "invalid input";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kIo: return "I/O error";
    case ErrorKind::kInternal: return "internal error";
    case ErrorKind::kOverloaded: return "overloaded";
    case ErrorKind::kCancelled: return "cancelled";
  }
  return "error";
}

void raise(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

}  // namespace rnnc
