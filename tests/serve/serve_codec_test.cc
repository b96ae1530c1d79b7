// The request decoders and response encoders of both protocol forms on their own
// (serve/rest_codec.h, serve/grpc_codec.h): what a valid request decodes to, the error naming
// each kind of bad request, and deterministic mutations of valid requests through the fuzz
// target's entry point (tests/fuzz/fuzz_serve_request.cc), which must decode or raise a
// RequestError and nothing else. The coverage-guided run is scripts/fuzz.sh.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "serve/grpc_codec.h"
#include "serve/rest_codec.h"
#include "serve/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace rnnc::serve {
namespace {

constexpr size_t kLimit = 1 << 20;

RestInferRequest rest(const std::string& body, const std::string* header_length = nullptr) {
  return decode_rest_request(body, header_length, "m", "", kLimit);
}

// The message of the RequestError `call` raises ("(no error)" when it returns).
template <typename Call>
std::string failure(Call&& call) {
  try {
    call();
  } catch (const RequestError& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << e.what();
    return e.what();
  }
  return "(no error)";
}

std::string rest_failure(const std::string& body) {
  return failure([&] { rest(body); });
}

// A request with one input of `datatype`, `shape` (JSON text) and `data` (JSON text).
std::string one_input(const std::string& datatype, const std::string& shape,
                      const std::string& data) {
  return R"({"inputs": [{"name": "x", "datatype": ")" + datatype + R"(", "shape": )" + shape +
         R"(, "data": )" + data + "}]}";
}

TEST(RestCodec, DecodesJsonDataOfEveryNumericKind) {
  RestInferRequest decoded = rest(
      R"({"id": "r1", "parameters": {"sequence_id": 7, "sequence_start": true},
          "inputs": [{"name": "f", "datatype": "FP32", "shape": [2, 2], "data": [[1, 2.5], [-3, 4e5]]},
                     {"name": "b", "datatype": "BOOL", "shape": [3], "data": [true, false, true]},
                     {"name": "i", "datatype": "INT8", "shape": [2], "data": [-128, 127]},
                     {"name": "u", "datatype": "UINT64", "shape": [1], "data": [18446744073709551615]}],
          "outputs": [{"name": "y", "parameters": {"binary_data": true}}, {"name": "z"}]})");
  const InferRequest& request = decoded.request;
  EXPECT_EQ(request.model_name, "m");
  EXPECT_EQ(request.id, "r1");
  EXPECT_EQ(request.sequence.id, "7");
  EXPECT_TRUE(request.sequence.start);
  ASSERT_EQ(request.inputs.size(), 4u);
  const auto* f = static_cast<const float*>(request.inputs[0].data());
  EXPECT_EQ(request.inputs[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 2.5f);
  EXPECT_EQ(f[2], -3.0f);
  EXPECT_EQ(f[3], 4e5f);
  const auto* b = static_cast<const uint8_t*>(request.inputs[1].data());
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(b[1], 0);
  EXPECT_EQ(b[2], 1);
  const auto* i = static_cast<const int8_t*>(request.inputs[2].data());
  EXPECT_EQ(i[0], -128);
  EXPECT_EQ(i[1], 127);
  EXPECT_EQ(*static_cast<const uint64_t*>(request.inputs[3].data()), UINT64_MAX);
  EXPECT_EQ(request.requested_outputs, (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(decoded.binary_outputs, (std::set<std::string>{"y"}));
  EXPECT_FALSE(decoded.all_binary);
}

TEST(RestCodec, DecodesBinaryDataAfterTheHeader) {
  const std::string header =
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "parameters": {"binary_data_size": 8}},
                     {"name": "b", "datatype": "BOOL", "shape": [2], "parameters": {"binary_data_size": 2}}]})";
  const float values[2] = {1.5f, -2.0f};
  std::string body = header;
  body.append(reinterpret_cast<const char*>(values), sizeof values);
  body.append("\x01\x00", 2);
  const std::string length = std::to_string(header.size());
  RestInferRequest decoded = rest(body, &length);
  ASSERT_EQ(decoded.request.inputs.size(), 2u);
  EXPECT_EQ(std::memcmp(decoded.request.inputs[0].data(), values, sizeof values), 0);
  EXPECT_EQ(static_cast<const uint8_t*>(decoded.request.inputs[1].data())[0], 1);

  std::string bad_bool = body;
  bad_bool[bad_bool.size() - 1] = 2;
  EXPECT_EQ(failure([&] { rest(bad_bool, &length); }),
            "input 'b': byte 1 of its BOOL binary data is 2, not 0 or 1");
  const std::string trailing = body + "x";
  EXPECT_EQ(failure([&] { rest(trailing, &length); }),
            "the body holds 1 bytes after the JSON header and the inputs' binary data");
  const std::string short_body = body.substr(0, body.size() - 1);
  EXPECT_EQ(failure([&] { rest(short_body, &length); }),
            "input 'b': the body ends before its 2 bytes of binary data");
  for (const std::string bad : {"", "12a", "-1", "99999999999999999999", "100000"}) {
    EXPECT_EQ(failure([&] { rest(body, &bad); }), "Inference-Header-Content-Length is '" + bad +
                                                      "', the body holds " +
                                                      std::to_string(body.size()) + " bytes")
        << bad;
  }
}

