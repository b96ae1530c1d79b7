// `rnnc serve` as a whole: the service, both front ends, start-up (listen, compile, then ready)
// and the graceful shutdown on SIGTERM or SIGINT.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "serve/grpc_server.h"
#include "serve/http_server.h"
#include "serve/inference_service.h"
#include "serve/model_spec.h"

namespace rnnc::serve {

struct ServerOptions {
  std::vector<ModelSpec> models;
  ServiceOptions service;
  GrpcOptions grpc;
  HttpOptions http;
  std::string target;     // ModelOptions::target for every model
  std::string cache_dir;  // ModelOptions::cache_dir for every model
  std::chrono::milliseconds drain_timeout{10'000};
  bool warm_only = false;  // compile every model (filling the kernel cache), then exit
};

// Serves until SIGTERM or SIGINT, then drains and returns 0. Prints, on stdout, one line when
// listening and one when ready ("rnnc serve: ready grpc=HOST:P http=HOST:Q in S s"), with the
// ports chosen. `process_start` dates the time to ready. Throws rnnc::Error on start-up failure.
int run_server(const ServerOptions& options, std::chrono::steady_clock::time_point process_start);

}  // namespace rnnc::serve
