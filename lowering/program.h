// A compiled model: the optimized graph split into execution blocks, each lowered to Halide (or
// running its reference kernels when lowering does not handle it), run in order.
//
//   lower_program(model, blocks) = lower each BlockSpec of the partition, in order
//
// The compiler (compiler/compile.h) optimizes and partitions the model first.
// The Program is immutable and run() may be called from several threads at once. The oneTBB
// executor (runtime/) runs the same blocks with their plans; Program::run is the sequential plan.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lowering/block.h"
#include "lowering/partition.h"

namespace rnnc {

class HalideCache;

struct ProgramOptions {
  std::string cache_dir;        // "" = HalideCache's default
  std::string target;           // "" = host (or $RNNC_TARGET)
  bool reference_only = false;  // every block on reference kernels (debugging)
  bool keep_objects = false;    // keep the kernels' object files (ahead-of-time export, aot/)
  bool count_overflow = false;  // quantized kernels count overflows (Program::overflow_report)
  // Release from the graph the data of constants that only blocks holding their own copies read
  // (Program::released_constant_bytes); not for ahead-of-time export, which writes the graph's.
  bool release_held_constants = false;
};

class Program {
 public:
  const Model& model() const { return *model_; }
  const std::vector<std::unique_ptr<ExecutionBlock>>& blocks() const { return blocks_; }

  // Inputs are validated like the reference evaluator's (names, dtypes, ranks, dims).
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) const;

  // `rnnc plan`: one line per block with its kind, nodes, plan per axis, cost, compile time.
  std::string describe() const;
  // Overflow mode: every quantized node's counts so far (block.h OverflowCounts).
  std::vector<OverflowCounts> overflow_counts() const;
  // The counts as a table, one row per node ("" when the program does not count).
  std::string overflow_report() const;
  // The kernel cache the blocks were compiled through (nullptr for a reference-only program).
  HalideCache* kernel_cache() const { return cache_.get(); }
  // ProgramOptions::release_held_constants: the bytes of constant data the graph let go of.
  size_t released_constant_bytes() const { return released_constant_bytes_; }

 private:
  friend std::unique_ptr<Program> lower_program(std::unique_ptr<Model>,
                                                const std::vector<BlockSpec>&,
                                                const ProgramOptions&);
  std::unique_ptr<Model> model_;
  std::shared_ptr<HalideCache> cache_;
  std::vector<std::unique_ptr<ExecutionBlock>> blocks_;
  size_t released_constant_bytes_ = 0;
};

// `blocks`: partition_graph of `model`'s graph (after graph_opt's lowering passes).
std::unique_ptr<Program> lower_program(std::unique_ptr<Model> model,
                                       const std::vector<BlockSpec>& blocks,
                                       const ProgramOptions& options);

}  // namespace rnnc
