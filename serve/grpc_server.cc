#include "serve/grpc_server.h"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <type_traits>

#include "grpc_service.grpc.pb.h"
#include "ir/error.h"
#include "rnnc/version.h"
#include "serve/datatype.h"
#include "serve/grpc_codec.h"
#include "serve/server_metadata.h"

namespace rnnc::serve {

namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;
using inference::ModelStreamInferResponse;

grpc::StatusCode grpc_code(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return grpc::StatusCode::OK;
    case StatusCode::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case StatusCode::kUnavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case StatusCode::kResourceExhausted:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case StatusCode::kDeadlineExceeded:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case StatusCode::kCancelled:
      return grpc::StatusCode::CANCELLED;
    case StatusCode::kInternal:
      return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::UNKNOWN;
}

// Caps a decoded request's deadline at the call's.
void apply_call_deadline(const grpc::CallbackServerContext& context, InferRequest& request) {
  const auto deadline = context.deadline();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    request.deadline =
        std::min(request.deadline, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                      deadline - std::chrono::system_clock::now()));
  }
}

grpc::Status error_status(const RequestError& e) {
  return grpc::Status(grpc_code(e.code()), e.what());
}

// ModelInfer and ModelStreamInfer take their messages as bytes and parse them here, so a
// malformed message gets INVALID_ARGUMENT naming it rather than gRPC's bare error.
using Rpc = inference::GRPCInferenceService;
using HandlerBase = Rpc::WithCallbackMethod_ServerLive<Rpc::WithCallbackMethod_ServerReady<
    Rpc::WithCallbackMethod_ModelReady<Rpc::WithCallbackMethod_ServerMetadata<
        Rpc::WithCallbackMethod_ModelMetadata<Rpc::WithRawCallbackMethod_ModelInfer<
            Rpc::WithRawCallbackMethod_ModelStreamInfer<Rpc::Service>>>>>>>;

// Protobuf logs a line while parsing a message it then rejects (a string field that is not UTF-8:
// one ERROR line per such request, and the request is answered INVALID_ARGUMENT anyway). A client
// sending them could fill the server's log; lines go to stderr at most once a minute, each
// saying how many were held back since the last.
class ProtobufLogLimiter {
 public:
  static void install() {
    static std::once_flag once;
    std::call_once(once, [] { google::protobuf::SetLogHandler(&ProtobufLogLimiter::log); });
  }

 private:
  static constexpr std::chrono::seconds kInterval{60};

  static void log(google::protobuf::LogLevel level, const char* /*file*/, int /*line*/,
                  const std::string& message) {
    static std::mutex mutex;
    static std::chrono::steady_clock::time_point last;
    static bool logged = false;
    static uint64_t held_back = 0;
    const std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mutex);
    if (level < google::protobuf::LOGLEVEL_FATAL && logged && now - last < kInterval) {
      ++held_back;
      return;
    }
    static const char* const kLevels[] = {"INFO", "WARNING", "ERROR", "FATAL"};
    std::cerr << "rnnc serve: protobuf " << kLevels[std::min<int>(level, 3)] << ": " << message;
    if (held_back > 0) std::cerr << " (" << held_back << " protobuf lines held back before this)";
    std::cerr << std::endl;
    logged = true;
    last = now;
    held_back = 0;
  }
};

// Parses a ModelInferRequest; RequestError (INVALID_ARGUMENT) when the bytes are not one.
void parse_request(grpc::ByteBuffer& bytes, ModelInferRequest& message) {
  if (!grpc::SerializationTraits<ModelInferRequest>::Deserialize(&bytes, &message).ok()) {
    raise_request(StatusCode::kInvalidArgument,
                  "malformed request: the bytes are not a ModelInferRequest protobuf message");
  }
}

template <typename Message>
grpc::ByteBuffer serialize(const Message& message) {
  grpc::ByteBuffer bytes;
  bool own_buffer = false;
  grpc::SerializationTraits<Message>::Serialize(message, &bytes, &own_buffer);
  return bytes;
}

