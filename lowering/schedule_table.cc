#include "lowering/schedule_table.h"

#include <Halide.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "ir/error.h"
#include "lowering/env_size.h"
#include "lowering/recurrent_pipelines.h"

namespace rnnc {

namespace {

// GEMM register tiles: nr columns (2 vectors) x mr 6 rows keeps 12 accumulators, the B vectors
// and a broadcast within the register file (AVX2: 15 of 16 ymm; a wider tile spills); 8 rows
// would waste a third tile on 17-row sequences. Elementwise loops are memory bound; two vectors
// per iteration hide the loop overhead. Conv, positions vectorized: 4 output channels x 2 vectors
// share each input vector load over 8 accumulators. Channels vectorized: 2 vectors of channels x
// 6 positions (12 zmm accumulators; AVX2 4 positions: 8 ymm + 2 weight vectors + 1 broadcast).
// The measurements behind each choice: docs/measurements.md, "Schedule tables".
constexpr ArchTable kAvx512 = {"avx512", 16, 32, 6, 2, 2, 4, 2, 7, 2, 6};
constexpr ArchTable kAvx2 = {"avx2", 8, 16, 6, 2, 2, 4, 1, 7, 2, 4};
constexpr ArchTable kSse = {"sse", 4, 16, 6, 2, 2, 4, 1, 7, 2, 4};

void require_float32(DType dtype, const char* what) {
  if (dtype != DType::kFloat32) {
    raise_unsupported(cat(what, " is lowered for float32 only, not ", dtype_onnx_name(dtype)));
  }
}

}  // namespace

const ArchTable& arch_table(const Halide::Target& target) {
  if (target.has_feature(Halide::Target::AVX512)) return kAvx512;
  if (target.has_feature(Halide::Target::AVX2)) return kAvx2;
  return kSse;
}

std::string GemmSchedule::to_string() const {
  return cat("gemm nr=", nr, " mr=", mr, " lanes=", lanes, " B ", b_layout.to_string(),
             panel_tiles > 0 ? cat(" panels of ", panel_tiles, " tiles") : "");
}

int gemm_panel_tiles(int64_t k, int64_t n, int nr, double element_bytes, int64_t l2_bytes) {
  const int64_t tiles = (n + nr - 1) / nr;
  const double tile_bytes = static_cast<double>(k) * nr * element_bytes;
  const double half_l2 = static_cast<double>(l2_bytes) / 2;
  if (tile_bytes * static_cast<double>(tiles) <= half_l2) return 0;
  const int64_t per_panel = std::max<int64_t>(1, static_cast<int64_t>(half_l2 / tile_bytes));
  return per_panel >= tiles ? 0 : static_cast<int>(per_panel);
}

GemmSchedule choose_gemm_schedule(const ArchTable& arch, DType dtype, std::optional<int64_t> n,
                                  bool b_transposed) {
  require_float32(dtype, "MatMul/Gemm");
  GemmSchedule schedule;
  schedule.lanes = arch.lanes;
  int vectors = arch.gemm_nr_vectors;
  // A narrow B (the classifier head's N = 32, a matrix-vector product) gets no wider tile than it
  // needs, so the padding the kernel computes stays below one vector per row.
  if (n)
    vectors = static_cast<int>(std::clamp<int64_t>((*n + arch.lanes - 1) / arch.lanes, 1, vectors));
  schedule.nr = vectors * arch.lanes;
  schedule.mr = arch.gemm_mr;
  int n_dim = b_transposed ? 0 : 1;
  schedule.b_layout.dim = n_dim;
  schedule.b_layout.tile = schedule.nr;
  schedule.b_layout.kind =
      n && *n <= schedule.nr ? Layout::Kind::kPermutedPadded : Layout::Kind::kTiled;
  return schedule;
}

std::string ElementwiseSchedule::to_string() const {
  return cat("elementwise lanes=", lanes, " unroll=", unroll);
}

ElementwiseSchedule choose_elementwise_schedule(const ArchTable& arch, DType dtype,
                                                std::optional<int64_t> inner_extent) {
  require_float32(dtype, "an elementwise group");
  ElementwiseSchedule schedule;
  schedule.lanes = arch.lanes;
  schedule.unroll = arch.elementwise_unroll;
  if (inner_extent) {
    if (*inner_extent < 4) {
      schedule.lanes = 1;
    } else {
      while (schedule.lanes > *inner_extent) schedule.lanes /= 2;
    }
    if (*inner_extent < int64_t{schedule.lanes} * schedule.unroll) schedule.unroll = 1;
  }
  return schedule;
}

std::string RowReduceSchedule::to_string() const { return cat("row-reduce lanes=", lanes); }

RowReduceSchedule choose_row_reduce_schedule(const ArchTable& arch, DType dtype) {
  require_float32(dtype, "a reduction");
  return RowReduceSchedule{arch.lanes};
}

std::string ConvSchedule::to_string() const {
  if (channels_vectorized) {
    return cat("conv channels mr=", mr, " positions=", positions, " lanes=", lanes, " W ",
               w_layout.to_string());
  }
  return cat("conv mr=", mr, " vectors=", vectors, " lanes=", lanes,
             unroll_taps ? " unrolled-taps" : "", " W ", w_layout.to_string());
}

ConvSchedule choose_conv_schedule(const ArchTable& arch, DType dtype, int64_t out_channels,
                                  int64_t groups, int64_t kernel_width,
                                  std::optional<int64_t> output_width) {
  require_float32(dtype, "Conv");
  ConvSchedule schedule;
  schedule.lanes = arch.lanes;
  schedule.mr = static_cast<int>(std::min<int64_t>(arch.conv_mr, out_channels));
  schedule.vectors = arch.conv_vectors;
  schedule.unroll_taps = kernel_width <= arch.conv_unroll_taps;
  // Grouped: a vector of output channels would read as many input channels, a gather per tap
  // (depthwise), so the positions are vectorized instead.
  if (out_channels >= arch.lanes && groups == 1) {
    schedule.channels_vectorized = true;
    const int64_t vectors =
        std::min<int64_t>(arch.conv_channel_vectors, (out_channels + arch.lanes - 1) / arch.lanes);
    schedule.mr = static_cast<int>(vectors) * arch.lanes;
    schedule.positions = arch.conv_positions;
    // The accumulators of conv_channel_vectors x conv_positions: with fewer channel vectors a
    // static output of up to that many positions is one tile (no tail, and no padded copy of
    // the input when there are no pads).
    const int64_t budget = arch.conv_channel_vectors * arch.conv_positions / vectors;
    if (output_width) {
      schedule.positions = static_cast<int>(
          *output_width <= budget ? std::max<int64_t>(*output_width, 1) : arch.conv_positions);
    }
  } else if (output_width && *output_width < int64_t{schedule.lanes} * schedule.vectors) {
    // One vector of positions, the narrowest power of two that holds them (1: scalar code).
    schedule.vectors = 1;
    while (schedule.lanes > 1 && schedule.lanes / 2 >= *output_width) schedule.lanes /= 2;
  }
  if (schedule.mr > 1) {
    schedule.w_layout.kind = Layout::Kind::kTiled;
    schedule.w_layout.dim = 0;
    schedule.w_layout.tile = schedule.mr;
  }
  return schedule;
}

std::vector<PairedRowTile> paired_row_tiles(int mr) {
  std::vector<PairedRowTile> tiles;
  for (int tile = mr - 1; 2 * tile - 1 > mr; --tile)
    tiles.push_back({2 * tile - 1, 2 * tile, tile});
  return tiles;
}

// ---- recurrent cells ---------------------------------------------------------------------------

namespace {

int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

std::string RecurrentSchedule::key() const {
  return cat("vector=", vector_width, " tile=", hidden_tile, " padded=", padded_hidden,
             " batch_tile=", batch_tile, "/", batch_pad,
             shifted_tiles_from > 0 ? cat(" shifted_from=", shifted_tiles_from) : std::string(),
             " gemm=", gemm_vectors, "x", gemm_rows,
             gemm_rows_exact > 0 ? cat(" exact_rows=", gemm_rows_exact) : std::string(),
             gemm_columns_outer ? " columns_outer" : "", stream_weights ? " stream_weights" : "",
             parallel_tiles ? " parallel_tiles" : "",
             parallel_projection ? " parallel_projection" : "", single_entry ? " single_entry" : "",
             alternate_tiles ? " alternate_tiles" : "",
             step_k_split > 1 ? cat(" k_split=", step_k_split) : std::string(),
             gate_quotient == Quotient::kExact       ? " exact_divide"
             : gate_quotient == Quotient::kFractions ? " fractions"
                                                     : "");
}

// ---- the schedule table ------------------------------------------------------------------------

namespace {

// One row per vector width.
//   Step: per batch entry and k, a tile reads G * T floats of R into G * T / V vector
//   accumulators held in registers across the k loop. R streams from L2; about 256 bytes per k
//   keep enough independent FMA chains in flight to take it as fast as L2 delivers. The batched
//   step spends the rest of the register file on batch entries: each R vector loaded serves
//   batch_tile entries (AVX2 has no registers left for it). A batch that is not a multiple of
//   batch_tile runs in tiles of batch_pad entries instead, padded to a multiple of batch_pad, so
//   a batch of 2 or 6 steps no padding entries (docs/measurements.md, "Batches of 2 and 6 in step
//   tiles of 2 entries": per entry, tiles of 2 against tiles of 4).
//   A quantized batch-1 step's G * T / V accumulators are as many chains of dependent vpdpbusd
//   over a short k loop; it splits each into integer_step_split partial sums over interleaved k
//   (AVX-512: 8 chains for an LSTM).
//   Projection: gemm_vectors x gemm_rows accumulators plus the weight vectors and a broadcast
//   fit the register file; with the row tile staged (compile_input_projection) AVX-512 takes
//   4 x 6. The integer projection keeps 2 x 6: at 4 x 6 LLVM assembles part of the activation
//   operands byte by byte (vpinsrb). Its AVX-512 row also has 2 x 8 tiles (16 accumulators) for
//   row counts that are multiples of 8, which 6-row tiles would cover with recomputed rows (a
//   sequence of 16 steps: 18 rows computed). A W larger than the target's L2 per core (read from L3
//   or DRAM at every call) takes 16 x 1 tiles with the next panel prefetched instead: 6-row tiles
//   fetch each panel in their first row tile and leave memory idle in the others
//   (docs/lowering.md "Streamed weights").
//   The measurements behind each choice: docs/measurements.md, "Schedule tables".
struct ScheduleRow {
  int vector_width;
  int step_floats;         // G * T: R floats per k iteration and batch entry
  int integer_step_split;  // partial sums per accumulator in the quantized batch-1 step
  int batch_tile;          // batch entries per tile in the batched step
  int batch_pad;           // ... when the batch is not a multiple of batch_tile
  int gemm_vectors;
  int integer_gemm_vectors;  // the quantized projection's
  int gemm_rows;
  int integer_exact_rows;  // the quantized projection's tile for row counts it divides (0: none)
  // The projection streams W (stream_weights) in tiles of streamed_rows rows x 1 vector when W
  // (at its storage width) overflows L2 (0: never; AVX2 has too few registers).
  int streamed_rows;
};

constexpr ScheduleRow kScheduleTable[] = {
    // AVX-512: 4 x 4 step accumulators; 24 + 5 in the float projection, 12 + 3 integer (16 + 3
    // in 8-row tiles)
    {16, 64, 2, 4, 2, 4, 2, 6, 8, 16},
    // AVX2: 8 step accumulators, 12 + 2 in the projection
    {8, 64, 1, 1, 1, 2, 2, 6, 0, 0},
};

// The smallest batches that step tiles of batch_tile entries with the last shifted inward, where
// the batch is not a multiple of batch_tile (RecurrentSchedule::shifted_tiles_from).
constexpr int kShiftedTilesFrom = 6;
constexpr int kShiftedTilesFromL2 = 18;
// Hidden padding a larger tile may cost over the minimum, for more independent accumulators.
constexpr double kMaxExtraPadding = 1.15;
// The projection's W elements from which its outer tiles run as a parallel loop (64 KiB of float:
// an LSTM of 32 units over 128 inputs).
constexpr int64_t kParallelProjectionWeights = 16384;

// Half of L2 keeps a chunk's XW rows there beside R and the state. RNNC_XW_CHUNK_KIB overrides
// it (0: every run projects at once), for measurements and the tests that compare both.
int64_t xw_chunk_bytes(const KernelTarget& target) {
  return static_cast<int64_t>(env_size_bytes("RNNC_XW_CHUNK_KIB", "KiB", "no chunks",
                                             static_cast<uint64_t>(target.l2_bytes / 2)));
}

// RNNC_GATE_DIVIDE=divide|estimate|fractions replaces the schedule class's choice of how gates
// divide (RecurrentSchedule::gate_quotient; quantized steps given `estimate` divide), so that the
// choice can be measured on a CPU without editing the table: `rnnc run MODEL --random --repeat N
// --compare-env RNNC_GATE_DIVIDE=estimate`. The quotient is part of the kernels' key, so two
// choices never share a cached kernel.
std::optional<Quotient> gate_quotient_override() {
  const char* text = std::getenv("RNNC_GATE_DIVIDE");
  if (!text || !*text) return std::nullopt;
  if (std::strcmp(text, "divide") == 0) return Quotient::kExact;
  if (std::strcmp(text, "estimate") == 0) return Quotient::kEstimate;
  if (std::strcmp(text, "fractions") == 0) return Quotient::kFractions;
  raise_invalid_input(cat("RNNC_GATE_DIVIDE = '", text,
                          "': must be divide, estimate or fractions (unset: the schedule class "
                          "decides)"));
}

}  // namespace

RecurrentSchedule choose_recurrent_schedule(const RecurrentCell& cell, const KernelTarget& target,
                                            bool batched) {
  const int vector_width = target.halide.natural_vector_size(Halide::Float(32));
  const double l2_bytes = static_cast<double>(target.l2_bytes);
  const ScheduleRow* row = &kScheduleTable[std::size(kScheduleTable) - 1];
  for (const ScheduleRow& candidate : kScheduleTable) {
    if (candidate.vector_width == vector_width) row = &candidate;
  }
  RecurrentSchedule schedule;
  schedule.vector_width = row->vector_width;
  const int v = schedule.vector_width, hidden = cell.hidden_size;
  const int gates = static_cast<int>(cell.gates.size());

  // Largest tile (more accumulators, fewer tiles) whose padding stays near the minimum.
  const int min_padded = round_up(hidden, v);
  const int max_vectors = std::max(1, row->step_floats / (gates * v));
  schedule.hidden_tile = v;
  for (int vectors = 1; vectors <= max_vectors; ++vectors) {
    int tile = vectors * v;
    if (tile > min_padded) break;
    if (round_up(hidden, tile) <= min_padded * kMaxExtraPadding) schedule.hidden_tile = tile;
  }
  schedule.padded_hidden = round_up(hidden, schedule.hidden_tile);
  schedule.batch_tile = batched ? row->batch_tile : 1;
  schedule.batch_pad = batched ? row->batch_pad : 1;
  schedule.single_entry = !batched;
  schedule.step_k_split = cell.quant && !batched ? row->integer_step_split : 1;
  const bool zmm = v == 16;
  if (cell.quant) {
    // GRU and RNN steps keep the divide: with the fractions their outputs changed in the last bit
    // with an entry's place in its step tile, so batch slices no longer equal the whole run
    // (docs/lowering.md, "Gate activations as fractions").
    const bool fractions = zmm && target.divides_beside_multiplies && cell.op == RecurrentOp::kLstm;
    schedule.gate_quotient =
        gate_quotient_override().value_or(fractions ? Quotient::kFractions : Quotient::kExact);
    if (schedule.gate_quotient == Quotient::kEstimate) schedule.gate_quotient = Quotient::kExact;
  } else {
    schedule.gate_quotient = gate_quotient_override().value_or(
        zmm && (target.splits_512_bit_ops || target.divides_beside_multiplies)
            ? Quotient::kExact
            : Quotient::kEstimate);
  }
  // GRU without linear_before_reset reads a whole step's rt (.) h between its two phases in
  // hidden order, so its tiles cannot be visited backwards.
  schedule.alternate_tiles = !(cell.op == RecurrentOp::kGru && !cell.linear_before_reset);

  // Projection tile: as many vectors along n as divide N / V (N has no tail).
  const int n_vectors = gates * schedule.padded_hidden / v;
  schedule.gemm_vectors = 1;
  for (int vectors = cell.quant ? row->integer_gemm_vectors : row->gemm_vectors; vectors >= 1;
       --vectors) {
    if (n_vectors % vectors == 0) {
      schedule.gemm_vectors = vectors;
      break;
    }
  }
  schedule.gemm_rows = row->gemm_rows;
  if (cell.quant) schedule.gemm_rows_exact = row->integer_exact_rows;
  const double weight_bytes = 4.0 * gates * schedule.padded_hidden * cell.input_size;
  schedule.gemm_columns_outer = weight_bytes > l2_bytes / 2;
  const double storage_bytes = cell.quant ? cell.quant->input_widths.storage_bits / 8.0 : 4.0;
  if (row->streamed_rows > 0 &&
      storage_bytes * gates * schedule.padded_hidden * cell.input_size > l2_bytes) {
    schedule.stream_weights = true;
    schedule.gemm_columns_outer = true;
    schedule.gemm_vectors = 1;
    schedule.gemm_rows = row->streamed_rows;
    schedule.gemm_rows_exact = 0;
  }
  schedule.xw_chunk_bytes = xw_chunk_bytes(target);
  const double weight_bits = cell.quant ? cell.quant->state_widths.storage_bits : 32;
  schedule.step_weight_bytes =
      weight_bits / 8 * gates * schedule.padded_hidden * static_cast<double>(hidden);
  // An R over L2 is streamed from L3 or DRAM at every step: its tiles become a parallel loop, so
  // with a second thread free (a model of 2+ threads whose other blocks are idle) both cores'
  // bandwidth and caches serve it. A smaller step is too short for a parallel loop's hand-off to
  // pay.
  schedule.parallel_tiles = schedule.step_weight_bytes > l2_bytes &&
                            schedule.padded_hidden / schedule.hidden_tile >= 4;
  // Tiles of batch_tile entries, the last shifted inward, from a batch of 6 where each R load
  // costs the most: an R streamed from beyond L2, or an integer step (whose R loads feed four
  // times the multiply-adds of a float one); from 18 entries where a float R stays in L2 and
  // tiles of batch_pad entries run nearly as fast (docs/measurements.md, "Batches that are not a
  // multiple of the step tile"). Where 512-bit operations issue as two halves (Zen 4), the
  // entries a shifted tile computes twice cost more than half-used R loads save, except for a
  // float R streamed from beyond L2 (docs/measurements.md, "Shifted step tiles on Zen 4").
  if (batched && schedule.batch_pad < schedule.batch_tile) {
    const bool r_beyond_l2 = schedule.step_weight_bytes > l2_bytes;
    if (target.splits_512_bit_ops) {
      schedule.shifted_tiles_from = !cell.quant && r_beyond_l2 ? kShiftedTilesFrom : 0;
    } else {
      schedule.shifted_tiles_from =
          cell.quant || r_beyond_l2 ? kShiftedTilesFrom : kShiftedTilesFromL2;
    }
  }
  // A small W makes a call's work a few microseconds at most, even over a long sequence (an
  // enhancement model's GRU of 4 units: 96 weights): less than handing tiles to another thread
  // costs, so its projection stays one loop on the calling thread.
  schedule.parallel_projection =
      static_cast<int64_t>(gates) * schedule.padded_hidden * cell.input_size >=
      kParallelProjectionWeights;
  return schedule;
}

}  // namespace rnnc
