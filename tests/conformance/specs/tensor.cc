// Shape and data-movement ops (docs/ops/tensor.md). These move elements of any type, so their
// data operands take every type rnnc holds (numeric, bool, string); the integer operands that
// describe shapes, axes, indices or bounds are drawn by named special cases, since their legal
// values depend on the data's shape.
#include "tests/conformance/spec.h"

// One operand or attribute per line reads as a table, which clang-format would undo.
// clang-format off
namespace rnnc::conformance {

namespace {

const std::vector<DType> kInt64 = {DType::kInt64};
const std::vector<DType> kIndexTypes = {DType::kInt32, DType::kInt64};
const std::vector<DType> kFloat16To64 = {DType::kFloat16, DType::kFloat32, DType::kFloat64};
const std::vector<DType> kNumericAndBool = kNumericTypes + std::vector<DType>{DType::kBool};
// OneHot's indices and depth as PyTorch and TensorFlow export them.
const std::vector<DType> kOneHotIndexTypes = {DType::kInt32, DType::kInt64, DType::kFloat32};
const std::vector<DType> kNumericWithoutBFloat16 = {
    DType::kFloat16, DType::kFloat32, DType::kFloat64, DType::kInt8,   DType::kInt16, DType::kInt32,
    DType::kInt64,   DType::kUInt8,   DType::kUInt16,  DType::kUInt32, DType::kUInt64};

// Y = op(X) for any element type.
Op movement(const std::string& op_type) {
  return Op(op_type, 21).types("T", kAllTypes).in("input", "T").rank(0, 4).specials();
}

}  // namespace

void add_tensor_specs(std::vector<OpSpec>& specs) {
  specs.push_back(Op("Cast", 21)
                      .types("T1", kAllTypes)
                      .types("T2", kAllTypes)
                      .attr_by_special("to", AttrKind::kInt, "").required()
                      .attr_int("saturate", "1", {{0, 1}})
                      .in("input", "T1").rank(0, 4).specials()
                      .out("output", "T2")
                      .special("cast")
                      .note("`to` is T2; strings read as numbers hold numbers (plain, scientific, "
                            "INF, NaN) and a few non-numbers only for string targets"));
  specs.push_back(Op("CastLike", 21)
                      .types("T1", kAllTypes)
                      .types("T2", kAllTypes)
                      .attr_int("saturate", "1", {{0, 1}})
                      .in("input", "T1").rank(0, 4).specials()
                      .in("target_type", "T2").rank(0, 2)
                      .out("output", "T2")
                      .special("cast"));
  specs.push_back(Op("Compress", 21)
                      .also_opsets({9})
                      .types("T", kAllButBFloat16)
                      .types("B", {DType::kBool})
                      .attr_int("axis", "(flatten)", {{-4, 3}})
                      .in("input", "T").rank(1, 4).rank_exceeds_axis().specials()
                      .in("condition", "B").rank(1, 1).by_special()
                      .out("output", "T")
                      .special("compress")
                      .note("condition as long as the axis or shorter; non-negative axis at "
                            "opset 9"));
  specs.push_back(Op("Concat", 21)
                      .types("T", kAllTypes)
                      .attr_int("axis", "", {{-4, 3}}).required()
                      .in("inputs", "T").variadic(1, 4).rank(1, 4).rank_exceeds_axis().specials()
                      .out("concat_result", "T")
                      .special("concat")
                      .note("all dims equal except the axis, which may be 0"));
  specs.push_back(Op("Constant", 21)
                      .types("T", kAllTypes)
                      .attr_by_special("value", AttrKind::kInt, "(one value_* is required)")
                      .out("output", "T").rank(0, 4)
                      .special("constant")
                      .note("value (a tensor of T), or value_float(s) / value_int(s) / "
                            "value_string(s) when T is float / int64 / string"));
  specs.push_back(Op("ConstantOfShape", 21)
                      .types("T1", kInt64)
                      .types("T2", kNumericAndBool)
                      .attr_by_special("value", AttrKind::kInt, "float32 0")
                      .in("input", "T1").rank(1, 1).by_special().may_be_constant()
                      .out("output", "T2")
                      .special("constant_of_shape"));
  specs.push_back(Op("DepthToSpace", 21)
                      .also_opsets({11, 7})
                      .types("T", kAllTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .attr_int("blocksize", "", {{1, 3}}).required()
                      .attr_string("mode", "DCR", {"DCR", "CRD"}).since(11)
                      .in("input", "T").rank(4, 4).specials()
                      .out("output", "T")
                      .special("depth_to_space")
                      .note("C a multiple of blocksize^2"));
  specs.push_back(Op("EyeLike", 21)
                      .types("T1", kNumericWithoutBFloat16 + std::vector<DType>{DType::kBool})
                      .types("T2", kNumericWithoutBFloat16 + std::vector<DType>{DType::kBool})
                      .attr_by_special("dtype", AttrKind::kInt, "the input's type")
                      .attr_int("k", "0", {{-4, 4}})
                      .in("input", "T1").rank(2, 2).specials()
                      .out("output", "T2")
                      .special("eye_like")
                      .note("dtype is T2's code, left out 1 time in 4 when T2 is T1's type"));
  specs.push_back(Op("Expand", 21)
                      .types("T", kAllTypes)
                      .types("I", kInt64)
                      .in("input", "T").rank(0, 4).specials()
                      .in("shape", "I").rank(1, 1).by_special().may_be_constant()
                      .out("output", "T")
                      .special("expand")
                      .note("the target broadcasts both ways with the input (1s keep its dims)"));
  specs.push_back(Op("Flatten", 21)
                      .types("T", kAllTypes)
                      .attr_int("axis", "1", {{-4, 4}})
                      .in("input", "T").rank(0, 4).specials()
                      .out("output", "T")
                      .special("flatten")
                      .note("axis in [-rank, rank]: when the drawn axis does not fit, one that "
                            "does is drawn"));
  specs.push_back(Op("Gather", 21)
                      .types("T", kAllTypes)
                      .types("Tind", kIndexTypes)
                      .attr_int("axis", "0", {{-4, 3}})
                      .in("data", "T").rank(1, 4).rank_exceeds_axis().specials()
                      .in("indices", "Tind").rank(0, 3).by_special().may_be_constant()
                      .out("output", "T")
                      .special("gather")
                      .note("indices in [-d, d-1] along the axis, negative ones included"));
  specs.push_back(Op("GatherElements", 21)
                      .types("T", kAllTypes)
                      .types("Tind", kIndexTypes)
                      .attr_int("axis", "0", {{-4, 3}})
                      .in("data", "T").rank(1, 4).rank_exceeds_axis().specials()
                      .in("indices", "Tind").rank(1, 4).by_special()
                      .out("output", "T")
                      .special("gather_elements"));
  specs.push_back(movement("Identity").out("output", "T"));
  specs.push_back(Op("GatherND", 21)
                      .also_opsets({12, 11})
                      .types("T", kAllTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .types("I", kInt64)
                      .attr_int("batch_dims", "0", {{0, 2}}).since(12)
                      .in("data", "T").rank(1, 4).specials()
                      .in("indices", "I").rank(1, 4).by_special()
                      .out("output", "T")
                      .special("gather_nd")
                      .note("batch_dims below the rank; indices share data's batch dims, then "
                            "tuple dims, then k in [1, rank - batch_dims]"));
  specs.push_back(Op("NonZero", 21)
                      .types("T", kNumericAndBool)
                      .types("I", kInt64)
                      .in("X", "T").rank(0, 4).specials()
                      .out("Y", "I")
                      .special("sparse")
                      .note("about half the elements are 0"));
  specs.push_back(Op("OneHot", 21)
                      .also_opsets({9})
                      .types("T1", kOneHotIndexTypes)
                      .types("T2", kOneHotIndexTypes)
                      .types("T3", {DType::kInt32, DType::kInt64, DType::kFloat32,
                                    DType::kString})
                      .attr_int("axis", "-1", {{-4, 3}})
                      .in("indices", "T1").rank(1, 3).by_special()
                      .in("depth", "T2").rank(0, 0).by_special().may_be_constant()
                      .in("values", "T3").rank(1, 1).by_special()
                      .out("output", "T3")
                      .special("one_hot")
                      .note("whole-number indices in [-depth - 2, depth + 1] (negative ones from "
                            "opset 11), so some rows are all off; axis within the output rank; "
                            "the types exporters write (of 11 x 11 x 13 valid ones), so that ONNX "
                            "Runtime's few OneHot kernels check a useful share"));
  specs.push_back(Op("Pad", 21)
                      .also_opsets({11, 7})
                      .types("T", kAllTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .type_since("T", DType::kBool, 13)
                      .type_since("T", DType::kString, 13)
                      .type_since("T", kSignedTypes + kUnsignedTypes, 11)
                      .types("I", kInt64)
                      .types("Tind", kIndexTypes)
                      .attr_string("mode", "constant", {"constant", "reflect", "edge", "wrap"})
                      .attr_by_special("pads", AttrKind::kInts, "").until(10)
                      .attr_float("value", "0.0", {{-2, 2}}).until(10)
                      .in("data", "T").rank(1, 4).specials()
                      .in("pads", "I").rank(1, 1).by_special().may_be_constant().since(11)
                      .in("constant_value", "T").optional().rank(0, 0).since(11)
                      .in("axes", "Tind").optional().rank(1, 1).by_special().since(18)
                      .out("output", "T")
                      .special("pad")
                      .note("negative pads crop; reflect pads stay below the dim (ONNX Runtime's "
                            "limit); wrap only from opset 19"));
  specs.push_back(Op("Range", 21)
                      .types("T", {DType::kFloat32, DType::kFloat64, DType::kInt16,
                                   DType::kInt32, DType::kInt64})
                      .in("start", "T").rank(0, 0).by_special()
                      .in("limit", "T").rank(0, 0).by_special()
                      .in("delta", "T").rank(0, 0).by_special()
                      .out("output", "T")
                      .special("range")
                      .note("delta != 0; at most about 40 elements, empty ranges included"));
  specs.push_back(Op("Reshape", 21)
                      .also_opsets({13})
                      .types("T", kAllTypes)
                      .types("I", kInt64)
                      .attr_int("allowzero", "0", {{0, 1}}).since(14)
                      .in("data", "T").rank(0, 4).specials()
                      .in("shape", "I").rank(1, 1).by_special().may_be_constant()
                      .out("reshaped", "T")
                      .special("reshape")
                      .note("a factorization of the element count, with -1 and 0 (copy) "
                            "entries"));
  specs.push_back(Op("ReverseSequence", 21)
                      .types("T", kAllButBFloat16)
                      .types("I", kInt64)
                      .attr_by_special("batch_axis", AttrKind::kInt, "1")
                      .attr_by_special("time_axis", AttrKind::kInt, "0")
                      .in("input", "T").rank(2, 4).specials()
                      .in("sequence_lens", "I").rank(1, 1).by_special()
                      .out("Y", "T")
                      .special("reverse_sequence")
                      .note("batch and time axes 0 and 1 either way; lengths in [0, time]"));
  specs.push_back(Op("Scatter", 10)
                      .types("T", kAllButBFloat16)
                      .types("Tind", kIndexTypes)
                      .attr_int("axis", "0", {{-4, 3}})
                      .in("data", "T").rank(1, 4).rank_exceeds_axis().specials()
                      .in("indices", "Tind").rank(1, 4).by_special()
                      .in("updates", "T").rank(1, 4).by_special()
                      .out("output", "T")
                      .special("scatter")
                      .note("deprecated in opset 11, so tested at opset 10"));
  specs.push_back(Op("ScatterElements", 21)
                      .also_opsets({16, 11})
                      .types("T", kAllTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .types("Tind", kIndexTypes)
                      .attr_int("axis", "0", {{-4, 3}})
                      .attr_string("reduction", "none", {"none", "add", "mul", "max", "min"})
                      .since(16)
                      .in("data", "T").rank(1, 4).rank_exceeds_axis().specials()
                      .in("indices", "Tind").rank(1, 4).by_special()
                      .in("updates", "T").rank(1, 4).by_special()
                      .out("output", "T")
                      .special("scatter")
                      .note("no repeated index with reduction none (the spec leaves the order "
                            "open); repeats with reductions; max/min from opset 18"));
  specs.push_back(Op("ScatterND", 21)
                      .also_opsets({16, 13, 11})
                      .types("T", kAllTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .types("I", kInt64)
                      .attr_string("reduction", "none", {"none", "add", "mul", "max", "min"})
                      .since(16)
                      .in("data", "T").rank(1, 4).specials()
                      .in("indices", "I").rank(1, 3).by_special()
                      .in("updates", "T").rank(1, 4).by_special()
                      .out("output", "T")
                      .special("scatter_nd")
                      .note("k-tuples of 1..rank indices, some negative; no repeated tuple with "
                            "reduction none (the spec leaves the order open); max/min from 18"));
  specs.push_back(movement("Shape")
                      .types("I", kInt64)
                      .attr_int("start", "0", {{-5, 5}})
                      .attr_int("end", "rank", {{-5, 5}})
                      .out("shape", "I"));
  specs.push_back(movement("Size").types("I", kInt64).out("size", "I"));
  specs.push_back(Op("Slice", 21)
                      .also_opsets({9})
                      .types("T", kAllTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .types("Tind", kIndexTypes)
                      .attr_by_special("starts", AttrKind::kInts, "").until(9)
                      .attr_by_special("ends", AttrKind::kInts, "").until(9)
                      .attr_by_special("axes", AttrKind::kInts, "all axes").until(9)
                      .in("data", "T").rank(1, 4).specials()
                      .in("starts", "Tind").rank(1, 1).by_special().may_be_constant().since(10)
                      .in("ends", "Tind").rank(1, 1).by_special().may_be_constant().since(10)
                      .in("axes", "Tind").optional().rank(1, 1).by_special().since(10)
                      .in("steps", "Tind").optional().rank(1, 1).by_special().since(10)
                      .out("output", "T")
                      .special("slice")
                      .note("bounds out of range and at the int32/int64 limits; steps +-1..3"));
  specs.push_back(Op("SpaceToDepth", 21)
                      .also_opsets({7})
                      .types("T", kAllTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .attr_int("blocksize", "", {{1, 3}}).required()
                      .in("input", "T").rank(4, 4).specials()
                      .out("output", "T")
                      .special("space_to_depth")
                      .note("H and W multiples of blocksize"));
  specs.push_back(Op("Split", 21)
                      .also_opsets({13, 11})
                      .types("T", kAllTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .types("I", kInt64)
                      .attr_int("axis", "0", {{-4, 3}})
                      .attr_by_special("split", AttrKind::kInts, "equal parts").until(12)
                      .attr_by_special("num_outputs", AttrKind::kInt, "").since(18)
                      .in("input", "T").rank(1, 4).rank_exceeds_axis().specials()
                      .in("split", "I").optional().rank(1, 1).by_special().since(13)
                      .out("outputs", "T").variadic(1, 4)
                      .special("split")
                      .note("explicit sizes (0 included), num_outputs (uneven last chunk) or "
                            "equal parts"));
  specs.push_back(Op("Squeeze", 21)
                      .also_opsets({11})
                      .types("T", kAllTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .types("I", kInt64)
                      .attr_by_special("axes", AttrKind::kInts, "every dim of 1").until(12)
                      .in("data", "T").rank(0, 4).specials()
                      .in("axes", "I").optional().rank(1, 1).by_special().may_be_constant()
                      .since(13)
                      .out("squeezed", "T")
                      .special("squeeze"));
  specs.push_back(Op("Tile", 21)
                      .types("T", kAllTypes)
                      .types("I", kInt64)
                      .in("input", "T").rank(0, 4).specials()
                      .in("repeats", "I").rank(1, 1).by_special().may_be_constant()
                      .out("output", "T")
                      .special("tile")
                      .note("repeats in [0, 3], one per dim"));
  specs.push_back(Op("Transpose", 21)
                      .types("T", kAllTypes)
                      .attr_by_special("perm", AttrKind::kInts, "reversed axes")
                      .in("data", "T").rank(0, 4).specials()
                      .out("transposed", "T")
                      .special("transpose"));
  specs.push_back(Op("Trilu", 21)
                      .types("T", kAllTypes)
                      .types("I", kInt64)
                      .attr_int("upper", "1", {{0, 1}})
                      .in("input", "T").rank(2, 4).specials()
                      .in("k", "I").optional().rank(0, 0).by_special().may_be_constant()
                      .out("output", "T")
                      .special("trilu")
                      .note("k in [-(N + 1), M + 1]: every diagonal, and beyond the matrix"));
  specs.push_back(Op("Unique", 21)
                      .types("T", kAllButBFloat16)
                      .types("I", kInt64)
                      .attr_int("axis", "(flatten)", {{-4, 3}})
                      .attr_int("sorted", "1", {{0, 1}})
                      .in("X", "T").rank(1, 4).rank_exceeds_axis().specials()
                      .out("Y", "T")
                      .out("indices", "I").optional()
                      .out("inverse_indices", "I").optional()
                      .out("counts", "I").optional()
                      .special("unique")
                      .note("values drawn from a few so that repeats occur"));
  specs.push_back(Op("Unsqueeze", 21)
                      .also_opsets({11})
                      .types("T", kAllTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .types("I", kInt64)
                      .attr_by_special("axes", AttrKind::kInts, "").until(12)
                      .in("data", "T").rank(0, 4).specials()
                      .in("axes", "I").rank(1, 1).by_special().may_be_constant().since(13)
                      .out("expanded", "T")
                      .special("unsqueeze"));
}

}  // namespace rnnc::conformance
// clang-format on
