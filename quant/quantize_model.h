// quantize_model: rewrites a float model into its quantized form, node by node as a Config says.
//
// For each LSTM/GRU/RNN node whose W and R are float32 initializers and whose scheme is not
// "float": W and R become DequantizeLinear of integer initializers (per tensor, or per axis:
// opset 13), and the node is annotated with its activation quantization (ir/quantization.h):
//
//   const %W: f32[1, 512, 64]                 const %W_q: i8[1, 512, 64], %W_scale: f32[512]
//   %Y, ... = LSTM (%X, %W, %R, %B)    ->     %W_dq = DequantizeLinear (%W_q, %W_scale) {axis=1}
//                                             %Y, ... = LSTM {rnnc.quant_activations = "..."}
//                                                   (%X, %W_dq, %R_dq, %B)
//
// Static activation coefficients are chosen from calibration data: the reference evaluator runs
// the float model on each sample, and a node's X rows and its hidden states (its Y output, and
// initial_h) give the input and state ranges, reduced by the scheme's RangeMethod.
//
// A MatMul/Gemm whose B is a 2-D float32 initializer gets the same rewrite of B (per output
// channel or per tensor: a row/column granularity along K becomes per output channel, noted in the
// report) and the annotation for A; static coefficients calibrate on A. Other nodes stay float and
// say why in the report (Conv: no integer kernel yet). Only the main graph's nodes are rewritten: a
// recurrent node inside an If branch or a Loop/Scan body is reported as float, for an If with
// the inputs its condition depends on (`--fix sr=VALUE`), since fixing them lets graph_opt inline
// the branch. So run the graph_opt pipeline with the model's specialization first (as
// CompiledModel::load and `rnnc quantize --fix` do): it inlines decided Ifs and folds computed
// weights (Unsqueeze of a constant) into the float32 initializers this rewrite needs.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/scheme.h"

namespace rnnc::quant {

using Sample = std::map<std::string, Tensor>;  // graph input name -> tensor

struct NodeReport {
  std::string node, op_type;
  bool quantized = false;
  std::string scheme;  // NodeScheme::to_string, or why the node stays float
  // The integer products' native types and the bits their sums need (ProductWidths), quantized
  // nodes only: "W.x u8 x s8 -> s32 (sums need 24 bits); R.h ...".
  std::string arithmetic;
  int64_t weight_bytes_before = 0, weight_bytes_after = 0;
  // Over the calibration samples, each output of the node in the quantized model against the
  // float model's (filled by measure_error; negative when not measured).
  double max_abs_error = -1, mean_abs_error = -1;
  // |quantized - float| histogram of the node's outputs: counts in [0, 1e-4), [1e-4, 1e-3),
  // [1e-3, 1e-2), [1e-2, 1e-1), [1e-1, inf).
  std::vector<int64_t> error_histogram;
};

struct Report {
  std::vector<NodeReport> nodes;
  std::string to_markdown() const;
};

using Progress = std::function<void(const std::string& stage, size_t done, size_t total)>;

// Throws kInvalidInput when a node's scheme needs calibration (static activations) and
// `calibration` is empty, or a sample does not fit the model (the evaluator's input errors);
// kUnsupported when the model's opset cannot express the scheme (per-axis scales before 13).
Report quantize_model(Model& model, const Config& config, const std::vector<Sample>& calibration,
                      const Progress& progress = nullptr);

// Fills each quantized node's error fields: both models run on the samples (reference evaluator)
// and the node's outputs are compared.
void measure_error(const Model& float_model, const Model& quantized_model,
                   const std::vector<Sample>& samples, Report& report,
                   const Progress& progress = nullptr);

}  // namespace rnnc::quant