class InferenceHandler final : public HandlerBase {
 public:
  explicit InferenceHandler(InferenceService& service) : service_(service) {}

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context,
                                       const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* response) override {
    response->set_live(service_.live());
    return finish(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context,
                                        const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* response) override {
    response->set_ready(service_.ready());
    return finish(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override {
    try {
      response->set_ready(model_ready(service_, request->name(), request->version()));
      return finish(context, grpc::Status::OK);
    } catch (const RequestError& e) {
      return finish(context, error_status(e));
    }
  }

  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* response) override {
    response->set_name(kServerName);
    response->set_version(RNNC_VERSION_STRING);
    for (const char* extension : kServerExtensions) response->add_extensions(extension);
    return finish(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override {
    try {
      const ServedModel& model = ready_model(service_, request->name(), request->version());
      response->set_name(model.name());
      response->add_versions(kModelVersion);
      response->set_platform(kModelPlatform);
      auto add = [](const std::vector<TensorMetadata>& tensors, auto* out) {
        for (const TensorMetadata& tensor : tensors) {
          auto* entry = out->Add();
          entry->set_name(tensor.name);
          entry->set_datatype(datatype_name(tensor.type));
          for (int64_t d : tensor.shape) entry->add_shape(d);
        }
      };
      add(model.inputs(), response->mutable_inputs());
      add(model.outputs(), response->mutable_outputs());
      (*response->mutable_properties())["sequence_state"] = carried_state_text(model);
      return finish(context, grpc::Status::OK);
    } catch (const RequestError& e) {
      return finish(context, error_status(e));
    }
  }

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request_bytes,
                                       grpc::ByteBuffer* response_bytes) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    ModelInferRequest request;
    InferRequest decoded;
    try {
      parse_request(*const_cast<grpc::ByteBuffer*>(request_bytes), request);
      decoded = decode_grpc_request(request, service_.max_tensor_bytes());
      apply_call_deadline(*context, decoded);
    } catch (const RequestError& e) {
      service_.metrics().record(request.model_name(), e.code(), 0);
      reactor->Finish(error_status(e));
      return reactor;
    }
    decoded.is_cancelled = [context] { return context->IsCancelled(); };
    const bool raw = request.raw_input_contents_size() > 0;
    service_.infer(std::move(decoded),
                   [reactor, response_bytes, raw](StatusCode code, const std::string& error,
                                                  InferResponse result) {
                     if (code != StatusCode::kOk) {
                       reactor->Finish(grpc::Status(grpc_code(code), error));
                       return;
                     }
                     ModelInferResponse response;
                     encode_grpc_response(result, raw, response);
                     *response_bytes = serialize(response);
                     reactor->Finish(grpc::Status::OK);
                   });
    return reactor;
  }

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ModelStreamInfer(
      grpc::CallbackServerContext* context) override;

 private:
  static grpc::ServerUnaryReactor* finish(grpc::CallbackServerContext* context,
                                          const grpc::Status& status) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }

  InferenceService& service_;
};

