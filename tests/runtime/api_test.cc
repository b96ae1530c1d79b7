// The public API (rnnc/rnnc.h): round trips against the reference evaluator, every run-time error
// by its message, streaming in chunks against one whole run, and the three execution plans.
//
// Tolerance against the reference evaluator: rtol 1e-4, atol 1e-5 (float32 dot products summed in
// a blocked order against the reference's double accumulation; see tests/unit/program_test.cc).
// Between plans and between streamed and whole runs the same kernels do the same arithmetic in
// the same order per element, so those comparisons are bitwise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "ir/onnx_import.h"
#include "ir/reference/evaluator.h"
#include "ir/onnx_export.h"
#include "ir/text_parser.h"
#include "runtime/fp_mode.h"
#include "runtime/halide_tbb.h"
#include "runtime/plan_chooser.h"
#include "tests/runtime/test_models.h"
#include "tests/support/compare.h"

namespace rnnc {
namespace {

using testing::load_stack;
using testing::random_vector;

constexpr int64_t kHidden = 32, kInput = 24;

NamedTensor input_x(std::vector<float>& data, int64_t seq, int64_t batch) {
  return {"x", {ElementType::kFloat32, {seq, batch, kInput}, data.data()}};
}

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RuntimeApi, DescribesInputsOutputsAndExposedState) {
  auto model = load_stack("LSTM", 2, kHidden, kInput);
  ASSERT_EQ(model->inputs().size(), 5u);  // x and the two layers' h and c
  EXPECT_EQ(model->inputs()[0].to_string(), "x: float[seq, batch, 24]");
  EXPECT_EQ(model->outputs()[0].to_string(), "y: float[seq, batch, 32]");
  ASSERT_EQ(model->recurrent_state().size(), 4u);
  EXPECT_EQ(model->recurrent_state()[0].first, "l0.rnn.Y_h");
  EXPECT_EQ(model->recurrent_state()[0].second, "l0.rnn.initial_h");
  EXPECT_EQ(model->plan(), Plan::kSequential);
  EXPECT_NE(model->describe().find("halide lstm"), std::string::npos) << model->describe();
}

TEST(RuntimeApi, FirstRunMatchesReferenceEvaluator) {
  const std::string bytes = testing::stacked_recurrent_onnx("LSTM", 2, kHidden, kInput);
  ModelOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  auto model = CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
  std::vector<float> x = random_vector(9 * 2 * kInput, 3);
  Session session = model->new_session();
  const auto& outputs = session.run({input_x(x, 9, 2)});
  ASSERT_EQ(outputs[0].name, "y");
  EXPECT_EQ(outputs[0].tensor.shape, (std::vector<int64_t>{9, 2, kHidden}));

  auto imported = import_onnx_bytes(bytes.data(), bytes.size());
  Tensor x_tensor = Tensor::borrow(DType::kFloat32, {9, 2, kInput}, x.data());
  Tensor expected = evaluate(*imported->graph, {{"x", x_tensor}})[0];
  Tensor actual = Tensor::borrow(DType::kFloat32, outputs[0].tensor.shape, outputs[0].tensor.data);
  auto result = rnnc::testing::compare_tensors(actual, expected, {1e-4, 1e-5});
  EXPECT_TRUE(result.ok) << result.message;
}

// Subnormal floats: flushed to zero by default (FTZ + DAZ while rnnc's kernels run), kept with
// flush_denormals off; the calling thread's own mode is restored after each run. y = x * 0.5 on
// Halide elementwise code: 1e-39 (subnormal: FLT_MIN is 1.2e-38) gives 5e-40 in IEEE, 0 flushed.
TEST(RuntimeApi, FlushesDenormalsByDefaultAndRestoresTheCallersMode) {
  Model model;
  model.opsets[""] = 14;
  model.graph = std::make_unique<Graph>("half");
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  x_type.shape = Shape{Dim(64)};
  Value* x = model.graph->add_input("x", x_type);
  Value* half = model.graph->add_initializer("half", Tensor::from_vector<float>({}, {0.5f}));
  Node* mul = model.graph->add_node("Mul", "mul", {x, half}, {"y"}, 14);
  model.graph->add_output(mul->output(0));
  const std::string bytes = export_onnx_bytes(model);
  std::vector<float> input(64, 1e-39f);
  input[1] = 3.0f;
  for (bool flush : {true, false}) {
    ModelOptions options;
    options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
    options.flush_denormals = flush;
    auto compiled = CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
    ASSERT_NE(compiled->describe().find("halide"), std::string::npos) << compiled->describe();
    Session session = compiled->new_session();
    const unsigned before = ScopedFpMode::current();
    const auto& outputs =
        session.run({{"x", {ElementType::kFloat32, {64}, input.data()}}});
    EXPECT_EQ(ScopedFpMode::current(), before) << "the caller's MXCSR changed";
    const float* y = static_cast<const float*>(outputs[0].tensor.data);
    SCOPED_TRACE(flush ? "flush" : "IEEE");
    EXPECT_EQ(y[1], 1.5f);
    EXPECT_EQ(y[0], flush ? 0.0f : 0.5f * 1e-39f);
  }
}

// A layer whose R is above ~1 MiB runs its step's hidden tiles as a parallel loop
// (RecurrentSchedule::parallel_tiles) on the model's arena: at 2 threads the tiles split across
// the threads, each computing exactly what it computes alone, so y equals the 1-thread run's
// bitwise, and both match the reference evaluator.
TEST(RuntimeApi, ParallelStepTilesMatchTheSerialRunBitwise) {
  const std::string bytes = testing::stacked_recurrent_onnx("LSTM", 1, 288, kInput);
  std::vector<float> x = random_vector(5 * 2 * kInput, 7);
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2}) {
    ModelOptions options;
    options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
    options.threads = threads;
    options.plan = Plan::kSequential;
    auto model = CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
    Session session = model->new_session();
    const auto& outputs = session.run({input_x(x, 5, 2)});
    const float* y = static_cast<const float*>(outputs[0].tensor.data);
    results.emplace_back(y, y + 5 * 2 * 288);
  }
  EXPECT_EQ(results[0], results[1]);
  auto imported = import_onnx_bytes(bytes.data(), bytes.size());
  Tensor x_tensor = Tensor::borrow(DType::kFloat32, {5, 2, kInput}, x.data());
  Tensor expected = evaluate(*imported->graph, {{"x", x_tensor}})[0];
  Tensor actual = Tensor::borrow(DType::kFloat32, {5, 2, 288}, results[1].data());
  auto result = rnnc::testing::compare_tensors(actual, expected, {1e-4, 1e-5});
  EXPECT_TRUE(result.ok) << result.message;
}

