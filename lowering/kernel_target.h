// What the compiled kernels may use: the x86-64 instruction-set features of a CPU, and the
// target that hands exactly those features to Halide and LLVM.
//
// Halide 14 reaches AVX-512 VNNI (`vpdpbusd`) only through its avx512_sapphirerapids feature,
// which also makes it ask LLVM for the `sapphirerapids` CPU: LLVM may then emit AVX512-FP16 or
// AMX instructions that an AMD Zen 4 (VNNI, no FP16, no AMX) cannot run. So rnnc keeps Halide's
// feature flags only to steer Halide's own instruction selection, and compiles every kernel (and
// the Halide runtime) for LLVM's baseline `x86-64` CPU plus an explicit feature list: each
// feature rnnc knows is either on (the target has it) or off, never implied by a CPU name.
//
// Where the features come from:
//   host            CPUID, with XGETBV for the register state the OS enables (AVX, AVX-512);
//   x86-64          SSE2 only: every x86-64 CPU, and virtual CPUs that show no more (qemu64);
//   x86-64-v2       SSE3, SSSE3, SSE4.1/4.2, POPCNT (any x86-64 since Nehalem / Bulldozer);
//   x86-64-v3       v2 plus AVX, AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE (since Haswell / Zen 1);
//   x86-64-v4       v3 plus AVX-512 F/CD/BW/DQ/VL (Skylake-SP, Zen 4 and later);
//   x86-64-v4-vnni  v4 plus AVX-512 VNNI (Cascade Lake, Zen 4 and later);
//   zen4            AMD EPYC Zen 4 (AVX-512 with VNNI, BF16, VBMI/VBMI2, IFMA; no FP16, AMX);
//   sapphirerapids  Intel Xeon Sapphire Rapids (Zen 4's set plus AVX512-FP16 and AVX-VNNI);
// "avx2" and "x86-64-avx2" are aliases of x86-64-v3.
#pragma once

#include <Halide.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rnnc {

// One x86 feature rnnc knows, by its LLVM name ("avx512vnni").
enum class CpuFeature : int {
  kSse3, kSsse3, kSse41, kSse42, kPopcnt, kAvx, kAvx2, kFma, kF16c, kBmi, kBmi2, kLzcnt, kMovbe,
  kAvx512f, kAvx512cd, kAvx512bw, kAvx512dq, kAvx512vl, kAvx512ifma, kAvx512vbmi, kAvx512vbmi2,
  kAvx512vnni, kAvx512bitalg, kAvx512vpopcntdq, kAvx512bf16, kAvx512fp16, kAvx512vp2intersect,
  kAvxvnni, kAmxTile, kAmxInt8, kAmxBf16, kGfni, kVaes, kVpclmulqdq,
  kCount
};

const char* cpu_feature_name(CpuFeature feature);  // LLVM's spelling

// Where CPUID reports a feature: bit `bit` of register `reg` (0 eax, 1 ebx, 2 ecx, 3 edx) of
// leaf `leaf`, sub-leaf `subleaf`; usable only when XCR0 has every bit of `xcr0` (the register
// state the OS saves).
struct CpuidBit {
  unsigned leaf, subleaf;
  int reg, bit;
  uint64_t xcr0;
};
const CpuidBit& cpuid_bit(CpuFeature feature);

// A set of CpuFeatures.
class CpuFeatureSet {
 public:
  CpuFeatureSet() = default;
  CpuFeatureSet(std::initializer_list<CpuFeature> features);
  bool has(CpuFeature feature) const { return (bits_ >> static_cast<int>(feature)) & 1; }
  void add(CpuFeature feature) { bits_ |= uint64_t{1} << static_cast<int>(feature); }
  bool contains(const CpuFeatureSet& other) const { return (other.bits_ & ~bits_) == 0; }
  // The features of `other` this set lacks.
  std::vector<CpuFeature> missing(const CpuFeatureSet& other) const;
  uint64_t bits() const { return bits_; }
  // "avx,avx2,fma,...": the features present, in enum order.
  std::string to_string() const;

 private:
  uint64_t bits_ = 0;
};

// The CPU this process runs on.
struct HostCpu {
  std::string vendor;      // "GenuineIntel", "AuthenticAMD"
  std::string model_name;  // CPUID's brand string
  int family = 0;          // display family (base + extended)
  int model = 0;           // display model
  CpuFeatureSet features;  // usable: CPUID bits and the register state the OS enables
  int64_t l2_bytes_per_core = 0;  // 0 when CPUID does not say
};
const HostCpu& host_cpu();

// Whether `cpu` executes 512-bit operations as two 256-bit halves: AMD family 19h with AVX-512
// (Zen 4; Zen 3, also family 19h, has no AVX-512).
bool splits_512_bit_ops(const HostCpu& cpu);

