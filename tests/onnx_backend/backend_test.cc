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
#include "tests/support/compare.h"

namespace fs = std::filesystem;

namespace rnnc {
namespace {

const char* kDataRoot = "/usr/share/libonnx-testdata/data";
constexpr testing::Tolerance kTolerance{1e-3, 1e-7};

std::string g_suites = "node,pytorch-converted,pytorch-operator,simple";
std::string g_report_path;
std::string g_expected_failures_path;

struct BackendCase {
  std::string suite;
  std::string name;
  std::string dir;
};

// How gtest names a case in its messages.
void PrintTo(const BackendCase& test_case, std::ostream* out) {
  *out << test_case.suite << "/" << test_case.name;
}

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

const std::map<std::string, std::string>& expected_failures() {
  static const auto table = load_expected_failures();
  return table;
}

std::vector<BackendCase> discover_cases() {
  std::vector<BackendCase> cases;
  std::stringstream suites(g_suites);
  std::string suite;
  while (std::getline(suites, suite, ',')) {
    fs::path dir = fs::path(kDataRoot) / suite;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (fs::exists(entry.path() / "model.onnx")) {
        cases.push_back({suite, entry.path().filename().string(), entry.path().string()});
      }
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const auto& a, const auto& b) { return a.suite + a.name < b.suite + b.name; });
  return cases;
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

// ONNX 1.12's test data stores bfloat16 tensors with data_type UINT16 (the same bits). Read such a
// tensor as the bfloat16 the model declares.
Tensor as_declared_bfloat16(Tensor tensor, DType declared) {
  if (declared != DType::kBFloat16 || tensor.dtype() != DType::kUInt16) return tensor;
  Tensor bf16(DType::kBFloat16, tensor.shape());
  std::memcpy(bf16.raw_data(), tensor.raw_data(), tensor.nbytes());
  return bf16;
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
  for (const auto& entry : fs::directory_iterator(test_case.dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      data_sets.push_back(entry.path());
    }
  }
  std::sort(data_sets.begin(), data_sets.end());
  const Graph& graph = *model->graph;
  for (const auto& data_set : data_sets) {
    std::map<std::string, Tensor> inputs;
    for (size_t i = 0;; ++i) {
      fs::path file = data_set / cat("input_", i, ".pb");
      if (!fs::exists(file)) break;
      std::string name;
      Tensor tensor = read_tensor_pb(file.string(), &name);
      bool named = graph.find_local_value(name) && graph.find_local_value(name)->is_graph_input();
      if (!named) {
        if (i >= graph.inputs().size()) {
          result.outcome = Outcome::kFailed;
          result.detail = cat(file.string(), ": more input files than graph inputs");
          return result;
        }
        name = graph.inputs()[i]->name();
      }
      tensor = as_declared_bfloat16(std::move(tensor), graph.find_local_value(name)->type.dtype);
      inputs[name] = std::move(tensor);
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
      fs::path file = data_set / cat("output_", i, ".pb");
      if (!fs::exists(file)) continue;
      Tensor expected = as_declared_bfloat16(read_tensor_pb(file.string()), outputs[i].dtype());
      testing::Comparison comparison = testing::compare_tensors(outputs[i], expected, kTolerance);
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
  if (result.outcome == Outcome::kUnsupported) {
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
  std::string name = info.param.suite + "_" + info.param.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, OnnxBackend, ::testing::ValuesIn(discover_cases()), case_name);

// docs/operators.md: one row per op that rnnc supports or that any case uses.
void write_report(const std::string& path) {
  struct Row {
    int cases = 0, passed = 0, failed = 0, expected_failures = 0, unsupported = 0;
  };
  std::map<std::string, Row> rows;
  for (const OpSchema* schema : all_op_schemas()) rows[schema->op_type];
  int total = 0, passed = 0, failed = 0, expected = 0, unsupported = 0;
  for (const auto& [name, result] : results()) {
    ++total;
    if (result.outcome == Outcome::kPassed) ++passed;
    if (result.outcome == Outcome::kFailed) ++(result.expected_failure ? expected : failed);
    if (result.outcome == Outcome::kUnsupported) ++unsupported;
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
      << " skipped as unsupported.\n\n"
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
    else rest.push_back(argv[i]);
  }
  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);  // argv is null-terminated
  ::testing::InitGoogleTest(&rest_argc, rest.data());
  ::testing::AddGlobalTestEnvironment(new rnnc::ReportEnvironment);
  return RUN_ALL_TESTS();
}
