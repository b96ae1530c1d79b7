// Type and shape inference for the elementwise and dense math ops: unary math and activations,
// numpy-broadcast arithmetic, comparisons and logic, variadic Max/Min/Sum/Mean, Where, Clip, Shrink,
// Softmax/LogSoftmax/Hardmax, MatMul, Gemm and Einsum (docs/ops/elementwise.md has the semantics
// of each).
//
// Dims stay symbolic through broadcasting and the matrix products:
//   MatMul(f32[seq, batch, 40], f32[40, 512])  -> f32[seq, batch, 512]
//   Add(f32[seq, 1, 512], f32[batch, 512])     -> f32[seq, batch, 512]
// Add/Sub/Mul/Div/Max/Min on small int64 shape tensors also carry their elements as dims, so the
// Shape -> Gather -> Mul -> Concat -> Reshape chains PyTorch exports give symbolic shapes:
//   Mul(Shape(x)[0:2] = [seq, batch], 4) -> [4*seq, 4*batch]
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ir/op_schema.h"
#include "ir/shape_inference/einsum.h"

namespace rnnc {

namespace {

// ---- element types -----------------------------------------------------------------------------

// Sets of element types as bit masks over DType, for checking an input against an op's
// type constraint. Each op accepts the union over the ONNX versions rnnc imports (opset 7..21).
constexpr uint32_t type_bit(DType dtype) { return uint32_t{1} << static_cast<int>(dtype); }

constexpr uint32_t kFloatTypes = type_bit(DType::kFloat16) | type_bit(DType::kBFloat16) |
                                 type_bit(DType::kFloat32) | type_bit(DType::kFloat64);
constexpr uint32_t kSignedTypes = type_bit(DType::kInt8) | type_bit(DType::kInt16) |
                                  type_bit(DType::kInt32) | type_bit(DType::kInt64);
constexpr uint32_t kUnsignedTypes = type_bit(DType::kUInt8) | type_bit(DType::kUInt16) |
                                    type_bit(DType::kUInt32) | type_bit(DType::kUInt64);
constexpr uint32_t kNumericTypes = kFloatTypes | kSignedTypes | kUnsignedTypes;
constexpr uint32_t kBoolType = type_bit(DType::kBool);
// MatMul, Gemm and PRelu: floats and the 32/64-bit integers.
constexpr uint32_t kMatrixTypes = kFloatTypes | type_bit(DType::kInt32) | type_bit(DType::kInt64) |
                                  type_bit(DType::kUInt32) | type_bit(DType::kUInt64);
constexpr uint32_t kPowBaseTypes = kFloatTypes | type_bit(DType::kInt32) | type_bit(DType::kInt64);
constexpr uint32_t kAnyType = ~uint32_t{0};

std::string type_set_names(uint32_t types) {
  std::string names;
  for (int code = 1; code <= static_cast<int>(DType::kBFloat16); ++code) {
    if (types & (uint32_t{1} << code)) {
      names += (names.empty() ? "" : ", ") + std::string(dtype_onnx_name(static_cast<DType>(code)));
    }
  }
  return names;
}

std::string input_name(const InferenceContext& context, size_t i) {
  return cat("input ", i, " '", context.node().input(i)->name(), "'");
}

// Inputs of not yet known element type (kUndefined) pass every check.
void check_input_type(const InferenceContext& context, size_t i, uint32_t allowed) {
  DType dtype = context.input_type(i).dtype;
  if (dtype == DType::kUndefined || (allowed & type_bit(dtype))) return;
  context.fail(cat(input_name(context, i), " has element type ", dtype_onnx_name(dtype),
                   ", expected one of: ", type_set_names(allowed)));
}

void check_same_type(const InferenceContext& context, size_t first, size_t other) {
  DType a = context.input_type(first).dtype;
  DType b = context.input_type(other).dtype;
  if (a == DType::kUndefined || b == DType::kUndefined || a == b) return;
  context.fail(cat(input_name(context, other), " is ", dtype_onnx_name(b), " but ",
                   input_name(context, first), " is ", dtype_onnx_name(a),
                   "; they must have the same element type"));
}

// The element type of the first input whose type is known.
DType common_type(const InferenceContext& context, size_t first, size_t last) {
  for (size_t i = first; i <= last; ++i) {
    if (context.has_input(i) && context.input_type(i).dtype != DType::kUndefined) {
      return context.input_type(i).dtype;
    }
  }
  return DType::kUndefined;
}

bool rank_known(const InferenceContext& context, size_t i) {
  return context.input_type(i).shape.has_value();
}

// ---- shapes ------------------------------------------------------------------------------------

// The output axis where two known dims conflict under numpy broadcasting, or -1.
int64_t broadcast_conflict(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  for (size_t k = 0; k < rank; ++k) {
    const Dim da = k < rank - a.size() ? Dim(1) : a[k - (rank - a.size())];
    const Dim db = k < rank - b.size() ? Dim(1) : b[k - (rank - b.size())];
    if (da.is_known() && db.is_known() && da.value() != db.value() && da.value() != 1 &&
        db.value() != 1) {
      return static_cast<int64_t>(k);
    }
  }
  return -1;
}

// Multidirectional broadcast of inputs [first, last] (all present and of known rank); a conflict
// names the input that cannot join the shape of the ones before it.
Shape broadcast_inputs(const InferenceContext& context, size_t first, size_t last) {
  Shape out = context.input_shape(first);
  for (size_t i = first + 1; i <= last; ++i) {
    const Shape& next = context.input_shape(i);
    if (int64_t axis = broadcast_conflict(out, next); axis >= 0) {
      std::string before =
          i == first + 1
              ? cat(input_name(context, first), " ", shape_to_string(out))
              : cat("the broadcast of inputs ", first, "..", i - 1, " ", shape_to_string(out));
      context.fail(cat(input_name(context, i), " ", shape_to_string(next),
                       " cannot be broadcast with ", before, " (output axis ", axis, ")"));
    }
    out = broadcast_shapes(out, next, context);
  }
  return out;
}

bool all_ranks_known(const InferenceContext& context, size_t first, size_t last) {
  for (size_t i = first; i <= last; ++i) {
    if (!rank_known(context, i)) return false;
  }
  return true;
}

// ---- symbolic values of shape tensors ----------------------------------------------------------

Dim dim_div(const Dim& a, const Dim& b) {
  // Known operands divide as the Div kernel does (truncating); symbolic ones only when exact.
  if (a.is_known() && b.is_known()) {
    return b.value() == 0 ? Dim::unknown() : Dim(a.value() / b.value());
  }
  return a.exact_div(b);
}

Dim dim_max(const Dim& a, const Dim& b) {
  if (a.is_known() && b.is_known()) return Dim(std::max(a.value(), b.value()));
  return a == b ? a : Dim::unknown();
}

Dim dim_min(const Dim& a, const Dim& b) {
  if (a.is_known() && b.is_known()) return Dim(std::min(a.value(), b.value()));
  return a == b ? a : Dim::unknown();
}

using DimArithmetic = Dim (*)(const Dim&, const Dim&);

const std::map<std::string, DimArithmetic>& dims_value_rules() {
  static const std::map<std::string, DimArithmetic> rules = {
      {"Add", [](const Dim& a, const Dim& b) { return a + b; }},  // [seq] + 1 -> [seq + 1]
      {"Sub", [](const Dim& a, const Dim& b) { return a - b; }},  // [seq] - 1 -> [seq - 1]
      {"Mul",
       [](const Dim& a, const Dim& b) { return a * b; }},  // [seq, batch] * 4 -> [4*seq, 4*batch]
      {"Div", dim_div},                                    // [4*seq] / 4 -> [seq]; [seq] / 4 -> [?]
      {"Max", dim_max},  // [seq] max [seq] -> [seq]; [3] max [5] -> [5]
      {"Min", dim_min},
  };
  return rules;
}

// Elementwise dims of a binary op on int64 tensors of rank <= 1 whose elements are known as dims
// (constants or propagated from Shape), a single element broadcasting against the other side.
void propagate_dims_value(const InferenceContext& context, DType dtype) {
  auto rule = dims_value_rules().find(context.node().op_type());
  if (rule == dims_value_rules().end() || dtype != DType::kInt64 || context.num_inputs() != 2) {
    return;
  }
  for (size_t i = 0; i < 2; ++i) {
    if (!rank_known(context, i) || context.input_shape(i).size() > 1) return;
  }
  std::optional<std::vector<Dim>> a = context.input_dims_value(0);
  std::optional<std::vector<Dim>> b = context.input_dims_value(1);
  if (!a || !b) return;
  size_t count = a->size() == 1 ? b->size() : a->size();
  if ((a->size() != count && a->size() != 1) || (b->size() != count && b->size() != 1)) return;
  std::vector<Dim> out;
  bool any_derived = false;
  for (size_t k = 0; k < count; ++k) {
    out.push_back(rule->second((*a)[a->size() == 1 ? 0 : k], (*b)[b->size() == 1 ? 0 : k]));
    any_derived = any_derived || !out.back().is_unknown();
  }
  if (any_derived) context.set_output_dims_value(0, std::move(out));
}

// ---- inference functions -----------------------------------------------------------------------

// The element types each op's data inputs accept; looked up by the shared inference functions.
const std::map<std::string, uint32_t>& op_input_types();

uint32_t input_types(const InferenceContext& context) {
  return op_input_types().at(context.node().op_type());
}

// y = f(x): same type and shape.
void infer_unary(InferenceContext& context) {
  check_input_type(context, 0, input_types(context));
  const TensorType& x = context.input_type(0);
  if (!x.shape) return context.set_output_unknown_rank(0, x.dtype);
  context.set_output(0, x.dtype, *x.shape);
}

// IsNaN, IsInf: a bool per element.
void infer_unary_predicate(InferenceContext& context) {
  check_input_type(context, 0, input_types(context));
  const TensorType& x = context.input_type(0);
  if (!x.shape) return context.set_output_unknown_rank(0, DType::kBool);
  context.set_output(0, DType::kBool, *x.shape);
}

// All inputs one element type, output of that type broadcast from all of them.
void infer_broadcast_to(InferenceContext& context, DType out_dtype) {
  size_t last = context.num_inputs() - 1;
  for (size_t i = 0; i <= last; ++i) {
    check_input_type(context, i, input_types(context));
    if (i > 0) check_same_type(context, 0, i);
  }
  if (!all_ranks_known(context, 0, last)) return context.set_output_unknown_rank(0, out_dtype);
  context.set_output(0, out_dtype, broadcast_inputs(context, 0, last));
}

// Add, Sub, Mul, Div, Max, Min, Sum, Mean, And, Or, Xor.
void infer_broadcast(InferenceContext& context) {
  DType dtype = common_type(context, 0, context.num_inputs() - 1);
  infer_broadcast_to(context, dtype);
  propagate_dims_value(context, dtype);
}

// Equal, Less, Greater, LessOrEqual, GreaterOrEqual.
void infer_comparison(InferenceContext& context) { infer_broadcast_to(context, DType::kBool); }

void infer_mod(InferenceContext& context) {
  int64_t fmod = context.node().attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) context.fail(cat("attribute 'fmod' = ", fmod, ", must be 0 or 1"));
  DType dtype = common_type(context, 0, 1);
  if (fmod == 0 && is_floating(dtype)) {
    context.fail(cat("attribute 'fmod' = 0 (integer mod) with element type ",
                     dtype_onnx_name(dtype), ": floating-point Mod requires fmod = 1"));
  }
  infer_broadcast_to(context, dtype);
}

void infer_bit_shift(InferenceContext& context) {
  std::string direction = context.node().attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    context.fail(cat("attribute 'direction' = \"", direction, "\", must be \"LEFT\" or \"RIGHT\""));
  }
  infer_broadcast_to(context, common_type(context, 0, 1));
}

