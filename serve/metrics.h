// The server's Prometheus metrics, written in the text exposition format (version 0.0.4) at
// /metrics: per model, requests, errors by status code, a latency histogram, the batch sizes
// chunks ran in and the active sequences; server-wide, the request queue's depth.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "serve/status.h"

namespace rnnc::serve {

// Cumulative buckets of integer observations (microseconds, batch sizes): counts only go up,
// so readers need no lock.
class Histogram {
 public:
  explicit Histogram(std::vector<uint64_t> upper_bounds);
  void observe(uint64_t value);
  // `name`_bucket{..., le="..."} lines, _sum and _count; `scale` converts an observation to the
  // metric's unit (1e-6 for microseconds -> seconds).
  void write(std::string& out, const std::string& name, const std::string& labels,
             double scale) const;

 private:
  std::vector<uint64_t> upper_bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // one per bound, then +Inf
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> count_{0};
};

struct ModelMetrics {
  ModelMetrics();
  std::atomic<uint64_t> requests{0};
  std::array<std::atomic<uint64_t>, 8> errors{};  // indexed by StatusCode
  Histogram latency_us;
};

class Metrics {
 public:
  // Every model's entry exists from the start; requests naming no known model count under "".
  explicit Metrics(const std::vector<std::string>& model_names);
  ModelMetrics& model(const std::string& name);
  void record(const std::string& model, StatusCode code, uint64_t latency_us);

  // Gauges read when /metrics is served.
  std::function<size_t(const std::string& model)> active_sequences;
  std::function<size_t()> queued_requests;
  std::function<size_t()> requests_in_flight;
  // [b]: runs of b chunks so far (index 0 unused).
  std::function<std::vector<uint64_t>(const std::string& model)> batch_sizes;

  std::string exposition() const;

 private:
  std::map<std::string, std::unique_ptr<ModelMetrics>> models_;
};

}  // namespace rnnc::serve
