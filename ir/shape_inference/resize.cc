// Type and shape inference for Resize (10, 11, 13, 18, 19), the deprecated Upsample (7, 9) and
// GridSample (16, 20), and the operand reading Resize shares with its reference kernel
// (resize.h). docs/ops/resize.md states the semantics. Output dims are known when X's dims are and the scales or sizes are constants;
// constant sizes alone fix the resized dims, an integral constant scale keeps a symbolic dim as a
// multiple of it, and axes left out of `axes` keep their dims.
#include "ir/shape_inference/resize.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "ir/error.h"
#include "ir/op_schema.h"

namespace rnnc {

namespace {

[[noreturn]] void fail(const Node& node, const std::string& message) {
  raise_invalid_model(cat(node.describe(), ": ", message));
}

std::string one_of(const Node& node, const std::string& name, const std::string& fallback,
                   const std::vector<std::string>& allowed) {
  std::string value = node.attr_string(name, fallback);
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    std::string list;
    for (size_t i = 0; i < allowed.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
    }
    fail(node,
         cat("attribute '", name, "' = '", value, "' is not valid at this opset (", list, ")"));
  }
  return value;
}

bool flag(const Node& node, const std::string& name) {
  int64_t value = node.attr_int(name, 0);
  if (value != 0 && value != 1)
    fail(node, cat("attribute '", name, "' = ", value, ", must be 0 or 1"));
  return value == 1;
}

}  // namespace

ResizeAttributes read_resize_attributes(const Node& node) {
  bool upsample = node.op_type() == "Upsample";
  int opset = node.opset();
  if (upsample && opset >= 10) fail(node, "Upsample was removed in opset 10 (use Resize)");
  // Attributes and the opset that introduced them (Resize's; Upsample has only mode and, at 7,
  // scales).
  static const std::pair<const char*, int> kSince[] = {{"coordinate_transformation_mode", 11},
                                                       {"cubic_coeff_a", 11},
                                                       {"exclude_outside", 11},
                                                       {"extrapolation_value", 11},
                                                       {"nearest_mode", 11},
                                                       {"antialias", 18},
                                                       {"axes", 18},
                                                       {"keep_aspect_ratio_policy", 18}};
  for (const auto& [name, since] : kSince) {
    if (node.has_attr(name) && (upsample || opset < since)) {
      fail(node, cat("attribute '", name, "' needs ", upsample ? "Resize " : "", "opset ", since,
                     " or later"));
    }
  }
  if (node.has_attr("scales") && !(upsample && opset < 9)) {
    fail(node, "attribute 'scales' exists only in Upsample-7 (later it is input 1)");
  }
  ResizeAttributes attributes;
  bool modern = !upsample && opset >= 11;
  attributes.mode = one_of(node, "mode", "nearest",
                           modern ? std::vector<std::string>{"nearest", "linear", "cubic"}
                                  : std::vector<std::string>{"nearest", "linear"});
  if (!modern) {
    // Upsample and Resize-10: output = floor(in * scale), x_original = x / scale, and nearest
    // takes the floor (Upsample's "output[i] = input[floor(i / scale)]").
    attributes.coordinate_mode = "asymmetric";
    attributes.nearest_mode = "floor";
    attributes.keep_aspect_ratio_policy = "stretch";
    return attributes;
  }
  std::vector<std::string> coordinate_modes = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                               "asymmetric", "tf_crop_and_resize"};
  if (opset < 13) coordinate_modes.push_back("tf_half_pixel_for_nn");
  if (opset >= 19) coordinate_modes.push_back("half_pixel_symmetric");
  attributes.coordinate_mode =
      one_of(node, "coordinate_transformation_mode", "half_pixel", coordinate_modes);
  attributes.nearest_mode = one_of(node, "nearest_mode", "round_prefer_floor",
                                   {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  attributes.cubic_coeff_a = node.attr_float("cubic_coeff_a", -0.75f);
  attributes.exclude_outside = flag(node, "exclude_outside");
  attributes.extrapolation_value = node.attr_float("extrapolation_value", 0.0f);
  attributes.antialias = flag(node, "antialias");
  attributes.keep_aspect_ratio_policy =
      one_of(node, "keep_aspect_ratio_policy", "stretch", {"stretch", "not_larger", "not_smaller"});
  attributes.axes = node.attr_ints("axes");
  return attributes;
}

ResizeInputs resize_inputs(const Node& node) {
  ResizeInputs at;
  if (node.op_type() == "Upsample") {
    if (node.opset() >= 9) at.scales = 1;
  } else if (node.opset() < 11) {
    at.scales = 1;
  } else {
    at = {1, 2, 3};
  }
  return at;
}

std::vector<int64_t> resize_axes(const Node& node, const ResizeAttributes& attributes,
                                 int64_t rank) {
  std::vector<int64_t> axes;
  if (attributes.axes.empty()) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    return axes;
  }
  std::set<int64_t> seen;
  for (int64_t axis : attributes.axes) {
    if (axis < -rank || axis >= rank) {
      fail(node, cat("attribute 'axes' = ", shape_text(attributes.axes), " has ", axis,
                     ", out of range for rank ", rank));
    }
    if (axis < 0) axis += rank;
    if (!seen.insert(axis).second) {
      fail(node,
           cat("attribute 'axes' = ", shape_text(attributes.axes), " names axis ", axis, " twice"));
    }
    axes.push_back(axis);
  }
  return axes;
}