// Pow(X, Y): the result has X's type; from opset 12 Y may have any numeric type.
void infer_pow(InferenceContext& context) {
  check_input_type(context, 0, context.node().opset() >= 12 ? kPowBaseTypes : kFloatTypes);
  check_input_type(context, 1, context.node().opset() >= 12 ? kNumericTypes : kFloatTypes);
  if (context.node().opset() < 12) check_same_type(context, 0, 1);
  DType dtype = context.input_type(0).dtype;
  if (!all_ranks_known(context, 0, 1)) return context.set_output_unknown_rank(0, dtype);
  context.set_output(0, dtype, broadcast_inputs(context, 0, 1));
}

// PRelu(X, slope): slope broadcasts one way, to X's shape.
void infer_prelu(InferenceContext& context) {
  check_input_type(context, 0, kMatrixTypes);
  check_same_type(context, 0, 1);
  const TensorType& x = context.input_type(0);
  if (!x.shape) return context.set_output_unknown_rank(0, x.dtype);
  if (rank_known(context, 1)) {
    const Shape& slope = context.input_shape(1);
    bool fits = slope.size() <= x.shape->size();
    for (size_t k = 0; fits && k < slope.size(); ++k) {
      const Dim& s = slope[k];
      const Dim& d = (*x.shape)[x.shape->size() - slope.size() + k];
      fits = !(s.is_known() && d.is_known() && s.value() != 1 && s.value() != d.value());
    }
    if (!fits) {
      context.fail(cat(input_name(context, 1), " ", shape_to_string(slope),
                       " cannot be broadcast to X ", shape_to_string(*x.shape),
                       " (slope broadcasts one way, to X's shape)"));
    }
  }
  context.set_output(0, x.dtype, *x.shape);
}

