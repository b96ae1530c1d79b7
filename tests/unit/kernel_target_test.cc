// Kernel targets (lowering/kernel_target.h): host feature detection against the kernel's own view
// (/proc/cpuinfo), the named levels, and a static check of the object code of every kernel kind
// compiled for CPUs this host may not be: an AMD Zen 4 (no AVX512-FP16, AMX or AVX-VNNI), an
// AVX2-only x86-64 (no EVEX encodings, zmm or mask registers), an x86-64-v2 (no VEX encodings)
// and the SSE2 baseline. The check is a disassembly scan (tests/support/isa_check.h), so it guards
// the host kind a run is not on; where the host can run a level, its kernels also run against the
// reference evaluator.
#include "lowering/kernel_target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "compiler/compile.h"
#include "ir/error.h"
#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "lowering/program.h"
#include "lowering/recurrent_pipelines.h"
#include "quant/quantize_model.h"
#include "tests/support/compare.h"
#include "tests/support/disassembly.h"
#include "tests/support/isa_check.h"
#include "tests/support/random.h"
#include "tests/support/scoped_env.h"

namespace rnnc {
namespace {

namespace fs = std::filesystem;
using F = CpuFeature;

// ---- detection ---------------------------------------------------------------------------------

// The kernel's names for the features (/proc/cpuinfo flags), where they differ from LLVM's.
std::string cpuinfo_flag(CpuFeature feature) {
  static const std::map<CpuFeature, std::string> renamed = {
      {F::kSse3, "pni"},
      {F::kSse41, "sse4_1"},
      {F::kSse42, "sse4_2"},
      {F::kBmi, "bmi1"},
      {F::kLzcnt, "abm"},
      {F::kAvx512vbmi2, "avx512_vbmi2"},
      {F::kAvx512vnni, "avx512_vnni"},
      {F::kAvx512bitalg, "avx512_bitalg"},
      {F::kAvx512vpopcntdq, "avx512_vpopcntdq"},
      {F::kAvx512bf16, "avx512_bf16"},
      {F::kAvx512fp16, "avx512_fp16"},
      {F::kAvx512vp2intersect, "avx512_vp2intersect"},
      {F::kAvxvnni, "avx_vnni"},
  };
  auto it = renamed.find(feature);
  return it != renamed.end() ? it->second : cpu_feature_name(feature);
}

std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string word; words >> word;) flags.insert(word);
    return flags;
  }
  return {};
}

TEST(KernelTarget, HostFeaturesAgreeWithTheKernelsView) {
  const std::set<std::string> flags = cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  const HostCpu& cpu = host_cpu();
  EXPECT_FALSE(cpu.model_name.empty());
  for (int i = 0; i < static_cast<int>(CpuFeature::kCount); ++i) {
    const auto feature = static_cast<CpuFeature>(i);
    if (feature == F::kAmxTile || feature == F::kAmxInt8 || feature == F::kAmxBf16) {
      EXPECT_FALSE(cpu.features.has(feature)) << "AMX is never used, so never reported";
      continue;
    }
    // Linux names LZCNT "abm" and leaves it out on the AMD EPYC KVM hosts here while CPUID
    // reports it (and the instruction runs): cpuinfo is no reference for it.
    if (feature == F::kLzcnt) continue;
    EXPECT_EQ(cpu.features.has(feature), flags.count(cpuinfo_flag(feature)) > 0)
        << cpu_feature_name(feature) << " (/proc/cpuinfo flag " << cpuinfo_flag(feature) << ")";
  }
  EXPECT_GT(cpu.l2_bytes_per_core, 0);
}

TEST(KernelTarget, HostTargetRunsHereAndRicherOnesAreRefusedByName) {
  EXPECT_NO_THROW(check_host_runs(resolve_kernel_target("host")));
  EXPECT_NO_THROW(check_host_runs(resolve_kernel_target("x86-64-v3")));
  const KernelTarget spr = resolve_kernel_target("sapphirerapids");
  const std::vector<CpuFeature> missing = host_cpu().features.missing(spr.features);
  if (missing.empty()) GTEST_SKIP() << "this host has every Sapphire Rapids feature";
  try {
    check_host_runs(spr);
    ADD_FAILURE() << "accepted a target this CPU cannot run";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_THAT(e.what(), ::testing::HasSubstr(cat("target sapphirerapids uses ",
                                                   cpu_feature_name(missing.front()),
                                                   ", which this CPU (")));
  }
}

