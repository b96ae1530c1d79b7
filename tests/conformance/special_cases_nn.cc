// Special cases of the nn ops: window geometry for Conv and the pools, per-channel parameter
// shapes, LayerNormalization's normalized shape, reduction axes, ArgMax's non-empty axis and
// Dropout's inference-only modes.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ir/error.h"
#include "tests/conformance/draft.h"

namespace rnnc::conformance {

namespace {

int64_t normalized_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// Window attributes per spatial axis. Optional ones are left out half the time (their default).
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins, then ends
};

Window draw_window(Draft& draft, size_t spatial, bool pads_below_kernel, bool with_dilations) {
  Rng& rng = draft.attr_rng;
  Window w;
  for (size_t i = 0; i < spatial; ++i) w.kernel.push_back(rng.uniform_int(1, 3));
  bool strided = rng.chance(0.5), dilated = with_dilations && rng.chance(0.5);
  for (size_t i = 0; i < spatial; ++i) {
    w.strides.push_back(strided ? rng.uniform_int(1, 3) : 1);
    w.dilations.push_back(dilated ? rng.uniform_int(1, 2) : 1);
  }
  if (strided) draft.set_ints("strides", w.strides);
  if (dilated) draft.set_ints("dilations", w.dilations);
  w.pads.assign(2 * spatial, 0);
  if (draft.attr_string("auto_pad", "NOTSET") == "NOTSET" && rng.chance(0.5)) {
    for (size_t i = 0; i < 2 * spatial; ++i) {
      int64_t limit = pads_below_kernel ? w.kernel[i % spatial] - 1 : 2;
      w.pads[i] = rng.uniform_int(0, limit);
    }
    draft.set_ints("pads", w.pads);
  }
  return w;
}

// Spatial sizes the window fits in: at least the dilated kernel minus the pads (NOTSET/VALID).
// With `full_extent` (pools) at least the dilated kernel, so that with pads below the kernel every
// window has a tap inside the input (a window wholly in the padding is left undefined by the spec).
std::vector<int64_t> spatial_dims(Draft& draft, const Window& w, bool full_extent) {
  std::string auto_pad = draft.attr_string("auto_pad", "NOTSET");
  size_t spatial = w.kernel.size();
  std::vector<int64_t> dims;
  std::vector<int64_t> minimum;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t least = full_extent            ? extent
                    : auto_pad == "NOTSET" ? extent - w.pads[i] - w.pads[i + spatial]
                    : auto_pad == "VALID"  ? extent
                                           : 1;
    minimum.push_back(std::max<int64_t>(1, least));
    dims.push_back(minimum.back() + draft.rng.uniform_int(0, spatial == 1 ? 6 : 3));
  }
  size_t axis = static_cast<size_t>(draft.rng.uniform_int(0, static_cast<int64_t>(spatial) - 1));
  if (draft.forced_is(Boundary::kDim1) && minimum[axis] == 1) dims[axis] = 1;
  if (draft.forced_is(Boundary::kDimLarge)) {
    for (size_t i = 0; i < spatial; ++i) dims[i] = std::min<int64_t>(dims[i], minimum[i] + 1);
    dims[axis] = draft.rng.uniform_int(kLargeDim, 2 * kLargeDim);
  }
  // SAME with a stride larger than the dilated kernel: the spec's pad formula
  // (out - 1) * stride + extent - in goes negative; rnnc pads 0 (see docs/conformance.md).
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < spatial; ++i) {
      int64_t out = (dims[i] + w.strides[i] - 1) / w.strides[i];
      int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
      if ((out - 1) * w.strides[i] + extent - dims[i] < 0) draft.tags.insert("same_negative_pad");
    }
  }
  return dims;
}

