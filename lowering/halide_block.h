// The execution block the dense, elementwise and reduction lowerings produce: one Halide pipeline
// compiled through HalideCache, called through its argv entry with buffers that view the block's
// tensors in place (no copies; Tensor storage is 64-byte aligned and row-major).
//
// A pipeline argument is a *view* of a tensor. Each Halide dim of the view (innermost first)
//   - merges a run of the tensor's dims (row-major contiguous, so one stride serves the run:
//     [seq, batch, 128] seen as (128, seq*batch)),
//   - or is an extent-1 dim the tensor lacks or has as 1 (a broadcast; the pipeline reads index 0),
//   - or, where only the run-time shape can tell a broadcast from a full dim (two different
//     symbolic dims), is read at the output's extent with stride 0 when the tensor's extent is 1.
// Which dims merge and broadcast is decided at lowering time from the symbolic shapes
// (classify_operand, merge_loop_dims); extents are run-time, so one compiled pipeline serves every
// sequence length and batch size.
//
// Block I/O: run() looks each runtime argument up by Value in ExecutionBlock::inputs (the
// partitioner's order; lowering sets them to the runtime values read from outside, in first-use
// order) and assigns one output tensor per entry of ExecutionBlock::outputs (the group's sink).
#pragma once

#include <Halide.h>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lowering/block.h"
#include "lowering/halide_cache.h"

namespace rnnc {

// One Halide dim of a view (see above).
struct ViewDim {
  int first = 0;  // tensor dims [first, last) merged into this dim; an empty run has extent 1
  int last = 0;
  bool broadcast = false;          // extent 1, read at index 0
  bool runtime_broadcast = false;  // stride 0 across the output's extent when the tensor's is 1
  bool strided = false;            // innermost dim whose stride is not 1 (a transposed operand)
  int out_first = -1;              // the output dims [out_first, out_last) this dim spans:
  int out_last = -1;               // checked against them at run time (when out_first >= 0)
};
using OperandView = std::vector<ViewDim>;  // innermost first
std::string view_to_string(const OperandView& view);

// How an operand, right-aligned to the output (numpy broadcasting), reads one output dim.
enum class DimRead {
  kFull,       // the operand's dim is the output's
  kBroadcast,  // the operand lacks the dim or has a known extent 1 (the output's may be larger)
  kRuntime,    // two dims only the run-time extents tell apart: full, or 1 broadcast by stride 0
};
// One entry per output dim (ONNX order).
std::vector<DimRead> classify_operand(const Shape& operand, const Shape& output);

// Loop dims of a pipeline: output dims [first, last) (ONNX order), the list innermost first.
struct LoopDim {
  int first;
  int last;
};
// Merges neighbouring output dims d, d+1 when every operand reads both the same way (kFull or
// kBroadcast, never kRuntime) and may_merge(d) allows it.
std::vector<LoopDim> merge_loop_dims(int rank, const std::vector<std::vector<DimRead>>& reads,
                                     const std::function<bool(int)>& may_merge);
// The view of an operand over the loop dims, from its reads (one per output dim). The operand's
// dims line up with output dims [align_end - operand_rank, align_end): align_end is the output's
// rank for numpy broadcasting (a MatMul's A without its K dim ends at M instead).
OperandView operand_view(int operand_rank, int align_end, const std::vector<LoopDim>& loops,
                        const std::vector<DimRead>& reads);
// The output's own view: each loop dim merges its output dims.
OperandView output_view(const std::vector<LoopDim>& loops);

// Names of Vars, Funcs and buffers in lowered pipelines never have the form of a letter followed
// by digits ("v2"): Halide names its own unnamed Vars that way, and a clash is a compile error
// that depends on how many Vars the process created before.
//
// Halide side of a view: an input buffer (the innermost stride left free when the innermost dim
// may broadcast at run time) and a read at the loop point (index 0 on broadcast dims).
Halide::ImageParam make_image_param(const std::string& name, DType dtype, const OperandView& view);
Halide::Expr read_view(const Halide::ImageParam& image, const OperandView& view,
                       const std::vector<Halide::Var>& loop_vars);
Halide::Type halide_type_of(DType dtype);
// Promises Halide the exact row-major shape of a buffer (a marshaled weight): constant extents and
// strides simplify its indexing.
void pin_shape(Halide::OutputImageParam image, const std::vector<int64_t>& shape);
// Every buffer a HalideBlock binds starts at 0; saying so for the output removes its mins from
// the index arithmetic.
void pin_output_mins(Halide::Func output);

// Limits that let run() bind buffers without allocating (a lowering with more is unsupported).
constexpr size_t kMaxArguments = 16;  // buffer arguments of one pipeline
constexpr size_t kMaxViewDims = 8;    // Halide dims of one view
constexpr size_t kMaxExtentParams = 4;

// The tensors of one run, in argument order.
struct RunTensors {
  std::array<const Tensor*, kMaxArguments> tensors{};
  size_t count = 0;
  const Tensor& operator[](size_t i) const { return *tensors[i]; }
  size_t size() const { return count; }
};

// Output shape of one run, from the arguments' tensors. It must depend on their shapes and
// element types only (never their values): run() reuses its result while they repeat.
using OutputShapeFn = std::function<std::vector<int64_t>(const RunTensors&)>;

// The Funcs of one pipeline, built only on a cache miss.
struct BuiltPipeline {
  Halide::Func output;
  std::optional<Halide::Func> overflow;     // overflow mode: the counts, a second output
  std::vector<Halide::Argument> arguments;  // ImageParams then extent Params, in block order
};

class HalideBlock : public ExecutionBlock {
 public:
  struct Argument {
    const Value* value = nullptr;  // a block input, looked up at run time; or (value == nullptr)
    Tensor constant;               // a tensor the block holds (a weight in its layout)
    OperandView view;
  };

