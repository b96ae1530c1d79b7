// Weight quantization: a float weight -> the integers, scales and zero points a DequantizeLinear
// reads, for one scheme (quant/scheme.h). The plain reference of the arithmetic (docs/quant.md):
//   symmetric:  scale = bound / (2^(bits-1) - 1), q = clamp(round(w / scale), -qmax, qmax)
//   asymmetric: scale = (hi - lo) / (2^bits - 1), zp = clamp(round(-lo / scale), 0, 2^bits - 1),
//               q = clamp(round(w / scale) + zp, 0, 2^bits - 1)
// round is half to even; [lo, hi] always contains 0, and a group of zeros gets scale 1. The range
// of each group of elements sharing a scale comes from its min/max, a percentile, or the clipping
// that minimizes the squared error (RangeMethod).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/tensor.h"
#include "quant/scheme.h"

namespace rnnc::quant {

// How a weight's axes map to the granularities.
struct WeightShape {
  int row_axis = 0, column_axis = 1;  // the stored matrix's axes (absolute)
  int channel_axis = 1;               // the output channel's axis
  int64_t channel_block = 1;          // channel: consecutive indices of channel_axis sharing a
                                      // scale (a gate block of LSTM/GRU/RNN weights: hidden_size)
};
// W or R of LSTM/GRU/RNN: [dirs, gates * hidden, k]; channel = gate block.
WeightShape recurrent_weight_shape(int64_t hidden_size);
// MatMul's B [k, n] (channel n), or Gemm's B ([k, n], or [n, k] with transB).
WeightShape matrix_weight_shape(bool transposed);

struct QuantizedWeight {
  Tensor q;           // int8 (symmetric, <= 8 bits), uint8 (asymmetric), int32 (> 8 bits)
  Tensor scale;       // float32: a scalar (per tensor) or [size of axis]
  Tensor zero_point;  // same dtype as q and shape as scale; undefined when symmetric
  int64_t axis = -1;  // DequantizeLinear's axis; -1 for per tensor
  Tensor dequantized;  // (q - zero_point) * scale, as DequantizeLinear computes it
};

// Throws kInvalidInput for a non-float32 weight, a rank below 2 or axes the weight lacks.
QuantizedWeight quantize_weight(const Tensor& weight, const WeightScheme& scheme,
                                const WeightShape& shape);

// Chooses [lo, hi] (containing 0) for `values` by `method`; bits/symmetric matter to kMse.
void choose_range(const std::vector<float>& values, RangeMethod method, double percentile, int bits,
                  bool symmetric, float& lo, float& hi);

}  // namespace rnnc::quant
