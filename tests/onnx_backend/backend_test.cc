// Runs the official ONNX backend test cases (libonnx-testdata) through rnnc's reference evaluator.
//
// Every case under /usr/share/libonnx-testdata/data/{node,pytorch-converted,pytorch-operator,simple}
// is one test. Each imported model also passes the IR verifier. A case whose model uses an op or feature rnnc does not support is skipped (the
// importer raises kUnsupported); every other case must match the stored outputs with the official
// runner's default tolerance (rtol 1e-3, atol 1e-7), unless it sits in expected_failures.txt with
// a reason - and a listed case that starts passing fails, so that list only shrinks.
//
//   onnx_backend_test --suite=node [--report=operators.md] [gtest flags]
// --report writes the operator status table (docs/operators.md is this file, never hand-edited).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "ir/onnx_import.h"
#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"
#include "ir/verifier.h"
#include "tests/support/backend_cases.h"
#include "tests/support/compare.h"

namespace fs = std::filesystem;

namespace rnnc {
namespace {

using testing::BackendCase;

constexpr testing::Tolerance kTolerance{1e-3, 1e-7};

std::string g_suites = "node,pytorch-converted,pytorch-operator,simple";
std::string g_report_path;
std::string g_expected_failures_path;
std::string g_out_of_scope_path;

enum class Outcome { kPassed, kFailed, kUnsupported };

void PrintTo(Outcome outcome, std::ostream* out) {
  *out << (outcome == Outcome::kPassed ? "passed"
                                       : outcome == Outcome::kFailed ? "failed" : "unsupported");
}

struct CaseResult {
  Outcome outcome = Outcome::kPassed;
  std::string detail;
  std::set<std::string> ops;
  bool expected_failure = false;
};

std::map<std::string, CaseResult>& results() {
  static std::map<std::string, CaseResult> all;
  return all;
}

std::map<std::string, std::string> load_expected_failures() {
  std::map<std::string, std::string> out;
  if (g_expected_failures_path.empty()) return out;
  std::ifstream in(g_expected_failures_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, reason;
    fields >> name;
    std::getline(fields, reason);
    out[name] = reason.substr(reason.find_first_not_of(' ') == std::string::npos
                                  ? reason.size() : reason.find_first_not_of(' '));
  }
  return out;
}

// tests/onnx_backend/out_of_scope.txt: the ops (and refusals) rnnc leaves out on purpose.
struct OutOfScope {
  std::map<std::string, std::string> ops;       // op -> reason
  std::map<std::string, std::string> refusals;  // text in the refusal -> reason
};

const OutOfScope& out_of_scope() {
  static const OutOfScope table = [] {
    OutOfScope scope;
    if (g_out_of_scope_path.empty()) return scope;
    std::ifstream in(g_out_of_scope_path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      std::string kind, key, reason;
      fields >> kind >> key;
      std::getline(fields, reason);
      reason.erase(0, reason.find_first_not_of(' '));
      (kind == "op" ? scope.ops : scope.refusals)[key] = reason;
    }
    return scope;
  }();
  return table;
}

// Why an unsupported case is out of scope, or "" when it is work left.
std::string out_of_scope_reason(const CaseResult& result) {
  for (const auto& op : result.ops) {
    auto it = out_of_scope().ops.find(op);
    if (it != out_of_scope().ops.end()) return op + ": " + it->second;
  }
  for (const auto& [text, reason] : out_of_scope().refusals) {
    if (result.detail.find(text) != std::string::npos) return reason;
  }
  return "";
}

const std::map<std::string, std::string>& expected_failures() {
  static const auto table = load_expected_failures();
  return table;
}

void collect_ops(const onnx::GraphProto& graph, std::set<std::string>& ops) {
  for (const auto& node : graph.node()) {
    ops.insert((node.domain().empty() || node.domain() == "ai.onnx" ? "" : node.domain() + ".") +
               node.op_type());
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) collect_ops(attribute.g(), ops);
      for (const auto& g : attribute.graphs()) collect_ops(g, ops);
    }
  }
}

std::set<std::string> model_ops(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto proto;
  std::set<std::string> ops;
  if (proto.ParseFromIstream(&in)) collect_ops(proto.graph(), ops);
  return ops;
}