void infer_where(InferenceContext& context) {
  check_input_type(context, 0, kBoolType);
  check_same_type(context, 1, 2);
  DType dtype = common_type(context, 1, 2);
  if (!all_ranks_known(context, 0, 2)) return context.set_output_unknown_rank(0, dtype);
  context.set_output(0, dtype, broadcast_inputs(context, 0, 2));
}

// Clip: bounds are attributes 'min'/'max' before opset 11 and optional scalar inputs from 11.
void infer_clip(InferenceContext& context) {
  check_input_type(context, 0, kNumericTypes);
  const Node& node = context.node();
  if (node.opset() < 11) {
    if (context.num_inputs() > 1) {
      context.fail(cat("has ", context.num_inputs(),
                       " inputs, but before opset 11 Clip takes "
                       "one input and its bounds as attributes 'min' and 'max'"));
    }
  } else {
    for (const char* attr : {"min", "max"}) {
      if (node.has_attr(attr)) {
        context.fail(cat("attribute '", attr, "' is not part of Clip from opset 11 (the bounds ",
                         "are inputs 1 and 2)"));
      }
    }
    for (size_t i = 1; i < context.num_inputs() && i <= 2; ++i) {
      if (!context.has_input(i)) continue;
      check_same_type(context, 0, i);
      if (!rank_known(context, i)) continue;
      const Shape& bound = context.input_shape(i);
      bool single = std::all_of(bound.begin(), bound.end(),
                                [](const Dim& d) { return !d.is_known() || d.value() == 1; });
      if (!single) {
        context.fail(cat(input_name(context, i), " has shape ", shape_to_string(bound),
                         ", must be a scalar"));
      }
    }
  }
  const TensorType& x = context.input_type(0);
  if (!x.shape) return context.set_output_unknown_rank(0, x.dtype);
  context.set_output(0, x.dtype, *x.shape);
}

