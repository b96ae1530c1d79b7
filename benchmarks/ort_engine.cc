#include "benchmarks/ort_engine.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include "ir/error.h"

namespace rnnc::bench {
namespace {

Ort::Env& ort_env() {
  static Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "rnnc_bench");
  return env;
}

ONNXTensorElementDataType ort_type(DType dtype) {
  // rnnc's DType values are ONNX TensorProto.DataType values, and so are ORT's.
  return static_cast<ONNXTensorElementDataType>(static_cast<int32_t>(dtype));
}

}  // namespace

std::string OrtEngine::library_version() { return OrtGetApiBase()->GetVersionString(); }

std::string OrtEngine::name() const { return "ONNX Runtime " + library_version() + " (CPU)"; }

void OrtEngine::load(const std::string& path, const EngineOptions& options) {
  binding_.reset();
  session_.reset();
  Ort::SessionOptions session_options;
  session_options.SetGraphOptimizationLevel(options.ort_extended_optimizations
                                                ? GraphOptimizationLevel::ORT_ENABLE_ALL
                                                : GraphOptimizationLevel::ORT_ENABLE_BASIC);
  session_options.SetIntraOpNumThreads(options.threads);
  // ORT's intra-op workers spin after each run by default, holding cores the next engine in the
  // same process needs; RNNC_BENCH_ORT_SPIN=0 turns that off (ORT's own latency may change).
  const char* spin = std::getenv("RNNC_BENCH_ORT_SPIN");
  if (spin) session_options.AddConfigEntry("session.intra_op.allow_spinning", spin);
  spinning_workers_ = options.threads > 1 && !(spin && std::string(spin) == "0");
  session_options.SetInterOpNumThreads(1);
  session_options.SetExecutionMode(ExecutionMode::ORT_SEQUENTIAL);
  // Subnormals flushed to zero, as rnnc runs by default (ModelOptions::flush_denormals): both
  // engines in the same floating-point mode (Silero VAD meets subnormals).
  session_options.AddConfigEntry("session.set_denormal_as_zero", "1");
  session_ = std::make_unique<Ort::Session>(ort_env(), path.c_str(), session_options);

  Ort::AllocatorWithDefaultOptions allocator;
  input_names_.clear();
  output_names_.clear();
  for (size_t i = 0; i < session_->GetInputCount(); ++i)
    input_names_.push_back(session_->GetInputNameAllocated(i, allocator).get());
  for (size_t i = 0; i < session_->GetOutputCount(); ++i)
    output_names_.push_back(session_->GetOutputNameAllocated(i, allocator).get());
  binding_ = std::make_unique<Ort::IoBinding>(*session_);
}

void OrtEngine::prepare(const TensorMap& inputs) {
  RNNC_CHECK(session_ != nullptr, "prepare() before load()");
  binding_->ClearBoundInputs();
  binding_->ClearBoundOutputs();
  bound_inputs_ = inputs;
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  for (const std::string& name : input_names_) {
    auto found = bound_inputs_.find(name);
    if (found == bound_inputs_.end())
      raise_invalid_input(
          cat("ONNX Runtime session: no tensor given for model input '", name, "'"));
    Tensor& tensor = found->second;
    Ort::Value value =
        Ort::Value::CreateTensor(cpu, tensor.raw_data(), tensor.nbytes(), tensor.shape().data(),
                                 tensor.shape().size(), ort_type(tensor.dtype()));
    binding_->BindInput(name.c_str(), value);
  }
  // ORT allocates the outputs at each run, as it does for a caller of Session::Run.
  for (const std::string& name : output_names_) binding_->BindOutput(name.c_str(), cpu);
}

void OrtEngine::execute() { session_->Run(Ort::RunOptions{nullptr}, *binding_); }

void OrtEngine::quiesce() {
  // Twice the estimated window: without the pause, the engine timed right after ORT's runs at
  // 2 threads shares its cores with ORT's spinning workers (docs/measurements.md).
  constexpr int kSpinWindowMs = 150;
  if (spinning_workers_) std::this_thread::sleep_for(std::chrono::milliseconds(kSpinWindowMs));
}

TensorMap OrtEngine::outputs() const {
  std::vector<Ort::Value> values = binding_->GetOutputValues();
  RNNC_CHECK(values.size() == output_names_.size(), "ONNX Runtime returned ", values.size(),
             " outputs for ", output_names_.size(), " names");
  TensorMap named;
  for (size_t i = 0; i < values.size(); ++i) {
    Ort::TensorTypeAndShapeInfo info = values[i].GetTensorTypeAndShapeInfo();
    Tensor tensor(static_cast<DType>(info.GetElementType()), info.GetShape());
    std::memcpy(tensor.raw_data(), values[i].GetTensorRawData(), tensor.nbytes());
    named[output_names_[i]] = tensor;
  }
  return named;
}

}  // namespace rnnc::bench
