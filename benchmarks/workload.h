// Workloads as models/make_workloads.py describes them in <models>/workloads.json: a model file
// run at one sequence length and batch, with how to make its inputs. InputStream produces the
// inputs run after run: the same tensors for a stateless model, or the next audio chunk plus the
// state carried over from the previous run's outputs (Silero VAD).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "benchmarks/engine.h"
#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/model_cost.h"

namespace rnnc::bench {

struct InputSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  std::string fill;  // "normal" (N(0,1)), "zeros", "const" (value), "audio" (synthetic speech)
  double value = 0;
};

struct Workload {
  std::string name;
  std::string model;   // file name inside the models folder
  std::string family;  // lstm, gru, silero, enhancement
  std::string stands_for;
  int64_t seq = 0;
  int64_t batch = 1;
  int64_t param_bytes = 0;
  std::vector<InputSpec> inputs;
  std::map<std::string, std::string> carry;  // output name -> the input it feeds next run
  bool torch = false;                        // benchmarks/torch_runner.py can rebuild it
  std::string fetch;                         // the script that provides a model not generated
  // The model with its LSTMs as ONNX Runtime's com.microsoft.DynamicQuantizeLSTM ("" for none).
  std::string dqlstm_model;
};

// Reads <models_dir>/workloads.json. kIo / kInvalidInput errors name the file and the field.
std::vector<Workload> read_manifest(const std::string& path);

// The sizes inputs of `shapes` bind to the graph's symbolic dims (a graph input dim named "seq"
// that the workload's input has as 17 -> seq = 17).
std::map<std::string, int64_t> bound_dims(
    const Graph& graph, const std::map<std::string, std::vector<int64_t>>& shapes);
// The workload's scalar int64 "const" inputs (Silero's sr), which the engines compile in.
std::map<std::string, int64_t> fixed_scalar_inputs(const Workload& workload);
// One run's multiply-adds and weight bytes (ir/model_cost.h), counted on the model the graph
// pipeline specializes for the workload's input shapes and fixed inputs, as rnnc compiles it.
ModelCost workload_cost(const std::string& model_path, const Workload& workload);

class InputStream {
 public:
  // Deterministic: the seed comes from the workload's name.
  explicit InputStream(const Workload& workload);
  const TensorMap& current() const { return current_; }
  // Moves to the next run's inputs given this run's outputs (a no-op for stateless workloads).
  void advance(const TensorMap& outputs);
  void reset();
  bool stateful() const { return !workload_.carry.empty(); }

 private:
  Tensor make(const InputSpec& spec, int64_t chunk) const;
  const Workload& workload_;
  std::vector<float> audio_;  // the synthetic recording audio inputs are cut from
  TensorMap first_;
  TensorMap current_;
  int64_t chunk_ = 0;
};

}  // namespace rnnc::bench