CaseResult run_case(const BackendCase& test_case) {
  CaseResult result;
  result.ops = model_ops(test_case.dir + "/model.onnx");
  std::unique_ptr<Model> model;
  try {
    model = import_onnx_file(test_case.dir + "/model.onnx");
    verify_model(*model);
  } catch (const Error& e) {
    result.outcome = e.kind() == ErrorKind::kUnsupported ? Outcome::kUnsupported : Outcome::kFailed;
    result.detail = cat("import: ", e.what());
    return result;
  }
  std::vector<fs::path> data_sets;
  for (const std::string& set : testing::backend_data_sets(test_case.dir)) data_sets.push_back(set);
  const Graph& graph = *model->graph;
  for (const auto& data_set : data_sets) {
    std::map<std::string, Tensor> inputs;
    try {
      inputs = testing::read_backend_inputs(data_set.string(), graph);
    } catch (const Error& e) {
      result.outcome = Outcome::kFailed;
      result.detail = cat(data_set.filename().string(), ": ", e.what());
      return result;
    }
    std::vector<Tensor> outputs;
    try {
      outputs = evaluate(graph, inputs);
    } catch (const Error& e) {
      result.outcome = e.kind() == ErrorKind::kUnsupported ? Outcome::kUnsupported : Outcome::kFailed;
      result.detail = cat(data_set.filename().string(), ": ", e.what());
      return result;
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::optional<Tensor> stored = testing::read_backend_output(data_set.string(), i, graph);
      if (!stored) continue;
      const Tensor& expected = *stored;
      testing::Comparison comparison = testing::compare_values(outputs[i], expected, kTolerance);
      if (!comparison.ok) {
        result.outcome = Outcome::kFailed;
        result.detail = cat(data_set.filename().string(), " output ", i, " '",
                            graph.outputs()[i]->name(), "': ", comparison.message);
        return result;
      }
    }
  }
  return result;
}

class OnnxBackend : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OnnxBackend, MatchesStoredOutputs) {
  const BackendCase& test_case = GetParam();
  CaseResult result = run_case(test_case);
  auto expected = expected_failures().find(test_case.name);
  result.expected_failure = expected != expected_failures().end();
  results()[test_case.suite + "/" + test_case.name] = result;
  // An unsupported case is skipped only when out_of_scope.txt says why; any other refusal is work
  // left, and fails (docs/operators.md lists none).
  if (result.outcome == Outcome::kUnsupported) {
    if (!g_out_of_scope_path.empty() && out_of_scope_reason(result).empty()) {
      ADD_FAILURE() << test_case.dir << " is refused but uses no out-of-scope op or refusal "
                    << "(tests/onnx_backend/out_of_scope.txt): " << result.detail;
      return;
    }
    GTEST_SKIP() << result.detail;
  }
  if (result.expected_failure) {
    EXPECT_EQ(result.outcome, Outcome::kFailed)
        << test_case.name << " is listed in expected_failures.txt (" << expected->second
        << ") but now passes: remove it from the list";
    return;
  }
  EXPECT_EQ(result.outcome, Outcome::kPassed) << test_case.dir << ": " << result.detail;
}

std::string case_name(const ::testing::TestParamInfo<BackendCase>& info) {
  return testing::backend_case_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Cases, OnnxBackend,
                         ::testing::ValuesIn(testing::discover_backend_cases(g_suites)),
                         case_name);