// Softmax, LogSoftmax, Hardmax: the axis must exist (default 1 before opset 13, -1 from 13).
void infer_softmax(InferenceContext& context) {
  check_input_type(context, 0, kFloatTypes);
  const TensorType& x = context.input_type(0);
  if (!x.shape) return context.set_output_unknown_rank(0, x.dtype);
  int64_t axis = context.node().attr_int("axis", context.node().opset() >= 13 ? -1 : 1);
  context.normalize_axis(axis, static_cast<int64_t>(x.shape->size()), "attribute 'axis'");
  context.set_output(0, x.dtype, *x.shape);
}

// Einsum: the output's dims are the sizes of its labels; a letter's size must agree wherever it
// appears, an ellipsis dim broadcasts (1 against n).
void infer_einsum(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < context.num_inputs(); ++i) {
    check_input_type(context, i, kNumericTypes);
    if (context.input_type(i).dtype != dtype) {
      context.fail(cat("input ", i, " is ", dtype_onnx_name(context.input_type(i).dtype),
                       " but input 0 is ", dtype_onnx_name(dtype), " (they must match)"));
    }
    if (!context.input_type(i).shape) return context.set_output_unknown_rank(0, dtype);
    ranks.push_back(static_cast<int64_t>(context.input_type(i).shape->size()));
  }
  EinsumEquation equation = parse_einsum(context.node(), ranks);
  std::vector<Dim> sizes(static_cast<size_t>(equation.labels), Dim(1));
  std::vector<bool> seen(static_cast<size_t>(equation.labels), false);
  for (size_t i = 0; i < equation.inputs.size(); ++i) {
    const Shape& shape = *context.input_type(i).shape;
    for (size_t a = 0; a < shape.size(); ++a) {
      size_t label = static_cast<size_t>(equation.inputs[i][a]);
      const Dim& d = shape[a];
      bool ellipsis = label >= 52;
      if (!seen[label] || (ellipsis && sizes[label] == Dim(1))) {
        sizes[label] = d;
      } else if (d.is_known() && sizes[label].is_known() && d != sizes[label] &&
                 !(ellipsis && d.value() == 1)) {
        context.fail(cat("label '", einsum_label_name(static_cast<int>(label)), "' has size ",
                         sizes[label].value(), " and ", d.value(), " (input ", i, " axis ", a,
                         ")"));
      }
      seen[label] = true;
    }
  }
  Shape out;
  for (int label : equation.output) out.push_back(sizes[static_cast<size_t>(label)]);
  context.set_output(0, dtype, out);
}