// Whether `cpu` divides full 512-bit vectors on a unit of its own, beside the two pipes that
// multiply and FMA: AMD family 1Ah with AVX-512 (Zen 5; docs/measurements.md, "Where the batched
// int8 time goes on Zen 5": 12 vdivps zmm took the same time alone and beside 12 FMAs).
bool divides_beside_multiplies(const HostCpu& cpu);

// The feature sets of the named portable levels and of two CPUs the project runs on (the tests
// compile for them on any host).
CpuFeatureSet x86_64_v2_features();
CpuFeatureSet x86_64_v3_features();
CpuFeatureSet x86_64_v4_features();
CpuFeatureSet zen4_features();             // AMD EPYC Zen 4: no AVX512-FP16, AMX or AVX-VNNI
CpuFeatureSet sapphire_rapids_features();  // Intel Xeon Sapphire Rapids

// L2 per core when the target does not say: the smaller of the two host kinds the project runs
// on (AMD EPYC Zen 4/5: 1 MiB; Intel Xeon Sapphire Rapids: 2 MiB), so code for a portable level
// never assumes weights stay in an L2 they overflow on the other kind.
constexpr int64_t kDefaultL2Bytes = int64_t{1} << 20;
// RNNC_L2_KIB, when set and not 0: the L2 per core every target's schedules assume, in place of
// CPUID's or the named target's (a virtual machine whose CPUID misreports its caches; the
// suite's run of the Intel Xeon class on any host). nullopt when unset or 0; anything but a
// whole number of KiB is invalid input.
std::optional<int64_t> l2_bytes_override();
// This CPU's L2 per core (RNNC_L2_KIB, else CPUID, else kDefaultL2Bytes): the host target's.
int64_t host_l2_bytes();

// What kernels are compiled for.
struct KernelTarget {
  std::string name;          // a name resolve_kernel_target accepts, or "features"
  CpuFeatureSet features;    // what the code may use
  Halide::Target halide;     // steers Halide's instruction selection (schedules read it too)
  std::string tune_cpu;      // LLVM scheduling model; implies no features
  // The schedule class: the vector width Halide's flags give (AVX-512 or AVX2) and the L2 per
  // core that the schedules compare weight bytes against (lowering/schedule_table.h). The host's
  // L2 comes from CPUID; the named CPUs state theirs; portable levels take kDefaultL2Bytes;
  // RNNC_L2_KIB overrides any of them (l2_bytes_override).
  int64_t l2_bytes = kDefaultL2Bytes;
  // Whether the CPU executes each 512-bit operation as two 256-bit halves (AMD Zen 4): zmm
  // multiplies and FMAs then issue at half the rate, so the schedules spend fewer of them where
  // another unit can do the work (lowering/schedule_table.cc). From CPUID for `host` (AMD family
  // 19h with AVX-512), stated for `zen4`; false for the portable levels and the full-width cores
  // (Intel Xeon, AMD Zen 5).
  bool splits_512_bit_ops = false;
  // Whether vector divides run on their own unit, taking no multiply or FMA issue slots (AMD Zen
  // 5): the gates then divide rather than spend three multiplies on a reciprocal estimate
  // (lowering/schedule_table.cc). From CPUID for `host` (AMD family 1Ah with AVX-512); false for
  // the named targets and portable levels.
  bool divides_beside_multiplies = false;
  // Compile for the CPU Halide's flags name (avx512_sapphirerapids: LLVM's sapphirerapids, FP16
  // and AMX included) instead of the explicit list: the choice this module exists to prevent,
  // kept so that a test can show its instruction scan catches what that choice emits.
  bool halide_cpu = false;

  // LLVM's target-features string: "+f" for every known feature present, "-f" for every other.
  std::string llvm_features() const;
  // Everything that changes the generated code, for cache keys.
  std::string key() const;
  // "avx512, L2 2 MiB", "avx512 in 256-bit halves, L2 1 MiB": what `rnnc plan`, `rnnc --version`
  // and the benchmark report print.
  std::string schedule_class() const;
  KernelTarget with_feature(Halide::Target::Feature feature) const;
};

// One of the names above; "" reads $RNNC_TARGET, else "host". An unknown name is invalid input, naming the accepted ones.
KernelTarget resolve_kernel_target(const std::string& name);

// The target for an explicit feature set (tests: a Zen 4 feature set on any host). tune_cpu ""
// picks LLVM's generic scheduling model.
KernelTarget kernel_target_for(const CpuFeatureSet& features, const std::string& tune_cpu = "",
                               const std::string& name = "features",
                               int64_t l2_bytes = kDefaultL2Bytes);

// Raises an invalid-input error when this CPU lacks a feature `target` uses (kernels compiled for
// it would stop with an illegal instruction), naming the first missing feature.
void check_host_runs(const KernelTarget& target);

}  // namespace rnnc