// Runs x [seq, 1, input] whole and in chunks through new sessions; y must agree bitwise.
void expect_streaming_matches_whole(const std::string& op, const std::vector<int64_t>& chunks) {
  auto model = load_stack(op, 2, kHidden, kInput);
  int64_t seq = 0;
  for (int64_t c : chunks) seq += c;
  std::vector<float> x = random_vector(seq * kInput, 7);
  Session whole = model->new_session();
  const auto& whole_out = whole.run({input_x(x, seq, 1)});
  std::vector<float> expected(static_cast<const float*>(whole_out[0].tensor.data),
                              static_cast<const float*>(whole_out[0].tensor.data) + seq * kHidden);

  Session stream = model->new_session();
  std::vector<float> streamed;
  int64_t offset = 0;
  for (int64_t length : chunks) {
    std::vector<float> part(x.begin() + offset * kInput, x.begin() + (offset + length) * kInput);
    const auto& out = stream.run({input_x(part, length, 1)});
    const float* y = static_cast<const float*>(out[0].tensor.data);
    streamed.insert(streamed.end(), y, y + length * kHidden);
    offset += length;
  }
  ASSERT_EQ(streamed.size(), expected.size());
  EXPECT_EQ(std::memcmp(streamed.data(), expected.data(), expected.size() * sizeof(float)), 0)
      << op << ": streamed outputs differ from the whole run";

  // reset() starts over: the first chunk again gives the whole run's first rows.
  stream.reset();
  std::vector<float> first(x.begin(), x.begin() + chunks[0] * kInput);
  const auto& again = stream.run({input_x(first, chunks[0], 1)});
  EXPECT_EQ(std::memcmp(again[0].tensor.data, expected.data(), chunks[0] * kHidden * sizeof(float)),
            0);
}