ResizeGeometry resize_geometry(const Node& node, const ResizeAttributes& attributes,
                               const std::vector<int64_t>& input_dims,
                               const std::optional<std::vector<double>>& scales,
                               const std::optional<std::vector<int64_t>>& sizes,
                               const std::optional<std::vector<double>>& roi, ErrorKind kind) {
  auto error = [&](const std::string& message) {
    raise(kind, cat(node.describe(), ": ", message));
  };
  int64_t rank = static_cast<int64_t>(input_dims.size());
  std::vector<int64_t> axes = resize_axes(node, attributes, rank);
  size_t n = axes.size();
  if (scales && sizes) error("only one of input 'scales' and input 'sizes' may be given");
  if (!scales && !sizes) error("one of input 'scales' and input 'sizes' is required");
  std::string what = attributes.axes.empty() ? cat("one per axis of X (rank ", rank, ")")
                                             : cat("one per entry of 'axes' (", n, ")");
  ResizeGeometry geometry;
  geometry.output = input_dims;
  geometry.scale.assign(input_dims.size(), 1.0);
  geometry.length.assign(input_dims.begin(), input_dims.end());
  geometry.roi.assign(2 * input_dims.size(), 0.0);
  for (size_t a = 0; a < input_dims.size(); ++a) geometry.roi[a + input_dims.size()] = 1.0;
  bool crop = attributes.coordinate_mode == "tf_crop_and_resize";
  if (crop && roi) {
    if (roi->size() != 2 * n) {
      error(cat("input 'roi' has ", roi->size(), " values, expected ", 2 * n,
                " (a start and an end ", what, ")"));
    }
    for (size_t i = 0; i < n; ++i) {
      size_t a = static_cast<size_t>(axes[i]);
      geometry.roi[a] = (*roi)[i];
      geometry.roi[a + input_dims.size()] = (*roi)[i + n];
    }
  }
  if (scales) {
    if (attributes.keep_aspect_ratio_policy != "stretch") {
      fail(node,
           cat("attribute 'keep_aspect_ratio_policy' = '", attributes.keep_aspect_ratio_policy,
               "' applies to input 'sizes'; with input 'scales' it must be stretch"));
    }
    if (scales->size() != n) {
      error(cat("input 'scales' has ", scales->size(), " values, expected ", what));
    }
    bool upsample = node.op_type() == "Upsample";
    for (size_t i = 0; i < n; ++i) {
      double scale = (*scales)[i];
      if (!(scale > 0) || !std::isfinite(scale) || (upsample && scale < 1)) {
        error(cat("input 'scales' element ", i, " = ", scale, ", must be ",
                  upsample ? ">= 1" : "> 0 and finite"));
      }
      size_t a = static_cast<size_t>(axes[i]);
      double width = crop ? geometry.roi[a + input_dims.size()] - geometry.roi[a] : 1.0;
      double size = std::floor(static_cast<double>(input_dims[a]) * width * scale);
      if (!(size >= 0 && size < 0x1p40)) {
        error(cat("axis ", a, ": output size floor(", input_dims[a], " * ", width, " * ", scale,
                  ") = ", size, " is not a valid size"));
      }
      geometry.scale[a] = scale;
      geometry.length[a] = static_cast<double>(input_dims[a]) * width * scale;
      geometry.output[a] = static_cast<int64_t>(size);
    }
    return geometry;
  }
  if (sizes->size() != n) {
    error(cat("input 'sizes' has ", sizes->size(), " values, expected ", what));
  }
  for (size_t i = 0; i < n; ++i) {
    if ((*sizes)[i] < 0)
      error(cat("input 'sizes' element ", i, " = ", (*sizes)[i], ", must be >= 0"));
  }
  auto ratio = [&](size_t i) {
    int64_t in = input_dims[static_cast<size_t>(axes[i])];
    return in == 0 ? 1.0 : static_cast<double>((*sizes)[i]) / static_cast<double>(in);
  };
  const std::string& policy = attributes.keep_aspect_ratio_policy;
  if (policy == "stretch") {
    for (size_t i = 0; i < n; ++i) {
      size_t a = static_cast<size_t>(axes[i]);
      geometry.output[a] = (*sizes)[i];
      geometry.length[a] = static_cast<double>((*sizes)[i]);
      geometry.scale[a] = ratio(i);
    }
    return geometry;
  }
  // not_larger / not_smaller: one scale for every listed axis, the smallest or largest ratio;
  // sizes round half up from it.
  double scale = ratio(0);
  for (size_t i = 1; i < n; ++i) {
    scale = policy == "not_larger" ? std::min(scale, ratio(i)) : std::max(scale, ratio(i));
  }
  for (size_t i = 0; i < n; ++i) {
    size_t a = static_cast<size_t>(axes[i]);
    geometry.scale[a] = scale;
    geometry.length[a] = scale * static_cast<double>(input_dims[a]);
    geometry.output[a] = static_cast<int64_t>(std::floor(geometry.length[a] + 0.5));
  }
  return geometry;
}

