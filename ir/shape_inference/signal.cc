// Type and shape inference for the signal-processing ops of speech front-ends exported inside the
// graph (opset 17+): HannWindow, HammingWindow, BlackmanWindow, DFT, STFT and MelWeightMatrix
// (docs/ops/signal.md). Sizes that come from scalar inputs (window size, dft_length, frame_length,
// num_mel_bins) are known when those inputs are constants; otherwise the dim is unknown.
#include <algorithm>
#include <optional>

#include "ir/op_schema.h"

namespace rnnc {

namespace {

const std::vector<DType> kSignalTypes = {DType::kFloat16, DType::kFloat32, DType::kFloat64,
                                         DType::kBFloat16};
const std::vector<DType> kIndexTypes = {DType::kInt32, DType::kInt64};

// A scalar input (a one-element vector is accepted too): its shape is checked, its value returned
// when it is a constant.
std::optional<double> scalar_input(const InferenceContext& context, size_t input,
                                   const char* name) {
  if (!context.has_input(input)) return std::nullopt;
  if (const Shape* shape =
          context.input_type(input).shape ? &*context.input_type(input).shape : nullptr) {
    bool scalar = shape->empty() ||
                  (shape->size() == 1 && (*shape)[0].is_known() && (*shape)[0].value() == 1);
    if (!scalar) {
      context.fail(
          cat("input '", name, "' has shape ", shape_to_string(*shape), ", expected a scalar"));
    }
  }
  const Tensor* constant = context.input_constant(input);
  if (!constant || constant->numel() != 1) return std::nullopt;
  return constant->get_double(0);
}

// output_datatype: the output's element type, float when absent; a numeric type.
DType output_datatype(const InferenceContext& context) {
  int64_t code = context.node().attr_int("output_datatype", 1);
  std::optional<DType> dtype = dtype_from_onnx(static_cast<int32_t>(code));
  if (!dtype || !(is_floating(*dtype) || is_integer(*dtype))) {
    context.fail(cat("attribute 'output_datatype' = ", code, " is not a numeric data type"));
  }
  return *dtype;
}

// A size from a constant scalar input: nonnegative (or positive) or an error naming the input.
Dim size_dim(const InferenceContext& context, const std::optional<double>& value, const char* name,
             int64_t minimum) {
  if (!value) return Dim::unknown();
  if (*value < static_cast<double>(minimum)) {
    context.fail(cat("input '", name, "' = ", *value, ", must be >= ", minimum));
  }
  return Dim(static_cast<int64_t>(*value));
}

void infer_window(InferenceContext& context) {
  context.require_input_type(0, "size", kIndexTypes);
  int64_t periodic = context.node().attr_int("periodic", 1);
  if (periodic != 0 && periodic != 1) {
    context.fail(cat("attribute 'periodic' = ", periodic, ", must be 0 or 1"));
  }
  DType dtype = output_datatype(context);
  context.set_output(0, dtype, {size_dim(context, scalar_input(context, 0, "size"), "size", 1)});
}

// The bins a transform of length n keeps: n, or floor(n / 2) + 1 when onesided.
Dim kept_bins(const Dim& n, bool onesided) {
  if (!onesided) return n;
  return n.is_known() ? Dim(n.value() / 2 + 1) : Dim::unknown();
}

bool flag(const InferenceContext& context, const char* name, int64_t fallback) {
  int64_t value = context.node().attr_int(name, fallback);
  if (value != 0 && value != 1)
    context.fail(cat("attribute '", name, "' = ", value, ", must be 0 or 1"));
  return value == 1;
}

void infer_dft(InferenceContext& context) {
  const Node& node = context.node();
  context.require_input_type(0, "input", kSignalTypes);
  context.require_input_type(1, "dft_length", kIndexTypes);
  DType dtype = context.input_type(0).dtype;
  bool inverse = flag(context, "inverse", 0);
  bool onesided = flag(context, "onesided", 0);
  if (inverse && onesided) {
    raise_unsupported(cat(node.describe(), ": inverse = 1 with onesided = 1 (a half spectrum back ",
                          "to a real signal) is not supported"));
  }
  if (node.opset() >= 20 && node.has_attr("axis")) {
    context.fail("attribute 'axis' became input 2 in opset 20");
  }
  if (node.opset() < 20 && context.has_input(2)) {
    context.fail("input 2 'axis' exists from opset 20; before it 'axis' is an attribute");
  }
  context.require_input_type(2, "axis", {DType::kInt64});
  const Shape* x = context.input_type(0).shape ? &*context.input_type(0).shape : nullptr;
  std::optional<double> length = scalar_input(context, 1, "dft_length");
  std::optional<double> axis_value = node.opset() >= 20
                                         ? scalar_input(context, 2, "axis")
                                         : std::optional<double>(node.attr_int("axis", 1));
  if (node.opset() >= 20 && !context.has_input(2)) axis_value = -2;
  if (!x) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(x->size());
  if (rank < 2) {
    context.fail(cat("input 'input' has shape ", shape_to_string(*x),
                     ", expected [..., signal dims, 1 or 2]"));
  }
  const Dim& parts = x->back();
  if (parts.is_known() && parts.value() != 1 && parts.value() != 2) {
    context.fail(cat("input 'input' has shape ", shape_to_string(*x),
                     ": the last dim must be 1 (real) or 2 (complex)"));
  }
  if (onesided && parts.is_known() && parts.value() == 2) {
    context.fail("attribute 'onesided' = 1 needs a real input (last dim 1)");
  }
  Shape out = *x;
  out.back() = Dim(2);
  if (!axis_value) {
    for (size_t a = 0; a + 1 < out.size(); ++a) out[a] = Dim::unknown();
    context.set_output(0, dtype, out);
    return;
  }
  // The signal axis: any but the last (the real/imaginary pair).
  int64_t axis = static_cast<int64_t>(*axis_value);
  if (axis < -rank || axis > rank - 2 || axis == -1) {
    context.fail(cat("axis = ", axis, " is out of range for input rank ", rank, " (valid: [", -rank,
                     ", -2] and [0, ", rank - 2, "])"));
  }
  size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  Dim n = context.has_input(1) ? size_dim(context, length, "dft_length", 1) : (*x)[a];
  out[a] = kept_bins(n, onesided);
  context.set_output(0, dtype, out);
}

void infer_stft(InferenceContext& context) {
  context.require_input_type(0, "signal", kSignalTypes);
  context.require_input_type(1, "frame_step", kIndexTypes);
  context.require_input_type(2, "window", kSignalTypes);
  context.require_input_type(3, "frame_length", kIndexTypes);
  DType dtype = context.input_type(0).dtype;
  if (context.has_input(2) && context.input_type(2).dtype != dtype) {
    context.fail(cat("input 'window' is ", dtype_onnx_name(context.input_type(2).dtype),
                     " but 'signal' is ", dtype_onnx_name(dtype), " (they must match)"));
  }
  bool onesided = flag(context, "onesided", 1);
  Dim step = size_dim(context, scalar_input(context, 1, "frame_step"), "frame_step", 1);
  Dim frame_length = size_dim(context, scalar_input(context, 3, "frame_length"), "frame_length", 1);
  const Shape* window =
      context.has_input(2) && context.input_type(2).shape ? &*context.input_type(2).shape : nullptr;
  if (window && window->size() != 1) {
    context.fail(cat("input 'window' has shape ", shape_to_string(*window), ", expected rank 1"));
  }
  if (!context.has_input(2) && !context.has_input(3)) {
    context.fail("one of input 'window' and input 'frame_length' is required");
  }
  if (!context.has_input(3) && window) frame_length = (*window)[0];
  if (window && (*window)[0].is_known() && frame_length.is_known() &&
      (*window)[0].value() != frame_length.value()) {
    context.fail(cat("input 'window' has ", (*window)[0].value(), " elements but frame_length is ",
                     frame_length.value()));
  }
  const Shape* signal = context.input_type(0).shape ? &*context.input_type(0).shape : nullptr;
  if (!signal) {
    context.set_output(0, dtype, Shape(4, Dim::unknown()));
    return;
  }
  if (signal->size() != 3) {
    context.fail(cat("input 'signal' has shape ", shape_to_string(*signal),
                     ", expected [batch, signal_length, 1 or 2]"));
  }
  const Dim& parts = (*signal)[2];
  if (parts.is_known() && parts.value() != 1 && parts.value() != 2) {
    context.fail(cat("input 'signal' has shape ", shape_to_string(*signal),
                     ": the last dim must be 1 (real) or 2 (complex)"));
  }
  if (onesided && parts.is_known() && parts.value() == 2) {
    context.fail("attribute 'onesided' = 1 needs a real signal (last dim 1)");
  }
  Dim frames = Dim::unknown();
  const Dim& length = (*signal)[1];
  if (length.is_known() && frame_length.is_known() && step.is_known()) {
    if (length.value() < frame_length.value()) {
      context.fail(cat("input 'signal' has ", length.value(), " samples, fewer than frame_length ",
                       frame_length.value()));
    }
    frames = Dim((length.value() - frame_length.value()) / step.value() + 1);
  }
  context.set_output(0, dtype, {(*signal)[0], frames, kept_bins(frame_length, onesided), Dim(2)});
}

void infer_mel_weight_matrix(InferenceContext& context) {
  for (size_t i = 0; i < 3; ++i) {
    static const char* const kNames[] = {"num_mel_bins", "dft_length", "sample_rate"};
    context.require_input_type(static_cast<int>(i), kNames[i], kIndexTypes);
    scalar_input(context, i, kNames[i]);
  }
  context.require_input_type(3, "lower_edge_hertz", kSignalTypes);
  context.require_input_type(4, "upper_edge_hertz", kSignalTypes);
  scalar_input(context, 3, "lower_edge_hertz");
  scalar_input(context, 4, "upper_edge_hertz");
  DType dtype = output_datatype(context);
  Dim bins = size_dim(context, scalar_input(context, 0, "num_mel_bins"), "num_mel_bins", 1);
  Dim length = size_dim(context, scalar_input(context, 1, "dft_length"), "dft_length", 1);
  context.set_output(0, dtype, {kept_bins(length, true), bins});
}

}  // namespace

void register_signal_schemas(std::vector<OpSchema>& registry) {
  // op_type, since_opset, min/max inputs, min/max outputs, inference.
  registry.push_back({"HannWindow", 17, 1, 1, 1, 1, infer_window});
  registry.push_back({"HammingWindow", 17, 1, 1, 1, 1, infer_window});
  registry.push_back({"BlackmanWindow", 17, 1, 1, 1, 1, infer_window});
  registry.push_back({"DFT", 17, 1, 3, 1, 1, infer_dft});
  registry.push_back({"STFT", 17, 2, 4, 1, 1, infer_stft});
  registry.push_back({"MelWeightMatrix", 17, 5, 5, 1, 1, infer_mel_weight_matrix});
}

}  // namespace rnnc
