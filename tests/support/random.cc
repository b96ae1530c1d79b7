#include "tests/support/random.h"

#include <random>

namespace rnnc::testing {

Tensor random_tensor(const std::vector<int64_t>& shape, unsigned seed, float low, float high) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  Tensor tensor(DType::kFloat32, shape);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = uniform(rng);
  return tensor;
}

}  // namespace rnnc::testing
