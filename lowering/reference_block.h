// The fallback block: runs its nodes with the reference kernels. Every node rnnc imports can run
// this way, so a model with an op lowering does not handle still runs (that op at reference
// speed, visible in `rnnc plan` as "reference <op>").
#pragma once

#include <memory>

#include "lowering/partition.h"

namespace rnnc {

std::unique_ptr<ExecutionBlock> make_reference_block(const BlockSpec& spec);

}  // namespace rnnc
