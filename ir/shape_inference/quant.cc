// Type and shape inference for the quantization ops: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv
// (docs/ops/quant.md has the semantics of each).
//
// Beyond the output types and shapes, inference checks what the operator docs require of the
// quantization parameters wherever the dims are known: a scale and its zero point have one shape,
// per-tensor parameters are one value (a scalar or a one-element vector), per-axis ones have as
// many values as the quantized axis, per-row and per-column ones match the matrix's rows or
// columns. The same checks on sizes only known at run time are the kernels' (kInvalidInput).
//
//   QuantizeLinear(f32[seq, 4], f32[4], i8[4]) {axis=1}  -> i8[seq, 4]
//   MatMulInteger(u8[seq, 40], i8[40, 512], u8[], i8[512]) -> i32[seq, 512]
#include <algorithm>
#include <string>
#include <vector>

#include "ir/op_schema.h"
#include "ir/shape_inference/conv_shape.h"

namespace rnnc {

namespace {

// ---- shared checks -----------------------------------------------------------------------------

const std::vector<DType> kEightBit = {DType::kInt8, DType::kUInt8};

std::string dtype_list(const std::vector<DType>& types) {
  std::string text;
  for (size_t i = 0; i < types.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::string(dtype_onnx_name(types[i]));
  }
  return text;
}

void check_same_dtype(const InferenceContext& context, size_t input, const char* name,
                      size_t reference, const char* reference_name) {
  DType dtype = context.input_type(input).dtype;
  DType expected = context.input_type(reference).dtype;
  if (dtype != DType::kUndefined && expected != DType::kUndefined && dtype != expected) {
    context.fail(cat("input ", name, " is ", dtype_onnx_name(dtype), " but ", reference_name,
                     " is ", dtype_onnx_name(expected), " (they must match)"));
  }
}

// The input's shape, or nullptr when it is absent or its rank is unknown.
const Shape* shape_if_ranked(const InferenceContext& context, size_t input) {
  if (!context.has_input(input)) return nullptr;
  const TensorType& type = context.input_type(input);
  return type.shape ? &*type.shape : nullptr;
}

void require_opset_for_attribute(const InferenceContext& context, const char* name, int since) {
  if (context.node().has_attr(name) && context.node().opset() < since) {
    context.fail(cat("attribute '", name, "' needs opset ", since, " or later"));
  }
}

// One value for the whole tensor: a scalar or a vector of one element.
bool is_single_value(const Shape& shape) {
  return shape.empty() || (shape.size() == 1 && shape[0].is_known() && shape[0].value() == 1);
}

bool same_dims(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].is_known() && b[i].is_known() && a[i].value() != b[i].value()) return false;
  }
  return true;
}

// A scale and its zero point have the same shape; a scalar and a one-element vector both mean
// one value, so they count as the same.
void check_same_shape(const InferenceContext& context, size_t input, const char* name,
                      size_t reference, const char* reference_name) {
  const Shape* shape = shape_if_ranked(context, input);
  const Shape* expected = shape_if_ranked(context, reference);
  if (!shape || !expected) return;
  if (is_single_value(*shape) && is_single_value(*expected)) return;
  if (!same_dims(*shape, *expected)) {
    context.fail(cat("input ", name, " has shape ", shape_to_string(*shape), " but ",
                     reference_name, " has shape ", shape_to_string(*expected),
                     " (they must have the same shape)"));
  }
}

void check_single_value(const InferenceContext& context, size_t input, const char* name,
                        const char* why) {
  const Shape* shape = shape_if_ranked(context, input);
  if (shape && !is_single_value(*shape)) {
    bool could_be_one = shape->size() == 1 && !(*shape)[0].is_known();
    if (!could_be_one) {
      context.fail(cat("input ", name, " has shape ", shape_to_string(*shape),
                       ", expected a scalar (", why, ")"));
    }
  }
}

// A 1-D per-channel or per-axis parameter: one value, or `expected` values.
void check_vector_length(const InferenceContext& context, size_t input, const char* name,
                         const Dim& expected, const std::string& what) {
  const Shape* shape = shape_if_ranked(context, input);
  if (!shape || is_single_value(*shape)) return;
  if (shape->size() != 1) {
    context.fail(cat("input ", name, " has shape ", shape_to_string(*shape),
                     ", expected a scalar (per-tensor) or a 1-D tensor (", what, ")"));
  }
  const Dim& length = (*shape)[0];
  if (length.is_known() && expected.is_known() && length.value() != expected.value()) {
    context.fail(cat("input ", name, " has ", length.value(), " elements, expected 1 or ",
                     expected.value(), " (", what, ")"));
  }
}

