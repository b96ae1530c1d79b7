// Machine bounds: what one core of this host can physically do, measured in the same run as the
// engines, so the report can say how far each engine is from the hardware rather than only from
// each other (a recurrent step cannot run faster than its weights can be read, nor its
// projection faster than the FMA units allow). Two measurements, on the calling thread:
//   - streaming read bandwidth: a float32 buffer summed over and over, at working sets that sit in
//     L1, L2, L3 and DRAM (kStreamWorkingSets); GB/s = bytes read / time;
//   - peak float32 FMA throughput: independent multiply-add chains; GFLOP/s counts 2 per lane;
//   - peak int8 dot-product throughput where the CPU has VNNI: independent int32 accumulators each
//     updated by vpdpbusd (u8 x s8, 4 multiply-adds per int32 lane), the instruction rnnc's
//     quantized kernels are built on; GOP/s counts 2 per multiply-add, as FMA's GFLOP/s does.
// The stream and FMA kernels are Halide pipelines JIT-compiled for the host target, vectorized at the target's
// natural float width, with kAccumulators independent vector accumulators held in registers so
// that load and FMA latency are hidden. Every call's result is checked against the exact
// expected value, so the work cannot have been optimized away.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rnnc::bench {

// The working sets of the streaming measurement, in bytes, with the cache level each stands for
// on the hosts we run on (Intel Xeon: 48 KiB L1d, 2 MiB L2; a shared L3 of tens of MiB).
struct WorkingSet {
  int64_t bytes;
  const char* level;
};
constexpr WorkingSet kStreamWorkingSets[] = {
    {32 << 10, "L1"}, {256 << 10, "L2"}, {1 << 20, "L2"}, {16 << 20, "L3"}, {512 << 20, "DRAM"}};
// Tiny and fast, for the test suite (--bounds-quick).
constexpr WorkingSet kQuickWorkingSets[] = {{32 << 10, "L1"}, {256 << 10, "L2"}};

// Independent vector accumulators per kernel: enough to cover 4-cycle add/FMA latency at 2
// operations per cycle (8) with room to spare, and few enough to stay in 32 vector registers.
constexpr int kAccumulators = 16;

struct BoundsConfig {
  std::vector<WorkingSet> working_sets;
  int repetitions = 9;              // timed calls per measurement (median and best reported)
  double seconds_per_call = 0.004;  // each call repeats its work to last about this long
};
BoundsConfig default_bounds_config();
BoundsConfig quick_bounds_config();

// One measurement: the statistics of `repetitions` timed calls. "best" is the rate of the fastest
// call (the least disturbed on a shared machine), "median" the typical one.
struct RateStats {
  double median = 0;
  double best = 0;
  double worst = 0;
};

struct StreamBandwidth {
  int64_t bytes = 0;
  std::string level;
  int64_t passes_per_call = 0;
  RateStats gbps;
};

struct MachineBounds {
  std::string target;  // the Halide host target the kernels were compiled for
  int vector_lanes = 0;
  int accumulators = kAccumulators;
  int repetitions = 0;
  std::vector<StreamBandwidth> stream;
  int64_t fma_per_call = 0;  // per vector lane and accumulator
  RateStats fma_gflops;
  // vpdpbusd: "" when the CPU has neither AVX512-VNNI nor AVX-VNNI (then not measured).
  std::string vnni_instruction;  // "vpdpbusd zmm" or "vpdpbusd ymm (VEX)"
  int64_t vnni_per_call = 0;     // instructions per accumulator per call
  RateStats vnni_gops;
};

// Runs the measurements, reporting one line per measurement through `progress`. Throws
// std::runtime_error if a kernel's result is not the exact expected value.
MachineBounds measure_machine_bounds(const BoundsConfig& config,
                                     const std::function<void(const std::string&)>& progress);

}  // namespace rnnc::bench
