#include "serve/grpc_codec.h"

#include <cstring>
#include <map>
#include <type_traits>

#include "ir/error.h"
#include "serve/datatype.h"
#include "serve/parameters.h"
#include "serve/server_metadata.h"
#include "serve/status.h"

namespace rnnc::serve {

namespace {

using inference::InferTensorContents;
using inference::ModelInferRequest;
using inference::ModelInferResponse;

ParameterValue parameter_value(const inference::InferParameter& parameter) {
  switch (parameter.parameter_choice_case()) {
    case inference::InferParameter::kBoolParam:
      return parameter.bool_param();
    case inference::InferParameter::kInt64Param:
      return parameter.int64_param();
    case inference::InferParameter::kStringParam:
      return parameter.string_param();
    case inference::InferParameter::kDoubleParam:
      return parameter.double_param();
    case inference::InferParameter::kUint64Param:
      return parameter.uint64_param();
    default:
      return std::string();
  }
}

// `read(contents)` for const contents, `*write(contents)` otherwise.
template <typename Contents, typename Read, typename Write>
auto& field_of(Contents& contents, Read read, Write write) {
  if constexpr (std::is_const_v<Contents>) {
    return read(contents);
  } else {
    return *write(contents);
  }
}

// The typed contents field holding elements of C++ type T, const or mutable as `Contents` is:
// BOOL in bool_contents, the other integers of up to 32 bits in int_contents or uint_contents,
// the 64-bit and floating-point types each in a field of their own.
template <typename T, typename Contents>
auto& contents_field(Contents& contents, const char*& name) {
  if constexpr (std::is_same_v<T, bool>) {
    name = "bool_contents";
    return field_of(
        contents, [](auto& c) -> auto& { return c.bool_contents(); },
        [](auto& c) { return c.mutable_bool_contents(); });
  } else if constexpr (std::is_same_v<T, int64_t>) {
    name = "int64_contents";
    return field_of(
        contents, [](auto& c) -> auto& { return c.int64_contents(); },
        [](auto& c) { return c.mutable_int64_contents(); });
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    name = "uint64_contents";
    return field_of(
        contents, [](auto& c) -> auto& { return c.uint64_contents(); },
        [](auto& c) { return c.mutable_uint64_contents(); });
  } else if constexpr (std::is_same_v<T, float>) {
    name = "fp32_contents";
    return field_of(
        contents, [](auto& c) -> auto& { return c.fp32_contents(); },
        [](auto& c) { return c.mutable_fp32_contents(); });
  } else if constexpr (std::is_same_v<T, double>) {
    name = "fp64_contents";
    return field_of(
        contents, [](auto& c) -> auto& { return c.fp64_contents(); },
        [](auto& c) { return c.mutable_fp64_contents(); });
  } else if constexpr (std::is_signed_v<T>) {
    name = "int_contents";
    return field_of(
        contents, [](auto& c) -> auto& { return c.int_contents(); },
        [](auto& c) { return c.mutable_int_contents(); });
  } else {
    name = "uint_contents";
    return field_of(
        contents, [](auto& c) -> auto& { return c.uint_contents(); },
        [](auto& c) { return c.mutable_uint_contents(); });
  }
}

// Reads the typed contents into the tensor, after checking their count against the shape and,
// for the types narrower than their field (INT8 and INT16 in int_contents, UINT8 and UINT16 in
// uint_contents), each value against the type's range.
void decode_contents(const InferTensorContents& contents, HostTensor& tensor, size_t bytes) {
  const bool typed = with_element_type(tensor.type, [&](auto element) {
    using T = decltype(element);
    const char* field = nullptr;
    const auto& values = contents_field<T>(contents, field);
    const size_t count = bytes / sizeof(T);
    if (static_cast<size_t>(values.size()) != count) {
      raise_request(StatusCode::kInvalidArgument,
                    cat("input '", tensor.name, "': contents.", field, " holds ", values.size(),
                        " values, its shape needs ", count));
    }
    tensor.resize_bytes(bytes);
    T* out = static_cast<T*>(tensor.data());
    for (size_t k = 0; k < count; ++k) {
      const auto value = values[static_cast<int>(k)];
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (!integer_fits<T>(value)) {
          raise_request(StatusCode::kInvalidArgument,
                        cat("input '", tensor.name, "': contents.", field, "[", k, "] is ", value,
                            ", outside ", datatype_name(tensor.type), "'s range"));
        }
      }
      out[k] = static_cast<T>(value);
    }
  });
  if (!typed) {
    raise_request(StatusCode::kInvalidArgument,
                  cat("input '", tensor.name, "': ", datatype_name(tensor.type),
                      " has no typed contents field: send it in raw_input_contents"));
  }
}

// False when the type has no typed contents field (FP16, BF16): the response goes raw.
bool encode_contents(const HostTensor& tensor, InferTensorContents& contents) {
  return with_element_type(tensor.type, [&](auto element) {
    using T = decltype(element);
    const char* field = nullptr;
    auto& values = contents_field<T>(contents, field);
    const size_t count = tensor.byte_size() / sizeof(T);
    values.Reserve(static_cast<int>(count));
    for (size_t k = 0; k < count; ++k) values.Add(element_at<T>(tensor.data(), k));
  });
}

}  // namespace