  std::string kind() const override { return kind_; }
  void run(BlockIO& io) const override;
  bool holds_its_constants() const override { return true; }  // Argument::constant
  void write_aot(AotWriter& writer, const AotBlockIO& io) const override;  // halide_block_aot.cc
  std::vector<OverflowCounts> overflow_counts() const override;

  // Compiles the block's pipeline through the kernel cache (`build` runs only on a miss) into
  // pipeline_, and records compile_ms and from_cache. kUnsupported first when the block exceeds
  // the limits above.
  void compile(HalideCache& cache, const std::string& key,
               const std::function<BuiltPipeline()>& build);

  std::string kind_;
  std::string context_;  // "MatMul 'mm' (opset 13)": how run-time input errors start
  CompiledPipeline pipeline_;
  std::vector<Argument> arguments_;  // the pipeline's input buffers, in order
  // Output dims (ONNX order) whose run-time extents follow the buffers as int32 scalars (a row
  // length a reduction needs before the output exists). The output buffer comes last.
  std::vector<int> extent_params_;
  OperandView output_view_;
  DType output_dtype_ = DType::kFloat32;
  const Value* output_value_ = nullptr;
  OutputShapeFn output_shape_;
  // Overflow mode (a quantized GEMM lowered with HalideCache::count_overflow): the node and
  // widths its counts are reported under. The pipeline then has a second output after the first,
  // int32 [4] (OverflowCounter), which run() adds into overflow_totals_.
  std::optional<OverflowCounts> overflow_;
  mutable std::array<std::atomic<int64_t>, 4> overflow_totals_{};
};

// A pipeline argument reading `value` through `view`: held by the block when it is a constant
// it holds (lower_elementwise.h is_held_constant), else bound to the run's input.
HalideBlock::Argument argument_of(const Value* value, OperandView view);
// Each of a fused group's operands (one per block argument, in order) read at the loop point
// `vars` from an ImageParam named input0, input1, ... over its argument's view; the ImageParams
// are appended to built.arguments.
std::map<const Value*, Halide::Expr> read_operands(const std::vector<const Value*>& operands,
                                                   const HalideBlock& block,
                                                   const std::vector<Halide::Var>& vars,
                                                   BuiltPipeline& built);

// Numpy broadcasting of run-time shapes; kInvalidInput starting with `context` when they clash.
// broadcast_into widens `result` in place by one more shape.
void broadcast_into(std::vector<int64_t>& result, const std::vector<int64_t>& shape,
                    const std::string& context);
std::vector<int64_t> broadcast_runtime_shapes(const std::vector<std::vector<int64_t>>& shapes,
                                              const std::string& context);
// The output shape of a block whose output is its arguments' shapes broadcast together and
// padded with leading 1s to `rank` dims (an elementwise group's).
OutputShapeFn broadcast_output_shape(int rank, const std::string& context);

}  // namespace rnnc
