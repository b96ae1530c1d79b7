// LSTM, GRU, RNN (docs/ops/recurrent.md). The weight shapes, sequence_lens and the activation
// lists depend on each other (num_directions, gate count, hidden_size, layout), so the
// "recurrent" special case (special_cases_recurrent.cc) shapes every operand; the tables below
// say what each operand and attribute may be. Weights are random (the official tests' constant
// W = R = 0.1 cannot tell the gates apart).
#include "tests/conformance/spec.h"

// One operand or attribute per line reads as a table, which clang-format would undo.
// clang-format off
namespace rnnc::conformance {

namespace {

const std::vector<DType> kRecurrentTypes = {DType::kFloat16, DType::kFloat32, DType::kFloat64};

// The attributes the three ops share.
Op recurrent_op(const std::string& op_type) {
  return Op(op_type, 14)
      .also_opsets({7})
      // Rounding differences compound over up to 40 steps, and the discontinuous activations
      // (ThresholdedRelu, Relu's kink) amplify them: 10x the per-type tolerance.
      .tolerance_scale(10)
      .types("T", kRecurrentTypes)
      .types("T1", {DType::kInt32})
      // Names drawn from the 11 recurrent activations, per direction, in mixed case; alpha/beta
      // lists of random length (so later activations keep their defaults).
      .attr_by_special("activations", AttrKind::kStrings,
                       "LSTM Sigmoid,Tanh,Tanh; GRU Sigmoid,Tanh; RNN Tanh (per direction)")
      .attr_by_special("activation_alpha", AttrKind::kFloats,
                       "per activation: LeakyRelu 0.01, HardSigmoid 0.2, Elu 1.0, ...")
      .attr_by_special("activation_beta", AttrKind::kFloats,
                       "per activation: HardSigmoid 0.5, Affine 0.0, ScaledTanh 1.0")
      .attr_float("clip", "none", {{0.25, 4.0}})  // > 0; clamps gate pre-activations
      .attr_string("direction", "forward", {"forward", "reverse", "bidirectional"})
      .attr_int("hidden_size", "R's last dim", {{1, 8}})  // omitted 1 in 4: inferred from R
      .attr_int("layout", "0", {{0, 1}})
      .since(14)
      // X's values include the boundary classes (0, -0, huge, tiny, NaN, Inf); the weights are
      // N(0, 0.5), so gates see both their saturated and their linear ranges.
      .in("X", "T").rank(3, 3).no_zero_dims().specials()
      .in("W", "T").rank(3, 3).normal(0, 0.5).may_be_constant()
      .in("R", "T").rank(3, 3).normal(0, 0.5).may_be_constant()
      .in("B", "T").optional().rank(2, 2).normal(0, 0.5).may_be_constant()
      // Mixed lengths in [0, seq_length], including 0 and the full length.
      .in("sequence_lens", "T1").optional().rank(1, 1).by_special()
      .in("initial_h", "T").optional().rank(3, 3);
}

}  // namespace

void add_recurrent_specs(std::vector<OpSpec>& specs) {
  specs.push_back(recurrent_op("LSTM")
                      .attr_int("input_forget", "0", {{0, 1}})
                      .in("initial_c", "T").optional().rank(3, 3)
                      .in("P", "T").optional().rank(2, 2).normal(0, 0.5).may_be_constant()
                      .out("Y", "T").optional()
                      .out("Y_h", "T").optional()
                      .out("Y_c", "T").optional()
                      .special("recurrent"));
  specs.push_back(recurrent_op("GRU")
                      .attr_int("linear_before_reset", "0", {{0, 1}})
                      .out("Y", "T").optional()
                      .out("Y_h", "T").optional()
                      .special("recurrent"));
  specs.push_back(recurrent_op("RNN")
                      .out("Y", "T").optional()
                      .out("Y_h", "T").optional()
                      .special("recurrent"));
}

}  // namespace rnnc::conformance
// clang-format on
