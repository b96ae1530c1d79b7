// Type and shape inference for the neural-network ops: convolution (and ConvTranspose), pooling
// (and MaxUnpool), normalization (with LRN, MeanVarianceNormalization), reductions, CumSum, TopK,
// Det, NonMaxSuppression, RoiAlign, ArgMax/ArgMin and Dropout. Output sizes follow the formulas of
// the ONNX operator docs (docs/ops/nn.md lists the corner cases). Symbolic dims pass through where
// Dim arithmetic can express the result: a stride-1 Conv over [batch, C, time] gives time + pads -
// dilated_kernel + 1, while ceil(time / 2) of a strided one is not a polynomial and becomes
// unknown.
#include <algorithm>
#include <string>
#include <vector>

#include "ir/op_schema.h"
#include "ir/shape_inference/conv_shape.h"

namespace rnnc {

namespace {

// ---- shared checks -----------------------------------------------------------------------------

std::vector<DType> float_types(bool with_bfloat16) {
  std::vector<DType> types = {DType::kFloat16, DType::kFloat32, DType::kFloat64};
  if (with_bfloat16) types.push_back(DType::kBFloat16);
  return types;
}

void check_same_dtype(const InferenceContext& context, size_t input, const char* name,
                      size_t reference, const char* reference_name) {
  DType dtype = context.input_type(input).dtype;
  DType expected = context.input_type(reference).dtype;
  if (dtype != expected) {
    context.fail(cat("input ", name, " is ", dtype_onnx_name(dtype), " but ", reference_name,
                     " is ", dtype_onnx_name(expected), " (they must match)"));
  }
}

// The input's shape, or nullptr when its rank is unknown (the output then has unknown rank too).
const Shape* shape_if_ranked(const InferenceContext& context, size_t input) {
  const TensorType& type = context.input_type(input);
  return type.shape ? &*type.shape : nullptr;
}

int64_t flag_attr(const InferenceContext& context, const char* name, int64_t fallback) {
  int64_t value = context.node().attr_int(name, fallback);
  if (value != 0 && value != 1) {
    context.fail(cat("attribute '", name, "' = ", value, ", must be 0 or 1"));
  }
  return value;
}

void require_opset_for_attribute(const InferenceContext& context, const char* name, int since) {
  if (context.node().has_attr(name) && context.node().opset() < since) {
    context.fail(cat("attribute '", name, "' needs opset ", since, " or later"));
  }
}

// ---- convolution and pooling windows -----------------------------------------------------------

// The sliding-window attributes shared by Conv, MaxPool and AveragePool, one entry per spatial
// axis; pads holds the begins, then the ends, as the ONNX attribute does.
struct Window {
  std::optional<std::vector<int64_t>> kernel;  // nullopt: Conv weight with unknown spatial dims
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;
  std::string auto_pad;
  bool ceil_mode = false;
};

std::vector<int64_t> per_axis_attr(const InferenceContext& context, const char* name, size_t count,
                                   int64_t fallback, int64_t minimum, const char* what) {
  std::vector<int64_t> values =
      context.node().attr_ints(name, std::vector<int64_t>(count, fallback));
  if (values.size() != count) {
    context.fail(cat("attribute '", name, "' has ", values.size(), " values, expected ", count,
                     " (", what, ")"));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < minimum) {
      context.fail(cat("attribute '", name, "'[", i, "] = ", values[i], ", must be ",
                       minimum == 0 ? ">= 0" : "> 0"));
    }
  }
  return values;
}

Window read_window(const InferenceContext& context, size_t spatial_rank,
                   std::optional<std::vector<int64_t>> kernel) {
  const Node& node = context.node();
  Window window;
  window.kernel = std::move(kernel);
  window.strides = per_axis_attr(context, "strides", spatial_rank, 1, 1, "one per spatial axis");
  window.dilations =
      per_axis_attr(context, "dilations", spatial_rank, 1, 1, "one per spatial axis");
  window.pads =
      per_axis_attr(context, "pads", 2 * spatial_rank, 0, 0, "a begin and an end per spatial axis");
  window.auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (window.auto_pad != "NOTSET" && window.auto_pad != "SAME_UPPER" &&
      window.auto_pad != "SAME_LOWER" && window.auto_pad != "VALID") {
    context.fail(cat("attribute 'auto_pad' = '", window.auto_pad,
                     "', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID"));
  }
  bool any_pad = std::any_of(window.pads.begin(), window.pads.end(), [](int64_t p) { return p; });
  if (window.auto_pad != "NOTSET" && any_pad) {
    context.fail(cat("attribute 'pads' cannot be used together with auto_pad = ", window.auto_pad));
  }
  window.ceil_mode = flag_attr(context, "ceil_mode", 0) == 1;
  return window;
}

// Output size of one spatial axis (the ONNX Conv/MaxPool/AveragePool formulas).
Dim window_output_dim(const InferenceContext& context, const Window& window, size_t axis,
                      const Dim& input) {
  if (!window.kernel) return Dim::unknown();
  size_t rank = window.strides.size();
  int64_t stride = window.strides[axis];
  int64_t extent = ((*window.kernel)[axis] - 1) * window.dilations[axis] + 1;
  int64_t pad_begin = window.pads[axis];
  int64_t pad_end = window.pads[axis + rank];
  if (window.auto_pad == "SAME_UPPER" || window.auto_pad == "SAME_LOWER") {
    // ceil(input / stride): the padding is whatever makes that come out.
    if (input.is_known()) return Dim((input.value() + stride - 1) / stride);
    return stride == 1 ? input : Dim::unknown();
  }
  if (window.auto_pad == "VALID") pad_begin = pad_end = 0;
  if (!input.is_known()) {
    return stride == 1 ? input + Dim(pad_begin + pad_end - extent + 1) : Dim::unknown();
  }
  int64_t padded = input.value() + pad_begin + pad_end;
  if (padded < extent) {
    context.fail(cat("spatial axis ", axis, ": input size ", input.value(), " + pads ", pad_begin,
                     " + ", pad_end, " is smaller than the dilated kernel size ", extent));
  }
  int64_t steps =
      window.ceil_mode ? (padded - extent + stride - 1) / stride : (padded - extent) / stride;
  // Ceil mode: a last window that would start in the end padding is dropped.
  if (window.ceil_mode && steps * stride >= input.value() + pad_begin) --steps;
  return Dim(steps + 1);
}

// X is (N x C x D1 x ... x Dn), n >= 1.
const Shape* spatial_input_shape(const InferenceContext& context) {
  const Shape* x = shape_if_ranked(context, 0);
  if (x && x->size() < 3) {
    context.fail(cat("input X has rank ", x->size(), " ", shape_to_string(*x),
                     ", expected at least 3 (N x C x D1 ...)"));
  }
  return x;
}

void infer_conv(InferenceContext& context) {
  context.require_input_type(0, "X", float_types(false));
  check_same_dtype(context, 1, "W", 0, "X");
  if (context.has_input(2)) check_same_dtype(context, 2, "B", 0, "X");
  DType dtype = context.input_type(0).dtype;
  std::optional<Shape> out = conv_output_shape(context, {0, "X", 1, "W"});
  if (!out) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  if (context.has_input(2)) check_conv_bias(context, 2, "B", (*out)[1], "W");
  context.set_output(0, dtype, *out);
}

// ConvTranspose: X (N x C x D1 ... Dn), W (C x M/group x k1 ... kn), B (M). Each output size is
// stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end, or the
// attribute output_shape (pads then follow from it), or in * stride under SAME_UPPER/SAME_LOWER.
void infer_conv_transpose(InferenceContext& context) {
  const Node& node = context.node();
  context.require_input_type(0, "X", float_types(false));
  check_same_dtype(context, 1, "W", 0, "X");
  if (context.has_input(2)) check_same_dtype(context, 2, "B", 0, "X");
  DType dtype = context.input_type(0).dtype;
  int64_t group = node.attr_int("group", 1);
  if (group < 1) context.fail(cat("attribute 'group' = ", group, ", must be > 0"));
  const Shape* x = spatial_input_shape(context);
  if (!x) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  size_t spatial_rank = x->size() - 2;
  const Shape* w = shape_if_ranked(context, 1);
  if (w && w->size() != x->size()) {
    context.fail(cat("input W has shape ", shape_to_string(*w), " but X has shape ",
                     shape_to_string(*x), " (W must be C x M/group x k1 ... kn)"));
  }
  const Dim& channels = (*x)[1];
  if (channels.is_known() && channels.value() % group != 0) {
    context.fail(cat("input X has ", channels.value(), " channels, not a multiple of group ", group));
  }
  if (w && channels.is_known() && (*w)[0].is_known() && (*w)[0] != channels) {
    context.fail(cat("input W has shape ", shape_to_string(*w), ", expected W.shape[0] = ",
                     channels.value(), " (the channels of X)"));
  }
  // kernel_shape, when given, must be W's spatial dims; without it they come from W.
  std::optional<std::vector<int64_t>> kernel;
  if (node.has_attr("kernel_shape")) {
    kernel = per_axis_attr(context, "kernel_shape", spatial_rank, 1, 1, "one per spatial axis");
  }
  for (size_t i = 0; w && i < spatial_rank; ++i) {
    const Dim& k = (*w)[i + 2];
    if (!k.is_known()) continue;
    if (kernel && (*kernel)[i] != k.value()) {
      context.fail(cat("attribute 'kernel_shape' = ", shape_text(*kernel),
                       " does not match W's spatial dims ", shape_to_string(*w)));
    }
  }
  if (!kernel && w && shape_is_known(Shape(w->begin() + 2, w->end()))) {
    kernel = shape_values(Shape(w->begin() + 2, w->end()));
  }
  Window window = read_window(context, spatial_rank, kernel);
  std::vector<int64_t> output_padding =
      per_axis_attr(context, "output_padding", spatial_rank, 0, 0, "one per spatial axis");
  std::vector<int64_t> output_shape = node.attr_ints("output_shape");
  if (!output_shape.empty()) {
    if (output_shape.size() != spatial_rank && output_shape.size() != spatial_rank + 2) {
      context.fail(cat("attribute 'output_shape' = ", shape_text(output_shape), " has ",
                       output_shape.size(), " values, expected ", spatial_rank,
                       " (one per spatial axis)"));
    }
    output_shape.erase(output_shape.begin(),
                       output_shape.end() - static_cast<int64_t>(spatial_rank));
    for (int64_t size : output_shape) {
      if (size < 0) {
        context.fail(cat("attribute 'output_shape' = ", shape_text(output_shape),
                         " has a negative size"));
      }
    }
  }
  Dim out_channels = w ? (*w)[1] * Dim(group) : Dim::unknown();
  Shape out = {(*x)[0], out_channels};
  bool same = window.auto_pad == "SAME_UPPER" || window.auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < spatial_rank; ++i) {
    const Dim& in = (*x)[i + 2];
    int64_t stride = window.strides[i];
    if (!output_shape.empty()) {
      out.push_back(output_shape[i]);
    } else if (same) {
      out.push_back(in * Dim(stride));
    } else if (!kernel) {
      out.push_back(Dim::unknown());
    } else {
      bool valid = window.auto_pad == "VALID";
      int64_t pads = valid ? 0 : window.pads[i] + window.pads[i + spatial_rank];
      int64_t extent = ((*kernel)[i] - 1) * window.dilations[i] + 1;
      Dim size = Dim(stride) * (in - Dim(1)) + Dim(output_padding[i] + extent - pads);
      if (size.is_known() && size.value() < 0) {
        context.fail(cat("spatial axis ", i, ": pads ", window.pads[i], " + ",
                         window.pads[i + spatial_rank], " exceed the full output size ",
                         size.value() + pads));
      }
      out.push_back(size);
    }
  }
  if (context.has_input(2)) check_conv_bias(context, 2, "B", out_channels, "W");
  context.set_output(0, dtype, out);
}

