#include "tests/support/isa_check.h"

#include <regex>
#include <set>
#include <sstream>

namespace rnnc::testing {

namespace {

std::set<std::string> split(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.insert(item);
  }
  return out;
}

enum class Encoding { kLegacy, kVex, kEvex };

// The encoding from the instruction's bytes ("62 f1 7c 48 ..."): after address-size and segment
// prefixes (the only ones VEX and EVEX allow), 0x62 starts EVEX and 0xc4/0xc5 VEX in 64-bit mode.
Encoding encoding_of(const std::string& bytes) {
  std::istringstream in(bytes);
  for (std::string byte; in >> byte;) {
    if (byte == "67" || byte == "2e" || byte == "3e" || byte == "26" || byte == "36" ||
        byte == "64" || byte == "65") {
      continue;
    }
    if (byte == "62") return Encoding::kEvex;
    if (byte == "c4" || byte == "c5") return Encoding::kVex;
    return Encoding::kLegacy;
  }
  return Encoding::kLegacy;
}

// The feature a legacy-encoded (SSE or general-purpose) instruction needs beyond SSE2, or "" (the
// SSE3 to SSE4.2 instructions by name, and TZCNT, LZCNT, POPCNT, MOVBE).
std::string legacy_feature_needed(const std::string& mnemonic) {
  static const std::regex sse3(
      R"(^(addsubp[sd]|haddp[sd]|hsubp[sd]|movddup|movshdup|movsldup|lddqu)$)");
  static const std::regex ssse3(
      R"(^(pshufb|phadd(w|d|sw)|phsub(w|d|sw)|pmaddubsw|pmulhrsw|palignr|psign[bwd]|pabs[bwd])$)");
  static const std::regex sse41(
      R"(^(blendv?p[sd]|pblendvb|pblendw|dpp[sd]|insertps|extractps|mpsadbw|movntdqa|packusdw|)"
      R"(pcmpeqq|pextr[bdq]|pinsr[bdq]|pmax(sb|sd|ud|uw)|pmin(sb|sd|ud|uw)|pmov[sz]x\w+|pmuldq|)"
      R"(pmulld|ptest|round[ps][sd]|phminposuw)$)");
  static const std::regex sse42(R"(^(pcmpgtq|pcmp[ei]str[im]|crc32[bwlq]?)$)");
  if (std::regex_match(mnemonic, sse3)) return "sse3";
  if (std::regex_match(mnemonic, ssse3)) return "ssse3";
  if (std::regex_match(mnemonic, sse41)) return "sse4.1";
  if (std::regex_match(mnemonic, sse42)) return "sse4.2";
  if (mnemonic.rfind("tzcnt", 0) == 0) return "bmi";
  if (mnemonic.rfind("popcnt", 0) == 0) return "popcnt";
  if (mnemonic.rfind("lzcnt", 0) == 0) return "lzcnt";
  if (mnemonic.rfind("movbe", 0) == 0) return "movbe";
  return "";
}

// The feature a VEX-encoded instruction needs: BMI1/BMI2 (general-purpose), FMA, F16C, AVX2
// (integer operations on ymm, the cross-lane permutes, gathers and variable shifts) or else AVX.
std::string vex_feature_needed(const std::string& mnemonic, const std::string& operands) {
  static const std::regex bmi(R"(^(andn|bextr|blsi|blsmsk|blsr)[lq]?$)");
  static const std::regex bmi2(R"(^(bzhi|pdep|pext|rorx|sarx|shlx|shrx|mulx)[lq]?$)");
  static const std::regex avx_vp(R"(^(vpermilp[sd]|vperm2f128|vptest)$)");
  static const std::regex fma(R"(^vf(n?m(add|sub)|maddsub|msubadd)\d{3}[ps][sd]$)");
  static const std::regex avx2_only(
      R"(^(vbroadcasti128|vinserti128|vextracti128|vperm2i128|vperm[dq]|vpermp[sd]|v(p)?gather\w+|)"
      R"(vpmaskmov[dq]|vps[lr]lv[dq]|vpsrav[dq]|vpblendd|vpbroadcast[bwdq]|vbroadcasts[sd])$)");
  static const std::regex ymm(R"(%ymm\d+)");
  if (std::regex_match(mnemonic, bmi)) return "bmi";
  if (std::regex_match(mnemonic, bmi2)) return "bmi2";
  if (std::regex_match(mnemonic, fma)) return "fma";
  if (mnemonic == "vcvtph2ps" || mnemonic == "vcvtps2ph") return "f16c";
  // vbroadcastss/sd from memory are AVX; from a register, AVX2.
  const bool broadcast_from_memory = (mnemonic == "vbroadcastss" || mnemonic == "vbroadcastsd") &&
                                     operands.find('(') != std::string::npos;
  if (!broadcast_from_memory && std::regex_match(mnemonic, avx2_only)) return "avx2";
  if (mnemonic.rfind("vp", 0) == 0 && !std::regex_match(mnemonic, avx_vp) &&
      std::regex_search(operands, ymm)) {
    return "avx2";
  }
  return "avx";
}

// The feature an instruction needs beyond SSE2, or "" (checked classes only).
std::string feature_needed(const std::string& mnemonic, Encoding encoding,
                           const std::string& operands) {
  static const std::regex fp16(
      R"(^v(\w*(ph|sh)|\w*(ph|sh)2\w+|\w*2(ph|sh)[xlq]?|movw|\w*psx)$)");
  static const std::regex amx(R"(^(ldtilecfg|sttilecfg|tilerelease|tilezero|tileloadd\w*|tilestored|tdp\w+)$)");
  static const std::regex vnni(R"(^vpdp(busd|busds|wssd|wssds)$)");
  static const std::regex bf16(R"(^(vcvtne2ps2bf16|vcvtneps2bf16|vdpbf16ps)$)");
  static const std::regex vbmi(R"(^(vpermb|vpermi2b|vpermt2b|vpmultishiftqb)$)");
  static const std::regex vbmi2(R"(^(vpcompress[bw]|vpexpand[bw]|vpshldv?[wdq]|vpshrdv?[wdq])$)");
  static const std::regex ifma(R"(^vpmadd52[lh]uq$)");
  static const std::regex bitalg(R"(^(vpopcnt[bw]|vpshufbitqmb)$)");
  static const std::regex vpopcntdq(R"(^vpopcnt[dq]$)");
  static const std::regex vp2intersect(R"(^vp2intersect[dq]$)");
  static const std::regex avx512_registers(R"(%(zmm\d+|k[0-7])\b)");
  // F16C's conversions (and their EVEX forms in AVX512F) end in "ph" but are not AVX512-FP16.
  const bool f16c = mnemonic == "vcvtph2ps" || mnemonic == "vcvtps2ph";
  if (!f16c && std::regex_match(mnemonic, fp16)) return "avx512fp16";
  if (std::regex_match(mnemonic, amx)) return "amx-tile";
  if (std::regex_match(mnemonic, vnni)) return encoding == Encoding::kVex ? "avxvnni" : "avx512vnni";
  if (std::regex_match(mnemonic, bf16)) return "avx512bf16";
  if (std::regex_match(mnemonic, vbmi)) return "avx512vbmi";
  if (std::regex_match(mnemonic, vbmi2)) return "avx512vbmi2";
  if (std::regex_match(mnemonic, ifma)) return "avx512ifma";
  if (std::regex_match(mnemonic, bitalg)) return "avx512bitalg";
  if (std::regex_match(mnemonic, vpopcntdq)) return "avx512vpopcntdq";
  if (std::regex_match(mnemonic, vp2intersect)) return "avx512vp2intersect";
  if (encoding == Encoding::kEvex || std::regex_search(operands, avx512_registers)) {
    return "avx512f";
  }
  if (encoding == Encoding::kVex) return vex_feature_needed(mnemonic, operands);
  return legacy_feature_needed(mnemonic);
}

}  // namespace

std::vector<IsaViolation> isa_violations(const std::string& listing, const std::string& features) {
  const std::set<std::string> have = split(features);
  std::vector<IsaViolation> violations;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    // "  40:\t62 f1 7c 48 28 05 \tvmovaps 0x0(%rip),%zmm0"; continuation lines hold bytes only.
    const size_t first_tab = line.find('\t');
    if (first_tab == std::string::npos) continue;
    const size_t second_tab = line.find('\t', first_tab + 1);
    if (second_tab == std::string::npos) continue;
    const std::string bytes = line.substr(first_tab + 1, second_tab - first_tab - 1);
    std::istringstream instruction(line.substr(second_tab + 1));
    std::string mnemonic;
    while (instruction >> mnemonic && (mnemonic.front() == '{' || mnemonic == "lock" ||
                                       mnemonic == "notrack" || mnemonic == "data16")) {
    }
    std::string operands;
    std::getline(instruction, operands);
    const std::string needed = feature_needed(mnemonic, encoding_of(bytes), operands);
    if (!needed.empty() && !have.count(needed)) violations.push_back({needed, line});
  }
  return violations;
}

}  // namespace rnnc::testing
