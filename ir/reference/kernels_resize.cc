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

struct Tap {
  int64_t index;
  double weight;
};

// Taps of one output position along one axis; `outside` when tf_crop_and_resize maps it out of
// the input, where the output is extrapolation_value.
struct AxisSample {
  std::vector<Tap> taps;
  bool outside = false;
};

// x_original for output position `o` of an axis of `in` elements resized to `out` elements, with
// `scale` and the real-valued resized `length` (ResizeGeometry).
double original_coordinate(const std::string& mode, int64_t o, int64_t in, int64_t out,
                           double scale, double length, double roi_start, double roi_end) {
  double x = static_cast<double>(o);
  double length_in = static_cast<double>(in);
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    // Centers the sampled region when floor() made the output smaller than in * scale.
    double adjustment = static_cast<double>(out) / length;
    double offset = length_in / 2 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (mode == "pytorch_half_pixel") return length > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return length == 1 ? 0.0 : x * (length_in - 1) / (length - 1);
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  RNNC_CHECK(mode == "tf_crop_and_resize", "coordinate mode ", mode, " passed validation");
  if (length == 1) return 0.5 * (roi_start + roi_end) * (length_in - 1);
  return roi_start * (length_in - 1) + x * (roi_end - roi_start) * (length_in - 1) / (length - 1);
}

int64_t nearest_index(double x, const std::string& nearest_mode) {
  double picked = nearest_mode == "round_prefer_floor"  ? std::ceil(x - 0.5)
                  : nearest_mode == "round_prefer_ceil" ? std::floor(x + 0.5)
                  : nearest_mode == "floor"             ? std::floor(x)
                                                        : std::ceil(x);
  return static_cast<int64_t>(picked);
}

// The cubic convolution kernel with coefficient a (Keys 1981): 1 at 0, 0 at the other integers.
double cubic_weight(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

AxisSample sample_axis(const ResizeAttributes& attributes, int64_t o, int64_t in, int64_t out,
                       double scale, double length, double roi_start, double roi_end) {
  AxisSample sample;
  double x = original_coordinate(attributes.coordinate_mode, o, in, out, scale, length, roi_start,
                                 roi_end);
  if (attributes.coordinate_mode == "tf_crop_and_resize" &&
      (x < 0 || x > static_cast<double>(in - 1))) {
    sample.outside = true;
    return sample;
  }
  auto clamp = [in](int64_t j) { return std::min<int64_t>(std::max<int64_t>(j, 0), in - 1); };
  if (attributes.mode == "nearest") {
    sample.taps.push_back({clamp(nearest_index(x, attributes.nearest_mode)), 1.0});
    return sample;
  }
  bool cubic = attributes.mode == "cubic";
  double support = cubic ? 2.0 : 1.0;
  // Antialiasing stretches the filter by 1 / scale when downscaling: more inputs per output.
  double stretch = attributes.antialias ? std::min(scale, 1.0) : 1.0;
  double reach = support / stretch;
  int64_t first = static_cast<int64_t>(std::ceil(x - reach));
  int64_t last = static_cast<int64_t>(std::floor(x + reach));
  double total = 0;
  std::vector<Tap> raw;
  for (int64_t j = first; j <= last; ++j) {
    double t = (static_cast<double>(j) - x) * stretch;
    double weight =
        cubic ? cubic_weight(t, attributes.cubic_coeff_a) : std::max(0.0, 1 - std::fabs(t));
    if (weight == 0) continue;
    raw.push_back({j, weight});
    total += weight;
  }
  // The stretched filter no longer sums to 1: normalize it (the unstretched ones already do).
  if (attributes.antialias && total != 0) {
    for (Tap& tap : raw) tap.weight /= total;
  }
  double kept = 0;
  for (const Tap& tap : raw) {
    bool inside = tap.index >= 0 && tap.index < in;
    if (attributes.exclude_outside && !inside) continue;
    sample.taps.push_back({clamp(tap.index), tap.weight});
    kept += tap.weight;
  }
  if (attributes.exclude_outside && kept != 0) {
    for (Tap& tap : sample.taps) tap.weight /= kept;
  }
  RNNC_CHECK(!sample.taps.empty(), "no input position within reach of coordinate ", x);
  return sample;
}

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