TEST(RestCodec, ValuesOutsideTheirDatatypeAreRefused) {
  EXPECT_EQ(rest_failure(one_input("UINT8", "[2]", "[1, 300]")),
            "input 'x': data[1] is 300, not a value of UINT8");
  EXPECT_EQ(rest_failure(one_input("INT8", "[1]", "[-129]")),
            "input 'x': data[0] is -129, not a value of INT8");
  EXPECT_EQ(rest_failure(one_input("UINT32", "[1]", "[-1]")),
            "input 'x': data[0] is -1, not a value of UINT32");
  EXPECT_EQ(rest_failure(one_input("INT64", "[1]", "[9223372036854775808]")),
            "input 'x': data[0] is 9223372036854775808, not a value of INT64");
  EXPECT_EQ(rest_failure(one_input("INT32", "[1]", "[1.5]")),
            "input 'x': data[0] is 1.5, not a value of INT32");
  EXPECT_EQ(rest_failure(one_input("FP32", "[1]", "[1e39]")),
            "input 'x': data[0] is 1e+39, not a value of FP32");
  EXPECT_EQ(rest_failure(one_input("FP32", "[2]", "[1, true]")),
            "input 'x': data[1] is true, not a value of FP32");
  EXPECT_EQ(rest_failure(one_input("BOOL", "[1]", "[2]")),
            "input 'x': data[0] is 2, not a value of BOOL");
  EXPECT_EQ(rest_failure(one_input("FP64", "[1]", "[\"1\"]")),
            "input 'x': data[0] is \"1\", not a value of FP64");
  EXPECT_EQ(rest_failure(one_input("FP16", "[1]", "[1]")),
            "input 'x': FP16 has no JSON form: send it as binary data (binary_data_size)");
}

TEST(RestCodec, MalformedRequestsNameWhatIsWrong) {
  EXPECT_EQ(rest_failure("[1]"), "the request is not a JSON object");
  EXPECT_EQ(rest_failure(R"({"inputs": {}})"), "the request: 'inputs' is an object, not an array");
  EXPECT_EQ(rest_failure(R"({"inputs": [1]})"), "inputs[0] is a number, not an object");
  EXPECT_EQ(rest_failure(R"({"inputs": [{"datatype": "FP32"}]})"), "inputs[0] has no 'name'");
  EXPECT_EQ(rest_failure(R"({"inputs": [{"name": 5}]})"),
            "inputs[0]: 'name' is a number, not a string");
  EXPECT_EQ(rest_failure(R"({"id": 3, "inputs": []})"), "'id' is a number, not a string");
  EXPECT_EQ(rest_failure(one_input("FP32", "[1.5]", "[1]")),
            "input 'x': shape[0] is 1.5, not a dimension");
  EXPECT_EQ(rest_failure(one_input("FP32", "[\"2\"]", "[1, 2]")),
            "input 'x': shape[0] is \"2\", not a dimension");
  EXPECT_EQ(rest_failure(one_input("FP32", "[18446744073709551615]", "[1]")),
            "input 'x': shape[0] is 18446744073709551615, not a dimension");
  EXPECT_EQ(rest_failure(one_input("FP32", "[-1]", "[1]")), "input 'x': dim 0 is -1, must be >= 0");
  EXPECT_EQ(rest_failure(one_input("FP32", "[2]", "[1]")),
            "input 'x': data holds 1 values, its shape needs 2");
  EXPECT_EQ(rest_failure(one_input("FP32", "[1]", "[[[1]]]")),
            "input 'x': data is nested deeper than its 1 dims");
  EXPECT_EQ(rest_failure(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1],
                              "parameters": {"binary_data_size": -4}}]})"),
            "input 'x': binary_data_size is -4, not a byte count");
  EXPECT_EQ(rest_failure(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1],
                              "parameters": 7, "data": [1]}]})"),
            "input 'x': 'parameters' is not an object");
  EXPECT_EQ(rest_failure(R"({"inputs": [], "outputs": {"name": "y"}})"),
            "'outputs' is not an array");
  EXPECT_EQ(rest_failure(
                R"({"inputs": [], "outputs": [{"name": "y", "parameters": {"binary_data": 1}}]})"),
            "output 'y': binary_data is not a bool");
  EXPECT_EQ(rest_failure(R"({"inputs": [], "parameters": {"binary_data_output": "yes"}})"),
            "parameter 'binary_data_output' is not a bool");
  EXPECT_EQ(rest_failure(R"({"inputs": [], "parameters": {"p": [1]}})"),
            "parameter 'p' is an array, expected a bool, number or string");
  EXPECT_EQ(rest_failure(one_input("BYTES", "[1]", "[\"a\"]")),
            "input 'x': datatype BYTES is not supported (rnnc models take numeric tensors)");
  EXPECT_EQ(rest_failure("{\"inputs\": [").rfind("malformed JSON request: ", 0), 0u);
}

