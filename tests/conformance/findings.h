// Known disagreements between an engine and rnnc's expected outputs, one class per line of a
// checked-in list (tests/conformance/ort_findings.txt for ONNX Runtime). A disagreement is known
// when a class matches it; the conformance run fails on any other.
//
// Line format:  <id> <ops> <outcome> [<feature>...] : <explanation>
//   ops       an op, several joined by commas (LSTM,GRU,RNN), or *
//   outcome   mismatch | error | crash | any
//   feature   a test feature that must be present (see TestMeta::features(): "layout=1",
//             "T=float16", "nan", "act:thresholdedrelu", ...); a|b|c: one of them; a trailing *
//             matches a prefix; !feature must be absent; msg~"text" must occur in the engine's
//             message.
#pragma once

#include <string>
#include <vector>

#include "tests/conformance/suite.h"

namespace rnnc::conformance {

struct Finding {
  std::string id;
  std::vector<std::string> ops;  // empty: any op
  std::string outcome;
  std::vector<std::string> required;
  std::vector<std::string> excluded;
  std::vector<std::string> message_contains;
  std::string explanation;
};

std::vector<Finding> load_findings(const std::string& path);

// The first class that explains `outcome` ("mismatch", "error", "crash") of this test, or nullptr.
const Finding* match_finding(const std::vector<Finding>& findings, const TestMeta& meta,
                             const std::string& outcome, const std::string& message);

}  // namespace rnnc::conformance
