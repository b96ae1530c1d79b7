// The quantization ops (docs/ops/quant.md). Parameter shapes (per tensor, per axis, per row or
// column, per output channel), matrix and window geometry are the special cases'
// (special_cases_quant.cc); value ranges are chosen so outputs both saturate and land inside the
// type's range.
//
// Opsets: ONNX 1.12's versions (QuantizeLinear/DequantizeLinear 13 and 10, the others 10 or 11);
// the later versions differ only in types rnnc's unit tests cover (tests/unit/quant_ops_test.cc).
#include "tests/conformance/spec.h"

// One operand or attribute per line reads as a table, which clang-format would undo.
// clang-format off
namespace rnnc::conformance {

namespace {

const std::vector<DType> kFloat = {DType::kFloat32};
const std::vector<DType> kInt32 = {DType::kInt32};
const std::vector<DType> kEightBit = {DType::kInt8, DType::kUInt8};
// Integer operands and zero points are drawn over their whole type (the range is clipped to it).
const Interval kWholeType = {-2147483648.0, 2147483647.0};

}  // namespace

void add_quant_specs(std::vector<OpSpec>& specs) {
  specs.push_back(Op("QuantizeLinear", 13)
                      .also_opsets({10})
                      .types("T1", {DType::kFloat32, DType::kInt32})
                      .types("S", kFloat)
                      .types("T2", kEightBit)
                      .attr_by_special("axis", AttrKind::kInt, "1").attr_since(13)
                      .in("x", "T1").rank(0, 4).range(-200, 200)
                      .in("y_scale", "S").range(0.5, 3).may_be_constant()
                      .in("y_zero_point", "T2").optional().ranges({kWholeType}).may_be_constant()
                      .out("y", "T2")
                      .special("linear_quantization")
                      .note("per tensor, or per axis from opset 13; some x on a grid of halves "
                            "with scales 0.5, 1, 2 (ties); int8 outputs need the zero point"));
  specs.push_back(Op("DequantizeLinear", 13)
                      .also_opsets({10})
                      .types("T", {DType::kInt8, DType::kUInt8, DType::kInt32})
                      .types("S", kFloat)
                      .attr_by_special("axis", AttrKind::kInt, "1").attr_since(13)
                      .in("x", "T").rank(0, 4).ranges({kWholeType})
                      .in("x_scale", "S").range(0.001, 2).may_be_constant()
                      .in("x_zero_point", "T").optional().ranges({kWholeType}).may_be_constant()
                      .out("y", "S")
                      .special("linear_quantization")
                      .note("per tensor, or per axis from opset 13; int32 x has no zero point "
                            "(absent or 0)"));
  specs.push_back(Op("DynamicQuantizeLinear", 11)
                      .types("T1", kFloat)
                      .types("T2", {DType::kUInt8})
                      .in("x", "T1").rank(0, 4).normal(0, 3)
                      .out("y", "T2")
                      .out("y_scale", "T1")
                      .out("y_zero_point", "T2")
                      .special("dynamic_quantization")
                      .note("x straddling 0, all positive or all negative (zero point 0 and 255)"));
  specs.push_back(Op("MatMulInteger", 10)
                      .types("T1", kEightBit)
                      .types("T2", kEightBit)
                      .types("T3", kInt32)
                      .in("A", "T1").rank(1, 4).ranges({kWholeType})
                      .in("B", "T2").rank(1, 4).ranges({kWholeType}).may_be_constant()
                      .in("a_zero_point", "T1").optional().ranges({kWholeType}).may_be_constant()
                      .in("b_zero_point", "T2").optional().ranges({kWholeType}).may_be_constant()
                      .out("Y", "T3")
                      .special("matmul_integer")
                      .note("numpy.matmul shapes; zero points per tensor, per row of A, per "
                            "column of B"));
  specs.push_back(Op("QLinearMatMul", 10)
                      .types("T1", kEightBit)
                      .types("T2", kEightBit)
                      .types("T3", kEightBit)
                      .types("S", kFloat)
                      .in("a", "T1").rank(1, 4).ranges({kWholeType})
                      .in("a_scale", "S").range(0.002, 0.05).may_be_constant()
                      .in("a_zero_point", "T1").ranges({kWholeType}).may_be_constant()
                      .in("b", "T2").rank(1, 4).ranges({kWholeType}).may_be_constant()
                      .in("b_scale", "S").range(0.002, 0.05).may_be_constant()
                      .in("b_zero_point", "T2").ranges({kWholeType}).may_be_constant()
                      .in("y_scale", "S").range(0.01, 0.5).may_be_constant()
                      .in("y_zero_point", "T3").ranges({kWholeType}).may_be_constant()
                      .out("y", "T3")
                      .special("qlinear_matmul")
                      .note("numpy.matmul shapes; a per tensor or per row, b per tensor or per "
                            "column, y per tensor"));
  specs.push_back(Op("ConvInteger", 10)
                      .types("T1", kEightBit)
                      .types("T2", kEightBit)
                      .types("T3", kInt32)
                      .attr_by_special("dilations", AttrKind::kInts, "1 per spatial axis")
                      .attr_int("group", "1", {{1, 2}})
                      .attr_by_special("kernel_shape", AttrKind::kInts, "w's spatial dims")
                      .attr_by_special("pads", AttrKind::kInts, "0 per begin and end")
                      .attr_by_special("strides", AttrKind::kInts, "1 per spatial axis")
                      .in("x", "T1").rank(3, 4).ranges({kWholeType})
                      .in("w", "T2").rank(3, 4).ranges({kWholeType}).may_be_constant()
                      .in("x_zero_point", "T1").optional().ranges({kWholeType}).may_be_constant()
                      .in("w_zero_point", "T2").optional().ranges({kWholeType}).may_be_constant()
                      .out("y", "T3")
                      .special("integer_conv")
                      .note("explicit pads (auto_pad is Conv's, covered there); w_zero_point per "
                            "tensor or per output channel"));
  specs.push_back(Op("QLinearConv", 10)
                      .types("T1", kEightBit)
                      .types("T2", kEightBit)
                      .types("T3", kEightBit)
                      .types("S", kFloat)
                      .types("T4", kInt32)
                      .attr_by_special("dilations", AttrKind::kInts, "1 per spatial axis")
                      .attr_int("group", "1", {{1, 2}})
                      .attr_by_special("kernel_shape", AttrKind::kInts, "w's spatial dims")
                      .attr_by_special("pads", AttrKind::kInts, "0 per begin and end")
                      .attr_by_special("strides", AttrKind::kInts, "1 per spatial axis")
                      .in("x", "T1").rank(3, 4).ranges({kWholeType})
                      .in("x_scale", "S").range(0.002, 0.05).may_be_constant()
                      .in("x_zero_point", "T1").ranges({kWholeType}).may_be_constant()
                      .in("w", "T2").rank(3, 4).ranges({kWholeType}).may_be_constant()
                      .in("w_scale", "S").range(0.002, 0.05).may_be_constant()
                      .in("w_zero_point", "T2").ranges({kWholeType}).may_be_constant()
                      .in("y_scale", "S").range(0.01, 0.5).may_be_constant()
                      .in("y_zero_point", "T3").ranges({kWholeType}).may_be_constant()
                      .in("B", "T4").optional().range(-20000, 20000).may_be_constant()
                      .out("y", "T3")
                      .special("integer_conv")
                      .note("w's parameters per tensor or per output channel, x's and y's per "
                            "tensor"));
}

}  // namespace rnnc::conformance
