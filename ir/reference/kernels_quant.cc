// Reference kernels of the quantization ops: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv
// (docs/ops/quant.md states the semantics, with the rounding and saturation rules).
//
// Rules shared by every kernel here:
//   - rounding is to nearest with ties to even, as each op's doc says; a NaN rounds to 0 (the docs
//     leave it undefined), so a NaN input quantizes to the zero point;
//   - saturation clamps to the output type's range after the zero point is added;
//   - integer products are exact: the shifted operands (q - zero_point) are multiplied and summed
//     in int64, and the sum wrapped to int32, which is what the docs allow ("the accumulation may
//     overflow if and only if in 32 bits");
//   - requantization (QLinearMatMul, QLinearConv) multiplies the int32 sum by the float32
//     multiplier a_scale * b_scale / y_scale (evaluated in float32, as ONNX's reference
//     implementation and ONNX Runtime do); that product is exact in double and rounded once;
//   - float16 and bfloat16 inputs and scales (opset 19 and later) are widened to float32.
// Parameter shapes that inference could not check (symbolic dims) are checked here, as
// kInvalidInput naming the node and the input.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/reference/kernel.h"

namespace rnnc {

namespace {

// ---- rounding and saturation -------------------------------------------------------------------

// Ties to even in the default floating-point environment; NaN -> 0.
double round_half_even(double value) { return std::isnan(value) ? 0.0 : std::nearbyint(value); }

QuantizedRange range_of(DType dtype, const KernelContext& context) {
  const std::optional<QuantizedRange> range = quantized_range(dtype);
  if (!range) {
    context.fail(cat("quantized element type ", dtype_onnx_name(dtype),
                     " is not int8, uint8, int16 or uint16"));
  }
  return *range;
}

// saturate(round(value) + zero_point) into `range`; +-inf saturate to the range's ends.
int64_t saturate_rounded(double value, int64_t zero_point, QuantizedRange range) {
  double q = round_half_even(value) + static_cast<double>(zero_point);
  if (q <= static_cast<double>(range.lo)) return range.lo;
  if (q >= static_cast<double>(range.hi)) return range.hi;
  return static_cast<int64_t>(q);
}

// The low 32 bits of an exact sum, as int32 (two's complement wrap-around).
int32_t wrap_to_int32(int64_t sum) {
  uint32_t bits = static_cast<uint32_t>(static_cast<uint64_t>(sum));
  int32_t out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

// ---- parameter shapes --------------------------------------------------------------------------

// One value for the whole tensor: a scalar or a one-element vector.
bool is_single_value(const Tensor& tensor) { return tensor.numel() == 1 && tensor.rank() <= 1; }

double single_value(const KernelContext& context, const Tensor& tensor, const char* name,
                    const char* why) {
  if (!is_single_value(tensor)) {
    context.fail_input(cat("input ", name, " has shape ", shape_text(tensor.shape()),
                           ", expected a scalar (", why, ")"));
  }
  return tensor.get_double(0);
}

void check_same_shape(const KernelContext& context, const Tensor& tensor, const char* name,
                      const Tensor& reference, const char* reference_name) {
  if (is_single_value(tensor) && is_single_value(reference)) return;
  if (tensor.shape() != reference.shape()) {
    context.fail_input(cat("input ", name, " has shape ", shape_text(tensor.shape()), " but ",
                           reference_name, " has shape ", shape_text(reference.shape()),
                           " (they must have the same shape)"));
  }
}

// One value per output channel: a single value repeated, or a vector of `channels` values.
std::vector<double> channel_values(const KernelContext& context, const Tensor* param,
                                   int64_t channels, const char* name) {
  std::vector<double> values(static_cast<size_t>(channels), 0.0);
  if (!param) return values;
  if (is_single_value(*param)) {
    std::fill(values.begin(), values.end(), param->get_double(0));
    return values;
  }
  if (param->rank() != 1 || param->numel() != channels) {
    context.fail_input(cat("input ", name, " has shape ", shape_text(param->shape()),
                           ", expected a scalar or ", channels,
                           " values (one per output channel)"));
  }
  for (int64_t i = 0; i < channels; ++i) values[static_cast<size_t>(i)] = param->get_double(i);
  return values;
}

// Which scale and zero point of QuantizeLinear/DequantizeLinear apply to element i of x: the
// index along `axis` (per-axis), or 0 (per-tensor).
struct AxisLayout {
  bool per_axis = false;
  int64_t extent = 1;  // x's size along the axis
  int64_t inner = 1;   // x's elements after the axis
  int64_t index(int64_t i) const { return per_axis ? (i / inner) % extent : 0; }
};

AxisLayout linear_layout(const KernelContext& context, const Tensor& x, const Tensor& scale,
                         const Tensor* zero_point, const char* scale_name,
                         const char* zero_point_name) {
  if (zero_point) check_same_shape(context, *zero_point, zero_point_name, scale, scale_name);
  AxisLayout layout;
  if (is_single_value(scale)) return layout;
  const Node& node = context.node;
  if (node.opset() < 13 || scale.rank() != 1) {
    context.fail_input(cat("input ", scale_name, " has shape ", shape_text(scale.shape()),
                           node.opset() < 13 ? ", expected a scalar (per-axis quantization needs "
                                               "opset 13 or later)"
                                             : ", expected a scalar (per-tensor) or a 1-D tensor "
                                               "(per-axis)"));
  }
  int64_t rank = x.rank();
  int64_t axis = node.attr_int("axis", 1);
  if (axis < -rank || axis >= rank) {
    context.fail_input(cat("attribute 'axis' = ", axis, " is out of range for x of shape ",
                           shape_text(x.shape())));
  }
  if (axis < 0) axis += rank;
  if (scale.numel() != x.dim(axis)) {
    context.fail_input(cat("input ", scale_name, " has ", scale.numel(), " elements but x has ",
                           x.dim(axis), " along axis ", axis, " (x shape ", shape_text(x.shape()),
                           ")"));
  }
  layout.per_axis = true;
  layout.extent = x.dim(axis);
  for (int64_t k = axis + 1; k < rank; ++k) layout.inner *= x.dim(k);
  return layout;
}

// ---- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear -----------------------------------

// y = saturate(round(x / y_scale) + y_zero_point). float x divides in float32 (the types the spec
// names; numpy and ONNX Runtime do the same); int32 x divides in double, exactly rounded.
void quantize_linear(KernelContext& context) {
  const Node& node = context.node;
  Tensor x = widen_half(context.input(0));
  Tensor scale = widen_half(context.input(1));
  const Tensor* zero_point = context.has_input(2) ? &context.input(2) : nullptr;
  DType out_dtype = DType::kUInt8;
  if (zero_point) {
    out_dtype = zero_point->dtype();
  } else if (int64_t code = node.attr_int("output_dtype", 0); code != 0) {
    out_dtype = static_cast<DType>(code);  // validated by inference
  }
  QuantizedRange range = range_of(out_dtype, context);
  AxisLayout layout = linear_layout(context, x, scale, zero_point, "y_scale", "y_zero_point");
  Tensor y(out_dtype, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t p = layout.index(i);
    double quotient;
    if (x.dtype() == DType::kFloat32 && scale.dtype() == DType::kFloat32) {
      quotient = static_cast<double>(x.data<float>()[i] / scale.data<float>()[p]);
    } else {
      quotient = x.get_double(i) / scale.get_double(p);
    }
    int64_t z = zero_point ? zero_point->get_int64(p) : 0;
    y.set_double(i, static_cast<double>(saturate_rounded(quotient, z, range)));
  }
  context.outputs[0] = y;
}

// y = (x - x_zero_point) * x_scale: the difference is exact, converted to float32 and multiplied
// in float32 (float16/bfloat16 scales: in float32, then rounded to the scale's type once).
void dequantize_linear(KernelContext& context) {
  const Tensor& x = context.input(0);
  DType scale_dtype = context.input(1).dtype();
  Tensor scale = widen_half(context.input(1));
  const Tensor* zero_point = context.has_input(2) ? &context.input(2) : nullptr;
  AxisLayout layout = linear_layout(context, x, scale, zero_point, "x_scale", "x_zero_point");
  if (zero_point && x.dtype() == DType::kInt32) {
    for (int64_t i = 0; i < zero_point->numel(); ++i) {
      if (zero_point->get_int64(i) != 0) {
        context.fail_input(cat("input x_zero_point[", i, "] = ", zero_point->get_int64(i),
                               ", but int32 x has no zero point (it must be 0)"));
      }
    }
  }
  Tensor y(DType::kFloat32, x.shape());
  float* out = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t p = layout.index(i);
    int64_t shifted = x.get_int64(i) - (zero_point ? zero_point->get_int64(p) : 0);
    out[i] = static_cast<float>(shifted) * static_cast<float>(scale.get_double(p));
  }
  context.outputs[0] = narrow_to(y, scale_dtype);
}

// The spec's formula in float32, over x's range adjusted to include 0:
//   y_scale = (max(0, max x) - min(0, min x)) / 255
//   y_zero_point = round(saturate(0 - min(0, min x) / y_scale))
//   y = saturate(round(x / y_scale) + y_zero_point)
// The formula divides 0 by 0 when x is all zeros (or empty); rnnc then takes y_scale = 1 and
// y_zero_point = 0, as ONNX Runtime does. NaN elements do not take part in the range.
void dynamic_quantize_linear(KernelContext& context) {
  const Tensor& x = context.input(0);
  const float* values = x.data<float>();
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(values[i])) continue;
    lo = std::min(lo, values[i]);
    hi = std::max(hi, values[i]);
  }
  constexpr QuantizedRange kUInt8 = {0, 255};
  float scale = 1.0f;
  int64_t zero_point = 0;
  if (lo != hi) {
    scale = (hi - lo) / 255.0f;
    float intermediate = 0.0f - lo / scale;
    zero_point = saturate_rounded(static_cast<double>(intermediate), 0, kUInt8);
  }
  Tensor y(DType::kUInt8, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    double quotient = static_cast<double>(values[i] / scale);
    y.data<uint8_t>()[i] = static_cast<uint8_t>(saturate_rounded(quotient, zero_point, kUInt8));
  }
  context.outputs[0] = y;
  context.outputs[1] = Tensor::scalar<float>(scale);
  context.outputs[2] = Tensor::scalar<uint8_t>(static_cast<uint8_t>(zero_point));
}