// Conv: X [N, C, D...], W [M, C / group, k...], B [M].
void conv(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  size_t spatial = x.shape.size() - 2;
  int64_t group = draft.attr_int("group", 1);
  Window w = draw_window(draft, spatial, /*pads_below_kernel=*/false, /*with_dilations=*/true);
  if (draft.attr_rng.chance(0.5)) draft.set_ints("kernel_shape", w.kernel);
  int64_t n = draft.forced_is(Boundary::kDim0) ? 0 : draft.rng.uniform_int(1, 2);
  if (draft.forced_is(Boundary::kDim1)) n = 1;
  int64_t channels_per_group = draft.rng.uniform_int(1, 3);
  int64_t maps_per_group = draft.rng.uniform_int(1, 3);
  x.shape = {n, group * channels_per_group};
  for (int64_t d : spatial_dims(draft, w, /*full_extent=*/false)) x.shape.push_back(d);
  OperandDraft& weights = *draft.input("W");
  weights.shape = {group * maps_per_group, channels_per_group};
  weights.shape.insert(weights.shape.end(), w.kernel.begin(), w.kernel.end());
  draft.input("B")->shape = {group * maps_per_group};
  if (group > 1) draft.tags.insert("grouped");
}

// ConvTranspose: X [N, C, D...], W [C, M / group, k...], B [M]. Each spatial size is drawn so that
// the padded output keeps at least one element; output_padding stays below the stride (what
// PyTorch's exporter produces); output_shape, when drawn, is the padded size give or take 1, so
// the spec's pad split (larger half at the beginning unless SAME_UPPER) is exercised both ways.
void conv_transpose(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  size_t spatial = x.shape.size() - 2;
  int64_t group = draft.attr_int("group", 1);
  std::string auto_pad = draft.attr_string("auto_pad", "NOTSET");
  Window w = draw_window(draft, spatial, /*pads_below_kernel=*/true, /*with_dilations=*/true);
  if (draft.attr_rng.chance(0.5)) draft.set_ints("kernel_shape", w.kernel);
  std::vector<int64_t> output_padding(spatial, 0);
  if (draft.attr_rng.chance(0.3)) {
    for (size_t i = 0; i < spatial; ++i) {
      output_padding[i] = draft.attr_rng.uniform_int(0, w.strides[i] - 1);
    }
    draft.set_ints("output_padding", output_padding);
  }
  int64_t n = draft.forced_is(Boundary::kDim0) ? 0 : draft.rng.uniform_int(1, 2);
  if (draft.forced_is(Boundary::kDim1)) n = 1;
  int64_t channels_per_group = draft.rng.uniform_int(1, 3);
  int64_t maps_per_group = draft.rng.uniform_int(1, 3);
  x.shape = {n, group * channels_per_group};
  std::vector<int64_t> padded;  // the output size the pads give
  for (size_t i = 0; i < spatial; ++i) {
    int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t pads = w.pads[i] + w.pads[i + spatial];
    // stride * (in - 1) + output_padding + extent - pads >= 1
    int64_t need = pads + 1 - output_padding[i] - extent;
    int64_t least = 1 + std::max<int64_t>(0, (need + w.strides[i] - 1) / w.strides[i]);
    int64_t in = least + draft.rng.uniform_int(0, spatial == 1 ? 6 : 3);
    if (draft.forced_is(Boundary::kDim1) && least == 1 && i == 0) in = 1;
    if (draft.forced_is(Boundary::kDimLarge) && i == 0) {
      in = draft.rng.uniform_int(kLargeDim, 2 * kLargeDim);
    }
    x.shape.push_back(in);
    padded.push_back(w.strides[i] * (in - 1) + output_padding[i] + extent - pads);
  }
  if (auto_pad == "NOTSET" && draft.attr_rng.chance(0.25)) {
    draft.erase_attr("pads");
    std::vector<int64_t> output_shape;
    for (int64_t size : padded) {
      output_shape.push_back(std::max<int64_t>(1, size + draft.rng.uniform_int(-1, 1)));
    }
    draft.set_ints("output_shape", output_shape);
    draft.tags.insert("output_shape");
  }
  OperandDraft& weights = *draft.input("W");
  weights.shape = {group * channels_per_group, maps_per_group};
  weights.shape.insert(weights.shape.end(), w.kernel.begin(), w.kernel.end());
  draft.input("B")->shape = {group * maps_per_group};
  if (group > 1) draft.tags.insert("grouped");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    draft.tags.insert("same");
    // full - in * stride = output_padding + extent - stride: a negative total padding.
    for (size_t i = 0; i < spatial; ++i) {
      int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
      if (output_padding[i] + extent < w.strides[i]) draft.tags.insert("same_negative_pad");
    }
  }
}

