// Execution blocks: the unit lowering produces and the executor runs.
//
// A block covers one or more nodes of the optimized graph, reads some values and writes others.
// It runs with the same calling convention as a reference kernel (inputs as tensors, outputs
// assigned), so every lowered block can be checked against the reference evaluator on the very
// same inputs. A block is immutable after lowering and run() may be called from several threads at
// once (scratch memory is per call).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "ir/graph.h"
#include "lowering/aot_writer.h"

namespace rnnc {

// How a block's work along one dynamic axis may be scheduled.
enum class AxisPlan {
  kSequential,  // in order: a dependence runs along the axis (a recurrence over time)
  kParallel,    // no dependence along the axis (the input projection over all steps; batch)
  kPipeline,    // a chain of recurrent layers: block k+1 can run step t while block k runs t+1
};
const char* axis_plan_name(AxisPlan plan);

struct ExecutionPlan {
  AxisPlan sequence = AxisPlan::kParallel;
  AxisPlan batch = AxisPlan::kParallel;
};

// Scratch memory of one block in one session: a bump allocator reset at the start of every run.
// It grows while the first runs find their sizes, then keeps one chunk of the high-water size, so
// steady-state runs do not touch the heap.
class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // Everything handed out since the last reset is free again (and merged into one chunk).
  void reset();
  // `count` elements, 64-byte aligned, zero-filled.
  template <typename T>
  T* allocate(int64_t count) {
    return static_cast<T*>(allocate_bytes(bytes_of<T>(count), /*zero=*/true));
  }
  // The same without the zero fill, for buffers a kernel writes in full before anything reads
  // them (a recurrent layer's projection output: zeroing it cost 2-5% of a stacked LSTM's run).
  template <typename T>
  T* allocate_uninitialized(int64_t count) {
    return static_cast<T*>(allocate_bytes(bytes_of<T>(count), /*zero=*/false));
  }
  size_t capacity() const;

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  struct Chunk {
    std::unique_ptr<uint8_t, Free> memory;
    size_t size = 0;
  };
  template <typename T>
  static size_t bytes_of(int64_t count) {
    return static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T);
  }
  void* allocate_bytes(size_t bytes, bool zero);
  std::vector<Chunk> chunks_;
  size_t used_ = 0;  // bytes used in chunks_.back()
};

// State a block keeps in its BlockIO between runs (a chunked run's, see
// ExecutionBlock::run_chunk; a shape's memo).
struct BlockRunState {
  virtual ~BlockRunState() = default;
};

struct BlockIO {
  std::vector<const Tensor*> inputs;  // nullptr for an omitted optional input
  // On entry: empty, or the tensors this block produced at the previous run (or caller buffers
  // bound to graph outputs), which the block may overwrite when dtype and shape still match
  // (Tensor::recycle) instead of allocating. On exit: one tensor per output value.
  std::vector<Tensor> outputs;
  Workspace* workspace = nullptr;  // nullptr: the block uses a workspace of its own for the call
  std::unique_ptr<BlockRunState> state;  // a chunked run's state, kept for reuse across runs
};

// io.state as a `State`, made on first use (or when another kind of state is there). An exact
// type check (a run's overhead on small blocks: no dynamic_cast's hierarchy walk).
template <typename State>
State& run_state(BlockIO& io) {
  if (!io.state || typeid(*io.state) != typeid(State)) io.state = std::make_unique<State>();
  return static_cast<State&>(*io.state);
}

// Overflow mode (ProgramOptions::count_overflow): what one quantized node's integer kernels
// counted over the runs so far. Activations are quantized to `activation_bits`: `above` and
// `below` of the `values` quantized fell outside the integer range and were clamped; sums are
// computed exactly (ir/quantization.h ProductWidths), `sums_beyond` of them would not fit the
// node's declared accumulation width.
struct OverflowCounts {
  std::string node;
  int activation_bits = 8, accumulation_bits = 32;
  int64_t values = 0, above = 0, below = 0, sums_beyond = 0;
};

class ExecutionBlock {
 public:
  virtual ~ExecutionBlock() = default;
  // "halide lstm (forward, hidden 128)", "reference Shape": what runs, for `rnnc plan`.
  virtual std::string kind() const = 0;
  virtual void run(BlockIO& io) const = 0;
  // Whether its outputs alias its inputs' storage (lower_view.h): the executor then drops them
  // after each run, unless they are graph outputs, so the inputs' producers can recycle theirs.
  virtual bool aliases_input() const { return false; }
  // The input (an index into `inputs`) whose buffer output 0 may take over, or -1. When no other
  // block reads that value and it is neither a graph input nor a graph output, the executor
  // moves the buffer into io.outputs[0] and points io.inputs[index] at it, so run() updates it
  // in place (lower_copy.h: ScatterND); otherwise run() gets it read-only as usual.
  virtual int in_place_input() const { return -1; }
  // Whether run() never reads its nodes' graph constants: everything it needs of them was copied
  // or shared into the block when it was lowered (Halide arguments, packed recurrent weights).
  // The program may then release those constants' data from the graph.
  virtual bool holds_its_constants() const { return false; }