// CumSum: y has x's shape; axis is a scalar (or one-element vector) int32/int64 input.
void infer_cumsum(InferenceContext& context) {
  const Node& node = context.node();
  std::vector<DType> types = {DType::kUInt32, DType::kUInt64, DType::kInt32, DType::kInt64,
                              DType::kFloat32, DType::kFloat64};
  if (node.opset() >= 14) {
    types.push_back(DType::kFloat16);
    types.push_back(DType::kBFloat16);
  }
  context.require_input_type(0, "x", types);
  context.require_input_type(1, "axis", {DType::kInt32, DType::kInt64});
  flag_attr(context, "exclusive", 0);
  flag_attr(context, "reverse", 0);
  DType dtype = context.input_type(0).dtype;
  const Shape* axis_shape = shape_if_ranked(context, 1);
  if (axis_shape && (axis_shape->size() > 1 || (axis_shape->size() == 1 &&
                                                !((*axis_shape)[0].is_known() &&
                                                  (*axis_shape)[0].value() == 1)))) {
    context.fail(cat("input axis has shape ", shape_to_string(*axis_shape),
                     ", expected a scalar"));
  }
  const Shape* x = shape_if_ranked(context, 0);
  if (!x) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  if (x->empty()) context.fail("input x is a scalar, expected rank >= 1");
  if (const Tensor* axis = context.input_constant(1); axis && axis->numel() == 1) {
    context.normalize_axis(axis->get_int64(0), static_cast<int64_t>(x->size()), "input axis");
  }
  context.set_output(0, dtype, *x);
}

