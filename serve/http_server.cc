#include "serve/http_server.h"

#include <httplib.h>

#include <cstring>
#include <future>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "rnnc/version.h"
#include "serve/datatype.h"
#include "serve/parameters.h"
#include "serve/server_metadata.h"

namespace rnnc::serve {

namespace {

using nlohmann::json;

constexpr const char* kHeaderLength = "Inference-Header-Content-Length";

void send_error(httplib::Response& response, StatusCode code, const std::string& message) {
  response.status = http_status(code);
  response.set_content(json{{"error", message}}.dump(), "application/json");
}

void send_json(httplib::Response& response, const json& body) {
  response.status = 200;
  response.set_content(body.dump(), "application/json");
}

ParameterValue parameter_value(const std::string& name, const json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  raise_request(StatusCode::kInvalidArgument,
                cat("parameter '", name, "' is a JSON ", value.type_name(),
                    ", expected a bool, number or string"));
}

const json& member(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) {
    raise_request(StatusCode::kInvalidArgument, cat(where, " has no '", key, "'"));
  }
  return *it;
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
    raise_request(StatusCode::kInvalidArgument,
                  cat("input '", tensor.name, "': data is nested deeper than its ",
                      tensor.shape.size(), " dims"));
  }
  for (const json& item : data) flatten(item, tensor, depth + 1, out);
}

template <typename T>
void store_values(const std::vector<const json*>& values, HostTensor& tensor) {
  T* out = static_cast<T*>(tensor.data());
  for (size_t k = 0; k < values.size(); ++k) {
    const json& value = *values[k];
    const bool ok = std::is_same_v<T, bool>       ? value.is_boolean()
                    : std::is_floating_point_v<T> ? value.is_number()
                                                  : value.is_number_integer();
    if (!ok) {
      raise_request(StatusCode::kInvalidArgument,
                    cat("input '", tensor.name, "': data[", k, "] is ", value.dump(), ", not ",
                        std::is_same_v<T, bool>       ? "a bool"
                        : std::is_floating_point_v<T> ? "a number"
                                                      : "an integer",
                        " (", datatype_name(tensor.type), ")"));
    }
    out[k] = value.get<T>();
  }
}

void decode_json_data(const json& data, HostTensor& tensor, size_t bytes) {
  std::vector<const json*> values;
  flatten(data, tensor, 0, values);
  const size_t count = bytes / element_size(tensor.type);
  if (values.size() != count) {
    raise_request(StatusCode::kInvalidArgument,
                  cat("input '", tensor.name, "': data holds ", values.size(),
                      " values, its shape needs ", count));
  }
  tensor.resize_bytes(bytes);
  const bool numeric = with_element_type(
      tensor.type, [&](auto element) { store_values<decltype(element)>(values, tensor); });
  if (!numeric) {
    raise_request(StatusCode::kInvalidArgument,
                  cat("input '", tensor.name, "': ", datatype_name(tensor.type),
                      " has no JSON form: send it as binary data (binary_data_size)"));
  }
}

template <typename T>
json values_of(const HostTensor& tensor) {
  const T* data = static_cast<const T*>(tensor.data());
  const size_t count = tensor.byte_size() / sizeof(T);
  return json(std::vector<T>(data, data + count));
}

// nullopt for types JSON has no form for (FP16, BF16): they go binary.
std::optional<json> json_data(const HostTensor& tensor) {
  std::optional<json> data;
  with_element_type(tensor.type,
                    [&](auto element) { data = values_of<decltype(element)>(tensor); });
  return data;
}

struct DecodedRequest {
  InferRequest request;
  bool all_binary = false;               // request parameter binary_data_output
  std::set<std::string> binary_outputs;  // outputs asked for with binary_data
};

