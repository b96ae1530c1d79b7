// The harness's view of an inference engine: load a model once, then run it on named tensors.
//
// A run is split in three so the timed part is the engine's own work only: prepare() hands the
// inputs over (and may wrap or bind them), execute() is what the harness times, outputs() reads
// the last run's results back as rnnc tensors. run() does all three for untimed uses (agreement
// checks). Every engine reports name(), and every report prints it, so a reader always knows
// which code path a number measures.
#pragma once

#include <map>
#include <string>

#include "ir/tensor.h"

namespace rnnc::bench {

using TensorMap = std::map<std::string, Tensor>;

struct EngineOptions {
  int threads = 1;  // intra-op threads the engine may use
  // ONNX Runtime: ORT_ENABLE_ALL when true; ORT_ENABLE_BASIC otherwise (no QDQ fusions, which
  // turn DequantizeLinear + MatMul into an integer product with A quantized at run time).
  bool ort_extended_optimizations = true;
  // Integer inputs whose value a workload keeps constant (Silero's sr): rnnc compiles them in
  // (ModelOptions::fixed_inputs, as its users load such models); ONNX Runtime, which has no such
  // option, gets them as inputs at every run.
  std::map<std::string, std::vector<int64_t>> fixed_inputs;
  // The workload's input shapes: rnnc's quantization guard measures on generated inputs of these
  // sizes (ModelOptions::quantization_dims), as a user binds them with `rnnc run --dim`.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  // Loads `path`. Errors are thrown (rnnc::Error for rnnc, Ort::Exception for ONNX Runtime).
  virtual void load(const std::string& path, const EngineOptions& options) = 0;
  virtual void prepare(const TensorMap& inputs) = 0;
  virtual void execute() = 0;
  virtual TensorMap outputs() const = 0;
  // Called by the harness after each series of runs (a timing round, an agreement stream): waits
  // until threads the engine leaves busy after its runs have stopped taking cores, so the engine
  // timed next does not pay for them.
  virtual void quiesce() {}

  TensorMap run(const TensorMap& inputs) {
    prepare(inputs);
    execute();
    return outputs();
  }
};

}  // namespace rnnc::bench
