// The per-architecture threshold tables the dense, convolution, elementwise, reduction and
// recurrent schedules are chosen from, and the choosers. A schedule is a function of the element
// type, the dims known at lowering time (weights' K and N, a kernel's size; sequence and batch are
// run-time) and the target's row of this one table: nothing is tuned per model.
//
// The schedules here are single-threaded (no Halide .parallel()): the runtime parallelizes blocks
// and their plans with oneTBB. Where a lowering does use a Halide parallel loop (the recurrent
// input projection's row tiles), it runs on the runtime's oneTBB arena (runtime/halide_tbb.h),
// never on Halide's own thread pool.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "lowering/activation_math.h"
#include "lowering/kernel_target.h"
#include "lowering/layout.h"

namespace Halide {
struct Target;
}  // namespace Halide

namespace rnnc {

struct ArchTable {
  const char* name;  // "avx512", "avx2", "sse"
  int lanes;         // float32 lanes of one vector register
  int registers;     // architectural vector registers
  // GEMM register tile: gemm_mr rows x (gemm_nr_vectors * lanes) columns of accumulators, plus the
  // B vectors and one broadcast A value, must fit the register file.
  int gemm_mr;
  int gemm_nr_vectors;
  // Elementwise loops: vectors per iteration when the innermost extent allows it.
  int elementwise_unroll;
  // Direct convolution register tile: conv_mr output channels x conv_vectors vectors of outputs.
  int conv_mr;
  int conv_vectors;
  // Kernel taps along the innermost spatial axis are unrolled up to this width.
  int conv_unroll_taps;
  // Channel-vectorized convolution (at least `lanes` output channels): conv_channel_vectors
  // vectors of output channels x conv_positions output positions of accumulators.
  int conv_channel_vectors;
  int conv_positions;
};

// The row for a Halide target: AVX-512 when the target has it, else AVX2, else SSE4.1.
const ArchTable& arch_table(const Halide::Target& target);

// Row tiles for a run of mr + 1 to 2 mr - 2 rows, in two tiles of t < mr rows (the second
// shifted inward): 2t - 1 or 2t rows (min_rows, max_rows) take tiles of t, which compute at most
// one row more than the run, where two tiles of mr compute 2 mr (mr = 6: 7 or 8 rows in tiles
// of 4, 9 or 10 in tiles of 5), as a streamed chunk of 7 to 10 frames at batch 1 takes. Largest
// tile first; empty for mr < 4.
struct PairedRowTile {
  int min_rows, max_rows, tile;
};
std::vector<PairedRowTile> paired_row_tiles(int mr);

// MatMul / Gemm: a register-tiled GEMM whose k loop runs innermost over a tile of accumulators.
struct GemmSchedule {
  int lanes = 0;
  int nr = 0;  // columns per register tile (a multiple of lanes); B is padded to it
  int mr = 0;  // rows per register tile; runs of fewer rows take one tile of exactly that many
  // Constant B's layout, on the tensor as stored ([K, N], or [N, K] with transB): the N dim tiled
  // to nr (one contiguous K x nr panel per tile) or, when N fits one tile, permuted innermost and
  // padded to nr.
  Layout b_layout;
  // Column tiles per panel when constant B is walked in panels outermost (gemm_panel_tiles), 0
  // when the row tiles are outermost.
  int panel_tiles = 0;
  // "gemm nr=32 mr=6 lanes=16 B tiled(d1, 32)", then " panels of 8 tiles" when panel_tiles > 0.
  std::string to_string() const;
};
// n: N when known (constant B), nullopt for a run-time N. kUnsupported for dtypes other than f32.
GemmSchedule choose_gemm_schedule(const ArchTable& arch, DType dtype, std::optional<int64_t> n,
                                  bool b_transposed);

// The column tiles per panel of a constant B of K x N elements of `element_bytes` in tiles of nr
// columns: B over half of the target's L2 (`l2_bytes`) is walked in panels of at most half of it,
// outermost, each multiplied by every row tile while it stays in L2, so B is read once per run
// rather than once per row tile; 0 (row tiles outermost) when B fits.
int gemm_panel_tiles(int64_t k, int64_t n, int nr, double element_bytes, int64_t l2_bytes);

// Elementwise loops (and the output stage of every other pipeline): the innermost loop dim
// vectorized and unrolled; a run-time extent gets specializations for full and partial vectors.
struct ElementwiseSchedule {
  int lanes = 0;   // 1: scalar (a known innermost extent below 4)
  int unroll = 1;  // vectors per iteration
  std::string to_string() const;
};
ElementwiseSchedule choose_elementwise_schedule(const ArchTable& arch, DType dtype,
                                                std::optional<int64_t> inner_extent);

// Reductions along the innermost dim (Softmax rows, ReduceSum over the last axis): lane-wise
// partial results, combined at the end.
struct RowReduceSchedule {
  int lanes = 0;
  std::string to_string() const;
};
RowReduceSchedule choose_row_reduce_schedule(const ArchTable& arch, DType dtype);

// Conv: direct convolution, register-tiled over output channels x output positions. Two forms:
//   positions vectorized  (fewer output channels than a vector): mr channels x `vectors` vectors
//                         of output positions, each input vector load shared by mr channels;
//   channels vectorized   (at least a vector of output channels): mr = channel_vectors * lanes
//                         channels x `positions` output positions, each weight vector load shared
//                         by the positions and each input value broadcast. No gathers for strided
//                         convs and no idle lanes when a streaming chunk has few output positions
//                         (Silero's STFT conv: stride 128, 4 positions, 258 channels).
struct ConvSchedule {
  int lanes = 0;
  bool channels_vectorized = false;
  int mr = 1;         // output channels per tile
  int vectors = 1;    // positions vectorized: vectors of output positions per tile
  int positions = 1;  // channels vectorized: output positions per tile
  bool unroll_taps = false;
  Layout w_layout;  // W [M, C/group, k...]: tiled(d0, mr) so a tile's weights are adjacent
  std::string to_string() const;
};
// output_width: the output's innermost extent where the graph fixes it (a specialized shape). A
// tile is then no wider than the output, so a conv over one to a few positions (Silero's encoder
// tail and decoder) does not compute, and for sigmoid epilogues evaluate, a whole tile of padding.
// Grouped convolutions (groups > 1) vectorize positions, never output channels.
ConvSchedule choose_conv_schedule(const ArchTable& arch, DType dtype, int64_t out_channels,
                                  int64_t groups, int64_t kernel_width,
                                  std::optional<int64_t> output_width = std::nullopt);

struct RecurrentCell;  // lowering/recurrent_pipelines.h

// An LSTM, GRU or RNN node's loop shapes (the pipelines of lowering/recurrent_pipelines.h), from
// the recurrent rows of this file's table.
struct RecurrentSchedule {
  int vector_width = 8;             // floats per vector: 16 with AVX-512, 8 with AVX2
  int hidden_tile = 8;              // T: hidden units per step tile (a multiple of vector_width)
  int padded_hidden = 8;            // Hp: hidden_size rounded up to hidden_tile
  // The batched step runs tiles of batch_tile entries when the batch is a multiple of it, else
  // tiles of batch_pad entries; the runtime pads the batch to a multiple of batch_pad.
  int batch_tile = 1;
  int batch_pad = 1;
  // A batch of at least this many entries that is not a multiple of batch_tile steps tiles of
  // batch_tile entries all the same, the last shifted inward onto entries already computed
  // (their state computed twice, to the same values), rather than tiles of batch_pad entries,
  // each R load of which serves half as many entries (0: never).
  int shifted_tiles_from = 0;
  int gemm_vectors = 1;             // projection tile: vectors along n ...
  int gemm_rows = 1;                // ... times rows along m, all accumulators in registers
  // The quantized projection's row tile for a row count that is a multiple of it (0: none): no
  // padded or recomputed rows where gemm_rows does not divide the rows (16 rows: 16, not 18).
  int gemm_rows_exact = 0;
  bool gemm_columns_outer = false;  // weights too big for L2: walk column panels outermost
  // The projection's weights stream from L3 or DRAM (over the target's L2 at their storage
  // width): tiles of gemm_rows rows x 1 vector, so each panel is read once per 16 rows, not once
  // per 6-row tile, and the next panel is prefetched while this one is multiplied.
  bool stream_weights = false;
  double step_weight_bytes = 0;  // R at its storage width: what every step reads
  bool parallel_tiles = false;   // R above the target's L2: the step's hidden tiles run in parallel
  // W of at least 16384 elements (schedule_table.cc): the projection's outer tiles run in parallel.
  bool parallel_projection = false;
  bool single_entry = false;    // the step runs batch_size 1 only (its batch extent is 1)
  // The runtime may pass the step views that walk the hidden tiles backwards (negative tile-dim
  // strides) on alternate steps, so a step starts on the R tiles the previous one read last.
  bool alternate_tiles = false;
  int step_k_split = 1;  // the quantized step's dot products as this many partial sums
  // How the gate activations divide (lowering/activation_math.h Quotient). Float steps: the
  // divide instruction with 512-bit vectors where 512-bit operations are split
  // (KernelTarget::splits_512_bit_ops), since there the reciprocal estimate's three extra
  // multiplies cost more issue slots of the halved zmm rate than the divider costs time, and where
  // the divider takes no multiply slots at all (KernelTarget::divides_beside_multiplies); the
  // estimate elsewhere. Quantized steps never take the estimate (each step's h quantization passes
  // a change in an activation's last bits on to its whole row): LSTM steps take the two fractions
  // where the divider takes no multiply slots and vectors are 512 bits, the others the divide.
  // RNNC_GATE_DIVIDE=divide|estimate|fractions replaces the choice, to measure it on a CPU
  // (schedule_table.cc).
  Quotient gate_quotient = Quotient::kEstimate;
  // A whole run whose XW rows (4 * gates * Hp bytes per entry and step) take more than this
  // projects them in chunks of steps of at most this size, each stepped right after it is
  // projected, so the steps read their rows from L2 rather than L3 (half the target's L2, or
  // RNNC_XW_CHUNK_KIB; a loop parameter, not part of the kernels' key).
  int64_t xw_chunk_bytes = 0;

  std::string key() const;
};

// batched: the schedule of the step for batch_size > 1, which differs only in its batch tiles (the
// projection and the weight layouts are shared). The target's schedule class decides: its vector
// width picks the row of tile sizes, and its L2 per core the three weight-size thresholds (a W
// over half of L2 walks column panels outermost, over all of L2 it streams; an R over L2 splits
// the step's tiles across threads); whether it splits 512-bit operations, how the gates divide.
RecurrentSchedule choose_recurrent_schedule(const RecurrentCell& cell, const KernelTarget& target,
                                            bool batched = false);

}  // namespace rnnc
