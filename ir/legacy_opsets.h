// Legacy default-domain opsets (1 to 6) normalized at import into opset-7 forms.
//
// Every stage after import (shape inference, the reference evaluator, graph_opt, quant, lowering)
// reads opsets kMinOpset (7) to kMaxOpset only. A model declaring an older default-domain opset is
// rewritten here, node by node, into the form the same computation has at opset 7; then each node
// and the model declare opset 7, so ONNX export writes a model valid for what it holds. What each
// op's legacy form is rewritten to (docs/ir.md, "Legacy opsets"):
//
//   Add/Sub/Mul/Div/Pow/And/Or/Xor/Equal/Greater/Less (< 7): `broadcast`/`axis` -> numpy
//       broadcasting, B unsqueezed with trailing 1-dims when `axis` does not align it to the end
//         %y = Add (%a: f32[2, 3, 4], %b: f32[3]) {axis=1, broadcast=1}
//       ->
//         %b1: f32[3, 1] = Unsqueeze (%b) {axes=[1]}
//         %y = Add (%a, %b1)
//   Gemm (< 7): `broadcast` dropped (C broadcasts unidirectionally at 7);
//   PRelu (< 7): a per-channel slope [C] unsqueezed to [C, 1, ..., 1];
//   BatchNormalization, Dropout (< 7): `is_test` dropped (test mode is one output at 7), and
//       BatchNormalization's `spatial` = 0 with per-channel parameters (the same computation);
//   Concat (< 4): the default axis 1 written out; Reshape (< 5): attribute `shape` -> input;
//   Pad (< 2): `paddings` -> `pads`; Split (< 2): input `split` -> attribute; Cast (< 6): `to` as a
//   type name -> its number; Upsample (< 7): `height_scale`/`width_scale` -> `scales`, "bilinear"
//   -> "linear"; RNN/GRU/LSTM (< 7): `output_sequence` dropped; every op (< 7): `consumed_inputs`
//   dropped. Tile (< 6, inputs `tiles` and `axis`) is kUnsupported.
//
// Errors name the node at its declared (legacy) opset and the field, as import does.
#pragma once

#include "ir/graph.h"

namespace rnnc {

// For a model whose default-domain opset is below 7: rewrites every default-domain node (nested
// graphs included) into its opset-7 form, declares the nodes and the model at opset 7, and infers
// the main graph's types on the way (legacy broadcasting with `axis` needs the operand ranks).
// Must run after the graph is built and before type inference; does nothing at opset 7 or later.
// Returns the number of nodes whose form changed.
int normalize_legacy_opsets(Model& model);

}  // namespace rnnc