// The two per-family properties of the schedule class: Zen 4 (AMD family 19h with AVX-512)
// splits 512-bit operations into halves; Zen 5 (family 1Ah with AVX-512) divides on a unit beside
// its multiply pipes; Zen 3 (family 19h without AVX-512), Zen 5 with AVX-512 off and Intel cores
// do neither.
TEST(KernelTarget, SplitsAndDividerFollowTheCpuFamily) {
  struct Case {
    const char* what;
    const char* vendor;
    int family;
    CpuFeatureSet features;
    bool splits, divider;
  };
  const Case cases[] = {
      {"Zen 4", "AuthenticAMD", 0x19, zen4_features(), true, false},
      {"Zen 3", "AuthenticAMD", 0x19, x86_64_v3_features(), false, false},
      {"Zen 5", "AuthenticAMD", 0x1a, zen4_features(), false, true},
      {"Zen 5, AVX-512 off", "AuthenticAMD", 0x1a, x86_64_v3_features(), false, false},
      {"Sapphire Rapids", "GenuineIntel", 6, sapphire_rapids_features(), false, false},
  };
  for (const Case& c : cases) {
    HostCpu cpu;
    cpu.vendor = c.vendor;
    cpu.family = c.family;
    cpu.features = c.features;
    EXPECT_EQ(splits_512_bit_ops(cpu), c.splits) << c.what;
    EXPECT_EQ(divides_beside_multiplies(cpu), c.divider) << c.what;
  }
  const KernelTarget host = resolve_kernel_target("host");
  EXPECT_EQ(host.splits_512_bit_ops, splits_512_bit_ops(host_cpu()));
  EXPECT_EQ(host.divides_beside_multiplies, divides_beside_multiplies(host_cpu()));
  // Kernels cached for one class are never served to another.
  KernelTarget full = resolve_kernel_target("zen4");
  full.splits_512_bit_ops = false;
  EXPECT_NE(full.key(), resolve_kernel_target("zen4").key());
  KernelTarget divider = resolve_kernel_target("x86-64-v4");
  divider.divides_beside_multiplies = true;
  EXPECT_NE(divider.key(), resolve_kernel_target("x86-64-v4").key());
  EXPECT_EQ(divider.schedule_class(), "avx512, divides beside FMA, L2 1 MiB");
}

TEST(KernelTarget, NamedLevelsHaveExactlyTheirFeatures) {
  const KernelTarget baseline = resolve_kernel_target("x86-64");
  EXPECT_EQ(baseline.features.to_string(), "");
  EXPECT_EQ(baseline.schedule_class(), "sse, L2 1 MiB");
  EXPECT_THAT(baseline.llvm_features(), ::testing::HasSubstr("-sse3,-ssse3,-sse4.1"));

  const KernelTarget v2 = resolve_kernel_target("x86-64-v2");
  EXPECT_TRUE(v2.features.contains({F::kSse3, F::kSsse3, F::kSse41, F::kSse42, F::kPopcnt}));
  EXPECT_FALSE(v2.features.has(F::kAvx));
  EXPECT_TRUE(v2.halide.has_feature(Halide::Target::SSE41));
  EXPECT_FALSE(v2.halide.has_feature(Halide::Target::AVX));

  const KernelTarget v3 = resolve_kernel_target("x86-64-v3");
  EXPECT_TRUE(v3.features.contains(v2.features));
  EXPECT_TRUE(v3.features.contains({F::kAvx2, F::kFma, F::kF16c, F::kBmi2, F::kMovbe}));
  EXPECT_FALSE(v3.features.has(F::kAvx512f));
  EXPECT_FALSE(v3.halide.has_feature(Halide::Target::AVX512));
  EXPECT_EQ(resolve_kernel_target("avx2").key(), v3.key());
  EXPECT_EQ(resolve_kernel_target("x86-64-avx2").key(), v3.key());

  const KernelTarget v4 = resolve_kernel_target("x86-64-v4");
  EXPECT_TRUE(v4.features.contains({F::kAvx512f, F::kAvx512cd, F::kAvx512bw, F::kAvx512dq,
                                    F::kAvx512vl}));
  EXPECT_FALSE(v4.features.has(F::kAvx512vnni));
  EXPECT_TRUE(v4.halide.has_feature(Halide::Target::AVX512_Skylake));
  EXPECT_FALSE(v4.halide.has_feature(Halide::Target::AVX512_SapphireRapids));

  const KernelTarget vnni = resolve_kernel_target("x86-64-v4-vnni");
  EXPECT_TRUE(vnni.features.has(F::kAvx512vnni));
  EXPECT_FALSE(vnni.features.has(F::kAvx512vbmi));  // Cascade Lake has VNNI, not VBMI
  EXPECT_TRUE(vnni.halide.has_feature(Halide::Target::AVX512_SapphireRapids));
  EXPECT_FALSE(vnni.halide.has_feature(Halide::Target::AVX512_Cannonlake));

  // LLVM gets every feature explicitly, off unless the target has it.
  const std::string zen4 = resolve_kernel_target("zen4").llvm_features();
  for (const char* on : {"+avx512vnni", "+avx512bf16", "+avx512vbmi2"}) {
    EXPECT_THAT(zen4, ::testing::HasSubstr(on));
  }
  for (const char* off : {"-avx512fp16", "-avxvnni", "-amx-tile", "-amx-int8"}) {
    EXPECT_THAT(zen4, ::testing::HasSubstr(off));
  }
}

