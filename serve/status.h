// How a request fails, in terms both protocols map from: each code has its gRPC status code and
// its HTTP status. Request handling throws RequestError; the protocol front ends catch it.
#pragma once

#include <stdexcept>
#include <string>

namespace rnnc::serve {

enum class StatusCode {
  kOk,
  kInvalidArgument,    // malformed request, unknown input, wrong datatype or shape, bad sequence
  kNotFound,           // unknown model
  kUnavailable,        // not ready yet, shutting down, or the request queue is full
  kResourceExhausted,  // no room for another sequence
  kDeadlineExceeded,   // the request's deadline passed before it ran
  kCancelled,          // the client went away
  kInternal,           // an rnnc invariant broke
};

const char* status_code_name(StatusCode code);  // "INVALID_ARGUMENT", as gRPC spells them
int http_status(StatusCode code);               // 400, 404, 503, ...

class RequestError : public std::runtime_error {
 public:
  RequestError(StatusCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  StatusCode code() const { return code_; }

 private:
  StatusCode code_;
};

[[noreturn]] inline void raise_request(StatusCode code, const std::string& message) {
  throw RequestError(code, message);
}

}  // namespace rnnc::serve
