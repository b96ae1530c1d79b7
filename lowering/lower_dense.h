// lower_dense: a MatMul, Gemm or Conv with its fused elementwise epilogue (graph_opt's fusion group
// rooted at it) -> one Halide pipeline: a tiled, vectorized, unrolled reduction whose output stage
// is the epilogue, inlined (bias add, activation, ...), optionally ending in a Softmax or
// LogSoftmax along N (the classifier head: the row statistics are computed over a tile of rows
// while it is in cache).
//
//   %m = MatMul (%x, %W)            prod(n, m) = sum_k Ap(k, m) * Bt(n % nr, k, n / nr)
//   %b = Add (%m, %bias)      ->    out(n, m)  = tanh(prod(n, m) + bias(n))
//   %y = Tanh (%b)
//
// GEMM schedule (schedule_table.h): the output is tiled into mr rows x nr columns; per tile the mr
// rows of A are packed (Ap), and the k loop runs innermost over mr * nr / lanes vector
// accumulators held in registers (unrolled over the tile, vectorized over n). Rows are the
// output's leading dims merged (seq * batch for an LSTM's input projection) whenever B is 2-D and
// the epilogue's operands broadcast alike over them; 2 to mr - 1 rows at run time (a streamed
// chunk of a few frames) take one tile of exactly that many rows, so B is read once. A constant B
// is marshaled once through LayoutMap into N-tiles of nr
// columns (tiled(dN, nr)) or, when N fits one tile, N permuted innermost and padded
// (permuted_padded(dN, nr)); Gemm's transB = 1 is the same physical array, so the transpose costs
// nothing. A run-time B is packed the same way inside the pipeline, once per call.
//
// Conv (1-D and 2-D, groups, dilations, pads, strides): direct convolution. The input is padded
// once per batch item (zero outside, taps in the padding read zero), W is marshaled tiled(d0, mr)
// so a tile's mr output channels' weights sit together, and the output is tiled into mr channels x
// (vectors * lanes) positions accumulated in registers over (c, ky, kx).
//
// Everything is single-threaded Halide code; oneTBB parallelizes across blocks and plans.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lowering/block.h"
#include "lowering/halide_block.h"
#include "lowering/halide_cache.h"
#include "lowering/layout.h"
#include "lowering/lower_elementwise.h"

