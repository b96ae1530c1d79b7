#include "serve/rest_codec.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "serve/datatype.h"
#include "serve/parameters.h"
#include "serve/server_metadata.h"
#include "serve/status.h"

namespace rnnc::serve {

namespace {

using nlohmann::json;

[[noreturn]] void invalid(const std::string& message) {
  raise_request(StatusCode::kInvalidArgument, message);
}

// "an array", "a string", ... for messages.
std::string a_type(json::value_t type) {
  const std::string name = json(type).type_name();
  return (name[0] == 'a' || name[0] == 'o' ? "an " : "a ") + name;
}

ParameterValue parameter_value(const std::string& name, const json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  invalid(cat("parameter '", name, "' is ", a_type(value.type()),
              ", expected a bool, number or string"));
}

const json& member(const json& object, const char* key, const std::string& where) {
  if (!object.is_object()) {
    invalid(cat(where, " is ", a_type(object.type()), ", not an object"));
  }
  auto it = object.find(key);
  if (it == object.end()) invalid(cat(where, " has no '", key, "'"));
  return *it;
}

const json& member_of_type(const json& object, const char* key, const std::string& where,
                           json::value_t type) {
  const json& value = member(object, key, where);
  if (value.type() != type) {
    invalid(cat(where, ": '", key, "' is ", a_type(value.type()), ", not ", a_type(type)));
  }
  return value;
}

std::string text_member(const json& object, const char* key, const std::string& where) {
  return member_of_type(object, key, where, json::value_t::string).get<std::string>();
}

// The dims of an input's "shape": JSON integers in int64's range (negative ones are refused by
// tensor_bytes, naming the dim).
std::vector<int64_t> shape_of(const json& input, const std::string& where) {
  const json& shape = member_of_type(input, "shape", where, json::value_t::array);
  std::vector<int64_t> dims;
  for (size_t k = 0; k < shape.size(); ++k) {
    const json& dim = shape[k];
    const bool fits =
        dim.is_number_unsigned() ? dim.get<uint64_t>() <= INT64_MAX : dim.is_number_integer();
    if (!fits) invalid(cat(where, ": shape[", k, "] is ", dim.dump(), ", not a dimension"));
    dims.push_back(dim.get<int64_t>());
  }
  return dims;
}

// Appends the scalars of a possibly nested JSON array, row-major. Nesting deeper than the
// tensor's rank is refused: it is never valid, and unbounded nesting would exhaust the stack.
void flatten(const json& data, const HostTensor& tensor, size_t depth,
             std::vector<const json*>& out) {
  if (!data.is_array()) {
    out.push_back(&data);
    return;
  }
  if (depth == std::max<size_t>(tensor.shape.size(), 1)) {
    invalid(cat("input '", tensor.name, "': data is nested deeper than its ", tensor.shape.size(),
                " dims"));
  }
  for (const json& item : data) flatten(item, tensor, depth + 1, out);
}

// `value` as an element of type T, when it is one: a JSON bool for BOOL, an integer in T's
// range for the integer types, a number in T's range for the floating-point ones.
template <typename T>
std::optional<T> element_of(const json& value) {
  if constexpr (std::is_same_v<T, bool>) {
    if (value.is_boolean()) return value.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (value.is_number_unsigned()) {
      if (integer_fits<T>(value.get<uint64_t>())) return static_cast<T>(value.get<uint64_t>());
    } else if (value.is_number_integer()) {
      if (integer_fits<T>(value.get<int64_t>())) return static_cast<T>(value.get<int64_t>());
    }
  } else {
    if (value.is_number()) {
      const double number = value.get<double>();  // JSON numbers are finite
      if (std::fabs(number) <= static_cast<double>(std::numeric_limits<T>::max())) {
        return static_cast<T>(number);
      }
    }
  }
  return std::nullopt;
}

template <typename T>
void store_values(const std::vector<const json*>& values, HostTensor& tensor) {
  T* out = static_cast<T*>(tensor.data());
  for (size_t k = 0; k < values.size(); ++k) {
    const std::optional<T> element = element_of<T>(*values[k]);
    if (!element) {
      invalid(cat("input '", tensor.name, "': data[", k, "] is ", values[k]->dump(),
                  ", not a value of ", datatype_name(tensor.type)));
    }
    out[k] = *element;
  }
}

void decode_json_data(const json& data, HostTensor& tensor, size_t bytes) {
  std::vector<const json*> values;
  flatten(data, tensor, 0, values);
  const size_t count = bytes / element_size(tensor.type);
  if (values.size() != count) {
    invalid(cat("input '", tensor.name, "': data holds ", values.size(),
                " values, its shape needs ", count));
  }
  tensor.resize_bytes(bytes);
  const bool numeric = with_element_type(
      tensor.type, [&](auto element) { store_values<decltype(element)>(values, tensor); });
  if (!numeric) {
    invalid(cat("input '", tensor.name, "': ", datatype_name(tensor.type),
                " has no JSON form: send it as binary data (binary_data_size)"));
  }
}

// nullopt for types JSON has no form for (FP16, BF16): they go binary.
std::optional<json> json_data(const HostTensor& tensor) {
  std::optional<json> data;
  with_element_type(tensor.type, [&](auto element) {
    using T = decltype(element);
    const size_t count = tensor.byte_size() / sizeof(T);
    json values = json::array();
    for (size_t k = 0; k < count; ++k) values.push_back(element_at<T>(tensor.data(), k));
    data = std::move(values);
  });
  return data;
}

size_t header_bytes(std::string_view body, const std::string* header_length) {
  if (!header_length) return body.size();
  const std::string& text = *header_length;
  const bool digits = !text.empty() && text.size() <= 19 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  const unsigned long long length = digits ? std::stoull(text) : 0;
  if (!digits || length > body.size()) {
    invalid(cat("Inference-Header-Content-Length is '", text, "', the body holds ", body.size(),
                " bytes"));
  }
  return static_cast<size_t>(length);
}

RestInferRequest decode(std::string_view body, const std::string* header_length,
                        const std::string& model, const std::string& version,
                        size_t max_tensor_bytes) {
  RestInferRequest decoded;
  InferRequest& request = decoded.request;
  request.model_name = model;
  check_model_version(model, version);
  const size_t json_bytes = header_bytes(body, header_length);
  json header;
  try {
    header = json::parse(body.substr(0, json_bytes));
  } catch (const json::parse_error& e) {
    invalid(cat("malformed JSON request: ", e.what()));
  }
  if (!header.is_object()) invalid("the request is not a JSON object");

  if (auto id = header.find("id"); id != header.end()) {
    if (!id->is_string()) invalid(cat("'id' is ", a_type(id->type()), ", not a string"));
    request.id = id->get<std::string>();
  }
  std::map<std::string, ParameterValue> parameters;
  if (auto p = header.find("parameters"); p != header.end()) {
    if (!p->is_object()) invalid("'parameters' is not an object");
    for (const auto& [name, value] : p->items()) parameters[name] = parameter_value(name, value);
    if (auto b = parameters.find("binary_data_output"); b != parameters.end()) {
      const bool* flag = std::get_if<bool>(&b->second);
      if (!flag) invalid("parameter 'binary_data_output' is not a bool");
      decoded.all_binary = *flag;
    }
  }
  apply_request_parameters(parameters, request);

  size_t binary_offset = json_bytes;
  const json& inputs = member_of_type(header, "inputs", "the request", json::value_t::array);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const json& input = inputs[k];
    HostTensor tensor;
    tensor.name = text_member(input, "name", cat("inputs[", k, "]"));
    const std::string where = cat("input '", tensor.name, "'");
    tensor.type = input_datatype(tensor.name, text_member(input, "datatype", where));
    tensor.shape = shape_of(input, where);
    const size_t bytes = tensor_bytes(tensor.name, tensor.type, tensor.shape, max_tensor_bytes);
    const json* binary_size = nullptr;
    if (auto p = input.find("parameters"); p != input.end()) {
      if (!p->is_object()) invalid(cat(where, ": 'parameters' is not an object"));
      if (auto s = p->find("binary_data_size"); s != p->end()) binary_size = &*s;
    }
    if (binary_size) {
      if (!binary_size->is_number_unsigned()) {
        invalid(cat(where, ": binary_data_size is ", binary_size->dump(), ", not a byte count"));
      }
      const auto size = binary_size->get<uint64_t>();
      if (size != bytes) {
        invalid(cat(where, ": binary_data_size is ", size, ", its shape and datatype need ", bytes,
                    " bytes"));
      }
      if (body.size() - binary_offset < bytes) {
        invalid(cat(where, ": the body ends before its ", bytes, " bytes of binary data"));
      }
      tensor.resize_bytes(bytes);
      if (bytes > 0) std::memcpy(tensor.data(), body.data() + binary_offset, bytes);
      check_bool_bytes(tensor, "binary data");
      binary_offset += bytes;
    } else {
      decode_json_data(member(input, "data", where), tensor, bytes);
    }
    request.inputs.push_back(std::move(tensor));
  }
  if (binary_offset != body.size()) {
    invalid(cat("the body holds ", body.size() - binary_offset,
                " bytes after the JSON header and the inputs' binary data"));
  }
  if (auto outputs = header.find("outputs"); outputs != header.end()) {
    if (!outputs->is_array()) invalid("'outputs' is not an array");
    for (size_t k = 0; k < outputs->size(); ++k) {
      const json& output = (*outputs)[k];
      const std::string name = text_member(output, "name", cat("outputs[", k, "]"));
      request.requested_outputs.push_back(name);
      if (auto p = output.find("parameters"); p != output.end()) {
        if (!p->is_object()) invalid(cat("output '", name, "': 'parameters' is not an object"));
        if (auto b = p->find("binary_data"); b != p->end()) {
          if (!b->is_boolean()) invalid(cat("output '", name, "': binary_data is not a bool"));
          if (b->get<bool>()) decoded.binary_outputs.insert(name);
        }
      }
    }
  }
  return decoded;
}

}  // namespace