TEST(RuntimeApi, StreamingLstmInChunksEqualsOneRun) {
  expect_streaming_matches_whole("LSTM", {5, 1, 8, 3});
}

TEST(RuntimeApi, StreamingGruInChunksEqualsOneRun) {
  expect_streaming_matches_whole("GRU", {4, 4, 9});
}

TEST(RuntimeApi, CloneCarriesAnIndependentCopyOfTheState) {
  auto model = load_stack("GRU", 1, kHidden, kInput);
  std::vector<float> a = random_vector(6 * kInput, 1), b = random_vector(6 * kInput, 2);
  Session original = model->new_session();
  original.run({input_x(a, 6, 1)});
  Session copy = original.clone();
  const auto& from_original = original.run({input_x(b, 6, 1)});
  std::vector<float> expected(static_cast<const float*>(from_original[0].tensor.data),
                              static_cast<const float*>(from_original[0].tensor.data) + 6 * kHidden);
  const auto& from_copy = copy.run({input_x(b, 6, 1)});
  EXPECT_EQ(std::memcmp(from_copy[0].tensor.data, expected.data(), expected.size() * 4), 0);
  ASSERT_EQ(copy.state().size(), 1u);
  EXPECT_EQ(copy.state()[0].name, "l0.rnn.initial_h");
}

TEST(RuntimeApi, RunIntoWritesCallerBuffersInPlace) {
  auto model = load_stack("LSTM", 2, kHidden, kInput);
  std::vector<float> x = random_vector(5 * kInput, 4);
  Session reference_session = model->new_session();
  const auto& expected = reference_session.run({input_x(x, 5, 1)});
  std::vector<float> y(5 * kHidden, -1.0f);
  Session session = model->new_session();
  session.run_into({input_x(x, 5, 1)}, {{"y", {ElementType::kFloat32, {5, 1, kHidden}, y.data()}}});
  EXPECT_EQ(std::memcmp(y.data(), expected[0].tensor.data, y.size() * 4), 0);

  std::vector<float> small(4 * kHidden);
  EXPECT_EQ(error_of([&] {
              session.run_into({input_x(x, 5, 1)},
                               {{"y", {ElementType::kFloat32, {4, 1, kHidden}, small.data()}}});
            }),
            "output 'y' has shape [5, 1, 32] at this run, but the buffer given has shape [4, 1, 32]");
}

TEST(RuntimeApi, PlansGiveIdenticalResults) {
  std::vector<float> x = random_vector(23 * 3 * kInput, 5);
  std::vector<std::vector<float>> results;
  for (Plan plan : {Plan::kSequential, Plan::kParallel, Plan::kPipeline}) {
    ModelOptions options;
    options.plan = plan;
    options.threads = 2;
    auto model = load_stack("LSTM", 4, kHidden, kInput, options);
    EXPECT_EQ(model->plan(), plan);
    if (plan == Plan::kPipeline) {
      EXPECT_NE(model->describe().find("pipelined chain: blocks 0 1 2 3"), std::string::npos)
          << model->describe();
    }
    Session session = model->new_session();
    // The second run recycles every buffer and starts from the first one's carried state.
    for (int repeat = 0; repeat < 2; ++repeat) {
      const auto& out = session.run({input_x(x, 23, 3)});
      const float* y = static_cast<const float*>(out[0].tensor.data);
      results.emplace_back(y, y + 23 * 3 * kHidden);
    }
  }
  ASSERT_EQ(results.size(), 6u);
  EXPECT_NE(std::memcmp(results[1].data(), results[0].data(), results[0].size() * 4), 0)
      << "the second run should start from the first run's state";
  for (size_t i = 2; i < results.size(); ++i) {
    EXPECT_EQ(std::memcmp(results[i].data(), results[i % 2].data(), results[0].size() * 4), 0)
        << "plan " << i / 2 << " run " << i % 2;
  }
}