TEST(RestCodec, EncodesBoolAsJsonBoolsAndBinaryWhereAsked) {
  RestInferRequest request;
  InferResponse response;
  response.model_name = "m";
  HostTensor flags;
  flags.name = "flags";
  flags.type = ElementType::kBool;
  flags.shape = {3};
  flags.resize_bytes(3);
  std::memcpy(flags.data(), "\x01\x00\x01", 3);
  HostTensor values;
  values.name = "values";
  values.type = ElementType::kFloat32;
  values.shape = {1};
  values.resize_bytes(4);
  const float value = 0.25f;
  std::memcpy(values.data(), &value, 4);
  response.outputs = {flags, values};
  RestBody json_body = encode_rest_response(request, response);
  EXPECT_EQ(json_body.content_type, "application/json");
  EXPECT_FALSE(json_body.header_length);
  EXPECT_NE(json_body.content.find(R"("data":[true,false,true])"), std::string::npos)
      << json_body.content;
  EXPECT_NE(json_body.content.find(R"("data":[0.25])"), std::string::npos) << json_body.content;

  request.binary_outputs = {"values"};
  RestBody binary_body = encode_rest_response(request, response);
  ASSERT_TRUE(binary_body.header_length);
  EXPECT_EQ(binary_body.content_type, "application/octet-stream");
  EXPECT_EQ(binary_body.content.size(), *binary_body.header_length + 4);
  EXPECT_EQ(std::memcmp(binary_body.content.data() + *binary_body.header_length, &value, 4), 0);
  EXPECT_NE(binary_body.content.find(R"("binary_data_size":4)"), std::string::npos);
}

inference::ModelInferRequest grpc_one_input(const std::string& datatype, int64_t count) {
  inference::ModelInferRequest message;
  message.set_model_name("m");
  auto* input = message.add_inputs();
  input->set_name("x");
  input->set_datatype(datatype);
  input->add_shape(count);
  return message;
}

std::string grpc_failure(const inference::ModelInferRequest& message) {
  return failure([&] { decode_grpc_request(message, kLimit); });
}

TEST(GrpcCodec, TypedContentsAreCheckedAgainstTheirDatatype) {
  inference::ModelInferRequest int8 = grpc_one_input("INT8", 2);
  int8.mutable_inputs(0)->mutable_contents()->add_int_contents(-128);
  int8.mutable_inputs(0)->mutable_contents()->add_int_contents(127);
  InferRequest request = decode_grpc_request(int8, kLimit);
  EXPECT_EQ(static_cast<const int8_t*>(request.inputs[0].data())[0], -128);
  int8.mutable_inputs(0)->mutable_contents()->set_int_contents(1, 300);
  EXPECT_EQ(grpc_failure(int8), "input 'x': contents.int_contents[1] is 300, outside INT8's range");

  inference::ModelInferRequest uint16 = grpc_one_input("UINT16", 1);
  uint16.mutable_inputs(0)->mutable_contents()->add_uint_contents(70000);
  EXPECT_EQ(grpc_failure(uint16),
            "input 'x': contents.uint_contents[0] is 70000, outside UINT16's range");

  inference::ModelInferRequest flags = grpc_one_input("BOOL", 2);
  flags.mutable_inputs(0)->mutable_contents()->add_bool_contents(true);
  flags.mutable_inputs(0)->mutable_contents()->add_bool_contents(false);
  request = decode_grpc_request(flags, kLimit);
  EXPECT_EQ(static_cast<const uint8_t*>(request.inputs[0].data())[0], 1);
  EXPECT_EQ(static_cast<const uint8_t*>(request.inputs[0].data())[1], 0);
  inference::ModelInferRequest flags_as_ints = grpc_one_input("BOOL", 1);
  flags_as_ints.mutable_inputs(0)->mutable_contents()->add_uint_contents(1);
  EXPECT_EQ(grpc_failure(flags_as_ints),
            "input 'x': contents.bool_contents holds 0 values, its shape needs 1");

  inference::ModelInferRequest raw_flags = grpc_one_input("BOOL", 2);
  raw_flags.add_raw_input_contents(std::string("\x01\x05", 2));
  EXPECT_EQ(grpc_failure(raw_flags),
            "input 'x': byte 1 of its BOOL raw_input_contents is 5, not 0 or 1");
}

