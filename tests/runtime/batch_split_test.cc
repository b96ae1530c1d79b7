// Batch slices (runtime/batch_split.h): at 2 threads, a chain of recurrent layers or a recurrent
// layer alone runs as batch slices, each thread every layer over its own entries. Each entry's
// arithmetic is the one-thread run's (same kernels, same per-entry order), so every output and
// carried state equals the one-thread sequential run's bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "lowering/kernel_target.h"
#include "runtime/batch_split.h"
#include "tests/runtime/test_models.h"

namespace rnnc {
namespace {

using testing::load_stack;
using testing::random_vector;

constexpr int64_t kHidden = 32, kInput = 24;

// ---- the rule ----------------------------------------------------------------------------------

std::vector<int64_t> slices_of(int64_t batch, int64_t unit, double weight_bytes, int threads) {
  int64_t bounds[kMaxSlices + 1];
  const int slices = batch_slices(batch, unit, weight_bytes, threads, bounds);
  return std::vector<int64_t>(bounds, bounds + (slices > 0 ? slices + 1 : 0));
}

TEST(BatchSplitRule, SplitsAtWholeStepTiles) {
  EXPECT_EQ(slices_of(64, 4, 256 << 10, 2), (std::vector<int64_t>{0, 32, 64}));
  EXPECT_EQ(slices_of(8, 4, 256 << 10, 2), (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(slices_of(12, 4, 256 << 10, 2), (std::vector<int64_t>{0, 4, 12}));
  EXPECT_EQ(slices_of(10, 1, 256 << 10, 2), (std::vector<int64_t>{0, 5, 10}));
  EXPECT_EQ(slices_of(64, 4, 256 << 10, 4), (std::vector<int64_t>{0, 16, 32, 48, 64}));
}

TEST(BatchSplitRule, KeepsAtLeastOneStepTileAndTwoEntriesPerSlice) {
  EXPECT_TRUE(slices_of(4, 4, 256 << 10, 2).empty());  // slices of 2 would step padded tiles
  EXPECT_TRUE(slices_of(3, 1, 256 << 10, 2).empty());  // a slice of 1 steps another kernel
  EXPECT_EQ(slices_of(12, 4, 256 << 10, 4), (std::vector<int64_t>{0, 4, 8, 12}));
}

TEST(BatchSplitRule, NeverSplitsOneThreadOrAStepWhoseWeightsExceedL2) {
  EXPECT_TRUE(slices_of(64, 4, 256 << 10, 1).empty());
  EXPECT_TRUE(slices_of(64, 4, 2.0 * static_cast<double>(host_l2_bytes()), 2).empty());
}

// ---- runs --------------------------------------------------------------------------------------

// Every output of `runs` runs of one session (the later ones start from the carried state).
std::vector<std::vector<float>> run_outputs(const std::string& op, int layers, int threads,
                                            Plan plan, int64_t seq, int64_t batch,
                                            const std::string& quantization = "") {
  ModelOptions options;
  options.threads = threads;
  options.plan = plan;
  options.quantization_config = quantization;
  options.quantization_guard = false;
  auto model = load_stack(op, layers, kHidden, kInput, options);
  Session session = model->new_session();
  std::vector<std::vector<float>> results;
  for (int run = 0; run < 2; ++run) {
    std::vector<float> x = random_vector(static_cast<size_t>(seq * batch * kInput), 11 + run);
    const auto& outputs =
        session.run({{"x", {ElementType::kFloat32, {seq, batch, kInput}, x.data()}}});
    for (const NamedTensor& output : outputs) {
      const float* data = static_cast<const float*>(output.tensor.data);
      results.emplace_back(data, data + output.tensor.element_count());
    }
  }
  return results;
}

void expect_split_equals_one_thread(const std::string& op, int layers, Plan plan, int64_t batch,
                                    const std::string& quantization = "") {
  SCOPED_TRACE(op + " x" + std::to_string(layers) + " batch " + std::to_string(batch) + " " +
               quantization);
  const auto one = run_outputs(op, layers, 1, Plan::kSequential, 9, batch, quantization);
  const auto two = run_outputs(op, layers, 2, plan, 9, batch, quantization);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    ASSERT_EQ(one[i].size(), two[i].size());
    EXPECT_EQ(std::memcmp(one[i].data(), two[i].data(), one[i].size() * 4), 0) << "output " << i;
  }
}

// The stacks here split: batch 16 and 12 give every slice a whole step tile (at most 4 entries
// on every table), and R (16 KiB) fits any L2.
TEST(BatchSlices, PipelinedChainEqualsTheOneThreadRunBitwise) {
  ASSERT_EQ(slices_of(16, 4, 4.0 * 4 * kHidden * kHidden, 2).size(), 3u);
  expect_split_equals_one_thread("LSTM", 4, Plan::kPipeline, 16);
  expect_split_equals_one_thread("GRU", 3, Plan::kPipeline, 12);
}

// Quantized layers (int8 products): every X row and every entry's h has its own scale and the
// dot products are exact integer sums, so slices equal the one-thread run too.
TEST(BatchSlices, QuantizedChainEqualsTheOneThreadRunBitwise) {
  expect_split_equals_one_thread("LSTM", 4, Plan::kPipeline, 16, "default");
  expect_split_equals_one_thread("GRU", 2, Plan::kParallel, 12, "default");
}

TEST(BatchSlices, LayerAloneEqualsTheOneThreadRunBitwise) {
  expect_split_equals_one_thread("LSTM", 1, Plan::kParallel, 16);
  expect_split_equals_one_thread("RNN", 2, Plan::kParallel, 13);
}

}  // namespace
}  // namespace rnnc
