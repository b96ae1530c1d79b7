// The sequence ops (SequenceConstruct, SequenceEmpty, SequenceAt, SequenceInsert, SequenceErase,
// SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap) and the optional ops (Optional,
// OptionalHasElement, OptionalGetElement); docs/ops/sequence.md. A test's graph inputs and outputs
// are tensors (the compiled path and ONNX Runtime's worker pass tensors only), so a sequence input
// is listed as its elements, captured operands the special case joins with SequenceConstruct (or
// replaces by SequenceEmpty for an empty sequence), and a sequence result leaves the graph as its
// SequenceLength and its elements by SequenceAt. Element types are `T`; the ONNX constraints on
// the sequence and optional types (S, O, V) follow from it.
#include "tests/conformance/spec.h"

// One operand or attribute per line reads as a table, which clang-format would undo.
// clang-format off
namespace rnnc::conformance {

namespace {

const std::vector<DType> kPositionTypes = {DType::kInt32, DType::kInt64};
// ONNX's sequence and optional types hold every tensor type but bfloat16 (and the complex types,
// which rnnc does not have).
const std::vector<DType>& kElementTypes = kAllButBFloat16;
// SequenceMap's bodies add, multiply and take the maximum.
const std::vector<DType> kMapTypes = {DType::kFloat16, DType::kFloat32, DType::kFloat64,
                                      DType::kInt8,    DType::kInt16,   DType::kInt32,
                                      DType::kInt64,   DType::kUInt8,   DType::kUInt16,
                                      DType::kUInt32,  DType::kUInt64};

}  // namespace

void add_sequence_specs(std::vector<OpSpec>& specs) {
  specs.push_back(Op("SequenceConstruct", 11)
                      .types("T", kElementTypes)
                      .in("inputs", "T").variadic(1, 4).rank(0, 4).specials()
                      .out("output_sequence", "T")
                      .special("sequence_construct")
                      .note("elements of one shape, of one rank, or of any ranks"));
  specs.push_back(Op("SequenceEmpty", 11)
                      .types("T", kElementTypes)
                      .attr_by_special("dtype", AttrKind::kInt, "1 (float)")
                      .in("x", "T").captured().rank(0, 4)
                      .out("output", "T")
                      .special("sequence_empty")
                      .note("dtype = T's code (left out half the time for float); graph outputs: "
                            "the length and SequenceAt(SequenceInsert(output, x), 0), which needs "
                            "the element type dtype gives"));
  specs.push_back(Op("SequenceAt", 11)
                      .types("T", kElementTypes)
                      .types("I", kPositionTypes)
                      .in("input_sequence", "T").captured().variadic(1, 4).rank(0, 4).specials()
                      .in("position", "I").rank(0, 1).by_special()
                      .out("tensor", "T")
                      .special("sequence_at")
                      .note("position in [-n, n - 1], a scalar or of shape [1]"));
  specs.push_back(Op("SequenceInsert", 11)
                      .types("T", kElementTypes)
                      .types("I", kPositionTypes)
                      .in("input_sequence", "T").captured().variadic(1, 4).rank(0, 4).specials()
                      .in("tensor", "T").rank(0, 4).specials()
                      .in("position", "I").optional().rank(0, 1).by_special()
                      .out("output_sequence", "T")
                      .special("sequence_insert")
                      .note("0 to 4 elements (SequenceEmpty for 0); position in [-n, n] "
                            "(n appends) or left out (appends)"));
  specs.push_back(Op("SequenceErase", 11)
                      .types("T", kElementTypes)
                      .types("I", kPositionTypes)
                      .in("input_sequence", "T").captured().variadic(1, 4).rank(0, 4).specials()
                      .in("position", "I").optional().rank(0, 1).by_special()
                      .out("output_sequence", "T")
                      .special("sequence_erase")
                      .note("position in [-n, n - 1] or left out (the last element)"));
  specs.push_back(Op("SequenceLength", 11)
                      .types("T", kElementTypes)
                      .types("I", {DType::kInt64})
                      .in("input_sequence", "T").captured().variadic(1, 4).rank(0, 4)
                      .out("length", "I")
                      .special("sequence_length")
                      .note("0 to 4 elements (SequenceEmpty for 0)"));
  specs.push_back(Op("SplitToSequence", 11)
                      .types("T", kElementTypes)
                      .types("I", kPositionTypes)
                      .attr_by_special("axis", AttrKind::kInt, "0")
                      .attr_int("keepdims", "1", {{0, 1}})
                      .in("input", "T").rank(1, 4).specials()
                      .in("split", "I").optional().rank(0, 1).by_special()
                      .out("output_sequence", "T")
                      .special("split_to_sequence")
                      .note("axis in [-r, r - 1]; split a scalar in [1, d + 1] (a shorter last "
                            "piece when it does not divide d) or 1 to 4 lengths summing to d, "
                            "positive or (one time in four) some 0"));
  specs.push_back(Op("ConcatFromSequence", 11)
                      .types("T", kElementTypes)
                      .attr_by_special("axis", AttrKind::kInt, "").required()
                      .attr_int("new_axis", "0", {{0, 1}})
                      .in("input_sequence", "T").captured().variadic(1, 4).rank(0, 4).specials()
                      .out("concat_result", "T")
                      .special("concat_from_sequence")
                      .note("elements agreeing except along axis in [-r, r - 1], or of one shape "
                            "with new_axis = 1 and axis in [-r - 1, r]; scalars only with "
                            "new_axis = 1"));
  specs.push_back(Op("SequenceMap", 17)
                      .types("T", kMapTypes)
                      .attr_by_special("body", AttrKind::kGraph, "").required()
                      .in("input_sequence", "T").captured().variadic(1, 4).rank(0, 3)
                      .in("additional_sequence", "T").captured().optional().variadic(1, 4)
                          .rank(0, 3)
                      .in("additional_tensor", "T").optional().rank(0, 3)
                      .out("out_sequence", "T").variadic(1, 2)
                      .special("sequence_map")
                      .note("additional_inputs: a sequence as long as input_sequence, a tensor "
                            "broadcasting to every element, both (in either order) or none; body: "
                            "Add, Mul or Max of the element with each additional input (with "
                            "itself without any), and a second output Shape(element)"));
  specs.push_back(Op("Optional", 15)
                      .types("T", kElementTypes)
                      .attr_by_special("type", AttrKind::kType, "")
                      .in("input", "T").optional().rank(0, 4).specials()
                      .in("input_sequence", "T").captured().optional().variadic(1, 3).rank(0, 4)
                      .out("output", "T")
                      .special("optional")
                      .note("input a tensor or a sequence, or left out with type a tensor or "
                            "sequence type (an empty optional); graph outputs: "
                            "OptionalHasElement, and the value by OptionalGetElement"));
  specs.push_back(Op("OptionalHasElement", 15).also_opsets({18})
                      .types("T", kElementTypes)
                      .types("B", {DType::kBool})
                      .in("x", "T").captured().optional().rank(0, 4)
                      .in("input_sequence", "T").captured().optional().variadic(1, 3).rank(0, 4)
                      .out("output", "B")
                      .special("optional_has_element")
                      .note("input Optional(x), Optional(sequence), an empty optional of a tensor "
                            "or sequence type; from opset 18 also x, a sequence, or left out"));
  specs.push_back(Op("OptionalGetElement", 15).also_opsets({18})
                      .types("T", kElementTypes)
                      .in("x", "T").captured().optional().rank(0, 4).specials()
                      .in("input_sequence", "T").captured().optional().variadic(1, 3).rank(0, 4)
                      .out("output", "T")
                      .special("optional_get_element")
                      .note("input Optional(x) or Optional(sequence); from opset 18 also x or a "
                            "sequence itself"));
}

}  // namespace rnnc::conformance
// clang-format on
