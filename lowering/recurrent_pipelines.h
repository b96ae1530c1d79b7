// The Halide pipelines an LSTM, GRU or RNN node is lowered to (their schedule, RecurrentSchedule,
// is chosen in schedule_table.h). lower_recurrent.h marshals the weights into the layouts below
// and runs the time loop.
//
// Two pipelines per direction:
//   input projection  XW[m, n] = X[m, :] . Wt[:, n] + bias[n] for every row m = (t, b) of X at
//                     once: a register-tiled GEMM (no dependence along time: the parallel part);
//   recurrent step    one time step for every batch entry: the R . h(t-1) product, accumulated
//                     on top of XW[t], then clip, the gate activations and the state update, all
//                     in one loop over tiles of hidden units (the sequential part).
//
// Layouts (Halide dims innermost first). Hidden units are tiled: unit j = jo * T + ji with T the
// hidden tile, Hp = hidden_size padded to a multiple of T, G the gate blocks computed, N = G * Hp:
//   Wt     (ni, k, no)      the input weights transposed, n = (jo * G + g) * T + ji (a tile's
//                           gates side by side, so a step tile reads its XW in one run), stored
//                           in column panels n = no * P + ni (projection_panel)
//   bias   (n)              Wb + Rb folded (GRU linear_before_reset keeps the h gate's Rb apart)
//   XW     (n, m)           rows padded to the GEMM's row tile; seen by the step as
//                           (ji, g, jo, b, t)
//   R      (ji, g, k, jo)   the recurrent weights as [tile][k][gate][unit in tile]: one tile's
//                           weights are one contiguous run streamed from L2 in order, and the
//                           step keeps G * T / V vector accumulators in registers over k
//   h, c   (j, b)           state, padded to Hp (padding lanes are never read by R . h); the
//                           step reads h linearly for R . h and as (ji, jo, b) tiles elsewhere
// Padding rows of Wt, R and bias are zero. The step's tile dim (jo) has no pinned stride: with
// RecurrentSchedule::alternate_tiles the runtime passes every per-tile buffer reversed along it
// (negative stride) on odd steps, so a step starts on the R tiles the previous one read last.
//
// Everything a step computes with is compiled in as a constant and is part of the cache key:
// sizes, gate list, activations with alpha/beta, clip, input_forget, peepholes,
// linear_before_reset and the schedule. seq_length and batch_size are runtime extents. The keys
// start with a name ("recurrent step vN", "recurrent input projection vN") for readers of the
// cache (RNNC_DUMP_HALIDE's .key files); HalideCache adds the generator's identity to every key,
// so rnnc built from changed sources never loads a kernel an older generator wrote.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/quantization.h"
#include "lowering/activation_math.h"
#include "lowering/schedule_table.h"

namespace Halide {
struct Target;
}  // namespace Halide

namespace rnnc {

struct KernelTarget;

enum class RecurrentOp { kLstm, kGru, kRnn };

// One recurrent activation function with its (already defaulted) alpha and beta.
struct RecurrentActivation {
  enum class Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus,
  };
  Kind kind = Kind::kTanh;
  float alpha = 0;
  float beta = 0;
};
const char* activation_name(RecurrentActivation::Kind kind);

// The ONNX gate blocks of W, R and B.
constexpr int kLstmI = 0, kLstmO = 1, kLstmF = 2, kLstmC = 3;
constexpr int kGruZ = 0, kGruR = 1, kGruH = 2;

// Integer products (docs/quant.md): W and R quantized per output row (a scale and an optional
// zero point per gate row), the activation operands (X rows, h, GRU's rt (.) h) quantized as
// `activations` says, the dot products accumulated in int32 and dequantized before the gate
// arithmetic, which stays float. The operands are stored in the narrowest native width that
// holds both (ir/quantization.h's ProductWidths): weights and activations of at most 8 bits as
// u8 x s8, four products per int32 lane where the target has AVX512-VNNI (vpdpbusd) and two
// elsewhere (quantized_operands.h u8_products_per_lane); anything wider as s16 x s16, two
// products per lane (vpdpwssd / vpmaddwd).
struct RecurrentQuant {
  ActivationQuant activations;
  bool weight_zero_points = false;  // asymmetric weights: a zero point per row
  ProductWidths input_widths;       // W . x, over input_size
  ProductWidths state_widths;       // R . h, over hidden_size
  // Overflow mode: the pipelines also write `overflow` (int32 [4], this call's counts):
  // activations quantized above qmax, below qmin (clamped), sums whose exact value the declared
  // accumulation width (ActivationQuant::accumulation_bits) cannot hold, activations quantized.
  bool count_overflow = false;

