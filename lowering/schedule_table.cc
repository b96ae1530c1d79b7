#include "lowering/schedule_table.h"

#include <Halide.h>

#include <algorithm>

#include "ir/error.h"

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
constexpr ArchTable kSse41 = {"sse41", 4, 16, 6, 2, 2, 4, 1, 7, 2, 4};

void require_float32(DType dtype, const char* what) {
  if (dtype != DType::kFloat32) {
    raise_unsupported(cat(what, " is lowered for float32 only, not ", dtype_onnx_name(dtype)));
  }
}

}  // namespace

const ArchTable& arch_table(const Halide::Target& target) {
  if (target.has_feature(Halide::Target::AVX512)) return kAvx512;
  if (target.has_feature(Halide::Target::AVX2)) return kAvx2;
  return kSse41;
}

std::string GemmSchedule::to_string() const {
  return cat("gemm nr=", nr, " mr=", mr, " lanes=", lanes, " B ", b_layout.to_string());
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
                                  int64_t kernel_width, std::optional<int64_t> output_width) {
  require_float32(dtype, "Conv");
  ConvSchedule schedule;
  schedule.lanes = arch.lanes;
  schedule.mr = static_cast<int>(std::min<int64_t>(arch.conv_mr, out_channels));
  schedule.vectors = arch.conv_vectors;
  schedule.unroll_taps = kernel_width <= arch.conv_unroll_taps;
  if (out_channels >= arch.lanes) {
    schedule.channels_vectorized = true;
    const int64_t vectors = std::min<int64_t>(arch.conv_channel_vectors,
                                              (out_channels + arch.lanes - 1) / arch.lanes);
    schedule.mr = static_cast<int>(vectors) * arch.lanes;
    schedule.positions = arch.conv_positions;
    if (output_width) {
      schedule.positions =
          static_cast<int>(std::clamp<int64_t>(*output_width, 1, arch.conv_positions));
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

}  // namespace rnnc
