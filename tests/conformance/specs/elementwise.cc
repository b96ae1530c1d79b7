// Elementwise and dense math ops (docs/ops/elementwise.md). Each op is one entry; helpers only
// spell the common signatures (a unary op, a broadcasting binary op, a comparison).
//
// Opsets: models are written at opset 21 (the newest rnnc imports), so each op is its latest
// version; older opsets are added where the semantics differ (Softmax's axis before 13, Clip's
// types before 13).
#include "tests/conformance/spec.h"

// One operand or attribute per line reads as a table, which clang-format would undo.
// clang-format off
namespace rnnc::conformance {

namespace {

const std::vector<DType> kBool = {DType::kBool};
// The ONNX type list of the ops that gain bfloat16 only at opset 22 (past rnnc's opset 21).
const std::vector<DType> kFloat16To64 = {DType::kFloat16, DType::kFloat32, DType::kFloat64};
const std::vector<DType> kSignedAndFloat = kFloatTypes + kSignedTypes;
const std::vector<DType> kPowBaseTypes = kFloatTypes + std::vector<DType>{DType::kInt32,
                                                                          DType::kInt64};

// Y = f(X), same type and shape; every boundary value is defined (IEEE semantics).
Op unary(const std::string& op_type, int opset, const std::vector<DType>& types) {
  return Op(op_type, opset)
      .types("T", types)
      .in("X", "T").rank(0, 4).specials()
      .out("Y", "T");
}

// C = A (op) B with numpy broadcasting.
Op binary(const std::string& op_type, int opset, const std::vector<DType>& types) {
  return Op(op_type, opset)
      .types("T", types)
      .in("A", "T").rank(0, 4).specials()
      .in("B", "T").rank(0, 4).specials()
      .out("C", "T")
      .broadcast(Broadcast::kMultidirectional);
}

// bool C = A (op) B with numpy broadcasting.
Op comparison(const std::string& op_type, int opset, const std::vector<DType>& types) {
  return Op(op_type, opset)
      .types("T", types)
      .types("T1", kBool)
      .in("A", "T").rank(0, 4).specials()
      .in("B", "T").rank(0, 4).specials()
      .out("C", "T1")
      .broadcast(Broadcast::kMultidirectional);
}

// A variadic op folding its inputs with broadcasting.
Op variadic(const std::string& op_type, int opset, const std::vector<DType>& types) {
  return Op(op_type, opset)
      .types("T", types)
      .in("data", "T").variadic(1, 4).rank(0, 4).specials()
      .out("result", "T")
      .broadcast(Broadcast::kMultidirectional);
}

}  // namespace

void add_elementwise_specs(std::vector<OpSpec>& specs) {
  // ---- dense math ----
  specs.push_back(Op("MatMul", 21)
                      .types("T", kMatrixTypes)
                      .in("A", "T").rank(1, 4).specials()
                      .in("B", "T").rank(1, 4).specials().may_be_constant()
                      .out("Y", "T")
                      .special("matmul")
                      .note("K of A and B agree; batch dims broadcast; 1-D operands promoted"));
  specs.push_back(Op("Gemm", 21)
                      .types("T", kMatrixTypes)
                      .attr_float("alpha", "1.0", {{-2, 2}})
                      .attr_float("beta", "1.0", {{-2, 2}})
                      .attr_int("transA", "0", {{0, 1}})
                      .attr_int("transB", "0", {{0, 1}})
                      .in("A", "T").rank(2, 2).specials()
                      .in("B", "T").rank(2, 2).specials().may_be_constant()
                      .in("C", "T").optional().rank(0, 2).specials().may_be_constant()
                      .out("Y", "T")
                      .special("gemm")
                      .note("M, K, N from the trans flags; C broadcasts one way to [M, N]; "
                            "integer types get whole alpha and beta"));

  // ---- broadcast arithmetic ----
  specs.push_back(binary("Add", 21, kNumericTypes));
  specs.push_back(binary("Sub", 21, kNumericTypes));
  specs.push_back(binary("Mul", 21, kNumericTypes));
  specs.push_back(Op("Div", 21)
                      .types("T", kNumericTypes)
                      .in("A", "T").rank(0, 4).specials()
                      .in("B", "T").rank(0, 4).specials().nonzero(NonZero::kIntegerTypes)
                      .out("C", "T")
                      .broadcast(Broadcast::kMultidirectional));
  specs.push_back(Op("Pow", 21)
                      .types("T", kPowBaseTypes)
                      .types("T1", kNumericTypes)
                      // 0 to a negative integer power is an error for integer bases.
                      .in("X", "T").rank(0, 4).specials().nonzero(NonZero::kIntegerTypes)
                      .in("Y", "T1").rank(0, 4).range(-3, 6).specials()
                      .out("Z", "T")
                      .broadcast(Broadcast::kMultidirectional));
  specs.push_back(Op("Mod", 21)
                      .types("T", kNumericTypes)
                      .attr_int("fmod", "0", {{0, 1}})
                      .in("A", "T").rank(0, 4).specials()
                      .in("B", "T").rank(0, 4).specials().nonzero(NonZero::kIntegerTypes)
                      .out("C", "T")
                      .broadcast(Broadcast::kMultidirectional)
                      .special("mod")
                      .note("float types need fmod = 1"));
  specs.push_back(Op("BitShift", 21)
                      .types("T", kUnsignedTypes)
                      .attr_string("direction", "", {"LEFT", "RIGHT"}).required()
                      .in("X", "T").rank(0, 4).specials()
                      .in("Y", "T").rank(0, 4).by_special()
                      .out("Z", "T")
                      .broadcast(Broadcast::kMultidirectional)
                      .special("bitshift")
                      .note("shift amounts mostly below the bit width, some at or above it"));
  specs.push_back(Op("PRelu", 21)
                      .types("T", kMatrixTypes)
                      .in("X", "T").rank(0, 4).specials()
                      .in("slope", "T").rank(0, 4).specials().may_be_constant()
                      .out("Y", "T")
                      .broadcast(Broadcast::kUnidirectional));

  // ---- variadic ----
  specs.push_back(variadic("Max", 21, kNumericTypes));
  specs.push_back(variadic("Min", 21, kNumericTypes));
  specs.push_back(variadic("Sum", 21, kFloatTypes));
  specs.push_back(variadic("Mean", 21, kFloatTypes));

  // ---- comparisons and logic ----
  specs.push_back(comparison("Equal", 21, kNumericTypes + kBool +
                                              std::vector<DType>{DType::kString}));
  specs.push_back(comparison("Less", 21, kNumericTypes));
  specs.push_back(comparison("Greater", 21, kNumericTypes));
  specs.push_back(comparison("LessOrEqual", 21, kNumericTypes));
  specs.push_back(comparison("GreaterOrEqual", 21, kNumericTypes));
  specs.push_back(unary("Not", 21, kBool));
  specs.push_back(binary("And", 21, kBool));
  specs.push_back(binary("Or", 21, kBool));
  specs.push_back(binary("Xor", 21, kBool));
  specs.push_back(Op("Where", 21)
                      .types("B", kBool)
                      .types("T", kAllTypes)
                      .in("condition", "B").rank(0, 4)
                      .in("X", "T").rank(0, 4).specials()
                      .in("Y", "T").rank(0, 4).specials()
                      .out("output", "T")
                      .broadcast(Broadcast::kMultidirectional));

  // ---- unary math ----
  specs.push_back(unary("Abs", 21, kNumericTypes));
  specs.push_back(unary("Neg", 21, kSignedAndFloat));
  specs.push_back(unary("Sign", 21, kNumericTypes));
  specs.push_back(unary("Sqrt", 21, kFloatTypes));
  specs.push_back(unary("Exp", 21, kFloatTypes));
  specs.push_back(unary("Log", 21, kFloatTypes));
  specs.push_back(unary("Reciprocal", 21, kFloatTypes));
  specs.push_back(unary("Floor", 21, kFloatTypes));
  specs.push_back(unary("Ceil", 21, kFloatTypes));
  specs.push_back(unary("Round", 21, kFloat16To64)
                      .range(-8, 8)
                      .special("round_halves")
                      .note("some values are exact halves, which round to even"));
  specs.push_back(unary("Erf", 21, kFloatTypes)
                      .note("integer Erf (in the ONNX type list) is kUnsupported in rnnc's "
                            "kernel"));
  specs.push_back(unary("Sin", 21, kFloat16To64));
  specs.push_back(unary("Cos", 21, kFloat16To64));
  specs.push_back(unary("Tan", 21, kFloat16To64));
  specs.push_back(unary("Asin", 21, kFloat16To64).range(-1, 1));
  specs.push_back(unary("Acos", 21, kFloat16To64).range(-1, 1));
  specs.push_back(unary("Atan", 21, kFloat16To64));
  specs.push_back(unary("Sinh", 21, kFloat16To64));
  specs.push_back(unary("Cosh", 21, kFloat16To64));
  specs.push_back(unary("Asinh", 21, kFloat16To64));
  specs.push_back(unary("Acosh", 21, kFloat16To64).range(1, 10));
  specs.push_back(unary("Atanh", 21, kFloat16To64).range(-1, 1));
  specs.push_back(Op("IsNaN", 21)
                      .types("T1", kFloatTypes)
                      .types("T2", kBool)
                      .in("X", "T1").rank(0, 4).specials()
                      .out("Y", "T2"));
  specs.push_back(Op("IsInf", 21)
                      .types("T1", kFloatTypes)
                      .types("T2", kBool)
                      .attr_int("detect_negative", "1", {{0, 1}})
                      .attr_int("detect_positive", "1", {{0, 1}})
                      .in("X", "T1").rank(0, 4).specials()
                      .out("Y", "T2"));

  // ---- activations ----
  specs.push_back(unary("Relu", 21, kSignedAndFloat));
  specs.push_back(unary("LeakyRelu", 21, kFloatTypes).attr_float("alpha", "0.01", {{0, 1}}));
  specs.push_back(unary("Elu", 21, kFloat16To64).attr_float("alpha", "1.0", {{0.1, 2}}));
  specs.push_back(unary("Selu", 21, kFloat16To64)
                      .attr_float("alpha", "1.67326", {{0.5, 2}})
                      .attr_float("gamma", "1.0507", {{0.5, 2}}));
  specs.push_back(unary("Celu", 21, {DType::kFloat32}).attr_float("alpha", "1.0", {{0.1, 3}}));
  specs.push_back(unary("ThresholdedRelu", 21, kFloat16To64)
                      .attr_float("alpha", "1.0", {{-2, 2}}));
  specs.push_back(unary("Shrink", 21, kFloat16To64 + kSignedTypes + kUnsignedTypes)
                      .attr_float("lambd", "0.5", {{0, 2}})
                      .attr_float("bias", "0.0", {{-2, 2}})
                      .special("shrink")
                      .note("integers of every width: results beyond the type are tagged (the "
                            "spec leaves them open)"));
  specs.push_back(Op("Einsum", 21)
                      .types("T", {DType::kFloat16, DType::kFloat32, DType::kFloat64,
                                   DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64})
                      .attr_by_special("equation", AttrKind::kString, "").required()
                      .in("Inputs", "T").variadic(1, 3).rank(0, 4).specials()
                      .out("Output", "T")
                      .special("einsum")
                      .note("equations from a menu of what models write (matmul, batched and "
                            "attention products, transposes, sums, diagonals, outer products, "
                            "ellipses), with random sizes, spaces and implicit outputs"));
  specs.push_back(unary("Sigmoid", 21, kFloatTypes));
  specs.push_back(unary("HardSigmoid", 21, kFloat16To64)
                      .attr_float("alpha", "0.2", {{0, 1}})
                      .attr_float("beta", "0.5", {{0, 1}}));
  specs.push_back(unary("HardSwish", 21, kFloat16To64));
  specs.push_back(unary("Tanh", 21, kFloatTypes));
  specs.push_back(unary("Softplus", 21, kFloat16To64));
  specs.push_back(unary("Softsign", 21, kFloat16To64));
  specs.push_back(Op("Clip", 21)
                      .also_opsets({12})
                      .types("T", kNumericTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .in("input", "T").rank(0, 4).specials()
                      .in("min", "T").optional().rank(0, 0).specials().may_be_constant()
                      .in("max", "T").optional().rank(0, 0).specials().may_be_constant()
                      .out("output", "T")
                      .note("min > max happens (every element becomes max)"));
  for (const char* op_type : {"Softmax", "LogSoftmax", "Hardmax"}) {
    specs.push_back(Op(op_type, 21)
                        .also_opsets({11})
                        .types("T", kFloatTypes)
                        .type_since("T", DType::kBFloat16, 13)
                        .attr_int("axis", "1", {{-4, 3}}).until(12)
                        .attr_int("axis", "-1", {{-4, 3}}).since(13)
                        .in("input", "T").rank(1, 4).rank_exceeds_axis().specials()
                        .out("output", "T")
                        .note("before opset 13 the input is coerced to 2-D at axis"));
  }
}

}  // namespace rnnc::conformance
// clang-format on