// TopK: Values and Indices have X's shape with the axis cut to k (attribute before opset 10, an
// int64 [1] input from 10).
void infer_top_k(InferenceContext& context) {
  const Node& node = context.node();
  std::vector<DType> types = float_types(false);
  if (node.opset() >= 11) {
    for (DType dtype : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64, DType::kUInt8,
                        DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
      types.push_back(dtype);
    }
  }
  context.require_input_type(0, "X", types);
  require_opset_for_attribute(context, "largest", 11);
  require_opset_for_attribute(context, "sorted", 11);
  flag_attr(context, "largest", 1);
  flag_attr(context, "sorted", 1);
  std::optional<int64_t> k;
  if (node.opset() < 10) {
    if (!node.has_attr("k")) context.fail("attribute 'k' is required");
    if (context.has_input(1)) context.fail("input K exists from opset 10 (use attribute 'k')");
    k = node.attr_int("k", 0);
  } else {
    if (node.has_attr("k")) context.fail("attribute 'k' became input K in opset 10");
    if (!context.has_input(1)) context.fail("input K is required");
    context.require_input_type(1, "K", {DType::kInt64});
    if (const Shape* shape = shape_if_ranked(context, 1)) {
      if (shape->size() != 1 || ((*shape)[0].is_known() && (*shape)[0].value() != 1)) {
        context.fail(cat("input K has shape ", shape_to_string(*shape), ", expected [1]"));
      }
    }
    if (const Tensor* constant = context.input_constant(1); constant && constant->numel() == 1) {
      k = constant->get_int64(0);
    }
  }
  if (k && *k < 0) context.fail(cat("k = ", *k, ", must be >= 0"));
  DType dtype = context.input_type(0).dtype;
  const Shape* x = shape_if_ranked(context, 0);
  if (!x) {
    context.set_output_unknown_rank(0, dtype);
    context.set_output_unknown_rank(1, DType::kInt64);
    return;
  }
  int64_t rank = static_cast<int64_t>(x->size());
  if (rank == 0) context.fail("input X is a scalar, expected rank >= 1");
  if (node.attr_int("axis", -1) < 0 && node.opset() < 11) {
    context.fail("a negative attribute 'axis' needs opset 11 or later");
  }
  size_t axis = static_cast<size_t>(
      context.normalize_axis(node.attr_int("axis", -1), rank, "attribute 'axis'"));
  const Dim& d = (*x)[axis];
  if (k && d.is_known() && *k > d.value()) {
    context.fail(cat("k = ", *k, " exceeds the ", d.value(), " elements along axis ", axis));
  }
  Shape out = *x;
  out[axis] = k ? Dim(*k) : Dim::unknown();
  context.set_output(0, dtype, out);
  context.set_output(1, DType::kInt64, out);
}

// LRN and MeanVarianceNormalization keep X's shape.
// A float X for LRN, MeanVarianceNormalization and Det: its shape, or nullptr after setting an
// unknown-rank output when its rank is unknown.
const Shape* float_input_shape(const InferenceContext& context, bool with_bfloat16) {
  context.require_input_type(0, "X", float_types(with_bfloat16));
  const Shape* x = shape_if_ranked(context, 0);
  if (!x) context.set_output_unknown_rank(0, context.input_type(0).dtype);
  return x;
}

void infer_lrn(InferenceContext& context) {
  const Node& node = context.node();
  if (!node.has_attr("size")) context.fail("attribute 'size' is required");
  int64_t size = node.attr_int("size", 0);
  if (size < 1) context.fail(cat("attribute 'size' = ", size, ", must be > 0"));
  DType dtype = context.input_type(0).dtype;
  const Shape* x = float_input_shape(context, node.opset() >= 13);
  if (!x) return;
  if (x->size() < 2) {
    context.fail(cat("input X has shape ", shape_to_string(*x), ", expected (N x C x ...)"));
  }
  context.set_output(0, dtype, *x);
}

void infer_mean_variance_normalization(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  const Shape* x = float_input_shape(context, context.node().opset() >= 13);
  if (!x) return;
  int64_t rank = static_cast<int64_t>(x->size());
  std::vector<int64_t> axes = context.node().attr_ints("axes", {0, 2, 3});
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    size_t a = static_cast<size_t>(context.normalize_axis(axis, rank, "attribute 'axes' entry"));
    if (seen[a]) context.fail(cat("attribute 'axes' names axis ", a, " twice"));
    seen[a] = true;
  }
  context.set_output(0, dtype, *x);
}

