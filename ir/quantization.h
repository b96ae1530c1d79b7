// Activation quantization of one node: the scheme quant/ chooses for the inputs of a node's
// products (X and the recurrent state h of LSTM/GRU/RNN, the activation operand of MatMul/Gemm),
// and the plain arithmetic every path shares (the reference kernels' fake quantization, the Halide
// kernels' integer form, the quantizer's calibration).
//
// Weights are quantized in the graph itself, as standard ONNX: a constant integer tensor read
// through DequantizeLinear (per tensor or per axis), so other runtimes load the model. Activations
// have no ONNX form for a recurrent op's state, so the scheme is a node annotation
// (rnnc.quant_* attributes, written and read only here) that the ONNX writer drops and
// quant/ stores in the model's metadata to survive a round trip.
//
// Arithmetic (docs/quant.md): a row x[0..n) (one (t, b) row of X, one batch entry of h) is
//   q = clamp(round_half_even(x * inv_scale) + zero_point, qmin, qmax),  inv_scale = 1 / scale
//   x' = scale * (q - zero_point)
// with, for dynamic coefficients computed from the row itself,
//   asymmetric: [lo, hi] = [min(0, min x), max(0, max x)], scale = (hi - lo) / (2^bits - 1),
//               zero_point = clamp(round_half_even(-lo / scale), 0, 2^bits - 1)  (unsigned)
//   symmetric:  scale = max |x| / (2^(bits-1) - 1); zero_point = 2^(bits-1) for bits <= 8
//               (unsigned storage, what u8 x s8 dot products take), 0 above (int16 storage)
// and scale = 1 when the row is all zeros. Dynamic coefficients are per row, so a sequence run in
// chunks quantizes exactly as one whole run.
//
// One scheme instead takes its coefficients from the whole operand: per_tensor, the arithmetic of
// ONNX's DynamicQuantizeLinear (dynamic asymmetric 8-bit, one scale and zero point for the whole
// operand, and q = clamp(round_half_even(x / scale) + zero_point) with a divide, as that operator
// defines it). graph_opt/fuse_integer_matmul gives it to a MatMul that replaces
// DynamicQuantizeLinear + MatMulInteger, so the integer kernels compute what those ops do.
#pragma once

#include <cstdint>
#include <string>

namespace rnnc {

class Graph;
class Node;

struct ActivationQuant {
  int bits = 8;            // 2..16; <= 8 computed in 8-bit storage, 9..16 in 16-bit
  bool symmetric = false;  // bits > 8 requires symmetric (int16 storage, zero point 0)
  bool dynamic = true;
  // Dynamic coefficients from the whole operand (DynamicQuantizeLinear's), not per row; only for
  // MatMul and Gemm, dynamic asymmetric 8-bit.
  bool per_tensor = false;
  // Static coefficients (dynamic == false): for the op's input (X; A of MatMul/Gemm), and for
  // LSTM/GRU/RNN the recurrent state h (and GRU's reset state r (.) h); MatMul and Gemm leave
  // the state's at 0.
  float input_scale = 0, state_scale = 0;
  int32_t input_zero_point = 0, state_zero_point = 0;
  // The declared width of the integer sums (8..32). rnnc computes every sum exactly in a type
  // wide enough (ProductWidths); overflow mode counts the sums this width could not hold.
  int accumulation_bits = 32;

