// lower_elementwise: a fusion group of elementwise nodes (graph_opt's rnnc.fusion_group without a
// MatMul/Gemm/Conv root) -> one Halide loop nest computing the group's sink, every intermediate
// inlined. Also what every other lowering shares about a group: its structure (FusionGroup), the
// Halide expression of each elementwise op (the epilogue of a GEMM or a convolution is the same
// expression tree with the root's accumulator as a leaf), and the group's cache-key text.
//
//   %a = Add (%x, %bias)          out(v0, v1) = sigmoid(x(v0, v1) + bias(v0)) * z(v0, v1)
//   %s = Sigmoid (%a)       ->    over loop dims (v0 = 128, v1 = seq*batch): the output's dims
//   %y = Mul (%s, %z)             merged wherever every operand broadcasts alike
//
// Broadcasting is resolved at lowering time from the symbolic shapes (halide_block.h views), the
// extents at run time. Scalar constants are compiled in; other constants are held by the block.
// Numerics: float32 throughout with Halide's exp/log/erf (accurate to the last bits of the
// mantissa); tanh, softplus and expm1 are written here so they vectorize (docs: see
// elementwise_op_expr). Halide compiles with fast-math flags (no NaN/inf assumed), so NaN and
// infinite *inputs* need not propagate as the reference kernels do; finite inputs, including
// results that overflow to infinity inside (exp(100)), are handled.
#pragma once

#include <Halide.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lowering/block.h"
#include "lowering/halide_cache.h"

namespace rnnc {

// The structure of a block's nodes as lowering sees it.
struct FusionGroup {
  std::vector<const Node*> nodes;            // in graph order
  const Node* sink = nullptr;                // the node whose output is the group's result
  const Node* root = nullptr;                // MatMul / Gemm / Conv / ConvTranspose: the group
                                             // is its epilogue
  const Node* normalizer = nullptr;          // a Softmax / LogSoftmax sink
  const Node* reduction = nullptr;           // a Reduce* node (alone in its group)
  std::set<const Node*> elementwise;         // members lowered as expressions
  std::vector<const Value*> operands;        // values read from outside, except inline scalars
  std::vector<const Value*> runtime_inputs;  // operands that are not constants, first-use order
};
// kUnsupported for a group lowering does not handle: an op outside the tables, more than one
// sink, more than one root, a normalizer or reduction that is not the sink, dtypes other than
// float32 (bool for conditions).
FusionGroup analyze_group(const std::vector<const Node*>& nodes);

// A constant (not a graph input a caller may override) of one element: compiled in as an
// immediate, its value part of the cache key.
bool is_inline_scalar(const Value* value);
bool is_held_constant(const Value* value);  // a constant the block holds (never a graph input)

// Whether elementwise_op_expr handles the node (op type, attributes, dtypes).
bool is_lowerable_elementwise(const Node& node);

// The Halide expression of one elementwise node on its inputs' expressions (an undefined Expr for
// an omitted optional input). Semantics are the reference kernels' (docs/ops/elementwise.md).
Halide::Expr elementwise_op_expr(const Node& node, const std::vector<Halide::Expr>& inputs);

// The expression of `value`: elementwise members expanded recursively, anything else (operands,
// the root's result) from `leaf`; inline scalars become immediates.
Halide::Expr group_expr(const FusionGroup& group, const Value* value,
                        const std::function<Halide::Expr(const Value*)>& leaf);

// Cache-key text: each member's op, opset, attributes and wiring, each operand's dtype and
// symbolic shape, inline scalars' values.
std::string group_signature(const FusionGroup& group);

// "add+sigmoid+mul": the members' op types, lower case, for kind().
std::string group_op_names(const FusionGroup& group);

// The elementwise group (no root, normalizer or reduction) as one block.
std::unique_ptr<ExecutionBlock> lower_elementwise_group(const FusionGroup& group,
                                                        HalideCache& cache);

// Schedules the pure loop nest of `func` (loop var v0 innermost, extent `inner_extent` when known)
// with the elementwise row of the table: vectorized and unrolled, specialized on a run-time
// extent. Shared with the output stages of reductions. Returns the loop over vectors (the same
// var in every specialization), where producers of one vector of outputs can be computed.
Halide::Var schedule_elementwise(Halide::Func func, const Halide::Var& v0, int lanes, int unroll,
                                 std::optional<int64_t> inner_extent);

}  // namespace rnnc
