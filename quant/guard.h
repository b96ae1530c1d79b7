// The quantization guard: measures what quantization does to a model's outputs before the
// quantized model is used, and keeps wider the nodes that would push them beyond an error budget.
//
// Every entry point (rnnc quantize, rnnc run --quantize, ModelOptions::quantization_config) runs
// guard_search on the specialized, optimized float model, then quantize_model with the decisions
// (apply_decisions):
//
//   budget   each float output's max |quantized - float| <= max_error (default 0.02) x that
//            output's range (max - min of the float output over the measured inputs; max |value|
//            when the range is 0, then 1). Non-float outputs are not measured. The search meets
//            half the budget (the target) on the inputs it measures, a 2x margin for inputs it
//            did not see.
//   inputs   the calibration samples when given, else generate_inputs (quant/generated_inputs.h).
//   measure  both models on the reference evaluator: the quantized one fake-quantizes exactly
//            the operands the integer kernels compute on (docs/quant.md), so its outputs equal
//            the compiled kernels' up to float summation order.
//   search   1. every candidate (a node quantize_model would quantize) at its configured scheme;
//               if that meets the budget, done (one quantized model measured);
//            2. else each node's sensitivity: the error with only that node quantized at its
//               configured scheme, all others float;
//            3. in rounds, most sensitive first, each node one step down its ladder (recurrent:
//               configured -> 12-bit weights and activations, the s16 kernels -> float;
//               MatMul/Gemm: configured -> float, their wide products have no integer kernel),
//               measuring the model after each step, until it meets the target;
//            4. then each demoted node whose sensitivity is within the target, least sensitive
//               first, one step back up if the model still meets the target there.
//            The search stops at GuardOptions::time_limit_seconds; a target not met by then makes
//            every candidate float (the float model meets any budget).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "quant/generated_inputs.h"
#include "quant/quantize_model.h"
#include "quant/scheme.h"

namespace rnnc::quant {

// A candidate's step on its ladder.
enum class Precision { kConfigured, kWide, kFloat };
const char* precision_name(Precision precision);  // "configured", "wide", "float"

// One output's error over the measured inputs.
struct OutputError {
  std::string output;
  double max_abs_error = 0;
  double range = 0;  // the budget's denominator (see above)
  double fraction() const { return max_abs_error / range; }
};

struct ErrorMeasurement {
  std::vector<OutputError> outputs;  // float outputs, graph order
  double worst_fraction() const;     // max over outputs of fraction(); 0 without outputs
  // "0.41% of range (max |q - float| 0.0123 on 'logits', range 3)"
  std::string to_string() const;
};

struct NodeDecision {
  std::string node, op_type;
  Precision precision = Precision::kConfigured;
  std::string scheme;         // the chosen scheme (NodeScheme::to_string, "float")
  double sensitivity = -1;    // fraction with only this node quantized; -1: not measured
  std::string reason;         // why this precision
};

struct GuardResult {
  bool enabled = true;
  double max_error = 0.02;
  std::string inputs;      // "3 calibration samples" or InputRecipe::describe
  bool generated = false;  // inputs are generated (the report says real data is better)
  std::vector<NodeDecision> nodes;
  // Every candidate at its configured scheme, and as decided.
  ErrorMeasurement before, after;
  bool met = true;          // `after` meets the target (half the budget)
  bool timed_out = false;   // the time limit ended the search (then every candidate is float)
  int evaluations = 0;      // quantized models measured
  double seconds = 0;

  std::map<std::string, Precision> precisions() const;
  // One line for `rnnc run --quantize`: "2 quantized as configured, 1 float (MatMul 'mel'); max
  // error 0.41% of output range (target 1%, half the 2% budget) (every node as configured: 48%);
  // measured on 4 generated inputs (...)"
  std::string summary() const;
  // The report section: budget, inputs, per-output errors before and after, per node the
  // precision, scheme, sensitivity and why.
  std::string to_markdown() const;
  // A text form for the decision cache (runtime/), and back; parse throws kIo naming `source`
  // for text it did not write.
  std::string serialize() const;
  static GuardResult parse(const std::string& text, const std::string& source);
};

// Decides each candidate's precision for `config` (whose `guard` holds the budget and the time
// limit; the search does not run when guard.enabled is false). `model` is the float model after
// graph_opt, as quantize_model takes it; unnamed candidates get names (quantize_model's rule), so
// the decisions name every node. Samples: `calibration` when not empty, else generated by
// `recipe`. Throws kInvalidInput when the model cannot run on the samples (naming the inputs and
// dims the generated ones used).
GuardResult guard_search(Model& model, const Config& config,
                         const std::vector<Sample>& calibration, const InputRecipe& recipe);

// Names the unnamed main-graph nodes quantize_model may quantize (quantize_model's rule: the op
// type, made unique), so decisions can name them; guard_search does this itself, a caller that
// applies a decision made earlier calls it first.
void name_quantizable_nodes(Model& model);

// `config` with each decided node's scheme (Config::decided) for `model`'s nodes.
Config apply_decisions(const Model& model, const Config& config,
                       const std::map<std::string, Precision>& precisions);

}  // namespace rnnc::quant
