// The IR text form: stable (same model -> same text, byte for byte) and diffable, for
// `rnnc info --ir`, --print-after passes, and golden tests. Example:
//
//   model ir_version=8 opset=14 producer="pytorch 1.13.1"
//   graph main_graph(%x: f32[seq, batch, 40]) {
//     const %W: f32[1, 512, 40] = {0.0123, -0.0456, ...} #9c1d2e3f
//     %Y: f32[seq, 1, batch, 128], _, _ = LSTM 'lstm0' (%x, %W, %R, %B) {hidden_size=128}
//     return %Y
//   }
//
// Constants print their first values and a content hash, so any change to their data shows up.
#pragma once

#include <string>

#include "ir/graph.h"

namespace rnnc {

std::string to_text(const Model& model);
std::string to_text(const Graph& graph);
// FNV-1a 64 over dtype, shape and bytes: the #hash printed for constants.
uint64_t tensor_hash(const Tensor& tensor);

}  // namespace rnnc
