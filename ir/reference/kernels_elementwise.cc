// Reference kernels of the elementwise and dense math ops (docs/ops/elementwise.md states the
// semantics of each, including the corner cases the ONNX spec leaves open).
//
// Rules shared by every kernel here:
//   - float32 and float64 compute in their own type; float16 and bfloat16 are widened to float32,
//     computed, and rounded back once;
//   - MatMul, Gemm and the Softmax sums accumulate in double (the spec leaves the order open);
//   - integer arithmetic wraps around in two's complement, as the hardware does (C++ leaves signed
//     overflow undefined, so it is computed on uint64_t bits);
//   - a data-dependent error (integer division by zero) is kInvalidInput naming the node.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ir/quantization.h"
#include "ir/reference/kernel.h"
#include "ir/shape_inference/einsum.h"

namespace rnnc {

namespace {

// ---- broadcasting and dispatch -----------------------------------------------------------------

// Calls visit(i, offsets) for every element i of out_shape (row-major), with offsets[k] the
// element of input k (of shape in_shapes[k], broadcast to out_shape) that it reads.
template <typename Visit>
void for_each_broadcast(const std::vector<int64_t>& out_shape,
                        const std::vector<std::vector<int64_t>>& in_shapes, Visit visit) {
  size_t rank = out_shape.size();
  std::vector<std::vector<int64_t>> strides;
  for (const auto& shape : in_shapes) strides.push_back(broadcast_strides(shape, out_shape));
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> offsets(in_shapes.size(), 0);
  int64_t total = shape_numel(out_shape);
  for (int64_t i = 0; i < total; ++i) {
    visit(i, offsets);
    // Odometer step: bump the innermost axis, carrying into outer ones.
    for (size_t k = rank; k-- > 0;) {
      ++index[k];
      for (size_t j = 0; j < offsets.size(); ++j) offsets[j] += strides[j][k];
      if (index[k] < out_shape[k]) break;
      for (size_t j = 0; j < offsets.size(); ++j) offsets[j] -= strides[j][k] * out_shape[k];
      index[k] = 0;
    }
  }
}

// out[i] = f(x[i]).
template <typename R, typename T, typename F>
Tensor map_unary(const Tensor& x, F f) {
  Tensor out(dtype_of<R>(), x.shape());
  const T* in = x.data<T>();
  R* result = out.data<R>();
  for (int64_t i = 0; i < x.numel(); ++i) result[i] = f(in[i]);
  return out;
}

// out = f(a, b) over the numpy broadcast of a and b.
template <typename R, typename A, typename B, typename F>
Tensor map_binary(const Tensor& a, const Tensor& b, const KernelContext& context, F f) {
  std::vector<int64_t> shape = broadcast_shapes(a.shape(), b.shape(), context);
  Tensor out(dtype_of<R>(), shape);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  R* result = out.data<R>();
  for_each_broadcast(shape, {a.shape(), b.shape()}, [&](int64_t i, const auto& offsets) {
    result[i] = f(pa[offsets[0]], pb[offsets[1]]);
  });
  return out;
}


[[noreturn]] void fail_dtype(const KernelContext& context, DType dtype) {
  raise_unsupported(cat(context.node.describe(), ": element type ", dtype_onnx_name(dtype),
                        " is not supported by the reference kernel"));
}

// Floats and integers, not bool: the types arithmetic is defined on.
template <typename Fn>
void dispatch_arithmetic(DType dtype, const KernelContext& context, Fn&& fn) {
  if (dtype == DType::kBool) fail_dtype(context, dtype);
  dispatch_numeric(dtype, context, [&](auto tag) {
    if constexpr (!std::is_same_v<decltype(tag), bool>) fn(tag);
  });
}

template <typename Fn>
void dispatch_integer(DType dtype, const KernelContext& context, Fn&& fn) {
  if (!is_integer(dtype)) fail_dtype(context, dtype);
  dispatch_arithmetic(dtype, context, [&](auto tag) {
    if constexpr (std::is_integral_v<decltype(tag)>) fn(tag);
  });
}

// The inputs with 16-bit floats widened to float32; a float32 result is rounded back to input 0's
// 16-bit type by set_result.
struct Operands {
  std::vector<Tensor> values;  // undefined Tensor for an omitted optional input
  DType result_dtype;

  bool has(size_t i) const { return i < values.size() && values[i].defined(); }
  const Tensor& operator[](size_t i) const { return values[i]; }
};

Operands widen_operands(const KernelContext& context) {
  Operands operands{{}, context.input(0).dtype()};
  for (size_t i = 0; i < context.inputs.size(); ++i) {
    operands.values.push_back(context.has_input(i) ? widen_half(*context.inputs[i]) : Tensor());
  }
  return operands;
}

void set_result(KernelContext& context, const Operands& operands, Tensor result) {
  if (result.dtype() == DType::kFloat32 && operands.result_dtype != DType::kFloat32 &&
      is_floating(operands.result_dtype)) {
    result = narrow_to(result, operands.result_dtype);
  }
  context.outputs[0] = std::move(result);
}

// ---- integer helpers ---------------------------------------------------------------------------

// Two's-complement wraparound: the value's bits as uint64_t (sign-extended) and back.
template <typename T>
uint64_t to_bits(T value) {
  return static_cast<uint64_t>(value);
}
template <typename T>
T from_bits(uint64_t bits) {
  return static_cast<T>(bits);
}

template <typename T>
T add_values(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return from_bits<T>(to_bits(a) + to_bits(b));
  } else {
    return a + b;
  }
}
template <typename T>
T sub_values(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return from_bits<T>(to_bits(a) - to_bits(b));
  } else {
    return a - b;
  }
}
template <typename T>
T mul_values(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return from_bits<T>(to_bits(a) * to_bits(b));
  } else {
    return a * b;
  }
}
template <typename T>
T neg_value(T x) {
  if constexpr (std::is_integral_v<T>) {
    return from_bits<T>(uint64_t{0} - to_bits(x));
  } else {
    return -x;
  }
}

