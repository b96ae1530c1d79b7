// Static check of compiled code against an instruction-set feature set: the instructions in a
// disassembly (objdump -d) that a CPU with only those features cannot run. It catches what a test
// run on one host cannot: kernels for a CPU the test is not running on (an AMD Zen 4 has no
// AVX512-FP16, AMX or AVX-VNNI; an AVX2-only CPU has no EVEX encodings or zmm registers; an
// x86-64-v2 CPU no VEX encodings; a baseline x86-64 nothing past SSE2).
#pragma once

#include <string>
#include <vector>

namespace rnnc::testing {

// One instruction the feature set does not cover.
struct IsaViolation {
  std::string feature;  // LLVM's name of the feature it needs ("avx512fp16", "avx512f")
  std::string line;     // the disassembly line
};

// `features`: LLVM feature names, comma-separated (CpuFeatureSet::to_string()). Checked classes:
// AVX512-FP16, AMX, VEX-encoded VNNI (AVX-VNNI), AVX512-VNNI, AVX512-BF16, VBMI, VBMI2, IFMA,
// BITALG, VPOPCNTDQ, VP2INTERSECT, and AVX-512 itself (any EVEX encoding, zmm or mask register);
// among VEX encodings BMI1/BMI2, FMA, F16C, AVX2 (integer ymm operations, cross-lane permutes,
// gathers, variable shifts, broadcasts from a register) and AVX for the rest; among legacy
// encodings SSE3, SSSE3, SSE4.1, SSE4.2 by mnemonic, and POPCNT, LZCNT, TZCNT (BMI1), MOVBE. SSE
// and SSE2 are every x86-64's.
std::vector<IsaViolation> isa_violations(const std::string& listing, const std::string& features);

}  // namespace rnnc::testing
