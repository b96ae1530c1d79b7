// Reference kernel for Resize and Upsample (docs/ops/resize.md). Interpolation is separable: each
// axis maps every output position to a coordinate in the input (coordinate_transformation_mode)
// and from it to a few input positions with weights (nearest: one; linear: two; cubic: four;
// antialias: the filter stretched by 1 / scale when downscaling). An output element is the sum,
// over the product of its axes' taps, of the weight products times the input element, computed in
// double. Nearest copies the element instead, so it is exact for every type, strings included.
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

}  // namespace

void register_resize_kernels(std::map<std::string, Kernel>& registry) {
  registry["Resize"] = resize_kernel;
  registry["Upsample"] = resize_kernel;
}

}  // namespace rnnc