// Det: [*, M, M] -> [*].
void infer_det(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  const Shape* x = float_input_shape(context, false);
  if (!x) return;
  if (x->size() < 2) {
    context.fail(cat("input X has shape ", shape_to_string(*x), ", expected [*, M, M]"));
  }
  const Dim& rows = (*x)[x->size() - 2];
  const Dim& columns = x->back();
  if (rows.is_known() && columns.is_known() && rows != columns) {
    context.fail(cat("input X has shape ", shape_to_string(*x),
                     ": the last two dims must be equal (square matrices)"));
  }
  context.set_output(0, dtype, Shape(x->begin(), x->end() - 2));
}

// MaxUnpool: X and I (N x C x D1 ... Dn) scatter into zeros of output_shape, or of the size a
// MaxPool with these attributes maps back from: (in - 1) * stride + kernel - pad_begin - pad_end.
void infer_max_unpool(InferenceContext& context) {
  const Node& node = context.node();
  context.require_input_type(0, "X", float_types(false));
  context.require_input_type(1, "I", {DType::kInt64});
  context.require_input_type(2, "output_shape", {DType::kInt64});
  if (!node.has_attr("kernel_shape")) context.fail("attribute 'kernel_shape' is required");
  DType dtype = context.input_type(0).dtype;
  const Shape* x = spatial_input_shape(context);
  if (!x) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  size_t spatial_rank = x->size() - 2;
  std::vector<int64_t> kernel =
      per_axis_attr(context, "kernel_shape", spatial_rank, 1, 1, "one per spatial axis");
  std::vector<int64_t> strides =
      per_axis_attr(context, "strides", spatial_rank, 1, 1, "one per spatial axis");
  std::vector<int64_t> pads =
      per_axis_attr(context, "pads", 2 * spatial_rank, 0, 0, "a begin and an end per spatial axis");
  if (const Shape* indices = shape_if_ranked(context, 1)) {
    bool same = indices->size() == x->size();
    for (size_t k = 0; same && k < x->size(); ++k) {
      same = !((*indices)[k].is_known() && (*x)[k].is_known() && (*indices)[k] != (*x)[k]);
    }
    if (!same) {
      context.fail(cat("input I has shape ", shape_to_string(*indices), " but X has shape ",
                       shape_to_string(*x), " (they must match)"));
    }
  }
  if (context.has_input(2)) {
    const Tensor* constant = context.input_constant(2);
    if (constant && constant->numel() == static_cast<int64_t>(x->size())) {
      Shape out;
      for (int64_t k = 0; k < constant->numel(); ++k) out.push_back(Dim(constant->get_int64(k)));
      context.set_output(0, dtype, out);
    } else if (constant) {
      context.fail(cat("input output_shape has ", constant->numel(), " entries for X of rank ",
                       x->size()));
    } else {
      context.set_output(0, dtype, Shape(x->size(), Dim::unknown()));
    }
    return;
  }
  Shape out = {(*x)[0], (*x)[1]};
  for (size_t i = 0; i < spatial_rank; ++i) {
    Dim size = Dim(strides[i]) * ((*x)[i + 2] - Dim(1)) +
               Dim(kernel[i] - pads[i] - pads[i + spatial_rank]);
    out.push_back(size.is_known() && size.value() < 0 ? Dim(0) : size);
  }
  context.set_output(0, dtype, out);
}

// NonMaxSuppression: selected_indices [?, 3] (batch, class, box), the count data-dependent.
void infer_non_max_suppression(InferenceContext& context) {
  context.require_input_type(0, "boxes", {DType::kFloat32});
  context.require_input_type(1, "scores", {DType::kFloat32});
  static const char* const kScalars[] = {"max_output_boxes_per_class", "iou_threshold",
                                         "score_threshold"};
  for (size_t i = 2; i < 5; ++i) {
    if (!context.has_input(i)) continue;
    context.require_input_type(static_cast<int>(i), kScalars[i - 2],
                               {i == 2 ? DType::kInt64 : DType::kFloat32});
    if (const Shape* shape = shape_if_ranked(context, i)) {
      bool scalar = shape->empty() || (shape->size() == 1 && (*shape)[0].is_known() &&
                                       (*shape)[0].value() == 1);
      if (!scalar) {
        context.fail(cat("input ", kScalars[i - 2], " has shape ", shape_to_string(*shape),
                         ", expected a scalar or [1]"));
      }
    }
  }
  int64_t center = context.node().attr_int("center_point_box", 0);
  if (center != 0 && center != 1) {
    context.fail(cat("attribute 'center_point_box' = ", center, ", must be 0 or 1"));
  }
  const Shape* boxes = shape_if_ranked(context, 0);
  const Shape* scores = shape_if_ranked(context, 1);
  if (boxes && (boxes->size() != 3 || ((*boxes)[2].is_known() && (*boxes)[2].value() != 4))) {
    context.fail(cat("input boxes has shape ", shape_to_string(*boxes),
                     ", expected [num_batches, spatial_dimension, 4]"));
  }
  if (scores && scores->size() != 3) {
    context.fail(cat("input scores has shape ", shape_to_string(*scores),
                     ", expected [num_batches, num_classes, spatial_dimension]"));
  }
  if (boxes && scores) {
    bool agree = !((*boxes)[0].is_known() && (*scores)[0].is_known() && (*boxes)[0] != (*scores)[0]) &&
                 !((*boxes)[1].is_known() && (*scores)[2].is_known() && (*boxes)[1] != (*scores)[2]);
    if (!agree) {
      context.fail(cat("input boxes ", shape_to_string(*boxes), " and scores ",
                       shape_to_string(*scores), " disagree on batches or boxes"));
    }
  }
  context.set_output(0, DType::kInt64, {Dim::unknown(), Dim(3)});
}

