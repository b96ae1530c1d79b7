// Seeded random tensors for tests.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace rnnc::testing {

// float32 values drawn uniformly from [low, high) by std::mt19937(seed).
Tensor random_tensor(const std::vector<int64_t>& shape, unsigned seed, float low = -1,
                     float high = 1);

}  // namespace rnnc::testing
