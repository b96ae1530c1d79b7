// lower_recurrent: one LSTM, GRU or RNN node with constant weights -> an execution block running
// Halide code (recurrent_pipelines.h), computing exactly what the reference kernel computes
// (docs/ops/recurrent.md) up to float32 rounding.
//
//   per direction:  XW = input_projection(X, Wt, bias)      one GEMM over all (t, b) rows
//                   for s in 0 .. max(sequence_lens) - 1:   the C time loop, core/recurrent_loop.h
//                     h, c = recurrent_step(R, XW, step_time(s), h, c)
//                     Y[step_time(s)[b], d, b] = h[b]       for the entries still running
//
// sequence_lens by masking: at step s, entry b runs time step t = s (forward) or len_b - 1 - s
// (reverse), read from its own row of XW; an entry with s >= len_b gets step_time -1, and the
// step keeps its state unchanged. Y stays zero past each entry's length and Y_h / Y_c are the
// states after the last step, as in the reference. layout=1 needs no transposes: the rows of X
// and XW are (b, t) instead of (t, b), which only changes the strides the step reads XW with
// and the offsets h is copied to.
//
// Weights are marshaled once, here (layouts in recurrent_pipelines.h). The pipelines' cache keys
// hold the node's attributes, sizes, dtype and the schedule, not seq_length or batch_size, so
// the layers of a stack with equal shapes share their compiled code.
//
// Calling convention (as a reference kernel): BlockIO::inputs in node input order (nullptr for an
// omitted input; W, R, B and P are ignored - the marshaled copies are used), outputs assigned in
// node output order (an undefined Tensor for an omitted output).
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lowering/block.h"
#include "lowering/core/recurrent_loop.h"
#include "lowering/halide_cache.h"
#include "lowering/recurrent_pipelines.h"

namespace rnnc {

// Axis orders the block reads and writes the node's data slots in, outermost first, named as
// graph_opt's eliminate_layout_ops names them: seq, batch, dir, hidden, input, and dirhidden (dir
// and hidden merged into one axis, dir outer). input is innermost in x, hidden (or dirhidden) in
// the others; dir may be left out (squeezed) when the node has one direction.
struct RecurrentLayouts {
  std::string x, initial_h, initial_c, y, y_h, y_c;
};
// The ONNX layouts of the node's `layout` attribute (what the reference kernel reads and writes):
// layout 0: seq_batch_input, dir_batch_hidden, seq_dir_batch_hidden; layout 1: batch_seq_input,
// batch_dir_hidden, batch_seq_dir_hidden.
RecurrentLayouts onnx_recurrent_layouts(const Node& node);
// The ONNX layouts, except that a slot annotated rnnc.<slot>_layout by eliminate_layout_ops (the
// layout ops around the node folded into views) is read or written in the annotated layout, so
// the block produces the view chain's last value directly and the chain's ops need not run.
RecurrentLayouts annotated_recurrent_layouts(const Node& node);

// Throws kUnsupported for what it cannot lower - weights that are not constants (initializers or
// folded values), element types other than float32, a layout name it does not know - so the caller
// keeps the reference kernel; kInvalidModel for attributes or weight shapes the reference kernel
// would reject too. Any spelling of the attributes is accepted; graph_opt's canonicalize_recurrent
// form is the common case, not a precondition. Without `layouts`, the node's ONNX layouts.
std::unique_ptr<ExecutionBlock> lower_recurrent(const Node& node, HalideCache& cache);
std::unique_ptr<ExecutionBlock> lower_recurrent(const Node& node, HalideCache& cache,
                                                const RecurrentLayouts& layouts);

// An axis of a recurrent slot's layout (X, initial_h, Y, ...); kDirHidden is dir and hidden
// fused into one axis (dir outer).
enum class RecurrentAxis : uint8_t { kSeq, kBatch, kDir, kHidden, kInput, kDirHidden };

class RecurrentBlock : public ExecutionBlock {
 public:
  std::string kind() const override;
  // All directions, one after the other, each with its projection over the whole sequence.
  void run(BlockIO& io) const override;
  // W, R, B, P are packed at lowering; sequence_lens and initial states are kept as tensors.
  bool holds_its_constants() const override { return true; }
  // A forward, single-direction node without sequence_lens, X seq-outermost: each chunk projects
  // its own time rows and runs its steps, so a following layer can start on them.
  bool chunkable() const override;
  int64_t begin_chunks(BlockIO& io) const override;
  void run_chunk(BlockIO& io, int64_t begin, int64_t end) const override;
  void end_chunks(BlockIO& io) const override;
  // A bidirectional node's directions as two independent parts (each its own projection, steps
  // and output slices).
  int independent_parts() const override { return num_directions() > 1 ? num_directions() : 0; }
  void begin_parts(BlockIO& io) const override;
  void run_part(BlockIO& io, int part) const override;
  void end_parts(BlockIO& io) const override {}
  // Batch slices (float cells; any direction, layout and sequence_lens): each slice is a run
  // over its entries (rn_recurrent_batch_slice), with its own projection of its X rows.
  int64_t batch_slice_unit() const override;
  int64_t batch_size(BlockIO& io) const override;
  bool begin_batch_slices(BlockIO& io, const int64_t* bounds, int slices) const override;
  void run_batch_slice(BlockIO& io, int slice) const override;
  SliceLayout batch_slice_layout(const BlockIO& io) const override;
  // R's bytes per direction at its storage width: what every step reads.
  double step_weight_bytes() const override;
  // The run as C for an ahead-of-time library (recurrent_block_aot.cc): the same pipelines and
  // time loop; io holds the node's slots.
  void write_aot(AotWriter& writer, const AotBlockIO& io) const override;
  // Overflow mode (HalideCache::count_overflow, quantized nodes): the kernels' counts so far.
  std::vector<OverflowCounts> overflow_counts() const override;

