// What the harness measures besides time: latency statistics over per-run samples, resident
// memory from /proc/self/status (with the peak reset through /proc/self/clear_refs so each phase
// gets its own peak), and output agreement between two engines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "benchmarks/engine.h"

namespace rnnc::bench {

struct LatencyStats {
  int64_t count = 0;
  double median_us = 0, p90_us = 0, min_us = 0, mean_us = 0, max_us = 0;
};
LatencyStats latency_stats(std::vector<double> samples_us);

// Resident set size and its peak since the last reset_peak_rss(), in bytes.
struct Rss {
  int64_t current = 0;
  int64_t peak = 0;
};
Rss read_rss();
// Resets the kernel's peak-RSS counter (VmHWM) to the current RSS; false where not supported.
bool reset_peak_rss();

// Agreement of one output: |actual - expected| <= atol + rtol * |expected| elementwise.
struct OutputAgreement {
  std::string name;
  double max_abs_diff = 0;
  double max_abs_expected = 0;
  bool ok = true;
  std::string problem;  // set when shapes, dtypes or names differ, or a value is out of bounds
};
std::vector<OutputAgreement> compare_outputs(const TensorMap& actual, const TensorMap& expected,
                                             double atol, double rtol);

// Machine facts for the report: CPU model, core count, kernel.
std::string cpu_model();
std::string kernel_release();

}  // namespace rnnc::bench