  bool wide() const { return bits > 8; }  // 16-bit storage
  int32_t qmin() const;
  int32_t qmax() const;
  // "dynamic asymmetric bits=8", "static symmetric bits=12 x=0x1p-7,0 h=0x1p-8,0", then
  // " per_tensor" when set and " accumulation=N" when N is not 32.
  std::string to_string() const;
};

// One row's coefficients.
struct RowQuant {
  float scale = 1;
  float inv_scale = 1;
  int32_t zero_point = 0;
};

// Throws kInvalidModel (naming `where`) for a bit width outside 2..16, bits > 8 without
// symmetric, per_tensor on anything but dynamic asymmetric 8 bits or with a state, or a static
// scale that is not finite and > 0 or a zero point outside [qmin, qmax]
// (the state's only when `has_state`: MatMul and Gemm have no state operand).
void validate(const ActivationQuant& quant, const std::string& where, bool has_state);

// The coefficients for values in [lo, hi] (widened to contain 0), by the rules above
// (dynamic_row_quant of a whole operand is its per_tensor coefficients).
RowQuant range_row_quant(float lo, float hi, const ActivationQuant& quant);
RowQuant dynamic_row_quant(const float* x, int64_t n, const ActivationQuant& quant);
RowQuant static_row_quant(float scale, int32_t zero_point);
int32_t quantize_value(float x, const RowQuant& row, const ActivationQuant& quant);
// out[i] = scale * (q(x[i]) - zero_point); out may alias x.
void fake_quantize_row(const float* x, int64_t n, const RowQuant& row, const ActivationQuant& quant,
                       float* out);

// Effective bit widths of one integer product, the sum over k of a stored activation a_k times
// a stored weight w_k (then corrected for zero points: docs/quant.md), and the native types the
// kernels compute it in. Operands of at most 8 bits are stored u8 x s8 (four products per int32
// lane where the kernels have vpdpbusd, else two: widened to 16 bits and summed in pairs by
// pmaddwd), anything wider s16 x s16 (two per lane: vpdpwssd / vpmaddwd). The bounds are
// worst cases over every value the schemes can store, so a kernel built from them cannot
// overflow: while K * max|a| * max|w| (and the zero-point terms, each no larger) fit int32 the
// whole sum is one int32 accumulation; past that, chunks of `chunk_terms` products are summed
// exactly in int32 and the chunks (and the corrections) in int64.
struct ProductWidths {
  int storage_bits = 8;       // 8: u8 x s8; 16: s16 x s16
  int lane = 4;               // products per int32 lane: 4 or 2 (u8 x s8), 2 (s16 x s16)
  int64_t activation_max = 0;  // max |stored activation|
  int64_t weight_max = 0;      // max |stored weight|
  int64_t terms = 0;           // K
  int sum_bits = 0;            // signed bits that hold K * max|a| * max|w|
  bool int64_sum = false;      // the corrected sum needs int64: chunks of int32 dot products
  int64_t chunk_terms = 0;     // products per int32 dot product (a multiple of lane; int64_sum)

  // "u8 x s8 -> s32 (sums need 24 bits)", "s16 x s16 -> s32 in chunks of 2 -> s64 (38 bits)"
  std::string to_string() const;
};

// weight_bits and weight_asymmetric describe the stored weight (asymmetric: a nonzero zero point
// once uint8 is shifted by -128 into int8, whose terms are bounded by 128); wide_operands forces
// s16 x s16 storage (another product of the node is wide); u8_lane is the products per int32
// lane of u8 x s8 storage, 4 or 2 (the target's: lowering/quantized_operands.h).
ProductWidths product_widths(const ActivationQuant& activations, int weight_bits,
                             bool weight_asymmetric, int64_t terms, bool wide_operands,
                             int u8_lane);

// The node's annotation, or nothing when its activations are float.
bool has_activation_quant(const Node& node);
// Throws kInvalidModel naming the node for a malformed annotation.
ActivationQuant activation_quant(const Node& node);
void set_activation_quant(Node& node, const ActivationQuant& quant);
void clear_activation_quant(Node& node);

// The annotations of a graph's nodes as model metadata (key kActivationQuantMetadata): one line
// "<node name>\t<ActivationQuant::to_string()>" per annotated node ("" when none), and back.
// Applying throws kInvalidModel naming the entry for an unknown or unnamed node or a bad scheme.
constexpr const char* kActivationQuantMetadata = "rnnc.quant_activations";
std::string activation_quant_metadata(const Graph& graph);
void apply_activation_quant_metadata(Graph& graph, const std::string& text);

}  // namespace rnnc
