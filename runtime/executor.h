// The executor: runs a Program's execution blocks for one session, with one of three plans.
//
//   sequential  blocks in order on the calling thread;
//   parallel    a oneTBB flow graph built once per session from the blocks' data dependencies:
//               independent blocks run at once on the model's task arena;
//   pipeline    blocks in order, except that each chain of recurrent layers (block k+1 reads
//               block k's sequence output, all chunkable) runs as a wavefront over (layer, time
//               chunk): every thread takes runnable chunks, preferring the layers whose last
//               chunk ran on its CPU; layer k+1 acquires chunk c once layer k released it (a
//               per-layer progress counter), so layer k+1 runs chunk c while layer k runs chunk
//               c+1. Outputs are handed on by address (the chunk's rows), never copied. The
//               threads schedule the chunks themselves: a flow graph of serial per-layer nodes
//               lets oneTBB run the chunk tasks depth-first on the calling thread, which
//               serializes the layers.
// A chain (pipeline plan), or a recurrent block alone (pipeline and parallel plans), whose batch
// is large enough runs as batch slices instead (runtime/batch_split.h): each thread runs every
// layer over its own batch entries, with the same per-entry arithmetic as one thread.
//
// Memory: every value has a slot holding its tensor. A block's outputs from the previous run go
// back to it for recycling (Tensor::recycle), and every block has its own Workspace, so once
// shapes repeat a run allocates nothing on Halide and copy blocks. Graph inputs are bound in
// place (Tensor::rebind), and a caller's output buffer is bound to its value's slot, so the
// block producing it writes there directly.
#pragma once

#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compiler/plan.h"
#include "lowering/program.h"

namespace rnnc {

class Executor {
 public:
  // flush_denormals: blocks run with FTZ and DAZ set (runtime/fp_mode.h).
  Executor(const Program& program, RunPlan plan, int threads, bool flush_denormals = true);
  ~Executor();

  // Per-session mutable state.
  class Context;
  struct ContextDeleter {
    void operator()(Context* context) const;
  };
  using ContextPtr = std::unique_ptr<Context, ContextDeleter>;
  ContextPtr new_context() const;

  // Slot index of a graph input / output (by position in graph.inputs() / outputs()).
  size_t input_slot(size_t input) const { return input_slots_[input]; }
  size_t output_slot(size_t output) const { return output_slots_[output]; }

  // Binds graph input `input` to caller memory for the next run (no copy).
  void bind_input(Context& context, size_t input, DType dtype, const int64_t* shape, size_t rank,
                  const void* data) const;
  // Binds graph output `output` to a caller buffer: its producer writes into it when the shapes
  // agree (else the run copies, or fails when they differ).
  void bind_output(Context& context, size_t output, DType dtype, const int64_t* shape, size_t rank,
                   void* data) const;
  // Runs every block. Inputs must have been bound and checked (runtime/api.cc).
  void run(Context& context) const;
  // Per-block wall time, accumulated over the runs of a context with profiling on (a block of a
  // pipelined chain counts its chunks' times).
  void set_profiling(Context& context, bool on) const;
  std::string profile_report(const Context& context) const;
  int64_t profiled_runs(const Context& context) const;
  // The tensor of graph output `output` after a run (a constant output is its constant).
  const Tensor& output(const Context& context, size_t output) const;

  RunPlan plan() const { return plan_; }
  const Program& program() const { return program_; }
  // Chains of block indices the pipeline plan overlaps (for describe()).
  const std::vector<std::vector<size_t>>& chains() const { return chains_; }

 private:
  struct BlockSlots {
    std::vector<size_t> inputs;
    std::vector<size_t> outputs;
    std::vector<size_t> predecessors;  // blocks producing what this one reads
  };
  ContextPtr build_context() const;
  // Gives graph output slot s, which a view block just made, its own copy (view_output_slots_).
  void copy_view_output(Context& context, size_t s) const;
  // Points block b's io at its input slots.
  void bind_inputs(Context& context, size_t b) const;
  // Moves block b's outputs of the previous run (or a caller's buffers) from their slots into its
  // io for recycling; return_outputs moves what the block wrote back.
  void take_outputs(Context& context, size_t b) const;
  void return_outputs(Context& context, size_t b) const;
  void run_block(Context& context, size_t block) const;
  void run_chain(Context& context, size_t chain) const;
  // Runs blocks list[0..count) (a chain, or one block) as batch slices, one thread per slice
  // running every block over its entries, when runtime/batch_split.h's rule says so and each
  // block's entries are the next one's; false (nothing run) otherwise.
  bool run_batch_slices(Context& context, const size_t* list, size_t count) const;
  void fail(Context& context) const;

  const Program& program_;
  RunPlan plan_;
  int threads_;
  bool flush_denormals_;
  size_t num_slots_ = 0;
  std::vector<size_t> input_slots_, output_slots_;
  std::vector<BlockSlots> blocks_;
  // Outputs of view blocks (ExecutionBlock::aliases_input) that are not graph outputs: dropped
  // after every run, so the buffers they alias go back to their producers for recycling.
  std::vector<size_t> alias_slots_;
  // Per block, its view outputs that are graph outputs: each run copies the view into a buffer
  // the slot keeps from run to run, so what the caller holds never shares the producer's buffer
  // (which the producer then recycles) and a steady run allocates nothing.
  std::vector<std::vector<size_t>> view_output_slots_;
  // Per block, the slot of the input whose buffer its output 0 takes over
  // (ExecutionBlock::in_place_input) when the block is that value's only reader; kNoSlot if none.
  static constexpr size_t kNoSlot = static_cast<size_t>(-1);
  std::vector<size_t> in_place_slot_;
  // Pipeline plan: chains of chunkable blocks, and each block's chain (-1: none).
  std::vector<std::vector<size_t>> chains_;
  std::vector<int> chain_of_;
  // Shared by every executor of the process with the same thread count (shared_arena): separate
  // arenas would compete for oneTBB's few worker threads, and a worker lingering in one model's
  // arena would leave the next model's pipeline without its second thread (two 2-thread models
  // in one process would not overlap).
  std::shared_ptr<tbb::task_arena> arena_;
};

}  // namespace rnnc
