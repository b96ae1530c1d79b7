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

// The feature an instruction needs beyond AVX2, or "" (checked classes only).
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
  return "";
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
