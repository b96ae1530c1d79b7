#include "benchmarks/rnnc_engine.h"

#include <chrono>
#include <thread>

#include "benchmarks/workload.h"
#include "ir/onnx_import.h"

namespace rnnc::bench {

std::string RnncEngine::name() const {
  return cat("rnnc (Halide blocks + reference fallback, runtime ", plan_name(plan_), " plan",
             quantization_.empty() ? "" : ", quantized: " + quantization_,
             note_.empty() ? "" : ", " + note_, ")");
}

void RnncEngine::load(const std::string& path, const EngineOptions& options) {
  outputs_ = nullptr;
  session_.reset();
  ModelOptions model_options;
  model_options.threads = options.threads;
  threads_ = options.threads;
  model_options.plan = plan_;
  model_options.quantization_config = quantization_;
  if (!quantization_.empty()) {
    model_options.quantization_dims =
        bound_dims(*import_onnx_file(path)->graph, options.input_shapes);
  }
  model_options.expose_recurrent_state = false;  // the harness feeds a model's own state
  model_options.fixed_inputs = options.fixed_inputs;
  fixed_inputs_ = options.fixed_inputs;
  model_ = CompiledModel::load(path, model_options);
  session_.emplace(model_->new_session());
}

void RnncEngine::quiesce() {
  if (threads_ > 1) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void RnncEngine::prepare(const TensorMap& inputs) {
  inputs_ = inputs;
  named_inputs_.clear();
  for (auto& [name, tensor] : inputs_) {
    if (fixed_inputs_.count(name)) continue;  // compiled in
    named_inputs_.push_back({name, {static_cast<ElementType>(static_cast<int32_t>(tensor.dtype())),
                                    tensor.shape(), tensor.raw_data()}});
  }
}

void RnncEngine::execute() {
  RNNC_CHECK(session_.has_value(), "execute() before load()");
  outputs_ = &session_->run(named_inputs_);
}

TensorMap RnncEngine::outputs() const {
  RNNC_CHECK(outputs_ != nullptr, "outputs() before execute()");
  TensorMap named;
  for (const NamedTensor& out : *outputs_) {
    named[out.name] =
        Tensor::borrow(static_cast<DType>(out.tensor.type), out.tensor.shape, out.tensor.data).clone();
  }
  return named;
}

}  // namespace rnnc::bench
