// Compiled models (graph_opt + partition + Halide lowering) against the reference evaluator on
// the graph as imported: the demo model, PyTorch exports, the official recurrent backend cases and
// Silero. Tolerance rtol 1e-4, atol 1e-5: float32 dot products summed in a blocked order (and the
// kernels' own exp/tanh) against the reference's double accumulation; the gates saturate rather
// than amplify errors, so they stay at ~1e-6 over the sequence lengths here.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "compiler/compile.h"
#include "ir/npy.h"
#include "ir/onnx_import.h"
#include "ir/reference/evaluator.h"
#include "lowering/program.h"
#include "tests/support/backend_cases.h"
#include "tests/support/compare.h"
#include "tests/support/random.h"

namespace rnnc {
namespace {

constexpr testing::Tolerance kTolerance{1e-4, 1e-5};

ProgramOptions test_options() {
  ProgramOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  return options;
}

void expect_close(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected,
                  const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    auto result = testing::compare_tensors(actual[i], expected[i], kTolerance);
    EXPECT_TRUE(result.ok) << what << " output " << i << ": " << result.message;
  }
}

size_t count_halide_blocks(const Program& program) {
  size_t n = 0;
  for (const auto& block : program.blocks()) n += block->kind().rfind("halide", 0) == 0;
  return n;
}

TEST(Program, DemoModelMatchesReferenceAndLowersItsLstms) {
  const std::string path = RNNC_SOURCE_DIR "/models/demo/lstm_demo.onnx";
  std::map<std::string, Tensor> inputs{
      {"features", read_npy(RNNC_SOURCE_DIR "/models/demo/input.npy")}};
  auto reference = evaluate(*import_onnx_file(path)->graph, inputs);
  auto program = compile_program(import_onnx_file(path), test_options());
  EXPECT_GE(count_halide_blocks(*program), 2u) << program->describe();
  expect_close(program->run(inputs), reference, "demo");
  // Dynamic axes: another sequence length and batch through the same compiled program.
  Tensor features(DType::kFloat32, {7, 3, 40});
  for (int64_t i = 0; i < features.numel(); ++i) features.data<float>()[i] = 0.01f * (i % 97) - 0.4f;
  std::map<std::string, Tensor> other{{"features", features}};
  expect_close(program->run(other), evaluate(*import_onnx_file(path)->graph, other), "demo 7x3");
}

TEST(Program, PytorchExportsMatchReference) {
  for (const char* name : {"lstm_bidirectional", "gru", "lstm_batch_first"}) {
    std::string base = std::string(RNNC_SOURCE_DIR "/tests/data/graph_opt/") + name;
    std::map<std::string, Tensor> inputs{{"x", read_npy(base + "_input.npy")}};
    auto reference = evaluate(*import_onnx_file(base + ".onnx")->graph, inputs);
    auto program = compile_program(import_onnx_file(base + ".onnx"), test_options());
    EXPECT_GE(count_halide_blocks(*program), 1u) << name << "\n" << program->describe();
    expect_close(program->run(inputs), reference, name);
  }
}

TEST(Program, OfficialRecurrentCasesMatchStoredOutputs) {
  int cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/share/libonnx-testdata/data/node")) {
    std::string name = entry.path().filename().string();
    bool recurrent = name.rfind("test_lstm", 0) == 0 || name.rfind("test_gru", 0) == 0 ||
                     name.rfind("test_rnn", 0) == 0 || name.rfind("test_simple_rnn", 0) == 0;
    if (!recurrent) continue;
    auto model = import_onnx_file(entry.path().string() + "/model.onnx");
    std::map<std::string, Tensor> inputs =
        testing::read_backend_inputs((entry.path() / "test_data_set_0").string(), *model->graph);
    auto reference = evaluate(*model->graph, inputs);
    // The cases feed the weights as inputs; a deployment compiles them in: fix every input but X.
    ProgramOptions options = test_options();
    std::map<std::string, Tensor> runtime_inputs;
    PassContext specialization;
    for (const auto& [input, tensor] : inputs) {
      if (input == model->graph->inputs()[0]->name()) runtime_inputs[input] = tensor;
      else specialization.fixed_inputs[input] = tensor;
    }
    auto program = compile_program(std::move(model), options, specialization);
    EXPECT_GE(count_halide_blocks(*program), 1u) << name << "\n" << program->describe();
    expect_close(program->run(runtime_inputs), reference, name);
    ++cases;
  }
  EXPECT_EQ(cases, 12);
}

// Sequence values inside a graph whose inputs and outputs are tensors (ONNX's simple/
// test_sequence_model1-8: SequenceConstruct/Empty/Insert/Erase/At, SplitToSequence,
// ConcatFromSequence, SequenceLength): the nodes that touch a sequence run as reference blocks
// passing it on as a value, and the compiled program equals the evaluator bit for bit.
TEST(Program, SequenceValuesInsideAGraphRunCompiled) {
  int cases = 0;
  for (int k = 1; k <= 8; ++k) {
    const std::string dir = cat("/usr/share/libonnx-testdata/data/simple/test_sequence_model", k);
    if (!std::filesystem::exists(dir)) continue;
    SCOPED_TRACE(dir);
    auto model = import_onnx_file(dir + "/model.onnx");
    std::map<std::string, Tensor> inputs =
        testing::read_backend_inputs(dir + "/test_data_set_0", *model->graph);
    std::vector<Tensor> reference = evaluate(*model->graph, inputs);
    auto program = compile_program(std::move(model), test_options());
    EXPECT_NE(program->describe().find("reference"), std::string::npos) << program->describe();
    std::vector<Tensor> compiled = program->run(inputs);
    ASSERT_EQ(compiled.size(), reference.size());
    for (size_t i = 0; i < compiled.size(); ++i) {
      EXPECT_TRUE(compiled[i].is_tensor());
      EXPECT_TRUE(compiled[i].bitwise_equal(reference[i])) << "output " << i;
    }
    ++cases;
  }
  EXPECT_EQ(cases, 8);
}

}  // namespace
}  // namespace rnnc