TEST(GrpcCodec, EncodesBoolInBoolContents) {
  InferResponse response;
  HostTensor flags;
  flags.name = "flags";
  flags.type = ElementType::kBool;
  flags.shape = {2};
  flags.resize_bytes(2);
  std::memcpy(flags.data(), "\x00\x01", 2);
  response.outputs = {flags};
  inference::ModelInferResponse message;
  encode_grpc_response(response, /*raw=*/false, message);
  ASSERT_EQ(message.outputs_size(), 1);
  EXPECT_EQ(message.outputs(0).datatype(), "BOOL");
  ASSERT_EQ(message.outputs(0).contents().bool_contents_size(), 2);
  EXPECT_FALSE(message.outputs(0).contents().bool_contents(0));
  EXPECT_TRUE(message.outputs(0).contents().bool_contents(1));
  EXPECT_EQ(message.outputs(0).contents().uint_contents_size(), 0);
}

// Truncations at many lengths and random byte changes of `original` (after the selector byte),
// through the fuzz entry point: each must decode or raise a RequestError.
void replay_mutations(const std::string& selector, const std::string& original, int changes) {
  auto run = [&](const std::string& bytes) {
    const std::string input = selector + bytes;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  };
  run(original);
  for (size_t cut = 0; cut < original.size(); ++cut) run(original.substr(0, cut));
  std::mt19937 rng(4321);
  const std::string interesting = "{}[]\",:-0123456789.eE truefalsenull\\u";
  for (int i = 0; i < changes; ++i) {
    std::string mutated = original;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !mutated.empty(); ++e) {
      const size_t at = rng() % mutated.size();
      switch (rng() % 3) {
        case 0:
          mutated[at] = interesting[rng() % interesting.size()];
          break;
        case 1:
          mutated.erase(at, 1 + rng() % 8);
          break;
        default:
          mutated[at] = static_cast<char>(rng() & 0xff);
          break;
      }
    }
    run(mutated);
  }
}

TEST(ServeFuzzReplay, RestMutationsDecodeOrRaiseARequestError) {
  const std::string json =
      R"({"id": "a", "parameters": {"sequence_id": "s", "sequence_start": true, "timeout": 5},
          "inputs": [{"name": "f", "datatype": "FP32", "shape": [2, 2], "data": [[1, 2.5], [-3, 4e5]]},
                     {"name": "b", "datatype": "BOOL", "shape": [2], "data": [true, false]},
                     {"name": "i", "datatype": "INT16", "shape": [1], "data": [-7]}],
          "outputs": [{"name": "y", "parameters": {"binary_data": true}}]})";
  replay_mutations(std::string(1, '\0'), json, 3000);
  const std::string header =
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "parameters": {"binary_data_size": 8}}]})";
  const std::string length = {static_cast<char>(header.size() & 0xff),
                              static_cast<char>(header.size() >> 8)};
  replay_mutations(std::string(1, '\1') + length, header + std::string(8, '\x3f'), 3000);
}

TEST(ServeFuzzReplay, GrpcMutationsDecodeOrRaiseARequestError) {
  inference::ModelInferRequest typed = grpc_one_input("INT8", 2);
  typed.mutable_inputs(0)->mutable_contents()->add_int_contents(-3);
  typed.mutable_inputs(0)->mutable_contents()->add_int_contents(9);
  (*typed.mutable_parameters())["sequence_id"].set_int64_param(4);
  typed.add_outputs()->set_name("y");
  replay_mutations(std::string(1, '\2'), typed.SerializeAsString(), 3000);
  inference::ModelInferRequest raw = grpc_one_input("FP32", 2);
  raw.add_raw_input_contents(std::string(8, '\0'));
  replay_mutations(std::string(1, '\2'), raw.SerializeAsString(), 3000);
}

}  // namespace
}  // namespace rnnc::serve
