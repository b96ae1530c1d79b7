// rnnc's compiler: one function, compile(), runs every stage in order for every entry point (the
// runtime's CompiledModel::load, `rnnc compile`, `rnnc quantize`, `rnnc plan` through the
// runtime, the shape specializer). Each caller asks for what it needs in CompileOptions and stops
// where it wants (CompileOptions::stop_after); no caller runs a stage itself.
//
//   1. import        ONNX file or bytes, or a Model in memory -> Model       ir/onnx_import.h
//   2. expose state  forward LSTM/GRU/RNN state as graph inputs and outputs  expose_state.h
//   3. specialize    fixed inputs -> constants, fixed dims -> sizes          graph_opt/specialize
//   4. optimize      graph_opt's default_pipeline(), once                    graph_opt/pipeline.h
//   5. quantize      guard decision + integer rewrite, when asked            quantize.h
//   6. partition     graph_opt's lowering_passes() (quantized weights as annotated constants,
//                    layout views, fusion groups), then BlockSpecs           lowering/partition.h
//   7. lower         each BlockSpec -> ExecutionBlock (Halide, copy, ref.)   lowering/program.h
//   8. plan          the executor plans the runtime builds                   plan.h
//
// Why this order: state is exposed before anything folds, so the computation of a replaced
// initial state becomes dead and optimize removes it. Specializing first lets optimize fold what
// the fixed inputs and dims decide (inline an If, fold a shape chain). The quantizer needs the
// optimized float graph: recurrent nodes inlined out of decided Ifs, computed weights folded to
// the float initializers it rewrites, and the names the guard's cached decision refers to. The
// lowering passes run after quantization because their rnnc.* annotations are not ONNX (the
// quantized model may be written as ONNX, `rnnc quantize`) and because the int8 weights quantize
// writes become the annotated constants lowering reads. Plan needs the lowered blocks (which are
// chunkable, which chain).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/plan.h"
#include "compiler/quantize.h"
#include "graph_opt/pass.h"
#include "graph_opt/pipeline.h"
#include "ir/graph.h"
#include "lowering/program.h"

namespace rnnc {

// What stage 1 imports: an ONNX file, ONNX bytes (not copied; they must outlive compile()), or
// a model already in memory (IR text, a model a test built).
struct ModelSource {
  static ModelSource file(std::string path);
  static ModelSource bytes(const void* data, size_t size);
  static ModelSource model(std::unique_ptr<Model> model);

  std::string path;
  const void* data = nullptr;
  size_t size = 0;
  std::unique_ptr<Model> imported;
};

enum class Stage {
  kImport,
  kExposeState,
  kSpecialize,
  kOptimize,
  kQuantize,
  kPartition,
  kLower,
  kPlan
};

struct CompileOptions {
  Stage stop_after = Stage::kPlan;
  // 2. expose state: the state of forward recurrent nodes that start from zeros.
  bool expose_recurrent_state = false;
  // 3. specialize: the fixed inputs and dims, built from the imported graph (a --fix value is
  // parsed by its input's element type). Null: nothing fixed.
  std::function<PassContext(const Graph&)> specialization;
  // 5. quantize: QuantizeOptions::config "" quantizes nothing.
  QuantizationOptions quantize;
  // The shape specializer compiles the model again with the dims a run binds: when this returns
  // true for the model as partitioning gets it (optimized and quantized), Compiled::model_bytes
  // holds that model as ONNX.
  std::function<bool(const Model&)> keep_model_bytes;
  // 7. lower: kernel cache, target, reference mode, object files, overflow counting, release of
  // the constants blocks hold their own copies of.
  ProgramOptions program;
  // 8. plan.
  PlanOptions plan;
};

struct Compiled {
  std::unique_ptr<Model> model;            // when compile stopped before lowering; else null
  std::vector<BlockSpec> blocks;           // stop_after kPartition: the partition of `model`
  std::unique_ptr<Program> program;        // lowered (stop_after kLower or kPlan)
  std::vector<std::string> model_outputs;  // the graph outputs as imported (before stage 2)
  std::vector<std::pair<std::string, std::string>> state;  // (state output, state input) pairs
  PassContext specialization;                              // what stage 3 fixed
  std::vector<PassReport> optimize_reports;                // stage 4's passes
  std::optional<Quantization> quantization;                // stage 5, when it quantized
  std::string model_bytes;                                 // CompileOptions::keep_model_bytes
  RunPlanChoice plan;                                      // stage 8
};

Compiled compile(ModelSource source, const CompileOptions& options);

// The stages, as compile() calls them.
std::unique_ptr<Model> import_model(ModelSource& source);
void specialize_model(Model& model, const PassContext& specialization);
std::vector<PassReport> optimize_model(Model& model);
std::vector<BlockSpec> partition_model(Model& model);
std::unique_ptr<Program> lower_model(std::unique_ptr<Model> model,
                                     const std::vector<BlockSpec>& blocks,
                                     const ProgramOptions& options);

// compile() through lowering with nothing exposed or quantized, for callers that run the
// Program itself (Program::run: tests, the conformance runner).
std::unique_ptr<Program> compile_program(std::unique_ptr<Model> model,
                                         const ProgramOptions& options,
                                         const PassContext& specialization = {});

}  // namespace rnnc
