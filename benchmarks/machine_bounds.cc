#include "benchmarks/machine_bounds.h"

#include <Halide.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "lowering/kernel_target.h"

namespace rnnc::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Halide::Func;
using Halide::RDom;
using Halide::Var;

// Float sums of small integers are exact below 2^24: the kernels' inputs are chosen so that every
// accumulator stays below it, which makes the expected results exact and the checks equalities.
constexpr int64_t kExactFloatLimit = int64_t{1} << 24;
constexpr int64_t kMaxStreamValue = 4;  // stream data are 1, 2, 3, 4, 1, 2, ...

template <typename... Args>
std::string format(const char* pattern, Args... args) {
  char text[256];
  std::snprintf(text, sizeof(text), pattern, args...);
  return text;
}

std::string size_name(int64_t bytes) {
  if (bytes >= (1 << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

RateStats rate_stats(std::vector<double> rates) {
  std::sort(rates.begin(), rates.end());
  RateStats stats;
  stats.median = rates[rates.size() / 2];
  stats.best = rates.back();
  stats.worst = rates.front();
  return stats;
}

// Seconds one call takes.
template <typename Call>
double time_call(const Call& call) {
  const auto start = Clock::now();
  call();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// How many units of work (passes, iterations) make one call last about `seconds`: grows the count
// until a call is long enough to time, then scales it. Never above `limit`.
template <typename Call>
int64_t calibrate(const Call& call, double seconds, int64_t limit) {
  int64_t count = 1;
  while (true) {
    const double t = time_call([&] { call(count); });
    if (t >= seconds / 4 || count >= limit) {
      const double scaled = std::ceil(count * seconds / std::max(t, 1e-9));
      return std::clamp<int64_t>(static_cast<int64_t>(scaled), 1, limit);
    }
    count = std::min(count * 4, limit);
  }
}

// total(lane) = sum over passes and over the buffer of data, the buffer read as consecutive
// blocks of kAccumulators vectors: accumulator a of block b adds data[(b * A + a) * lanes + lane].
// The A vector accumulators live in registers; the final sum over them (in double, exact) runs
// once per call, after the timed passes.
class StreamKernel {
 public:
  StreamKernel(const Halide::Target& target, int lanes) : lanes_(lanes) {
    Var lane("lane"), acc("acc");
    const int block = lanes * kAccumulators;
    RDom r(0, data_.dim(0).extent() / block, 0, passes_, "r");  // r.x: block, r.y: pass
    Func partial("partial");
    partial(lane, acc) = 0.0f;
    partial(lane, acc) += data_((r.x * kAccumulators + acc) * lanes + lane);
    RDom k(0, kAccumulators, "k");
    total_(lane) = Halide::sum(Halide::cast<double>(partial(lane, k)));

    total_.bound(lane, 0, lanes).vectorize(lane);
    partial.compute_at(total_, Var::outermost())
        .store_in(Halide::MemoryType::Register)
        .vectorize(lane)
        .unroll(acc);
    partial.update().reorder(lane, acc, r.x, r.y).vectorize(lane).unroll(acc);
    data_.dim(0).set_min(0);
    total_.compile_jit(target);
  }

  // Sums `passes` times over `data`; returns the sum over lanes.
  double run(const Halide::Buffer<float>& data, int64_t passes) {
    data_.set(data);
    passes_.set(static_cast<int>(passes));
    Halide::Buffer<double> out(lanes_);
    total_.realize(out);
    double total = 0;
    for (int lane = 0; lane < lanes_; ++lane) total += out(lane);
    return total;
  }

 private:
  int lanes_;
  Halide::ImageParam data_{Halide::Float(32), 1, "data"};
  Halide::Param<int> passes_{"passes"};
  Func total_{"stream_total"};
};

// chain(lane, acc) = chain * scale + offset, `iterations` times, for lanes x kAccumulators
// independent chains (one FMA per vector each iteration), all in registers.
class FmaKernel {
 public:
  FmaKernel(const Halide::Target& target, int lanes) : lanes_(lanes) {
    Var lane("lane"), acc("acc");
    RDom r(0, iterations_, "r");
    Func chain("chain");
    chain(lane, acc) = Halide::cast<float>(acc * lanes + lane);
    // r * 0 (folded away when lowering) makes r this update's reduction domain.
    chain(lane, acc) = chain(lane, acc) * scale_ + offset_ + Halide::cast<float>(r * 0);
    result_(lane, acc) = chain(lane, acc);

    result_.bound(lane, 0, lanes).bound(acc, 0, kAccumulators).vectorize(lane).unroll(acc);
    chain.compute_at(result_, Var::outermost())
        .store_in(Halide::MemoryType::Register)
        .vectorize(lane)
        .unroll(acc);
    chain.update().reorder(lane, acc, r).vectorize(lane).unroll(acc);
    result_.compile_jit(target);
  }

  // With scale 1 and offset 1 every chain ends at its start value + iterations, exactly; scale and
  // offset are runtime parameters, so the compiler cannot know that.
  Halide::Buffer<float> run(int64_t iterations) {
    scale_.set(1.0f);
    offset_.set(1.0f);
    iterations_.set(static_cast<int>(iterations));
    Halide::Buffer<float> out(lanes_, kAccumulators);
    result_.realize(out);
    return out;
  }

 private:
  int lanes_;
  Halide::Param<float> scale_{"scale"}, offset_{"offset"};
  Halide::Param<int> iterations_{"iterations"};
  Func result_{"fma_chains"};
};

// The int8 dot-product peak: kVnniAccumulators int32 vector accumulators, each updated by one
// vpdpbusd per iteration from a register of 0x01 bytes (u8 1 times s8 1, four per int32 lane, so
// every lane grows by 4 each time), summed into the first at the end. In assembly: no compiler
// form is certain to be exactly these instructions, and a Halide JIT kernel would need the VNNI
// target flag, whose LLVM CPU (sapphirerapids) implies features an AMD host lacks. 15
// accumulators (xmm0-14, the operand in xmm15) cover vpdpbusd's latency at 2 per cycle. Returns
// lane 0 of the sum: 60 * iterations.
constexpr int kVnniAccumulators = 15;
constexpr int32_t kOneBytes = 0x01010101;

#define RNNC_VNNI_LOOP(reg, prefix)                                                           \
  "vpbroadcastd %[ones], %%" reg "15\n\t"                                                    \
  "vpxor %%xmm0, %%xmm0, %%xmm0\n\t vpxor %%xmm1, %%xmm1, %%xmm1\n\t"                         \
  "vpxor %%xmm2, %%xmm2, %%xmm2\n\t vpxor %%xmm3, %%xmm3, %%xmm3\n\t"                         \
  "vpxor %%xmm4, %%xmm4, %%xmm4\n\t vpxor %%xmm5, %%xmm5, %%xmm5\n\t"                         \
  "vpxor %%xmm6, %%xmm6, %%xmm6\n\t vpxor %%xmm7, %%xmm7, %%xmm7\n\t"                         \
  "vpxor %%xmm8, %%xmm8, %%xmm8\n\t vpxor %%xmm9, %%xmm9, %%xmm9\n\t"                         \
  "vpxor %%xmm10, %%xmm10, %%xmm10\n\t vpxor %%xmm11, %%xmm11, %%xmm11\n\t"                   \
  "vpxor %%xmm12, %%xmm12, %%xmm12\n\t vpxor %%xmm13, %%xmm13, %%xmm13\n\t"                   \
  "vpxor %%xmm14, %%xmm14, %%xmm14\n\t"                                                     \
  "1:\n\t"                                                                                 \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "0\n\t"                                  \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "1\n\t"                                  \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "2\n\t"                                  \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "3\n\t"                                  \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "4\n\t"                                  \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "5\n\t"                                  \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "6\n\t"                                  \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "7\n\t"                                  \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "8\n\t"                                  \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "9\n\t"                                  \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "10\n\t"                                 \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "11\n\t"                                 \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "12\n\t"                                 \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "13\n\t"                                 \
  prefix "vpdpbusd %%" reg "15, %%" reg "15, %%" reg "14\n\t"                                 \
  "dec %[n]\n\t"                                                                            \
  "jnz 1b\n\t"                                                                              \
  "vpaddd %%" reg "1, %%" reg "0, %%" reg "0\n\t vpaddd %%" reg "2, %%" reg "0, %%" reg "0\n\t"   \
  "vpaddd %%" reg "3, %%" reg "0, %%" reg "0\n\t vpaddd %%" reg "4, %%" reg "0, %%" reg "0\n\t"   \
  "vpaddd %%" reg "5, %%" reg "0, %%" reg "0\n\t vpaddd %%" reg "6, %%" reg "0, %%" reg "0\n\t"   \
  "vpaddd %%" reg "7, %%" reg "0, %%" reg "0\n\t vpaddd %%" reg "8, %%" reg "0, %%" reg "0\n\t"   \
  "vpaddd %%" reg "9, %%" reg "0, %%" reg "0\n\t vpaddd %%" reg "10, %%" reg "0, %%" reg "0\n\t"  \
  "vpaddd %%" reg "11, %%" reg "0, %%" reg "0\n\t vpaddd %%" reg "12, %%" reg "0, %%" reg "0\n\t" \
  "vpaddd %%" reg "13, %%" reg "0, %%" reg "0\n\t vpaddd %%" reg "14, %%" reg "0, %%" reg "0\n\t" \
  "vmovd %%xmm0, %[lane0]\n\t"                                                              \
  "vzeroupper\n\t"

#define RNNC_VNNI_CLOBBERS                                                                    \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", \
      "xmm12", "xmm13", "xmm14", "xmm15", "cc"

int32_t vnni_zmm(int64_t iterations) {
  int32_t lane0 = 0;
  asm volatile(RNNC_VNNI_LOOP("zmm", "")
               : [n] "+r"(iterations), [lane0] "=r"(lane0)
               : [ones] "m"(kOneBytes)
               : RNNC_VNNI_CLOBBERS);
  return lane0;
}

int32_t vnni_ymm_vex(int64_t iterations) {
  int32_t lane0 = 0;
  asm volatile(RNNC_VNNI_LOOP("ymm", "%{vex%} ")
               : [n] "+r"(iterations), [lane0] "=r"(lane0)
               : [ones] "m"(kOneBytes)
               : RNNC_VNNI_CLOBBERS);
  return lane0;
}

#undef RNNC_VNNI_LOOP
#undef RNNC_VNNI_CLOBBERS

StreamBandwidth measure_stream(StreamKernel& kernel, const WorkingSet& set, int lanes,
                               const BoundsConfig& config) {
  const int64_t count = set.bytes / sizeof(float);
  const int64_t block = int64_t{lanes} * kAccumulators;
  if (count % block != 0)
    throw std::runtime_error("machine bounds: working set " + size_name(set.bytes) +
                             " is not a multiple of " + std::to_string(block * 4) + " bytes");
  Halide::Buffer<float> data(static_cast<int>(count));
  float* values = data.data();
  double pass_sum = 0;
  for (int64_t i = 0; i < count; ++i) {
    values[i] = static_cast<float>(1 + i % kMaxStreamValue);
    pass_sum += values[i];
  }
  auto call = [&](int64_t passes) {
    const double total = kernel.run(data, passes);
    if (total != pass_sum * passes)
      throw std::runtime_error(format("machine bounds: stream kernel summed %.17g, expected %.17g",
                                      total, pass_sum * passes));
  };
  // Per pass, each accumulator lane adds count / block values of at most kMaxStreamValue.
  const int64_t max_passes =
      std::max<int64_t>(1, kExactFloatLimit / (count / block) / kMaxStreamValue);
  StreamBandwidth result;
  result.bytes = set.bytes;
  result.level = set.level;
  result.passes_per_call = calibrate(call, config.seconds_per_call, max_passes);
  std::vector<double> gbps;
  for (int i = 0; i < config.repetitions; ++i) {
    const double t = time_call([&] { call(result.passes_per_call); });
    gbps.push_back(static_cast<double>(set.bytes) * result.passes_per_call / t / 1e9);
  }
  result.gbps = rate_stats(gbps);
  return result;
}

}  // namespace

BoundsConfig default_bounds_config() {
  BoundsConfig config;
  config.working_sets.assign(std::begin(kStreamWorkingSets), std::end(kStreamWorkingSets));
  return config;
}

BoundsConfig quick_bounds_config() {
  BoundsConfig config;
  config.working_sets.assign(std::begin(kQuickWorkingSets), std::end(kQuickWorkingSets));
  config.repetitions = 3;
  config.seconds_per_call = 0.001;
  return config;
}

MachineBounds measure_machine_bounds(const BoundsConfig& config,
                                     const std::function<void(const std::string&)>& progress) {
  // The bound kernels are float only and run through Halide's JIT, which picks LLVM's CPU from
  // Halide's flags: without the VNNI flag (which names the sapphirerapids CPU) it names one whose
  // features this host has.
  const Halide::Target target =
      resolve_kernel_target("host").halide.without_feature(Halide::Target::AVX512_SapphireRapids);
  MachineBounds bounds;
  bounds.target = target.to_string();
  bounds.vector_lanes = target.natural_vector_size<float>();
  bounds.repetitions = config.repetitions;
  const int lanes = bounds.vector_lanes;
  progress("bounds: JIT-compiling the kernels for " + bounds.target + " (" + std::to_string(lanes) +
           " float lanes, " + std::to_string(kAccumulators) + " accumulators)");
  StreamKernel stream(target, lanes);
  FmaKernel fma(target, lanes);

  for (const WorkingSet& set : config.working_sets) {
    bounds.stream.push_back(measure_stream(stream, set, lanes, config));
    const StreamBandwidth& m = bounds.stream.back();
    progress("bounds: stream read " + size_name(m.bytes) + " (" + m.level + "): " +
             format("median %.1f GB/s, best %.1f, worst %.1f (%lld passes per call)", m.gbps.median,
                    m.gbps.best, m.gbps.worst, static_cast<long long>(m.passes_per_call)));
  }

  auto fma_call = [&](int64_t iterations) {
    const Halide::Buffer<float> chains = fma.run(iterations);
    for (int acc = 0; acc < kAccumulators; ++acc) {
      for (int lane = 0; lane < lanes; ++lane) {
        const double expected = acc * lanes + lane + static_cast<double>(iterations);
        if (chains(lane, acc) != expected)
          throw std::runtime_error(
              format("machine bounds: FMA chain (%d, %d) ended at %.9g, expected %.9g", lane, acc,
                     chains(lane, acc), expected));
      }
    }
  };
  const int64_t max_iterations = kExactFloatLimit - int64_t{lanes} * kAccumulators;
  bounds.fma_per_call = calibrate(fma_call, config.seconds_per_call, max_iterations);
  const double flops_per_call = 2.0 * lanes * kAccumulators * bounds.fma_per_call;
  std::vector<double> gflops;
  for (int i = 0; i < config.repetitions; ++i) {
    const double t = time_call([&] { fma_call(bounds.fma_per_call); });
    gflops.push_back(flops_per_call / t / 1e9);
  }
  bounds.fma_gflops = rate_stats(gflops);
  progress("bounds: float32 FMA: " +
           format("median %.1f GFLOP/s, best %.1f, worst %.1f (%lld FMAs per chain per call)",
                  bounds.fma_gflops.median, bounds.fma_gflops.best, bounds.fma_gflops.worst,
                  static_cast<long long>(bounds.fma_per_call)));

  // int8 dot products, with the widest VNNI form this CPU has.
  const CpuFeatureSet& features = host_cpu().features;
  int32_t (*vnni)(int64_t) = nullptr;
  int vnni_lanes = 0;
  if (features.has(CpuFeature::kAvx512vnni)) {
    vnni = vnni_zmm;
    vnni_lanes = 16;
    bounds.vnni_instruction = "vpdpbusd zmm";
  } else if (features.has(CpuFeature::kAvxvnni)) {
    vnni = vnni_ymm_vex;
    vnni_lanes = 8;
    bounds.vnni_instruction = "vpdpbusd ymm (VEX)";
  }
  if (!vnni) {
    progress("bounds: int8 dot products: not measured (no AVX512-VNNI or AVX-VNNI)");
    return bounds;
  }
  auto vnni_call = [&](int64_t iterations) {
    const int32_t lane0 = vnni(iterations);
    const int64_t expected = int64_t{4} * kVnniAccumulators * iterations;
    if (lane0 != expected)
      throw std::runtime_error(format("machine bounds: vpdpbusd accumulators summed %d, expected %lld",
                                      lane0, static_cast<long long>(expected)));
  };
  // The sum stays an exact int32: 60 * iterations < 2^31.
  bounds.vnni_per_call = calibrate(vnni_call, config.seconds_per_call, int64_t{1} << 25);
  const double ops_per_call =
      2.0 * 4 * vnni_lanes * kVnniAccumulators * static_cast<double>(bounds.vnni_per_call);
  std::vector<double> gops;
  for (int i = 0; i < config.repetitions; ++i) {
    const double t = time_call([&] { vnni_call(bounds.vnni_per_call); });
    gops.push_back(ops_per_call / t / 1e9);
  }
  bounds.vnni_gops = rate_stats(gops);
  progress("bounds: int8 dot products (" + bounds.vnni_instruction + "): " +
           format("median %.1f GOP/s, best %.1f, worst %.1f (%lld per accumulator per call)",
                  bounds.vnni_gops.median, bounds.vnni_gops.best, bounds.vnni_gops.worst,
                  static_cast<long long>(bounds.vnni_per_call)));
  return bounds;
}

}  // namespace rnnc::bench
