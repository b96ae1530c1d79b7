// lower_concat: a block of one Concat node -> strided copies into the output (no Halide pipeline:
// it is data movement only, and a small one - the stacked states of a multi-layer LSTM - is
// dominated by call overhead). The output is recycled across runs and nothing is allocated per
// run, so a model ending in Concat keeps steady-state runs allocation-free. The copy is the C
// execution core's rn_concat (core/copy_kernels.h), which ahead-of-time libraries run too.
//
// Throws kUnsupported (the block stays on the reference kernel) for strings, inputs of unknown
// rank, or a block that is not exactly one Concat.
#pragma once

#include <memory>
#include <vector>

#include "lowering/block.h"

namespace rnnc {

std::unique_ptr<ExecutionBlock> lower_concat(const std::vector<const Node*>& nodes);

}  // namespace rnnc