namespace {

// The values of a float or int64 constant input; nullopt when the input is absent, not constant,
// or empty (an empty tensor stands for an omitted input in Resize-11).
std::optional<std::vector<double>> constant_doubles(const InferenceContext& context, int input) {
  if (input < 0 || !context.has_input(static_cast<size_t>(input))) return std::nullopt;
  const Tensor* tensor = context.input_constant(static_cast<size_t>(input));
  if (!tensor || tensor->numel() == 0) return std::nullopt;
  std::vector<double> values;
  for (int64_t i = 0; i < tensor->numel(); ++i) values.push_back(tensor->get_double(i));
  return values;
}

// Whether an optional input is given and not known to be empty.
bool given(const InferenceContext& context, int input) {
  if (input < 0 || !context.has_input(static_cast<size_t>(input))) return false;
  const TensorType& type = context.input_type(static_cast<size_t>(input));
  return !(type.shape && type.shape->size() == 1 && (*type.shape)[0].is_known() &&
           (*type.shape)[0].value() == 0);
}

void infer_resize(InferenceContext& context) {
  const Node& node = context.node();
  ResizeAttributes attributes = read_resize_attributes(node);
  ResizeInputs at = resize_inputs(node);
  // Required operands: Upsample-7 has attribute scales, Upsample-9 and Resize-10 input scales,
  // Resize-11/12 inputs roi and scales (either may be an empty tensor).
  if (node.op_type() == "Upsample" && node.opset() < 9 && !node.has_attr("scales")) {
    context.fail("attribute 'scales' is required");
  }
  int required = node.op_type() == "Upsample" ? (node.opset() >= 9 ? 2 : 1)
                 : node.opset() < 11          ? 2
                 : node.opset() < 13          ? 3
                                              : 1;
  for (int i = 1; i < required; ++i) {
    if (!context.has_input(static_cast<size_t>(i))) context.fail(cat("input ", i, " is required"));
  }
  if (node.op_type() == "Resize" && node.opset() < 11 && context.num_inputs() > 2) {
    context.fail("Resize-10 has inputs X and scales only");
  }
  context.require_input_type(at.roi, "roi", {DType::kFloat32, DType::kFloat16, DType::kFloat64});
  context.require_input_type(at.scales, "scales", {DType::kFloat32});
  context.require_input_type(at.sizes, "sizes", {DType::kInt64});
  DType dtype = context.input_type(0).dtype;
  if (dtype == DType::kString && attributes.mode != "nearest") {
    raise_unsupported(cat(node.describe(), ": ", attributes.mode,
                          " interpolation of string tensors (only nearest copies strings)"));
  }
  const TensorType& x = context.input_type(0);
  if (!x.shape) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  const Shape& in = *x.shape;
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = resize_axes(node, attributes, rank);
  std::optional<std::vector<double>> scales;
  if (node.op_type() == "Upsample" && node.opset() < 9) {
    std::vector<float> values = node.attr_floats("scales");
    scales.emplace(values.begin(), values.end());
  } else {
    scales = constant_doubles(context, at.scales);
  }
  std::optional<std::vector<double>> size_values = constant_doubles(context, at.sizes);
  std::optional<std::vector<int64_t>> sizes;
  if (size_values) sizes.emplace(size_values->begin(), size_values->end());
  std::optional<std::vector<double>> roi = constant_doubles(context, at.roi);
  bool has_scales = scales || (at.scales >= 0 && given(context, at.scales));
  bool has_sizes = sizes || given(context, at.sizes);
  if (has_scales && has_sizes)
    context.fail("only one of input 'scales' and input 'sizes' may be given");
  if (has_scales && attributes.keep_aspect_ratio_policy != "stretch") {
    context.fail(cat("attribute 'keep_aspect_ratio_policy' = '",
                     attributes.keep_aspect_ratio_policy,
                     "' applies to input 'sizes'; with input 'scales' it must be stretch"));
  }
  if (!has_scales && !has_sizes)
    context.fail("one of input 'scales' and input 'sizes' is required");
  bool roi_known =
      attributes.coordinate_mode != "tf_crop_and_resize" || roi || !given(context, at.roi);
  if (shape_is_known(in) && (scales || sizes) && roi_known) {
    ResizeGeometry geometry = resize_geometry(node, attributes, shape_values(in), scales, sizes,
                                              roi, ErrorKind::kInvalidModel);
    context.set_output(0, dtype, shape_from_values(geometry.output));
    return;
  }
  // Partly known: axes outside `axes` keep their dims; constant sizes (stretch) fix the resized
  // ones; an integral constant scale multiplies a symbolic dim.
  Shape out = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = static_cast<size_t>(axes[i]);
    Dim dim = Dim::unknown();
    if (sizes && sizes->size() == axes.size() && attributes.keep_aspect_ratio_policy == "stretch") {
      dim = (*sizes)[i];
    } else if (scales && scales->size() == axes.size() &&
               attributes.coordinate_mode != "tf_crop_and_resize" &&
               (*scales)[i] == std::floor((*scales)[i]) && (*scales)[i] >= 1 &&
               (*scales)[i] < 1e6) {
      dim = in[a] * Dim(static_cast<int64_t>((*scales)[i]));
    }
    out[a] = dim;
  }
  context.set_output(0, dtype, out);
}

