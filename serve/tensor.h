// The tensors and requests the server handles, independent of the protocol that carried them:
// the gRPC and REST front ends decode into InferRequest and encode InferResponse.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rnnc/rnnc.h"

namespace rnnc::serve {

using Clock = std::chrono::steady_clock;

// An owned dense tensor, 8-byte aligned so any element type can be read in place.
struct HostTensor {
  std::string name;
  ElementType type = ElementType::kFloat32;
  std::vector<int64_t> shape;

  void resize_bytes(size_t bytes);
  size_t byte_size() const { return bytes_; }
  void* data() { return storage_.data(); }
  const void* data() const { return storage_.data(); }
  NamedTensor view() const;
  // A copy of `tensor` (e.g. a session's output view).
  static HostTensor copy_of(const NamedTensor& tensor);

 private:
  std::vector<uint64_t> storage_;
  size_t bytes_ = 0;
};

// The bytes a tensor of `type` and `shape` holds. RequestError (INVALID_ARGUMENT) naming the
// tensor for a negative dim, and for a size over `max_bytes` (the server's per-tensor limit).
size_t tensor_bytes(const std::string& name, ElementType type, const std::vector<int64_t>& shape,
                    size_t max_bytes);

// RequestError (INVALID_ARGUMENT) naming the tensor and the byte when a BOOL tensor holds a byte
// other than 0 or 1 (`source`: where the message carried its bytes). Other types: no check.
void check_bool_bytes(const HostTensor& tensor, const char* source);

// Triton's sequence extension: the request parameters sequence_id, sequence_start, sequence_end.
struct SequenceControl {
  std::string id;  // "" = not part of a sequence (ids given as integers are kept as decimal text)
  bool start = false;
  bool end = false;
};

struct InferRequest {
  std::string model_name;
  std::string id;  // echoed in the response
  SequenceControl sequence;
  std::vector<HostTensor> inputs;
  std::vector<std::string> requested_outputs;  // empty = every output
  Clock::time_point deadline = Clock::time_point::max();
  // Polled before the request runs: true once the client has gone away.
  std::function<bool()> is_cancelled;
};

struct InferResponse {
  std::string model_name;
  std::string id;
  SequenceControl sequence;
  std::vector<HostTensor> outputs;
};

}  // namespace rnnc::serve
