// Seeded random tensors for tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "ir/tensor.h"

namespace rnnc::testing {

// float32 values drawn uniformly from [low, high) by std::mt19937(seed).
Tensor random_tensor(const std::vector<int64_t>& shape, unsigned seed, float low = -1,
                     float high = 1);

// float32 values drawn uniformly from [low, high) by the caller's generator, so a test's tensors
// come from one seeded stream.
Tensor random_tensor(const std::vector<int64_t>& shape, std::mt19937& rng, float low = -1,
                     float high = 1);

// Integers in [-100, 100] in any numeric dtype (bool: != 0; exact in float16), drawn by the
// caller's generator.
Tensor random_tensor(DType dtype, const std::vector<int64_t>& shape, std::mt19937& rng);

}  // namespace rnnc::testing
