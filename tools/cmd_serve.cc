// rnnc serve: serves models over the KServe Open Inference Protocol v2 (gRPC and REST), with
// stateful sequences (serve/, docs/serving.md).
#include <chrono>

#include "ir/error.h"
#include "serve/server.h"
#include "tools/commands.h"

namespace rnnc::cli {

namespace {

int64_t positive(const Parsed& args, const std::string& name, int64_t fallback, int64_t minimum) {
  const int64_t value = args.get_int(name, fallback);
  if (value < minimum)
    raise_invalid_input(cat("--", name, " must be >= ", minimum, ", got ", value));
  return value;
}

int run_serve(const Parsed& args) {
  const auto start = std::chrono::steady_clock::now();
  if (!args.positional.empty()) {
    raise_invalid_input(cat("unexpected argument '", args.positional[0],
                            "': models are given with --model NAME=PATH"));
  }
  serve::ServerOptions options;
  for (const std::string& text : args.all("model"))
    options.models.push_back(serve::parse_model_spec(text));
  if (options.models.empty()) raise_invalid_input("give at least one --model NAME=PATH");

  const std::string host = args.get("host", "127.0.0.1");
  options.grpc.host = options.http.host = host;
  options.grpc.port = static_cast<int>(positive(args, "grpc-port", 8001, 0));
  options.http.port = static_cast<int>(positive(args, "http-port", 8000, 0));
  options.grpc.tls_cert = options.http.tls_cert = args.get("tls-cert");
  options.grpc.tls_key = options.http.tls_key = args.get("tls-key");
  if (options.grpc.tls_cert.empty() != options.grpc.tls_key.empty()) {
    raise_invalid_input("--tls-cert and --tls-key go together");
  }
  const auto max_message = static_cast<size_t>(positive(args, "max-message-bytes", 64 << 20, 1024));
  options.grpc.max_message_bytes = options.http.max_message_bytes = max_message;
  options.http.threads = static_cast<int>(positive(args, "http-threads", 4, 1));

  options.service.threads = static_cast<int>(positive(args, "threads", 1, 1));
  options.service.max_queue = static_cast<size_t>(positive(args, "max-queue", 256, 1));
  options.service.max_sequences = static_cast<size_t>(positive(args, "max-sequences", 1024, 1));
  options.service.sequence_idle_timeout =
      std::chrono::milliseconds(positive(args, "sequence-idle-timeout-ms", 60'000, 1));
  options.service.max_tensor_bytes =
      static_cast<size_t>(positive(args, "max-tensor-bytes", 16 << 20, 1));
  options.drain_timeout = std::chrono::milliseconds(positive(args, "drain-timeout-ms", 10'000, 0));
  options.target = args.get("target");
  options.cache_dir = args.get("cache-dir");
  options.warm_only = args.has("warm-only");
  return serve::run_server(options, start);
}

}  // namespace

const Command kServeCommand{
    "serve",
    "rnnc serve --model NAME=PATH[,option=value...] [--model ...] [--grpc-port P] [--http-port Q] "
    "[options]",
    "Serve models over the KServe Open Inference Protocol v2: gRPC "
    "(inference.GRPCInferenceService\n"
    "with ModelStreamInfer, grpc.health.v1.Health) and REST (/v2/..., /metrics), with stateful\n"
    "sequences (request parameters sequence_id, sequence_start, sequence_end). Prints a line\n"
    "'rnnc serve: ready grpc=HOST:P http=HOST:Q in S s' once every model is compiled; SIGTERM\n"
    "drains and exits 0. docs/serving.md.\n\n"
    "Model options (after NAME=PATH, comma-separated): fix=NAME=V[:V...], dim=NAME=N (warm-up\n"
    "shape), quantize=CONFIG, plan=P, threads=N, state=OUT:IN (the model's own state, carried per\n"
    "sequence; Silero VAD: state=stateN:state), batching=on|off, max-batch=N, max-wait-us=N,\n"
    "batch-axis=T:AXIS (the batch axis of input or output T where the batcher cannot tell it).",
    {
        {"model", "NAME=PATH[,opt=v...]", "a model to serve (repeatable)"},
        {"grpc-port", "P", "gRPC port (default 8001; 0: any free port)"},
        {"http-port", "Q", "HTTP port (default 8000; 0: any free port)"},
        {"host", "ADDR", "address to listen on (default 127.0.0.1; 0.0.0.0 for a pod)"},
        {"threads", "N", "inference threads, the server's compute budget (default 1)"},
        {"http-threads", "N",
         "HTTP connections served at once (default 4; they wait on inference)"},
        {"max-queue", "N",
         "requests waiting for an inference thread before UNAVAILABLE / 503 "
         "(default 256)"},
        {"max-sequences", "N", "live sequences before RESOURCE_EXHAUSTED / 503 (default 1024)"},
        {"sequence-idle-timeout-ms", "MS", "drop a sequence idle this long (default 60000)"},
        {"max-tensor-bytes", "N", "largest input tensor a request may carry (default 16 MiB)"},
        {"max-message-bytes", "N", "largest gRPC message or HTTP body (default 64 MiB)"},
        {"drain-timeout-ms", "MS",
         "on SIGTERM, how long requests in flight may take to finish "
         "(default 10000)"},
        {"tls-cert", "PEM", "serve gRPC and HTTP over TLS with this certificate (with --tls-key)"},
        {"tls-key", "PEM", "the certificate's private key"},
        {"warm-only", "", "compile every model (filling the kernel cache) and exit"},
        {"target", "T", kTargetHelp},
        {"cache-dir", "DIR", "compiled kernel cache (default $RNNC_CACHE_DIR, else ~/.cache/rnnc)"},
    },
    run_serve,
};

}  // namespace rnnc::cli
