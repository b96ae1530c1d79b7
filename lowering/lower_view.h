// lower_view: a block of one node that only re-labels its input's elements -> a view of the
// input's buffer: no copy and no kernel, where a reference block would allocate, dispatch and
// copy (on a streaming model's chunk path: Silero's Squeeze/Unsqueeze/Gather; docs/lowering.md).
//
//   Squeeze, Unsqueeze, Reshape, Flatten, Identity: the input's elements under a new shape;
//   Gather with one index (a scalar or one-element indices tensor) along an axis whose outer
//   dims are all 1: a contiguous sub-range of the input.
//
// The output aliases the input (Tensor::alias); the executor drops those aliases after each run
// (ExecutionBlock::aliases_input) so the producer's buffer can be recycled, and a block whose
// output is bound to a caller's buffer copies into it. Operands (Squeeze/Unsqueeze axes,
// Reshape's shape, Gather's index) may be constants or run-time tensors, read every run; an
// operand the view cannot take (an invalid one, a Gather across outer dims, strings) runs the
// node's reference kernel instead, so results and error messages are the reference's.
//
// Throws kUnsupported (the node stays on a reference block) for anything else: more than one
// node, another op, a Gather whose indices are not one constant element, string data, a declared
// rank above 8.
#pragma once

#include <memory>
#include <vector>

#include "lowering/block.h"

namespace rnnc {

std::unique_ptr<ExecutionBlock> lower_view(const std::vector<const Node*>& nodes);

}  // namespace rnnc
