// The gRPC front end: inference.GRPCInferenceService (serve/proto/grpc_service.proto) on
// grpcpp's callback API, and grpc.health.v1.Health (gRPC's built-in implementation) for probes.
// Handlers decode and queue; inference runs on the service's threads, so no gRPC thread waits
// on a model.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "serve/inference_service.h"

namespace rnnc::serve {

struct GrpcOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  size_t max_message_bytes = 64 << 20;
  std::string tls_cert, tls_key;  // PEM files; both empty: plaintext
};

class GrpcServer {
 public:
  // Listens at once (ServerLive answers; ServerReady follows the service). rnnc::Error (kIo) when
  // the address cannot be bound or a TLS file cannot be read.
  GrpcServer(InferenceService& service, const GrpcOptions& options);
  ~GrpcServer();
  int port() const { return port_; }
  // The health service's status, for "" and every model name.
  void set_serving(bool serving);
  // Refuses new calls, lets calls in flight finish until `deadline`, then cancels the rest.
  void shutdown(std::chrono::system_clock::time_point deadline);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace rnnc::serve