TEST(RuntimeApi, BidirectionalDirectionsRunAsParallelPartsWithIdenticalResults) {
  // The parallel plan runs a bidirectional layer's two directions at once (independent parts);
  // outputs must equal the sequential plan's bit for bit, and the reference within tolerance.
  const std::string path = RNNC_SOURCE_DIR "/tests/data/graph_opt/lstm_bidirectional.onnx";
  std::vector<float> x = random_vector(11 * 2 * 8, 12);
  const std::vector<NamedTensor> inputs = {{"x", {ElementType::kFloat32, {11, 2, 8}, x.data()}}};
  std::vector<std::vector<float>> results;
  for (Plan plan : {Plan::kSequential, Plan::kParallel}) {
    ModelOptions options;
    options.threads = 2;
    options.plan = plan;
    options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
    auto model = CompiledModel::load(path, options);
    Session session = model->new_session();
    for (int repeat = 0; repeat < 2; ++repeat) {
      session.reset();
      const auto& out = session.run(inputs);
      const float* y = static_cast<const float*>(out[0].tensor.data);
      results.emplace_back(y, y + out[0].tensor.element_count());
    }
  }
  ASSERT_EQ(results.size(), 4u);
  for (size_t i = 1; i < results.size(); ++i) {
    ASSERT_EQ(results[i].size(), results[0].size());
    EXPECT_EQ(std::memcmp(results[i].data(), results[0].data(), results[0].size() * 4), 0) << i;
  }
  auto imported = import_onnx_file(path);
  Tensor expected = evaluate(*imported->graph,
                             {{"x", Tensor::borrow(DType::kFloat32, {11, 2, 8}, x.data())}})[0];
  Tensor actual = Tensor::from_vector<float>(expected.shape(), results[3]);
  auto result = rnnc::testing::compare_tensors(actual, expected, {1e-4, 1e-5});
  EXPECT_TRUE(result.ok) << result.message;
}

TEST(RuntimeApi, HalideParallelLoopsRunOnTbb) {
  // The input projection's row tiles are a Halide parallel loop when W has 16384 elements or more
  // (lowering/schedule_table.h parallel_projection): each run routes it through the runtime's
  // oneTBB do_par_for, never Halide's own thread pool. A smaller W's projection is one loop on
  // the calling thread: its work is less than a hand-off costs.
  ModelOptions options;
  options.threads = 2;
  constexpr int64_t kWide = 64;  // W: 4 gates x 64 units x 64 inputs = 16384
  auto wide = load_stack("LSTM", 2, kWide, kWide, options);
  Session session = wide->new_session();
  std::vector<float> x = random_vector(30 * kWide, 9);
  const int64_t before = tbb_parallel_loops_run();
  session.run({{"x", {ElementType::kFloat32, {30, 1, kWide}, x.data()}}});
  EXPECT_GE(tbb_parallel_loops_run() - before, 2) << "one loop per layer's projection";

  auto small = load_stack("LSTM", 2, kHidden, kInput, options);
  Session small_session = small->new_session();
  std::vector<float> small_x = random_vector(30 * kInput, 9);
  const int64_t small_before = tbb_parallel_loops_run();
  small_session.run({input_x(small_x, 30, 1)});
  EXPECT_EQ(tbb_parallel_loops_run() - small_before, 0) << "a small W's projection ran in parallel";
}

