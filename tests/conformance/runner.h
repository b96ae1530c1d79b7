// Runs a generated suite (or any folder of tests in the ONNX backend layout) through engines and
// summarizes per op: passes, failures, known disagreements, and coverage of the spec.
//
// Comparison against the expected outputs: the reference engine must reproduce them exactly
// (same evaluator, same inputs: only a round-trip bug can change a bit). Other engines use a
// per-type tolerance (|a - e| <= atol + rtol * |e|; NaN matches NaN, infinities match exactly):
//   float64 rtol 1e-6 atol 1e-9; float32 rtol 1e-4 atol 1e-5; float16 rtol 1e-2 atol 1e-3;
//   bfloat16 rtol 2e-2 atol 1e-2 - a few ulps of each type, since both engines compute each
//   element in its type or wider - times the op spec's tolerance_scale (recurrent ops, whose
//   errors compound over the steps). Integers, bools and strings compare exactly.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "tests/conformance/coverage.h"
#include "tests/conformance/findings.h"

namespace rnnc::conformance {

struct RunOptions {
  std::string dir;
  bool reference = true;
  bool compiled = false;  // rnnc's optimized path (compile_model + Program::run)
  std::string cache_dir;  // its Halide cache ("" = default)
  bool ort = false;
  std::string ort_worker;     // default: default_ort_worker()
  std::string findings_path;  // known ORT disagreements (required with ort)
  std::set<std::string> ops;  // only these ops (empty: all)
  std::string scratch_dir;    // for the ORT worker's output files
  std::string results_path;   // if set: one line per test and engine (TSV), for investigation
  std::function<void(int done, int total, const std::string& test)> progress;
};

struct EngineCounts {
  int passed = 0;
  int failed = 0;                     // unexplained: a conformance failure
  int known = 0;                      // a disagreement a findings class explains
  int unsupported = 0;                // the engine does not implement it (not a disagreement)
  std::vector<std::string> failures;  // "<test>: <outcome>: <message>", the first few
};

struct OpSummary {
  std::string op;
  Coverage coverage;
  std::map<std::string, EngineCounts> engines;  // by engine name
};

struct RunReport {
  std::vector<std::string> engines;
  std::map<std::string, OpSummary> ops;
  std::vector<Finding> findings;
  std::map<std::string, int> finding_hits;             // finding id -> tests it explained
  std::map<std::string, std::string> finding_example;  // finding id -> one test and message
  std::map<std::string, int> unsupported_reasons;      // ORT: op + first words of the message
  int tests = 0;
  bool ok() const;
};

RunReport run_suite(const RunOptions& options);
void print_report(const RunReport& report, std::ostream& out, bool verbose);
// The per-op summary and the findings table as Markdown. If `path` has the markers
// <!-- conform:begin --> and <!-- conform:end -->, only the text between them is replaced.
void write_markdown_report(const RunReport& report, const std::string& path,
                           const std::string& preamble);

}  // namespace rnnc::conformance