// GridSample: X (N x C x D1 ... Dr), grid (N x D1_out ... Dr_out x r) -> (N x C x D1_out ...).
// Opset 16 is 4-D with modes bilinear/nearest/bicubic; opset 20 is N-D with linear/nearest/cubic.
void infer_grid_sample(InferenceContext& context) {
  const Node& node = context.node();
  bool modern = node.opset() >= 20;
  std::string mode = node.attr_string("mode", modern ? "linear" : "bilinear");
  std::vector<std::string> modes = modern
                                       ? std::vector<std::string>{"linear", "nearest", "cubic"}
                                       : std::vector<std::string>{"bilinear", "nearest", "bicubic"};
  if (std::find(modes.begin(), modes.end(), mode) == modes.end()) {
    context.fail(cat("attribute 'mode' = '", mode, "' is not valid at this opset (", modes[0], ", ",
                     modes[1], " or ", modes[2], ")"));
  }
  std::string padding = node.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    context.fail(
        cat("attribute 'padding_mode' = '", padding, "', expected zeros, border or reflection"));
  }
  int64_t align = node.attr_int("align_corners", 0);
  if (align != 0 && align != 1)
    context.fail(cat("attribute 'align_corners' = ", align, ", must be 0 or 1"));
  DType dtype = context.input_type(0).dtype;
  DType grid_type = context.input_type(1).dtype;
  if (grid_type != DType::kFloat16 && grid_type != DType::kFloat32 &&
      grid_type != DType::kFloat64 && grid_type != DType::kBFloat16) {
    context.fail(
        cat("input grid has element type ", dtype_onnx_name(grid_type), ", expected a float type"));
  }
  if (dtype == DType::kString) {
    raise_unsupported(cat(node.describe(), ": sampling string tensors"));
  }
  const TensorType& x = context.input_type(0);
  const TensorType& grid = context.input_type(1);
  if (!x.shape || !grid.shape) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  size_t rank = x.shape->size();
  if (rank < 3 || (!modern && rank != 4) || grid.shape->size() != rank ||
      (grid.shape->back().is_known() &&
       grid.shape->back().value() != static_cast<int64_t>(rank - 2))) {
    context.fail(cat("input X ", shape_to_string(*x.shape), " and grid ",
                     shape_to_string(*grid.shape),
                     " do not fit (N x C x D1 ... Dr) and (N x D1_out ", "... Dr_out x r)",
                     modern ? "" : " with r = 2 (4-D before opset 20)"));
  }
  Shape out = {(*x.shape)[0], (*x.shape)[1]};
  out.insert(out.end(), grid.shape->begin() + 1, grid.shape->end() - 1);
  context.set_output(0, dtype, out);
}

}  // namespace

void register_resize_schemas(std::vector<OpSchema>& registry) {
  // op_type, since_opset, min/max inputs, min/max outputs, inference.
  registry.push_back({"Resize", 10, 1, 4, 1, 1, infer_resize});
  registry.push_back({"Upsample", 7, 1, 2, 1, 1, infer_resize});
  registry.push_back({"GridSample", 16, 2, 2, 1, 1, infer_grid_sample});
}

// x_original for output position `o` of an axis of `in` elements resized to `out` elements, with
// `scale` and the real-valued resized `length` (ResizeGeometry).
namespace {

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

}  // namespace

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

}  // namespace rnnc
