// rnnc as the harness measures it: the one seam later issues swap when rnnc gets its optimized
// path (Halide lowering, runtime). Today it is the plain reference evaluator, and name() says so,
// so no table can pass the oracle's speed off as the engine's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "benchmarks/engine.h"
#include "ir/graph.h"

namespace rnnc::bench {

class RnncEngine final : public Engine {
 public:
  std::string name() const override { return "rnnc reference evaluator"; }
  // import_onnx_file: parse, import and infer shapes. Throws rnnc::Error (kUnsupported for an
  // operator the importer does not know yet).
  void load(const std::string& path, const EngineOptions& options) override;
  void prepare(const TensorMap& inputs) override { inputs_ = inputs; }
  // rnnc::evaluate, single-threaded whatever options.threads says.
  void execute() override;
  TensorMap outputs() const override;

 private:
  std::unique_ptr<Model> model_;
  EngineOptions options_;
  TensorMap inputs_;
  std::vector<Tensor> outputs_;
};

}  // namespace rnnc::bench