// ---- MatMulInteger, QLinearMatMul --------------------------------------------------------------

// numpy.matmul operands A [..., M, K] and B [..., K, N], 1-D ones promoted ([K] -> [1, K] for A,
// [K, 1] for B) and their added axis dropped from the result; the batch dims broadcast.
struct MatMulShape {
  std::vector<int64_t> a_shape, b_shape;  // promoted, rank >= 2
  int64_t m, k, n;
  std::vector<int64_t> batch;  // the broadcast batch dims
  std::vector<int64_t> a_batch_strides, b_batch_strides;
  std::vector<int64_t> out_shape;
};

MatMulShape matmul_shape(const KernelContext& context, const Tensor& a, const char* a_name,
                         const Tensor& b, const char* b_name) {
  auto operands = [&] {
    return cat(a_name, " is ", shape_text(a.shape()), ", ", b_name, " is ", shape_text(b.shape()));
  };
  if (a.rank() == 0 || b.rank() == 0) {
    context.fail_input(cat("operands must have rank >= 1: ", operands()));
  }
  MatMulShape s;
  s.a_shape = a.shape();
  s.b_shape = b.shape();
  if (a.rank() == 1) s.a_shape.insert(s.a_shape.begin(), 1);
  if (b.rank() == 1) s.b_shape.push_back(1);
  s.m = s.a_shape[s.a_shape.size() - 2];
  s.k = s.a_shape.back();
  s.n = s.b_shape.back();
  if (s.b_shape[s.b_shape.size() - 2] != s.k) {
    context.fail_input(cat("inner dimensions differ: ", operands()));
  }
  std::vector<int64_t> a_batch(s.a_shape.begin(), s.a_shape.end() - 2);
  std::vector<int64_t> b_batch(s.b_shape.begin(), s.b_shape.end() - 2);
  s.batch = broadcast_shapes(a_batch, b_batch, context);
  s.a_batch_strides = broadcast_strides(a_batch, s.batch);
  s.b_batch_strides = broadcast_strides(b_batch, s.batch);
  s.out_shape = s.batch;
  if (a.rank() > 1) s.out_shape.push_back(s.m);
  if (b.rank() > 1) s.out_shape.push_back(s.n);
  return s;
}

