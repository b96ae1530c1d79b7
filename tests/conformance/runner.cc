#include "tests/conformance/runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <sstream>

#include "ir/error.h"
#include "ir/onnx_import.h"
#include "tests/conformance/engine.h"
#include "tests/conformance/spec.h"
#include "tests/support/compare.h"

namespace fs = std::filesystem;

namespace rnnc::conformance {

namespace {

constexpr size_t kFailuresKept = 5;

testing::Tolerance engine_tolerance(DType dtype, double scale) {
  switch (dtype) {
    case DType::kFloat64:
      return {1e-6 * scale, 1e-9 * scale};
    case DType::kFloat32:
      return {1e-4 * scale, 1e-5 * scale};
    case DType::kFloat16:
      return {1e-2 * scale, 1e-3 * scale};
    case DType::kBFloat16:
      return {2e-2 * scale, 1e-2 * scale};
    default:
      return {0, 0};
  }
}

struct Verdict {
  std::string outcome;  // pass, mismatch, error, crash, unsupported
  std::string message;
};

Verdict judge(const EngineResult& result, const TestFiles& test, bool exact, double scale) {
  switch (result.status) {
    case EngineResult::Status::kError:
      return {"error", result.message};
    case EngineResult::Status::kCrash:
      return {"crash", result.message};
    case EngineResult::Status::kUnsupported:
      return {"unsupported", result.message};
    case EngineResult::Status::kOk:
      break;
  }
  if (result.outputs.size() != test.expected.size()) {
    return {"mismatch", cat(result.outputs.size(), " outputs, expected ", test.expected.size())};
  }
  for (size_t i = 0; i < test.expected.size(); ++i) {
    const Tensor& expected = test.expected[i];
    testing::Tolerance tolerance =
        exact ? testing::Tolerance{0, 0} : engine_tolerance(expected.dtype(), scale);
    testing::Comparison comparison =
        testing::compare_tensors(result.outputs[i], expected, tolerance);
    if (!comparison.ok) return {"mismatch", cat("output ", i, ": ", comparison.message)};
  }
  return {"pass", ""};
}

TestMeta load_meta(const std::string& dir) {
  fs::path path = fs::path(dir) / "conform.txt";
  if (fs::exists(path)) return read_meta(path.string());
  TestMeta meta;
  meta.name = fs::path(dir).filename().string();
  meta.op = "?";
  try {
    auto model = import_onnx_file((fs::path(dir) / "model.onnx").string());
    if (!model->graph->nodes().empty()) meta.op = model->graph->nodes().front()->op_type();
  } catch (const Error&) {
  }
  return meta;
}

// "Could not find an implementation for Erf(13) node with name 'Erf'" -> the kernel lookup part.
std::string unsupported_reason(const std::string& message) {
  std::string reason = message.substr(0, message.find(" node with name"));
  size_t colon = reason.find(": ");
  if (colon != std::string::npos && reason.rfind("ORT_", 0) == 0) reason = reason.substr(colon + 2);
  return reason.substr(0, 120);
}

}  // namespace

bool RunReport::ok() const {
  for (const auto& [op, summary] : ops) {
    for (const auto& [engine, counts] : summary.engines) {
      if (counts.failed) return false;
    }
  }
  return true;
}

RunReport run_suite(const RunOptions& options) {
  RunReport report;
  // A scratch folder of our own is removed at the end, after the engines that write into it
  // (declared first, destroyed last).
  struct OwnScratch {
    std::string path;
    ~OwnScratch() {
      std::error_code ignored;
      if (!path.empty()) fs::remove_all(path, ignored);
    }
  } own_scratch;
  std::vector<std::unique_ptr<Engine>> engines;
  if (options.reference) engines.push_back(make_reference_engine());
  if (options.compiled) engines.push_back(make_compiled_engine(options.cache_dir));
  if (options.ort) {
    std::string worker = options.ort_worker.empty() ? default_ort_worker() : options.ort_worker;
    std::string scratch = options.scratch_dir;
    if (scratch.empty()) {
      scratch = (fs::temp_directory_path() / cat("rnnc_conform_", getpid())).string();
      own_scratch.path = scratch;
    }
    engines.push_back(make_ort_engine(worker, scratch));
    if (options.findings_path.empty()) {
      raise_invalid_input("--ort needs --findings FILE (the known disagreement classes)");
    }
  }
  // Known disagreement classes of the non-reference engines (ONNX Runtime's, or the compiled
  // path's float32 arithmetic at the edges of the float range).
  if (!options.findings_path.empty()) report.findings = load_findings(options.findings_path);
  for (const auto& engine : engines) report.engines.push_back(engine->name());

  std::vector<std::string> dirs = find_tests(options.dir);
  std::vector<std::pair<std::string, TestMeta>> selected;
  for (const auto& dir : dirs) {
    TestMeta meta = load_meta(dir);
    if (!options.ops.empty() && !options.ops.count(meta.op)) continue;
    selected.emplace_back(dir, meta);
  }
  std::ofstream results;
  if (!options.results_path.empty()) {
    results.open(options.results_path);
    if (!results) raise(ErrorKind::kIo, cat("cannot write '", options.results_path, "'"));
    results << "test\top\tengine\toutcome\tfinding\tmessage\tfeatures\n";
  }
  int done = 0;
  for (const auto& [dir, meta] : selected) {
    if (options.progress) options.progress(done, static_cast<int>(selected.size()), meta.name);
    OpSummary& summary = report.ops[meta.op];
    summary.op = meta.op;
    summary.coverage.add(meta);
    ++report.tests;
    const OpSpec* spec = find_spec(meta.op);
    double scale = spec ? spec->tolerance_scale : 1;
    TestFiles test;
    try {
      test = read_test(dir);
    } catch (const Error& e) {
      for (const auto& engine : engines) {
        EngineCounts& counts = summary.engines[engine->name()];
        ++counts.failed;
        if (counts.failures.size() < kFailuresKept) {
          counts.failures.push_back(cat(meta.name, ": unreadable test data: ", e.what()));
        }
      }
      ++done;
      continue;
    }
    for (const auto& engine : engines) {
      bool is_reference = engine->name() == "reference";
      EngineCounts& counts = summary.engines[engine->name()];
      Verdict verdict = judge(engine->run(test), test, is_reference, scale);
      const Finding* finding =
          is_reference || verdict.outcome == "pass" || verdict.outcome == "unsupported"
              ? nullptr
              : match_finding(report.findings, meta, verdict.outcome, verdict.message);
      if (results.is_open()) {
        std::string features;
        for (const auto& feature : meta.features())
          features += (features.empty() ? "" : " ") + feature;
        results << meta.name << "\t" << meta.op << "\t" << engine->name() << "\t" << verdict.outcome
                << "\t" << (finding ? finding->id : "") << "\t" << verdict.message << "\t"
                << features << "\n";
      }
      if (verdict.outcome == "pass") {
        ++counts.passed;
        continue;
      }
      if (verdict.outcome == "unsupported" && !is_reference) {
        ++counts.unsupported;
        ++report.unsupported_reasons[meta.op + ": " + unsupported_reason(verdict.message)];
        continue;
      }
      if (finding) {
        ++counts.known;
        if (report.finding_hits[finding->id]++ == 0) {
          report.finding_example[finding->id] =
              cat(meta.name, ": ", verdict.outcome, ": ", verdict.message);
        }
        continue;
      }
      ++counts.failed;
      if (counts.failures.size() < kFailuresKept) {
        std::string features;
        for (const auto& tag : meta.tags) features += " " + tag;
        counts.failures.push_back(cat(meta.name, ": ", verdict.outcome, ": ", verdict.message, " [",
                                      meta.type_key(), features, "]"));
      }
    }
    ++done;
  }
  if (options.progress) options.progress(done, static_cast<int>(selected.size()), "");
  return report;
}

void print_report(const RunReport& report, std::ostream& out, bool verbose) {
  out << std::left << std::setw(22) << "op" << std::right << std::setw(6) << "tests";
  for (const auto& engine : report.engines) out << "  " << std::left << std::setw(34) << engine;
  out << std::left << std::setw(8) << "types" << std::setw(8) << "ranks"
      << "boundaries\n";
  for (const auto& [op, summary] : report.ops) {
    out << std::left << std::setw(22) << op << std::right << std::setw(6)
        << summary.coverage.tests();
    for (const auto& engine : report.engines) {
      auto it = summary.engines.find(engine);
      EngineCounts counts = it == summary.engines.end() ? EngineCounts{} : it->second;
      std::string text = cat(counts.passed, " pass");
      if (counts.failed) text += cat(", ", counts.failed, " FAIL");
      if (counts.known) text += cat(", ", counts.known, " known");
      if (counts.unsupported) text += cat(", ", counts.unsupported, " unsup");
      out << "  " << std::left << std::setw(34) << text;
    }
    const OpSpec* spec = find_spec(op);
    if (spec) {
      CoverageUniverse universe = coverage_universe(*spec);
      out << std::left << std::setw(8) << summary.coverage.types_text(universe) << std::setw(8)
          << summary.coverage.ranks_text(universe) << summary.coverage.boundaries_text(universe);
      if (verbose) {
        auto missing = summary.coverage.missing(universe);
        if (!missing.empty()) {
          out << "  missing:";
          for (const auto& item : missing) out << " " << item;
        }
      }
    }
    out << "\n";
  }
  bool any_failure = false;
  for (const auto& [op, summary] : report.ops) {
    for (const auto& [engine, counts] : summary.engines) {
      for (const auto& failure : counts.failures) {
        if (!any_failure) out << "\nfailures (first " << kFailuresKept << " per op and engine):\n";
        any_failure = true;
        out << "  [" << engine << "] " << failure << "\n";
      }
    }
  }
  if (!report.findings.empty()) {
    out << "\nknown ONNX Runtime disagreements:\n";
    for (const Finding& finding : report.findings) {
      auto it = report.finding_hits.find(finding.id);
      int hits = it == report.finding_hits.end() ? 0 : it->second;
      out << "  " << std::left << std::setw(32) << finding.id << std::right << std::setw(6) << hits
          << " tests";
      if (hits && verbose) out << "   e.g. " << report.finding_example.at(finding.id);
      out << "\n";
    }
  }
  if (verbose && !report.unsupported_reasons.empty()) {
    out << "\nnot implemented in ONNX Runtime (not disagreements):\n";
    for (const auto& [reason, count] : report.unsupported_reasons) {
      out << "  " << std::setw(5) << count << "  " << reason << "\n";
    }
  }
  int failed = 0;
  for (const auto& [op, summary] : report.ops) {
    for (const auto& [engine, counts] : summary.engines) failed += counts.failed;
  }
  out << "\n"
      << report.tests << " tests, " << report.ops.size() << " ops: "
      << (failed ? cat(failed, " unexplained failures") : std::string("all pass or are known"))
      << "\n";
}

void write_markdown_report(const RunReport& report, const std::string& path,
                           const std::string& preamble) {
  std::ostringstream md;
  md << preamble << "\n\n";
  bool compiled =
      std::find(report.engines.begin(), report.engines.end(), "compiled") != report.engines.end();
  md << "| op | tests | reference |" << (compiled ? " compiled |" : "")
     << " ONNX Runtime: agree | known | not impl. | unexplained | types | ranks | boundaries "
        "| not hit |\n"
     << "|---|---:|---:|" << (compiled ? "---:|" : "") << "---:|---:|---:|---:|---|---|---|---|\n";
  for (const auto& [op, summary] : report.ops) {
    auto counts = [&](const std::string& engine) {
      auto it = summary.engines.find(engine);
      return it == summary.engines.end() ? EngineCounts{} : it->second;
    };
    auto passes = [&](const std::string& engine) {
      EngineCounts c = counts(engine);
      return cat(c.passed, c.failed ? cat(" (", c.failed, " FAIL)") : std::string());
    };
    EngineCounts ort = counts("onnxruntime");
    md << "| " << op << " | " << summary.coverage.tests() << " | " << passes("reference") << " | ";
    if (compiled) md << passes("compiled") << " | ";
    md << ort.passed << " | " << ort.known << " | " << ort.unsupported << " | " << ort.failed
       << " | ";
    const OpSpec* spec = find_spec(op);
    if (spec) {
      CoverageUniverse universe = coverage_universe(*spec);
      md << summary.coverage.types_text(universe) << " | " << summary.coverage.ranks_text(universe)
         << " | " << summary.coverage.boundaries_text(universe) << " | ";
      std::string missing;
      for (const auto& item : summary.coverage.missing(universe)) {
        missing += (missing.empty() ? "" : ", ") + item;
      }
      md << missing;
    } else {
      md << " | | | ";
    }
    md << " |\n";
  }
  // The recurrent features issue 8 asks for, counted over the tests that have them.
  const std::vector<std::string> recurrent_features = {"direction=",
                                                       "layout=",
                                                       "in:sequence_lens",
                                                       "seq_lens_",
                                                       "clip",
                                                       "input_forget=",
                                                       "peepholes",
                                                       "linear_before_reset=",
                                                       "hidden_size_omitted",
                                                       "long_sequence",
                                                       "act:",
                                                       "activation_",
                                                       "default_",
                                                       "in:initial_",
                                                       "out:",
                                                       "const:"};
  bool recurrent_header = false;
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    auto it = report.ops.find(op);
    if (it == report.ops.end()) continue;
    if (!recurrent_header) {
      md << "\nRecurrent features (tests having each):\n\n| op | features |\n|---|---|\n";
      recurrent_header = true;
    }
    std::string features;
    for (const auto& [tag, count] : it->second.coverage.tag_counts()) {
      bool wanted = false;
      for (const auto& prefix : recurrent_features) wanted = wanted || tag.rfind(prefix, 0) == 0;
      if (wanted) features += cat(features.empty() ? "" : ", ", "`", tag, "` ", count);
    }
    md << "| " << op << " | " << features << " |\n";
  }
  if (!report.findings.empty()) {
    md << "\nONNX Runtime disagreement classes (tests/conformance/ort_findings.txt) and how many "
          "tests each explained in this run:\n\n"
       << "| class | op | outcome | tests |\n|---|---|---|---:|\n";
    for (const Finding& finding : report.findings) {
      auto it = report.finding_hits.find(finding.id);
      std::string ops;
      for (const auto& op : finding.ops) ops += (ops.empty() ? "" : ", ") + op;
      md << "| `" << finding.id << "` | " << (ops.empty() ? "any" : ops) << " | " << finding.outcome
         << " | " << (it == report.finding_hits.end() ? 0 : it->second) << " |\n";
    }
  }
  if (!report.unsupported_reasons.empty()) {
    md << "\nNot implemented in ONNX Runtime 1.30 (ORT_NOT_IMPLEMENTED; not disagreements):\n\n"
       << "| tests | kernel ORT lacks |\n|---:|---|\n";
    for (const auto& [reason, count] : report.unsupported_reasons) {
      std::string text = reason;
      for (char& c : text) {
        if (c == '|') c = '/';
      }
      md << "| " << count << " | " << text << " |\n";
    }
  }

  const std::string begin = "<!-- conform:begin -->", end = "<!-- conform:end -->";
  std::string existing;
  {
    std::ifstream in(path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    existing = buffer.str();
  }
  size_t b = existing.find(begin), e = existing.find(end);
  std::string text =
      b != std::string::npos && e != std::string::npos && b < e
          ? existing.substr(0, b + begin.size()) + "\n" + md.str() + existing.substr(e)
          : md.str();
  std::ofstream out(path);
  out << text;
  if (!out) raise(ErrorKind::kIo, cat("cannot write '", path, "'"));
}

}  // namespace rnnc::conformance
