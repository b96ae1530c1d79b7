// Reference kernels for Resize, Upsample and GridSample (docs/ops/resize.md). Interpolation is
// separable: each axis maps every output position to a coordinate in the input
// (coordinate_transformation_mode) and from it to a few input positions with weights (nearest: one;
// linear: two; cubic: four; antialias: the filter stretched by 1 / scale when downscaling). An
// output element is the sum, over the product of its axes' taps, of the weight products times the
// input element, computed in double. Nearest copies the element instead, so it is exact for every
// type, strings included.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/reference/kernel.h"
#include "ir/shape_inference/resize.h"

namespace rnnc {

namespace {

std::optional<std::vector<double>> optional_doubles(const KernelContext& context, int input) {
  if (input < 0 || !context.has_input(static_cast<size_t>(input))) return std::nullopt;
  const Tensor& tensor = context.input(static_cast<size_t>(input));
  if (tensor.numel() == 0) return std::nullopt;  // Resize-11 writes an empty tensor for "absent"
  std::vector<double> values;
  for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.get_double(i));
  return values;
}

void resize_kernel(KernelContext& context) {
  const Node& node = context.node;
  ResizeAttributes attributes = read_resize_attributes(node);
  ResizeInputs at = resize_inputs(node);
  const Tensor& x = context.input(0);
  std::optional<std::vector<double>> scales;
  if (node.op_type() == "Upsample" && node.opset() < 9) {
    std::vector<float> values = node.attr_floats("scales");
    scales.emplace(values.begin(), values.end());
  } else {
    scales = optional_doubles(context, at.scales);
  }
  std::optional<std::vector<int64_t>> sizes;
  if (at.sizes >= 0 && context.has_input(static_cast<size_t>(at.sizes)) &&
      context.input(static_cast<size_t>(at.sizes)).numel() > 0) {
    sizes = tensor_to_int64s(context.input(static_cast<size_t>(at.sizes)));
  }
  ResizeGeometry geometry =
      resize_geometry(node, attributes, x.shape(), scales, sizes, optional_doubles(context, at.roi),
                      ErrorKind::kInvalidInput);
  size_t rank = x.shape().size();
  std::vector<std::vector<AxisSample>> samples(rank);
  for (size_t a = 0; a < rank; ++a) {
    int64_t in = x.shape()[a], out = geometry.output[a];
    if (in == 0 && out > 0) {
      context.fail_input(cat("axis ", a, " of input X ", shape_text(x.shape()),
                             " is empty and cannot be resized to ", out));
    }
    for (int64_t o = 0; o < out; ++o) {
      samples[a].push_back(sample_axis(attributes, o, in, out, geometry.scale[a],
                                       geometry.length[a], geometry.roi[a],
                                       geometry.roi[a + rank]));
    }
  }
  Tensor y(x.dtype(), geometry.output);
  bool copy = attributes.mode == "nearest";
  if (!copy && x.dtype() == DType::kString) {
    raise_unsupported(cat(node.describe(), ": ", attributes.mode,
                          " interpolation of string tensors (only nearest copies strings)"));
  }
  std::vector<int64_t> strides = row_major_strides(x.shape());
  std::vector<int64_t> out_index, tap_index(rank);
  for (int64_t flat = 0; flat < y.numel(); ++flat) {
    unravel(flat, geometry.output, out_index);
    std::vector<const AxisSample*> axis_samples(rank);
    bool outside = false;
    for (size_t a = 0; a < rank; ++a) {
      axis_samples[a] = &samples[a][static_cast<size_t>(out_index[a])];
      outside = outside || axis_samples[a]->outside;
    }
    if (outside) {
      if (x.dtype() == DType::kString) {
        y.strings()[static_cast<size_t>(flat)] = "";
      } else {
        y.set_double(flat, attributes.extrapolation_value);
      }
      continue;
    }
    if (copy) {
      int64_t offset = 0;
      for (size_t a = 0; a < rank; ++a) offset += axis_samples[a]->taps[0].index * strides[a];
      if (x.dtype() == DType::kString) {
        y.strings()[static_cast<size_t>(flat)] = x.strings()[static_cast<size_t>(offset)];
      } else {
        std::memcpy(static_cast<uint8_t*>(y.raw_data()) + flat * dtype_size(x.dtype()),
                    static_cast<const uint8_t*>(x.raw_data()) + offset * dtype_size(x.dtype()),
                    dtype_size(x.dtype()));
      }
      continue;
    }
    // Odometer over the taps of every axis.
    std::fill(tap_index.begin(), tap_index.end(), 0);
    double sum = 0;
    for (;;) {
      double weight = 1;
      int64_t offset = 0;
      for (size_t a = 0; a < rank; ++a) {
        const Tap& tap = axis_samples[a]->taps[static_cast<size_t>(tap_index[a])];
        weight *= tap.weight;
        offset += tap.index * strides[a];
      }
      sum += weight * x.get_double(offset);
      size_t a = rank;
      for (; a > 0; --a) {
        if (++tap_index[a - 1] < static_cast<int64_t>(axis_samples[a - 1]->taps.size())) break;
        tap_index[a - 1] = 0;
      }
      if (a == 0) break;
    }
    y.set_double(flat, sum);
  }
  context.outputs[0] = y;
}

// ---- GridSample --------------------------------------------------------------------------

// PyTorch's reflection of a coordinate into [twice_low / 2, twice_high / 2].
double reflect(double x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0;
  double low = twice_low / 2, span = (twice_high - twice_low) / 2;
  x = std::fabs(x - low);
  double extra = std::fmod(x, span);
  int64_t flips = static_cast<int64_t>(std::floor(x / span));
  return flips % 2 == 0 ? extra + low : span - extra + low;
}

struct GridAxis {
  int64_t size;
  bool align_corners;
  std::string padding;
  // Grid value in [-1, 1] to a pixel coordinate.
  double unnormalize(double g) const {
    double n = static_cast<double>(size);
    return align_corners ? (g + 1) / 2 * (n - 1) : ((g + 1) * n - 1) / 2;
  }
  // border and reflection move a coordinate inside [0, size - 1]; zeros leaves it.
  double pad(double x) const {
    double last = static_cast<double>(size - 1);
    if (padding == "border") return std::clamp(x, 0.0, last);
    if (padding == "reflection") {
      x = align_corners ? reflect(x, 0, 2 * last) : reflect(x, -1, 2 * last + 1);
      return std::clamp(x, 0.0, last);
    }
    return x;
  }
};

// Y[n, c, o] samples X[n, c] at the grid point of o: the grid's last dim holds (x, y, ...), x for
// X's last axis. Taps outside X are 0 under padding_mode zeros; border and reflection move the
// coordinate inside (bilinear and nearest) or each tap (bicubic), as PyTorch's grid_sample.
void grid_sample_kernel(KernelContext& context) {
  const Node& node = context.node;
  const Tensor& x = context.input(0);
  const Tensor& grid = context.input(1);
  int64_t rank = x.rank();
  size_t spatial = static_cast<size_t>(rank - 2);
  if (rank < 3 || grid.rank() != rank || grid.dim(rank - 1) != static_cast<int64_t>(spatial) ||
      grid.dim(0) != x.dim(0)) {
    context.fail_input(cat("input grid has shape ", shape_text(grid.shape()), " for X of shape ",
                           shape_text(x.shape()), ", expected [N, D1_out, ..., ", spatial, "]"));
  }
  if (x.dtype() == DType::kString) {
    raise_unsupported(cat(node.describe(), ": sampling string tensors"));
  }
  std::string mode = node.attr_string("mode", node.opset() >= 20 ? "linear" : "bilinear");
  bool cubic = mode == "bicubic" || mode == "cubic";
  bool nearest = mode == "nearest";
  std::vector<GridAxis> axes;
  for (size_t a = 0; a < spatial; ++a) {
    axes.push_back({x.dim(static_cast<int64_t>(a) + 2), node.attr_int("align_corners", 0) == 1,
                    node.attr_string("padding_mode", "zeros")});
  }
  std::vector<int64_t> out_spatial(grid.shape().begin() + 1, grid.shape().end() - 1);
  std::vector<int64_t> shape = {x.dim(0), x.dim(1)};
  shape.insert(shape.end(), out_spatial.begin(), out_spatial.end());
  Tensor y(x.dtype(), shape);
  int64_t channels = x.dim(1),
          in_size = shape_numel(std::vector<int64_t>(x.shape().begin() + 2, x.shape().end()));
  int64_t out_size = shape_numel(out_spatial);
  std::vector<int64_t> strides =
      row_major_strides(std::vector<int64_t>(x.shape().begin() + 2, x.shape().end()));
  std::vector<std::vector<Tap>> taps(spatial);
  std::vector<int64_t> tap_index(spatial);
  for (int64_t n = 0; n < x.dim(0); ++n) {
    for (int64_t o = 0; o < out_size; ++o) {
      // Taps per axis: (index, weight), index -1 where the tap reads a 0 (padding zeros).
      for (size_t a = 0; a < spatial; ++a) {
        const GridAxis& axis = axes[a];
        double g = grid.get_double((n * out_size + o) * static_cast<int64_t>(spatial) +
                                   static_cast<int64_t>(spatial - 1 - a));
        double coordinate = axis.unnormalize(g);
        auto index_of = [&](double position) -> int64_t {
          if (!(position >= 0 && position <= static_cast<double>(axis.size - 1))) return -1;
          return static_cast<int64_t>(position);
        };
        taps[a].clear();
        if (nearest) {
          taps[a].push_back({index_of(std::nearbyint(axis.pad(coordinate))), 1.0});
        } else if (!cubic) {
          double p = axis.pad(coordinate);
          double low = std::floor(p);
          taps[a].push_back({index_of(low), 1 - (p - low)});
          taps[a].push_back({index_of(low + 1), p - low});
        } else {
          double low = std::floor(coordinate);
          for (int k = -1; k <= 2; ++k) {
            double position = axis.pad(low + k);
            taps[a].push_back({index_of(position), cubic_weight(coordinate - (low + k), -0.75)});
          }
        }
      }
      for (int64_t c = 0; c < channels; ++c) {
        double sum = 0;
        std::fill(tap_index.begin(), tap_index.end(), 0);
        for (;;) {
          double weight = 1;
          int64_t offset = 0;
          bool inside = true;
          for (size_t a = 0; a < spatial; ++a) {
            const Tap& tap = taps[a][static_cast<size_t>(tap_index[a])];
            weight *= tap.weight;
            inside = inside && tap.index >= 0;
            offset += tap.index * strides[a];
          }
          if (inside && weight != 0)
            sum += weight * x.get_double((n * channels + c) * in_size + offset);
          size_t a = spatial;
          for (; a > 0; --a) {
            if (++tap_index[a - 1] < static_cast<int64_t>(taps[a - 1].size())) break;
            tap_index[a - 1] = 0;
          }
          if (a == 0) break;
        }
        y.set_double((n * channels + c) * out_size + o, sum);
      }
    }
  }
  context.outputs[0] = y;
}

}  // namespace

void register_resize_kernels(std::map<std::string, Kernel>& registry) {
  registry["Resize"] = resize_kernel;
  registry["Upsample"] = resize_kernel;
  registry["GridSample"] = grid_sample_kernel;
}

}  // namespace rnnc
