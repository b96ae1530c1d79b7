// Generated inputs: what the quantization guard (quant/guard.h) measures a quantized model on when
// no calibration data is given. Real data is better (a generated signal only approximates what a
// model sees), so every caller says so in its report.
//
// Deterministic: the same graph and recipe give the same tensors in every process (a fixed seed,
// the 64-bit Mersenne Twister, whose output the standard specifies, and no library
// distributions), so every replica of a service makes the same quantization decision. Per input,
// by declared type:
//   float, a recurrent state (the input reaches an LSTM/GRU/RNN's initial_h or initial_c through
//             ops that only move data, e.g. Silero's `state`): zeros, as at a stream's start;
//   float:    an audio/feature-like signal in memory order, x[i] = a * (0.5 sin(2 pi f1 i + p1)
//             + 0.3 sin(2 pi f2 i + p2) + 0.2 n_i), n_i standard normal (Box-Muller), the
//             frequencies and phases drawn per sample and input, and the amplitude a cycling
//             through 1, 0.25, 0.05, 0.5 over the samples (loud, quiet, near-silent, medium);
//   integer:  valid indices: uniform in [0, n) where the input is the indices of a Gather whose
//             data has a known size n along the gathered axis, else in {0, 1};
//   bool:     alternating false, true.
// Symbolic dims take the recipe's sizes, else kDefaultDim.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/quantize_model.h"

namespace rnnc::quant {

struct InputRecipe {
  static constexpr int64_t kDefaultDim = 16;
  static constexpr uint64_t kSeed = 0x726e6e63;  // "rnnc"
  std::map<std::string, int64_t> dims;  // symbolic dim -> size (e.g. the run's --dim)
  int samples = 4;

  // "4 generated inputs (seed 0x726e6e63; dims batch=1, sequence=16 (default))": the recipe as
  // the report and the decision cache key state it, with each dim of `graph`'s inputs that took
  // the default marked.
  std::string describe(const Graph& graph) const;
};

// Throws kInvalidInput naming the input when its rank is unknown or a dim cannot be evaluated
// (e.g. "2 * seq" with no size for seq is fine; an unknown dim "?" is not).
std::vector<Sample> generate_inputs(const Graph& graph, const InputRecipe& recipe);

}  // namespace rnnc::quant