// numpy.matmul: a 1-D A is a row [1, K] and a 1-D B a column [K, 1], the added axis dropped
// from the result; leading (batch) dims broadcast.
void infer_matmul(InferenceContext& context) {
  check_input_type(context, 0, kMatrixTypes);
  check_same_type(context, 0, 1);
  DType dtype = common_type(context, 0, 1);
  if (!all_ranks_known(context, 0, 1)) return context.set_output_unknown_rank(0, dtype);
  const Shape& a_shape = context.input_shape(0);
  const Shape& b_shape = context.input_shape(1);
  auto operands = [&] {
    return cat("A is ", shape_to_string(a_shape), ", B is ", shape_to_string(b_shape));
  };
  if (a_shape.empty() || b_shape.empty()) {
    context.fail(cat("operands must have rank >= 1: ", operands()));
  }
  Shape a = a_shape;
  Shape b = b_shape;
  if (a_shape.size() == 1) a.insert(a.begin(), Dim(1));
  if (b_shape.size() == 1) b.push_back(Dim(1));
  const Dim& a_inner = a[a.size() - 1];
  const Dim& b_inner = b[b.size() - 2];
  if (a_inner.is_known() && b_inner.is_known() && a_inner.value() != b_inner.value()) {
    context.fail(cat("inner dimensions differ: ", operands()));
  }
  Shape a_batch(a.begin(), a.end() - 2);
  Shape b_batch(b.begin(), b.end() - 2);
  if (broadcast_conflict(a_batch, b_batch) >= 0) {
    context.fail(cat("batch dimensions cannot be broadcast: ", operands()));
  }
  Shape out = broadcast_shapes(a_batch, b_batch, context);
  if (a_shape.size() > 1) out.push_back(a[a.size() - 2]);
  if (b_shape.size() > 1) out.push_back(b.back());
  context.set_output(0, dtype, std::move(out));
}

