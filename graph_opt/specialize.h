// specialize (graph_opt/specialize.cc) takes PassContext::fixed_inputs / fixed_dims; this is how
// the command line builds a fixed input's value from `--fix NAME=VALUE` text.
#pragma once

#include <string>

#include "ir/graph.h"

namespace rnnc {

// The value of `--fix NAME=TEXT` for the model input NAME: TEXT is a scalar in the input's element
// type (an integer, a float, or true/false/1/0 for bool), shaped as the input when every declared
// dim is 1 ([] or [1], ...); or @FILE, a tensor read from a .npy or ONNX TensorProto .pb file.
// kInvalidInput naming the input when NAME is not an input of `graph` (listing them) or TEXT does
// not fit it; the pass checks a file's tensor against the input.
Tensor parse_fixed_input(const Graph& graph, const std::string& name, const std::string& text);

// The graph input NAME; kInvalidInput listing the inputs when there is none.
Value* find_fixable_input(const Graph& graph, const std::string& name);

}  // namespace rnnc
