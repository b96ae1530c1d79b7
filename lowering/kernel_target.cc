#include "lowering/kernel_target.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

#include "ir/error.h"
#include "lowering/env_size.h"

namespace rnnc {

namespace {

constexpr const char* kFeatureNames[] = {
    "sse3",       "ssse3",       "sse4.1",     "sse4.2",       "popcnt",          "avx",
    "avx2",       "fma",         "f16c",       "bmi",          "bmi2",            "lzcnt",
    "movbe",      "avx512f",     "avx512cd",   "avx512bw",     "avx512dq",        "avx512vl",
    "avx512ifma", "avx512vbmi",  "avx512vbmi2", "avx512vnni",  "avx512bitalg",    "avx512vpopcntdq",
    "avx512bf16", "avx512fp16",  "avx512vp2intersect", "avxvnni", "amx-tile",     "amx-int8",
    "amx-bf16",   "gfni",        "vaes",       "vpclmulqdq",
};
static_assert(sizeof(kFeatureNames) / sizeof(kFeatureNames[0]) ==
              static_cast<size_t>(CpuFeature::kCount));

using F = CpuFeature;

constexpr uint64_t kAvxState = 0x6;     // XCR0: XMM and YMM registers
constexpr uint64_t kAvx512State = 0xe6;  // and opmask, ZMM_Hi256, Hi16_ZMM

// Where CPUID reports each feature, in CpuFeature order.
constexpr CpuidBit kCpuidBits[] = {
    {1, 0, 2, 0, 0},            {1, 0, 2, 9, 0},            {1, 0, 2, 19, 0},
    {1, 0, 2, 20, 0},           {1, 0, 2, 23, 0},           {1, 0, 2, 28, kAvxState},
    {7, 0, 1, 5, kAvxState},    {1, 0, 2, 12, kAvxState},   {1, 0, 2, 29, kAvxState},
    {7, 0, 1, 3, 0},            {7, 0, 1, 8, 0},            {0x80000001, 0, 2, 5, 0},
    {1, 0, 2, 22, 0},           {7, 0, 1, 16, kAvx512State}, {7, 0, 1, 28, kAvx512State},
    {7, 0, 1, 30, kAvx512State}, {7, 0, 1, 17, kAvx512State}, {7, 0, 1, 31, kAvx512State},
    {7, 0, 1, 21, kAvx512State}, {7, 0, 2, 1, kAvx512State},  {7, 0, 2, 6, kAvx512State},
    {7, 0, 2, 11, kAvx512State}, {7, 0, 2, 12, kAvx512State}, {7, 0, 2, 14, kAvx512State},
    {7, 1, 0, 5, kAvx512State},  {7, 0, 3, 23, kAvx512State}, {7, 0, 3, 8, kAvx512State},
    {7, 1, 0, 4, kAvxState},    {7, 0, 3, 24, 0},           {7, 0, 3, 25, 0},
    {7, 0, 3, 22, 0},           {7, 0, 2, 8, 0},            {7, 0, 2, 9, kAvxState},
    {7, 0, 2, 10, kAvxState},
};
static_assert(sizeof(kCpuidBits) / sizeof(kCpuidBits[0]) == static_cast<size_t>(CpuFeature::kCount));

struct Cpuid {
  unsigned regs[4] = {0, 0, 0, 0};  // eax, ebx, ecx, edx
};

Cpuid cpuid(unsigned leaf, unsigned subleaf = 0) {
  Cpuid r;
  if (!__get_cpuid_count(leaf, subleaf, &r.regs[0], &r.regs[1], &r.regs[2], &r.regs[3])) {
    return Cpuid{};
  }
  return r;
}

uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t{edx} << 32) | eax;
}

bool is_amx(CpuFeature feature) {
  return feature == F::kAmxTile || feature == F::kAmxInt8 || feature == F::kAmxBf16;
}

