#include "serve/metrics.h"

#include <cstdio>

namespace rnnc::serve {

namespace {

// Label values escape backslash, double quote and newline (the exposition format's rule).
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

const std::vector<uint64_t> kLatencyBoundsUs = {100,    250,    500,     1000,    2500,
                                                5000,   10000,  25000,   50000,   100000,
                                                250000, 500000, 1000000, 2500000, 10000000};
const std::vector<uint64_t> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128};

}  // namespace

Histogram::Histogram(std::vector<uint64_t> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      counts_(new std::atomic<uint64_t>[upper_bounds_.size() + 1]) {
  for (size_t k = 0; k <= upper_bounds_.size(); ++k) counts_[k] = 0;
}

void Histogram::observe(uint64_t value) {
  size_t k = 0;
  while (k < upper_bounds_.size() && value > upper_bounds_[k]) ++k;
  counts_[k].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void Histogram::write(std::string& out, const std::string& name, const std::string& labels,
                      double scale) const {
  uint64_t cumulative = 0;
  for (size_t k = 0; k <= upper_bounds_.size(); ++k) {
    cumulative += counts_[k].load(std::memory_order_relaxed);
    const std::string le =
        k < upper_bounds_.size() ? number(static_cast<double>(upper_bounds_[k]) * scale) : "+Inf";
    out += name + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum{" + labels + "} " +
         number(static_cast<double>(sum_.load(std::memory_order_relaxed)) * scale) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(count_.load(std::memory_order_relaxed)) +
         "\n";
}

ModelMetrics::ModelMetrics() : latency_us(kLatencyBoundsUs) {}

Metrics::Metrics(const std::vector<std::string>& model_names) {
  models_[""] = std::make_unique<ModelMetrics>();
  for (const std::string& name : model_names) models_[name] = std::make_unique<ModelMetrics>();
}

ModelMetrics& Metrics::model(const std::string& name) {
  auto it = models_.find(name);
  return *(it == models_.end() ? models_.at("") : it->second);
}

void Metrics::record(const std::string& model_name, StatusCode code, uint64_t latency_us) {
  ModelMetrics& entry = model(model_name);
  entry.requests.fetch_add(1, std::memory_order_relaxed);
  if (code != StatusCode::kOk) {
    entry.errors[static_cast<size_t>(code)].fetch_add(1, std::memory_order_relaxed);
  } else {
    entry.latency_us.observe(latency_us);
  }
}

std::string Metrics::exposition() const {
  std::string out;
  header(out, "rnnc_serve_requests_total", "counter", "Inference requests received, per model.");
  for (const auto& [name, entry] : models_) {
    out += "rnnc_serve_requests_total{model=\"" + label_value(name) + "\"} " +
           std::to_string(entry->requests.load()) + "\n";
  }
  header(out, "rnnc_serve_request_errors_total", "counter",
         "Inference requests that failed, per model and status code.");
  for (const auto& [name, entry] : models_) {
    for (size_t code = 1; code < entry->errors.size(); ++code) {
      const uint64_t count = entry->errors[code].load();
      if (count == 0) continue;
      out += "rnnc_serve_request_errors_total{model=\"" + label_value(name) + "\",code=\"" +
             status_code_name(static_cast<StatusCode>(code)) + "\"} " + std::to_string(count) +
             "\n";
    }
  }
  header(out, "rnnc_serve_request_duration_seconds", "histogram",
         "Time from a request's arrival to its response, successful requests, per model.");
  for (const auto& [name, entry] : models_) {
    if (!name.empty()) {
      entry->latency_us.write(out, "rnnc_serve_request_duration_seconds",
                              "model=\"" + label_value(name) + "\"", 1e-6);
    }
  }
  if (batch_sizes) {
    header(out, "rnnc_serve_batch_size", "histogram",
           "Chunks per model run (sequences batched together), over the runs so far, per model.");
    for (const auto& [name, entry] : models_) {
      if (name.empty()) continue;
      const std::vector<uint64_t> runs = batch_sizes(name);
      const std::string labels = "model=\"" + label_value(name) + "\"";
      uint64_t cumulative = 0, sum = 0;
      size_t b = 1;
      for (uint64_t bound : kBatchBounds) {
        for (; b < runs.size() && b <= bound; ++b) {
          cumulative += runs[b];
          sum += runs[b] * b;
        }
        out += "rnnc_serve_batch_size_bucket{" + labels + ",le=\"" + std::to_string(bound) +
               "\"} " + std::to_string(cumulative) + "\n";
      }
      for (; b < runs.size(); ++b) {
        cumulative += runs[b];
        sum += runs[b] * b;
      }
      out += "rnnc_serve_batch_size_bucket{" + labels + ",le=\"+Inf\"} " +
             std::to_string(cumulative) + "\n";
      out += "rnnc_serve_batch_size_sum{" + labels + "} " + std::to_string(sum) + "\n";
      out += "rnnc_serve_batch_size_count{" + labels + "} " + std::to_string(cumulative) + "\n";
    }
  }
  if (active_sequences) {
    header(out, "rnnc_serve_active_sequences", "gauge",
           "Sequences the server holds state for, per model.");
    for (const auto& [name, entry] : models_) {
      if (!name.empty()) {
        out += "rnnc_serve_active_sequences{model=\"" + label_value(name) + "\"} " +
               std::to_string(active_sequences(name)) + "\n";
      }
    }
  }
  if (queued_requests) {
    header(out, "rnnc_serve_queued_requests", "gauge", "Requests waiting for an inference thread.");
    out += "rnnc_serve_queued_requests " + std::to_string(queued_requests()) + "\n";
  }
  if (requests_in_flight) {
    header(out, "rnnc_serve_requests_in_flight", "gauge",
           "Requests received and not answered yet (queued or running).");
    out += "rnnc_serve_requests_in_flight " + std::to_string(requests_in_flight()) + "\n";
  }
  return out;
}

}  // namespace rnnc::serve