// ---- QuantizeLinear, DequantizeLinear ----------------------------------------------------------

// The attributes of the newer versions that rnnc does not implement: blocked quantization
// (block_size, opset 21) and the float8 saturation switch (saturate, opset 19), which has no
// effect on the integer types rnnc supports.
void check_linear_attributes(const InferenceContext& context, bool quantize) {
  const Node& node = context.node();
  require_opset_for_attribute(context, "axis", 13);
  require_opset_for_attribute(context, "block_size", 21);
  if (quantize) {
    require_opset_for_attribute(context, "saturate", 19);
    require_opset_for_attribute(context, "output_dtype", 21);
  }
  int64_t block_size = node.attr_int("block_size", 0);
  if (block_size < 0) context.fail(cat("attribute 'block_size' = ", block_size, ", must be >= 0"));
  if (block_size > 0) {
    raise_unsupported(cat(node.describe(), ": attribute 'block_size' = ", block_size,
                          " (blocked quantization) is not supported"));
  }
}

// Scale and zero point (inputs 1 and 2) against x (input 0): per-tensor, or from opset 13 per-axis
// along `axis` with one value per index of x's axis.
void check_linear_parameters(const InferenceContext& context, const char* scale_name,
                             const char* zero_point_name) {
  const Node& node = context.node();
  if (context.has_input(2)) check_same_shape(context, 2, zero_point_name, 1, scale_name);
  const Shape* scale = shape_if_ranked(context, 1);
  if (!scale || is_single_value(*scale)) return;
  if (node.opset() < 13) {
    context.fail(cat("input ", scale_name, " has shape ", shape_to_string(*scale),
                     ", expected a scalar (per-axis quantization needs opset 13 or later)"));
  }
  if (scale->size() != 1) {
    context.fail(cat("input ", scale_name, " has shape ", shape_to_string(*scale),
                     ", expected a scalar (per-tensor) or a 1-D tensor (per-axis)"));
  }
  const Shape* x = shape_if_ranked(context, 0);
  if (!x) return;
  int64_t axis = context.normalize_axis(node.attr_int("axis", 1), static_cast<int64_t>(x->size()),
                                        "attribute 'axis'");
  const Dim& length = (*scale)[0];
  const Dim& extent = (*x)[static_cast<size_t>(axis)];
  if (length.is_known() && extent.is_known() && length.value() != extent.value()) {
    context.fail(cat("input ", scale_name, " has ", length.value(), " elements but x has ",
                     extent.value(), " along axis ", axis, " (x shape ", shape_to_string(*x), ")"));
  }
}

void set_same_shape_output(const InferenceContext& context, size_t output, DType dtype) {
  const TensorType& x = context.input_type(0);
  if (x.shape) {
    context.set_output(output, dtype, *x.shape);
  } else {
    context.set_output_unknown_rank(output, dtype);
  }
}

// y = saturate(round(x / y_scale) + y_zero_point), y typed as y_zero_point (default uint8; from
// opset 21 attribute output_dtype may name it when the zero point is absent).
void infer_quantize_linear(InferenceContext& context) {
  const Node& node = context.node();
  int opset = node.opset();
  check_linear_attributes(context, true);
  if (opset < 19) {
    context.require_input_type(0, "x", {DType::kFloat32, DType::kInt32});
    context.require_input_type(1, "y_scale", {DType::kFloat32});
  } else {
    context.require_input_type(0, "x",
                {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32});
    check_same_dtype(context, 1, "y_scale", 0, "x");
  }
  std::vector<DType> output_types = kEightBit;
  if (opset >= 21) {
    output_types.push_back(DType::kInt16);
    output_types.push_back(DType::kUInt16);
  }
  DType out = DType::kUInt8;
  if (context.has_input(2)) {
    context.require_input_type(2, "y_zero_point", output_types);
    out = context.input_type(2).dtype;
  }
  if (int64_t code = node.attr_int("output_dtype", 0); code != 0) {
    std::optional<DType> named = dtype_from_onnx(static_cast<int32_t>(code));
    if (!named ||
        std::find(output_types.begin(), output_types.end(), *named) == output_types.end()) {
      if (const char* name = unrepresented_onnx_type_name(static_cast<int32_t>(code))) {
        raise_unsupported(cat(node.describe(), ": attribute 'output_dtype' = ", code, " (", name,
                              ") is not supported"));
      }
      context.fail(cat("attribute 'output_dtype' = ", code, ", expected one of ",
                       dtype_list(output_types), " (as TensorProto.DataType)"));
    }
    if (context.has_input(2) && out != DType::kUndefined && out != *named) {
      context.fail(cat("attribute 'output_dtype' = ", code, " (", dtype_onnx_name(*named),
                       ") but input y_zero_point is ", dtype_onnx_name(out), " (they must match)"));
    }
    out = *named;
  }
  check_linear_parameters(context, "y_scale", "y_zero_point");
  set_same_shape_output(context, 0, out);
}

