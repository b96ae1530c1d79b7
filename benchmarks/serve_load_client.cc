// The load client of benchmarks/serve_load.py: N concurrent ModelStreamInfer streams against a
// running `rnnc serve`, each one sequence sent in lockstep (chunk k+1 goes when chunk k's answer
// is in), bounded in chunks per stream and in seconds. Prints one line of `key=value` pairs:
// chunks, seconds, chunks_per_s, p50_ms, p99_ms, errors, first_error.
//
//   serve_load_client --grpc 127.0.0.1:8001 --model m --input x --shape 16,1,128
//       --clients 32 --chunks 200 --max-seconds 20
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "grpc_service.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string address, model, input;
  std::vector<int64_t> shape;
  int clients = 32;
  int chunks = 200;
  double max_seconds = 20;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "serve_load_client: %s\nusage: serve_load_client --grpc HOST:PORT --model NAME "
               "--input NAME --shape D,D,... [--clients N] [--chunks N] [--max-seconds S]\n",
               problem.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("'" + flag + "' needs a value");
    const std::string value = argv[++i];
    if (flag == "--grpc")
      options.address = value;
    else if (flag == "--model")
      options.model = value;
    else if (flag == "--input")
      options.input = value;
    else if (flag == "--clients")
      options.clients = std::atoi(value.c_str());
    else if (flag == "--chunks")
      options.chunks = std::atoi(value.c_str());
    else if (flag == "--max-seconds")
      options.max_seconds = std::atof(value.c_str());
    else if (flag == "--shape") {
      std::stringstream dims(value);
      for (std::string dim; std::getline(dims, dim, ',');)
        options.shape.push_back(std::atoll(dim.c_str()));
    } else {
      usage("unknown option '" + flag + "'");
    }
  }
  if (options.address.empty() || options.model.empty() || options.input.empty() ||
      options.shape.empty() || options.clients < 1 || options.chunks < 1) {
    usage("--grpc, --model, --input and --shape are required; --clients and --chunks >= 1");
  }
  return options;
}

struct Totals {
  std::mutex mutex;
  std::vector<double> latencies_ms;
  int errors = 0;
  std::string first_error;

  void error(const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    if (errors++ == 0) first_error = message;
  }
};

// One stream carrying sequence `sequence_id` until its chunks or the deadline run out.
void run_client(inference::GRPCInferenceService::Stub& stub, const Options& options,
                int64_t sequence_id, Clock::time_point deadline, Totals& totals) {
  int64_t elements = 1;
  for (int64_t d : options.shape) elements *= d;
  std::vector<float> chunk(static_cast<size_t>(elements));
  std::mt19937 rng(static_cast<unsigned>(sequence_id));
  std::normal_distribution<float> normal;
  for (float& v : chunk) v = normal(rng);

  inference::ModelInferRequest request;
  request.set_model_name(options.model);
  auto* tensor = request.add_inputs();
  tensor->set_name(options.input);
  tensor->set_datatype("FP32");
  for (int64_t d : options.shape) tensor->add_shape(d);
  request.add_raw_input_contents(chunk.data(), chunk.size() * sizeof(float));
  (*request.mutable_parameters())["sequence_id"].set_int64_param(sequence_id);

  grpc::ClientContext context;
  auto stream = stub.ModelStreamInfer(&context);
  std::vector<double> latencies;
  inference::ModelStreamInferResponse response;
  for (int k = 0; k < options.chunks && Clock::now() < deadline; ++k) {
    (*request.mutable_parameters())["sequence_start"].set_bool_param(k == 0);
    const auto start = Clock::now();
    if (!stream->Write(request) || !stream->Read(&response)) {
      totals.error("stream broken after " + std::to_string(k) + " chunks");
      break;
    }
    latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (!response.error_message().empty()) totals.error(response.error_message());
  }
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  if (!status.ok()) totals.error("stream status: " + status.error_message());
  std::lock_guard<std::mutex> lock(totals.mutex);
  totals.latencies_ms.insert(totals.latencies_ms.end(), latencies.begin(), latencies.end());
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  auto channel = grpc::CreateChannel(options.address, grpc::InsecureChannelCredentials());
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  Totals totals;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.max_seconds));
  std::vector<std::thread> clients;
  for (int c = 0; c < options.clients; ++c) {
    clients.emplace_back([&, c] { run_client(*stub, options, 1 + c, deadline, totals); });
  }
  for (std::thread& client : clients) client.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double>& latencies = totals.latencies_ms;
  std::sort(latencies.begin(), latencies.end());
  auto quantile = [&](double q) {
    return latencies.empty() ? 0.0
                             : latencies[std::min(latencies.size() - 1,
                                                  static_cast<size_t>(q * latencies.size()))];
  };
  std::printf(
      "chunks=%zu seconds=%.3f chunks_per_s=%.1f p50_ms=%.3f p99_ms=%.3f errors=%d "
      "first_error=%s\n",
      latencies.size(), seconds, latencies.size() / seconds, quantile(0.5), quantile(0.99),
      totals.errors, totals.first_error.empty() ? "-" : totals.first_error.c_str());
  return totals.errors == 0 ? 0 : 1;
}