TEST(KernelTarget, UnknownNamesListTheAcceptedOnes) {
  try {
    resolve_kernel_target("x86-64-linux-avx512_sapphirerapids");
    ADD_FAILURE() << "accepted a Halide target string";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()),
              "unknown target 'x86-64-linux-avx512_sapphirerapids' (use host, x86-64, x86-64-v2, "
              "x86-64-v3, x86-64-v4, x86-64-v4-vnni, zen4 or sapphirerapids; avx2 and x86-64-avx2 "
              "mean x86-64-v3)");
  }
}

// RNNC_L2_KIB replaces the L2 of every target, named or the host's, and so its schedule class
// and cache key; 0 leaves each its own; anything but whole KiB is an error naming the variable.
TEST(KernelTarget, L2OverrideReplacesEveryTargetsL2) {
  const testing::ScopedEnv l2("RNNC_L2_KIB", nullptr);
  const KernelTarget vnni_own = resolve_kernel_target("x86-64-v4-vnni");
  const int64_t host_own = host_l2_bytes();
  ASSERT_EQ(resolve_kernel_target("zen4").l2_bytes, int64_t{1} << 20);

  l2.set("2048");
  const KernelTarget vnni = resolve_kernel_target("x86-64-v4-vnni");
  EXPECT_EQ(vnni.l2_bytes, int64_t{2} << 20);
  EXPECT_EQ(vnni.schedule_class(), "avx512, L2 2 MiB");
  EXPECT_NE(vnni.key(), vnni_own.key());
  EXPECT_EQ(resolve_kernel_target("zen4").l2_bytes, int64_t{2} << 20);
  EXPECT_EQ(resolve_kernel_target("host").l2_bytes, int64_t{2} << 20);
  EXPECT_EQ(host_l2_bytes(), int64_t{2} << 20);

  l2.set("0");
  EXPECT_EQ(resolve_kernel_target("zen4").l2_bytes, int64_t{1} << 20);
  EXPECT_EQ(host_l2_bytes(), host_own);

  l2.set("2MB");
  try {
    resolve_kernel_target("x86-64-v4-vnni");
    ADD_FAILURE() << "accepted RNNC_L2_KIB=2MB";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("RNNC_L2_KIB = '2MB': must be a whole number of KiB"));
  }
}

// ---- the instruction scan ----------------------------------------------------------------------

// The features the violations name, in listing order.
std::vector<std::string> features_of(const std::vector<testing::IsaViolation>& violations) {
  std::vector<std::string> out;
  for (const auto& v : violations) out.push_back(v.feature);
  return out;
}

