// The REST front end of the protocol (cpp-httplib + nlohmann-json): health, server and model
// metadata, inference with JSON tensor data or the binary tensor data extension, and Prometheus
// metrics at /metrics.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "serve/inference_service.h"

namespace rnnc::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 0;     // 0: any free port
  int threads = 4;  // connections served at once (they wait on inference)
  size_t max_message_bytes = 64 << 20;
  std::string tls_cert, tls_key;  // PEM files; both empty: plain HTTP
};

class HttpServer {
 public:
  // Binds and serves from a thread of its own. rnnc::Error (kIo) when the address cannot be
  // bound or TLS cannot be set up.
  HttpServer(InferenceService& service, const HttpOptions& options);
  ~HttpServer();
  int port() const { return port_; }
  // Stops accepting; requests being served finish first.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace rnnc::serve
