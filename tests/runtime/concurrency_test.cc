// Many threads, one compiled model: 8 threads each run their own session for a bounded time and
// every result must equal the one computed single-threaded beforehand, bit for bit (the same
// kernels on the same data). Run under ThreadSanitizer by scripts/sanitize.sh thread.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "tests/runtime/test_models.h"

namespace rnnc {
namespace {

constexpr int kThreads = 8;
constexpr int64_t kHidden = 48, kInput = 32;

void hammer(const std::shared_ptr<const CompiledModel>& model, double seconds) {
  // Per thread: its own input (a different sequence length and batch) and expected output.
  struct Work {
    std::vector<float> x;
    std::vector<int64_t> shape;
    std::vector<float> expected;
  };
  std::vector<Work> work(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    const int64_t seq = 3 + t, batch = 1 + t % 3;
    work[t].shape = {seq, batch, kInput};
    work[t].x = testing::random_vector(static_cast<size_t>(seq * batch * kInput), 100 + t);
    Session session = model->new_session();
    const auto& out = session.run({{"x", {ElementType::kFloat32, work[t].shape, work[t].x.data()}}});
    const float* y = static_cast<const float*>(out[0].tensor.data);
    work[t].expected.assign(y, y + seq * batch * kHidden);
  }
  std::atomic<long> runs{0}, mismatches{0};
  std::atomic<bool> failed_with_error{false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        Session session = model->new_session();
        const Work& w = work[t];
        const std::vector<NamedTensor> inputs = {
            {"x", {ElementType::kFloat32, w.shape, const_cast<float*>(w.x.data())}}};
        do {
          session.reset();
          const auto& out = session.run(inputs);
          if (std::memcmp(out[0].tensor.data, w.expected.data(), w.expected.size() * 4) != 0) {
            ++mismatches;
          }
          ++runs;
        } while (std::chrono::steady_clock::now() < deadline);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
        failed_with_error = true;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(failed_with_error);
  EXPECT_EQ(mismatches.load(), 0) << "of " << runs.load() << " runs";
  EXPECT_GE(runs.load(), kThreads);
  std::printf("%ld runs on %d threads, %ld mismatches\n", runs.load(), kThreads, mismatches.load());
}

TEST(Concurrency, EightThreadsShareOneSequentialModel) {
  hammer(testing::load_stack("LSTM", 2, kHidden, kInput), 1.5);
}

TEST(Concurrency, EightThreadsShareOnePipelinedModel) {
  ModelOptions options;
  options.threads = 2;
  options.plan = Plan::kPipeline;
  hammer(testing::load_stack("LSTM", 3, kHidden, kInput, options), 1.5);
}

TEST(Concurrency, EightThreadsShareOneAutoPlanModel) {
  // kAuto with threads: the sessions' first runs of each shape time both plans through the
  // model's shared PlanChooser, concurrently; every run, on either plan, must match.
  ModelOptions options;
  options.threads = 2;
  auto model = testing::load_stack("LSTM", 3, kHidden, kInput, options);
  ASSERT_EQ(model->plan(), Plan::kAuto);
  hammer(model, 1.5);
  EXPECT_NE(model->describe().find("seq=10, batch=2: "), std::string::npos) << model->describe();
}

TEST(Concurrency, EightThreadsShareOneParallelGruModel) {
  ModelOptions options;
  options.threads = 2;
  options.plan = Plan::kParallel;
  hammer(testing::load_stack("GRU", 2, kHidden, kInput, options), 1.0);
}

}  // namespace
}  // namespace rnnc