// RoiAlign: X (N x C x H x W), rois (num_rois x 4), batch_indices (num_rois) ->
// (num_rois x C x output_height x output_width).
void infer_roi_align(InferenceContext& context) {
  const Node& node = context.node();
  context.require_input_type(0, "X", float_types(false));
  check_same_dtype(context, 1, "rois", 0, "X");
  context.require_input_type(2, "batch_indices", {DType::kInt64});
  std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") {
    context.fail(cat("attribute 'mode' = '", mode, "', expected avg or max"));
  }
  require_opset_for_attribute(context, "coordinate_transformation_mode", 16);
  std::string coordinates = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (coordinates != "half_pixel" && coordinates != "output_half_pixel") {
    context.fail(cat("attribute 'coordinate_transformation_mode' = '", coordinates,
                     "', expected half_pixel or output_half_pixel"));
  }
  int64_t height = node.attr_int("output_height", 1), width = node.attr_int("output_width", 1);
  if (height < 1 || width < 1) {
    context.fail(cat("attributes 'output_height' = ", height, " and 'output_width' = ", width,
                     " must be > 0"));
  }
  if (node.attr_int("sampling_ratio", 0) < 0) {
    context.fail(cat("attribute 'sampling_ratio' = ", node.attr_int("sampling_ratio", 0),
                     ", must be >= 0"));
  }
  DType dtype = context.input_type(0).dtype;
  const Shape* x = shape_if_ranked(context, 0);
  const Shape* rois = shape_if_ranked(context, 1);
  if (x && x->size() != 4) {
    context.fail(cat("input X has shape ", shape_to_string(*x), ", expected (N x C x H x W)"));
  }
  if (rois && (rois->size() != 2 || ((*rois)[1].is_known() && (*rois)[1].value() != 4))) {
    context.fail(cat("input rois has shape ", shape_to_string(*rois), ", expected (num_rois x 4)"));
  }
  Dim count = rois ? (*rois)[0] : Dim::unknown();
  context.set_output(0, dtype, {count, x ? (*x)[1] : Dim::unknown(), Dim(height), Dim(width)});
}

// MaxPool and AveragePool.
void infer_pool(InferenceContext& context) {
  const Node& node = context.node();
  bool is_max = node.op_type() == "MaxPool";
  std::vector<DType> types = float_types(false);
  if (is_max && node.opset() >= 12) {
    types.push_back(DType::kInt8);
    types.push_back(DType::kUInt8);
  }
  context.require_input_type(0, "X", types);
  DType dtype = context.input_type(0).dtype;
  require_opset_for_attribute(context, "ceil_mode", 10);
  require_opset_for_attribute(context, "dilations", is_max ? 10 : 19);
  if (is_max) {
    require_opset_for_attribute(context, "storage_order", 8);
    flag_attr(context, "storage_order", 0);
    if (context.has_output(1) && node.opset() < 8) {
      context.fail("output Indices needs opset 8 or later");
    }
  } else {
    flag_attr(context, "count_include_pad", 0);
  }
  if (!node.has_attr("kernel_shape")) context.fail("attribute 'kernel_shape' is required");
  const Shape* x = spatial_input_shape(context);
  if (!x) {
    context.set_output_unknown_rank(0, dtype);
    context.set_output_unknown_rank(1, DType::kInt64);
    return;
  }
  size_t spatial_rank = x->size() - 2;
  Window window = read_window(
      context, spatial_rank,
      per_axis_attr(context, "kernel_shape", spatial_rank, 1, 1, "one per spatial axis"));
  Shape out = {(*x)[0], (*x)[1]};
  for (size_t i = 0; i < spatial_rank; ++i) {
    out.push_back(window_output_dim(context, window, i, (*x)[i + 2]));
  }
  context.set_output(0, dtype, out);
  context.set_output(1, DType::kInt64, out);
}

// GlobalAveragePool and GlobalMaxPool: (N x C x D1 ... Dn) -> (N x C x 1 ... 1).
void infer_global_pool(InferenceContext& context) {
  context.require_input_type(0, "X", float_types(false));
  DType dtype = context.input_type(0).dtype;
  const Shape* x = spatial_input_shape(context);
  if (!x) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  Shape out(x->size(), Dim(1));
  out[0] = (*x)[0];
  out[1] = (*x)[1];
  context.set_output(0, dtype, out);
}

// ---- normalization -----------------------------------------------------------------------------

// A per-channel parameter must be a vector whose one dim matches `expected` when both are known.
void check_parameter_shape(const InferenceContext& context, size_t input, const char* name,
                           const Shape& expected) {
  const Shape* shape = shape_if_ranked(context, input);
  if (!shape) return;
  bool matches = shape->size() == expected.size();
  for (size_t i = 0; matches && i < expected.size(); ++i) {
    if ((*shape)[i].is_known() && expected[i].is_known()) {
      matches = (*shape)[i].value() == expected[i].value();
    }
  }
  if (!matches) {
    context.fail(cat("input ", name, " has shape ", shape_to_string(*shape), ", expected ",
                     shape_to_string(expected)));
  }
}

