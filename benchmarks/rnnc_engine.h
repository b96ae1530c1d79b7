// rnnc as the harness measures it: the public API (runtime/): a CompiledModel (graph_opt +
// partition + Halide lowering, blocks Halide does not handle yet on reference kernels) run by a
// Session on the oneTBB executor. The plan is kAuto (sequential at 1 thread, the pipeline plan
// for stacked layers at 2+) unless forced; name() says which, so no table passes one path off as
// another.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/engine.h"
#include "rnnc/rnnc.h"

namespace rnnc::bench {

class RnncEngine final : public Engine {
 public:
  // quantization: ModelOptions::quantization_config ("" float, "default" int8 recurrent nodes).
  // note: what the loaded file is, for the engine's name (a model quantized offline).
  explicit RnncEngine(Plan plan = Plan::kAuto, std::string quantization = "", std::string note = "")
      : plan_(plan), quantization_(std::move(quantization)), note_(std::move(note)) {}
  std::string name() const override;
  // CompiledModel::load (kernels cached on disk). Throws rnnc::Error.
  void load(const std::string& path, const EngineOptions& options) override;
  void prepare(const TensorMap& inputs) override;
  void execute() override;  // Session::run
  TensorMap outputs() const override;
  // With 2+ threads: a 10 ms pause, past the short spin of oneTBB's idle workers.
  void quiesce() override;
  // The plan of the last run (kAuto resolved per input shape), else the plan asked for.
  Plan plan() const { return session_ ? session_->last_plan() : plan_; }
  // The plans the loaded model chooses among (CompiledModel::plan_candidates).
  std::vector<Plan> plan_candidates() const {
    return model_ ? model_->plan_candidates() : std::vector<Plan>{plan_};
  }
  // Quantized at load: the quantization guard's one line (nodes int8 / wider / float, measured
  // error against the budget); "" for a float model.
  std::string quantization_summary() const { return model_ ? model_->quantization_summary() : ""; }

 private:
  Plan plan_;
  std::string quantization_;
  std::string note_;
  std::shared_ptr<const CompiledModel> model_;
  int threads_ = 1;
  std::optional<Session> session_;
  TensorMap inputs_;
  std::map<std::string, std::vector<int64_t>> fixed_inputs_;
  std::vector<NamedTensor> named_inputs_;
  const std::vector<NamedTensor>* outputs_ = nullptr;
};

}  // namespace rnnc::bench