// A parameter of A's rows (per_row) or of B's columns, one value per row of A viewed as
// [rows, K] (per column of B viewed as [..., K, columns]): one value for all; a vector of M (N)
// values; or a tensor broadcasting to A's shape with its last dim 1, [..., M, 1] (B's with its
// second-to-last dim 1, [..., 1, N]).
std::vector<double> matrix_parameter_values(const KernelContext& context, const Tensor* param,
                                            const char* name, const std::vector<int64_t>& matrix,
                                            const char* matrix_name, bool per_row) {
  std::vector<int64_t> target = matrix;
  size_t fixed_axis = per_row ? target.size() - 1 : target.size() - 2;
  size_t varying_axis = per_row ? target.size() - 2 : target.size() - 1;
  target[fixed_axis] = 1;
  int64_t count = shape_numel(target);
  std::vector<double> values(static_cast<size_t>(count), 0.0);
  if (!param) return values;
  if (is_single_value(*param)) {
    std::fill(values.begin(), values.end(), param->get_double(0));
    return values;
  }
  std::vector<int64_t> param_shape = param->shape();
  if (param_shape.size() == 1) {  // one value per row (column): [M] means [M, 1], [N] is [1, N]
    param_shape =
        per_row ? std::vector<int64_t>{param_shape[0], 1} : std::vector<int64_t>{1, param_shape[0]};
  }
  bool fits = param_shape.size() <= target.size();
  for (size_t k = 0; fits && k < param_shape.size(); ++k) {
    int64_t d = param_shape[k];
    int64_t into = target[k + target.size() - param_shape.size()];
    fits = d == 1 || d == into;
  }
  if (!fits) {
    context.fail_input(cat("input ", name, " has shape ", shape_text(param->shape()),
                           ", expected a scalar, ", matrix[varying_axis],
                           per_row ? " values (one per row)" : " values (one per column)",
                           ", or a shape broadcasting to ", shape_text(target), " (", matrix_name,
                           " is ", shape_text(matrix), ")"));
  }
  std::vector<int64_t> strides = broadcast_strides(param_shape, target);
  std::vector<int64_t> index;
  for (int64_t i = 0; i < count; ++i) {
    unravel(i, target, index);
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) offset += index[k] * strides[k];
    values[static_cast<size_t>(i)] = param->get_double(offset);
  }
  return values;
}