// A MatMul whose constant B is over half of L2 walks B in column panels, a parallel loop
// (lowering/schedule_table.h gemm_panel_tiles): at 2 threads each thread multiplies its panels,
// each output column summed as alone, so the outputs equal the 1-thread run's bitwise. Float B
// 512 x 2500 (5 MB) and its int8 form (1.3 MB: over half of L2 on both host kinds). The name
// puts it in scripts/sanitize.sh's thread run.
TEST(RuntimeApi, ParallelGemmPanelsMatchTheOneThreadRunBitwise) {
  auto text_model = parse_model_text(R"(model opset=17
graph g(%a: f32[m, 512], %w: f32[512, 2500]) {
  %y = MatMul 'project' (%a, %w)
  return %y
})",
                                     "panels.ir");
  text_model->graph->convert_input_to_constant(text_model->graph->find_value("w"),
                                               rnnc::testing::random_tensor({512, 2500}, 5));
  const std::string bytes = export_onnx_bytes(*text_model);
  std::vector<float> a = random_vector(7 * 512, 3);
  for (const char* quantization : {"", "default"}) {
    SCOPED_TRACE(*quantization ? "int8" : "float");
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2}) {
      ModelOptions options;
      options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
      options.threads = threads;
      options.plan = Plan::kSequential;
      options.quantization_config = quantization;
      options.quantization_guard = false;
      auto model = CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
      Session session = model->new_session();
      const int64_t before = tbb_parallel_loops_run();
      const auto& outputs = session.run({{"a", {ElementType::kFloat32, {7, 512}, a.data()}}});
      if (threads == 2) {
        EXPECT_GE(tbb_parallel_loops_run() - before, 1) << "the panels ran on one thread";
      }
      const float* y = static_cast<const float*>(outputs[0].tensor.data);
      results.emplace_back(y, y + 7 * 2500);
    }
    EXPECT_EQ(results[0], results[1]);
  }
}

TEST(RuntimeApi, AutoPlanChoosesPerShapeAndEveryTrialRunGivesTheSameResult) {
  // With threads, kAuto keeps both executors and, per shape, times sequential against the
  // pipeline: alternating on its first runs (runtime/plan_chooser.h). Which one wins depends on the
  // machine's load, so the test checks the mechanics: both plans ran, a choice is recorded per
  // shape, and every run, whichever plan it used, gave the bitwise same outputs.
  ModelOptions options;
  options.threads = 2;
  auto model = load_stack("LSTM", 3, kHidden, kInput, options);
  EXPECT_EQ(model->plan(), Plan::kAuto);
  EXPECT_EQ(model->plan_candidates(), (std::vector<Plan>{Plan::kSequential, Plan::kPipeline}));
  Session session = model->new_session({});
  EXPECT_EQ(session.last_plan(), Plan::kAuto);
  constexpr int kTrialRuns = 2 * PlanChooser::kWarmups + 4 * PlanChooser::kSamples;
  for (int64_t seq : {17, 40}) {
    std::vector<float> x = random_vector(seq * kInput, 11);
    std::vector<float> first;
    std::set<Plan> used;
    for (int run = 0; run < kTrialRuns + 2; ++run) {
      session.reset();
      const auto& out = session.run({input_x(x, seq, 1)});
      used.insert(session.last_plan());
      const float* y = static_cast<const float*>(out[0].tensor.data);
      if (run == 0) {
        first.assign(y, y + seq * kHidden);
      } else {
        ASSERT_EQ(std::memcmp(y, first.data(), first.size() * sizeof(float)), 0)
            << "seq " << seq << " run " << run << " (" << plan_name(session.last_plan()) << ")";
      }
    }
    EXPECT_EQ(used, (std::set<Plan>{Plan::kSequential, Plan::kPipeline})) << "seq " << seq;
  }
  const std::string described = model->describe();
  EXPECT_NE(described.find("execution plan: auto, 2 thread(s) (per input shape: sequential or "
                           "pipeline"),
            std::string::npos)
      << described;
  EXPECT_NE(described.find("  seq=17, batch=1: "), std::string::npos) << described;
  EXPECT_NE(described.find("  seq=33..64, batch=1: "), std::string::npos) << described;

  // A model without a chain of recurrent layers overlaps with the parallel plan; one thread or a
  // forced plan has a single candidate.
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  auto bidirectional =
      CompiledModel::load(RNNC_SOURCE_DIR "/tests/data/graph_opt/lstm_bidirectional.onnx", options);
  EXPECT_EQ(bidirectional->plan_candidates(),
            (std::vector<Plan>{Plan::kSequential, Plan::kParallel}));
  options.threads = 1;
  auto single = load_stack("LSTM", 3, kHidden, kInput, options);
  EXPECT_EQ(single->plan(), Plan::kSequential);
  EXPECT_EQ(single->plan_candidates(), std::vector<Plan>{Plan::kSequential});
}