HostCpu detect_host() {
  HostCpu cpu;
  Cpuid leaf0 = cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor, &leaf0.regs[1], 4);
  std::memcpy(vendor + 4, &leaf0.regs[3], 4);
  std::memcpy(vendor + 8, &leaf0.regs[2], 4);
  cpu.vendor = vendor;

  const unsigned leaf1_eax = cpuid(1).regs[0];
  const int base_family = (leaf1_eax >> 8) & 0xf;
  const int base_model = (leaf1_eax >> 4) & 0xf;
  cpu.family = base_family == 0xf ? base_family + ((leaf1_eax >> 20) & 0xff) : base_family;
  cpu.model = base_family == 0x6 || base_family == 0xf
                  ? (((leaf1_eax >> 16) & 0xf) << 4) | base_model
                  : base_model;

  // A feature is usable when CPUID reports it and the OS saves the registers it needs (XCR0,
  // read with XGETBV where CPUID's OSXSAVE bit says it may be).
  const uint64_t xcr0 = (cpuid(1).regs[2] >> 27) & 1 ? xgetbv0() : 0;
  for (int i = 0; i < static_cast<int>(CpuFeature::kCount); ++i) {
    const auto feature = static_cast<CpuFeature>(i);
    // AMX is never reported: rnnc's kernels do not use it, and Linux hands out its register
    // state only on request (arch_prctl), so code using it could fault where CPUID says yes.
    if (is_amx(feature)) continue;
    const CpuidBit& where = kCpuidBits[i];
    const Cpuid r = cpuid(where.leaf, where.subleaf);
    if (((r.regs[where.reg] >> where.bit) & 1) && (xcr0 & where.xcr0) == where.xcr0) {
      cpu.features.add(feature);
    }
  }

  Cpuid ext0 = cpuid(0x80000000);
  if (ext0.regs[0] >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) std::memcpy(brand + 16 * i, cpuid(0x80000002 + i).regs, 16);
    cpu.model_name = brand;
    const size_t first = cpu.model_name.find_first_not_of(' ');
    const size_t last = cpu.model_name.find_last_not_of(' ');
    cpu.model_name = first == std::string::npos ? "" : cpu.model_name.substr(first, last - first + 1);
  }
  if (ext0.regs[0] >= 0x80000006) {
    cpu.l2_bytes_per_core = int64_t{cpuid(0x80000006).regs[2] >> 16} * 1024;
  }
  // Else the deterministic cache parameters (leaf 4): the level-2 cache's ways x partitions x
  // line size x sets.
  for (unsigned sub = 0; cpu.l2_bytes_per_core == 0 && leaf0.regs[0] >= 4 && sub < 16; ++sub) {
    const Cpuid cache = cpuid(4, sub);
    if ((cache.regs[0] & 0x1f) == 0) break;  // no more caches
    if (((cache.regs[0] >> 5) & 0x7) != 2) continue;
    const int64_t ways = ((cache.regs[1] >> 22) & 0x3ff) + 1;
    const int64_t partitions = ((cache.regs[1] >> 12) & 0x3ff) + 1;
    const int64_t line = (cache.regs[1] & 0xfff) + 1;
    cpu.l2_bytes_per_core = ways * partitions * line * (int64_t{cache.regs[2]} + 1);
  }
  return cpu;
}

// LLVM's scheduling model for this host: tuning only, it enables no feature.
std::string host_tune_cpu(const HostCpu& cpu) {
  if (cpu.vendor == "AuthenticAMD") {
    if (cpu.family >= 0x19) return "znver3";
    if (cpu.family == 0x17) return "znver2";
    return "generic";
  }
  if (cpu.vendor == "GenuineIntel") {
    if (cpu.features.has(F::kAvx512fp16)) return "sapphirerapids";
    if (cpu.features.has(F::kAvx512vbmi2)) return "icelake-server";
    if (cpu.features.has(F::kAvx512vnni)) return "cascadelake";
    if (cpu.features.has(F::kAvx512f)) return "skylake-avx512";
    if (cpu.features.has(F::kAvx2)) return "haswell";
  }
  return "generic";
}

// Halide's feature flags for a feature set: the ones whose instructions Halide selects itself.
// Every flag's LLVM features must be in the set; LLVM then gets the set itself, not the flags.
Halide::Target halide_target_for(const CpuFeatureSet& f) {
  using T = Halide::Target;
  Halide::Target target(T::Linux, T::X86, 64);
  if (f.has(F::kSse41)) target.set_feature(T::SSE41);
  if (f.has(F::kAvx)) target.set_feature(T::AVX);
  if (f.has(F::kAvx2)) target.set_feature(T::AVX2);
  if (f.has(F::kFma)) target.set_feature(T::FMA);
  if (f.has(F::kF16c)) target.set_feature(T::F16C);
  const bool avx512 = f.has(F::kAvx512f) && f.has(F::kAvx512cd);
  const bool skylake = avx512 && f.contains({F::kAvx512bw, F::kAvx512dq, F::kAvx512vl});
  if (avx512) target.set_feature(T::AVX512);
  if (skylake) target.set_feature(T::AVX512_Skylake);
  if (skylake && f.contains({F::kAvx512ifma, F::kAvx512vbmi})) {
    target.set_feature(T::AVX512_Cannonlake);
  }
  // Halide 14 selects vpdpbusd (and the other VNNI dot products) under this flag.
  if (skylake && f.has(F::kAvx512vnni)) target.set_feature(T::AVX512_SapphireRapids);
  return target;
}

}  // namespace