// The batch matrices of A and B that output matrix t reads.
std::pair<int64_t, int64_t> batch_matrices(const MatMulShape& s, int64_t t,
                                           std::vector<int64_t>& index) {
  unravel(t, s.batch, index);
  int64_t a_matrix = 0, b_matrix = 0;
  for (size_t k = 0; k < index.size(); ++k) {
    a_matrix += index[k] * s.a_batch_strides[k];
    b_matrix += index[k] * s.b_batch_strides[k];
  }
  return {a_matrix, b_matrix};
}

// integer_matmul's sums: each row of the result summed along B's rows (contiguous) over the
// stored values,
//   sum (A - za)(B - zb) = sum A B - za sum_k B - zb sum_k A + K za zb,
// the first term in Sum (int32 is exact for K * 255 * 255 < 2^31, int64 beyond).
template <typename Sum, typename TA, typename TB, typename Emit>
void integer_matmul_8bit(const MatMulShape& s, const TA* a, const TB* b,
                         const std::vector<double>& a_zero, const std::vector<double>& b_zero,
                         Emit emit) {
  const int64_t matrices = shape_numel(s.batch);
  std::vector<int64_t> index;
  std::vector<int64_t> column_sums(static_cast<size_t>(s.n));  // sum over k of B, per column
  int64_t summed_matrix = -1;
  std::vector<Sum> sums(static_cast<size_t>(s.n));
  for (int64_t t = 0; t < matrices; ++t) {
    const auto [a_matrix, b_matrix] = batch_matrices(s, t, index);
    const TB* b_base = b + b_matrix * s.k * s.n;
    if (b_matrix != summed_matrix) {
      std::fill(column_sums.begin(), column_sums.end(), 0);
      for (int64_t k = 0; k < s.k; ++k) {
        for (int64_t j = 0; j < s.n; ++j)
          column_sums[static_cast<size_t>(j)] += b_base[k * s.n + j];
      }
      summed_matrix = b_matrix;
    }
    for (int64_t i = 0; i < s.m; ++i) {
      const int64_t a_row = a_matrix * s.m + i;
      const TA* a_base = a + a_row * s.k;
      const int64_t za = static_cast<int64_t>(a_zero[static_cast<size_t>(a_row)]);
      std::fill(sums.begin(), sums.end(), Sum{0});
      int64_t row_sum = 0;
      for (int64_t k = 0; k < s.k; ++k) {
        const Sum a_value = a_base[k];
        row_sum += a_base[k];
        const TB* b_row = b_base + k * s.n;
        for (int64_t j = 0; j < s.n; ++j) sums[static_cast<size_t>(j)] += a_value * b_row[j];
      }
      for (int64_t j = 0; j < s.n; ++j) {
        const int64_t b_column = b_matrix * s.n + j;
        const int64_t zb = static_cast<int64_t>(b_zero[static_cast<size_t>(b_column)]);
        const int64_t sum = static_cast<int64_t>(sums[static_cast<size_t>(j)]) -
                            za * column_sums[static_cast<size_t>(j)] - zb * row_sum + s.k * za * zb;
        emit((t * s.m + i) * s.n + j, a_row, b_column, sum);
      }
    }
  }
}

