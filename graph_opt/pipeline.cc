#include "graph_opt/pipeline.h"

#include <atomic>
#include <chrono>
#include <iomanip>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace rnnc {

std::vector<PipelineStep> default_pipeline() {
  return {
      {{"specialize"}},          // --fix inputs become constants, --dim axes become sizes
      {{"eliminate_identity"}},  // see through Identity and inference Dropout before folding
      {{"fold_constants",        // evaluate what depends only on constants (weight slices)
        "fold_shape_chains",     // shape values known as numbers; zero initial states omitted
        "inline_if",             // an If on a now-constant condition becomes its taken branch
        "eliminate_identity",    // Identities that inlined branches returned
        "fold_cache_updates"},   // cache writes (ScatterND, Slice of Concat) as copies of pieces
       /*max_rounds=*/8},
      {{"cse"}},                     // merge repeated subexpressions and identical constants
      {{"fuse_lstm_cell"}},          // an LSTM step written as equations becomes an LSTM node
      {{"canonicalize_recurrent"}},  // LSTM/GRU/RNN in the one form lowering reads
      {{"dce"}},                     // drop what no output depends on
  };
}

std::vector<PipelineStep> lowering_passes() {
  return {
      // ONNX Runtime's dynamically quantized MatMuls become annotated MatMuls.
      {{"fuse_integer_matmul"}},
      // ONNX Runtime's dynamically quantized Convs become float Convs over the same integers;
      // quantization feeding float arithmetic (those Convs' inputs, QDQ pairs) becomes float ops.
      {{"conv_integer_to_float"}},
      {{"expand_quantization"}},
      // Quantized weights become annotated float constants; what they fed folds after them.
      {{"fold_quantized_weights", "fold_constants"}, /*max_rounds=*/8},
      {{"dce"}},                   // the integer weights and scales no node reads any more
      {{"eliminate_layout_ops"}},  // layout ops at LSTM/GRU/RNN become views
      {{"fusion_groups"}},         // elementwise chains lowering fuses (last)
  };
}

std::vector<PipelineStep> lowering_pipeline() {
  std::vector<PipelineStep> steps = default_pipeline();
  for (PipelineStep& step : lowering_passes()) steps.push_back(std::move(step));
  return steps;
}

namespace {

std::atomic<int64_t> default_pipeline_count{0};

}  // namespace

int64_t default_pipeline_runs() { return default_pipeline_count.load(); }

namespace {

// Passes may replace a graph output by another value (a folded constant, an Identity's input).
// Users address outputs by name, so the names the model had must survive: the replacing value
// takes the old name, or, when it cannot be renamed (a graph input, or another output), an
// Identity under the old name is added.
void restore_output_names(Model& model, const std::vector<std::string>& names) {
  Graph& graph = *model.graph;
  std::vector<Value*> outputs = graph.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value* value = outputs[i];
    if (value->name() == names[i]) continue;
    // The old output may still exist under its name until dce removes it: move it aside.
    if (Value* holder = graph.find_local_value(names[i]); holder && !holder->is_graph_input()) {
      graph.rename_value(holder, graph.unique_name(names[i] + "_replaced"));
    }
    bool shared = value->is_graph_input() || value->owner() != &graph;
    for (size_t j = 0; j < outputs.size(); ++j) shared = shared || (j != i && outputs[j] == value);
    if (!shared && !graph.find_value(names[i])) {
      graph.rename_value(value, names[i]);
      continue;
    }
    Node* identity = graph.add_node("Identity", graph.unique_name("keep_output_name"), {value},
                                    {names[i]}, static_cast<int>(model.default_opset()));
    identity->output(0)->type = value->type;
    outputs[i] = identity->output(0);
  }
  graph.set_outputs(outputs);
}

}  // namespace

namespace {

PassReport run_pass(Model& model, const PassInfo& pass, const OptimizeOptions& options) {
  PassReport report;
  report.name = pass.name;
  report.nodes_before = count_nodes(*model.graph);
  std::vector<std::string> output_names;
  for (const Value* output : model.graph->outputs()) output_names.push_back(output->name());
  auto start = std::chrono::steady_clock::now();
  report.changed = pass.run(model, options.context, report.stats);
  restore_output_names(model, output_names);
  report.microseconds =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  report.nodes_after = count_nodes(*model.graph);
  if (options.verify_each) {
    try {
      verify_model(model);
    } catch (const Error& e) {
      raise(ErrorKind::kInternal, cat("IR verifier failed after pass '", pass.name, "': ",
                                      e.what()));
    }
  }
  if (options.print_after_all || options.print_after.count(pass.name)) {
    RNNC_CHECK(options.log, "IR printing requested without a log stream");
    *options.log << "// ---- IR after " << pass.name << (report.changed ? "" : " (unchanged)")
                 << " ----\n"
                 << to_text(model);
  }
  return report;
}

}  // namespace

std::vector<PassReport> optimize(Model& model, const OptimizeOptions& options) {
  std::vector<PipelineStep> steps = options.steps;
  if (!options.passes.empty()) {
    for (const auto& name : options.passes) steps.push_back({{name}});
  } else if (steps.empty()) {
    steps = options.for_lowering ? lowering_pipeline() : default_pipeline();
    ++default_pipeline_count;
  }
  for (const PipelineStep& step : steps) {
    for (const auto& name : step.passes) {
      if (!find_pass(name)) {
        std::string known;
        for (const PassInfo& p : all_passes()) {
          known += (known.empty() ? "" : ", ") + std::string(p.name);
        }
        raise_invalid_input(cat("unknown pass '", name, "' (passes: ", known, ")"));
      }
    }
  }
  std::vector<PassReport> reports;
  for (const PipelineStep& step : steps) {
    for (int round = 0; round < step.max_rounds; ++round) {
      bool changed = false;
      for (const auto& name : step.passes) {
        reports.push_back(run_pass(model, *find_pass(name), options));
        changed = changed || reports.back().changed;
      }
      if (!changed) break;
    }
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