const char* cpu_feature_name(CpuFeature feature) {
  return kFeatureNames[static_cast<int>(feature)];
}

const CpuidBit& cpuid_bit(CpuFeature feature) { return kCpuidBits[static_cast<int>(feature)]; }

CpuFeatureSet::CpuFeatureSet(std::initializer_list<CpuFeature> features) {
  for (CpuFeature feature : features) add(feature);
}

std::vector<CpuFeature> CpuFeatureSet::missing(const CpuFeatureSet& other) const {
  std::vector<CpuFeature> result;
  for (int i = 0; i < static_cast<int>(CpuFeature::kCount); ++i) {
    auto feature = static_cast<CpuFeature>(i);
    if (other.has(feature) && !has(feature)) result.push_back(feature);
  }
  return result;
}

std::string CpuFeatureSet::to_string() const {
  std::string text;
  for (int i = 0; i < static_cast<int>(CpuFeature::kCount); ++i) {
    if (!has(static_cast<CpuFeature>(i))) continue;
    if (!text.empty()) text += ",";
    text += kFeatureNames[i];
  }
  return text;
}

const HostCpu& host_cpu() {
  static const HostCpu cpu = detect_host();
  return cpu;
}

CpuFeatureSet x86_64_v2_features() {
  return {F::kSse3, F::kSsse3, F::kSse41, F::kSse42, F::kPopcnt};
}

CpuFeatureSet x86_64_v3_features() {
  CpuFeatureSet set = x86_64_v2_features();
  for (CpuFeature f :
       {F::kAvx, F::kAvx2, F::kFma, F::kF16c, F::kBmi, F::kBmi2, F::kLzcnt, F::kMovbe}) {
    set.add(f);
  }
  return set;
}

CpuFeatureSet x86_64_v4_features() {
  CpuFeatureSet set = x86_64_v3_features();
  for (CpuFeature f : {F::kAvx512f, F::kAvx512cd, F::kAvx512bw, F::kAvx512dq, F::kAvx512vl}) {
    set.add(f);
  }
  return set;
}

CpuFeatureSet zen4_features() {
  CpuFeatureSet set = x86_64_v4_features();
  for (CpuFeature f : {F::kAvx512ifma, F::kAvx512vbmi, F::kAvx512vbmi2, F::kAvx512vnni,
                       F::kAvx512bitalg, F::kAvx512vpopcntdq, F::kAvx512bf16, F::kGfni, F::kVaes,
                       F::kVpclmulqdq}) {
    set.add(f);
  }
  return set;
}

CpuFeatureSet sapphire_rapids_features() {
  CpuFeatureSet set = zen4_features();
  for (CpuFeature f : {F::kAvx512fp16, F::kAvxvnni}) set.add(f);
  return set;
}

std::string KernelTarget::llvm_features() const {
  std::string text;
  for (int i = 0; i < static_cast<int>(CpuFeature::kCount); ++i) {
    if (!text.empty()) text += ",";
    text += features.has(static_cast<CpuFeature>(i)) ? "+" : "-";
    text += kFeatureNames[i];
  }
  return text;
}

std::string KernelTarget::key() const {
  if (halide_cpu) return cat(halide.to_string(), " cpu=halide");
  return cat(halide.to_string(), " cpu=x86-64 tune=", tune_cpu, " l2=", l2_bytes,
             splits_512_bit_ops ? " split512" : "", divides_beside_multiplies ? " divider" : "",
             " features=", llvm_features());
}

std::string KernelTarget::schedule_class() const {
  const bool avx512 = halide.has_feature(Halide::Target::AVX512);
  const std::string width = avx512 && splits_512_bit_ops               ? "avx512 in 256-bit halves"
                            : avx512                                   ? "avx512"
                            : halide.has_feature(Halide::Target::AVX2) ? "avx2"
                                                                       : "sse";
  const std::string divider = divides_beside_multiplies ? ", divides beside FMA" : "";
  return l2_bytes % (int64_t{1} << 20) == 0 ? cat(width, divider, ", L2 ", l2_bytes >> 20, " MiB")
                                            : cat(width, divider, ", L2 ", l2_bytes >> 10, " KiB");
}

