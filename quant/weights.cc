#include "quant/weights.h"

#include <algorithm>
#include <cmath>

#include "ir/error.h"

namespace rnnc::quant {

namespace {

struct Grid {
  float scale = 1;
  int32_t zero_point = 0;
  int32_t qmin = 0, qmax = 0;
};

Grid grid_for(float lo, float hi, int bits, bool symmetric) {
  Grid grid;
  if (symmetric) {
    grid.qmax = (1 << (bits - 1)) - 1;
    grid.qmin = -grid.qmax;
    grid.scale = std::max(-lo, hi) / static_cast<float>(grid.qmax);
  } else {
    grid.qmax = (1 << bits) - 1;
    grid.scale = (hi - lo) / static_cast<float>(grid.qmax);
    if (grid.scale > 0) {
      grid.zero_point = static_cast<int32_t>(
          std::clamp(std::nearbyint(-lo / grid.scale), 0.0f, static_cast<float>(grid.qmax)));
    }
  }
  if (!(grid.scale > 0)) grid.scale = 1;
  return grid;
}

int32_t quantize(float w, const Grid& grid) {
  const float q = std::nearbyint(w / grid.scale) + static_cast<float>(grid.zero_point);
  return static_cast<int32_t>(
      std::clamp(q, static_cast<float>(grid.qmin), static_cast<float>(grid.qmax)));
}

float dequantize(int32_t q, const Grid& grid) {
  return static_cast<float>(q - grid.zero_point) * grid.scale;
}

double squared_error(const std::vector<float>& values, const Grid& grid) {
  double error = 0;
  for (float v : values) {
    const double d = static_cast<double>(v) - dequantize(quantize(v, grid), grid);
    error += d * d;
  }
  return error;
}

}  // namespace

WeightShape recurrent_weight_shape(int64_t hidden_size) {
  return WeightShape{1, 2, 1, hidden_size};
}

WeightShape matrix_weight_shape(bool transposed) {
  return WeightShape{0, 1, transposed ? 0 : 1, 1};
}

void choose_range(const std::vector<float>& values, RangeMethod method, double percentile, int bits,
                  bool symmetric, float& lo, float& hi) {
  lo = 0;
  hi = 0;
  for (float v : values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (values.empty() || method == RangeMethod::kMinMax) return;
  if (method == RangeMethod::kPercentile) {
    // The p-th percentile from the top and the (100 - p)-th from the bottom (0 kept inside).
    std::vector<float> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    const double last = static_cast<double>(sorted.size() - 1);
    const auto at = [&](double p) {
      return sorted[static_cast<size_t>(std::llround(last * p / 100.0))];
    };
    lo = std::min(0.0f, at(100.0 - percentile));
    hi = std::max(0.0f, at(percentile));
    return;
  }
  // kMse: shrink the range by factors 1, 63/64, ..., 1/2 and keep the one with the least error.
  const float full_lo = lo, full_hi = hi;
  double best = -1;
  for (int step = 0; step <= 32; ++step) {
    const float factor = 1.0f - static_cast<float>(step) / 64.0f;
    const double error = squared_error(values, grid_for(full_lo * factor, full_hi * factor, bits,
                                                        symmetric));
    if (best < 0 || error < best) {
      best = error;
      lo = full_lo * factor;
      hi = full_hi * factor;
    }
  }
}

QuantizedWeight quantize_weight(const Tensor& weight, const WeightScheme& scheme,
                                const WeightShape& shape) {
  if (weight.dtype() != DType::kFloat32) {
    raise_invalid_input(cat("weight of element type ", dtype_onnx_name(weight.dtype()),
                            ": only float32 weights are quantized"));
  }
  const int64_t rank = weight.rank();
  if (rank < 2) {
    raise_invalid_input(cat("weight of shape ", shape_text(weight.shape()),
                            ": quantization needs a matrix (rank >= 2)"));
  }
  int64_t axis = -1, block = 1;
  switch (scheme.granularity) {
    case Granularity::kTensor: break;
    case Granularity::kRow: axis = shape.row_axis; break;
    case Granularity::kColumn: axis = shape.column_axis; break;
    case Granularity::kChannel:
      axis = shape.channel_axis;
      block = shape.channel_block;
      break;
  }
  if (axis >= rank) {
    raise_invalid_input(cat("weight of shape ", shape_text(weight.shape()), " has no axis ", axis));
  }
  // Elements of group i: every index whose coordinate along `axis` / block is i.
  const std::vector<int64_t>& dims = weight.shape();
  const int64_t axis_size = axis < 0 ? 1 : dims[static_cast<size_t>(axis)];
  if (axis >= 0 && axis_size % block != 0) {
    raise_invalid_input(cat("weight of shape ", shape_text(dims), ": axis ", axis, " (", axis_size,
                            ") is not a whole number of channel blocks of ", block));
  }
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank && axis >= 0; ++d) inner *= dims[static_cast<size_t>(d)];
  const int64_t groups = axis < 0 ? 1 : axis_size / block;
  auto group_of = [&](int64_t i) -> int64_t {
    return axis < 0 ? 0 : (i / inner) % axis_size / block;
  };

  const float* w = weight.data<float>();
  std::vector<std::vector<float>> members(static_cast<size_t>(groups));
  for (int64_t i = 0; i < weight.numel(); ++i) members[static_cast<size_t>(group_of(i))].push_back(w[i]);
  std::vector<Grid> grids;
  for (const std::vector<float>& values : members) {
    float lo = 0, hi = 0;
    choose_range(values, scheme.method, scheme.percentile, scheme.bits, scheme.symmetric, lo, hi);
    grids.push_back(grid_for(lo, hi, scheme.bits, scheme.symmetric));
  }

  QuantizedWeight out;
  out.axis = axis;
  const DType storage = scheme.bits > 8     ? DType::kInt32
                        : scheme.symmetric ? DType::kInt8
                                           : DType::kUInt8;
  out.q = Tensor(storage, dims);
  out.dequantized = Tensor(DType::kFloat32, dims);
  const std::vector<int64_t> scale_shape =
      axis < 0 ? std::vector<int64_t>{} : std::vector<int64_t>{axis_size};
  out.scale = Tensor(DType::kFloat32, scale_shape);
  if (!scheme.symmetric) out.zero_point = Tensor(storage, scale_shape);
  for (int64_t i = 0; i < out.scale.numel(); ++i) {
    const Grid& grid = grids[static_cast<size_t>(axis < 0 ? 0 : i / block)];
    out.scale.data<float>()[i] = grid.scale;
    if (!scheme.symmetric) out.zero_point.data<uint8_t>()[i] = static_cast<uint8_t>(grid.zero_point);
  }
  for (int64_t i = 0; i < weight.numel(); ++i) {
    const Grid& grid = grids[static_cast<size_t>(group_of(i))];
    const int32_t q = quantize(w[i], grid);
    switch (storage) {
      case DType::kInt8: out.q.data<int8_t>()[i] = static_cast<int8_t>(q); break;
      case DType::kUInt8: out.q.data<uint8_t>()[i] = static_cast<uint8_t>(q); break;
      default: out.q.data<int32_t>()[i] = q; break;
    }
    out.dequantized.data<float>()[i] = dequantize(q, grid);
  }
  return out;
}

}  // namespace rnnc::quant