// CumSum: a scalar axis in [-rank, rank - 1].
void cumsum(Draft& draft) {
  OperandDraft& x = *draft.input("x");
  OperandDraft& axis = *draft.input("axis");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t value = draft.attr_rng.uniform_int(-rank, rank - 1);
  Tensor scalar = axis.dtype == DType::kInt32 ? make_int32s({value}) : make_int64s({value});
  draft.set_data(axis, scalar.reshaped({}));
}

// A scale for one axis: mostly dyadic (exact in float, so floor(in * scale) is the same in every
// engine's arithmetic), some not.
double draw_scale(Rng& rng, bool at_least_one) {
  static const std::vector<double> kDown = {0.5, 0.6, 0.75};
  static const std::vector<double> kUp = {1.0, 1.25, 1.5, 1.7, 2.0, 2.5, 3.0};
  return !at_least_one && rng.chance(0.35) ? rng.pick(kDown) : rng.pick(kUp);
}

// Resize: attributes valid at the opset; scales or sizes (Resize-10: scales) for every axis or for
// a random `axes` subset; roi for tf_crop_and_resize, sometimes reaching outside [0, 1]. Resize-11
// and 12 need roi and scales present: an empty tensor stands for the one not used.
void resize(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  Rng& rng = draft.rng;
  std::string mode = draft.attr_string("mode", "nearest");
  if ((draft.opset < 11 && mode == "cubic") || x.dtype == DType::kString) mode = "nearest";
  if (draft.has_attr("mode")) draft.set_string("mode", mode);
  if (draft.opset >= 11) {
    std::string coordinates = draft.attr_string("coordinate_transformation_mode", "half_pixel");
    if ((coordinates == "tf_half_pixel_for_nn" && draft.opset >= 13) ||
        (coordinates == "half_pixel_symmetric" && draft.opset < 19)) {
      coordinates = "half_pixel";
    }
    if (draft.has_attr("coordinate_transformation_mode")) {
      draft.set_string("coordinate_transformation_mode", coordinates);
    }
    draft.tags.insert("coord=" + coordinates);
  }
  if (draft.opset >= 18 && mode == "nearest" && draft.attr_int("antialias", 0) == 1) {
    draft.set_int("antialias", 0);
  }
  std::vector<int64_t> axes;
  for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  if (draft.opset >= 18 && draft.attr_rng.chance(0.4)) {
    draft.attr_rng.shuffle(axes);
    axes.resize(static_cast<size_t>(draft.attr_rng.uniform_int(1, rank)));
    std::vector<int64_t> written = axes;
    for (int64_t& axis : written) {
      if (draft.attr_rng.chance(0.3)) {
        axis -= rank;
        draft.tags.insert("negative_axes");
      }
    }
    draft.set_ints("axes", written);
    draft.tags.insert("axes");
  }
  for (int64_t& d : x.shape) d = std::min<int64_t>(d, 6);
  if (draft.forced_is(Boundary::kDimLarge)) x.shape[0] = rng.uniform_int(kLargeDim, kLargeDim + 8);
  size_t n = axes.size();
  bool use_sizes = draft.opset >= 11 && rng.chance(0.5);
  OperandDraft& scales = *draft.input("scales");
  OperandDraft* sizes = draft.input("sizes");
  OperandDraft* roi = draft.input("roi");
  if (use_sizes) {
    std::vector<int64_t> values;
    for (int64_t axis : axes) {
      int64_t in = x.shape[static_cast<size_t>(axis)];
      values.push_back(in == 0 ? 0 : rng.uniform_int(1, 2 * in + 1));
      // out / in is exact in binary only for a power-of-two denominator.
      if (in > 0 && (values.back() * 1024) % in != 0) draft.tags.insert("inexact_scale");
    }
    sizes->present = true;
    draft.set_data(*sizes, make_int64s(values));
    scales.present = draft.opset < 13;
    if (scales.present) draft.set_data(scales, Tensor(DType::kFloat32, {0}));
    draft.tags.insert("sizes");
  } else {
    // keep_aspect_ratio_policy reads sizes; with scales only stretch is valid.
    if (draft.has_attr("keep_aspect_ratio_policy")) {
      draft.set_string("keep_aspect_ratio_policy", "stretch");
    }
    std::vector<double> values;
    for (size_t i = 0; i < n; ++i) {
      values.push_back(draw_scale(rng, false));
      if (values.back() == 0.6 || values.back() == 1.7) draft.tags.insert("inexact_scale");
    }
    scales.present = true;
    draft.set_data(scales, make_tensor(DType::kFloat32, {static_cast<int64_t>(n)}, values));
    if (sizes) sizes->present = false;
  }
  if (roi) {
    bool crop = draft.attr_string("coordinate_transformation_mode", "") == "tf_crop_and_resize";
    roi->present = crop || draft.opset < 13;
    if (crop) {
      std::vector<double> values(2 * n);
      for (size_t i = 0; i < n; ++i) {
        values[i] = rng.chance(0.2) ? -0.25 : rng.uniform(0, 0.5);
        values[i + n] = rng.chance(0.2) ? 1.25 : rng.uniform(0.5, 1);
      }
      draft.set_data(*roi, make_tensor(roi->dtype, {static_cast<int64_t>(2 * n)}, values));
    } else if (roi->present) {
      draft.set_data(*roi, Tensor(roi->dtype, {0}));
    }
  }
}