TEST(IsaCheck, ClassifiesInstructionsByTheFeatureTheyNeed) {
  // objdump -d lines: address, bytes, instruction.
  const std::string listing =
      "   0:\t62 f1 7c 48 28 07    \tvmovaps (%rdi),%zmm0\n"
      "   6:\tc5 fc 28 07          \tvmovaps (%rdi),%ymm0\n"
      "   a:\t62 f5 76 08 10 c0    \tvmovsh %xmm0,%xmm1,%xmm0\n"
      "  10:\tc4 e2 75 50 c2       \t{vex} vpdpbusd %ymm2,%ymm1,%ymm0\n"
      "  15:\t62 f2 75 48 50 c2    \tvpdpbusd %zmm2,%zmm1,%zmm0\n"
      "  1b:\tc4 e2 79 13 c0       \tvcvtph2ps %xmm0,%xmm0\n"
      "  20:\tc4 e2 78 49 00       \tldtilecfg (%rax)\n"
      "  25:\t62 f2 7d 48 8d c1    \tvpermb %zmm1,%zmm0,%zmm0\n";
  EXPECT_EQ(features_of(testing::isa_violations(listing, x86_64_v3_features().to_string())),
            (std::vector<std::string>{"avx512f", "avx512fp16", "avxvnni", "avx512vnni",
                                      "amx-tile", "avx512vbmi"}));
  EXPECT_EQ(features_of(testing::isa_violations(listing, zen4_features().to_string())),
            (std::vector<std::string>{"avx512fp16", "avxvnni", "amx-tile"}));
  EXPECT_EQ(features_of(testing::isa_violations(listing, sapphire_rapids_features().to_string())),
            (std::vector<std::string>{"amx-tile"}));
}

TEST(IsaCheck, ClassifiesSseAndVexInstructionsForTheOlderLevels) {
  const std::string listing =
      "   0:\t0f 58 c1             \taddps %xmm1,%xmm0\n"
      "   3:\tf2 0f 7c c1          \thaddps %xmm1,%xmm0\n"
      "   7:\t66 0f 38 00 c1       \tpshufb %xmm1,%xmm0\n"
      "   c:\t66 0f 38 40 c1       \tpmulld %xmm1,%xmm0\n"
      "  11:\tf3 0f b8 c0          \tpopcnt %eax,%eax\n"
      "  15:\tc5 f0 58 c2          \tvaddps %xmm2,%xmm1,%xmm0\n"
      "  19:\tc4 e3 7d 04 c0 01    \tvpermilps $0x1,%ymm0,%ymm0\n"
      "  1f:\tc4 e3 7d 06 c1 20    \tvperm2f128 $0x20,%ymm1,%ymm0,%ymm0\n"
      "  25:\tc5 fd fe c1          \tvpaddd %ymm1,%ymm0,%ymm0\n"
      "  29:\tc4 e2 75 b8 c2       \tvfmadd231ps %ymm2,%ymm1,%ymm0\n"
      "  2e:\tc4 e2 f9 f7 c0       \tshlx %rax,%rax,%rax\n";
  EXPECT_EQ(features_of(testing::isa_violations(listing, CpuFeatureSet{}.to_string())),
            (std::vector<std::string>{"sse3", "ssse3", "sse4.1", "popcnt", "avx", "avx", "avx",
                                      "avx2", "fma", "bmi2"}));
  EXPECT_EQ(features_of(testing::isa_violations(listing, x86_64_v2_features().to_string())),
            (std::vector<std::string>{"avx", "avx", "avx", "avx2", "fma", "bmi2"}));
  EXPECT_TRUE(testing::isa_violations(listing, x86_64_v3_features().to_string()).empty());
}

// Every shared object in a kernel cache (the kernels and the Halide runtime), scanned against
// the target's features; returns the listings, for checks that the code uses what it should.
std::string scan_cache(const std::string& dir, const KernelTarget& target) {
  std::string all;
  int objects = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".so") continue;
    ++objects;
    const std::string listing = testing::disassemble(entry.path().string());
    const auto violations = testing::isa_violations(listing, target.features.to_string());
    EXPECT_TRUE(violations.empty())
        << entry.path().filename() << " (target " << target.name << ") needs "
        << violations.front().feature << ": " << violations.front().line << " (and "
        << violations.size() - 1 << " more)";
    all += listing;
  }
  EXPECT_GT(objects, 10) << "too few kernels compiled for target " << target.name;
  return all;
}

// A model and its weights (graph inputs made constants), and a quantization config ("" = float).
struct KernelCase {
  const char* text;
  std::map<std::string, std::vector<int64_t>> weights;
  std::map<std::string, std::vector<int64_t>> calibration;  // inputs, for static activations
  std::string config;
};

