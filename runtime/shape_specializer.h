// Shape specialization without being asked: programs compiled for the symbolic dims a run binds
// (and the values of its scalar integer inputs, such as Silero's sample rate).
//
// A model's generic program keeps its dims symbolic, so the shape computations and Ifs that
// depend on them run at every call (Silero VAD: Shape, Gather, Equal and If on the chunk size,
// 15 reference blocks). When runs bind those dims (batch 1, 512 samples), graph_opt can fold all
// of it. The specializer keeps the model as the compiler's partition stage got it (optimized and,
// when asked, quantized; ONNX bytes: CompileOptions::keep_model_bytes) and, for each new set of
// bound dims and scalar integer input values, compiles it again with those dims and inputs
// fixed, and runs of that shape use the result.
//
// The first run of a shape compiles it in its own thread, then runs it: from a warm kernel cache
// that is graph_opt and a dlopen per kernel (milliseconds); a cold cache costs what loading the
// model cost, once per shape, which a service pays at warm-up. A background compile would spare
// that first run, but a compile still in flight when the process exits runs on while the
// statics it uses are destroyed (seen: crashes at exit in tests holding models in statics), and
// no thread of rnnc's may outlive the caller's calls. Other runs of the same shape meanwhile take
// the generic program; runs of other shapes are not held up. A scalar integer input is usually a
// mode (a sample rate choosing a branch); one whose value changes at every run only fills the
// bounded table with shapes tried once.
//
//   - Only models whose generic program still holds an If, Shape or Size node, or a value with
//     a dim shape inference could not follow (unknown, "?"), get a specializer: elsewhere fixing
//     dims folds nothing, and a specialization would only cost memory (the weights marshaled
//     again). Nor models of more than kMaxWeightBytes of weights: what
//     specializing saves is per-call overhead (microseconds), which matters where a run is
//     short, and a copy of large weights per shape would not be worth it.
//   - A specialization is kept only when its optimized graph has fewer nodes or its program
//     fewer blocks than the generic one, and the same graph inputs and outputs; otherwise the
//     shape stays generic.
//   - At most `max_shapes` shapes are tried; beyond them every new shape runs the generic
//     program.
//   - Sessions carry their state themselves, so a stream switches programs between two chunks
//     without noticing; every run is checked against the generic program's input contract first.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph_opt/pass.h"
#include "lowering/program.h"
#include "runtime/executor.h"

namespace rnnc {

class ShapeSpecializer {
 public:
  struct Settings {
    ProgramOptions program;  // as for the generic program
    RunPlan plan = RunPlan::kSequential;
    int threads = 1;
    bool flush_denormals = true;
    size_t max_shapes = 4;
  };

  static constexpr size_t kMaxWeightBytes = size_t{16} << 20;

  // Whether a model has anything shape-dependent to fold (an If, Shape or Size node or a value
  // with an unknown dim, at any depth) and at most kMaxWeightBytes of weights: the caller then
  // keeps its bytes for create().
  static bool worth_keeping(const Model& model);
  // nullptr when `generic` holds nothing shape-dependent. `model_bytes`: the model as
  // the partition stage got it (Compiled::model_bytes); `symbols`: the symbolic dims of the graph
  // inputs, then `scalars`: its required scalar integer inputs, in the order a run's key
  // (executor_for) lists their values.
  static std::unique_ptr<ShapeSpecializer> create(std::string model_bytes, const Program& generic,
                                                  std::vector<std::string> symbols,
                                                  std::vector<std::string> scalars,
                                                  Settings settings);
  ~ShapeSpecializer();

  // A program specialized for one key: its executor, and per graph input of the generic program
  // the input's index in this program (-1: a scalar input compiled in, not bound at run time).
  struct Specialized {
    std::unique_ptr<Program> program;
    std::unique_ptr<Executor> executor;
    std::vector<int> input_map;
  };
  // The program for this key (per symbol its size, -1 unbound; then per scalar input its value),
  // or nullptr, when the generic program runs: a shape not worth it, or compiling in another
  // thread. A new shape is compiled here, by this call.
  const Specialized* specialized_for(const std::vector<int64_t>& key);
  // The shape graph_opt gives the graph output named `output` once the key's bound dims (-1:
  // left symbolic) and scalar inputs are fixed; nullopt when a dim of it stays unknown or
  // symbolic.
  // What a session's first run feeds a state input that no other input shapes: the state it
  // starts from has the shape of the state output it is carried from (Silero VAD v5 exports
  // name their state's batch dim apart from the audio's, and the Ifs between them fold only
  // once the audio's dims are fixed). Optimizes the graph once per key, cached.
  std::optional<std::vector<int64_t>> output_shape(const std::vector<int64_t>& key,
                                                   const std::string& output);
  // Blocks until no run is compiling a shape (another thread's first run of it).
  void wait();
  // One line per shape tried: its dims and its program's blocks, or why it stays generic.
  std::string describe() const;

 private:
  struct Entry {
    std::vector<int64_t> dims;
    Specialized specialized;  // executor null: the shape stays generic
    std::string outcome;      // for describe()
    std::atomic<bool> ready{false};
  };
  ShapeSpecializer(std::string model_bytes, const Program& generic, std::vector<std::string> symbols,
                   std::vector<std::string> scalars, Settings settings);
  void compile(Entry& entry) const;
  // What fixing `key` means to the specialize pass: its bound dims and its scalar inputs.
  PassContext specialization(const Graph& graph, const std::vector<int64_t>& key) const;

  const std::string model_bytes_;
  const Program& generic_;
  const std::vector<std::string> symbols_;
  const std::vector<std::string> scalars_;
  const Settings settings_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Entry>> entries_;
  int compiling_ = 0;  // shapes being compiled by runs now
  std::condition_variable compiled_;
  // output_shape's results: per key, the decided shapes by output name. Guarded by
  // shapes_mutex_, held while a key's graph is optimized (first runs only).
  std::mutex shapes_mutex_;
  std::vector<std::pair<std::vector<int64_t>, std::map<std::string, std::vector<int64_t>>>>
      output_shapes_;
};

}  // namespace rnnc
