// The gRPC form of an inference request and its response (grpc_service.proto's ModelInferRequest
// and ModelInferResponse): inputs as typed contents (fp32_contents, int_contents, ...) or all as
// raw_input_contents. Functions of the message alone, without a server or a call, so the decoder
// is fuzzed on its own (tests/fuzz/fuzz_serve_request.cc).
#pragma once

#include "grpc_service.pb.h"
#include "serve/tensor.h"

namespace rnnc::serve {

// The request `message` carries (its deadline is the call's: the server sets it). RequestError
// (INVALID_ARGUMENT) naming what is wrong: a datatype rnnc has no element type for, a negative dim
// or a tensor over max_tensor_bytes, typed contents in the wrong field, of the wrong count or
// outside the datatype's range (300 in int_contents for INT8), raw contents of the wrong size or
// mixed with typed ones, BOOL raw bytes other than 0 and 1, parameters of the wrong type;
// NOT_FOUND for a model version other than "" or "1".
InferRequest decode_grpc_request(const inference::ModelInferRequest& message,
                                 size_t max_tensor_bytes);

// `response` as a message: outputs in raw_output_contents when `raw` (the request used raw
// contents) or when an output's datatype has no typed field (FP16, BF16), else typed contents.
void encode_grpc_response(const InferResponse& response, bool raw,
                          inference::ModelInferResponse& message);

}  // namespace rnnc::serve