// Upsample: scales >= 1, one per axis (attribute at opset 7, input from 9).
void upsample(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  for (int64_t& d : x.shape) d = std::min<int64_t>(d, 5);
  if (x.dtype == DType::kString && draft.has_attr("mode")) draft.set_string("mode", "nearest");
  std::vector<double> values;
  for (size_t i = 0; i < x.shape.size(); ++i) values.push_back(draw_scale(draft.rng, true));
  if (draft.opset < 9) {
    draft.set_floats("scales", std::vector<float>(values.begin(), values.end()));
  } else {
    OperandDraft& scales = *draft.input("scales");
    draft.set_data(scales,
                   make_tensor(DType::kFloat32, {static_cast<int64_t>(values.size())}, values));
  }
}

// The window ops and MelWeightMatrix: output_datatype names T2 / T3 (left out 1 time in 4 when
// that is float, the default).
void set_output_datatype(Draft& draft, const std::string& type_var) {
  DType out = draft.types.at(type_var);
  if (out == DType::kFloat32 && draft.rng.chance(0.25)) return;
  draft.set_int("output_datatype", static_cast<int64_t>(out));
}

Tensor scalar_of(DType dtype, double value) { return make_tensor(dtype, {}, {value}); }

void window(Draft& draft) {
  set_output_datatype(draft, "T2");
  OperandDraft& size = *draft.input("size");
  draft.set_data(size, scalar_of(size.dtype, static_cast<double>(draft.rng.uniform_int(1, 12))));
}

// DFT: [batch, signal dims..., 1 or 2] with the signal axis anywhere but the last dim.
void dft(Draft& draft) {
  OperandDraft& input = *draft.input("input");
  int64_t rank = static_cast<int64_t>(input.shape.size());
  for (int64_t& d : input.shape) d = std::min<int64_t>(d, 12);
  // inverse with onesided (a half spectrum back to a real signal) is not supported.
  if (draft.attr_int("inverse", 0) == 1 && draft.has_attr("onesided")) draft.set_int("onesided", 0);
  bool onesided = draft.attr_int("onesided", 0) == 1;
  input.shape.back() = onesided || draft.rng.chance(0.5) ? 1 : 2;
  if (input.shape.back() == 2) draft.tags.insert("complex");
  int64_t axis = draft.attr_rng.uniform_int(0, rank - 2);
  if (draft.attr_rng.chance(0.3)) axis -= rank;
  if (draft.opset < 20) {
    if (axis != 1 || draft.attr_rng.chance(0.5)) draft.set_int("axis", axis);
  } else if (OperandDraft* axis_input = draft.input("axis")) {
    if (axis_input->present) {
      draft.set_data(*axis_input, make_int64s({axis}, true));
    } else {
      axis = -2;
    }
  }
  if (OperandDraft* length = draft.input("dft_length"); length && length->present) {
    int64_t d = input.shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    double value = static_cast<double>(draft.rng.uniform_int(1, 2 * std::max<int64_t>(d, 1)));
    draft.set_data(*length, scalar_of(length->dtype, value));
  }
}

