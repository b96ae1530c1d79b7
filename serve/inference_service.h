// The protocol-independent core of `rnnc serve`: the served models, their readiness, the
// sequences, the inference threads and the metrics. The gRPC and REST front ends decode a request
// into an InferRequest, hand it to infer() and encode what comes back.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/metrics.h"
#include "serve/sequence_table.h"
#include "serve/served_model.h"
#include "serve/status.h"
#include "serve/tensor.h"
#include "serve/work_queue.h"

namespace rnnc::serve {

struct ServiceOptions {
  int threads = 1;              // inference threads
  size_t max_queue = 256;       // requests waiting for a thread before UNAVAILABLE
  size_t max_sequences = 1024;  // live sequences before RESOURCE_EXHAUSTED
  std::chrono::milliseconds sequence_idle_timeout{60'000};
  size_t max_tensor_bytes = 64 << 20;  // per input tensor
};

// The outcome of one request: code kOk and the response, or the error's code and message.
using InferDone =
    std::function<void(StatusCode code, const std::string& error, InferResponse response)>;

class InferenceService {
 public:
  InferenceService(std::vector<ModelSpec> specs, const ServiceOptions& options);
  ~InferenceService();  // drain()

  // Compiles every model in order (ready() turns true after the last); rnnc::Error names the
  // model that failed.
  void load_models(const std::string& target, const std::string& cache_dir);

  bool live() const { return true; }
  bool ready() const;
  // nullptr for a name the server does not serve.
  const ServedModel* find(const std::string& name) const;
  const std::vector<std::unique_ptr<ServedModel>>& models() const { return models_; }
  // "'a', 'b'": for error messages.
  std::string model_names() const;
  size_t max_tensor_bytes() const { return options_.max_tensor_bytes; }

  // Queues the request for an inference thread. `done` runs exactly once: on that thread, on a
  // backend's thread, or here when the queue refuses the request (full, or shutting down).
  void infer(InferRequest request, InferDone done);

  // Not ready any more and refuses new requests (UNAVAILABLE); requests already queued still run.
  void stop_accepting();
  // Waits until every request infer() took has been answered, or until `deadline`; true if none
  // is left. The server calls it before it closes its connections, so answers leave on open ones.
  bool wait_until_answered(std::chrono::steady_clock::time_point deadline);
  // Runs the queued requests to the end and stops the inference threads.
  void drain();

  Metrics& metrics() { return metrics_; }
  const SequenceTable& sequences() const { return sequences_; }

 private:
  void run(InferRequest& request, InferDone& done);
  void expire_idle_sequences();

  ServiceOptions options_;
  std::vector<std::unique_ptr<ServedModel>> models_;
  Metrics metrics_;
  SequenceTable sequences_;
  std::atomic<bool> accepting_{true};
  std::atomic<size_t> in_flight_{0};  // requests infer() took and has not answered
  std::mutex answered_mutex_;
  std::condition_variable answered_;  // notified when in_flight_ falls to 0
  WorkQueue queue_;
  std::mutex reaper_mutex_;
  std::condition_variable reaper_wake_;
  bool reaper_stop_ = false;
  std::thread reaper_;
};

}  // namespace rnnc::serve