DecodedRequest decode_request(const httplib::Request& http, const std::string& model,
                              const std::string& version, size_t max_tensor_bytes) {
  DecodedRequest decoded;
  InferRequest& request = decoded.request;
  request.model_name = model;
  check_model_version(model, version);
  size_t header_length = http.body.size();
  if (http.has_header(kHeaderLength)) {
    const std::string text = http.get_header_value(kHeaderLength);
    char* end = nullptr;
    const unsigned long long length = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end || length > http.body.size()) {
      raise_request(
          StatusCode::kInvalidArgument,
          cat(kHeaderLength, " is '", text, "', the body holds ", http.body.size(), " bytes"));
    }
    header_length = static_cast<size_t>(length);
  }
  json body;
  try {
    body = json::parse(http.body.begin(), http.body.begin() + static_cast<long>(header_length));
  } catch (const json::parse_error& e) {
    raise_request(StatusCode::kInvalidArgument, cat("malformed JSON request: ", e.what()));
  }
  if (!body.is_object()) {
    raise_request(StatusCode::kInvalidArgument, "the request is not a JSON object");
  }
  try {
    if (auto id = body.find("id"); id != body.end()) request.id = id->get<std::string>();
    std::map<std::string, ParameterValue> parameters;
    if (auto p = body.find("parameters"); p != body.end()) {
      if (!p->is_object())
        raise_request(StatusCode::kInvalidArgument, "'parameters' is not an object");
      for (const auto& [name, value] : p->items()) parameters[name] = parameter_value(name, value);
      if (auto b = p->find("binary_data_output"); b != p->end())
        decoded.all_binary = b->get<bool>();
    }
    apply_request_parameters(parameters, request);

    size_t binary_offset = header_length;
    const json& inputs = member(body, "inputs", "the request");
    if (!inputs.is_array()) raise_request(StatusCode::kInvalidArgument, "'inputs' is not an array");
    for (const json& input : inputs) {
      HostTensor tensor;
      tensor.name = member(input, "name", "an input").get<std::string>();
      const std::string where = cat("input '", tensor.name, "'");
      const std::string datatype = member(input, "datatype", where).get<std::string>();
      tensor.type = input_datatype(tensor.name, datatype);
      tensor.shape = member(input, "shape", where).get<std::vector<int64_t>>();
      const size_t bytes = tensor_bytes(tensor.name, tensor.type, tensor.shape, max_tensor_bytes);
      const json* binary_size = nullptr;
      if (auto p = input.find("parameters"); p != input.end() && p->contains("binary_data_size")) {
        binary_size = &(*p)["binary_data_size"];
      }
      if (binary_size) {
        const auto size = binary_size->get<uint64_t>();
        if (size != bytes) {
          raise_request(StatusCode::kInvalidArgument,
                        cat(where, ": binary_data_size is ", size, ", its shape and datatype need ",
                            bytes, " bytes"));
        }
        if (http.body.size() - binary_offset < bytes) {
          raise_request(StatusCode::kInvalidArgument,
                        cat(where, ": the body ends before its ", bytes, " bytes of binary data"));
        }
        tensor.resize_bytes(bytes);
        if (bytes > 0) std::memcpy(tensor.data(), http.body.data() + binary_offset, bytes);
        binary_offset += bytes;
      } else {
        decode_json_data(member(input, "data", where), tensor, bytes);
      }
      request.inputs.push_back(std::move(tensor));
    }
    if (binary_offset != http.body.size()) {
      raise_request(StatusCode::kInvalidArgument,
                    cat("the body holds ", http.body.size() - binary_offset,
                        " bytes after the JSON header and the inputs' binary data"));
    }
    if (auto outputs = body.find("outputs"); outputs != body.end()) {
      for (const json& output : *outputs) {
        const std::string name = member(output, "name", "a requested output").get<std::string>();
        request.requested_outputs.push_back(name);
        if (auto p = output.find("parameters"); p != output.end()) {
          if (auto b = p->find("binary_data"); b != p->end() && b->get<bool>()) {
            decoded.binary_outputs.insert(name);
          }
        }
      }
    }
  } catch (const json::exception& e) {
    // A value of the wrong JSON type where the protocol fixes one.
    raise_request(StatusCode::kInvalidArgument, cat("malformed request: ", e.what()));
  }
  return decoded;
}

void send_infer_response(httplib::Response& http, const DecodedRequest& decoded,
                         const InferResponse& response) {
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
    if (!decoded.all_binary && !decoded.binary_outputs.count(output.name)) data = json_data(output);
    if (data) {
      entry["data"] = std::move(*data);
    } else {
      entry["parameters"] = {{"binary_data_size", output.byte_size()}};
      binary.append(static_cast<const char*>(output.data()), output.byte_size());
    }
    outputs.push_back(std::move(entry));
  }
  body["outputs"] = std::move(outputs);
  std::string text = body.dump();
  http.status = 200;
  if (binary.empty()) {
    http.set_content(text, "application/json");
    return;
  }
  http.set_header(kHeaderLength, std::to_string(text.size()));
  text += binary;
  http.set_content(text, "application/octet-stream");
}