namespace rnnc {

// A group rooted at a MatMul or Gemm (float32). kUnsupported for other dtypes, a root output
// whose shape differs from the group's result, or a normalizer not along N. A root quant/
// annotated with an activation quantization is lowered by lower_quantized_gemm_group
// (lower_dense_quant.h) instead.
std::unique_ptr<ExecutionBlock> lower_gemm_group(const FusionGroup& group, HalideCache& cache);

// How a MatMul/Gemm group's operands map onto its loops, shared by the float and the integer
// GEMM. Loops (innermost first): n, m, then the batch dims; M merges with the batch dims wherever
// every operand reads them alike.
struct GemmGroupShape {
  bool gemm = false, trans_a = false, trans_b = false;
  float alpha = 1, beta = 1;
  const Value *a = nullptr, *b = nullptr, *c = nullptr;  // c: Gemm's C, when present
  const Value* result = nullptr;                           // the group's output
  int ra = 0, rb = 0, rank = 0, batch_rank = 0;            // ranks of A, B, the result, its batch
  bool has_m = true, has_n = true;                         // false for a 1-D A / B of MatMul
  std::vector<DimRead> reads_b;                            // how B reads each output dim
  // Operands of the epilogue (and C unless it is an inline scalar), after A and B in the block's
  // arguments; reads = {A's, B's, each epilogue operand's} per output dim.
  std::vector<const Value*> epilogue;
  std::vector<std::vector<DimRead>> reads;
  std::vector<LoopDim> loops, row_loops;  // row_loops: loops without n
  OperandView view_a;                     // A as (k, rows...)
  std::optional<int64_t> k_known, n_known;
};
// kUnsupported as lower_gemm_group says.
GemmGroupShape analyze_gemm_group(const FusionGroup& group);
// The block's output shape at run time; kInvalidInput when K or the batch dims disagree.
// constant_b_shape: B's shape when B is held by the block (empty: B is argument 1);
// first_epilogue: the index of the first epilogue argument.
OutputShapeFn gemm_output_shape(const GemmGroupShape& shape, const std::string& context,
                                std::vector<int64_t> constant_b_shape, size_t first_epilogue);
// The GEMM's output tiling: `out` split over the rows m (its output buffer's dim 1) into mo, mi
// and, when `split_n`, over n into no, ni by nr, vectorized along n (ni) by `lanes`. Tiles of mr
// rows where there are mr rows or more, the last one shifted inward onto rows already computed;
// 2 to mr - 1 rows (a streamed chunk of a few frames) in one tile of exactly that many, so B is
// read once rather than once per row; a little more than mr rows in two smaller tiles
// (paired_row_tiles). With `panel_tiles` > 0 (GemmSchedule::panel_tiles) the column tiles are
// walked in panels of that many, outermost: every row tile runs over one panel before the next
// (no is then the tile within its panel).
void tile_gemm_rows(Halide::Func out, const Halide::Var& n, const Halide::Var& m, int nr, int mr,
                    int lanes, Halide::TailStrategy n_tail, bool split_n, Halide::Var no,
                    Halide::Var ni, Halide::Var mo, Halide::Var mi, int panel_tiles = 0);

// What the dense lowerings share about a rooted group:
// the root's output and the group's result agree dim by dim (equal, or unknown on either side);
bool same_shape(const Shape& a, const Shape& b);
// the operands read by the group's elementwise members (the epilogue), in operand order;
std::vector<const Value*> epilogue_operands(const FusionGroup& group);
// kInvalidInput unless the epilogue's run-time operands (tensors[first...]) broadcast to `root`,
// the root's run-time result shape, which it returns.
std::vector<int64_t> check_epilogue(const std::vector<int64_t>& root, const RunTensors& tensors,
                                    size_t first, const std::string& context);

// One spatial axis of a Conv: its kernel, stride, dilation and pads (auto_pad resolved).
struct ConvAxis {
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
};
// The Conv's spatial axes from its attributes and W's shape; kUnsupported for attributes that do
// not match W's rank, or SAME padding over a run-time size.
std::vector<ConvAxis> conv_axes(const Node& node, const Shape& x, const std::vector<int64_t>& w);

// A group rooted at a Conv with constant weights, 1-D or 2-D (float32).
std::unique_ptr<ExecutionBlock> lower_conv_group(const FusionGroup& group, HalideCache& cache);

struct ConvSchedule;  // schedule_table.h

// A convolution block writing `result`, over loop dims (ow, oh, m, n) with no merging (the kernel
// indexes each; a 1-D convolution has an extent-1 oh), which `loops` receives.
std::unique_ptr<HalideBlock> conv_block(const Node& root, const Value* result, int rank,
                                        std::vector<LoopDim>& loops);
// The end of a convolution kernel's cache key: every argument's view, the output's, the schedule
// and the static spatial extents.
std::string conv_key_tail(const HalideBlock& block, const ConvSchedule& schedule,
                          const std::vector<std::optional<int64_t>>& static_in,
                          const std::vector<std::optional<int64_t>>& static_out);

// A convolution block's arguments, as Conv and ConvTranspose bind them: X viewed (w, h, c, n)
// (h broadcast for a 1-D convolution), the weights as `w_layout` marshaled them, the bias when it
// is a buffer (clamped to the last channel when read), then the epilogue's operands.
struct ConvArguments {
  bool bias_buffer = false;
  std::vector<const Value*> epilogue;
  size_t first_epilogue = 0;  // the index of the first epilogue argument
};
ConvArguments add_conv_arguments(HalideBlock& block, const FusionGroup& group, const Value* x,
                                 const Value* bias, Tensor marshaled_weights,
                                 const LayoutMap& w_layout, int rank,
                                 const std::vector<LoopDim>& loops, const Shape& result_shape);
// Their Halide parameters, appended to `built.arguments`: X with the static spatial extents
// (width, then height) pinned, W with its physical shape pinned; the bias as its value at
// channel m, and each epilogue operand's read at `vars` (ow, oh, m, batch).
struct ConvImages {
  Halide::ImageParam x;
  Halide::ImageParam w;
  Halide::Expr bias_value;
  std::map<const Value*, Halide::Expr> reads_of;
};
ConvImages conv_images(const HalideBlock& spec, const ConvArguments& arguments,
                       const FusionGroup& group, const Value* bias, const LayoutMap& w_layout,
                       const std::vector<std::optional<int64_t>>& static_in, int64_t out_channels,
                       const std::vector<Halide::Var>& vars, BuiltPipeline& built);

// The direct convolution's register tiling, shared with ConvTranspose (lower_conv_transpose.h):
// `out` over vars (ow, oh, m, batch) reads the accumulators `prod`, whose update reduces over
// r = (kx, ky, c); W is marshaled by schedule.w_layout. Pins the output's mins and its channel
// extent to `out_channels`; the caller schedules the input the taps read.
void schedule_conv_tiles(Halide::Func out, Halide::Func prod, const Halide::RDom& r,
                         const std::vector<Halide::Var>& vars, const ConvSchedule& schedule,
                         int64_t out_channels);

}  // namespace rnnc