// A double converted to an integer type by truncation toward zero; NaN gives 0 and values out
// of range pin to the type's ends (the plain cast is undefined there).
template <typename T>
T truncate_to(double value) {
  if (std::isnan(value)) return 0;
  if (value <= static_cast<double>(std::numeric_limits<T>::lowest())) {
    return std::numeric_limits<T>::lowest();
  }
  if (value >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  return static_cast<T>(value);
}

// NaN-propagating max/min, as numpy.maximum/minimum.
template <typename T>
T max_value(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename T>
T min_value(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return b < a ? b : a;
}

// ---- unary float ops ---------------------------------------------------------------------------

// One row per op: its formula, written once for float and double (a generic lambda converts to
// both function pointers, so each row computes in the input's own type).
struct FloatUnary {
  const char* op_type;
  float (*f32)(float);
  double (*f64)(double);
};

template <typename Formula>
FloatUnary float_unary(const char* op_type, Formula formula) {
  return {op_type, formula, formula};
}

const std::vector<FloatUnary>& float_unary_ops() {
  static const std::vector<FloatUnary> ops = {
      float_unary("Sqrt", [](auto x) { return std::sqrt(x); }),
      float_unary("Exp", [](auto x) { return std::exp(x); }),
      float_unary("Log", [](auto x) { return std::log(x); }),  // log(0) = -inf, log(-1) = NaN
      float_unary("Reciprocal", [](auto x) { return decltype(x){1} / x; }),
      float_unary("Floor", [](auto x) { return std::floor(x); }),
      float_unary("Ceil", [](auto x) { return std::ceil(x); }),
      // Halves to even: nearbyint in the default rounding mode.
      float_unary("Round", [](auto x) { return std::nearbyint(x); }),
      float_unary("Erf", [](auto x) { return std::erf(x); }),
      float_unary("Sin", [](auto x) { return std::sin(x); }),
      float_unary("Cos", [](auto x) { return std::cos(x); }),
      float_unary("Tan", [](auto x) { return std::tan(x); }),
      float_unary("Asin", [](auto x) { return std::asin(x); }),  // NaN outside [-1, 1]
      float_unary("Acos", [](auto x) { return std::acos(x); }),
      float_unary("Atan", [](auto x) { return std::atan(x); }),
      float_unary("Sinh", [](auto x) { return std::sinh(x); }),
      float_unary("Cosh", [](auto x) { return std::cosh(x); }),
      float_unary("Asinh", [](auto x) { return std::asinh(x); }),
      float_unary("Acosh", [](auto x) { return std::acosh(x); }),  // NaN below 1
      float_unary("Atanh", [](auto x) { return std::atanh(x); }),  // ±inf at ±1
      float_unary("Tanh", [](auto x) { return std::tanh(x); }),
      // 1 / (1 + e^-x)
      float_unary("Sigmoid",
                  [](auto x) { return decltype(x){1} / (decltype(x){1} + std::exp(-x)); }),
      // log(1 + e^x), written so large |x| neither overflows nor loses the small term.
      float_unary(
          "Softplus",
          [](auto x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }),
      // x / (1 + |x|)
      float_unary("Softsign", [](auto x) { return x / (decltype(x){1} + std::abs(x)); }),
      // x * max(0, min(1, x/6 + 1/2)), NaN passing through
      float_unary("HardSwish",
                  [](auto x) {
                    using T = decltype(x);
                    T gate = x * (T{1} / T{6}) + T(0.5);
                    return x * (gate < 0 ? T{0} : gate > 1 ? T{1} : gate);
                  }),
  };
  return ops;
}

void float_unary_kernel(KernelContext& context) {
  const FloatUnary* row = nullptr;
  for (const FloatUnary& op : float_unary_ops()) {
    if (context.node.op_type() == op.op_type) row = &op;
  }
  RNNC_CHECK(row, "no formula for ", context.node.op_type());
  Operands in = widen_operands(context);
  dispatch_float(in[0].dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    T (*formula)(T);
    if constexpr (std::is_same_v<T, float>) {
      formula = row->f32;
    } else {
      formula = row->f64;
    }
    set_result(context, in, map_unary<T, T>(in[0], formula));
  });
}

// Activations with attributes: f(x, alpha, beta), the attribute names and ONNX defaults beside.
struct Activation {
  const char* op_type;
  const char* alpha_name;
  float alpha_default;
  const char* beta_name;  // nullptr: no second attribute
  float beta_default;
  float (*f32)(float, float, float);
  double (*f64)(double, double, double);
};

template <typename Formula>
Activation activation(const char* op_type, const char* alpha_name, float alpha_default,
                      const char* beta_name, float beta_default, Formula formula) {
  return {op_type, alpha_name, alpha_default, beta_name, beta_default, formula, formula};
}

const std::vector<Activation>& activations() {
  static const std::vector<Activation> ops = {
      // x < 0 ? alpha * x : x
      activation("LeakyRelu", "alpha", 0.01f, nullptr, 0,
                 [](auto x, auto alpha, auto) { return x < 0 ? alpha * x : x; }),
      // x < 0 ? alpha * (e^x - 1) : x
      activation("Elu", "alpha", 1.0f, nullptr, 0,
                 [](auto x, auto alpha, auto) { return x < 0 ? alpha * std::expm1(x) : x; }),
      // max(0, x) + min(0, alpha * (e^(x / alpha) - 1))
      activation(
          "Celu", "alpha", 1.0f, nullptr, 0,
          [](auto x, auto alpha, auto) { return x < 0 ? alpha * std::expm1(x / alpha) : x; }),
      // gamma * (x > 0 ? x : alpha * (e^x - 1))
      activation("Selu", "alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f,
                 [](auto x, auto alpha, auto gamma) {
                   return x > 0 ? gamma * x : gamma * (alpha * std::expm1(x));
                 }),
      // max(0, min(1, alpha * x + beta)), NaN passing through
      activation("HardSigmoid", "alpha", 0.2f, "beta", 0.5f,
                 [](auto x, auto alpha, auto beta) {
                   using T = decltype(x);
                   T y = alpha * x + beta;
                   return y < 0 ? T{0} : y > 1 ? T{1} : y;
                 }),
      // x > alpha ? x : 0 (the spec's "0 otherwise" includes NaN)
      activation("ThresholdedRelu", "alpha", 1.0f, nullptr, 0,
                 [](auto x, auto alpha, auto) { return x > alpha ? x : decltype(x){0}; }),
  };
  return ops;
}

void activation_kernel(KernelContext& context) {
  const Activation* row = nullptr;
  for (const Activation& op : activations()) {
    if (context.node.op_type() == op.op_type) row = &op;
  }
  RNNC_CHECK(row, "no formula for ", context.node.op_type());
  float alpha = context.node.attr_float(row->alpha_name, row->alpha_default);
  float beta = row->beta_name ? context.node.attr_float(row->beta_name, row->beta_default) : 0;
  Operands in = widen_operands(context);
  dispatch_float(in[0].dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    T (*formula)(T, T, T);
    if constexpr (std::is_same_v<T, float>) {
      formula = row->f32;
    } else {
      formula = row->f64;
    }
    T a = static_cast<T>(alpha);
    T b = static_cast<T>(beta);
    set_result(context, in, map_unary<T, T>(in[0], [&](T x) { return formula(x, a, b); }));
  });
}