// docs/operators.md: one row per op that rnnc supports or that any case uses.
void write_report(const std::string& path) {
  struct Row {
    int cases = 0, passed = 0, failed = 0, expected_failures = 0, unsupported = 0;
  };
  std::map<std::string, Row> rows;
  for (const OpSchema* schema : all_op_schemas()) rows[schema->op_type];
  int total = 0, passed = 0, failed = 0, expected = 0, unsupported = 0;
  std::map<std::string, int> out_of_scope_ops;  // op -> cases
  std::map<std::string, int> out_of_scope_refusals;
  std::vector<std::pair<std::string, std::string>> work_left;  // case, refusal
  for (const auto& [name, result] : results()) {
    ++total;
    if (result.outcome == Outcome::kPassed) ++passed;
    if (result.outcome == Outcome::kFailed) ++(result.expected_failure ? expected : failed);
    if (result.outcome == Outcome::kUnsupported) {
      ++unsupported;
      const std::string reason = out_of_scope_reason(result);
      if (reason.empty()) {
        work_left.emplace_back(name, result.detail);
      } else {
        bool by_op = false;
        for (const auto& op : result.ops) {
          if (out_of_scope().ops.count(op)) {
            ++out_of_scope_ops[op];
            by_op = true;
          }
        }
        if (!by_op) ++out_of_scope_refusals[reason];
      }
    }
    for (const auto& op : result.ops) {
      Row& row = rows[op];
      ++row.cases;
      if (result.outcome == Outcome::kPassed) ++row.passed;
      if (result.outcome == Outcome::kUnsupported) ++row.unsupported;
      if (result.outcome == Outcome::kFailed) {
        ++(result.expected_failure ? row.expected_failures : row.failed);
      }
    }
  }
  std::ofstream out(path);
  out << "# Operator status\n\n"
      << "Generated by `scripts/gen-operators-doc.sh` from the ONNX backend test cases in "
      << "libonnx-testdata (suites: " << g_suites << "), run through the reference evaluator with "
      << "rtol " << kTolerance.rtol << ", atol " << kTolerance.atol
      << ". Do not edit by hand: a ctest check fails when this file is stale.\n\n"
      << "Cases: " << total << " total, " << passed << " passed, " << failed << " failed, "
      << expected << " expected failures (listed below), " << unsupported
      << " skipped as unsupported: " << unsupported - static_cast<int>(work_left.size())
      << " out of scope (listed below with the reason), " << work_left.size()
      << " work left (listed below with the refusal).\n\n"
      << "A case counts for every op its model uses, so a case with Add and MatMul appears in "
      << "both rows. *Unsupported* cases use an op or feature rnnc rejects at import.\n\n"
      << "| Op | rnnc | cases | passed | failed (expected) | unsupported |\n"
      << "|---|---|---|---|---|---|\n";
  for (const auto& [op, row] : rows) {
    bool supported = op.find('.') == std::string::npos && find_op_schema("", op) != nullptr;
    out << "| " << op << " | " << (supported ? "yes" : "no") << " | " << row.cases << " | "
        << row.passed << " | " << row.failed + row.expected_failures;
    if (row.expected_failures) out << " (" << row.expected_failures << ")";
    out << " | " << row.unsupported << " |\n";
  }
  out << "\n## Out of scope\n\nFrom `tests/onnx_backend/out_of_scope.txt` (a case counts once "
      << "per out-of-scope op it uses):\n\n| Op or feature | cases | reason |\n|---|---|---|\n";
  for (const auto& [op, cases] : out_of_scope_ops) {
    out << "| " << op << " | " << cases << " | " << out_of_scope().ops.at(op) << " |\n";
  }
  for (const auto& [reason, cases] : out_of_scope_refusals) {
    out << "| (refusal) | " << cases << " | " << reason << " |\n";
  }
  out << "\n## Work left\n\nUnsupported cases that use no out-of-scope op, with the refusal "
      << "that skips each";
  if (work_left.empty()) {
    out << ": none.\n";
  } else {
    out << ":\n\n";
    for (const auto& [name, refusal] : work_left) {
      // "import: /usr/share/.../model.onnx: X" -> "X": the case's name says which model.
      const size_t model = refusal.find("model.onnx: ");
      out << "- `" << name << "`: "
          << (model == std::string::npos ? refusal : refusal.substr(model + 12)) << "\n";
    }
  }
  if (!expected_failures().empty()) {
    out << "\n## Expected failures\n\nFrom `tests/onnx_backend/expected_failures.txt`:\n\n";
    for (const auto& [name, reason] : expected_failures()) out << "- `" << name << "`: " << reason << "\n";
  }
}

class ReportEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!g_report_path.empty()) write_report(g_report_path);
  }
};

}  // namespace
}  // namespace rnnc

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--suite=", 0) == 0) rnnc::g_suites = arg.substr(8);
    else if (arg.rfind("--report=", 0) == 0) rnnc::g_report_path = arg.substr(9);
    else if (arg.rfind("--expected-failures=", 0) == 0) rnnc::g_expected_failures_path = arg.substr(20);
    else if (arg.rfind("--out-of-scope=", 0) == 0) rnnc::g_out_of_scope_path = arg.substr(15);
    else rest.push_back(argv[i]);
  }
  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);  // argv is null-terminated
  ::testing::InitGoogleTest(&rest_argc, rest.data());
  ::testing::AddGlobalTestEnvironment(new rnnc::ReportEnvironment);
  return RUN_ALL_TESTS();
}