TEST(RuntimeApi, AutoPlanStreamsStateAcrossPlanSwitches) {
  // During a trial consecutive runs of one session alternate executors; the carried state must
  // go from one to the other. Streamed chunks of one shape (all trial runs) against one run.
  ModelOptions options;
  options.threads = 2;
  auto model = load_stack("LSTM", 2, kHidden, kInput, options);
  constexpr int64_t kChunk = 6, kChunks = 8;
  std::vector<float> x = random_vector(kChunk * kChunks * kInput, 12);
  ModelOptions sequential_options;
  sequential_options.plan = Plan::kSequential;
  Session whole = load_stack("LSTM", 2, kHidden, kInput, sequential_options)->new_session();
  const auto& whole_out = whole.run({input_x(x, kChunk * kChunks, 1)});
  const float* expected = static_cast<const float*>(whole_out[0].tensor.data);
  Session stream = model->new_session();
  std::set<Plan> used;
  for (int64_t c = 0; c < kChunks; ++c) {
    std::vector<float> part(x.begin() + c * kChunk * kInput, x.begin() + (c + 1) * kChunk * kInput);
    const auto& out = stream.run({input_x(part, kChunk, 1)});
    used.insert(stream.last_plan());
    EXPECT_EQ(std::memcmp(out[0].tensor.data, expected + c * kChunk * kHidden,
                          kChunk * kHidden * sizeof(float)),
              0)
        << "chunk " << c << " (" << plan_name(stream.last_plan()) << ")";
  }
  EXPECT_EQ(used.size(), 2u) << "the trial should have switched plans between chunks";
}

// ---- errors -----------------------------------------------------------------------------------

TEST(RuntimeApiErrors, NamesTheInputAndWhatWasExpected) {
  auto model = load_stack("LSTM", 1, kHidden, kInput);
  Session session = model->new_session();
  std::vector<float> x = random_vector(4 * 2 * kInput, 1);
  std::vector<int32_t> ints(4 * 2 * kInput);

  EXPECT_EQ(error_of([&] { session.run({{"X", {ElementType::kFloat32, {4, 2, kInput}, x.data()}}}); }),
            "'X' is not an input of the model (inputs: 'x', 'l0.rnn.initial_h', "
            "'l0.rnn.initial_c')");
  EXPECT_EQ(error_of([&] { session.run({}); }), "input 'x' (f32[seq, batch, 24]) is missing");
  EXPECT_EQ(error_of([&] { session.run({{"x", {ElementType::kInt32, {4, 2, kInput}, ints.data()}}}); }),
            "input 'x' has element type int32, expected float (f32[seq, batch, 24])");
  EXPECT_EQ(error_of([&] { session.run({{"x", {ElementType::kFloat32, {8, kInput}, x.data()}}}); }),
            "input 'x' has rank 2 (shape [8, 24]), expected 3 (f32[seq, batch, 24])");
  EXPECT_EQ(error_of([&] { session.run({{"x", {ElementType::kFloat32, {4, 2, 12}, x.data()}}}); }),
            "input 'x': dim 2 is 12, expected 24 (f32[seq, batch, 24])");
  EXPECT_EQ(error_of([&] { session.run({{"x", {ElementType::kFloat32, {4, 2, kInput}, nullptr}}}); }),
            "input 'x' has no data (null pointer)");
  EXPECT_EQ(error_of([&] {
              session.run({input_x(x, 4, 2), input_x(x, 4, 2)});
            }),
            "input 'x' is given twice");
  // A state input given explicitly must agree with the symbols the other inputs bound.
  std::vector<float> h(3 * kHidden);
  EXPECT_EQ(error_of([&] {
              session.run({input_x(x, 4, 2),
                           {"l0.rnn.initial_h", {ElementType::kFloat32, {1, 3, kHidden}, h.data()}}});
            }),
            "input 'l0.rnn.initial_h': dim 1 ('batch') is 3 but input 'x' dim 1 set 'batch' = 2");
  // Carried state from a batch-2 run does not fit a batch-1 run.
  session.run({input_x(x, 4, 2)});
  EXPECT_EQ(error_of([&] { session.run({input_x(x, 8, 1)}); }),
            "carried state 'l0.rnn.initial_h': dim 1 ('batch') is 2 but input 'x' dim 1 set "
            "'batch' = 1");
  session.reset();
  EXPECT_EQ(error_of([&] { session.run({input_x(x, 8, 1)}); }), "(no error)");
}