// ---- unary ops on integers too -----------------------------------------------------------------

template <typename F>
void unary_arithmetic(KernelContext& context, F f) {
  Operands in = widen_operands(context);
  dispatch_arithmetic(in[0].dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    set_result(context, in, map_unary<T, T>(in[0], [&](T x) -> T { return f(x); }));
  });
}

// |x|; |INT_MIN| wraps to INT_MIN.
void abs_kernel(KernelContext& context) {
  unary_arithmetic(context, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else if constexpr (std::is_integral_v<T>) {
      return x < 0 ? neg_value(x) : x;
    } else {
      return std::abs(x);
    }
  });
}

void neg_kernel(KernelContext& context) {
  unary_arithmetic(context, [](auto x) { return neg_value(x); });
}

// max(0, x); NaN stays NaN (numpy.maximum's rule).
void relu_kernel(KernelContext& context) {
  unary_arithmetic(context, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else {
      return x < 0 ? T{0} : x;
    }
  });
}

// -1, 0 or 1; NaN stays NaN.
void sign_kernel(KernelContext& context) {
  unary_arithmetic(context, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T>) {
      return x > 0 ? T{1} : T{0};
    } else {
      return x > 0 ? T{1} : x < 0 ? T(-1) : x == 0 ? T{0} : x;
    }
  });
}

void is_nan_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  dispatch_float(in[0].dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    context.outputs[0] = map_unary<bool, T>(in[0], [](T x) { return std::isnan(x); });
  });
}

void is_inf_kernel(KernelContext& context) {
  bool negative = context.node.attr_int("detect_negative", 1) != 0;
  bool positive = context.node.attr_int("detect_positive", 1) != 0;
  Operands in = widen_operands(context);
  dispatch_float(in[0].dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    context.outputs[0] = map_unary<bool, T>(
        in[0], [&](T x) { return std::isinf(x) && (x > 0 ? positive : negative); });
  });
}

void not_kernel(KernelContext& context) {
  const Tensor& x = context.input(0);
  if (x.dtype() != DType::kBool) fail_dtype(context, x.dtype());
  context.outputs[0] = map_unary<bool, bool>(x, [](bool v) { return !v; });
}

// ---- binary ops --------------------------------------------------------------------------------

// Both inputs of one arithmetic type; the result has it too.
template <typename F>
void binary_arithmetic(KernelContext& context, F f) {
  Operands in = widen_operands(context);
  if (in[0].dtype() != in[1].dtype()) {
    context.fail(cat("inputs have different element types ", dtype_onnx_name(in[0].dtype()),
                     " and ", dtype_onnx_name(in[1].dtype())));
  }
  dispatch_arithmetic(in[0].dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    set_result(context, in,
               map_binary<T, T, T>(in[0], in[1], context, [&](T a, T b) -> T { return f(a, b); }));
  });
}

void add_kernel(KernelContext& context) {
  binary_arithmetic(context, [](auto a, auto b) { return add_values(a, b); });
}

void sub_kernel(KernelContext& context) {
  binary_arithmetic(context, [](auto a, auto b) { return sub_values(a, b); });
}

void mul_kernel(KernelContext& context) {
  binary_arithmetic(context, [](auto a, auto b) { return mul_values(a, b); });
}

// Integer division truncates toward zero (C, numpy.trunc(a / b)); a zero divisor is an input error.
void div_kernel(KernelContext& context) {
  binary_arithmetic(context, [&](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) context.fail_input("integer division by zero (input 1 'B' has a 0 element)");
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return neg_value(a);  // INT_MIN / -1 wraps instead of trapping
      }
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  });
}

// fmod = 0: the remainder takes the divisor's sign (Python's %); fmod = 1: the dividend's (C fmod).
void mod_kernel(KernelContext& context) {
  bool fmod = context.node.attr_int("fmod", 0) != 0;
  if (!fmod && is_floating(context.input(0).dtype())) {
    context.fail("attribute 'fmod' = 0 (integer mod) on a floating-point input: set fmod = 1");
  }
  binary_arithmetic(context, [&](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_floating_point_v<T>) {
      return std::fmod(a, b);
    } else {
      if (b == 0) context.fail_input("integer modulo by zero (input 1 'B' has a 0 element)");
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return T{0};  // INT_MIN % -1 would trap
        T r = static_cast<T>(a % b);
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
        return r;
      } else {
        return static_cast<T>(a % b);
      }
    }
  });
}

