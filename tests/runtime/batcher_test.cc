// StreamBatcher: many streams' chunks in batched runs, each stream's outputs against the same
// chunks run alone in its own Session.
//
// Tolerances: a recurrent block steps a batch of one with its own pipeline and a larger batch
// with a batch-tiled one (lowering/recurrent_pipelines.h, batch_tile), whose sums round
// differently in the last bits: the stacked LSTM's streams are compared within
// |batched - alone| <= 1e-5 + 1e-4 |alone| (measured: a few 1e-8). Silero's batched runs equal
// generic batch-1 runs bit for bit; a Session's runs take Silero's program specialized for batch
// 1 (runtime/shape_specializer.h), which the batcher's runs never do, and that program's state
// differs from the generic one's by up to ~1e-4: with specialization Silero's streams are
// compared within 1e-4 + 1e-3 |alone|. The tests print the largest difference seen;
// docs/runtime.md states it for users.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <future>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>

#include "ir/onnx_export.h"
#include "ir/text_parser.h"
#include "rnnc/rnnc.h"
#include "tests/runtime/test_models.h"
#include "tests/support/compare.h"
#include "tests/support/error_message.h"

namespace rnnc {
namespace {

using testing::error_message;
using testing::load_stack;
using testing::random_vector;

constexpr int64_t kInput = 8, kHidden = 32;
const std::string kSileroPath = RNNC_MODELS_DIR "/silero_vad_16k_op15.onnx";

// One chunk of a stream: its inputs' data and shapes (names fixed per model).
struct Chunk {
  std::vector<std::vector<float>> data;
  std::vector<std::vector<int64_t>> shapes;
};

// What a model's streams feed: how to build a chunk's NamedTensors.
struct StreamModel {
  std::shared_ptr<const CompiledModel> model;
  std::vector<std::pair<std::string, std::string>> state;
  std::vector<std::string> float_inputs;  // names of Chunk::data
  std::vector<NamedTensor> constant_inputs;
  std::function<Chunk(std::mt19937&)> make_chunk;

