// Coverage of one op's tests against its spec: which element type combinations, ranks of the
// primary operand (input 0) and boundary classes the tests hit, out of those the spec allows.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/conformance/spec.h"
#include "tests/conformance/suite.h"

namespace rnnc::conformance {

// What the spec allows: the universe the coverage is measured against.
struct CoverageUniverse {
  std::vector<std::string> type_keys;  // "T=float,T1=int32" for every combination
  int min_rank = 0;
  int max_rank = 0;
  std::vector<std::string> boundaries;  // applicable boundary class names
};
CoverageUniverse coverage_universe(const OpSpec& spec);

class Coverage {
 public:
  void add(const TestMeta& meta);
  int tests() const { return tests_; }
  const std::map<std::string, int>& type_counts() const { return types_; }
  const std::map<int, int>& rank_counts() const { return ranks_; }
  const std::map<std::string, int>& boundary_counts() const { return boundaries_; }
  const std::map<std::string, int>& tag_counts() const { return tags_; }

  // "3/3", counting only members of the universe.
  std::string types_text(const CoverageUniverse& universe) const;
  std::string ranks_text(const CoverageUniverse& universe) const;
  std::string boundaries_text(const CoverageUniverse& universe) const;
  // The members of the universe no test hit ("float16,int32", "rank 0", "nan").
  std::vector<std::string> missing(const CoverageUniverse& universe) const;

 private:
  int tests_ = 0;
  std::map<std::string, int> types_;
  std::map<int, int> ranks_;
  std::map<std::string, int> boundaries_;
  std::map<std::string, int> tags_;
};

}  // namespace rnnc::conformance
