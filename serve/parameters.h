// Request parameters (the protocol's `parameters` map) that the server acts on, read the same way
// from gRPC's InferParameter and REST's JSON values:
//   sequence_id     int or string: the sequence the request belongs to (0 / "" = none)
//   sequence_start  bool: the first request of the sequence (its state starts from zeros)
//   sequence_end    bool: the last request (the server drops the sequence's state after it)
//   timeout         int, microseconds: the request fails if it has not run by then
// Other parameters are accepted and ignored, as the protocol asks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include "serve/tensor.h"

namespace rnnc::serve {

using ParameterValue = std::variant<bool, int64_t, uint64_t, double, std::string>;

// Sets request.sequence and tightens request.deadline. RequestError (INVALID_ARGUMENT) naming the
// parameter when one has the wrong type or value.
void apply_request_parameters(const std::map<std::string, ParameterValue>& parameters,
                              InferRequest& request);

}  // namespace rnnc::serve
