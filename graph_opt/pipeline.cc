#include "graph_opt/pipeline.h"

#include <chrono>
#include <iomanip>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace rnnc {

std::vector<std::string> default_pipeline() {
  return {
      "dce",  // drop what no output depends on
  };
}

std::vector<PassReport> optimize(Model& model, const OptimizeOptions& options) {
  std::vector<std::string> names = options.passes.empty() ? default_pipeline() : options.passes;
  std::vector<const PassInfo*> passes;
  for (const auto& name : names) {
    const PassInfo* pass = find_pass(name);
    if (!pass) {
      std::string known;
      for (const PassInfo& p : all_passes()) known += (known.empty() ? "" : ", ") + std::string(p.name);
      raise_invalid_input(cat("unknown pass '", name, "' (passes: ", known, ")"));
    }
    passes.push_back(pass);
  }
  std::vector<PassReport> reports;
  for (const PassInfo* pass : passes) {
    PassReport report;
    report.name = pass->name;
    report.nodes_before = count_nodes(*model.graph);
    auto start = std::chrono::steady_clock::now();
    report.changed = pass->run(model, options.context, report.stats);
    report.microseconds =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    report.nodes_after = count_nodes(*model.graph);
    if (options.verify_each) {
      try {
        verify_model(model);
      } catch (const Error& e) {
        raise(ErrorKind::kInternal, cat("IR verifier failed after pass '", pass->name, "': ",
                                        e.what()));
      }
    }
    if (options.print_after_all || options.print_after.count(pass->name)) {
      RNNC_CHECK(options.log, "IR printing requested without a log stream");
      *options.log << "// ---- IR after " << pass->name << (report.changed ? "" : " (unchanged)")
                   << " ----\n"
                   << to_text(model);
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

void print_reports(const std::vector<PassReport>& reports, std::ostream& out) {
  for (const PassReport& report : reports) {
    out << std::left << std::setw(24) << report.name << report.nodes_before << " -> "
        << report.nodes_after << " nodes";
    if (!report.stats.empty()) {
      out << " (";
      bool first = true;
      for (const auto& [name, count] : report.stats) {
        out << (first ? "" : ", ") << name << ": " << count;
        first = false;
      }
      out << ")";
    }
    out << std::fixed << std::setprecision(2) << "  " << report.microseconds / 1000.0 << " ms\n"
        << std::defaultfloat;
  }
}

}  // namespace rnnc
