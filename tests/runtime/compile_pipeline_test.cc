// The compiler's pipeline (compiler/compile.h) as its entry points drive it: every compile runs
// graph_opt's default pipeline once (graph_opt/pipeline.h default_pipeline_runs), on the float
// and the quantized path, through the runtime's load, the offline quantizer and the ahead-of-time
// exporter; and a caller that stops early gets the model, not a program.
#include <gtest/gtest.h>

#include "aot/export.h"
#include "compiler/compile.h"
#include "graph_opt/pipeline.h"
#include "rnnc/rnnc.h"
#include "tests/support/temp_dir.h"

namespace rnnc {
namespace {

const char* const kDemo = RNNC_SOURCE_DIR "/models/demo/lstm_demo.onnx";

ModelOptions load_options() {
  ModelOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  options.specialize_shapes = false;  // no compile but the load's
  return options;
}

TEST(CompilePipeline, FloatLoadOptimizesOnce) {
  const int64_t before = default_pipeline_runs();
  CompiledModel::load(kDemo, load_options());
  EXPECT_EQ(default_pipeline_runs() - before, 1);
}

TEST(CompilePipeline, QuantizedLoadOptimizesOnce) {
  ModelOptions options = load_options();
  options.quantization_config = "default";
  options.quantization_guard = false;  // the rewrite alone: the guard's search compiles nothing
  const int64_t before = default_pipeline_runs();
  std::shared_ptr<const CompiledModel> model = CompiledModel::load(kDemo, options);
  EXPECT_EQ(default_pipeline_runs() - before, 1);
  // It did quantize: the plan has integer blocks.
  EXPECT_NE(model->describe().find("int8"), std::string::npos) << model->describe();
}

TEST(CompilePipeline, OfflineQuantizerOptimizesOnce) {
  testing::TempDir dir("rnnc_compile_pipeline_test");
  QuantizeOptions options;
  options.guard = false;
  const int64_t before = default_pipeline_runs();
  const QuantizeResult result = quantize_model(kDemo, dir.path() + "/demo_int8.onnx", options);
  EXPECT_EQ(default_pipeline_runs() - before, 1);
  EXPECT_GT(result.quantized_nodes, 0u);
}

TEST(CompilePipeline, AheadOfTimeExportOptimizesOnce) {
  testing::TempDir dir("rnnc_compile_pipeline_test");
  aot::ExportOptions options;
  options.output_dir = dir.path();
  options.compile.program.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  options.compile.expose_recurrent_state = true;
  const int64_t before = default_pipeline_runs();
  const aot::ExportResult result = aot::export_model(ModelSource::file(kDemo), options);
  EXPECT_EQ(default_pipeline_runs() - before, 1);
  EXPECT_GT(result.blocks, 0);
}

TEST(CompilePipeline, StopAfterQuantizeReturnsTheModel) {
  CompileOptions options;
  options.stop_after = Stage::kQuantize;
  options.quantize.config = "default";
  options.quantize.guard = false;
  Compiled compiled = compile(ModelSource::file(kDemo), options);
  ASSERT_NE(compiled.model, nullptr);
  EXPECT_EQ(compiled.program, nullptr);
  ASSERT_TRUE(compiled.quantization.has_value());
  // Quantized weights are DequantizeLinear nodes until the lowering passes fold them.
  bool dequantize = false;
  for (const auto& node : compiled.model->graph->nodes()) {
    dequantize = dequantize || node->op_type() == "DequantizeLinear";
  }
  EXPECT_TRUE(dequantize);
}

TEST(CompilePipeline, StopAfterLowerHasNoPlan) {
  CompileOptions options;
  options.stop_after = Stage::kLower;
  options.program.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  Compiled compiled = compile(ModelSource::file(kDemo), options);
  ASSERT_NE(compiled.program, nullptr);
  EXPECT_EQ(compiled.model, nullptr);
  EXPECT_TRUE(compiled.plan.candidates.empty());
}

TEST(CompilePipeline, PlanStageChoosesBetweenSequentialAndOverlapping) {
  CompileOptions options;
  options.program.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  options.plan.threads = 2;
  Compiled compiled = compile(ModelSource::file(kDemo), options);
  ASSERT_EQ(compiled.plan.candidates.size(), 2u);
  EXPECT_EQ(compiled.plan.candidates[0], RunPlan::kSequential);
  options.plan.threads = 1;
  compiled = compile(ModelSource::file(kDemo), options);
  ASSERT_EQ(compiled.plan.candidates.size(), 1u);
  EXPECT_EQ(compiled.plan.candidates[0], RunPlan::kSequential);
}

}  // namespace
}  // namespace rnnc