// y = (x - x_zero_point) * x_scale, y typed as x_scale (float before opset 19).
void infer_dequantize_linear(InferenceContext& context) {
  const Node& node = context.node();
  int opset = node.opset();
  check_linear_attributes(context, false);
  std::vector<DType> input_types = {DType::kInt8, DType::kUInt8, DType::kInt32};
  if (opset >= 21) {
    input_types.push_back(DType::kInt16);
    input_types.push_back(DType::kUInt16);
  }
  context.require_input_type(0, "x", input_types);
  if (opset < 19) {
    context.require_input_type(1, "x_scale", {DType::kFloat32});
  } else {
    context.require_input_type(1, "x_scale", {DType::kFloat32, DType::kFloat16, DType::kBFloat16});
  }
  if (context.has_input(2)) {
    check_same_dtype(context, 2, "x_zero_point", 0, "x");
    // int32 has no zero point: the spec fixes it at 0.
    const Tensor* zero_point = context.input_constant(2);
    if (zero_point && zero_point->dtype() == DType::kInt32) {
      for (int64_t i = 0; i < zero_point->numel(); ++i) {
        if (zero_point->get_int64(i) != 0) {
          context.fail(cat("input x_zero_point[", i, "] = ", zero_point->get_int64(i),
                           ", but int32 x has no zero point (it must be 0)"));
        }
      }
    }
  }
  check_linear_parameters(context, "x_scale", "x_zero_point");
  DType scale = context.input_type(1).dtype;
  set_same_shape_output(context, 0, scale == DType::kUndefined ? DType::kFloat32 : scale);
}

// y (uint8, x's shape), y_scale (float scalar), y_zero_point (uint8 scalar).
void infer_dynamic_quantize_linear(InferenceContext& context) {
  context.require_input_type(0, "x", {DType::kFloat32});
  set_same_shape_output(context, 0, DType::kUInt8);
  context.set_output(1, DType::kFloat32, {});
  context.set_output(2, DType::kUInt8, {});
}

// ---- MatMulInteger, QLinearMatMul --------------------------------------------------------------

// numpy.matmul of inputs a and b (1-D operands promoted and their added axis dropped).
std::optional<Shape> matmul_shape(const InferenceContext& context, size_t a_input,
                                  const char* a_name, size_t b_input, const char* b_name) {
  const Shape* a_shape = shape_if_ranked(context, a_input);
  const Shape* b_shape = shape_if_ranked(context, b_input);
  if (!a_shape || !b_shape) return std::nullopt;
  auto operands = [&] {
    return cat(a_name, " is ", shape_to_string(*a_shape), ", ", b_name, " is ",
               shape_to_string(*b_shape));
  };
  if (a_shape->empty() || b_shape->empty()) {
    context.fail(cat("operands must have rank >= 1: ", operands()));
  }
  Shape a = *a_shape;
  Shape b = *b_shape;
  if (a.size() == 1) a.insert(a.begin(), Dim(1));
  if (b.size() == 1) b.push_back(Dim(1));
  const Dim& a_inner = a[a.size() - 1];
  const Dim& b_inner = b[b.size() - 2];
  if (a_inner.is_known() && b_inner.is_known() && a_inner.value() != b_inner.value()) {
    context.fail(cat("inner dimensions differ: ", operands()));
  }
  Shape a_batch(a.begin(), a.end() - 2);
  Shape b_batch(b.begin(), b.end() - 2);
  size_t rank = std::max(a_batch.size(), b_batch.size());
  for (size_t k = 0; k < rank; ++k) {
    Dim da = k < rank - a_batch.size() ? Dim(1) : a_batch[k - (rank - a_batch.size())];
    Dim db = k < rank - b_batch.size() ? Dim(1) : b_batch[k - (rank - b_batch.size())];
    if (da.is_known() && db.is_known() && da.value() != db.value() && da.value() != 1 &&
        db.value() != 1) {
      context.fail(cat("batch dimensions cannot be broadcast: ", operands()));
    }
  }
  Shape out = broadcast_shapes(a_batch, b_batch, context);
  if (a_shape->size() > 1) out.push_back(a[a.size() - 2]);
  if (b_shape->size() > 1) out.push_back(b.back());
  return out;
}

