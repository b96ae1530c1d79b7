// ONNX Runtime through its C++ API, set up the way a user who wants speed would: all graph
// optimizations, intra-op threads = the harness's thread count, one inter-op thread, sequential
// execution. Inputs are bound without copying (Ort::Value over the rnnc tensor's buffer, through
// an IoBinding), so execute() times RunWithBinding and nothing else.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <memory>
#include <string>
#include <vector>

#include "benchmarks/engine.h"

namespace rnnc::bench {

class OrtEngine final : public Engine {
 public:
  std::string name() const override;  // "ONNX Runtime 1.30.0 (CPU)"
  void load(const std::string& path, const EngineOptions& options) override;
  void prepare(const TensorMap& inputs) override;
  void execute() override;
  TensorMap outputs() const override;
  // With 2+ intra-op threads and spinning allowed (ORT's default), ORT's workers spin after a
  // run for 2^20 pause iterations before they block (onnxruntime's EigenNonBlockingThreadPool
  // WorkerLoop) - tens of milliseconds at ~140 cycles per pause - holding the cores the next
  // engine's round needs; this sleeps past that window (kSpinWindowMs).
  void quiesce() override;

  // The version string of the library actually loaded (OrtGetApiBase()->GetVersionString()).
  static std::string library_version();

 private:
  std::unique_ptr<Ort::Session> session_;
  bool spinning_workers_ = false;
  std::unique_ptr<Ort::IoBinding> binding_;
  std::vector<std::string> input_names_;
  std::vector<std::string> output_names_;
  TensorMap bound_inputs_;  // keeps the buffers the bound Ort::Values point into alive
};

}  // namespace rnnc::bench
