#include "benchmarks/rnnc_engine.h"

#include "ir/onnx_import.h"

namespace rnnc::bench {

void RnncEngine::load(const std::string& path, const EngineOptions& options) {
  options_ = options;
  outputs_.clear();
  program_ = compile_model(import_onnx_file(path), ProgramOptions{});
}

void RnncEngine::execute() {
  RNNC_CHECK(program_ != nullptr, "execute() before load()");
  outputs_ = program_->run(inputs_);
}

TensorMap RnncEngine::outputs() const {
  TensorMap named;
  const std::vector<Value*>& graph_outputs = program_->model().graph->outputs();
  RNNC_CHECK(outputs_.size() == graph_outputs.size(), "outputs() before execute()");
  for (size_t i = 0; i < outputs_.size(); ++i) named[graph_outputs[i]->name()] = outputs_[i];
  return named;
}

}  // namespace rnnc::bench
