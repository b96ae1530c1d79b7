// If, Loop and Scan. Their behaviour lives in nested graphs, which the special cases build from a small
// menu of bodies over an outer-scope value `x` (a graph input the node does not take, listed here
// as a captured operand so its types and ranks are covered like any input).
#include "tests/conformance/spec.h"

// One operand or attribute per line reads as a table, which clang-format would undo.
// clang-format off
namespace rnnc::conformance {

void add_control_flow_specs(std::vector<OpSpec>& specs) {
  specs.push_back(Op("If", 21)
                      .types("T", kNumericTypes)
                      .types("B", {DType::kBool})
                      .attr_by_special("then_branch", AttrKind::kGraph, "").required()
                      .attr_by_special("else_branch", AttrKind::kGraph, "").required()
                      .in("x", "T").captured().rank(0, 4).specials()
                      .in("cond", "B").rank(0, 0)
                      .out("outputs", "T").variadic(1, 2)
                      .special("if")
                      .note("branches: Identity, Add(x, x), Mul(x, x) or Max(x, x); a second "
                            "output is x itself"));
  specs.push_back(Op("Loop", 21)
                      .types("T", kNumericTypes)
                      .types("I", {DType::kInt64})
                      .types("B", {DType::kBool})
                      .attr_by_special("body", AttrKind::kGraph, "").required()
                      .in("x", "T").captured().rank(0, 3).specials()
                      .in("M", "I").optional().rank(0, 0).by_special()
                      .in("cond", "B").optional().rank(0, 0)
                      .in("v_initial", "T").variadic(1, 2).rank(0, 3)
                      .out("v_final_and_scan_outputs", "T").variadic(1, 4)
                      .special("loop")
                      .note("body: cond_out = iteration < k, v_out = v + x, scan output v; "
                            "M in [0, 5], or cond alone (k bounds the trips)"));
  specs.push_back(Op("Scan", 21)
                      .types("T", {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64})
                      .attr_by_special("body", AttrKind::kGraph, "").required()
                      .attr_by_special("num_scan_inputs", AttrKind::kInt, "").required()
                      .attr_by_special("scan_input_axes", AttrKind::kInts, "0 per input")
                      .attr_by_special("scan_input_directions", AttrKind::kInts, "0 per input")
                      .attr_by_special("scan_output_axes", AttrKind::kInts, "0 per output")
                      .attr_by_special("scan_output_directions", AttrKind::kInts, "0 per output")
                      .in("state", "T").rank(0, 2).specials()
                      .in("xs", "T").rank(1, 3)
                      .out("final_state_and_scan_outputs", "T").variadic(2, 2)
                      .special("scan")
                      .note("one state and one scan input of L in [1, 4] steps along a random "
                            "axis and direction; body: s_out = s + x_t or max(s, x_t), scan "
                            "output s_out * x_t, stacked along a random axis and direction"));
}

}  // namespace rnnc::conformance
// clang-format on