// A per-row parameter of A [..., M, K] (or per-column one of B [..., K, N]): one value; a vector
// of M (N) values; or a tensor broadcasting to A's shape with its last dim 1, [..., M, 1] (B's
// with its second-to-last dim 1, [..., 1, N]).
void check_matrix_parameter(const InferenceContext& context, size_t input, const char* name,
                            size_t matrix, const char* matrix_name, bool per_row) {
  const Shape* shape = shape_if_ranked(context, input);
  const Shape* m = shape_if_ranked(context, matrix);
  if (!shape || !m || is_single_value(*shape)) return;
  const char* granularity = per_row ? "per-row" : "per-column";
  if (m->size() < 2) {
    context.fail(cat("input ", name, " has shape ", shape_to_string(*shape), " but ", matrix_name,
                     " is 1-D ", shape_to_string(*m), ": ", granularity,
                     " quantization needs a matrix"));
  }
  size_t fixed_axis = per_row ? m->size() - 1 : m->size() - 2;  // the axis the parameter spans as 1
  size_t varying_axis = per_row ? m->size() - 2 : m->size() - 1;
  auto mismatch = [&] {
    context.fail(cat("input ", name, " has shape ", shape_to_string(*shape),
                     ", expected a scalar, ",
                     (*m)[varying_axis].is_known() ? cat((*m)[varying_axis].value()) : "one",
                     per_row ? " per row" : " per column", ", or a shape broadcasting to ",
                     per_row ? "[..., M, 1]" : "[..., 1, N]", " (", matrix_name, " is ",
                     shape_to_string(*m), ")"));
  };
  if (shape->size() == 1) {
    const Dim& length = (*shape)[0];
    const Dim& expected = (*m)[varying_axis];
    if (length.is_known() && expected.is_known() && length.value() != expected.value()) {
      mismatch();
    }
    return;
  }
  if (shape->size() > m->size()) mismatch();
  size_t offset = m->size() - shape->size();
  for (size_t k = 0; k < shape->size(); ++k) {
    const Dim& d = (*shape)[k];
    const Dim& target = (*m)[k + offset];
    if (!d.is_known()) continue;
    if (k + offset == fixed_axis) {
      if (d.value() != 1) mismatch();
    } else if (d.value() != 1 && target.is_known() && d.value() != target.value()) {
      mismatch();
    }
  }
}

// Y = (A - a_zero_point) * (B - b_zero_point), int32.
void infer_matmul_integer(InferenceContext& context) {
  context.require_input_type(0, "A", kEightBit);
  context.require_input_type(1, "B", kEightBit);
  if (context.has_input(2)) {
    check_same_dtype(context, 2, "a_zero_point", 0, "A");
    check_matrix_parameter(context, 2, "a_zero_point", 0, "A", true);
  }
  if (context.has_input(3)) {
    check_same_dtype(context, 3, "b_zero_point", 1, "B");
    check_matrix_parameter(context, 3, "b_zero_point", 1, "B", false);
  }
  std::optional<Shape> out = matmul_shape(context, 0, "A", 1, "B");
  if (out) {
    context.set_output(0, DType::kInt32, *out);
  } else {
    context.set_output_unknown_rank(0, DType::kInt32);
  }
}

// The scales of the two-operand quantized ops: float, or from opset 21 (QLinearMatMul) one of
// float, float16 and bfloat16 shared by all three.
void check_scales(const InferenceContext& context, const std::vector<size_t>& inputs,
                  const std::vector<const char*>& names, bool half_scales) {
  std::vector<DType> types = {DType::kFloat32};
  if (half_scales) {
    types.push_back(DType::kFloat16);
    types.push_back(DType::kBFloat16);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    context.require_input_type(static_cast<int>(inputs[i]), names[i], types);
    if (i > 0) check_same_dtype(context, inputs[i], names[i], inputs[0], names[0]);
  }
}

// y = saturate(round((a - a_zero_point) * (b - b_zero_point) * a_scale * b_scale / y_scale)
//              + y_zero_point), typed as y_zero_point.
void infer_qlinear_matmul(InferenceContext& context) {
  context.require_input_type(0, "a", kEightBit);
  check_same_dtype(context, 2, "a_zero_point", 0, "a");
  context.require_input_type(3, "b", kEightBit);
  check_same_dtype(context, 5, "b_zero_point", 3, "b");
  context.require_input_type(7, "y_zero_point", kEightBit);
  check_scales(context, {1, 4, 6}, {"a_scale", "b_scale", "y_scale"}, context.node().opset() >= 21);
  check_same_shape(context, 2, "a_zero_point", 1, "a_scale");
  check_same_shape(context, 5, "b_zero_point", 4, "b_scale");
  check_same_shape(context, 7, "y_zero_point", 6, "y_scale");
  check_matrix_parameter(context, 1, "a_scale", 0, "a", true);
  check_matrix_parameter(context, 4, "b_scale", 3, "b", false);
  check_single_value(context, 6, "y_scale", "the output is quantized per tensor");
  DType out_dtype = context.input_type(7).dtype;
  std::optional<Shape> out = matmul_shape(context, 0, "a", 3, "b");
  if (out) {
    context.set_output(0, out_dtype, *out);
  } else {
    context.set_output_unknown_rank(0, out_dtype);
  }
}

