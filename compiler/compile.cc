#include "compiler/compile.h"

#include "ir/reference/evaluator.h"

#include "compiler/expose_state.h"
#include "graph_opt/pipeline.h"
#include "ir/error.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/reference/evaluator.h"
#include "lowering/cache_location.h"
#include "lowering/halide_cache.h"

namespace rnnc {

ModelSource ModelSource::file(std::string path) {
  ModelSource source;
  source.path = std::move(path);
  return source;
}

ModelSource ModelSource::bytes(const void* data, size_t size) {
  ModelSource source;
  source.data = data;
  source.size = size;
  return source;
}

ModelSource ModelSource::model(std::unique_ptr<Model> model) {
  ModelSource source;
  source.imported = std::move(model);
  return source;
}

namespace {

// The hash of the model's bytes, which the quantizer's decision cache is keyed by: the file
// (hashed in chunks, not read whole) or the bytes given; for a model given in memory, its ONNX
// form as quantization starts.
std::string source_hash(const ModelSource& source, const Model& model) {
  if (source.data) return hash_hex(source.data, source.size);
  if (!source.path.empty()) return hash_hex_of_file(source.path);
  return hash_hex(export_onnx_bytes(model));
}

}  // namespace

std::unique_ptr<Model> import_model(ModelSource& source) {
  if (source.imported) return std::move(source.imported);
  if (source.data) return import_onnx_bytes(source.data, source.size);
  return import_onnx_file(source.path);
}

void specialize_model(Model& model, const PassContext& specialization) {
  PassStats stats;
  specialize(model, specialization, stats);
}

std::vector<PassReport> optimize_model(Model& model) { return optimize(model, OptimizeOptions{}); }

std::vector<BlockSpec> partition_model(Model& model) {
  OptimizeOptions lowering;
  lowering.steps = lowering_passes();
  optimize(model, lowering);
  return partition_graph(*model.graph);
}

std::unique_ptr<Program> lower_model(std::unique_ptr<Model> model,
                                     const std::vector<BlockSpec>& blocks,
                                     const ProgramOptions& options) {
  return lower_program(std::move(model), blocks, options);
}

Compiled compile(ModelSource source, const CompileOptions& options) {
  Compiled compiled;
  auto stop_after = [&](Stage stage, std::unique_ptr<Model>& model) {
    if (options.stop_after != stage) return false;
    compiled.model = std::move(model);
    return true;
  };
  std::unique_ptr<Model> model = import_model(source);
  for (const Value* output : model->graph->outputs())
    compiled.model_outputs.push_back(output->name());
  if (stop_after(Stage::kImport, model)) return compiled;
  check_tensor_interface(*model->graph);

  if (options.expose_recurrent_state) compiled.state = expose_recurrent_state(*model);
  if (stop_after(Stage::kExposeState, model)) return compiled;

  if (options.specialization) compiled.specialization = options.specialization(*model->graph);
  specialize_model(*model, compiled.specialization);
  if (stop_after(Stage::kSpecialize, model)) return compiled;

  compiled.optimize_reports = optimize_model(*model);
  if (stop_after(Stage::kOptimize, model)) return compiled;

  if (!options.quantize.config.empty()) {
    compiled.quantization =
        quantize(*model, options.quantize, compiled.specialization, source_hash(source, *model));
  }
  if (stop_after(Stage::kQuantize, model)) return compiled;

  if (options.keep_model_bytes && options.keep_model_bytes(*model)) {
    compiled.model_bytes = export_onnx_bytes(*model);
  }
  std::vector<BlockSpec> blocks = partition_model(*model);
  if (stop_after(Stage::kPartition, model)) {
    compiled.blocks = std::move(blocks);
    return compiled;
  }

  compiled.program = lower_model(std::move(model), blocks, options.program);
  if (options.stop_after == Stage::kLower) return compiled;

  compiled.plan = plan_execution(*compiled.program, options.plan);
  return compiled;
}

std::unique_ptr<Program> compile_program(std::unique_ptr<Model> model,
                                         const ProgramOptions& options,
                                         const PassContext& specialization) {
  CompileOptions compile_options;
  compile_options.stop_after = Stage::kLower;
  compile_options.specialization = [&](const Graph&) { return specialization; };
  compile_options.program = options;
  return compile(ModelSource::model(std::move(model)), compile_options).program;
}

}  // namespace rnnc