void infer_batch_norm(InferenceContext& context) {
  const Node& node = context.node();
  int opset = node.opset();
  static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 0; i < 5; ++i) {
    context.require_input_type(static_cast<int>(i), kNames[i], float_types(opset >= 14));
  }
  if (opset < 14) {
    for (size_t i = 1; i < 5; ++i) check_same_dtype(context, i, kNames[i], 0, "X");
  } else {
    // Opset 14 types scale and B as X (T) and the statistics separately (U); opset 15 frees
    // scale/B (T1) from X as well.
    if (opset == 14) check_same_dtype(context, 1, "scale", 0, "X");
    check_same_dtype(context, 2, "B", 1, "scale");
    check_same_dtype(context, 4, "input_var", 3, "input_mean");
  }
  size_t outputs = 0;
  for (size_t i = 0; i < node.num_outputs(); ++i) outputs += context.has_output(i) ? 1 : 0;
  if (opset >= 14) {
    if (flag_attr(context, "training_mode", 0) == 1) {
      raise_unsupported(cat(node.describe(), ": training_mode = 1 (batch statistics and running ",
                            "mean/var updates) is not supported; rnnc runs inference only"));
    }
    if (outputs > 1) {
      context.fail("outputs running_mean and running_var are only valid with training_mode = 1");
    }
  } else if (outputs > 1) {
    raise_unsupported(cat(node.describe(), ": outputs mean, var, saved_mean and saved_var ask ",
                          "for training mode, which is not supported; rnnc runs inference only"));
  }
  DType dtype = context.input_type(0).dtype;
  const Shape* x = shape_if_ranked(context, 0);
  if (!x) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  if (x->empty()) context.fail("input X is a scalar, expected (N x C x D1 ...) or (N)");
  // A 1-D X is (N) with C = 1. Opset 7-8 with spatial = 0 takes per-activation parameters
  // (C x D1 x ... x Dn) instead of per-channel ones (C).
  Shape parameter_shape = {x->size() >= 2 ? (*x)[1] : Dim(1)};
  if (opset < 9 && flag_attr(context, "spatial", 1) == 0 && x->size() >= 2) {
    parameter_shape.assign(x->begin() + 1, x->end());
  }
  for (size_t i = 1; i < 5; ++i) check_parameter_shape(context, i, kNames[i], parameter_shape);
  context.set_output(0, dtype, *x);
}

void infer_instance_norm(InferenceContext& context) {
  context.require_input_type(0, "input", float_types(false));
  check_same_dtype(context, 1, "scale", 0, "input");
  check_same_dtype(context, 2, "B", 0, "input");
  DType dtype = context.input_type(0).dtype;
  const Shape* x = shape_if_ranked(context, 0);
  if (!x) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  if (x->size() < 3) {
    context.fail(cat("input has rank ", x->size(), " ", shape_to_string(*x),
                     ", expected at least 3 (N x C x D1 ...)"));
  }
  check_parameter_shape(context, 1, "scale", {(*x)[1]});
  check_parameter_shape(context, 2, "B", {(*x)[1]});
  context.set_output(0, dtype, *x);
}

// Scale and B of LayerNormalization broadcast to X one way (numpy rules, X's shape wins).
void check_broadcasts_to(const InferenceContext& context, size_t input, const char* name,
                         const Shape& target) {
  const Shape* shape = shape_if_ranked(context, input);
  if (!shape) return;
  bool ok = shape->size() <= target.size();
  for (size_t i = 0; ok && i < shape->size(); ++i) {
    const Dim& dim = (*shape)[i];
    const Dim& into = target[target.size() - shape->size() + i];
    if (dim.is_known() && dim.value() != 1 && into.is_known()) ok = dim.value() == into.value();
  }
  if (!ok) {
    context.fail(cat("input ", name, " with shape ", shape_to_string(*shape),
                     " cannot be broadcast to X's shape ", shape_to_string(target)));
  }
}

void infer_layer_norm(InferenceContext& context) {
  const Node& node = context.node();
  context.require_input_type(0, "X", float_types(true));
  check_same_dtype(context, 1, "Scale", 0, "X");
  if (context.has_input(2)) check_same_dtype(context, 2, "B", 0, "X");
  int64_t stash_type = node.attr_int("stash_type", 1);
  if (stash_type != static_cast<int64_t>(DType::kFloat32) &&
      stash_type != static_cast<int64_t>(DType::kBFloat16)) {
    context.fail(
        cat("attribute 'stash_type' = ", stash_type, ", expected 1 (float) or 16 (bfloat16)"));
  }
  DType stash = static_cast<DType>(stash_type);
  DType dtype = context.input_type(0).dtype;
  const Shape* x = shape_if_ranked(context, 0);
  if (!x) {
    context.set_output_unknown_rank(0, dtype);
    context.set_output_unknown_rank(1, stash);
    context.set_output_unknown_rank(2, stash);
    return;
  }
  int64_t rank = static_cast<int64_t>(x->size());
  int64_t axis = node.attr_int("axis", -1);
  // Unlike most axis attributes, axis = rank is allowed: it normalizes over no axes.
  if (axis < -rank || axis > rank) {
    context.fail(cat("attribute 'axis' = ", axis, " is out of range for rank ", rank, " (valid: [",
                     -rank, ", ", rank, "])"));
  }
  if (axis < 0) axis += rank;
  check_broadcasts_to(context, 1, "Scale", *x);
  if (context.has_input(2)) check_broadcasts_to(context, 2, "B", *x);
  Shape stats(x->begin(), x->begin() + axis);
  stats.resize(x->size(), Dim(1));
  context.set_output(0, dtype, *x);
  context.set_output(1, stash, stats);
  context.set_output(2, stash, stats);
}

// ---- reductions --------------------------------------------------------------------------------

// The opset from which a reduction takes axes as an input instead of an attribute.
int axes_input_opset(const std::string& op_type) { return op_type == "ReduceSum" ? 13 : 18; }

std::vector<DType> reduce_types(const Node& node) {
  std::vector<DType> types = float_types(true);
  for (DType t : {DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64}) {
    types.push_back(t);
  }
  bool is_extremum = node.op_type() == "ReduceMax" || node.op_type() == "ReduceMin";
  if (is_extremum && node.opset() >= 12) {
    types.push_back(DType::kInt8);
    types.push_back(DType::kUInt8);
  }
  if (is_extremum && node.opset() >= 20) types.push_back(DType::kBool);
  return types;
}

