// If and Loop. Their behaviour lives in nested graphs, which the special cases build from a small
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
}

}  // namespace rnnc::conformance
// clang-format on