// One ModelStreamInfer call. Requests run one at a time, in the order they arrive (a sequence's
// chunks must); each gets one response, its result or its error_message, and a failed request
// leaves the stream open. The next read starts when a request's result is in.
class StreamReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  StreamReactor(InferenceService& service, grpc::CallbackServerContext* context)
      : service_(service), context_(context) {
    StartRead(&request_bytes_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client closed its side, or went away
      std::unique_lock<std::mutex> lock(mutex_);
      reads_done_ = true;
      finish_if_done(lock);
      return;
    }
    ModelInferRequest request;
    InferRequest decoded;
    try {
      parse_request(request_bytes_, request);
      decoded = decode_grpc_request(request, service_.max_tensor_bytes());
      apply_call_deadline(*context_, decoded);
    } catch (const RequestError& e) {
      service_.metrics().record(request.model_name(), e.code(), 0);
      ModelStreamInferResponse response;
      response.set_error_message(cat(status_code_name(e.code()), ": ", e.what()));
      respond(response);
      return;
    }
    decoded.is_cancelled = [context = context_] { return context->IsCancelled(); };
    const bool raw = request.raw_input_contents_size() > 0;
    service_.infer(std::move(decoded),
                   [this, raw](StatusCode code, const std::string& error, InferResponse result) {
                     ModelStreamInferResponse response;
                     if (code != StatusCode::kOk) {
                       response.set_error_message(cat(status_code_name(code), ": ", error));
                     } else {
                       encode_grpc_response(result, raw, *response.mutable_infer_response());
                     }
                     respond(response);
                   });
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mutex_);
    writes_.pop_front();
    writing_ = false;
    if (!ok) writes_.clear();  // the client is gone: nobody reads the rest
    if (!writes_.empty()) {
      writing_ = true;
      StartWrite(&writes_.front());
    }
    finish_if_done(lock);
  }

  void OnDone() override { delete this; }

 private:
  void respond(const ModelStreamInferResponse& response) {
    std::lock_guard<std::mutex> lock(mutex_);
    writes_.push_back(serialize(response));
    if (!writing_) {
      writing_ = true;
      StartWrite(&writes_.front());
    }
    StartRead(&request_bytes_);
  }

  // Finishes once the client has stopped sending and every response is written. Finish runs
  // after `lock` is released: OnDone, which deletes this reactor, may follow it at once.
  void finish_if_done(std::unique_lock<std::mutex>& lock) {
    if (reads_done_ && !writing_ && writes_.empty() && !finished_) {
      finished_ = true;
      lock.unlock();
      Finish(grpc::Status::OK);
    }
  }

  InferenceService& service_;
  grpc::CallbackServerContext* context_;
  grpc::ByteBuffer request_bytes_;
  std::mutex mutex_;
  std::deque<grpc::ByteBuffer> writes_;  // front() is being written while writing_
  bool writing_ = false;
  bool reads_done_ = false;
  bool finished_ = false;
};

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* InferenceHandler::ModelStreamInfer(
    grpc::CallbackServerContext* context) {
  return new StreamReactor(service_, context);
}

std::string read_file(const std::string& path, const char* what) {
  std::ifstream file(path, std::ios::binary);
  if (!file) raise(ErrorKind::kIo, cat("cannot read ", what, " '", path, "'"));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

struct GrpcServer::Impl {
  explicit Impl(InferenceService& service) : handler(service), service(service) {}
  InferenceHandler handler;
  InferenceService& service;
  std::unique_ptr<grpc::Server> server;
};

GrpcServer::GrpcServer(InferenceService& service, const GrpcOptions& options)
    : impl_(std::make_unique<Impl>(service)) {
  ProtobufLogLimiter::install();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options.tls_cert.empty() || !options.tls_key.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({read_file(options.tls_key, "TLS key (--tls-key)"),
                                      read_file(options.tls_cert, "TLS certificate (--tls-cert)")});
    credentials = grpc::SslServerCredentials(ssl);
  }
  const std::string address = options.host.find(':') != std::string::npos
                                  ? "[" + options.host + "]:" + std::to_string(options.port)
                                  : options.host + ":" + std::to_string(options.port);
  builder.AddListeningPort(address, credentials, &port_);
  builder.RegisterService(&impl_->handler);
  // gRPC sets SO_REUSEPORT by default, so a second server on a port in use would share it
  // silently; the port must be this server's alone.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<size_t>(options.max_message_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(
      static_cast<int>(std::min<size_t>(options.max_message_bytes, INT32_MAX)));
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || port_ == 0) {
    raise(ErrorKind::kIo, cat("gRPC: cannot listen on ", address));
  }
  set_serving(false);
}

GrpcServer::~GrpcServer() {
  if (impl_->server) shutdown(std::chrono::system_clock::now());
}

void GrpcServer::set_serving(bool serving) {
  grpc::HealthCheckServiceInterface* health = impl_->server->GetHealthCheckService();
  if (!health) return;
  health->SetServingStatus("", serving);
  health->SetServingStatus("inference.GRPCInferenceService", serving);
  for (const auto& model : impl_->service.models())
    health->SetServingStatus(model->name(), serving);
}

void GrpcServer::shutdown(std::chrono::system_clock::time_point deadline) {
  if (!impl_->server) return;
  impl_->server->Shutdown(deadline);
  impl_->server->Wait();
  impl_->server.reset();
}

}  // namespace rnnc::serve