// Marks the axes to reduce, normalizing negative ones; out of range or repeated axes fail.
std::vector<bool> reduced_axes(const InferenceContext& context, const std::vector<int64_t>& axes,
                               int64_t rank) {
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i];
    if (axis < -rank || axis >= rank) {
      context.fail(cat("axes[", i, "] = ", axis, " is out of range for rank ", rank));
    }
    if (axis < 0) axis += rank;
    if (reduced[static_cast<size_t>(axis)]) {
      context.fail(cat("axes[", i, "] = ", axes[i], " repeats axis ", axis));
    }
    reduced[static_cast<size_t>(axis)] = true;
  }
  return reduced;
}

void infer_reduce(InferenceContext& context) {
  const Node& node = context.node();
  context.require_input_type(0, "data", reduce_types(node));
  DType dtype = context.input_type(0).dtype;
  bool keepdims = flag_attr(context, "keepdims", 1) == 1;
  int since = axes_input_opset(node.op_type());
  // nullopt: the axes are a run-time input.
  std::optional<std::vector<int64_t>> axes;
  bool noop_with_empty_axes = false;
  if (node.opset() < since) {
    if (context.has_input(1)) {
      context.fail(cat("input axes needs opset ", since, " or later (use attribute 'axes')"));
    }
    require_opset_for_attribute(context, "noop_with_empty_axes", since);
    axes = node.attr_ints("axes");
  } else {
    if (node.has_attr("axes")) {
      context.fail(cat("attribute 'axes' was replaced by input axes in opset ", since));
    }
    noop_with_empty_axes = flag_attr(context, "noop_with_empty_axes", 0) == 1;
    if (!context.has_input(1)) {
      axes.emplace();
    } else {
      context.require_input_type(1, "axes", {DType::kInt64});
      if (const Shape* shape = shape_if_ranked(context, 1)) {
        if (shape->size() != 1) {
          context.fail(cat("input axes has rank ", shape->size(), ", expected 1"));
        }
        if ((*shape)[0].is_known() && (*shape)[0].value() == 0) axes.emplace();
      }
      if (auto dims = context.input_dims_value(1)) {
        bool all_known =
            std::all_of(dims->begin(), dims->end(), [](const Dim& d) { return d.is_known(); });
        if (all_known) {
          axes.emplace();
          for (const Dim& d : *dims) axes->push_back(d.value());
        }
      }
    }
  }
  const Shape* data = shape_if_ranked(context, 0);
  if (!data) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(data->size());
  if (!axes) {
    // Each dim is kept or becomes 1 (or is dropped, and then even the rank is unknown).
    if (!keepdims) {
      context.set_output_unknown_rank(0, dtype);
      return;
    }
    Shape out;
    for (const Dim& d : *data) {
      out.push_back(d.is_known() && d.value() == 1 ? Dim(1) : Dim::unknown());
    }
    context.set_output(0, dtype, out);
    return;
  }
  if (axes->empty() && noop_with_empty_axes) {
    context.set_output(0, dtype, *data);
    return;
  }
  std::vector<bool> reduced = axes->empty() ? std::vector<bool>(static_cast<size_t>(rank), true)
                                            : reduced_axes(context, *axes, rank);
  Shape out;
  for (size_t i = 0; i < data->size(); ++i) {
    if (!reduced[i]) {
      out.push_back((*data)[i]);
    } else if (keepdims) {
      out.push_back(Dim(1));
    }
  }
  context.set_output(0, dtype, out);
}

// ArgMax and ArgMin.
void infer_arg_extremum(InferenceContext& context) {
  const Node& node = context.node();
  std::vector<DType> types = float_types(true);
  for (DType t : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64, DType::kUInt8,
                  DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    types.push_back(t);
  }
  context.require_input_type(0, "data", types);
  bool keepdims = flag_attr(context, "keepdims", 1) == 1;
  require_opset_for_attribute(context, "select_last_index", 12);
  flag_attr(context, "select_last_index", 0);
  const Shape* data = shape_if_ranked(context, 0);
  if (!data) {
    context.set_output_unknown_rank(0, DType::kInt64);
    return;
  }
  int64_t rank = static_cast<int64_t>(data->size());
  if (rank == 0) context.fail("input data is a scalar; it has no axis to reduce");
  int64_t axis = context.normalize_axis(node.attr_int("axis", 0), rank, "attribute 'axis'");
  const Dim& extent = (*data)[static_cast<size_t>(axis)];
  if (extent.is_known() && extent.value() == 0) {
    context.fail(
        cat("axis ", axis, " has size 0: ", node.op_type(), " of an empty set is undefined"));
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis) {
      out.push_back((*data)[static_cast<size_t>(i)]);
    } else if (keepdims) {
      out.push_back(Dim(1));
    }
  }
  context.set_output(0, DType::kInt64, out);
}

// ---- Dropout -----------------------------------------------------------------------------------

void infer_dropout(InferenceContext& context) {
  const Node& node = context.node();
  int opset = node.opset();
  context.require_input_type(0, "data", float_types(opset >= 13));
  if (opset < 12 && node.num_inputs() > 1) {
    context.fail("inputs ratio and training_mode need opset 12 or later (use attribute 'ratio')");
  }
  if (context.has_input(1)) context.require_input_type(1, "ratio", float_types(false));
  if (context.has_input(2)) context.require_input_type(2, "training_mode", {DType::kBool});
  // Training mode draws a random mask: the kernel accepts only the deterministic ratio = 0.
  const Tensor* training = context.input_constant(2);
  if (training && training->numel() == 1 && training->get_int64(0) != 0) {
    const Tensor* ratio = context.input_constant(1);
    bool zero_ratio = ratio && ratio->numel() == 1 && ratio->get_double(0) == 0.0;
    if (!context.has_input(1) || (ratio && !zero_ratio)) {
      raise_unsupported(cat(node.describe(), ": training_mode = true with a non-zero ratio ",
                            "(random dropout) is not supported; rnnc runs inference only"));
    }
  }
  DType dtype = context.input_type(0).dtype;
  // The mask is bool from opset 10; before, it has the data's type.
  DType mask_dtype = opset >= 10 ? DType::kBool : dtype;
  if (const Shape* data = shape_if_ranked(context, 0)) {
    context.set_output(0, dtype, *data);
    context.set_output(1, mask_dtype, *data);
  } else {
    context.set_output_unknown_rank(0, dtype);
    context.set_output_unknown_rank(1, mask_dtype);
  }
}

}  // namespace