// STFT: [batch, length, 1 or 2]; frame_length from the input, from the window, or both.
void stft(Draft& draft) {
  OperandDraft& signal = *draft.input("signal");
  bool onesided = draft.attr_int("onesided", 1) == 1;
  int64_t length = draft.rng.uniform_int(1, 40);
  if (draft.forced_is(Boundary::kDimLarge))
    length = draft.rng.uniform_int(kLargeDim, 2 * kLargeDim);
  signal.shape = {draft.rng.uniform_int(1, 2), length, onesided || draft.rng.chance(0.5) ? 1 : 2};
  if (signal.shape[2] == 2) draft.tags.insert("complex");
  int64_t frame_length = draft.rng.uniform_int(1, std::min<int64_t>(length, 16));
  OperandDraft& step = *draft.input("frame_step");
  draft.set_data(step, scalar_of(step.dtype, static_cast<double>(draft.rng.uniform_int(1, 5))));
  OperandDraft& window_operand = *draft.input("window");
  OperandDraft& frame_length_operand = *draft.input("frame_length");
  if (!window_operand.present) frame_length_operand.present = true;
  if (window_operand.present) {
    window_operand.shape = {frame_length};
    draft.fill(window_operand);
  }
  if (frame_length_operand.present) {
    draft.set_data(frame_length_operand,
                   scalar_of(frame_length_operand.dtype, static_cast<double>(frame_length)));
  }
}

void mel_weight_matrix(Draft& draft) {
  set_output_datatype(draft, "T3");
  int64_t sample_rate = draft.rng.chance(0.5) ? 8000 : 16000;
  double lower = static_cast<double>(draft.rng.uniform_int(0, 200));
  double upper = static_cast<double>(draft.rng.uniform_int(1000, sample_rate / 2));
  struct Value {
    const char* name;
    double value;
  };
  for (const Value& value :
       {Value{"num_mel_bins", static_cast<double>(draft.rng.uniform_int(1, 10))},
        Value{"dft_length", static_cast<double>(draft.rng.uniform_int(16, 512))},
        Value{"sample_rate", static_cast<double>(sample_rate)}, Value{"lower_edge_hertz", lower},
        Value{"upper_edge_hertz", upper}}) {
    OperandDraft& operand = *draft.input(value.name);
    draft.set_data(operand, scalar_of(operand.dtype, value.value));
  }
}

// TopK: k in [0, d] as an int64 [1] input (the attribute before opset 10); the axis
// non-negative at opset 10; values with ties (integers drawn from a few values).
void top_k(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = draft.attr_int("axis", -1);
  if (draft.opset < 11 && axis < 0) {
    axis += rank;
    draft.set_int("axis", axis);
  }
  int64_t d = x.shape[static_cast<size_t>(normalized_axis(axis, rank))];
  int64_t k = draft.rng.uniform_int(0, d);
  draft.set_data(*draft.input("K"), make_int64s({k}));
  if (draft.rng.chance(0.3)) draft.tags.insert("ties");
  if (draft.tags.count("ties")) {
    draft.fill(x);
    Tensor data = x.data.clone();
    for (int64_t i = 0; i < data.numel(); ++i) {
      data.set_double(i, static_cast<double>(draft.rng.uniform_int(0, 2)));
    }
    draft.set_data(x, data);
  }
}

// MeanVarianceNormalization: the default axes on rank 4, else a random non-empty subset.
// Tags `zero_variance` when each group holds a single element (the reduced dims multiply to 1).
void mean_variance_normalization(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> axes = {0, 2, 3};
  if (rank != 4 || draft.attr_rng.chance(0.5)) {
    axes.resize(static_cast<size_t>(rank));
    for (int64_t k = 0; k < rank; ++k) axes[static_cast<size_t>(k)] = k;
    draft.attr_rng.shuffle(axes);
    axes.resize(static_cast<size_t>(draft.attr_rng.uniform_int(1, rank)));
    draft.set_ints("axes", axes);
  }
  int64_t group = 1;
  for (int64_t axis : axes) group *= x.shape[static_cast<size_t>(axis)];
  if (group == 1) draft.tags.insert("zero_variance");
}

// Det: trailing square matrices of 1..4.
void det(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  int64_t m = std::min<int64_t>(x.shape.back(), 4);
  if (m == 0 && !draft.forced_is(Boundary::kDim0)) m = 1;
  x.shape[x.shape.size() - 1] = m;
  x.shape[x.shape.size() - 2] = m;
}