// Shifts of the bit width or more give 0 (C++ leaves them undefined).
void bit_shift_kernel(KernelContext& context) {
  bool left = context.node.attr_string("direction", "") == "LEFT";
  const Tensor& x = context.input(0);
  const Tensor& y = context.input(1);
  if (is_signed_integer(x.dtype())) fail_dtype(context, x.dtype());
  dispatch_integer(x.dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    context.outputs[0] = map_binary<T, T, T>(x, y, context, [&](T value, T shift) -> T {
      if (shift >= static_cast<T>(sizeof(T) * 8)) return 0;
      return static_cast<T>(left ? value << shift : value >> shift);
    });
  });
}

// base^exponent for integers by repeated squaring, wrapping; a negative exponent gives the
// truncated 1 / base^-exponent (0 unless |base| = 1).
template <typename T, typename E>
T integer_pow(T base, E exponent, const KernelContext& context) {
  if constexpr (std::is_signed_v<E>) {
    if (exponent < 0) {
      if (base == 0) context.fail_input("0 raised to a negative integer power");
      if (base == 1) return 1;
      if constexpr (std::is_signed_v<T>) {
        if (base == -1) return (exponent % 2 == 0) ? T{1} : T(-1);
      }
      return 0;
    }
  }
  uint64_t result = 1;
  uint64_t square = to_bits(base);
  for (auto e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if (e & 1) result *= square;
    square *= square;
  }
  return from_bits<T>(result);
}

// Pow(X, Y): the result has X's type. Float X: pow in X's type. Integer X with float Y: pow in
// double, truncated toward zero. Integer X and Y: exact (wrapping) integer power.
template <typename T, typename E>
T pow_value(T x, E y, const KernelContext& context) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::pow(x, static_cast<T>(y));
  } else if constexpr (std::is_floating_point_v<E>) {
    return truncate_to<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
  } else {
    return integer_pow(x, y, context);
  }
}

void pow_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  DType base_dtype = in[0].dtype();
  if (!(is_floating(base_dtype) || base_dtype == DType::kInt32 || base_dtype == DType::kInt64)) {
    fail_dtype(context, base_dtype);
  }
  dispatch_arithmetic(base_dtype, context, [&](auto base_tag) {
    using T = decltype(base_tag);
    dispatch_arithmetic(in[1].dtype(), context, [&](auto exponent_tag) {
      using E = decltype(exponent_tag);
      set_result(context, in, map_binary<T, T, E>(in[0], in[1], context, [&](T x, E y) {
                   return pow_value(x, y, context);
                 }));
    });
  });
}

// PRelu(X, slope): x < 0 ? slope * x : x, slope broadcast one way to X's shape.
void prelu_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  const Tensor& x = in[0];
  const Tensor& slope = in[1];
  if (broadcast_shapes(x.shape(), slope.shape(), context) != x.shape()) {
    context.fail_input(cat("slope ", shape_text(slope.shape()), " cannot be broadcast to X ",
                           shape_text(x.shape())));
  }
  binary_arithmetic(context, [](auto value, auto s) {
    using T = decltype(value);
    if constexpr (std::is_unsigned_v<T>) {
      return value;
    } else {
      return value < 0 ? mul_values(s, value) : value;
    }
  });
}

// Comparisons: a bool per element of the broadcast; both inputs of one type.
template <typename F>
void comparison(KernelContext& context, F compare) {
  Operands in = widen_operands(context);
  if (in[0].dtype() != in[1].dtype()) {
    context.fail(cat("inputs have different element types ", dtype_onnx_name(in[0].dtype()),
                     " and ", dtype_onnx_name(in[1].dtype())));
  }
  dispatch_numeric(in[0].dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    context.outputs[0] = map_binary<bool, T, T>(in[0], in[1], context,
                                                [&](T a, T b) -> bool { return compare(a, b); });
  });
}

void equal_kernel(KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  if (a.dtype() == DType::kString && b.dtype() == DType::kString) {
    std::vector<int64_t> shape = broadcast_shapes(a.shape(), b.shape(), context);
    Tensor out(DType::kBool, shape);
    bool* result = out.data<bool>();
    for_each_broadcast(shape, {a.shape(), b.shape()}, [&](int64_t i, const auto& offsets) {
      result[i] = a.strings()[static_cast<size_t>(offsets[0])] ==
                  b.strings()[static_cast<size_t>(offsets[1])];
    });
    context.outputs[0] = std::move(out);
    return;
  }
  comparison(context, [](auto x, auto y) { return x == y; });
}

void less_kernel(KernelContext& context) {
  comparison(context, [](auto x, auto y) { return x < y; });
}
void greater_kernel(KernelContext& context) {
  comparison(context, [](auto x, auto y) { return x > y; });
}
void less_or_equal_kernel(KernelContext& context) {
  comparison(context, [](auto x, auto y) { return x <= y; });
}
void greater_or_equal_kernel(KernelContext& context) {
  comparison(context, [](auto x, auto y) { return x >= y; });
}

template <typename F>
void logical(KernelContext& context, F f) {
  for (size_t i = 0; i < 2; ++i) {
    if (context.input(i).dtype() != DType::kBool) fail_dtype(context, context.input(i).dtype());
  }
  context.outputs[0] = map_binary<bool, bool, bool>(context.input(0), context.input(1), context, f);
}

void and_kernel(KernelContext& context) {
  logical(context, [](bool a, bool b) { return a && b; });
}
void or_kernel(KernelContext& context) {
  logical(context, [](bool a, bool b) { return a || b; });
}
void xor_kernel(KernelContext& context) {
  logical(context, [](bool a, bool b) { return a != b; });
}

// ---- variadic ops ------------------------------------------------------------------------------