InferRequest decode_grpc_request(const ModelInferRequest& message, size_t max_tensor_bytes) {
  InferRequest request;
  request.model_name = message.model_name();
  request.id = message.id();
  check_model_version(message.model_name(), message.model_version());
  std::map<std::string, ParameterValue> parameters;
  for (const auto& [name, value] : message.parameters()) parameters[name] = parameter_value(value);
  apply_request_parameters(parameters, request);
  const bool raw = message.raw_input_contents_size() > 0;
  if (raw && message.raw_input_contents_size() != message.inputs_size()) {
    raise_request(StatusCode::kInvalidArgument,
                  cat("raw_input_contents has ", message.raw_input_contents_size(), " entries for ",
                      message.inputs_size(), " inputs (one per input, in order)"));
  }
  for (int k = 0; k < message.inputs_size(); ++k) {
    const auto& input = message.inputs(k);
    HostTensor tensor;
    tensor.name = input.name();
    tensor.type = input_datatype(input.name(), input.datatype());
    tensor.shape.assign(input.shape().begin(), input.shape().end());
    const size_t bytes = tensor_bytes(tensor.name, tensor.type, tensor.shape, max_tensor_bytes);
    if (raw) {
      if (input.has_contents()) {
        raise_request(StatusCode::kInvalidArgument, cat("input '", tensor.name,
                                                        "' has contents although the request uses "
                                                        "raw_input_contents"));
      }
      const std::string& data = message.raw_input_contents(k);
      if (data.size() != bytes) {
        raise_request(StatusCode::kInvalidArgument,
                      cat("input '", tensor.name, "': raw_input_contents holds ", data.size(),
                          " bytes, its shape and datatype need ", bytes));
      }
      tensor.resize_bytes(bytes);
      if (bytes > 0) std::memcpy(tensor.data(), data.data(), bytes);
      check_bool_bytes(tensor, "raw_input_contents");
    } else {
      decode_contents(input.contents(), tensor, bytes);
    }
    request.inputs.push_back(std::move(tensor));
  }
  for (const auto& output : message.outputs()) request.requested_outputs.push_back(output.name());
  return request;
}

void encode_grpc_response(const InferResponse& response, bool raw, ModelInferResponse& message) {
  message.set_model_name(response.model_name);
  message.set_model_version(kModelVersion);
  message.set_id(response.id);
  for (const HostTensor& output : response.outputs) {
    if (!raw && (output.type == ElementType::kFloat16 || output.type == ElementType::kBFloat16)) {
      raw = true;  // the protocol has no typed field for them, and raw is all or nothing
    }
  }
  for (const HostTensor& output : response.outputs) {
    auto* tensor = message.add_outputs();
    tensor->set_name(output.name);
    tensor->set_datatype(datatype_name(output.type));
    for (int64_t d : output.shape) tensor->add_shape(d);
    if (raw) {
      message.add_raw_output_contents(static_cast<const char*>(output.data()), output.byte_size());
    } else {
      encode_contents(output, *tensor->mutable_contents());
    }
  }
}

}  // namespace rnnc::serve