template <typename TA, typename TB, typename Emit>
void integer_matmul_8bit(const MatMulShape& s, const Tensor& a, const Tensor& b,
                         const std::vector<double>& a_zero, const std::vector<double>& b_zero,
                         Emit emit) {
  constexpr int64_t kExactInt32Terms = ((int64_t{1} << 31) - 1) / (255 * 255);
  if (s.k <= kExactInt32Terms) {
    integer_matmul_8bit<int32_t>(s, a.data<TA>(), b.data<TB>(), a_zero, b_zero, emit);
  } else {
    integer_matmul_8bit<int64_t>(s, a.data<TA>(), b.data<TB>(), a_zero, b_zero, emit);
  }
}

// Calls emit(y_offset, a_row, b_column, sum) for every output element, with the exact sum
//   sum over k of (A[a_row, k] - a_zero[a_row]) * (B[k, b_column] - b_zero[b_column])
// where a_row indexes A's rows ([rows, K]) and b_column B's columns (b_matrix * N + j). A and B
// are int8 or uint8: type inference admits no other type for MatMulInteger and QLinearMatMul.
template <typename Emit>
void integer_matmul(const MatMulShape& s, const Tensor& a, const Tensor& b,
                    const std::vector<double>& a_zero, const std::vector<double>& b_zero,
                    Emit emit) {
  const bool a_u8 = a.dtype() == DType::kUInt8, b_u8 = b.dtype() == DType::kUInt8;
  const bool a_i8 = a.dtype() == DType::kInt8, b_i8 = b.dtype() == DType::kInt8;
  RNNC_CHECK((a_u8 || a_i8) && (b_u8 || b_i8), "integer matmul of ", dtype_name(a.dtype()), " and ",
             dtype_name(b.dtype()), ": 8-bit operands only");
  if (a_u8 && b_u8) return integer_matmul_8bit<uint8_t, uint8_t>(s, a, b, a_zero, b_zero, emit);
  if (a_u8 && b_i8) return integer_matmul_8bit<uint8_t, int8_t>(s, a, b, a_zero, b_zero, emit);
  if (a_i8 && b_u8) return integer_matmul_8bit<int8_t, uint8_t>(s, a, b, a_zero, b_zero, emit);
  integer_matmul_8bit<int8_t, int8_t>(s, a, b, a_zero, b_zero, emit);
}

