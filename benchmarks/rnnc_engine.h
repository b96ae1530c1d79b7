// rnnc as the harness measures it: the compiled model (graph_opt + partition + Halide lowering,
// blocks Halide does not handle yet on reference kernels), run by lowering's sequential Program.
// name() says which path it is, so no table passes one path off as another.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "benchmarks/engine.h"
#include "lowering/program.h"

namespace rnnc::bench {

class RnncEngine final : public Engine {
 public:
  std::string name() const override {
    return "rnnc compiled (Halide blocks + reference fallback, sequential plan)";
  }
  // import_onnx_file + compile_model (kernels cached on disk). Throws rnnc::Error.
  void load(const std::string& path, const EngineOptions& options) override;
  void prepare(const TensorMap& inputs) override { inputs_ = inputs; }
  // Program::run: single-threaded whatever options.threads says (the TBB runtime is issue 6).
  void execute() override;
  TensorMap outputs() const override;

 private:
  std::unique_ptr<Program> program_;
  EngineOptions options_;
  TensorMap inputs_;
  std::vector<Tensor> outputs_;
};

}  // namespace rnnc::bench