TEST(RuntimeApiErrors, BadOptionsModelsAndStatePairs) {
  ModelOptions options;
  options.threads = 0;
  EXPECT_EQ(error_of([&] { load_stack("LSTM", 1, kHidden, kInput, options); }),
            "ModelOptions::threads = 0, must be >= 1");
  options.threads = 1;
  options.target = "armv9";
  EXPECT_EQ(error_of([&] { load_stack("LSTM", 1, kHidden, kInput, options); }),
            "unknown target 'armv9' (use host, x86-64, x86-64-v2, x86-64-v3, x86-64-v4, "
            "x86-64-v4-vnni, zen4 or sapphirerapids; avx2 and x86-64-avx2 mean x86-64-v3)");
  // A target this CPU cannot run is refused before anything compiles (on a CPU with every
  // Sapphire Rapids feature there is nothing to refuse).
  options.target = "sapphirerapids";
  const std::string refused = error_of([&] { load_stack("LSTM", 1, kHidden, kInput, options); });
  if (refused != "(no error)") {
    EXPECT_EQ(refused.rfind("target sapphirerapids uses ", 0), 0u) << refused;
    EXPECT_NE(refused.find("its kernels would stop with an illegal instruction"), std::string::npos)
        << refused;
  }
  options.target = "";
  EXPECT_EQ(error_of([] { parse_plan("fastest"); }),
            "unknown execution plan 'fastest' (expected auto, sequential, parallel or pipeline)");
  const std::string garbage = "this is not an ONNX model";
  try {
    CompiledModel::load_bytes(garbage.data(), garbage.size());
    ADD_FAILURE() << "garbage loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel) << e.what();
  }
  EXPECT_EQ(error_of([] { CompiledModel::load("/nonexistent/model.onnx"); }).find("/nonexistent/model.onnx") !=
                std::string::npos,
            true);
  auto model = load_stack("GRU", 1, kHidden, kInput);
  EXPECT_EQ(error_of([&] { model->new_session({{"nope", "x"}}); }),
            "state pair (nope -> x): 'nope' is not an output of the model");
  EXPECT_EQ(error_of([&] { model->new_session({{"y", "l0.rnn.initial_h"}}); }),
            "state pair (y -> l0.rnn.initial_h): 'l0.rnn.initial_h' is already fed by another "
            "state output");
}