// Folds the inputs left to right with numpy broadcasting: ((x0 op x1) op x2) ...
template <typename F>
Tensor fold_inputs(KernelContext& context, const Operands& in, F f) {
  Tensor result;
  dispatch_arithmetic(in[0].dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    result = in[0];
    for (size_t i = 1; i < in.values.size(); ++i) {
      if (in[i].dtype() != in[0].dtype()) {
        context.fail(cat("input ", i, " is ", dtype_onnx_name(in[i].dtype()), " but input 0 is ",
                         dtype_onnx_name(in[0].dtype())));
      }
      result = map_binary<T, T, T>(result, in[i], context, [&](T a, T b) -> T { return f(a, b); });
    }
  });
  return result;
}

void max_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  set_result(context, in, fold_inputs(context, in, [](auto a, auto b) { return max_value(a, b); }));
}

void min_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  set_result(context, in, fold_inputs(context, in, [](auto a, auto b) { return min_value(a, b); }));
}

void sum_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  set_result(context, in,
             fold_inputs(context, in, [](auto a, auto b) { return add_values(a, b); }));
}

// Sum / number of inputs, in the input type.
void mean_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  Tensor sum = fold_inputs(context, in, [](auto a, auto b) { return add_values(a, b); });
  dispatch_float(sum.dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    T count = static_cast<T>(in.values.size());
    set_result(context, in, map_unary<T, T>(sum, [&](T s) { return s / count; }));
  });
}

// ---- selection ---------------------------------------------------------------------------------

// Where(condition, X, Y): copies elements, so every type (strings too) is supported.
void where_kernel(KernelContext& context) {
  const Tensor& condition = context.input(0);
  const Tensor& x = context.input(1);
  const Tensor& y = context.input(2);
  if (condition.dtype() != DType::kBool) fail_dtype(context, condition.dtype());
  if (x.dtype() != y.dtype()) {
    context.fail(
        cat("X is ", dtype_onnx_name(x.dtype()), " but Y is ", dtype_onnx_name(y.dtype())));
  }
  std::vector<int64_t> shape =
      broadcast_shapes(broadcast_shapes(condition.shape(), x.shape(), context), y.shape(), context);
  Tensor out(x.dtype(), shape);
  const bool* take_x = condition.data<bool>();
  bool strings = x.dtype() == DType::kString;
  size_t element = dtype_size(x.dtype());
  const auto* x_bytes = static_cast<const uint8_t*>(x.raw_data());
  const auto* y_bytes = static_cast<const uint8_t*>(y.raw_data());
  auto* out_bytes = static_cast<uint8_t*>(out.raw_data());
  for_each_broadcast(
      shape, {condition.shape(), x.shape(), y.shape()}, [&](int64_t i, const auto& offsets) {
        bool from_x = take_x[offsets[0]];
        int64_t source = from_x ? offsets[1] : offsets[2];
        if (strings) {
          const Tensor& from = from_x ? x : y;
          out.strings()[static_cast<size_t>(i)] = from.strings()[static_cast<size_t>(source)];
        } else {
          std::memcpy(out_bytes + static_cast<size_t>(i) * element,
                      (from_x ? x_bytes : y_bytes) + static_cast<size_t>(source) * element,
                      element);
        }
      });
  context.outputs[0] = std::move(out);
}

// Clip: min(max(x, lo), hi) -- so lo > hi gives hi everywhere (numpy.clip). A NaN x stays NaN; a
// NaN bound clips nothing. Bounds: attributes before opset 11, optional scalar inputs from 11;
// an absent bound is the input type's own limit (+-65504 for float16).
void clip_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  dispatch_arithmetic(in[0].dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    T lo = std::numeric_limits<T>::lowest();
    T hi = std::numeric_limits<T>::max();
    // 16-bit floats compute widened to float32, but their default bounds are their own range.
    if constexpr (std::is_floating_point_v<T>) {
      if (context.input(0).dtype() == DType::kFloat16) {
        lo = static_cast<T>(-65504.0);
        hi = static_cast<T>(65504.0);
      } else if (context.input(0).dtype() == DType::kBFloat16) {
        lo = static_cast<T>(-3.38953139e38);
        hi = static_cast<T>(3.38953139e38);
      }
    }
    if (context.node.opset() < 11) {
      if constexpr (std::is_floating_point_v<T>) {
        if (context.node.has_attr("min")) lo = static_cast<T>(context.node.attr_float("min", 0));
        if (context.node.has_attr("max")) hi = static_cast<T>(context.node.attr_float("max", 0));
      }
    } else {
      for (size_t i = 1; i <= 2; ++i) {
        if (!in.has(i)) continue;
        if (in[i].numel() != 1) {
          context.fail_input(cat("input ", i, " (", i == 1 ? "min" : "max",
                                 ") must be a scalar, got shape ", shape_text(in[i].shape())));
        }
        if (in[i].dtype() != in[0].dtype()) {
          context.fail(cat("input ", i, " is ", dtype_onnx_name(in[i].dtype()), " but input 0 is ",
                           dtype_onnx_name(in[0].dtype())));
        }
        (i == 1 ? lo : hi) = in[i].data<T>()[0];
      }
    }
    set_result(context, in, map_unary<T, T>(in[0], [&](T x) {
                 if (x < lo) x = lo;
                 if (x > hi) x = hi;
                 return x;
               }));
  });
}

// ---- normalizations ----------------------------------------------------------------------------

// The rows Softmax, LogSoftmax and Hardmax normalize: `length` elements `inner` apart, for each of
// outer * inner rows. Before opset 13 the input is coerced to 2-D [a0*..*a(k-1), ak*..*a(n-1)] at
// axis k and each row normalized (inner = 1); from opset 13 it is normalized along the one axis k.
struct Rows {
  int64_t outer = 1;
  int64_t length = 1;
  int64_t inner = 1;
  int64_t at(int64_t o, int64_t i, int64_t j) const { return o * length * inner + i + j * inner; }
};