namespace rnnc {
namespace {

// With release_held_constants (the runtime's setting) the graph lets go of the data of constants
// that only blocks holding their own copies read (the LSTMs' packed W and R): the program still
// computes the same outputs bit for bit, and every constant a block reads from the graph at run
// time keeps its data.
// The exports of tests/data/aot (make_models.py): a decoder's ConvTranspose1d/2d with fused
// epilogues and a CumSum, a front-end's STFT and DFT, an upsampler's linear and nearest Resize.
// Every node runs in a Halide block, and the program equals the reference on the imported graph.
TEST(Program, DecoderFrontEndAndUpsamplerExportsRunNoReferenceBlock) {
  struct Case {
    const char* model;
    std::map<std::string, std::vector<int64_t>> inputs;
  };
  const std::vector<Case> cases = {
      {"decoder", {{"x", {2, 16, 7}}, {"s", {2, 2, 6, 7}}}},
      {"front_end", {{"signal", {1, 400, 1}}, {"x", {3, 24, 1}}}},
      {"upsampler", {{"x", {2, 4, 10}}, {"s", {2, 2, 3, 5}}}},
  };
  unsigned seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.model);
    const std::string path = cat(RNNC_SOURCE_DIR "/tests/data/aot/", c.model, ".onnx");
    std::map<std::string, Tensor> inputs;
    for (const auto& [name, shape] : c.inputs) inputs[name] = testing::random_tensor(shape, seed++);
    auto program = compile_program(import_onnx_file(path), test_options());
    for (const auto& block : program->blocks()) {
      EXPECT_EQ(block->kind().rfind("halide", 0), 0u) << program->describe();
    }
    expect_close(program->run(inputs), evaluate(*import_onnx_file(path)->graph, inputs), c.model);
  }
}

TEST(Program, ReleasesTheGraphCopyOfConstantsItsBlocksHold) {
  const std::string path = RNNC_SOURCE_DIR "/models/demo/lstm_demo.onnx";
  std::map<std::string, Tensor> inputs{
      {"features", read_npy(RNNC_SOURCE_DIR "/models/demo/input.npy")}};
  auto kept = compile_program(import_onnx_file(path), test_options());
  EXPECT_EQ(kept->released_constant_bytes(), 0u);
  ProgramOptions options = test_options();
  options.release_held_constants = true;
  auto released = compile_program(import_onnx_file(path), options);

  size_t recurrent_weight_bytes = 0;
  for (const auto& block : released->blocks()) {
    for (const Node* node : block->nodes) {
      for (const Value* value : node->inputs()) {
        if (!value || !value->is_constant() || value->is_graph_input()) continue;
        if (!block->holds_its_constants()) {
          EXPECT_TRUE(value->constant()->has_data()) << block->kind() << " reads " << value->name();
        }
      }
      if (node->op_type() == "LSTM" && block->holds_its_constants()) {
        for (size_t input : {1, 2}) {  // W, R
          const Value* weight = node->input(input);
          EXPECT_FALSE(weight->constant()->has_data()) << weight->name();
          EXPECT_EQ(weight->constant()->rank(), 3) << weight->name() << " keeps its shape";
          recurrent_weight_bytes += weight->constant()->nbytes();
        }
      }
    }
  }
  EXPECT_GT(recurrent_weight_bytes, 0u);
  EXPECT_GE(released->released_constant_bytes(), recurrent_weight_bytes);
  std::vector<Tensor> expected = kept->run(inputs);
  std::vector<Tensor> actual = released->run(inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_TRUE(actual[i].bitwise_equal(expected[i])) << i;
}

TEST(Program, AReferenceOnlyProgramReleasesNothing) {
  ProgramOptions options = test_options();
  options.release_held_constants = true;
  options.reference_only = true;
  auto program = compile_program(import_onnx_file(RNNC_SOURCE_DIR "/models/demo/lstm_demo.onnx"),
                               options);
  EXPECT_EQ(program->released_constant_bytes(), 0u);
  for (const Value* value : program->model().graph->initializers()) {
    EXPECT_TRUE(value->constant()->has_data()) << value->name();
  }
}

// `rnnc plan` reports per block whether it compiled (and how long) or came from the kernel cache.
TEST(Program, BlocksReportCompileTimeOrCacheHits) {
  const std::string path = RNNC_SOURCE_DIR "/models/demo/lstm_demo.onnx";
  ProgramOptions options;
  options.cache_dir = (std::filesystem::temp_directory_path() /
                       ("rnnc_program_test_cache_" + std::to_string(::getpid())))
                          .string();
  std::filesystem::remove_all(options.cache_dir);
  auto cold = compile_program(import_onnx_file(path), options);
  EXPECT_FALSE(cold->blocks().front()->from_cache);
  EXPECT_GT(cold->blocks().front()->compile_ms, 0);
  auto warm = compile_program(import_onnx_file(path), options);
  for (const auto& block : warm->blocks()) {
    if (block->kind().rfind("halide", 0) != 0) continue;
    EXPECT_TRUE(block->from_cache) << block->kind();
    EXPECT_EQ(block->compile_ms, 0) << block->kind();
  }
  EXPECT_NE(warm->describe().find("(cached)"), std::string::npos);
  std::filesystem::remove_all(options.cache_dir);
}

}  // namespace
}  // namespace rnnc
