// expose_recurrent_state: makes the state of every forward LSTM, GRU and RNN node a graph
// input/output pair, so a streaming Session can carry it from one chunk to the next without a
// model that was exported for streaming.
//
//   before:  Y = LSTM(X, W, R, B, , h0)           h0 computed (PyTorch's zeros from Shape(X)),
//                                                 or omitted (zeros)
//   after:   Y, lstm.Y_h, lstm.Y_c = LSTM(X, W, R, B, , lstm.initial_h, lstm.initial_c)
//            graph inputs  lstm.initial_h, lstm.initial_c   f32[1, batch, hidden]
//            graph outputs lstm.Y_h, lstm.Y_c
//
// An initial state that already is a graph input keeps its name, and a Y_h/Y_c the node already
// has becomes a graph output under its own name. Reverse and bidirectional nodes are left alone:
// their reverse direction needs the whole sequence, so chunks cannot carry it. So are nodes whose
// initial state is computed from a graph input's data (the model carries its own state, as
// Silero's `state` input does: map it with CompiledModel::new_session). Run before
// graph_opt (the computation of a replaced initial state becomes dead and is removed).
// Returns the pairs (state output name, state input name) in node order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace rnnc {

std::vector<std::pair<std::string, std::string>> expose_recurrent_state(Model& model);

}  // namespace rnnc
