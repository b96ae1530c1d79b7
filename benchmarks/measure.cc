#include "benchmarks/measure.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>

#include "ir/error.h"

namespace rnnc::bench {

LatencyStats latency_stats(std::vector<double> samples_us) {
  LatencyStats stats;
  if (samples_us.empty()) return stats;
  std::sort(samples_us.begin(), samples_us.end());
  const size_t n = samples_us.size();
  stats.count = static_cast<int64_t>(n);
  stats.min_us = samples_us.front();
  stats.max_us = samples_us.back();
  stats.median_us = n % 2 ? samples_us[n / 2] : 0.5 * (samples_us[n / 2 - 1] + samples_us[n / 2]);
  // Nearest rank: the smallest sample with at least 90% of the samples at or below it.
  const size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  stats.p90_us = samples_us[std::max<size_t>(rank, 1) - 1];
  stats.mean_us = std::accumulate(samples_us.begin(), samples_us.end(), 0.0) / n;
  return stats;
}

Rss read_rss() {
  Rss rss;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kb = 0;
    fields >> key >> kb;
    if (key == "VmRSS:") rss.current = kb * 1024;
    if (key == "VmHWM:") rss.peak = kb * 1024;
  }
  return rss;
}

bool reset_peak_rss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return static_cast<bool>(clear_refs);
}

std::vector<OutputAgreement> compare_outputs(const TensorMap& actual, const TensorMap& expected,
                                             double atol, double rtol) {
  std::vector<OutputAgreement> result;
  for (const auto& [name, want] : expected) {
    OutputAgreement agreement;
    agreement.name = name;
    auto found = actual.find(name);
    if (found == actual.end()) {
      agreement.ok = false;
      agreement.problem = "output missing";
      result.push_back(agreement);
      continue;
    }
    const Tensor& got = found->second;
    if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
      agreement.ok = false;
      std::ostringstream shapes;
      shapes << "dtype/shape " << dtype_name(got.dtype()) << "[";
      for (int64_t d : got.shape()) shapes << d << ",";
      shapes << "] vs expected " << dtype_name(want.dtype()) << "[";
      for (int64_t d : want.shape()) shapes << d << ",";
      shapes << "]";
      agreement.problem = shapes.str();
      result.push_back(agreement);
      continue;
    }
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double a = got.get_double(i), b = want.get_double(i);
      const double diff = std::fabs(a - b);
      agreement.max_abs_expected = std::max(agreement.max_abs_expected, std::fabs(b));
      if (std::isnan(diff)) {
        agreement.max_abs_diff = diff;
        agreement.ok = false;
        agreement.problem = cat("NaN at element ", i);
        break;
      }
      agreement.max_abs_diff = std::max(agreement.max_abs_diff, diff);
      if (diff > atol + rtol * std::fabs(b) && agreement.ok) {
        agreement.ok = false;
        char values[96];
        std::snprintf(values, sizeof(values), "%.9g vs expected %.9g (|diff| %.3g)", a, b, diff);
        agreement.problem = cat("element ", i, ": ", values);
      }
    }
    result.push_back(agreement);
  }
  for (const auto& [name, tensor] : actual) {
    if (!expected.count(name)) {
      OutputAgreement extra;
      extra.name = name;
      extra.ok = false;
      extra.problem = "output not produced by the peer";
      result.push_back(extra);
    }
  }
  return result;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string kernel_release() {
  utsname name{};
  if (uname(&name) != 0) return "unknown";
  return std::string(name.sysname) + " " + name.release;
}

}  // namespace rnnc::bench