// MaxUnpool: a window geometry as MaxPool's (pads below the kernel); I picks one position per
// window of the pooled tensor (flat over N, C and its spatial dims), so indices never repeat
// when windows do not overlap; output_shape, when given, is the pooled size plus 0..1 per axis.
void max_unpool(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  size_t spatial = x.shape.size() - 2;
  Window w = draw_window(draft, spatial, /*pads_below_kernel=*/true, /*with_dilations=*/false);
  draft.set_ints("kernel_shape", w.kernel);
  std::vector<int64_t> pooled = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < spatial; ++i) {
    // At least as many windows as keep the pooled size >= 1 (unless the dim is 0).
    int64_t pads = w.pads[i] + w.pads[i + spatial];
    int64_t least =
        1 + std::max<int64_t>(0, (pads + 1 - w.kernel[i] + w.strides[i] - 1) / w.strides[i]);
    int64_t& in = x.shape[i + 2];
    in = in == 0 ? 0 : std::max(least, std::min<int64_t>(in, 4));
    pooled.push_back(std::max<int64_t>(0, (in - 1) * w.strides[i] + w.kernel[i] - pads));
  }
  std::vector<int64_t> strides(pooled.size(), 1);
  for (size_t k = pooled.size() - 1; k > 0; --k) strides[k - 1] = strides[k] * pooled[k];
  int64_t count =
      std::accumulate(x.shape.begin(), x.shape.end(), int64_t{1}, std::multiplies<int64_t>());
  std::vector<int64_t> values;
  std::vector<int64_t> index(x.shape.size());
  for (int64_t e = 0; e < count; ++e) {
    int64_t rest = e;
    for (size_t k = x.shape.size(); k-- > 0;) {
      index[k] = rest % x.shape[k];
      rest /= x.shape[k];
    }
    int64_t flat = index[0] * strides[0] + index[1] * strides[1];
    for (size_t i = 0; i < spatial; ++i) {
      // A tap of this window inside the pooled tensor.
      int64_t start = index[i + 2] * w.strides[i] - w.pads[i];
      int64_t lo = std::max<int64_t>(start, 0);
      int64_t hi = std::min<int64_t>(start + w.kernel[i], pooled[i + 2]) - 1;
      flat += (hi >= lo ? draft.rng.uniform_int(lo, hi) : lo) * strides[i + 2];
    }
    values.push_back(flat);
  }
  OperandDraft& indices = *draft.input("I");
  indices.shape = x.shape;
  draft.set_data(indices, Tensor::from_vector<int64_t>(x.shape, values));
  if (OperandDraft* output_shape = draft.input("output_shape");
      output_shape && output_shape->present) {
    std::vector<int64_t> shape = pooled;
    for (size_t i = 0; i < spatial; ++i) shape[i + 2] += draft.rng.uniform_int(0, 1);
    draft.set_data(*output_shape, make_int64s(shape));
  }
}

// NonMaxSuppression: boxes with corners on a small integer grid (so IoUs are exact and some are
// identical or flipped), scores that are distinct multiples of 1/64 (ties would leave the order
// open), thresholds on a grid of tenths.
void non_max_suppression(Draft& draft) {
  Rng& rng = draft.rng;
  int64_t batches = rng.uniform_int(1, 2), classes = rng.uniform_int(1, 3);
  int64_t count = draft.forced_is(Boundary::kDim0) ? 0 : rng.uniform_int(1, 8);
  std::vector<double> boxes;
  for (int64_t i = 0; i < batches * count; ++i) {
    for (int k = 0; k < 4; ++k) boxes.push_back(static_cast<double>(rng.uniform_int(0, 6)));
  }
  draft.set_data(*draft.input("boxes"), make_tensor(DType::kFloat32, {batches, count, 4}, boxes));
  std::vector<double> scores;
  for (int64_t b = 0; b < batches * classes; ++b) {
    std::vector<int64_t> picks(64);
    for (int64_t k = 0; k < 64; ++k) picks[static_cast<size_t>(k)] = k;
    rng.shuffle(picks);
    for (int64_t i = 0; i < count; ++i)
      scores.push_back(static_cast<double>(picks[static_cast<size_t>(i)]) / 64);
  }
  draft.set_data(*draft.input("scores"),
                 make_tensor(DType::kFloat32, {batches, classes, count}, scores));
  if (OperandDraft* max = draft.input("max_output_boxes_per_class"); max->present) {
    draft.set_data(*max, make_int64s({rng.uniform_int(0, 5)}, true));
  }
  for (const char* name : {"iou_threshold", "score_threshold"}) {
    if (OperandDraft* threshold = draft.input(name); threshold->present) {
      draft.set_data(*threshold, make_tensor(DType::kFloat32, {},
                                             {static_cast<double>(rng.uniform_int(0, 10)) / 10}));
    }
  }
}