// An STFT written as a Conv of 16-sample frames, hop 4: its weights the windowed DFT basis
// (lower_dft_conv.h), so the Conv runs as two short DFTs.
std::string dft_conv_case() {
  const int n = 16, bins = n / 2 + 1;
  std::string values;
  for (int part = 0; part < 2; ++part) {
    for (int m = 0; m < bins; ++m) {
      for (int k = 0; k < n; ++k) {
        const double window = 0.5 - 0.5 * std::cos(2 * M_PI * k / n);
        const double phase = 2 * M_PI * ((m * k) % n) / n;
        const double value = part == 0 ? window * std::cos(phase) : -window * std::sin(phase);
        char text[32];
        std::snprintf(text, sizeof text, "%.9g", value);
        values += cat(values.empty() ? "" : ", ", text);
      }
    }
  }
  return cat("model opset=17\ngraph main(%x: f32[1, 1, samples]) {\n  const %w: f32[", 2 * bins,
             ", 1, ", n, "] = {", values, "}\n  %y = Conv 'stft_conv' (%x, %w) {strides=[4]}\n",
             "  return %y\n}");
}

// One model per kernel kind: GEMM with epilogue, conv, a DFT-basis conv, ConvTranspose (channels
// and positions vectorized, strided and not), CumSum (float and integer scans), STFT and DFT
// (GEMMs against their transform matrices), Resize (linear, cubic, nearest), elementwise,
// reductions and softmax,
// recurrent float (LSTM with weights streamed from beyond L2, GRU, RNN), int8, wide (16-bit
// activations, 12-bit weights) and static 16-bit with asymmetric weights.
std::vector<KernelCase> kernel_cases() {
  static const std::string dft_conv = dft_conv_case();
  const char* dense = R"(model opset=17
graph main(%x: f32[seq, 40], %w: f32[40, 56], %bias: f32[56]) {
  %m = MatMul 'project' (%x, %w)
  %b = Add 'add_bias' (%m, %bias)
  %y = Relu 'relu' (%b)
  return %y
})";
  const char* lstm = R"(model opset=17
graph main(%x: f32[seq, batch, 40], %W: f32[1, 256, 40], %R: f32[1, 256, 64], %B: f32[1, 512]) {
  %Y, %Y_h, %Y_c = LSTM 'lstm' (%x, %W, %R, %B) {hidden_size=64}
  return %Y
})";
  const char* gru = R"(model opset=17
graph main(%x: f32[seq, batch, 24], %W: f32[2, 96, 24], %R: f32[2, 96, 32]) {
  %Y, %Y_h = GRU 'gru' (%x, %W, %R) {direction="bidirectional", hidden_size=32}
  return %Y
})";
  const char* rnn = R"(model opset=17