// ---- ConvInteger, QLinearConv ------------------------------------------------------------------

const ConvOperands kConvOperands = {0, "x", 1, "w"};
const ConvOperands kQLinearConvOperands = {0, "x", 3, "w"};

// y = Conv(x - x_zero_point, w - w_zero_point), int32.
void infer_conv_integer(InferenceContext& context) {
  context.require_input_type(0, "x", kEightBit);
  context.require_input_type(1, "w", kEightBit);
  if (context.has_input(2)) {
    check_same_dtype(context, 2, "x_zero_point", 0, "x");
    check_single_value(context, 2, "x_zero_point", "x is quantized per tensor");
  }
  std::optional<Shape> out = conv_output_shape(context, kConvOperands);
  if (context.has_input(3)) {
    check_same_dtype(context, 3, "w_zero_point", 1, "w");
    const Shape* w = shape_if_ranked(context, 1);
    check_vector_length(context, 3, "w_zero_point", w ? (*w)[0] : Dim::unknown(),
                        "per output channel");
  }
  if (out) {
    context.set_output(0, DType::kInt32, *out);
  } else {
    context.set_output_unknown_rank(0, DType::kInt32);
  }
}

// y = saturate(round((Conv(x - x_zero_point, w - w_zero_point) + B) * x_scale * w_scale /
//                    y_scale) + y_zero_point), typed as y_zero_point.
void infer_qlinear_conv(InferenceContext& context) {
  context.require_input_type(0, "x", kEightBit);
  check_same_dtype(context, 2, "x_zero_point", 0, "x");
  context.require_input_type(3, "w", kEightBit);
  check_same_dtype(context, 5, "w_zero_point", 3, "w");
  context.require_input_type(7, "y_zero_point", kEightBit);
  check_scales(context, {1, 4, 6}, {"x_scale", "w_scale", "y_scale"}, false);
  if (context.has_input(8)) context.require_input_type(8, "B", {DType::kInt32});
  check_same_shape(context, 2, "x_zero_point", 1, "x_scale");
  check_same_shape(context, 5, "w_zero_point", 4, "w_scale");
  check_same_shape(context, 7, "y_zero_point", 6, "y_scale");
  check_single_value(context, 1, "x_scale", "x is quantized per tensor");
  check_single_value(context, 6, "y_scale", "y is quantized per tensor");
  std::optional<Shape> out = conv_output_shape(context, kQLinearConvOperands);
  const Shape* w = shape_if_ranked(context, 3);
  Dim out_channels = w ? (*w)[0] : Dim::unknown();
  check_vector_length(context, 4, "w_scale", out_channels, "per output channel");
  if (context.has_input(8)) check_conv_bias(context, 8, "B", out_channels, "w");
  DType out_dtype = context.input_type(7).dtype;
  if (out) {
    context.set_output(0, out_dtype, *out);
  } else {
    context.set_output_unknown_rank(0, out_dtype);
  }
}

}  // namespace

void register_quant_schemas(std::vector<OpSchema>& registry) {
  // op_type, since_opset, min/max inputs, min/max outputs, inference.
  registry.push_back({"QuantizeLinear", 10, 2, 3, 1, 1, infer_quantize_linear});
  registry.push_back({"DequantizeLinear", 10, 2, 3, 1, 1, infer_dequantize_linear});
  registry.push_back({"DynamicQuantizeLinear", 11, 1, 1, 3, 3, infer_dynamic_quantize_linear});
  registry.push_back({"MatMulInteger", 10, 2, 4, 1, 1, infer_matmul_integer});
  registry.push_back({"QLinearMatMul", 10, 8, 8, 1, 1, infer_qlinear_matmul});
  registry.push_back({"ConvInteger", 10, 2, 4, 1, 1, infer_conv_integer});
  registry.push_back({"QLinearConv", 10, 8, 9, 1, 1, infer_qlinear_conv});
}

}  // namespace rnnc
