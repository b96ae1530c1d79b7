// rnnc_conform's command: the generated ONNX conformance suite (tests/conformance/).
//   rnnc_conform gen --op LSTM --profile full --count 500 --out DIR [--seed N]
//   rnnc_conform run DIR [--ort --findings FILE] [--report FILE.md]
//   rnnc_conform specs [--op OP]
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "ir/error.h"
#include "ir/op_schema.h"
#include "tests/conformance/generator.h"
#include "tests/conformance/runner.h"
#include "tests/conformance/spec.h"
#include "tools/cli.h"

namespace rnnc::cli {

namespace {

using namespace rnnc::conformance;

// A one-line progress display that rewrites itself, shown only when stderr is a terminal.
class Progress {
 public:
  Progress() : enabled_(isatty(2) != 0) {}
  ~Progress() { clear(); }
  void show(const std::string& text) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    std::string line = text.substr(0, 100);
    std::cerr << "\r" << line << std::string(width_ > line.size() ? width_ - line.size() : 0, ' ')
              << std::flush;
    width_ = line.size();
  }
  void clear() {
    if (!enabled_ || width_ == 0) return;
    std::cerr << "\r" << std::string(width_, ' ') << "\r" << std::flush;
    width_ = 0;
  }

 private:
  bool enabled_;
  size_t width_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

std::vector<const OpSpec*> selected_specs(const std::string& ops) {
  std::vector<const OpSpec*> specs;
  if (ops == "all") {
    for (const OpSpec& spec : all_specs()) specs.push_back(&spec);
    return specs;
  }
  std::stringstream list(ops);
  std::string op;
  while (std::getline(list, op, ',')) {
    const OpSpec* spec = find_spec(op);
    if (!spec) {
      raise_invalid_input(
          cat("--op: no conformance spec for '", op, "' (rnnc_conform specs lists them)"));
    }
    specs.push_back(spec);
  }
  return specs;
}

std::set<std::string> op_filter(const Parsed& args) {
  std::set<std::string> ops;
  if (!args.has("op") || args.get("op") == "all") return ops;
  std::stringstream list(args.get("op"));
  std::string op;
  while (std::getline(list, op, ',')) ops.insert(op);
  return ops;
}

int run_gen(const Parsed& args) {
  if (args.positional.size() != 1) raise_invalid_input("gen takes no positional arguments");
  if (!args.has("out")) raise_invalid_input("gen needs --out DIR");
  if (!args.has("op")) raise_invalid_input("gen needs --op OP[,OP...] or --op all");
  GenOptions options;
  std::string profile = args.get("profile", "smoke");
  if (profile != "smoke" && profile != "full") {
    raise_invalid_input(cat("--profile must be smoke or full, got '", profile, "'"));
  }
  options.profile = profile == "smoke" ? Profile::kSmoke : Profile::kFull;
  options.count = static_cast<int>(args.get_int("count", 200));
  if (options.count < 1) raise_invalid_input("--count must be >= 1");
  int64_t seed = args.get_int("seed", 1);
  if (seed < 0) raise_invalid_input("--seed must be >= 0");
  options.seed = static_cast<uint64_t>(seed);
  options.out_dir = args.get("out");
  std::filesystem::create_directories(options.out_dir);
  std::vector<const OpSpec*> specs = selected_specs(args.get("op"));

  Progress progress;
  options.progress = [&](const std::string& op, int done, int total) {
    progress.show(cat("gen ", op, " ", done, "/", total));
  };
  auto start = std::chrono::steady_clock::now();
  int written = 0;
  int failures = 0;
  bool verbose = args.has("verbose");
  for (const OpSpec* spec : specs) {
    OpGenReport report = generate_op(*spec, options);
    progress.clear();
    CoverageUniverse universe = coverage_universe(*spec);
    std::cout << std::left << std::setw(22) << spec->op_type << std::right << std::setw(5)
              << report.written << " tests   types " << std::left << std::setw(7)
              << report.coverage.types_text(universe) << " ranks " << std::setw(5)
              << report.coverage.ranks_text(universe) << " boundaries "
              << report.coverage.boundaries_text(universe);
    if (!report.failures.empty()) std::cout << "   " << report.failures.size() << " FAILED";
    std::cout << "\n";
    size_t shown = verbose ? report.failures.size() : std::min<size_t>(3, report.failures.size());
    for (size_t k = 0; k < shown; ++k) std::cout << "    " << report.failures[k] << "\n";
    if (verbose) {
      for (const auto& [tag, count] : report.coverage.tag_counts()) {
        std::cout << "    " << std::setw(5) << count << "  " << tag << "\n";
      }
    }
    written += report.written;
    failures += static_cast<int>(report.failures.size());
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << written << " tests of " << specs.size() << " ops (" << profile << ", seed "
            << options.seed << ") in " << options.out_dir << ", " << std::fixed
            << std::setprecision(1) << seconds << " s";
  if (failures) std::cout << "; " << failures << " generation attempts FAILED (see above)";
  std::cout << "\n";
  return failures ? 1 : 0;
}

int run_run(const Parsed& args) {
  if (args.positional.size() != 2) raise_invalid_input("run expects one DIR argument");
  RunOptions options;
  options.dir = args.positional[1];
  options.reference = !args.has("no-reference");
  options.compiled = args.has("compiled");
  options.cache_dir = args.get("cache-dir");
  options.ort = args.has("ort");
  options.ort_worker = args.get("ort-worker");
  options.findings_path = args.get("findings");
  options.ops = op_filter(args);
  options.scratch_dir = args.get("scratch");
  options.results_path = args.get("results");
  if (!options.reference && !options.ort && !options.compiled) {
    raise_invalid_input("no engine left to run");
  }
  Progress progress;
  options.progress = [&](int done, int total, const std::string& test) {
    progress.show(cat("run ", done, "/", total, " ", test));
  };
  auto start = std::chrono::steady_clock::now();
  RunReport report = run_suite(options);
  progress.clear();
  print_report(report, std::cout, args.has("verbose"));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << std::fixed << std::setprecision(1) << seconds << " s\n";
  if (args.has("report")) {
    std::string preamble = args.get("report-preamble");
    write_markdown_report(report, args.get("report"), preamble);
    std::cout << "wrote " << args.get("report") << "\n";
  }
  return report.ok() ? 0 : 1;
}

std::string type_names(const std::vector<DType>& types) {
  std::string text;
  for (DType type : types) text += (text.empty() ? "" : " ") + std::string(dtype_name(type));
  return text;
}

std::string interval_text(const std::vector<Interval>& ranges) {
  std::string text;
  for (const Interval& r : ranges) text += cat(text.empty() ? "" : " ", "[", r.lo, ", ", r.hi, "]");
  return text;
}

int run_specs(const Parsed& args) {
  std::string ops = args.get("op", "all");
  std::vector<const OpSpec*> specs = selected_specs(ops);
  if (ops == "all") {
    // Every op rnnc registers must have a spec.
    for (const OpSchema* schema : all_op_schemas()) {
      if (!find_spec(schema->op_type)) std::cout << "NO SPEC: " << schema->op_type << "\n";
    }
  }
  for (const OpSpec* spec : specs) {
    std::cout << spec->op_type << "  opsets";
    for (int opset : spec->opsets) std::cout << " " << opset;
    if (!spec->special_case.empty()) std::cout << "  special case '" << spec->special_case << "'";
    if (spec->broadcast == Broadcast::kMultidirectional)
      std::cout << "  multidirectional broadcast";
    if (spec->broadcast == Broadcast::kUnidirectional) std::cout << "  unidirectional broadcast";
    std::cout << "\n";
    for (const TypeVar& var : spec->type_vars) {
      std::cout << "  type " << var.name << ": " << type_names(var.types) << "\n";
    }
    for (const AttrSpec& attr : spec->attributes) {
      std::cout << "  attr " << attr.name << (attr.required ? " (required)" : "") << " default "
                << (attr.onnx_default.empty() ? "-" : attr.onnx_default);
      if (attr.by_special_case) std::cout << "  set by the special case";
      if (!attr.ranges.empty()) std::cout << "  " << interval_text(attr.ranges);
      for (const auto& choice : attr.choices) std::cout << " " << choice;
      if (attr.since_opset) std::cout << "  since " << attr.since_opset;
      if (attr.until_opset) std::cout << "  until " << attr.until_opset;
      std::cout << "\n";
    }
    for (const auto* list : {&spec->inputs, &spec->outputs}) {
      for (const OperandSpec& op : *list) {
        std::cout << (list == &spec->inputs ? "  in  " : "  out ") << op.name << ": "
                  << op.type_var;
        if (list == &spec->inputs) {
          std::cout << " rank " << op.min_rank << ".." << op.max_rank;
          if (op.distribution == Distribution::kNormal) {
            std::cout << " normal(" << op.mean << ", " << op.stddev << ")";
          } else if (op.distribution == Distribution::kUniform) {
            std::cout << " uniform " << interval_text(op.ranges);
          } else {
            std::cout << " values by special case";
          }
        }
        if (op.optional) std::cout << " optional";
        if (op.variadic) std::cout << " variadic " << op.min_count << ".." << op.max_count;
        if (op.rank_exceeds_axis) std::cout << " rank>axis";
        if (!op.zero_dims) std::cout << " no-zero-dims";
        if (op.nonzero == NonZero::kAll) std::cout << " nonzero";
        if (op.nonzero == NonZero::kIntegerTypes) std::cout << " nonzero(integers)";
        if (op.special_values) std::cout << " nan/inf/huge/tiny";
        if (op.may_be_constant) std::cout << " may-be-constant";
        if (op.since_opset) std::cout << " since " << op.since_opset;
        if (op.until_opset) std::cout << " until " << op.until_opset;
        std::cout << "\n";
      }
    }
    if (!spec->note.empty()) std::cout << "  note: " << spec->note << "\n";
  }
  return 0;
}

int run_conform(const Parsed& args) {
  if (args.positional.empty()) raise_invalid_input("expects a subcommand: gen, run or specs");
  const std::string& sub = args.positional[0];
  if (sub == "gen") return run_gen(args);
  if (sub == "run") return run_run(args);
  if (sub == "specs") return run_specs(args);
  raise_invalid_input(cat("unknown subcommand '", sub, "' (gen, run or specs)"));
}

}  // namespace

extern const Command kConformCommand;
const Command kConformCommand{
    "rnnc_conform",
    "rnnc_conform gen --op OP[,OP...]|all [--profile smoke|full] [--count N] --out DIR "
    "[--seed N]\n"
    "       rnnc_conform run DIR [--compiled] [--ort --findings FILE] [--op OPS] "
    "[--report FILE.md]\n"
    "       rnnc_conform specs [--op OP]",
    "The generated ONNX conformance suite (tests/conformance).\n"
    "gen writes tests in the ONNX backend layout (DIR/<op>_<profile>_<index>/model.onnx,\n"
    "test_data_set_0/{input,output}_*.pb) with expected outputs from the reference evaluator;\n"
    "smoke fixes each op's attributes at one random instance, full draws them per test.\n"
    "run checks each test through the reference evaluator (reloaded from disk), with --compiled\n"
    "rnnc's compiled path and with --ort ONNX Runtime, and prints per-op pass/fail and\n"
    "type/rank/boundary coverage; it fails on any failure or any ONNX Runtime disagreement the\n"
    "--findings list does not explain. specs prints the operator specs.",
    {
        {"op", "OPS", "gen/specs: ops to generate (comma-separated, or all); run: only these"},
        {"profile", "NAME", "gen: smoke (default) or full"},
        {"count", "N", "gen: tests per op (default 200)"},
        {"out", "DIR", "gen: output folder"},
        {"seed", "N", "gen: random seed (default 1)"},
        {"compiled", "", "run: also run every test through rnnc's compiled (optimized) path"},
        {"cache-dir", "DIR", "run: the compiled path's kernel cache (default as rnnc run)"},
        {"ort", "", "run: also run every test in ONNX Runtime (rnnc_conform_ort worker)"},
        {"ort-worker", "PATH", "run: the rnnc_conform_ort executable (default: the one built)"},
        {"findings", "FILE", "run: known ONNX Runtime disagreement classes (ort_findings.txt)"},
        {"no-reference", "", "run: skip the reference evaluator (self-consistency) check"},
        {"report", "FILE.md",
         "run: write the per-op summary as Markdown (between the "
         "<!-- conform:begin/end --> markers if the file has them)"},
        {"report-preamble", "TEXT", "run: a line to put above the Markdown summary"},
        {"results", "FILE.tsv", "run: write every test's outcome per engine, with its features"},
        {"scratch", "DIR", "run: where the ORT worker writes outputs (default: a temp folder)"},
        {"verbose", "",
         "gen: every failure and feature counts; run: missing coverage, "
         "finding examples, ORT's missing kernels"},
    },
    run_conform,
};

}  // namespace rnnc::cli
