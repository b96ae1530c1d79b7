#include "tests/support/random.h"

namespace rnnc::testing {

Tensor random_tensor(const std::vector<int64_t>& shape, unsigned seed, float low, float high) {
  std::mt19937 rng(seed);
  return random_tensor(shape, rng, low, high);
}

Tensor random_tensor(const std::vector<int64_t>& shape, std::mt19937& rng, float low, float high) {
  std::uniform_real_distribution<float> uniform(low, high);
  Tensor tensor(DType::kFloat32, shape);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = uniform(rng);
  return tensor;
}

Tensor random_tensor(DType dtype, const std::vector<int64_t>& shape, std::mt19937& rng) {
  Tensor tensor(dtype, shape);
  std::uniform_int_distribution<int> value(-100, 100);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.set_double(i, value(rng));
  return tensor;
}

}  // namespace rnnc::testing
