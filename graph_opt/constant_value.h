// What the folding passes (fold_constants, fold_shape_chains) may treat as a known tensor, and how
// a node output they have computed becomes one.
#pragma once

#include "ir/graph.h"

namespace rnnc {

// True for an initializer or folded value. A graph input with a default value is not known: a
// caller may override it.
bool is_known_constant(const Value* value);
// The known tensor of `value`, or nullptr (also for nullptr).
const Tensor* known_constant(const Value* value);

// Replaces node output `value` by an initializer of the same name holding `data`, rewiring every
// use and every graph output that returns it (including returns of nested graphs, which hold no
// use record). Keeping the name keeps graph output names and the printed IR readable. The producer
// is removed once none of its outputs is left. `value` is destroyed; the new value is returned.
Value* replace_with_constant(Value* value, Tensor data);

}  // namespace rnnc
