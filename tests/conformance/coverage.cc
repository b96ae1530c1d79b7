#include "tests/conformance/coverage.h"

#include "ir/error.h"
#include "tests/conformance/draft.h"
#include "tests/conformance/generator.h"

namespace rnnc::conformance {

CoverageUniverse coverage_universe(const OpSpec& spec) {
  CoverageUniverse universe;
  // Keys as TestMeta::type_key() spells them: variables in name order.
  std::vector<std::map<std::string, std::string>> combos = {{}};
  for (const TypeVar& var : spec.type_vars) {
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& combo : combos) {
      for (DType type : var.types) {
        auto extended = combo;
        extended[var.name] = dtype_onnx_name(type);
        next.push_back(extended);
      }
    }
    combos = next;
  }
  for (const auto& combo : combos) {
    TestMeta meta;
    meta.types = combo;
    universe.type_keys.push_back(meta.type_key());
  }
  const OperandSpec* primary = primary_operand(spec);
  if (primary) {
    universe.min_rank = primary->min_rank;
    universe.max_rank = primary->max_rank;
  }
  for (Boundary boundary : applicable_boundaries(spec)) {
    universe.boundaries.push_back(boundary_name(boundary));
  }
  return universe;
}

void Coverage::add(const TestMeta& meta) {
  ++tests_;
  ++types_[meta.type_key()];
  ++ranks_[meta.rank];
  for (const auto& boundary : meta.boundaries) ++boundaries_[boundary];
  for (const auto& tag : meta.tags) ++tags_[tag];
}

std::string Coverage::types_text(const CoverageUniverse& universe) const {
  int hit = 0;
  for (const auto& key : universe.type_keys) hit += types_.count(key) ? 1 : 0;
  return cat(hit, "/", universe.type_keys.size());
}

std::string Coverage::ranks_text(const CoverageUniverse& universe) const {
  int hit = 0;
  for (int r = universe.min_rank; r <= universe.max_rank; ++r) hit += ranks_.count(r) ? 1 : 0;
  return cat(hit, "/", universe.max_rank - universe.min_rank + 1);
}

std::string Coverage::boundaries_text(const CoverageUniverse& universe) const {
  int hit = 0;
  for (const auto& name : universe.boundaries) hit += boundaries_.count(name) ? 1 : 0;
  return cat(hit, "/", universe.boundaries.size());
}

std::vector<std::string> Coverage::missing(const CoverageUniverse& universe) const {
  std::vector<std::string> out;
  for (const auto& key : universe.type_keys) {
    if (!types_.count(key)) out.push_back(key);
  }
  for (int r = universe.min_rank; r <= universe.max_rank; ++r) {
    if (!ranks_.count(r)) out.push_back(cat("rank ", r));
  }
  for (const auto& name : universe.boundaries) {
    if (!boundaries_.count(name)) out.push_back(name);
  }
  return out;
}

}  // namespace rnnc::conformance
