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
  std::vector<std::string> passes;        // run these, each once, in order
  std::vector<PipelineStep> steps;        // else these (lowering_passes())
  bool for_lowering = false;              // else lowering_pipeline(), or default_pipeline()
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
// The passes that prepare an optimized graph for lowering: quantized weights become annotated
// float constants, layout ops become views, elementwise chains fusion groups. Their rnnc.*
// annotations are not ONNX, so `rnnc optimize` does not run them; the compiler runs them after
// default_pipeline() and quantization (compiler/compile.h).
std::vector<PipelineStep> lowering_passes();
// default_pipeline() then lowering_passes() in one list: the graph-level steps of a compile that
// quantizes nothing (tests run them on a model in one call).
std::vector<PipelineStep> lowering_pipeline();

// How many times optimize() has run default_pipeline() (alone or in lowering_pipeline()) in this
// process, on any thread: a compile runs it once (tests/runtime/compile_pipeline_test.cc).
int64_t default_pipeline_runs();

// Runs the passes; an unknown pass name is kInvalidInput listing the known ones.
std::vector<PassReport> optimize(Model& model, const OptimizeOptions& options);

// "dce: 12 -> 9 nodes (nodes removed: 3) 0.1 ms" per pass.
void print_reports(const std::vector<PassReport>& reports, std::ostream& out);

}  // namespace rnnc