graph main(%x: f32[seq, batch, 7], %W: f32[1, 33, 7], %R: f32[1, 33, 33]) {
  %Y, %Y_h = RNN 'rnn' (%x, %W, %R) {direction="reverse", hidden_size=33}
  return %Y
})";
  return {
      {dense, {{"w", {40, 56}}, {"bias", {56}}}, {}, ""},
      {dense, {{"w", {40, 56}}, {"bias", {56}}}, {}, "{}"},
      {R"(model opset=17
graph main(%x: f32[1, 1, len], %w: f32[16, 1, 5], %b: f32[16]) {
  %c = Conv 'conv' (%x, %w, %b) {kernel_shape=[5], pads=[2, 2]}
  %y = Relu 'relu' (%c)
  return %y
})",
       {{"w", {16, 1, 5}}, {"b", {16}}},
       {},
       ""},
      {R"(model opset=17
graph main(%x: f32[1, 8, len], %w: f32[8, 20, 4], %b: f32[20], %w1: f32[20, 1, 3],
           %k: i64[rows, 24]) {
  const %axis: i64[] = {1}
  %c = ConvTranspose 'upsample' (%x, %w, %b) {strides=[2], pads=[1, 1]}
  %r = Relu 'relu' (%c)
  %m = ConvTranspose 'mask' (%r, %w1) {pads=[1, 1]}
  %s = Sigmoid 'sigmoid' (%m)
  %t = CumSum 'cumsum' (%s, %axis)
  %n = CumSum 'counts' (%k, %axis) {exclusive=1, reverse=1}
  return %t, %n
})",
       {{"w", {8, 20, 4}}, {"b", {20}}, {"w1", {20, 1, 3}}},
       {},
       ""},
      {R"(model opset=17
graph main(%signal: f32[1, samples, 1], %window: f32[64], %x: f32[rows, 20, 1]) {
  const %step: i64[] = {16}
  const %n: i64[] = {33}
  %s = STFT 'stft' (%signal, %step, %window)
  %d = DFT 'dft' (%x, %n) {onesided=1}
  return %s, %d
})",
       {{"window", {64}}},
       {},
       ""},
      {R"(model opset=13
graph main(%x: f32[batch, 4, 37], %s: i64[1, 2, 3, 5]) {
  const %scales: f32[3] = {1.0, 1.0, 4.0}
  const %scales2: f32[4] = {1.0, 1.0, 2.0, 2.0}
  %up = Resize 'linear' (%x, _, %scales) {mode="linear"}
  %grid = Resize 'nearest' (%s, _, %scales2) {mode="nearest"}
  %smooth = Resize 'cubic' (%x, _, %scales) {mode="cubic"}
  return %up, %grid, %smooth
})",
       {},
       {},
       ""},
      {R"(model opset=17
graph main(%x: f32[rows, 48]) {
  %s = Sigmoid 's' (%x)
  %t = Tanh 't' (%x)
  %p = Mul 'p' (%s, %t)
  %m = ReduceMean 'mean' (%p) {axes=[1], keepdims=1}
  %d = Sub 'centre' (%p, %m)
  %y = Softmax 'softmax' (%d) {axis=-1}
  return %y
})",
       {},
       {},
       ""},
      {dft_conv.c_str(), {}, {}, ""},
      {lstm, {{"W", {1, 256, 40}}, {"R", {1, 256, 64}}, {"B", {1, 512}}}, {}, ""},
      {lstm, {{"W", {1, 256, 40}}, {"R", {1, 256, 64}}, {"B", {1, 512}}}, {}, "{}"},
      {lstm,
       {{"W", {1, 256, 40}}, {"R", {1, 256, 64}}, {"B", {1, 512}}},
       {},
       R"({"default": {"weights": {"bits": 16}, "activations": {"bits": 16, "symmetric": true}}})"},
      {lstm,
       {{"W", {1, 256, 40}}, {"R", {1, 256, 64}}, {"B", {1, 512}}},
       {},
       R"({"default": {"weights": {"bits": 12}}})"},
      {R"(model opset=17
graph main(%x: f32[seq, batch, 600], %W: f32[1, 1792, 600], %R: f32[1, 1792, 448]) {
  %Y, %Y_h, %Y_c = LSTM 'wide_lstm' (%x, %W, %R) {hidden_size=448}
  return %Y
})",
       {{"W", {1, 1792, 600}}, {"R", {1, 1792, 448}}},
       {},
       ""},
      {gru, {{"W", {2, 96, 24}}, {"R", {2, 96, 32}}}, {}, ""},
      {gru, {{"W", {2, 96, 24}}, {"R", {2, 96, 32}}}, {}, "{}"},
      {rnn, {{"W", {1, 33, 7}}, {"R", {1, 33, 33}}}, {}, ""},
      {rnn,
       {{"W", {1, 33, 7}}, {"R", {1, 33, 33}}},
       {{"x", {5, 2, 7}}},
       R"({"default": {"weights": {"symmetric": false},
                       "activations": {"bits": 16, "symmetric": true, "dynamic": false}}})"},
  };
}

std::unique_ptr<Model> case_model(const KernelCase& c) {
  auto model = parse_model_text(c.text, "kernel case");
  uint64_t seed = 1;
  for (const auto& [name, shape] : c.weights) {
    model->graph->convert_input_to_constant(model->graph->find_value(name),
                                            testing::random_tensor(shape, static_cast<unsigned>(seed++), -0.5f, 0.5f));
  }
  infer_graph(*model->graph);
  if (!c.config.empty()) {
    std::vector<quant::Sample> samples;
    if (!c.calibration.empty()) {
      quant::Sample sample;
      for (const auto& [name, shape] : c.calibration) {
        sample[name] = testing::random_tensor(shape, static_cast<unsigned>(seed++), -1, 1);
      }
      samples.push_back(sample);
    }
    quant::quantize_model(*model, quant::parse_config(c.config, "kernel case"), samples);
  }
  return model;
}