// GridSample: grid [N, H_out, W_out, 2] with points mostly inside [-1, 1], some beyond (padding
// modes) and some on multiples of 1/8 (exact pixel and half-pixel positions for small inputs).
void grid_sample(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  for (size_t k = 2; k < 4; ++k)
    x.shape[k] = std::max<int64_t>(1, std::min<int64_t>(x.shape[k], 5));
  OperandDraft& grid = *draft.input("grid");
  grid.shape = {x.shape[0], draft.rng.uniform_int(1, 4), draft.rng.uniform_int(1, 4), 2};
  int64_t count = grid.shape[0] * grid.shape[1] * grid.shape[2] * 2;
  std::vector<double> points;
  for (int64_t i = 0; i < count; ++i) {
    points.push_back(draft.rng.chance(0.3) ? static_cast<double>(draft.rng.uniform_int(-10, 10)) / 8
                                           : draft.rng.uniform(-1.25, 1.25));
  }
  draft.set_data(grid, make_tensor(grid.dtype, grid.shape, points));
}

// RoiAlign: 1..4 regions with corners in [-2, size + 2) (partly outside X, some inverted or
// empty), each on a random image of the batch.
void roi_align(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  for (size_t k = 2; k < 4; ++k)
    x.shape[k] = std::max<int64_t>(1, std::min<int64_t>(x.shape[k], 8));
  if (x.shape[0] == 0) x.shape[0] = 1;
  int64_t regions = draft.rng.uniform_int(1, 4);
  std::vector<double> corners;
  std::vector<int64_t> images;
  for (int64_t r = 0; r < regions; ++r) {
    for (int k = 0; k < 4; ++k) {
      double size = static_cast<double>(x.shape[k % 2 == 0 ? 3 : 2]);
      corners.push_back(draft.rng.uniform(-2, size + 2));
    }
    images.push_back(draft.rng.uniform_int(0, x.shape[0] - 1));
  }
  OperandDraft& rois = *draft.input("rois");
  draft.set_data(rois, make_tensor(rois.dtype, {regions, 4}, corners));
  draft.set_data(*draft.input("batch_indices"), make_int64s(images));
}

// MaxPool / AveragePool: X [N, C, D...]; pads below the kernel.
void pool(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  size_t spatial = x.shape.size() - 2;
  Window w = draw_window(draft, spatial, /*pads_below_kernel=*/true, /*with_dilations=*/true);
  draft.set_ints("kernel_shape", w.kernel);
  int64_t n = draft.forced_is(Boundary::kDim0) ? 0 : draft.rng.uniform_int(1, 2);
  x.shape = {n, draft.rng.uniform_int(1, 3)};
  for (int64_t d : spatial_dims(draft, w, /*full_extent=*/true)) x.shape.push_back(d);
}

// BatchNormalization / InstanceNormalization: one parameter per channel (X's dim 1).
void per_channel(Draft& draft) {
  OperandDraft& x = draft.inputs[0];
  int64_t channels = x.shape.size() >= 2 ? x.shape[1] : 1;
  for (size_t i = 1; i < draft.inputs.size(); ++i) draft.inputs[i].shape = {channels};
}

// LayerNormalization: Scale and B broadcast one way to X.shape[axis:] (usually that shape);
// stash_type is the type of the Mean and InvStdDev outputs.
void layernorm(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = normalized_axis(draft.attr_int("axis", -1), rank);
  std::vector<int64_t> normalized(x.shape.begin() + axis, x.shape.end());
  for (const char* name : {"Scale", "B"}) {
    std::vector<int64_t> shape = normalized;
    if (draft.rng.chance(0.3)) {
      shape.erase(shape.begin(), shape.begin() + draft.rng.uniform_int(0, shape.size()));
      for (auto& d : shape) {
        if (draft.rng.chance(0.3)) d = 1;
      }
      draft.tags.insert("broadcast_scale");
    }
    draft.input(name)->shape = shape;
  }
  draft.set_int("stash_type", draft.types.at("U") == DType::kFloat32 ? 1 : 16);
}