std::optional<Shape> conv_output_shape(const InferenceContext& context, const ConvOperands& in) {
  const Node& node = context.node();
  const Shape* x = shape_if_ranked(context, in.x);
  if (x && x->size() < 3) {
    context.fail(cat("input ", in.x_name, " has rank ", x->size(), " ", shape_to_string(*x),
                     ", expected at least 3 (N x C x D1 ...)"));
  }
  if (!x) return std::nullopt;
  size_t spatial_rank = x->size() - 2;
  const Shape* w = shape_if_ranked(context, in.w);
  if (w && w->size() != x->size()) {
    context.fail(cat("input ", in.w_name, " has rank ", w->size(), " but ", in.x_name,
                     " has rank ", x->size(), " (", in.w_name, " is M x C/group x k1 x ... x kn)"));
  }
  int64_t group = node.attr_int("group", 1);
  if (group < 1) context.fail(cat("attribute 'group' = ", group, ", must be > 0"));

  std::optional<std::vector<int64_t>> kernel;
  if (node.has_attr("kernel_shape")) {
    kernel = per_axis_attr(context, "kernel_shape", spatial_rank, 1, 1, "one per spatial axis");
    for (size_t i = 0; w && i < spatial_rank; ++i) {
      const Dim& weight_dim = (*w)[i + 2];
      if (weight_dim.is_known() && weight_dim.value() != (*kernel)[i]) {
        context.fail(cat("attribute 'kernel_shape'[", i, "] = ", (*kernel)[i], " but ",
                         in.w_name, " has spatial dim ", weight_dim.value(), " (", in.w_name,
                         " shape ", shape_to_string(*w), ")"));
      }
    }
  } else if (w) {
    std::vector<int64_t> from_weight;
    for (size_t i = 0; i < spatial_rank; ++i) {
      if ((*w)[i + 2].is_known()) from_weight.push_back((*w)[i + 2].value());
    }
    if (from_weight.size() == spatial_rank) kernel = from_weight;
  }
  Window window = read_window(context, spatial_rank, kernel);

  Dim channels = (*x)[1];
  Dim out_channels = w ? (*w)[0] : Dim::unknown();
  if (w && channels.is_known() && (*w)[1].is_known() &&
      channels.value() != (*w)[1].value() * group) {
    context.fail(cat("input channels ", channels.value(), " != weight channels ", (*w)[1].value(),
                     " * group ", group));
  }
  if (out_channels.is_known() && out_channels.value() % group != 0) {
    context.fail(cat("weight output channels ", out_channels.value(),
                     " are not a multiple of group ", group));
  }
  Shape out = {(*x)[0], out_channels};
  for (size_t i = 0; i < spatial_rank; ++i) {
    out.push_back(window_output_dim(context, window, i, (*x)[i + 2]));
  }
  return out;
}

void check_conv_bias(const InferenceContext& context, size_t input, const char* name,
                     const Dim& out_channels, const char* w_name) {
  const TensorType& type = context.input_type(input);
  if (!type.shape) return;
  const Shape& b = *type.shape;
  if (b.size() != 1) {
    context.fail(cat("input ", name, " has rank ", b.size(), ", expected 1 (a bias per channel)"));
  }
  if (b[0].is_known() && out_channels.is_known() && b[0].value() != out_channels.value()) {
    context.fail(cat("input ", name, " has ", b[0].value(), " elements but ", w_name, " has ",
                     out_channels.value(), " output channels"));
  }
}

void register_nn_schemas(std::vector<OpSchema>& registry) {
  // op_type, since_opset, min/max inputs, min/max outputs, inference.
  registry.push_back({"Conv", 1, 2, 3, 1, 1, infer_conv});
  registry.push_back({"ConvTranspose", 1, 2, 3, 1, 1, infer_conv_transpose});
  registry.push_back({"CumSum", 11, 2, 2, 1, 1, infer_cumsum});
  registry.push_back({"TopK", 1, 1, 2, 2, 2, infer_top_k});
  registry.push_back({"LRN", 1, 1, 1, 1, 1, infer_lrn});
  registry.push_back({"MeanVarianceNormalization", 9, 1, 1, 1, 1,
                      infer_mean_variance_normalization});
  registry.push_back({"Det", 11, 1, 1, 1, 1, infer_det});
  registry.push_back({"MaxUnpool", 9, 2, 3, 1, 1, infer_max_unpool});
  registry.push_back({"NonMaxSuppression", 10, 2, 5, 1, 1, infer_non_max_suppression});
  registry.push_back({"RoiAlign", 10, 3, 3, 1, 1, infer_roi_align});
  registry.push_back({"MaxPool", 1, 1, 1, 1, 2, infer_pool});
  registry.push_back({"AveragePool", 1, 1, 1, 1, 1, infer_pool});
  registry.push_back({"GlobalAveragePool", 1, 1, 1, 1, 1, infer_global_pool});
  registry.push_back({"GlobalMaxPool", 1, 1, 1, 1, 1, infer_global_pool});
  registry.push_back({"BatchNormalization", 1, 5, 5, 1, 5, infer_batch_norm});
  registry.push_back({"InstanceNormalization", 1, 3, 3, 1, 1, infer_instance_norm});
  registry.push_back({"LayerNormalization", 17, 2, 3, 1, 3, infer_layer_norm});
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    registry.push_back({op, 1, 1, 2, 1, 1, infer_reduce});
  }
  registry.push_back({"ArgMax", 1, 1, 1, 1, 1, infer_arg_extremum});
  registry.push_back({"ArgMin", 1, 1, 1, 1, 1, infer_arg_extremum});
  registry.push_back({"Dropout", 1, 1, 3, 1, 2, infer_dropout});
}

}  // namespace rnnc
