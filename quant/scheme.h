// Quantization schemes and the configuration that assigns them to nodes (docs/quant.md).
//
// A scheme says, for one node, how its weights are quantized (bits, symmetric or not,
// granularity, how the range is chosen) and how its activations are (bits, symmetric or not,
// static coefficients from calibration or dynamic ones per run). A configuration holds a default
// scheme, overrides per op type and per node name, and nodes kept in float; it is read from JSON:
//
//   {
//     "default": {"weights": {"bits": 8, "symmetric": true, "granularity": "row"},
//                 "activations": {"bits": 8, "symmetric": false, "dynamic": true}},
//     "ops":     {"GRU": {"activations": {"dynamic": false, "method": "percentile"}}},
//     "nodes":   {"lstm_2": {"float": true}, "lstm_1": {"weights": {"bits": 4}}},
//     "guard":   {"max_error": 0.02, "time_limit_seconds": 60}
//   }
//
// Fields left out keep the enclosing level's value (node over op over default over the built-in
// defaults: weights int8 per-row symmetric min/max, activations dynamic 8-bit asymmetric).
#pragma once

#include <map>
#include <string>

#include "ir/quantization.h"

namespace rnnc {

class Node;

namespace quant {

// Which scales a weight gets, named for the weight's stored matrix (its last two axes: rows and
// columns): one for the whole tensor, one per row, one per column, or one per output channel
// (per gate block of LSTM/GRU/RNN weights; per output column of MatMul's B).
enum class Granularity { kTensor, kRow, kColumn, kChannel };
// How a range is chosen from data: its min/max, a percentile of |x| (outliers clipped), or the
// clipping threshold that minimizes the quantization's mean squared error.
enum class RangeMethod { kMinMax, kPercentile, kMse };

const char* granularity_name(Granularity granularity);
const char* range_method_name(RangeMethod method);

struct WeightScheme {
  int bits = 8;  // 2..16; <= 8 stored as int8 (uint8 when asymmetric), above as int32
  bool symmetric = true;
  Granularity granularity = Granularity::kRow;
  RangeMethod method = RangeMethod::kMinMax;
  double percentile = 99.99;
};

struct ActivationScheme {
  int bits = 8;
  bool symmetric = false;
  bool dynamic = true;
  RangeMethod method = RangeMethod::kMinMax;  // static coefficients only
  double percentile = 99.99;
  int accumulation_bits = 32;  // the declared width of the integer sums
};

struct NodeScheme {
  bool keep_float = false;
  WeightScheme weights;
  ActivationScheme activations;

  std::string to_string() const;  // one line, for reports
};

// The quantization guard (quant/guard.h): the error budget a quantized model must meet on its
// outputs against the float model, and the bound on the search for the nodes that stay wider.
struct GuardOptions {
  bool enabled = true;
  // Each float output's max |quantized - float| over the measured inputs, as a fraction of that
  // output's range (max - min of the float output) over the same inputs.
  double max_error = 0.02;
  double time_limit_seconds = 60;  // the search's wall-clock bound (then: every candidate float)
};

struct Config {
  NodeScheme default_scheme;
  // Overrides as JSON objects (kept as text so partial overrides merge field by field).
  std::map<std::string, std::string> op_overrides, node_overrides;
  // Whole schemes decided per node name (the guard's choice), beating every override.
  std::map<std::string, NodeScheme> decided;
  GuardOptions guard;

  // The scheme for `node`: default, then its op type's override, then its name's, then a
  // decided one.
  NodeScheme scheme_for(const Node& node) const;
};

// Throws kInvalidInput naming the field (e.g. "nodes.lstm_1.weights.bits = 20, must be in
// 2..16") for malformed JSON, unknown fields, wrong types or values out of range. `source` names
// where the text came from in messages.
Config parse_config(const std::string& json, const std::string& source = "quantization config");
Config read_config_file(const std::string& path);

}  // namespace quant
}  // namespace rnnc