  // s16 x s16 storage (a weight or the activations > 8 bits); both products share it.
  bool wide_operands() const { return input_widths.storage_bits == 16; }
  // The products summed into one int32 lane: 4 or 2 for u8 x s8, 2 for s16 x s16. The reduction
  // axis k is padded (packed_ko), and packed weights keep `lane()` consecutive k of one output
  // innermost.
  int lane() const { return input_widths.lane; }
  std::string key() const;
};

// A cell's integer products for weights W and R of w_bits and r_bits (asymmetric: with nonzero
// stored zero points, IntegerWeight::has_zero_points), and these activations; u8_lane as
// u8_products_per_lane gives it for the kernels' target.
RecurrentQuant recurrent_quant(const ActivationQuant& activations, int input_size, int hidden_size,
                               int w_bits, bool w_asymmetric, int r_bits, bool r_asymmetric,
                               int u8_lane);

// The packed extent of a product's k axis in lanes: K / lane rounded up, and up to whole chunks
// when the sum is chunked (the padding is zero).
int64_t packed_ko(const ProductWidths& widths);

// One direction of a node, as the step pipeline computes it.
struct RecurrentCell {
  RecurrentOp op = RecurrentOp::kLstm;
  int hidden_size = 0;
  int input_size = 0;
  // ONNX gate blocks computed, in buffer order: LSTM i, o, f, c (f dropped with input_forget),
  // GRU z, r, h, RNN the one block.
  std::vector<int> gates;
  // LSTM f, g, h; GRU f, g; RNN f.
  std::vector<RecurrentActivation> activations;
  std::optional<float> clip;
  bool input_forget = false;         // LSTM
  bool peepholes = false;            // LSTM with P
  bool linear_before_reset = false;  // GRU
  std::optional<RecurrentQuant> quant;  // integer products; float when absent

  // The buffer index of ONNX gate block `gate` (-1 when not computed).
  int gate_index(int gate) const;
  // The tanh fit of its sigmoid and tanh gates (lowering/activation_math.h): degree 3 where a
  // step quantizes h to 8 bits or fewer (its error far below one code), degree 4 in float steps
  // and with wider activations.
  Fit gate_fit() const;
  // Everything the step pipeline's code depends on, as text (a cache key).
  std::string step_key() const;
};


// The float projection's column panel: P = vector_width * gemm_vectors columns of Wt, one
// register tile wide. Wt is stored panel by panel, (ni, k, no) with n = no * P + ni, so a panel
// (P x K floats) is one contiguous run: the projection walks it in address order, which the
// hardware prefetchers follow. (Stored as (n, k) rows, a panel's k rows sit N floats apart: for
// N = 1024 every row maps to one L1 set, and the 4 KiB stride defeats the L2 streamer, so weights
// larger than L2 are fetched at DRAM latency, not bandwidth.)
int projection_panel(const RecurrentSchedule& schedule);

// Argument order of the projection pipeline's argv entry:
//   float:     x (k, m), wt (ni, k, no: panels of P = projection_panel columns), bias (n),
//              -> xw (n, m: projected rows)
//   quantized: x (k, m), wq (kl, ni, ko, no: int8 or int16, k = L ko + kl, K padded to
//              L = lane(), n = no * P + ni in panels as Wt's),
//              w_scale (n), w_colsum (n: int32, the sum of row n's wq), [w_zero (n: int32)],
//              bias (n), -> xw (n, m: projected rows), [overflow (4: int32, count_overflow)]
std::string input_projection_key(const RecurrentCell& cell, const RecurrentSchedule& schedule);
void compile_input_projection(const RecurrentCell& cell, const RecurrentSchedule& schedule,
                              const std::string& object_path, const std::string& function_name,
                              const KernelTarget& target);

// Argument order of the step pipeline's argv entry (bracketed ones only where the cell has them):
//   r (ji, g, k, jo), xw (ji, g, jo, b, t: the time rows projected, from the t dim's min),
//   step_time (b: int32, the time row of XW entry b reads at this step; negative: b is past
//   its sequence and keeps its state), h (k, b),
//   h_tiles (ji, jo, b: the same h), [c (ji, jo, b)], [peepholes (ji, jo, 3): i, o, f],
//   [rbh (ji, jo): GRU linear_before_reset's h-gate Rb], -> h_next (ji, jo, b), [c_next]
// Quantized: r is replaced by rq (kl, ji, g, ko, jo: int8 or int16, hidden padded to lane()),
// r_scale (ji, g, jo), r_colsum (ji, g, jo: int32), [r_zero (ji, g, jo: int32)], and after the
// outputs [overflow (4: int32, count_overflow)].
std::string recurrent_step_key(const RecurrentCell& cell, const RecurrentSchedule& schedule);
void compile_recurrent_step(const RecurrentCell& cell, const RecurrentSchedule& schedule,
                            const std::string& object_path, const std::string& function_name,
                            const KernelTarget& target);

}  // namespace rnnc