RestInferRequest decode_rest_request(std::string_view body, const std::string* header_length,
                                     const std::string& model, const std::string& version,
                                     size_t max_tensor_bytes) {
  try {
    return decode(body, header_length, model, version, max_tensor_bytes);
  } catch (const nlohmann::json::exception& e) {
    // Every member's JSON type is checked before it is read; this is a backstop that keeps a
    // missed case a request error.
    raise_request(StatusCode::kInvalidArgument, cat("malformed request: ", e.what()));
  }
}

RestBody encode_rest_response(const RestInferRequest& request, const InferResponse& response) {
  json body{{"model_name", response.model_name}, {"model_version", kModelVersion}};
  if (!response.id.empty()) body["id"] = response.id;
  if (!response.sequence.id.empty()) {
    body["parameters"] = {{"sequence_id", response.sequence.id},
                          {"sequence_start", response.sequence.start},
                          {"sequence_end", response.sequence.end}};
  }
  std::string binary;
  json outputs = json::array();
  for (const HostTensor& output : response.outputs) {
    json entry{
        {"name", output.name}, {"datatype", datatype_name(output.type)}, {"shape", output.shape}};
    std::optional<json> data;
    if (!request.all_binary && !request.binary_outputs.count(output.name)) {
      data = json_data(output);
    }
    if (data) {
      entry["data"] = std::move(*data);
    } else {
      entry["parameters"] = {{"binary_data_size", output.byte_size()}};
      binary.append(static_cast<const char*>(output.data()), output.byte_size());
    }
    outputs.push_back(std::move(entry));
  }
  body["outputs"] = std::move(outputs);
  RestBody out;
  out.content = body.dump();
  if (binary.empty()) {
    out.content_type = "application/json";
    return out;
  }
  out.header_length = out.content.size();
  out.content += binary;
  out.content_type = "application/octet-stream";
  return out;
}

}  // namespace rnnc::serve