// Gemm: Y[M, N] = alpha * A'[M, K] * B'[K, N] + beta * C, C broadcast one way to [M, N];
// C is optional from opset 11.
void infer_gemm(InferenceContext& context) {
  const Node& node = context.node();
  bool has_c = context.has_input(2);
  if (!has_c && node.opset() < 11) context.fail("input 2 'C' is required before opset 11");
  size_t last = has_c ? 2 : 1;
  for (size_t i = 0; i <= last; ++i) {
    check_input_type(context, i, kMatrixTypes);
    if (i > 0) check_same_type(context, 0, i);
  }
  DType dtype = common_type(context, 0, last);
  if (!all_ranks_known(context, 0, 1)) return context.set_output_unknown_rank(0, dtype);
  const Shape& a = context.input_shape(0);
  const Shape& b = context.input_shape(1);
  if (a.size() != 2) context.fail(cat("input 0 'A' must be 2-D, got ", shape_to_string(a)));
  if (b.size() != 2) context.fail(cat("input 1 'B' must be 2-D, got ", shape_to_string(b)));
  int64_t trans_a = node.attr_int("transA", 0);
  int64_t trans_b = node.attr_int("transB", 0);
  const Dim& m = a[trans_a ? 1 : 0];
  const Dim& a_inner = a[trans_a ? 0 : 1];
  const Dim& b_inner = b[trans_b ? 1 : 0];
  const Dim& n = b[trans_b ? 0 : 1];
  if (a_inner.is_known() && b_inner.is_known() && a_inner.value() != b_inner.value()) {
    context.fail(cat("inner dimensions differ: A is ", shape_to_string(a), " (transA = ", trans_a,
                     "), B is ", shape_to_string(b), " (transB = ", trans_b, ")"));
  }
  Shape out = {m, n};
  if (has_c && rank_known(context, 2)) {
    const Shape& c = context.input_shape(2);
    bool fits = c.size() <= 2;
    for (size_t k = 0; fits && k < c.size(); ++k) {
      const Dim& target = out[2 - c.size() + k];
      fits = !(c[k].is_known() && target.is_known() && c[k].value() != 1 &&
               c[k].value() != target.value());
    }
    if (!fits) {
      context.fail(cat("input 2 'C' ", shape_to_string(c), " cannot be broadcast to the result ",
                       shape_to_string(out)));
    }
  }
  context.set_output(0, dtype, std::move(out));
}

// ---- the op table ------------------------------------------------------------------------------

struct ElementwiseOp {
  const char* op_type;
  int since_opset;  // the first ONNX opset that has the op
  int min_inputs;
  int max_inputs;  // -1: variadic
  uint32_t input_types;
  ShapeInferenceFn infer;
};

constexpr int kVariadic = -1;

