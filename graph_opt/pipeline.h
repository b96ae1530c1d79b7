// The graph_opt pipeline: runs named passes over a Model, with IR printing after passes, the IR
// verifier after each pass, and per-pass statistics.
#pragma once

#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "graph_opt/pass.h"

namespace rnnc {

// One step of a pipeline: its passes run in order; with max_rounds > 1 the group repeats until a
// round changes nothing (folding can expose an If condition, inlining can expose more folding).
struct PipelineStep {
  std::vector<std::string> passes;
  int max_rounds = 1;
};

struct OptimizeOptions {
  std::vector<std::string> passes;        // empty: default_pipeline() / lowering_pipeline()
  bool for_lowering = false;              // run lowering_pipeline() (adds annotation passes)
  bool print_after_all = false;
  std::set<std::string> print_after;      // pass names
  bool verify_each = true;                // the IR verifier after every pass
  std::ostream* log = nullptr;            // where printing goes (required if printing)
  PassContext context;
};

struct PassReport {
  std::string name;
  bool changed = false;
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  double microseconds = 0;
  PassStats stats;
};

// The compiler's story at the graph level, in order: what `rnnc optimize` writes back as ONNX.
std::vector<PipelineStep> default_pipeline();
// default_pipeline() plus the passes that only annotate for lowering (layout views, fusion
// groups): their rnnc.* annotations are not ONNX, so `rnnc optimize` does not run them.
std::vector<PipelineStep> lowering_pipeline();

// Runs the passes; an unknown pass name is kInvalidInput listing the known ones.
std::vector<PassReport> optimize(Model& model, const OptimizeOptions& options);

// "dce: 12 -> 9 nodes (nodes removed: 3) 0.1 ms" per pass.
void print_reports(const std::vector<PassReport>& reports, std::ostream& out);

}  // namespace rnnc