// Scan has no lowering: it runs as a reference block inside a compiled model, its body reading a
// graph-level constant from the outer scope.
TEST(RuntimeApi, ScanRunsAsAReferenceBlock) {
  auto model = parse_model_text(R"(model opset=11
graph g(%xs: f32[3, 2]) {
  const %init: f32[2] = {0, 0}
  const %scale: f32[2] = {2, 2}
  %sum: f32[2], %steps: f32[3, 2] = Scan 's' (%init, %xs) {num_scan_inputs=1}
    body = graph body(%acc: f32[2], %x: f32[2]) {
      %scaled: f32[2] = Mul 'mul' (%x, %scale)
      %next: f32[2] = Add 'add' (%acc, %scaled)
      return %next: f32[2], %next: f32[2]
    }
  return %sum, %steps
}
)",
                                "scan.ir");
  std::string bytes = export_onnx_bytes(*model);
  ModelOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  auto compiled = CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
  std::vector<float> xs{1, 10, 2, 20, 3, 30};
  Session session = compiled->new_session();
  const auto& outputs = session.run({{"xs", {ElementType::kFloat32, {3, 2}, xs.data()}}});
  ASSERT_EQ(outputs.size(), 2u);
  const float* sum = static_cast<const float*>(outputs[0].tensor.data);
  EXPECT_EQ(std::vector<float>(sum, sum + 2), (std::vector<float>{12, 120}));
  const float* steps = static_cast<const float*>(outputs[1].tensor.data);
  EXPECT_EQ(std::vector<float>(steps, steps + 6), (std::vector<float>{2, 20, 6, 60, 12, 120}));
}

TEST(RuntimeApiErrors, SequenceGraphInputsAreRefusedAtLoadNamingTheInput) {
  auto model = parse_model_text(R"(model opset=16
graph g(%x: f32[2], %list: seq<f32[2]>) {
  %y: f32[2] = Relu 'relu' (%x)
  %same: seq<f32[2]> = Identity 'pass' (%list)
  return %y, %same
}
)",
                                "seq.ir");
  std::string bytes = export_onnx_bytes(*model);
  try {
    CompiledModel::load_bytes(bytes.data(), bytes.size());
    ADD_FAILURE() << "a model with a sequence input loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
    EXPECT_STREQ(e.what(),
                 "graph input 'list' is seq<f32[2]>: compiled models take and return tensors "
                 "only (the reference evaluator, rnnc run --reference, runs sequence and "
                 "optional ones)");
  }
}

// ---- Silero: the model's own state mapped by the caller ---------------------------------------

TEST(RuntimeApi, SileroStreamsWithItsOwnStateMapped) {
  const std::string path = RNNC_MODELS_DIR "/silero_vad_16k_op15.onnx";
  ASSERT_TRUE(std::filesystem::exists(path)) << "run models/fetch_silero.sh " RNNC_MODELS_DIR;
  ModelOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  options.fixed_inputs["sr"] = {16000};
  auto model = CompiledModel::load(path, options);
  EXPECT_TRUE(model->recurrent_state().empty()) << "Silero carries its own state";
  Session session = model->new_session({{"stateN", "state"}});
  auto original = import_onnx_file(path);
  Tensor state(DType::kFloat32, {2, 1, 128});
  for (int c = 0; c < 6; ++c) {
    std::vector<float> samples(512);
    for (int i = 0; i < 512; ++i) {
      const double t = (c * 512 + i) / 16000.0;
      samples[i] = static_cast<float>((0.5 + 0.5 * std::sin(2 * M_PI * 3 * t)) *
                                      (0.3 * std::sin(2 * M_PI * 220 * t)));
    }
    const auto& out = session.run({{"input", {ElementType::kFloat32, {1, 512}, samples.data()}}});
    Tensor input = Tensor::borrow(DType::kFloat32, {1, 512}, samples.data());
    std::vector<Tensor> expected = evaluate(
        *original->graph, {{"input", input}, {"state", state}, {"sr", Tensor::scalar<int64_t>(16000)}});
    Tensor probability = Tensor::borrow(DType::kFloat32, out[0].tensor.shape, out[0].tensor.data);
    auto result = rnnc::testing::compare_tensors(probability, expected[0], {1e-4, 1e-5});
    EXPECT_TRUE(result.ok) << "chunk " << c << ": " << result.message;
    state = expected[1];
  }
}

}  // namespace
}  // namespace rnnc