  // One direction's cell, pipelines and weights, packed by lower_recurrent.
  struct Direction {
    bool reverse = false;
    RecurrentCell cell;
    CompiledPipeline step;          // batch_size 1
    CompiledPipeline batched_step;  // batch_size > 1: a batch tile of entries per weight load
    // Marshaled weights (recurrent_pipelines.h layouts).
    Tensor wt, bias, r, peepholes, rbh;  // float32, 64-byte aligned
    // Integer products (cell.quant): int8 or int16 weights (RecurrentQuant::wide_operands),
    // per-output float scales, int32 column sums and zero points.
    Tensor wq, w_scale, w_colsum, w_zero, rq, r_scale, r_colsum, r_zero;
  };

 private:
  friend std::unique_ptr<ExecutionBlock> lower_recurrent(const Node& node, HalideCache& cache,
                                                         const RecurrentLayouts& layouts);
  struct ChunkState;

  // The time loop's description (lowering/core/recurrent_loop.h) with this block's sizes,
  // schedule, pipelines and marshaled weights; its run fields empty. write_aot prints its numbers
  // into the AOT driver.
  rn_recurrent compiled_loop() const;
  // Checks the inputs, binds the outputs (recycled when possible) and fills the run fields; the
  // sequence lengths go into the workspace.
  rn_recurrent begin(BlockIO& io, Workspace& workspace) const;
  rn_recurrent_state start_direction(const rn_recurrent& run, int direction,
                                     Workspace& workspace) const;
  // Steps [step_begin, step_end), after projecting the rows they read.
  void advance(const rn_recurrent& run, int direction, rn_recurrent_state& state,
               int64_t step_begin, int64_t step_end) const;
  ChunkState& chunk_state(BlockIO& io) const;
  void add_overflow(const int64_t counts[4]) const;
  int num_directions() const { return static_cast<int>(directions_.size()); }

  using Axes = std::vector<RecurrentAxis>;  // a slot's layout, outermost first
  // Where seq, batch or input sits in X's layout (parse_layout checked that X has each once).
  size_t x_position(RecurrentAxis axis) const {
    return static_cast<size_t>(std::find(x_axes_.begin(), x_axes_.end(), axis) - x_axes_.begin());
  }

  std::string describe_;          // the node, for error messages
  std::vector<bool> has_output_;  // per node output: Y, Y_h (, Y_c)
  RecurrentOp op_ = RecurrentOp::kLstm;
  Axes x_axes_, initial_h_axes_, initial_c_axes_, y_axes_, y_h_axes_, y_c_axes_;
  int64_t hidden_size_ = 0, input_size_ = 0;
  std::string direction_name_;
  RecurrentSchedule schedule_, batched_schedule_;
  CompiledPipeline projection_;
  std::vector<Direction> directions_;
  // Inputs that were constants at lowering time (used when the BlockIO slot is nullptr).
  std::optional<Tensor> constant_sequence_lens_, constant_initial_h_, constant_initial_c_;
  bool may_have_sequence_lens_ = false;  // the node has a sequence_lens input
  // Overflow mode: above, below, sums beyond the accumulation width, values (OverflowCounts),
  // summed over every call of the kernels (runs may be concurrent).
  mutable std::atomic<int64_t> overflow_[4] = {};
};

}  // namespace rnnc