// Reductions: a random subset of the axes (possibly none or all, some negative), as the `axes`
// attribute or input the opset asks for. Integer ReduceMean of an empty set is undefined.
void reduce(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  int64_t rank = static_cast<int64_t>(data.shape.size());
  bool as_input = !draft.attr_exists("axes");
  Rng& rng = as_input ? draft.rng : draft.attr_rng;
  std::vector<int64_t> axes;
  double u = rng.uniform(0, 1);
  for (int64_t a = 0; a < rank; ++a) {
    if (u < 0.15 || (u >= 0.3 && rng.chance(0.5))) axes.push_back(a);
  }
  rng.shuffle(axes);
  for (auto& a : axes) {
    if (rng.chance(0.3)) a -= rank;
  }
  if (as_input) {
    OperandDraft& input = *draft.input("axes");
    if (input.present) {
      draft.set_data(input, make_int64s(axes));
    } else {
      axes.clear();
    }
  } else if (!axes.empty()) {
    draft.set_ints("axes", axes);
  }
  if (axes.empty()) draft.tags.insert("empty_axes");
  if (draft.spec.op_type == "ReduceMean" && is_integer(data.dtype)) {
    for (auto& d : data.shape) d = std::max<int64_t>(d, 1);
  }
  // Integer sums and products that can leave the type (the spec does not define integer
  // overflow): bound the magnitude over the whole tensor, conservatively.
  if (is_integer(data.dtype)) {
    draft.fill(data);
    double bits = static_cast<double>(dtype_size(data.dtype) * 8 - 1);
    double log2_product = 0, sum = 0;
    for (int64_t i = 0; i < data.data.numel(); ++i) {
      double x = std::fabs(data.data.get_double(i));
      log2_product += x > 1 ? std::log2(x) : 0;
      sum += x * x;
    }
    if (log2_product >= bits || std::log2(std::max(sum, 1.0)) >= bits) {
      draft.tags.insert("int_overflow");
    }
  }
}

// ArgMax / ArgMin: the axis is not empty; half the tests draw small integers so ties occur.
void argmax(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t axis = normalized_axis(draft.attr_int("axis", 0), rank);
  data.shape[static_cast<size_t>(axis)] =
      std::max<int64_t>(1, data.shape[static_cast<size_t>(axis)]);
  draft.fill(data);
  if (is_floating(data.dtype) && draft.rng.chance(0.5)) {
    Tensor values = data.data.clone();
    for (int64_t i = 0; i < values.numel(); ++i) {
      values.set_double(i, static_cast<double>(draft.rng.uniform_int(-2, 2)));
    }
    data.data = values;
    draft.tags.insert("ties");
  }
}

// Dropout in inference: training_mode false, or true with ratio 0 (then it is the identity too).
void dropout(Draft& draft) {
  OperandDraft* training = draft.input("training_mode");
  if (!training || !training->present) return;
  bool train = draft.rng.chance(0.5);
  draft.set_data(*training, make_tensor(DType::kBool, {}, {train ? 1.0 : 0.0}));
  if (train) {
    OperandDraft& ratio = *draft.input("ratio");
    ratio.present = true;
    draft.set_data(ratio, make_tensor(draft.types.at("T1"), {}, {0.0}));
    draft.tags.insert("training_ratio0");
  }
}

}  // namespace

void add_nn_special_cases(std::map<std::string, SpecialCase>& table) {
  table["conv"] = conv;
  table["conv_transpose"] = conv_transpose;
  table["cumsum"] = cumsum;
  table["pool"] = pool;
  table["roi_align"] = roi_align;
  table["grid_sample"] = grid_sample;
  table["non_max_suppression"] = non_max_suppression;
  table["max_unpool"] = max_unpool;
  table["top_k"] = top_k;
  table["mean_variance_normalization"] = mean_variance_normalization;
  table["det"] = det;
  table["window"] = window;
  table["dft"] = dft;
  table["stft"] = stft;
  table["mel_weight_matrix"] = mel_weight_matrix;
  table["resize"] = resize;
  table["upsample"] = upsample;
  table["per_channel"] = per_channel;
  table["layernorm"] = layernorm;
  table["reduce"] = reduce;
  table["argmax"] = argmax;
  table["dropout"] = dropout;
}

}  // namespace rnnc::conformance