// Y = (A - a_zero_point) * (B - b_zero_point) as numpy.matmul, int32.
void matmul_integer(KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  MatMulShape s = matmul_shape(context, a, "A", b, "B");
  const Tensor* a_zero_point = context.has_input(2) ? &context.input(2) : nullptr;
  const Tensor* b_zero_point = context.has_input(3) ? &context.input(3) : nullptr;
  std::vector<double> a_zero =
      matrix_parameter_values(context, a_zero_point, "a_zero_point", s.a_shape, "A", true);
  std::vector<double> b_zero =
      matrix_parameter_values(context, b_zero_point, "b_zero_point", s.b_shape, "B", false);
  Tensor y(DType::kInt32, s.out_shape);
  int32_t* out = y.data<int32_t>();
  integer_matmul(s, a, b, a_zero, b_zero,
                 [&](int64_t yi, int64_t, int64_t, int64_t sum) { out[yi] = wrap_to_int32(sum); });
  context.outputs[0] = y;
}

// The float32 requantization multiplier input_scale * weight_scale / output_scale.
float requantization_multiplier(double input_scale, double weight_scale, double output_scale) {
  float product = static_cast<float>(input_scale) * static_cast<float>(weight_scale);
  return product / static_cast<float>(output_scale);
}

// y = saturate(round(int32 accumulator * multiplier) + y_zero_point).
int64_t requantize(int32_t accumulator, float multiplier, int64_t zero_point,
                   QuantizedRange range) {
  return saturate_rounded(static_cast<double>(accumulator) * static_cast<double>(multiplier),
                        zero_point, range);
}

void qlinear_matmul(KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(3);
  const Tensor& y_zero_point = context.input(7);
  MatMulShape s = matmul_shape(context, a, "a", b, "b");
  check_same_shape(context, context.input(2), "a_zero_point", context.input(1), "a_scale");
  check_same_shape(context, context.input(5), "b_zero_point", context.input(4), "b_scale");
  check_same_shape(context, y_zero_point, "y_zero_point", context.input(6), "y_scale");
  std::vector<double> a_scale =
      matrix_parameter_values(context, &context.input(1), "a_scale", s.a_shape, "a", true);
  std::vector<double> a_zero =
      matrix_parameter_values(context, &context.input(2), "a_zero_point", s.a_shape, "a", true);
  std::vector<double> b_scale =
      matrix_parameter_values(context, &context.input(4), "b_scale", s.b_shape, "b", false);
  std::vector<double> b_zero =
      matrix_parameter_values(context, &context.input(5), "b_zero_point", s.b_shape, "b", false);
  double y_scale =
      single_value(context, context.input(6), "y_scale", "the output is quantized per tensor");
  int64_t y_zero = y_zero_point.get_int64(0);
  QuantizedRange range = range_of(y_zero_point.dtype(), context);
  Tensor y(y_zero_point.dtype(), s.out_shape);
  integer_matmul(
      s, a, b, a_zero, b_zero, [&](int64_t yi, int64_t a_row, int64_t b_column, int64_t sum) {
        float multiplier = requantization_multiplier(
            a_scale[static_cast<size_t>(a_row)], b_scale[static_cast<size_t>(b_column)], y_scale);
        y.set_double(
            yi, static_cast<double>(requantize(wrap_to_int32(sum), multiplier, y_zero, range)));
      });
  context.outputs[0] = y;
}

// ---- ConvInteger, QLinearConv ------------------------------------------------------------------

// x - x_zero_point and w - w_zero_point[m] as int64, the operands both ops convolve; taps in the
// padding contribute 0, so padding behaves as x_zero_point.
struct ShiftedConvOperands {
  std::vector<int64_t> x;
  std::vector<int64_t> w;
};

ShiftedConvOperands shift_conv_operands(const KernelContext& context, const ConvGeometry& g,
                                        const Tensor& x, const Tensor* x_zero_point,
                                        const Tensor& w, const Tensor* w_zero_point) {
  ShiftedConvOperands shifted{tensor_to_int64s(x), tensor_to_int64s(w)};
  if (x_zero_point) {
    auto zero = static_cast<int64_t>(
        single_value(context, *x_zero_point, "x_zero_point", "x is quantized per tensor"));
    for (int64_t& v : shifted.x) v -= zero;
  }
  std::vector<double> w_zero =
      channel_values(context, w_zero_point, g.out_channels, "w_zero_point");
  int64_t per_channel = g.out_channels > 0 ? w.numel() / g.out_channels : 0;
  for (size_t i = 0; i < shifted.w.size(); ++i) {
    shifted.w[i] -= static_cast<int64_t>(w_zero[i / static_cast<size_t>(per_channel)]);
  }
  return shifted;
}