Rows softmax_rows(const KernelContext& context, const Tensor& x) {
  int64_t rank = x.rank();
  bool along_one_axis = context.node.opset() >= 13;
  int64_t axis = context.node.attr_int("axis", along_one_axis ? -1 : 1);
  if (axis < -rank || axis >= rank) {
    context.fail(cat("attribute 'axis' = ", axis, " is out of range for rank ", rank));
  }
  if (axis < 0) axis += rank;
  Rows rows;
  for (int64_t k = 0; k < rank; ++k) {
    if (k < axis) {
      rows.outer *= x.dim(k);
    } else if (k == axis || !along_one_axis) {
      rows.length *= x.dim(k);
    } else {
      rows.inner *= x.dim(k);
    }
  }
  return rows;
}

// Calls fill(in, out, length, at) for every row, at(j) giving the flat position of its element j,
// on the input widened to float32 (16-bit floats) and the result rounded back.
template <typename Fill>
void map_rows(KernelContext& context, Fill&& fill) {
  Operands in = widen_operands(context);
  const Tensor& x = in[0];
  Rows rows = softmax_rows(context, x);
  dispatch_float(x.dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    Tensor out(x.dtype(), x.shape());
    for (int64_t o = 0; o < rows.outer; ++o) {
      for (int64_t i = 0; i < rows.inner; ++i) {
        fill(x.data<T>(), out.data<T>(), rows.length, [&](int64_t j) { return rows.at(o, i, j); });
      }
    }
    set_result(context, in, out);
  });
}

// exp(x - max) is computed in the input type and summed in double.
void softmax_family(KernelContext& context, bool log) {
  map_rows(context, [&](const auto* in, auto* out, int64_t length, auto at) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < length; ++j) max = std::max(max, in[at(j)]);
    double sum = 0;
    for (int64_t j = 0; j < length; ++j) sum += std::exp(in[at(j)] - max);
    for (int64_t j = 0; j < length; ++j) {
      T shifted = in[at(j)] - max;
      out[at(j)] =
          log ? static_cast<T>(shifted - std::log(sum)) : static_cast<T>(std::exp(shifted) / sum);
    }
  });
}

void softmax_kernel(KernelContext& context) { softmax_family(context, false); }
void log_softmax_kernel(KernelContext& context) { softmax_family(context, true); }

// 1 at the first maximum of each row, 0 elsewhere; NaN counts as the maximum (numpy's argmax).
void hardmax_kernel(KernelContext& context) {
  map_rows(context, [](const auto* in, auto* out, int64_t length, auto at) {
    if (length == 0) return;
    int64_t best = 0;
    for (int64_t j = 1; j < length; ++j) {
      auto candidate = in[at(j)], incumbent = in[at(best)];
      if (std::isnan(incumbent)) break;
      if (std::isnan(candidate) || candidate > incumbent) best = j;
    }
    out[at(best)] = 1;
  });
}

// Einsum: output[o] = sum over the labels not in the output of the product of the operands at
// the coordinates the labels give; every label combination is visited once (odometer order), so
// sums accumulate like MatMul's (double for floats, wrapping uint64 for integers).
void einsum_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  std::vector<int64_t> ranks;
  for (const Tensor& operand : in.values) ranks.push_back(operand.rank());
  EinsumEquation equation = parse_einsum(context.node, ranks);
  size_t labels = static_cast<size_t>(equation.labels);
  std::vector<int64_t> sizes(labels, 1);
  std::vector<bool> seen(labels, false);
  for (size_t i = 0; i < in.values.size(); ++i) {
    for (size_t a = 0; a < equation.inputs[i].size(); ++a) {
      size_t label = static_cast<size_t>(equation.inputs[i][a]);
      int64_t d = in.values[i].dim(static_cast<int64_t>(a));
      bool ellipsis = label >= 52;
      if (!seen[label] || (ellipsis && sizes[label] == 1)) {
        sizes[label] = d;
      } else if (d != sizes[label] && !(ellipsis && d == 1)) {
        context.fail_input(cat("label '", einsum_label_name(static_cast<int>(label)), "' has size ",
                               sizes[label], " and ", d, " (input ", i, " axis ", a, ")"));
      }
      seen[label] = true;
    }
  }
  // Per operand, the stride each label contributes (0 for broadcast ellipsis dims of size 1).
  std::vector<std::vector<int64_t>> strides(in.values.size(), std::vector<int64_t>(labels, 0));
  for (size_t i = 0; i < in.values.size(); ++i) {
    std::vector<int64_t> row = row_major_strides(in.values[i].shape());
    for (size_t a = 0; a < equation.inputs[i].size(); ++a) {
      if (in.values[i].dim(static_cast<int64_t>(a)) == 1 &&
          sizes[static_cast<size_t>(equation.inputs[i][a])] != 1)
        continue;
      strides[i][static_cast<size_t>(equation.inputs[i][a])] += row[a];
    }
  }
  std::vector<int64_t> out_shape;
  for (int label : equation.output) out_shape.push_back(sizes[static_cast<size_t>(label)]);
  std::vector<int64_t> out_strides(labels, 0);
  std::vector<int64_t> row = row_major_strides(out_shape);
  for (size_t k = 0; k < equation.output.size(); ++k) {
    out_strides[static_cast<size_t>(equation.output[k])] = row[k];
  }
  std::vector<size_t> used;
  for (size_t label = 0; label < labels; ++label) {
    if (seen[label]) used.push_back(label);
  }
  dispatch_arithmetic(in[0].dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    using Sum = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
    std::vector<Sum> sums(static_cast<size_t>(shape_numel(out_shape)), Sum{0});
    bool empty = false;
    for (size_t label : used) empty = empty || sizes[label] == 0;
    std::vector<int64_t> index(labels, 0);
    while (!empty) {
      Sum product = Sum{1};
      for (size_t i = 0; i < in.values.size(); ++i) {
        int64_t offset = 0;
        for (size_t label : used) offset += index[label] * strides[i][label];
        product = product * static_cast<Sum>(in.values[i].data<T>()[offset]);
      }
      int64_t out = 0;
      for (size_t label : used) out += index[label] * out_strides[label];
      sums[static_cast<size_t>(out)] = sums[static_cast<size_t>(out)] + product;
      size_t k = used.size();
      for (; k > 0; --k) {
        if (++index[used[k - 1]] < sizes[used[k - 1]]) break;
        index[used[k - 1]] = 0;
      }
      if (k == 0) break;
    }
    Tensor result(in[0].dtype(), out_shape);
    for (size_t o = 0; o < sums.size(); ++o) result.data<T>()[o] = static_cast<T>(sums[o]);
    set_result(context, in, result);
  });
}

// Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0, evaluated in double and stored in x's
// type (integers truncate toward zero and saturate).
void shrink_kernel(KernelContext& context) {
  const Tensor& x = context.input(0);
  double lambd = context.node.attr_float("lambd", 0.5f);
  double bias = context.node.attr_float("bias", 0.0f);
  Tensor out(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    double value = x.get_double(i);
    out.set_double(i, value < -lambd ? value + bias : value > lambd ? value - bias : 0.0);
  }
  context.outputs[0] = out;
}

// ---- matrix products ---------------------------------------------------------------------------

// The accumulator of a dot product: double for floats (float32 included, so the oracle has no
// summation-order error to speak of), wrapping uint64_t bits for integers.
template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <typename T>
Accumulator<T> widen_for_sum(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<double>(value);
  } else {
    return to_bits(value);
  }
}

template <typename T>
T narrow_sum(Accumulator<T> sum) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(sum);
  } else {
    return from_bits<T>(sum);
  }
}

// numpy.matmul: 1-D A is a row, 1-D B a column (the added axis dropped from the result); the
// leading batch dims broadcast.
// A node quant/ annotated with an activation quantization (ir/quantization.h) multiplies
// integers: its A operand is quantized one K-long row at a time (a column of A with Gemm's transA),
// with the row's own coefficients (dynamic) or the static input ones. The reference replaces
// each row by its fake-quantized value scale * (q - zero_point); B is already the dequantized
// weight. This is the integer product up to float summation order (docs/quant.md). A per_tensor
// scheme takes one set of coefficients from the whole of A, as DynamicQuantizeLinear does.
void quantize_product_rows(const KernelContext& context, Operands& in, bool transposed) {
  if (!has_activation_quant(context.node)) return;
  const ActivationQuant quant = activation_quant(context.node);
  Tensor& a = in.values[0];
  if (a.dtype() != DType::kFloat32) {
    context.fail(cat("activation quantization needs float32 A, not ", dtype_onnx_name(a.dtype())));
  }
  if (a.rank() == 0 || a.numel() == 0) return;  // the kernel reports a scalar; nothing to round
  const int64_t k_size = transposed ? a.dim(0) : a.shape().back();
  const int64_t rows = a.numel() / k_size;
  Tensor out(DType::kFloat32, a.shape());
  const float* in_data = a.data<float>();
  float* out_data = out.data<float>();
  std::vector<float> row(static_cast<size_t>(k_size));
  const RowQuant whole =
      quant.per_tensor ? dynamic_row_quant(in_data, a.numel(), quant) : RowQuant{};
  for (int64_t i = 0; i < rows; ++i) {
    // Row i: A[i, :] contiguous, or with transA the column A[:, i] (stride = rows).
    for (int64_t k = 0; k < k_size; ++k) {
      row[k] = transposed ? in_data[k * rows + i] : in_data[i * k_size + k];
    }
    const RowQuant coefficients = quant.per_tensor ? whole
                                  : quant.dynamic
                                      ? dynamic_row_quant(row.data(), k_size, quant)
                                      : static_row_quant(quant.input_scale, quant.input_zero_point);
    fake_quantize_row(row.data(), k_size, coefficients, quant, row.data());
    for (int64_t k = 0; k < k_size; ++k) {
      (transposed ? out_data[k * rows + i] : out_data[i * k_size + k]) = row[k];
    }
  }
  a = std::move(out);
}

void matmul_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  quantize_product_rows(context, in, /*transposed=*/false);
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  if (a.dtype() != b.dtype()) {
    context.fail(
        cat("A is ", dtype_onnx_name(a.dtype()), " but B is ", dtype_onnx_name(b.dtype())));
  }
  auto operands = [&] {
    return cat("A is ", shape_text(a.shape()), ", B is ", shape_text(b.shape()));
  };
  if (a.rank() == 0 || b.rank() == 0)
    context.fail(cat("operands must have rank >= 1: ", operands()));
  std::vector<int64_t> a_shape = a.shape();
  std::vector<int64_t> b_shape = b.shape();
  if (a.rank() == 1) a_shape.insert(a_shape.begin(), 1);
  if (b.rank() == 1) b_shape.push_back(1);
  int64_t m = a_shape[a_shape.size() - 2];
  int64_t k_size = a_shape.back();
  int64_t n = b_shape.back();
  if (b_shape[b_shape.size() - 2] != k_size) {
    context.fail_input(cat("inner dimensions differ: ", operands()));
  }
  std::vector<int64_t> a_batch(a_shape.begin(), a_shape.end() - 2);
  std::vector<int64_t> b_batch(b_shape.begin(), b_shape.end() - 2);
  std::vector<int64_t> batch = broadcast_shapes(a_batch, b_batch, context);
  std::vector<int64_t> out_shape = batch;
  if (a.rank() > 1) out_shape.push_back(m);
  if (b.rank() > 1) out_shape.push_back(n);
  dispatch_arithmetic(a.dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    if (a.dtype() == DType::kInt8 || a.dtype() == DType::kInt16 || a.dtype() == DType::kUInt8 ||
        a.dtype() == DType::kUInt16) {
      fail_dtype(context, a.dtype());
    }
    Tensor out(a.dtype(), out_shape);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = out.data<T>();
    for_each_broadcast(batch, {a_batch, b_batch}, [&](int64_t matrix, const auto& offsets) {
      const T* am = pa + offsets[0] * m * k_size;
      const T* bm = pb + offsets[1] * k_size * n;
      T* ym = py + matrix * m * n;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          Accumulator<T> sum = 0;
          for (int64_t k = 0; k < k_size; ++k) {
            sum += widen_for_sum(am[i * k_size + k]) * widen_for_sum(bm[k * n + j]);
          }
          ym[i * n + j] = narrow_sum<T>(sum);
        }
      }
    });
    set_result(context, in, out);
  });
}