// Seeded random inputs for a case's graph, its symbolic dims bound to small sizes.
std::map<std::string, Tensor> case_inputs(const Graph& graph) {
  static const std::map<std::string, int64_t> dims = {
      {"seq", 5}, {"batch", 3}, {"len", 37}, {"rows", 4}, {"samples", 200}};
  std::mt19937 rng(11);
  std::map<std::string, Tensor> inputs;
  for (const Value* input : graph.inputs()) {
    std::vector<int64_t> shape;
    for (const Dim& dim : *input->type.shape) shape.push_back(dim.evaluate(dims).value());
    inputs[input->name()] = is_floating(input->type.dtype)
                                ? testing::random_tensor(shape, rng)
                                : testing::random_tensor(input->type.dtype, shape, rng);
  }
  return inputs;
}

// Compiles every kernel kind for `target` into a fresh cache and scans it. Where this CPU has the
// target's features, each case also runs and is compared with the reference evaluator on the
// same model. Float cases: rtol 1e-4, atol 1e-5, as tests/unit/program_test.cc (float32 sums in
// another order and the kernels' activation fits differ by ~1e-6). Quantized cases: rtol and atol
// 1e-3, because on these random inputs a few h values land on the other side of a quantization
// boundary from the reference's (one code of an 8-bit h, ~1/127, times a weight; 1.7e-4 in the
// int8 GRU case, the same on every level). The tight integer checks are LowerRecurrentQuant.* at
// the host and x86-64-v3 levels; what this adds is each level's code generation, which, wrong,
// is off by the size of the values.
std::string compile_and_scan(const std::string& target_name) {
  const KernelTarget target = resolve_kernel_target(target_name);
  const bool runs_here = host_cpu().features.missing(target.features).empty();
  const fs::path dir = fs::temp_directory_path() / cat("rnnc_kernel_isa_", target_name, "_", ::getpid());
  fs::remove_all(dir);
  int case_index = 0;
  for (const KernelCase& c : kernel_cases()) {
    SCOPED_TRACE(cat("target ", target_name, ", kernel case ", case_index++));
    ProgramOptions options;
    options.cache_dir = dir.string();
    options.target = target_name;
    std::unique_ptr<Program> program = compile_program(case_model(c), options);
    // Every node of every case runs in a kernel (a reference block would escape the scan).
    EXPECT_THAT(program->describe(), ::testing::Not(::testing::HasSubstr(": reference ")));
    if (!runs_here) continue;
    const std::unique_ptr<Model> reference_model = case_model(c);
    const std::map<std::string, Tensor> inputs = case_inputs(*reference_model->graph);
    const std::vector<Tensor> expected = evaluate(*reference_model->graph, inputs);
    const std::vector<Tensor> actual = program->run(inputs);
    EXPECT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
      const testing::Comparison result = testing::compare_tensors(
          actual[i], expected[i],
          c.config.empty() ? testing::Tolerance{1e-4, 1e-5} : testing::Tolerance{1e-3, 1e-3});
      EXPECT_TRUE(result.ok) << "output " << i << ": " << result.message;
    }
  }
  std::string listings = scan_cache(dir.string(), target);
  fs::remove_all(dir);
  return listings;
}

TEST(KernelIsa, EveryKernelKindForZen4UsesOnlyZen4Features) {
  const std::string listings = compile_and_scan("zen4");
  // Still the fast paths: VNNI dot products and 512-bit registers.
  EXPECT_NE(listings.find("vpdpbusd"), std::string::npos);
  EXPECT_NE(listings.find("vpdpwssd"), std::string::npos);
  EXPECT_NE(listings.find("%zmm"), std::string::npos);
}

TEST(KernelIsa, EveryKernelKindForAvx2UsesOnlyAvx2Features) {
  const std::string listings = compile_and_scan("x86-64-v3");
  EXPECT_NE(listings.find("vfmadd"), std::string::npos);
  EXPECT_NE(listings.find("%ymm"), std::string::npos);
}

