// libFuzzer target for the decoders `rnnc serve` runs on bytes from the network: the REST infer
// body (JSON header, JSON tensor data, binary data after an Inference-Header-Content-Length) and
// the gRPC ModelInferRequest (protobuf, typed or raw contents). The first byte picks the form:
//   0  REST, the whole body JSON;
//   1  REST, the next two bytes (little-endian, as decimal text) the header length, the rest the
//      body;
//   2  gRPC, the rest a serialized ModelInferRequest.
// A RequestError is an acceptable outcome; a crash, hang, leak, sanitizer report or any other
// exception is a bug. A decoded request is encoded back as a response (its inputs as outputs),
// which must not fail either.
//
// Built by scripts/fuzz.sh with clang (-fsanitize=fuzzer,address,undefined); the same entry point
// is replayed on deterministic mutations in serve_parts_test (tests/serve/serve_parts_test.cc).
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/grpc_codec.h"
#include "serve/rest_codec.h"
#include "serve/status.h"

namespace {

constexpr size_t kMaxTensorBytes = 1 << 20;

rnnc::serve::InferResponse echo(const rnnc::serve::InferRequest& request) {
  rnnc::serve::InferResponse response;
  response.model_name = request.model_name;
  response.id = request.id;
  response.sequence = request.sequence;
  response.outputs = request.inputs;
  return response;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Protobuf logs every string field that is not UTF-8 while parsing; the parse result is what
  // counts here.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  const auto* bytes = reinterpret_cast<const char*>(data);
  try {
    switch (data[0] % 3) {
      case 0:
      case 1: {
        const bool split = data[0] % 3 == 1 && size > 2;
        const std::string length = split ? std::to_string(data[1] | data[2] << 8) : std::string();
        const size_t skip = split ? 3 : 1;
        const std::string_view body(bytes + skip, size - skip);
        const rnnc::serve::RestInferRequest request = rnnc::serve::decode_rest_request(
            body, split ? &length : nullptr, "fuzz", "", kMaxTensorBytes);
        (void)rnnc::serve::encode_rest_response(request, echo(request.request));
        break;
      }
      case 2: {
        inference::ModelInferRequest message;
        if (!message.ParseFromArray(bytes + 1, static_cast<int>(size - 1))) break;
        const rnnc::serve::InferRequest request =
            rnnc::serve::decode_grpc_request(message, kMaxTensorBytes);
        inference::ModelInferResponse response;
        rnnc::serve::encode_grpc_response(echo(request), message.raw_input_contents_size() > 0,
                                          response);
        break;
      }
    }
  } catch (const rnnc::serve::RequestError&) {
  }
  return 0;
}
