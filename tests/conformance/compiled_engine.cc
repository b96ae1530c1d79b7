// The compiled engine: rnnc's optimizing path (graph_opt's pipeline, partitioning into execution
// blocks, Halide lowering with reference fallback blocks; lowering/program.h) on the test's model
// reloaded from disk. Compiled blocks are cached on disk (HalideCache), so a suite run compiles
// each distinct block once.
#include <map>

#include "ir/error.h"
#include "ir/onnx_import.h"
#include "compiler/compile.h"
#include "tests/conformance/engine.h"

namespace rnnc::conformance {

namespace {

class CompiledEngine final : public Engine {
 public:
  explicit CompiledEngine(std::string cache_dir) : cache_dir_(std::move(cache_dir)) {}

  std::string name() const override { return "compiled"; }

  EngineResult run(const TestFiles& test) override {
    EngineResult result;
    try {
      ProgramOptions options;
      options.cache_dir = cache_dir_;
      std::unique_ptr<Program> program = compile_program(import_onnx_file(test.model_path), options);
      std::map<std::string, Tensor> inputs;
      for (const auto& [name, tensor] : test.inputs) inputs[name] = tensor;
      result.outputs = program->run(inputs);
    } catch (const Error& e) {
      result.status = e.kind() == ErrorKind::kUnsupported ? EngineResult::Status::kUnsupported
                                                          : EngineResult::Status::kError;
      result.message = cat(error_kind_name(e.kind()), ": ", e.what());
    }
    return result;
  }

 private:
  std::string cache_dir_;
};

}  // namespace

std::unique_ptr<Engine> make_compiled_engine(const std::string& cache_dir) {
  return std::make_unique<CompiledEngine>(cache_dir);
}

}  // namespace rnnc::conformance
