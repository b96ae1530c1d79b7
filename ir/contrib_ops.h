// ONNX Runtime contrib operators (domain com.microsoft) rewritten at import into default-domain
// forms with the same meaning, so that every stage after import reads standard ONNX only.
//
//   DynamicQuantizeLSTM (what ONNX Runtime's quantize_dynamic writes for an LSTM): W
//   [dirs, input, 4H] and R [dirs, H, 4H] int8 or uint8 with a scale and zero point per
//   direction (per tensor) or per direction and gate row (per channel); the activations are
//   quantized by the operator at run time. Per direction d:
//
//       %w_d = DequantizeLinear (const Wq_d: [1, 4H, input] = W[d] transposed, scale_d, zp_d)
//       %r_d = DequantizeLinear (const Rq_d: [1, 4H, H], ...)          {axis = 1 per channel}
//       %y_d, %y_h_d, %y_c_d = LSTM (%x, %w_d, %r_d, B[d], sequence_lens, initial_h[d],
//                                     initial_c[d], P[d])   rnnc.quant_activations = dynamic u8
//
//   A forward or reverse node becomes one LSTM with the node's name and outputs. A bidirectional
//   one becomes a forward and a reverse LSTM ('<name>.forward', '<name>.reverse': each direction
//   has scales of its own, which one per-axis DequantizeLinear of [2, 4H, k] cannot hold) whose
//   Y, Y_h and Y_c are concatenated along the direction axis into the node's outputs. Constant
//   B and P are split here; initial_h and initial_c through Gather of index [d].
//
//   The operator leaves how activations are quantized to the runtime. rnnc's is its own dynamic
//   asymmetric 8-bit scheme, one scale per row (docs/quant.md); ONNX Runtime's kernel rounds
//   differently, so the two agree within the quantization's error, not bit for bit.
//
//   DynamicQuantizeMatMul (A, B, b_scale, b_zero_point, bias) and MatMulIntegerToFloat (A, B,
//   a_scale, b_scale, a_zero_point, b_zero_point, bias), ONNX Runtime's fusions of the chain its
//   quantize_dynamic writes for a MatMul, become that chain, which has the same meaning (one
//   scale and zero point for A, from its whole range in the first):
//
//       %aq, %as, %az = DynamicQuantizeLinear (%a)             (DynamicQuantizeMatMul only)
//       %y = Add (Mul (Cast (MatMulInteger (%aq, %b, %az, %bz)), Mul (%as, %bs)), %bias)
//
//   The MatMul's output keeps its name; graph_opt/fuse_integer_matmul runs the chain as one int8
//   GEMM. Needs default-domain opset 10 (kUnsupported below).
//
// DynamicQuantizeLSTM's requirements, each an error naming the node and input otherwise: the
// weights, scales and zero
// points are initializers (kUnsupported); DequantizeLinear exists (default-domain opset 10) and,
// for per-channel scales, takes an axis (opset 13) (kUnsupported); shapes and types as the
// operator's schema says (kInvalidModel). activation_alpha/beta on a bidirectional node are
// kUnsupported (their split between the directions depends on which activations take them).
#pragma once

#include "ir/graph.h"

namespace rnnc {

// Rewrites every com.microsoft node of `model` that has a default-domain form (nested graphs
// included) and returns how many. Runs after import builds the graph and before type
// inference; other com.microsoft nodes are left for inference to report as unsupported.
int expand_contrib_ops(Model& model);

}  // namespace rnnc