// y = Conv(x - x_zero_point, w - w_zero_point), int32.
void conv_integer(KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& w = context.input(1);
  ConvGeometry g = conv_geometry(context, x.shape(), w.shape(), "x", "w");
  ShiftedConvOperands in =
      shift_conv_operands(context, g, x, context.has_input(2) ? &context.input(2) : nullptr, w,
                          context.has_input(3) ? &context.input(3) : nullptr);
  Tensor y(DType::kInt32, g.y_shape);
  int32_t* out = y.data<int32_t>();
  convolve<int64_t>(
      g, [](int64_t) { return int64_t{0}; },
      [&](int64_t xi, int64_t wi) {
        return in.x[static_cast<size_t>(xi)] * in.w[static_cast<size_t>(wi)];
      },
      [&](int64_t yi, int64_t, int64_t sum) { out[yi] = wrap_to_int32(sum); });
  context.outputs[0] = y;
}

// y = saturate(round((Conv(x - x_zero_point, w - w_zero_point) + B[m]) * multiplier[m])
//              + y_zero_point), multiplier[m] = x_scale * w_scale[m] / y_scale in float32.
void qlinear_conv(KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& w = context.input(3);
  const Tensor& y_zero_point = context.input(7);
  ConvGeometry g = conv_geometry(context, x.shape(), w.shape(), "x", "w");
  check_same_shape(context, context.input(2), "x_zero_point", context.input(1), "x_scale");
  check_same_shape(context, context.input(5), "w_zero_point", context.input(4), "w_scale");
  check_same_shape(context, y_zero_point, "y_zero_point", context.input(6), "y_scale");
  ShiftedConvOperands in =
      shift_conv_operands(context, g, x, &context.input(2), w, &context.input(5));
  double x_scale = single_value(context, context.input(1), "x_scale", "x is quantized per tensor");
  double y_scale = single_value(context, context.input(6), "y_scale", "y is quantized per tensor");
  std::vector<double> w_scale =
      channel_values(context, &context.input(4), g.out_channels, "w_scale");
  std::vector<int64_t> bias(static_cast<size_t>(g.out_channels), 0);
  if (context.has_input(8)) {
    const Tensor& b = context.input(8);
    if (b.rank() != 1 || b.numel() != g.out_channels) {
      context.fail_input(cat("input B has shape ", shape_text(b.shape()), " but w has ",
                             g.out_channels, " output channels"));
    }
    bias = tensor_to_int64s(b);
  }
  std::vector<float> multiplier;
  for (double ws : w_scale) multiplier.push_back(requantization_multiplier(x_scale, ws, y_scale));
  int64_t y_zero = y_zero_point.get_int64(0);
  QuantizedRange range = range_of(y_zero_point.dtype(), context);
  Tensor y(y_zero_point.dtype(), g.y_shape);
  convolve<int64_t>(
      g, [&](int64_t m) { return bias[static_cast<size_t>(m)]; },
      [&](int64_t xi, int64_t wi) {
        return in.x[static_cast<size_t>(xi)] * in.w[static_cast<size_t>(wi)];
      },
      [&](int64_t yi, int64_t m, int64_t sum) {
        y.set_double(
            yi, static_cast<double>(requantize(wrap_to_int32(sum),
                                               multiplier[static_cast<size_t>(m)], y_zero, range)));
      });
  context.outputs[0] = y;
}

}  // namespace

void register_quant_kernels(std::map<std::string, Kernel>& registry) {
  registry["QuantizeLinear"] = quantize_linear;
  registry["DequantizeLinear"] = dequantize_linear;
  registry["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  registry["MatMulInteger"] = matmul_integer;
  registry["QLinearMatMul"] = qlinear_matmul;
  registry["ConvInteger"] = conv_integer;
  registry["QLinearConv"] = qlinear_conv;
}

}  // namespace rnnc