const std::vector<ElementwiseOp>& elementwise_ops() {
  static const std::vector<ElementwiseOp> ops = {
      // Dense math.
      {"MatMul", 1, 2, 2, kMatrixTypes, infer_matmul},
      {"Gemm", 1, 2, 3, kMatrixTypes, infer_gemm},
      // Broadcast arithmetic.
      {"Add", 1, 2, 2, kNumericTypes, infer_broadcast},
      {"Sub", 1, 2, 2, kNumericTypes, infer_broadcast},
      {"Mul", 1, 2, 2, kNumericTypes, infer_broadcast},
      {"Div", 1, 2, 2, kNumericTypes, infer_broadcast},
      {"Pow", 1, 2, 2, kPowBaseTypes, infer_pow},
      {"Mod", 10, 2, 2, kNumericTypes, infer_mod},
      {"BitShift", 11, 2, 2, kUnsignedTypes, infer_bit_shift},
      {"PRelu", 1, 2, 2, kMatrixTypes, infer_prelu},
      // Variadic.
      {"Max", 1, 1, kVariadic, kNumericTypes, infer_broadcast},
      {"Min", 1, 1, kVariadic, kNumericTypes, infer_broadcast},
      {"Sum", 1, 1, kVariadic, kFloatTypes, infer_broadcast},
      {"Mean", 1, 1, kVariadic, kFloatTypes, infer_broadcast},
      // Comparisons and logic.
      {"Equal", 1, 2, 2, kNumericTypes | kBoolType | type_bit(DType::kString), infer_comparison},
      {"Less", 1, 2, 2, kNumericTypes, infer_comparison},
      {"Greater", 1, 2, 2, kNumericTypes, infer_comparison},
      {"LessOrEqual", 12, 2, 2, kNumericTypes, infer_comparison},
      {"GreaterOrEqual", 12, 2, 2, kNumericTypes, infer_comparison},
      {"Not", 1, 1, 1, kBoolType, infer_unary},
      {"And", 1, 2, 2, kBoolType, infer_broadcast},
      {"Or", 1, 2, 2, kBoolType, infer_broadcast},
      {"Xor", 1, 2, 2, kBoolType, infer_broadcast},
      {"Where", 9, 3, 3, kAnyType, infer_where},
      // Unary math.
      {"Abs", 1, 1, 1, kNumericTypes, infer_unary},
      {"Neg", 1, 1, 1, kFloatTypes | kSignedTypes, infer_unary},
      {"Sign", 9, 1, 1, kNumericTypes, infer_unary},
      {"Sqrt", 1, 1, 1, kFloatTypes, infer_unary},
      {"Exp", 1, 1, 1, kFloatTypes, infer_unary},
      {"Log", 1, 1, 1, kFloatTypes, infer_unary},
      {"Reciprocal", 1, 1, 1, kFloatTypes, infer_unary},
      {"Floor", 1, 1, 1, kFloatTypes, infer_unary},
      {"Ceil", 1, 1, 1, kFloatTypes, infer_unary},
      {"Round", 11, 1, 1, kFloatTypes, infer_unary},
      {"Erf", 9, 1, 1, kNumericTypes, infer_unary},
      {"Sin", 7, 1, 1, kFloatTypes, infer_unary},
      {"Cos", 7, 1, 1, kFloatTypes, infer_unary},
      {"Tan", 7, 1, 1, kFloatTypes, infer_unary},
      {"Asin", 7, 1, 1, kFloatTypes, infer_unary},
      {"Acos", 7, 1, 1, kFloatTypes, infer_unary},
      {"Atan", 7, 1, 1, kFloatTypes, infer_unary},
      {"Sinh", 9, 1, 1, kFloatTypes, infer_unary},
      {"Cosh", 9, 1, 1, kFloatTypes, infer_unary},
      {"Asinh", 9, 1, 1, kFloatTypes, infer_unary},
      {"Acosh", 9, 1, 1, kFloatTypes, infer_unary},
      {"Atanh", 9, 1, 1, kFloatTypes, infer_unary},
      {"IsNaN", 9, 1, 1, kFloatTypes, infer_unary_predicate},
      {"IsInf", 10, 1, 1, kFloatTypes, infer_unary_predicate},
      // Activations.
      {"Relu", 1, 1, 1, kFloatTypes | kSignedTypes, infer_unary},
      {"LeakyRelu", 1, 1, 1, kFloatTypes, infer_unary},
      {"Elu", 1, 1, 1, kFloatTypes, infer_unary},
      {"Selu", 1, 1, 1, kFloatTypes, infer_unary},
      {"Celu", 12, 1, 1, kFloatTypes, infer_unary},
      {"ThresholdedRelu", 10, 1, 1, kFloatTypes, infer_unary},
      {"Sigmoid", 1, 1, 1, kFloatTypes, infer_unary},
      {"HardSigmoid", 1, 1, 1, kFloatTypes, infer_unary},
      {"HardSwish", 14, 1, 1, kFloatTypes, infer_unary},
      {"Tanh", 1, 1, 1, kFloatTypes, infer_unary},
      {"Softplus", 1, 1, 1, kFloatTypes, infer_unary},
      {"Softsign", 1, 1, 1, kFloatTypes, infer_unary},
      {"Clip", 1, 1, 3, kNumericTypes, infer_clip},
      {"Softmax", 1, 1, 1, kFloatTypes, infer_softmax},
      {"LogSoftmax", 1, 1, 1, kFloatTypes, infer_softmax},
      {"Hardmax", 1, 1, 1, kFloatTypes, infer_softmax},
      {"Einsum", 12, 1, kVariadic, kNumericTypes, infer_einsum},
      {"Shrink", 9, 1, 1, kNumericTypes, infer_unary},
  };
  return ops;
}

const std::map<std::string, uint32_t>& op_input_types() {
  static const std::map<std::string, uint32_t> types = [] {
    std::map<std::string, uint32_t> by_op;
    for (const ElementwiseOp& op : elementwise_ops()) by_op[op.op_type] = op.input_types;
    return by_op;
  }();
  return types;
}

}  // namespace

void register_elementwise_schemas(std::vector<OpSchema>& registry) {
  for (const ElementwiseOp& op : elementwise_ops()) {
    registry.push_back({op.op_type, op.since_opset, op.min_inputs, op.max_inputs, 1, 1, op.infer});
  }
}

}  // namespace rnnc