// Integer products are exact however a lane sums them: the int8 cases (GEMM, LSTM, GRU) compiled
// for AVX2, whose integer kernels (recurrent and GEMM) sum u8 x s8 products in pairs
// (u8_products_per_lane), give the VNNI kernels' (four per lane) results bit for bit. Needs a host
// with AVX512-VNNI.
TEST(KernelIsa, IntegerProductsInPairsEqualVnniDotProductsBitwise) {
  if (!host_cpu().features.has(F::kAvx512vnni)) GTEST_SKIP() << "host has no AVX512-VNNI";
  const fs::path dir = fs::temp_directory_path() / cat("rnnc_kernel_pairs_", ::getpid());
  int compared = 0;
  for (const KernelCase& c : kernel_cases()) {
    if (c.config != "{}") continue;
    std::vector<std::vector<Tensor>> results;
    for (const char* target : {"x86-64-v3", "x86-64-v4-vnni"}) {
      ProgramOptions options;
      options.cache_dir = (dir / target).string();
      options.target = target;
      std::unique_ptr<Model> model = case_model(c);
      const std::map<std::string, Tensor> inputs = case_inputs(*model->graph);
      results.push_back(compile_program(std::move(model), options)->run(inputs));
    }
    ASSERT_EQ(results[0].size(), results[1].size());
    for (size_t i = 0; i < results[0].size(); ++i) {
      EXPECT_TRUE(results[0][i].bitwise_equal(results[1][i]))
          << "case " << compared << " output " << i;
    }
    ++compared;
  }
  fs::remove_all(dir);
  EXPECT_EQ(compared, 3);
}

// The older levels: x86-64-v2 (SSE4.2, no VEX encodings at all) and the baseline every x86-64
// CPU has (SSE2; a virtual CPU such as QEMU's qemu64 shows little more). Both run here, so every
// kernel kind is also checked against the reference at each.
TEST(KernelIsa, EveryKernelKindForX86_64V2UsesOnlySse42) {
  const std::string listings = compile_and_scan("x86-64-v2");
  EXPECT_NE(listings.find("mulps"), std::string::npos);
  EXPECT_NE(listings.find("pmaddwd"), std::string::npos);  // the int8 products, in 16-bit pairs
  EXPECT_EQ(listings.find("%ymm"), std::string::npos);
}

TEST(KernelIsa, EveryKernelKindForBaselineX86_64UsesOnlySse2) {
  const std::string listings = compile_and_scan("x86-64");
  // The scan has ruled out SSE4.1's pmulld and the rest; the int8 products are still pmaddwd.
  EXPECT_NE(listings.find("mulps"), std::string::npos);
  EXPECT_NE(listings.find("pmaddwd"), std::string::npos);
}

// The scan catches the failure it exists for: with Halide's own CPU choice (sapphirerapids for
// the VNNI flag), the 16-bit-activation RNN kernels of the case above hold AVX512-FP16 code
// (vmovsh), which stopped an AMD Zen 4 with SIGILL; the explicit feature list holds none.
TEST(KernelIsa, HalidesSapphireRapidsCpuChoiceIsCaught) {
  RecurrentCell cell;
  cell.op = RecurrentOp::kRnn;
  cell.hidden_size = 33;
  cell.input_size = 7;
  cell.gates = {0};
  cell.activations = {{RecurrentActivation::Kind::kTanh}};
  ActivationQuant activations;
  activations.bits = 16;
  activations.symmetric = true;
  activations.dynamic = false;
  activations.input_scale = 3.0f / 32767;
  activations.state_scale = 1.0f / 32767;
  cell.quant = recurrent_quant(activations, 7, 33, 8, true, 8, true, 4);

  KernelTarget old_choice = resolve_kernel_target("zen4");
  old_choice.halide_cpu = true;
  const KernelTarget zen4 = resolve_kernel_target("zen4");
  std::set<std::string> old_features, new_features;
  for (bool batched : {false, true}) {
    const RecurrentSchedule schedule = choose_recurrent_schedule(cell, zen4, batched);
    for (bool projection : {false, true}) {
      for (const KernelTarget* target : std::vector<const KernelTarget*>{&old_choice, &zen4}) {
        const std::string object = cat(::testing::TempDir(), "rnnc_isa_", ::getpid(), "_",
                                       batched, projection, target == &zen4, ".o");
        if (projection) {
          compile_input_projection(cell, schedule, object, "projection", *target);
        } else {
          compile_recurrent_step(cell, schedule, object, "step", *target);
        }
        for (const auto& v :
             testing::isa_violations(testing::disassemble(object), zen4.features.to_string())) {
          (target == &zen4 ? new_features : old_features).insert(v.feature);
        }
        fs::remove(object);
      }
    }
  }
  EXPECT_TRUE(old_features.count("avx512fp16")) << "the old CPU choice emitted no AVX512-FP16";
  EXPECT_TRUE(new_features.empty()) << *new_features.begin();
}

}  // namespace
}  // namespace rnnc