bool splits_512_bit_ops(const HostCpu& cpu) {
  return cpu.vendor == "AuthenticAMD" && cpu.family == 0x19 && cpu.features.has(F::kAvx512f);
}

bool divides_beside_multiplies(const HostCpu& cpu) {
  return cpu.vendor == "AuthenticAMD" && cpu.family == 0x1a && cpu.features.has(F::kAvx512f);
}

KernelTarget KernelTarget::with_feature(Halide::Target::Feature feature) const {
  KernelTarget copy = *this;
  copy.halide = halide.with_feature(feature);
  return copy;
}

std::optional<int64_t> l2_bytes_override() {
  const uint64_t bytes = env_size_bytes("RNNC_L2_KIB", "KiB", "the CPU's or the target's own", 0);
  if (bytes == 0) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

int64_t host_l2_bytes() {
  if (const std::optional<int64_t> bytes = l2_bytes_override()) return *bytes;
  const int64_t bytes = host_cpu().l2_bytes_per_core;
  return bytes > 0 ? bytes : kDefaultL2Bytes;
}

KernelTarget kernel_target_for(const CpuFeatureSet& features, const std::string& tune_cpu,
                               const std::string& name, int64_t l2_bytes) {
  KernelTarget target;
  target.name = name;
  target.l2_bytes = l2_bytes;
  target.features = features;
  target.halide = halide_target_for(features);
  target.tune_cpu = tune_cpu.empty() ? "generic" : tune_cpu;
  return target;
}

namespace {

KernelTarget named_kernel_target(const std::string& requested) {
  std::string name = requested;
  if (name.empty()) {
    const char* env = std::getenv("RNNC_TARGET");
    name = env && *env ? env : "host";
  }
  if (name == "host") {
    const HostCpu& cpu = host_cpu();
    KernelTarget target =
        kernel_target_for(cpu.features, host_tune_cpu(cpu), "host", host_l2_bytes());
    target.splits_512_bit_ops = splits_512_bit_ops(cpu);
    target.divides_beside_multiplies = divides_beside_multiplies(cpu);
    return target;
  }
  if (name == "x86-64") return kernel_target_for(CpuFeatureSet{}, "", "x86-64");
  if (name == "x86-64-v2") return kernel_target_for(x86_64_v2_features(), "", "x86-64-v2");
  if (name == "x86-64-v3" || name == "avx2" || name == "x86-64-avx2") {
    return kernel_target_for(x86_64_v3_features(), "", "x86-64-v3");
  }
  if (name == "x86-64-v4") return kernel_target_for(x86_64_v4_features(), "", "x86-64-v4");
  if (name == "x86-64-v4-vnni") {
    CpuFeatureSet set = x86_64_v4_features();
    set.add(F::kAvx512vnni);
    return kernel_target_for(set, "", "x86-64-v4-vnni");
  }
  if (name == "zen4") {
    KernelTarget target = kernel_target_for(zen4_features(), "znver3", "zen4", int64_t{1} << 20);
    target.splits_512_bit_ops = true;
    return target;
  }
  if (name == "sapphirerapids") {
    return kernel_target_for(sapphire_rapids_features(), "sapphirerapids", "sapphirerapids",
                             int64_t{2} << 20);
  }
  raise_invalid_input(cat("unknown target '", name,
                          "' (use host, x86-64, x86-64-v2, x86-64-v3, x86-64-v4, x86-64-v4-vnni, "
                          "zen4 or sapphirerapids; avx2 and x86-64-avx2 mean x86-64-v3)"));
}

}  // namespace

KernelTarget resolve_kernel_target(const std::string& requested) {
  KernelTarget target = named_kernel_target(requested);
  if (const std::optional<int64_t> bytes = l2_bytes_override()) target.l2_bytes = *bytes;
  return target;
}

void check_host_runs(const KernelTarget& target) {
  std::vector<CpuFeature> missing = host_cpu().features.missing(target.features);
  if (missing.empty()) return;
  raise_invalid_input(cat("target ", target.name, " uses ", cpu_feature_name(missing.front()),
                          ", which this CPU (", host_cpu().model_name,
                          ") lacks: its kernels would stop with an illegal instruction here"));
}

}  // namespace rnnc