json tensors_json(const std::vector<TensorMetadata>& tensors) {
  json out = json::array();
  for (const TensorMetadata& tensor : tensors) {
    out.push_back(
        {{"name", tensor.name}, {"datatype", datatype_name(tensor.type)}, {"shape", tensor.shape}});
  }
  return out;
}

// The model routes, with and without /versions/{version}.
std::string model_route(const std::string& tail) {
  return "/v2/models/([^/]+)(?:/versions/([^/]+))?" + tail;
}

}  // namespace

struct HttpServer::Impl {
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
};

HttpServer::HttpServer(InferenceService& service, const HttpOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (!options.tls_cert.empty() || !options.tls_key.empty()) {
    auto server =
        std::make_unique<httplib::SSLServer>(options.tls_cert.c_str(), options.tls_key.c_str());
    if (!server->is_valid()) {
      raise(ErrorKind::kIo, cat("HTTP: cannot set up TLS from --tls-cert '", options.tls_cert,
                                "' and --tls-key '", options.tls_key, "'"));
    }
    impl_->server = std::move(server);
  } else {
    impl_->server = std::make_unique<httplib::Server>();
  }
  httplib::Server& server = *impl_->server;
  const int threads = std::max(1, options.threads);
  server.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  server.set_payload_max_length(options.max_message_bytes);

  server.Get("/v2/health/live", [&service](const httplib::Request&, httplib::Response& response) {
    response.status = service.live() ? 200 : 503;
  });
  server.Get("/v2/health/ready", [&service](const httplib::Request&, httplib::Response& response) {
    response.status = service.ready() ? 200 : 503;
  });
  server.Get("/v2", [](const httplib::Request&, httplib::Response& response) {
    json extensions = json::array();
    for (const char* extension : kServerExtensions) extensions.push_back(extension);
    send_json(
        response,
        {{"name", kServerName}, {"version", RNNC_VERSION_STRING}, {"extensions", extensions}});
  });
  server.Get(model_route("/ready"), [&service](const httplib::Request& request,
                                               httplib::Response& response) {
    try {
      response.status = model_ready(service, request.matches[1], request.matches[2]) ? 200 : 503;
    } catch (const RequestError& e) {
      send_error(response, e.code(), e.what());
    }
  });
  server.Get(
      model_route(""), [&service](const httplib::Request& request, httplib::Response& response) {
        try {
          const ServedModel& model = ready_model(service, request.matches[1], request.matches[2]);
          send_json(response, {{"name", model.name()},
                               {"versions", {kModelVersion}},
                               {"platform", kModelPlatform},
                               {"inputs", tensors_json(model.inputs())},
                               {"outputs", tensors_json(model.outputs())},
                               {"properties", {{"sequence_state", carried_state_text(model)}}}});
        } catch (const RequestError& e) {
          send_error(response, e.code(), e.what());
        }
      });
  server.Post(model_route("/infer"), [&service](const httplib::Request& request,
                                                httplib::Response& response) {
    const std::string model = request.matches[1];
    DecodedRequest decoded;
    try {
      decoded = decode_request(request, model, request.matches[2], service.max_tensor_bytes());
    } catch (const RequestError& e) {
      service.metrics().record(model, e.code(), 0);
      send_error(response, e.code(), e.what());
      return;
    }
    std::promise<std::tuple<StatusCode, std::string, InferResponse>> outcome;
    service.infer(std::move(decoded.request),
                  [&outcome](StatusCode code, const std::string& error, InferResponse result) {
                    outcome.set_value({code, error, std::move(result)});
                  });
    auto [code, error, result] = outcome.get_future().get();
    if (code != StatusCode::kOk) {
      send_error(response, code, error);
      return;
    }
    send_infer_response(response, decoded, result);
  });
  server.Get("/metrics", [&service](const httplib::Request&, httplib::Response& response) {
    response.set_content(service.metrics().exposition(), "text/plain; version=0.0.4");
  });

  port_ = options.port == 0 ? server.bind_to_any_port(options.host)
                            : (server.bind_to_port(options.host, options.port) ? options.port : -1);
  if (port_ <= 0) {
    raise(ErrorKind::kIo, cat("HTTP: cannot listen on ", options.host, ":", options.port));
  }
  impl_->thread = std::thread([&server] { server.listen_after_bind(); });
}

HttpServer::~HttpServer() { shutdown(); }

void HttpServer::shutdown() {
  if (!impl_->thread.joinable()) return;
  impl_->server->stop();
  impl_->thread.join();
}

}  // namespace rnnc::serve
