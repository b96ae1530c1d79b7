// clone_model: a copy of a model whose graph structure (values, nodes, attributes, subgraphs) is
// new and whose constant tensors share their storage with the original's.
//
// Constants are immutable once in a graph: passes replace a value's constant (set_constant, a new
// tensor), never write into one. So a copy that a pass sequence rewrites (the quantization guard
// quantizes a copy of the float model per trial) needs no second copy of the weights: the copy
// costs the graph's structure, not the bytes of its weights.
#pragma once

#include <memory>

#include "ir/graph.h"

namespace rnnc {

std::unique_ptr<Model> clone_model(const Model& model);

}  // namespace rnnc
