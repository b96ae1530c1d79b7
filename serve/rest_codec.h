// The REST (HTTP/JSON) form of an inference request and its response: a JSON header whose inputs
// carry their data as (nested) JSON arrays or, with the binary tensor data extension, as raw
// bytes after the header (its length in the Inference-Header-Content-Length header). Functions
// of the body alone, without a server, so the parser is fuzzed on its own
// (tests/fuzz/fuzz_serve_request.cc).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "serve/tensor.h"

namespace rnnc::serve {

struct RestInferRequest {
  InferRequest request;
  bool all_binary = false;               // request parameter binary_data_output
  std::set<std::string> binary_outputs;  // outputs asked for with binary_data
};

// Decodes the body of a POST to /v2/models/`model`[/versions/`version`]/infer. header_length is
// the Inference-Header-Content-Length header's text, nullptr when the request has none (then the
// whole body is JSON). RequestError (INVALID_ARGUMENT) naming what is wrong: malformed JSON, a
// member missing or of the wrong JSON type, a shape entry that is not an integer, a datatype
// rnnc has no element type for, a value outside its datatype's range (300 for UINT8, 1e39 for
// FP32, true for FP32, 2 for BOOL), data or binary sizes that disagree with the shape, bytes
// after the last input's binary data; NOT_FOUND for a version other than "" or "1".
RestInferRequest decode_rest_request(std::string_view body, const std::string* header_length,
                                     const std::string& model, const std::string& version,
                                     size_t max_tensor_bytes);

struct RestBody {
  std::string content;
  std::string content_type;
  std::optional<size_t> header_length;  // with binary data: the JSON header's bytes
};

// The response to `request`: each output as JSON data (BOOL as true / false), or as binary data
// after the JSON header where the request asked for it and for the datatypes JSON has no form
// for (FP16, BF16).
RestBody encode_rest_response(const RestInferRequest& request, const InferResponse& response);

}  // namespace rnnc::serve
