#include "serve/http_server.h"

#include <httplib.h>

#include <future>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "rnnc/version.h"
#include "serve/datatype.h"
#include "serve/rest_codec.h"
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
    RestInferRequest decoded;
    try {
      const std::string header_length = request.get_header_value(kHeaderLength);
      decoded = decode_rest_request(request.body,
                                    request.has_header(kHeaderLength) ? &header_length : nullptr,
                                    model, request.matches[2], service.max_tensor_bytes());
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
    RestBody body = encode_rest_response(decoded, result);
    response.status = 200;
    if (body.header_length) response.set_header(kHeaderLength, std::to_string(*body.header_length));
    response.set_content(std::move(body.content), body.content_type);
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