  // The tensor a node of this block reads for `value`: a folded constant, or the BlockIO input
  // bound to it; nullptr when it is neither.
  const Tensor* input_tensor(const BlockIO& io, const Value* value) const;

  // Chunked runs, for blocks that run a recurrence over the sequence axis in order: the runtime's
  // pipeline plan calls begin_chunks, then run_chunk for consecutive time ranges that cover
  // [0, sequence_length(io)), then end_chunks; the outputs' rows for a range are final when its
  // run_chunk returns, so the next block of a chain can consume them. Same results as run().
  virtual bool chunkable() const { return false; }
  virtual int64_t begin_chunks(BlockIO& io) const;  // returns the sequence length
  virtual void run_chunk(BlockIO& io, int64_t begin, int64_t end) const;
  virtual void end_chunks(BlockIO& io) const;
  // Independent parts (a bidirectional node's two directions): when independent_parts() > 1,
  // begin_parts checks the inputs and binds the outputs, then run_part(io, i) for every part -
  // concurrently for distinct parts - then end_parts. Same results as run().
  virtual int independent_parts() const { return 0; }
  virtual void begin_parts(BlockIO& io) const;
  virtual void run_part(BlockIO& io, int part) const;
  virtual void end_parts(BlockIO& io) const;
  // Batch slices, for blocks whose batch entries are computed independently (a recurrent layer's
  // rows). batch_slice_unit() > 0 says the block can run in slices; batch_size(io) is the batch
  // of the run io's inputs describe (-1 when they do not say). begin_batch_slices checks the
  // inputs, binds the outputs and prepares slice i = entries [bounds[i], bounds[i + 1]) for
  // i < slices (returns false, running nothing, when bounds[slices] is not the batch); then
  // run_batch_slice(io, i) for every slice - concurrently for distinct slices - each writing only
  // its entries' rows: bitwise what run() writes there when every slice has at least 2 entries.
  // A slice of a multiple of batch_slice_unit() entries steps no padding entries of its own.
  virtual int64_t batch_slice_unit() const { return 0; }
  virtual int64_t batch_size(BlockIO& io) const;
  virtual bool begin_batch_slices(BlockIO& io, const int64_t* bounds, int slices) const;
  virtual void run_batch_slice(BlockIO& io, int slice) const;
  // After begin_batch_slices: where the run reads X and writes Y, with their seq and batch strides
  // in elements, so a caller running a chain's slices can check that an entry's rows of one
  // layer's Y are the same entry's rows of the next layer's X.
  struct SliceLayout {
    const void *x = nullptr, *y = nullptr;
    int64_t x_seq_stride = 0, x_batch_stride = 0, y_seq_stride = 0, y_batch_stride = 0;
  };
  virtual SliceLayout batch_slice_layout(const BlockIO& io) const;
  // Bytes of weights a slice reads at every step (a recurrent layer's R), for the split rule.
  virtual double step_weight_bytes() const { return 0; }
  // For a chunkable block: the value whose time rows a chunk reads, and the one whose rows it
  // writes (a chain of layers passes one's sequence_output to the next's sequence_input).
  virtual const Value* sequence_input() const { return nullptr; }
  virtual const Value* sequence_output() const { return nullptr; }

  // Ahead-of-time export (aot/, lowering/aot_writer.h): writes this block's run as C code through
  // `writer`, reading and writing the values of `io`. The default raises kUnsupported naming the
  // block and its nodes (reference kernels need rnnc's C++ at run time).
  virtual void write_aot(AotWriter& writer, const AotBlockIO& io) const;
  // Overflow mode: one entry per quantized node of the block; empty otherwise.
  virtual std::vector<OverflowCounts> overflow_counts() const { return {}; }

  std::vector<const Node*> nodes;     // the graph nodes this block computes, in order
  std::vector<const Value*> inputs;   // values read from outside the block
  std::vector<const Value*> outputs;  // values other blocks or the graph outputs read
  ExecutionPlan plan;
  double cost = 0;  // estimated cost in weight-byte-equivalents (partition.h)
  double compile_ms = 0;     // time spent compiling its Halide pipelines (0 when all were cached)
  bool from_cache = false;   // every pipeline it uses came from the kernel cache (or an earlier
                             // block of the same program: equal layers share pipelines)
};

}  // namespace rnnc