// Gemm: Y = alpha * A' * B' + beta * C, computed in double for floats and rounded once;
// integer types only with whole alpha and beta (then exactly, wrapping).
void gemm_kernel(KernelContext& context) {
  Operands in = widen_operands(context);
  bool trans_a = context.node.attr_int("transA", 0) != 0;
  if (in[0].rank() == 2) quantize_product_rows(context, in, trans_a);
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  bool trans_b = context.node.attr_int("transB", 0) != 0;
  double alpha = context.node.attr_float("alpha", 1.0f);
  double beta = context.node.attr_float("beta", 1.0f);
  if (a.rank() != 2 || b.rank() != 2) {
    context.fail(
        cat("A and B must be 2-D: A is ", shape_text(a.shape()), ", B is ", shape_text(b.shape())));
  }
  int64_t m = trans_a ? a.dim(1) : a.dim(0);
  int64_t k_size = trans_a ? a.dim(0) : a.dim(1);
  int64_t n = trans_b ? b.dim(0) : b.dim(1);
  if ((trans_b ? b.dim(1) : b.dim(0)) != k_size) {
    context.fail_input(cat("inner dimensions differ: A is ", shape_text(a.shape()),
                           " (transA = ", trans_a, "), B is ", shape_text(b.shape()),
                           " (transB = ", trans_b, ")"));
  }
  std::vector<int64_t> out_shape = {m, n};
  std::vector<int64_t> c_shape;
  if (in.has(2)) {
    c_shape = in[2].shape();
    if (in[2].dtype() != a.dtype()) {
      context.fail(
          cat("C is ", dtype_onnx_name(in[2].dtype()), " but A is ", dtype_onnx_name(a.dtype())));
    }
    if (c_shape.size() > 2 || broadcast_shapes(c_shape, out_shape, context) != out_shape) {
      context.fail_input(cat("C ", shape_text(c_shape), " cannot be broadcast to the result ",
                             shape_text(out_shape)));
    }
  }
  if (b.dtype() != a.dtype()) {
    context.fail(
        cat("A is ", dtype_onnx_name(a.dtype()), " but B is ", dtype_onnx_name(b.dtype())));
  }
  dispatch_arithmetic(a.dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      if (alpha != std::trunc(alpha) || beta != std::trunc(beta)) {
        raise_unsupported(cat(context.node.describe(), ": integer Gemm with a fractional alpha (",
                              alpha, ") or beta (", beta, ")"));
      }
    }
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const T* pc = in.has(2) ? in[2].data<T>() : nullptr;
    std::vector<int64_t> c_strides = broadcast_strides(c_shape, out_shape);
    Tensor out(a.dtype(), out_shape);
    T* py = out.data<T>();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        Accumulator<T> sum = 0;
        for (int64_t k = 0; k < k_size; ++k) {
          T a_ik = trans_a ? pa[k * m + i] : pa[i * k_size + k];
          T b_kj = trans_b ? pb[j * k_size + k] : pb[k * n + j];
          sum += widen_for_sum(a_ik) * widen_for_sum(b_kj);
        }
        Accumulator<T> c = pc ? widen_for_sum(pc[i * c_strides[0] + j * c_strides[1]]) : 0;
        if constexpr (std::is_floating_point_v<T>) {
          py[i * n + j] = static_cast<T>(alpha * sum + beta * c);
        } else {
          uint64_t whole_alpha = to_bits(static_cast<int64_t>(alpha));
          uint64_t whole_beta = to_bits(static_cast<int64_t>(beta));
          py[i * n + j] = from_bits<T>(whole_alpha * sum + whole_beta * c);
        }
      }
    }
    set_result(context, in, out);
  });
}

}  // namespace

void register_elementwise_kernels(std::map<std::string, Kernel>& registry) {
  for (const FloatUnary& op : float_unary_ops()) registry[op.op_type] = float_unary_kernel;
  for (const Activation& op : activations()) registry[op.op_type] = activation_kernel;
  const std::map<std::string, Kernel> kernels = {
      {"MatMul", matmul_kernel},
      {"Gemm", gemm_kernel},
      {"Add", add_kernel},
      {"Sub", sub_kernel},
      {"Mul", mul_kernel},
      {"Div", div_kernel},
      {"Pow", pow_kernel},
      {"Mod", mod_kernel},
      {"BitShift", bit_shift_kernel},
      {"PRelu", prelu_kernel},
      {"Max", max_kernel},
      {"Min", min_kernel},
      {"Sum", sum_kernel},
      {"Mean", mean_kernel},
      {"Equal", equal_kernel},
      {"Less", less_kernel},
      {"Greater", greater_kernel},
      {"LessOrEqual", less_or_equal_kernel},
      {"GreaterOrEqual", greater_or_equal_kernel},
      {"Not", not_kernel},
      {"And", and_kernel},
      {"Or", or_kernel},
      {"Xor", xor_kernel},
      {"Where", where_kernel},
      {"Abs", abs_kernel},
      {"Neg", neg_kernel},
      {"Sign", sign_kernel},
      {"Relu", relu_kernel},
      {"IsNaN", is_nan_kernel},
      {"IsInf", is_inf_kernel},
      {"Clip", clip_kernel},
      {"Softmax", softmax_kernel},
      {"LogSoftmax", log_softmax_kernel},
      {"Hardmax", hardmax_kernel},
      {"Einsum", einsum_kernel},
      {"Shrink", shrink_kernel},
  };
  registry.insert(kernels.begin(), kernels.end());
}

}  // namespace rnnc