  std::vector<NamedTensor> inputs(Chunk& chunk) const {
    std::vector<NamedTensor> named = constant_inputs;
    for (size_t i = 0; i < float_inputs.size(); ++i) {
      named.push_back(
          {float_inputs[i], {ElementType::kFloat32, chunk.shapes[i], chunk.data[i].data()}});
    }
    return named;
  }
};

std::shared_ptr<const CompiledModel> stack_model() {
  return load_stack("LSTM", 2, kHidden, kInput);
}

StreamModel lstm_streams() {
  StreamModel streams;
  streams.model = stack_model();
  streams.float_inputs = {"x"};
  streams.make_chunk = [](std::mt19937& rng) {
    // Lengths from a small set, so chunks of equal length meet in batches.
    const int64_t seq = std::array<int64_t, 3>{2, 3, 5}[rng() % 3];
    Chunk chunk;
    chunk.shapes = {{seq, 1, kInput}};
    chunk.data = {random_vector(static_cast<size_t>(seq * kInput), static_cast<uint32_t>(rng()))};
    return chunk;
  };
  return streams;
}

int64_t silero_rate = 16000;

// Silero as loaded by default (sessions run its program specialized for batch 1), or with
// shape specialization off.
std::shared_ptr<const CompiledModel> silero_model(bool specialize = true) {
  static std::shared_ptr<const CompiledModel> models[2];
  std::shared_ptr<const CompiledModel>& model = models[specialize];
  if (!model) {
    ModelOptions options;
    options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
    options.specialize_shapes = specialize;
    model = CompiledModel::load(kSileroPath, options);
  }
  return model;
}

StreamModel silero_streams(bool specialize = true) {
  StreamModel streams;
  streams.model = silero_model(specialize);
  streams.state = {{"stateN", "state"}};
  streams.float_inputs = {"input"};
  streams.constant_inputs = {{"sr", {ElementType::kInt64, {}, &silero_rate}}};
  streams.make_chunk = [](std::mt19937& rng) {
    // A tone with a random pitch and level, some noise: speech-like enough to move the state.
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    const float pitch = 100 + 300 * uniform(rng), level = 0.5f * uniform(rng);
    Chunk chunk;
    chunk.shapes = {{1, 512}};
    chunk.data = {std::vector<float>(512)};
    for (size_t i = 0; i < 512; ++i) {
      chunk.data[0][i] = level * std::sin(2 * static_cast<float>(M_PI) * pitch * i / 16000.0f) +
                         0.05f * (uniform(rng) - 0.5f);
    }
    return chunk;
  };
  return streams;
}

// Each output of a batched chunk against the same chunk run alone, within `tolerance`;
// largest_difference keeps the largest absolute difference seen.
constexpr testing::Tolerance kBatchTiled{1e-4, 1e-5}, kSpecialized{1e-3, 1e-4}, kExact{0, 0};
double largest_difference = 0;
void expect_equal(const std::vector<CompiledModel::Output>& batched,
                  const std::vector<NamedTensor>& alone, const std::string& where,
                  testing::Tolerance tolerance = kBatchTiled) {
  ASSERT_EQ(batched.size(), alone.size()) << where;
  for (size_t o = 0; o < alone.size(); ++o) {
    EXPECT_EQ(batched[o].name, alone[o].name) << where;
    const Tensor got = Tensor::borrow(static_cast<DType>(batched[o].type), batched[o].shape,
                                      const_cast<void*>(batched[o].data()));
    const Tensor want = Tensor::borrow(static_cast<DType>(alone[o].tensor.type),
                                       alone[o].tensor.shape, alone[o].tensor.data);
    const testing::Comparison comparison = testing::compare_tensors(got, want, tolerance);
    EXPECT_TRUE(comparison.ok) << where << ", output " << alone[o].name << ": "
                               << comparison.message;
    largest_difference = std::max(largest_difference, comparison.max_abs_diff);
  }
}

// A stream's script: its chunks, and before which chunk it resets (-1: never).
struct Script {
  std::vector<Chunk> chunks;
  int reset_before = -1;
};

// 64 streams from 8 threads: each thread keeps up to 3 streams open at a time, opening the next
// when one closes, and submits each stream's chunks a few at a time without waiting for them (so
// a stream has several chunks queued); every result equals the stream's own Session run.
void run_streams(const StreamModel& streams, testing::Tolerance tolerance, int stream_count = 64) {
  constexpr int kThreads = 8;
  std::mt19937 rng(7);
  std::vector<Script> scripts(static_cast<size_t>(stream_count));
  for (int s = 0; s < stream_count; ++s) {
    const int chunks = 3 + static_cast<int>(rng() % 6);
    for (int c = 0; c < chunks; ++c) scripts[s].chunks.push_back(streams.make_chunk(rng));
    if (s % 8 == 3) scripts[s].reset_before = chunks / 2;  // a reset mid-run
  }
  BatcherOptions options;
  options.state = streams.state;
  options.max_batch = 16;
  options.max_wait_us = 1000;
  StreamBatcher batcher(streams.model, options);
  std::vector<std::vector<std::vector<CompiledModel::Output>>> results(
      static_cast<size_t>(stream_count));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 local(static_cast<uint32_t>(100 + t));
      struct Open {
        int index;
        BatchStream stream;
        size_t next = 0;
        std::vector<std::future<std::vector<CompiledModel::Output>>> futures;
      };
      std::vector<Open> open;
      int next_stream = t;
      while (next_stream < stream_count || !open.empty()) {
        while (open.size() < 3 && next_stream < stream_count) {
          open.push_back({next_stream, batcher.open_stream(), 0, {}});
          next_stream += kThreads;
        }
        Open& current = open[local() % open.size()];
        Script& script = scripts[static_cast<size_t>(current.index)];
        const size_t burst = 1 + local() % 3;
        for (size_t b = 0; b < burst && current.next < script.chunks.size(); ++b) {
          if (static_cast<int>(current.next) == script.reset_before) current.stream.reset();
          current.futures.push_back(
              current.stream.submit(streams.inputs(script.chunks[current.next++])));
        }
        if (current.next == script.chunks.size()) {
          current.stream.close();  // chunks in flight complete
          for (auto& future : current.futures) {
            results[static_cast<size_t>(current.index)].push_back(future.get());
          }
          open.erase(open.begin() + (&current - open.data()));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  largest_difference = 0;
  for (int s = 0; s < stream_count; ++s) {
    Session session = streams.model->new_session(streams.state);
    Script& script = scripts[static_cast<size_t>(s)];
    ASSERT_EQ(results[static_cast<size_t>(s)].size(), script.chunks.size());
    for (size_t c = 0; c < script.chunks.size(); ++c) {
      if (static_cast<int>(c) == script.reset_before) session.reset();
      const std::vector<NamedTensor>& alone = session.run(streams.inputs(script.chunks[c]));
      expect_equal(results[static_cast<size_t>(s)][c], alone,
                   "stream " + std::to_string(s) + " chunk " + std::to_string(c), tolerance);
    }
  }
  std::cout << "largest difference from the streams' own sessions: " << largest_difference << "\n";
  const BatcherStats stats = batcher.stats();
  uint64_t chunks = 0, batched = 0;
  for (const Script& script : scripts) chunks += script.chunks.size();
  for (size_t b = 2; b < stats.batch_sizes.size(); ++b) batched += stats.batch_sizes[b];
  EXPECT_EQ(stats.chunks, chunks);
  EXPECT_GT(batched, 0u) << "no run batched more than one chunk";
  EXPECT_LT(stats.runs, chunks);
}

TEST(StreamBatcher, StackedLstmStreamsFromEightThreadsEqualTheirOwnSessions) {
  run_streams(lstm_streams(), kBatchTiled);
}

TEST(StreamBatcher, SileroStreamsFromEightThreadsEqualTheirOwnSessions) {
  if (!std::filesystem::exists(kSileroPath)) {
    GTEST_SKIP() << kSileroPath << " is missing: run models/fetch_silero.sh " RNNC_MODELS_DIR;
  }
  run_streams(silero_streams(), kSpecialized);
}

TEST(StreamBatcher, SileroStreamsEqualGenericSessionsBitForBit) {
  if (!std::filesystem::exists(kSileroPath)) GTEST_SKIP() << kSileroPath << " is missing";
  run_streams(silero_streams(/*specialize=*/false), kExact, 16);
}

TEST(StreamBatcher, DerivesBatchAxesFromTheSharedDimSymbol) {
  StreamBatcher lstm(stack_model());
  const std::map<std::string, int> expected = {
      {"x", 1},          {"y", 1},          {"l0.rnn.initial_h", 1}, {"l0.rnn.initial_c", 1},
      {"l0.rnn.Y_h", 1}, {"l0.rnn.Y_c", 1}, {"l1.rnn.initial_h", 1}, {"l1.rnn.initial_c", 1},
      {"l1.rnn.Y_h", 1}, {"l1.rnn.Y_c", 1}};
  EXPECT_EQ(lstm.batch_axes(), expected);
  if (!std::filesystem::exists(kSileroPath)) GTEST_SKIP() << kSileroPath << " is missing";
  BatcherOptions options;
  options.state = {{"stateN", "state"}};
  StreamBatcher silero(silero_model(), options);
  EXPECT_EQ(silero.batch_axes().at("input"), 0);
  EXPECT_EQ(silero.batch_axes().at("state"), 1);
  EXPECT_EQ(silero.batch_axes().at("sr"), -1);
  EXPECT_EQ(silero.batch_axes().at("stateN"), 1);
}

// An LSTM whose initial_h names its batch dim apart from X's ('hb', not 'xb'): no dim symbol is
// shared, so the batcher takes the axes from the shapes the model gives the first chunk (Y_h's
// batch is X's), decided once while 8 threads submit their streams' first chunks.
std::shared_ptr<const CompiledModel> own_state_dim_lstm() {
  const std::string bytes = testing::own_state_dim_lstm_onnx(kHidden, kInput, 5);
  ModelOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  return CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
}

TEST(StreamBatcher, AxesTheDimNamesLeaveOpenComeFromTheFirstChunk) {
  StreamModel streams = lstm_streams();
  streams.model = own_state_dim_lstm();
  {
    StreamBatcher before(streams.model);
    EXPECT_EQ(before.batch_axes().at("h"), -1);
    EXPECT_EQ(before.batch_axes().at("x"), -1);
  }
  run_streams(streams, kBatchTiled);
  StreamBatcher batcher(streams.model);
  std::mt19937 rng(1);
  Chunk chunk = streams.make_chunk(rng);
  batcher.open_stream().run(streams.inputs(chunk));
  const std::map<std::string, int> expected = {{"x", 1},   {"h", 1},   {"y", 2},
                                               {"y_h", 1}, {"rnn.initial_c", 1},
                                               {"rnn.Y_c", 1}};
  EXPECT_EQ(batcher.batch_axes(), expected);
}

// A state the data does not shape (next = state + 1): no dim of the first chunk decides its
// batch axis, and that chunk's submit says so. Given in BatcherOptions::batch_axes, the axis also
// shapes the zeros a stream starts from: the chunk's rows there.
TEST(StreamBatcher, AFirstChunkThatDecidesNoAxisIsItsSubmitsError) {
  const std::string text = R"(model opset=13
graph main(%x: f32[xb, 4], %state: f32[sb, 4]) {
  const %one: f32[] = {1}
  %y = Relu 'y' (%x)
  %next = Add 'next' (%state, %one)
  return %y, %next
})";
  const std::string bytes = export_onnx_bytes(*parse_model_text(text, "own state"));
  auto model = CompiledModel::load_bytes(bytes.data(), bytes.size());
  BatcherOptions options;
  options.state = {{"next", "state"}};
  StreamBatcher batcher(model, options);
  std::vector<float> x(4, 1.0f);
  BatchStream stream = batcher.open_stream();
  EXPECT_EQ(error_message(
                [&] { stream.run({{"x", {ElementType::kFloat32, {1, 4}, x.data()}}}); },
                ErrorKind::kInvalidInput),
            "state input state: float[sb, 4] has no batch axis: no dim symbol is shared by the "
            "state inputs and a data input: give its batch axis in BatcherOptions::batch_axes "
            "(nor do the shapes the model gives its outputs for this chunk: 0 of its dims could "
            "be the batch dim)");
  options.batch_axes = {{"state", 0}, {"next", 0}, {"x", 0}, {"y", 0}};
  StreamBatcher given(model, options);
  const std::vector<CompiledModel::Output> out =
      given.open_stream().run({{"x", {ElementType::kFloat32, {1, 4}, x.data()}}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(out[1].as<float>()[0], 1.0f);  // zeros + 1
}

// A chunk that fails its checks is an error for its submit only: the stream's state and the
// other streams' results are as if it had never been submitted.
TEST(StreamBatcher, BadChunkFailsOnlyItsOwnSubmission) {
  StreamModel streams = lstm_streams();
  BatcherOptions options;
  options.max_wait_us = 500;
  StreamBatcher batcher(streams.model, options);
  BatchStream good = batcher.open_stream(), bad = batcher.open_stream();
  std::mt19937 rng(3);
  std::vector<Chunk> chunks;
  for (int c = 0; c < 4; ++c) chunks.push_back(streams.make_chunk(rng));
  std::vector<float> wrong(3 * 2 * kInput);
  std::vector<double> doubles(3 * kInput);
  auto good_first = good.submit(streams.inputs(chunks[0]));
  auto bad_first = bad.submit(streams.inputs(chunks[0]));
  EXPECT_EQ(error_message(
                [&] {
                  bad.submit({{"x", {ElementType::kFloat32, {3, 1, 7}, wrong.data()}}});
                },
                ErrorKind::kInvalidInput),
            "input 'x': dim 2 is 7, expected 8 (f32[seq, batch, 8])");
  EXPECT_EQ(error_message(
                [&] {
                  bad.submit({{"x", {ElementType::kFloat64, {3, 1, 8}, doubles.data()}}});
                },
                ErrorKind::kInvalidInput),
            "input 'x' has element type double, expected float (f32[seq, batch, 8])");
  EXPECT_EQ(error_message([&] { bad.submit({}); }, ErrorKind::kInvalidInput),
            "input 'x' (f32[seq, batch, 8]) is missing");
  // The carried state has one row: a chunk of two rows contradicts it, as in a Session.
  EXPECT_EQ(error_message(
                [&] {
                  bad.submit({{"x", {ElementType::kFloat32, {3, 2, 8}, wrong.data()}}});
                },
                ErrorKind::kInvalidInput),
            "carried state 'l0.rnn.initial_h': dim 1 ('batch') is 1 but input 'x' dim 1 set "
            "'batch' = 2");
  auto good_second = good.submit(streams.inputs(chunks[1]));
  auto bad_second = bad.submit(streams.inputs(chunks[1]));
  Session alone = streams.model->new_session();
  expect_equal(good_first.get(), alone.run(streams.inputs(chunks[0])), "good chunk 0");
  expect_equal(good_second.get(), alone.run(streams.inputs(chunks[1])), "good chunk 1");
  alone.reset();
  expect_equal(bad_first.get(), alone.run(streams.inputs(chunks[0])), "bad stream chunk 0");
  expect_equal(bad_second.get(), alone.run(streams.inputs(chunks[1])), "bad stream chunk 1");
}

// A queue of capacity 2 with no batch able to start (max_wait long, max_batch large, and a
// third stream that could still join): the third submit is refused with kOverloaded.
TEST(StreamBatcher, FullQueueIsAnOverloadError) {
  StreamModel streams = lstm_streams();
  BatcherOptions options;
  options.queue_capacity = 2;
  options.max_batch = 8;
  options.max_wait_us = 2'000'000;
  StreamBatcher batcher(streams.model, options);
  BatchStream a = batcher.open_stream(), b = batcher.open_stream(), idle = batcher.open_stream();
  std::mt19937 rng(5);
  Chunk chunk = streams.make_chunk(rng);
  auto first = a.submit(streams.inputs(chunk));
  auto second = a.submit(streams.inputs(chunk));
  EXPECT_EQ(error_message([&] { b.submit(streams.inputs(chunk)); }, ErrorKind::kOverloaded),
            "stream batcher overloaded: 2 chunks are queued (queue_capacity 2); submit again "
            "later");
  EXPECT_EQ(batcher.stats().overloaded, 1u);
  idle.close();  // now no stream can join: the batch runs without waiting out max_wait
  b.close();
  EXPECT_EQ(first.get().size(), streams.model->outputs().size());
  EXPECT_EQ(second.get().size(), streams.model->outputs().size());
}

// close() with chunks in flight completes them; destroying the batcher cancels what is queued.
TEST(StreamBatcher, CloseCompletesChunksInFlightAndDestructionCancelsQueuedOnes) {
  StreamModel streams = lstm_streams();
  std::mt19937 rng(9);
  std::vector<Chunk> chunks;
  for (int c = 0; c < 5; ++c) chunks.push_back(streams.make_chunk(rng));
  {
    StreamBatcher batcher(streams.model);
    std::vector<std::future<std::vector<CompiledModel::Output>>> futures;
    BatchStream stream = batcher.open_stream();
    for (Chunk& chunk : chunks) futures.push_back(stream.submit(streams.inputs(chunk)));
    stream.close();
    EXPECT_EQ(
        error_message([&] { stream.submit(streams.inputs(chunks[0])); }, ErrorKind::kInvalidInput),
        "stream 0 is closed");
    Session alone = streams.model->new_session();
    for (size_t c = 0; c < chunks.size(); ++c) {
      expect_equal(futures[c].get(), alone.run(streams.inputs(chunks[c])),
                   "closed stream chunk " + std::to_string(c));
    }
  }
  std::vector<ChunkResult> cancelled;
  std::mutex mutex;
  BatcherOptions options;
  options.max_batch = 8;
  options.max_wait_us = 10'000'000;  // nothing starts before the batcher is destroyed
  auto batcher = std::make_unique<StreamBatcher>(streams.model, options);
  BatchStream stream = batcher->open_stream(), other = batcher->open_stream();
  for (Chunk& chunk : chunks) {
    stream.submit(streams.inputs(chunk), [&](ChunkResult result) {
      std::lock_guard<std::mutex> lock(mutex);
      cancelled.push_back(std::move(result));
    });
  }
  batcher.reset();
  ASSERT_EQ(cancelled.size(), chunks.size());
  for (const ChunkResult& result : cancelled) {
    ASSERT_TRUE(result.error);
    EXPECT_EQ(result.error->kind(), ErrorKind::kCancelled);
    EXPECT_STREQ(result.error->what(),
                 "stream 0: chunk cancelled, its StreamBatcher was destroyed");
  }
  EXPECT_EQ(
      error_message([&] { stream.submit(streams.inputs(chunks[0])); }, ErrorKind::kInvalidInput),
      "stream 0: its StreamBatcher was destroyed");
}

TEST(StreamBatcher, StreamResultsArriveInOrderThroughCallbacks) {
  StreamModel streams = lstm_streams();
  std::mt19937 rng(11);
  std::vector<Chunk> chunks;
  for (int c = 0; c < 12; ++c) chunks.push_back(streams.make_chunk(rng));
  BatcherOptions options;
  options.threads = 2;
  StreamBatcher batcher(streams.model, options);
  BatchStream stream = batcher.open_stream();
  std::mutex mutex;
  std::vector<std::vector<CompiledModel::Output>> arrived;
  for (Chunk& chunk : chunks) {
    stream.submit(streams.inputs(chunk), [&](ChunkResult result) {
      std::lock_guard<std::mutex> lock(mutex);
      arrived.push_back(std::move(result.value()));
    });
  }
  stream.wait();
  ASSERT_EQ(arrived.size(), chunks.size());
  Session alone = streams.model->new_session();
  for (size_t c = 0; c < chunks.size(); ++c) {
    expect_equal(arrived[c], alone.run(streams.inputs(chunks[c])), "chunk " + std::to_string(c));
  }
}

// A batcher's runs on a model of plan kAuto and 2 threads take the sequential plan: no warm-up
// runs and duels of the plan chooser, which would learn every batch size on its own (latency
// spikes). The model's plan report lists a shape once the chooser has decided it, after its
// duels; a Session's runs of one shape on the same model get there (the control).
TEST(StreamBatcher, RunsTakeTheSequentialPlanWithoutDuels) {
  ModelOptions model_options;
  model_options.threads = 2;
  auto model = load_stack("LSTM", 2, kHidden, kInput, model_options);
  ASSERT_EQ(model->plan(), Plan::kAuto);
  ASSERT_EQ(model->plan_candidates().size(), 2u);
  std::vector<float> x = random_vector(3 * kInput, 5);
  const std::vector<NamedTensor> inputs = {
      {"x", {ElementType::kFloat32, {3, 1, kInput}, x.data()}}};
  constexpr int kRuns = 40;  // more than a shape's warm-ups and first duels
  {
    StreamBatcher batcher(model);
    BatchStream stream = batcher.open_stream();
    for (int r = 0; r < kRuns; ++r) stream.run(inputs);
  }
  EXPECT_EQ(model->describe().find("duels"), std::string::npos) << model->describe();
  Session session = model->new_session();
  for (int r = 0; r < kRuns; ++r) session.run(inputs);
  EXPECT_NE(model->describe().find("duels"), std::string::npos) << model->describe();
}

// Inputs without a batch axis must be equal within a batch: Silero's sample rate.
TEST(StreamBatcher, ChunksWithDifferentNonBatchInputsRunInSeparateBatches) {
  if (!std::filesystem::exists(kSileroPath)) GTEST_SKIP() << kSileroPath << " is missing";
  StreamModel streams = silero_streams();
  BatcherOptions options;
  options.state = streams.state;
  options.max_wait_us = 200'000;
  StreamBatcher batcher(streams.model, options);
  BatchStream a = batcher.open_stream(), b = batcher.open_stream();
  std::mt19937 rng(13);
  Chunk chunk = streams.make_chunk(rng);
  int64_t rate_8k = 8000;
  std::vector<float> samples_8k(256, 0.1f);
  auto at_16k = a.submit(streams.inputs(chunk));
  auto at_8k = b.submit({{"input", {ElementType::kFloat32, {1, 256}, samples_8k.data()}},
                         {"sr", {ElementType::kInt64, {}, &rate_8k}}});
  at_16k.get();
  at_8k.get();
  const BatcherStats stats = batcher.stats();
  EXPECT_EQ(stats.runs, 2u);
  EXPECT_EQ(stats.batch_sizes[1], 2u);
}

TEST(StreamBatcherErrors, OptionsAndAxes) {
  auto model = stack_model();
  auto error_of_options = [&](const BatcherOptions& options) {
    return error_message([&] { StreamBatcher batcher(model, options); }, ErrorKind::kInvalidInput);
  };
  BatcherOptions options;
  options.max_batch = 0;
  EXPECT_EQ(error_of_options(options), "BatcherOptions::max_batch = 0, must be >= 1");
  options = {};
  options.threads = 0;
  EXPECT_EQ(error_of_options(options), "BatcherOptions::threads = 0, must be >= 1");
  options = {};
  options.max_wait_us = -1;
  EXPECT_EQ(error_of_options(options), "BatcherOptions::max_wait_us = -1, must be >= 0");
  options = {};
  options.batch_axes["nope"] = 0;
  EXPECT_EQ(error_of_options(options),
            "BatcherOptions::batch_axes: 'nope' is not an input or output of the model");
  options = {};
  options.batch_axes["x"] = 3;
  EXPECT_EQ(error_of_options(options),
            "BatcherOptions::batch_axes['x'] = 3: must be -1 or a dim of x: float[seq, batch, 8]");
  options = {};
  options.state = {{"y", "nope"}};
  EXPECT_EQ(error_of_options(options),
            "state pair (y -> nope): 'nope' is not an input of the model (inputs: 'x', "
            "'l0.rnn.initial_h', 'l0.rnn.initial_c', 'l1.rnn.initial_h', 'l1.rnn.initial_c')");
}

}  // namespace
}  // namespace rnnc
