// lower_copy: a block of one Slice (opset >= 10), Pad (opset >= 11), ScatterND, Transpose or
// Expand node -> strided copies into the output (no Halide pipeline: these are data movement only,
// and the small ones of a streaming model - Silero's STFT framing - are dominated by call
// overhead, which the reference kernels' per-element offset lists multiply).
//
//   Slice: the output is a strided window of the input; axes whose windows are contiguous merge,
//          so a slice along an outer axis is one memcpy per outer row. When the graph fixes the
//          input's shape and the operands are constants that select one contiguous run (Silero's
//          real and imaginary halves of its STFT), the block is a view: its output aliases the
//          input (ExecutionBlock::aliases_input, as lower_view.h), no copy.
//   Pad:   per axis, a table maps each output position to its input position (or to the fill)
//          following the mode; the interior of every output row is one memcpy, the border is read
//          through the table. Modes constant, edge, reflect and wrap.
//   Transpose: the input read with each output axis walking its perm axis's stride; Expand: the
//          input broadcast to the shape operand, a broadcast axis walking 0 (both the Slice's
//          strided copy, its axes merged where they chain).
//   ScatterND (reduction "none"): the data with each index tuple's slice of the updates written
//          over it; tuples whose slices follow one another are one memcpy (a frame written into
//          a stream cache). The block takes the data's buffer and writes only the slices when the
//          executor hands it over (ExecutionBlock::in_place_input: no other block reads the data,
//          which is not a graph input or output); otherwise one copy of the data, then the slices.
//
// The plans and copies are the C execution core's (core/copy_kernels.h), which ahead-of-time
// libraries run too (write_aot: an operand may be a run-time tensor of a static element count;
// Transpose's perm is an attribute).
//
// Operands (starts/ends/axes/steps, pads/constant_value/axes, Expand's shape) may be constants or
// run-time int32 / int64 tensors (Expand's: int64); they are read every run. The output is recycled
// across runs, and the only scratch (Pad's tables, ScatterND's slice offsets) comes from the
// block's workspace, so steady-state runs do not touch the heap. Input the fast path does not take
// - every invalid operand, string data, an element type of an unusual size - runs the node's
// reference kernel instead, so results and error messages are the reference's (docs/ops/tensor.md)
// by construction.
//
// Throws kUnsupported (the block stays on the reference kernel) for a block that is not exactly
// one such node, the older attribute forms, a declared rank above 8, string data, or a Pad mode
// the reference rejects.
#pragma once

#include <memory>
#include <vector>

#include "lowering/block.h"

namespace rnnc {

std::unique_ptr<ExecutionBlock> lower_copy(const std::vector<const Node*>& nodes);

}  // namespace rnnc
