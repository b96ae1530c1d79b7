// graph_opt's specialize, fold_constants and fold_shape_chains, numerically: each case runs the
// model through the reference evaluator before and after the passes on the same inputs, requires
// bit-identical outputs (folding runs the same kernels on the same float32 data, and an omitted
// initial state is the zeros it replaces, so no tolerance is needed) and checks that the node count
// shrank. Then the default pipeline over every ONNX backend node test model that imports, within
// rtol 1e-5 / atol 1e-6, with any non-bitwise difference listed; the demo model's optimized IR
// round-trips through ONNX export; and specialize's errors, by text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "graph_opt/pipeline.h"
#include "graph_opt/specialize.h"
#include "ir/npy.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/printer.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "tests/support/backend_cases.h"
#include "tests/support/compare.h"

namespace fs = std::filesystem;

namespace rnnc {
namespace {

const std::string kDemoModel = std::string(RNNC_SOURCE_DIR) + "/models/demo/lstm_demo.onnx";
const std::string kDemoInput = std::string(RNNC_SOURCE_DIR) + "/models/demo/input.npy";

// ---- helpers -----------------------------------------------------------------------------------

std::vector<PassReport> run_passes(Model& model, std::vector<std::string> passes,
                                   PassContext context = {}) {
  OptimizeOptions options;
  options.passes = std::move(passes);
  options.context = std::move(context);
  return optimize(model, options);
}

void expect_bitwise(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_TRUE(actual[i].bitwise_equal(expected[i]))
        << "output " << i << " changed: " << tensor_summary(actual[i]) << " vs "
        << tensor_summary(expected[i]);
  }
}

int64_t count_ops(const Graph& graph, const std::string& op_type) {
  int64_t count = 0;
  for (const auto& node : graph.nodes()) count += node->op_type() == op_type;
  return count;
}

std::unique_ptr<Model> parse(const std::string& text) { return parse_model_text(text, "test.ir"); }

// The message of the rnnc::Error `body` raises, with its kind checked.
template <typename Fn>
std::string error_of(Fn&& body, ErrorKind kind = ErrorKind::kInvalidInput) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error raised";
  return "";
}

// ---- the demo model ----------------------------------------------------------------------------

struct Demo {
  std::unique_ptr<Model> model = import_onnx_file(kDemoModel);
  std::map<std::string, Tensor> inputs = {{"features", read_npy(kDemoInput)}};
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  int64_t nodes = count_nodes(*model->graph);
};

TEST(GraphOptFold, FoldConstantsOnDemoFoldsEveryConstantNodeAndKeepsOutputsBitwise) {
  Demo demo;
  run_passes(*demo.model, {"fold_constants"});
  EXPECT_LT(count_nodes(*demo.model->graph), demo.nodes);
  EXPECT_EQ(count_ops(*demo.model->graph, "Constant"), 0);
  expect_bitwise(evaluate(*demo.model->graph, demo.inputs), demo.expected);
}

TEST(GraphOptFold, FoldShapeChainsOnDemoOmitsZeroStatesAndKeepsOutputsBitwise) {
  Demo demo;
  std::vector<PassReport> reports = run_passes(*demo.model, {"fold_shape_chains", "dce"});
  EXPECT_EQ(reports[0].stats["initial states omitted"], 4);
  EXPECT_LT(count_nodes(*demo.model->graph), demo.nodes);
  for (const char* op : {"Shape", "Gather", "Unsqueeze", "Concat", "ConstantOfShape", "Slice"}) {
    EXPECT_EQ(count_ops(*demo.model->graph, op), 0) << op;
  }
  expect_bitwise(evaluate(*demo.model->graph, demo.inputs), demo.expected);
}

TEST(GraphOptFold, DefaultPipelineOnDemoLeavesOnlyRecurrentOpsAndHead) {
  Demo demo;
  optimize(*demo.model, OptimizeOptions{});
  const Graph& graph = *demo.model->graph;
  for (const char* op : {"Shape", "Gather", "Unsqueeze", "Concat", "ConstantOfShape", "Constant"}) {
    EXPECT_EQ(count_ops(graph, op), 0) << op;
  }
  EXPECT_EQ(count_ops(graph, "LSTM"), 2);
  EXPECT_EQ(count_ops(graph, "LogSoftmax"), 1);
  EXPECT_LE(count_nodes(graph), 7) << to_text(graph);
  expect_bitwise(evaluate(graph, demo.inputs), demo.expected);
}

TEST(GraphOptFold, SpecializeDemoBatchKeepsOutputsBitwise) {
  Demo demo;
  PassContext context;
  context.fixed_dims = {{"batch", 1}};
  std::vector<PassReport> reports = run_passes(
      *demo.model, {"specialize", "fold_constants", "fold_shape_chains", "dce"}, context);
  EXPECT_GT(reports[0].stats["dims fixed"], 0);
  EXPECT_GT(reports[2].stats["shape values folded"], 0);  // Gather(Shape, 1) is now [1]
  EXPECT_EQ(to_text(*demo.model->graph).find("batch"), std::string::npos);
  EXPECT_LT(count_nodes(*demo.model->graph), demo.nodes);
  expect_bitwise(evaluate(*demo.model->graph, demo.inputs), demo.expected);
}

TEST(GraphOptFold, SpecializeDemoInputFoldsTheWholeModelToItsOutput) {
  Demo demo;
  PassContext context;
  context.fixed_inputs = {{"features", demo.inputs.at("features")}};
  run_passes(*demo.model, {"specialize", "fold_constants", "dce"}, context);
  EXPECT_EQ(count_nodes(*demo.model->graph), 0);
  ASSERT_EQ(demo.model->graph->outputs().size(), 1u);
  EXPECT_EQ(demo.model->graph->outputs()[0]->name(), "log_probs");  // the output keeps its name
  expect_bitwise(evaluate(*demo.model->graph, {}), demo.expected);
}

// The IR text with each graph's run of `const` lines sorted: import creates initializers in name
// order (ir/onnx_import.cc), while folding appends the constants it makes, so only the order of
// those lines may differ after a round trip.
std::string with_sorted_constants(const std::string& text) {
  std::vector<std::string> run;
  std::istringstream stream(text);
  std::string out, line;
  auto flush = [&] {
    std::sort(run.begin(), run.end());
    for (const std::string& l : run) out += l + "\n";
    run.clear();
  };
  while (std::getline(stream, line)) {
    if (line.find("const %") != std::string::npos && line.find(" = ") != std::string::npos &&
        line.find("const %") == line.find_first_not_of(' ')) {
      run.push_back(line);
      continue;
    }
    flush();
    out += line + "\n";
  }
  flush();
  return out;
}

TEST(GraphOptFold, FoldedDemoRoundTripsThroughOnnxExport) {
  Demo demo;
  run_passes(*demo.model, {"specialize", "fold_constants", "fold_shape_chains", "dce"});
  std::string bytes = export_onnx_bytes(*demo.model);
  std::unique_ptr<Model> reloaded = import_onnx_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(with_sorted_constants(to_text(*reloaded)), with_sorted_constants(to_text(*demo.model)));
  expect_bitwise(evaluate(*reloaded->graph, demo.inputs), demo.expected);
}

// ---- hand-written IR ---------------------------------------------------------------------------

// PyTorch's LSTM export prepares weights on initializers: gate reordering is Slice + Concat.
const char* kWeightSlicing = R"(
model opset=14
graph main(%x: f32[seq, batch, 1]) {
  const %W_torch: f32[1, 4, 1] = {0.5, -0.25, 1, 2}
  const %R_torch: f32[1, 4, 1] = {1, 2, 3, 4}
  const %zero: i64[1] = {0}
  const %one: i64[1] = {1}
  const %two: i64[1] = {2}
  const %four: i64[1] = {4}
  %W_if: f32[1, 1, 1] = Slice 'w_if' (%W_torch, %zero, %one, %one)
  %W_o: f32[1, 1, 1] = Slice 'w_o' (%W_torch, %one, %two, %one)
  %W_cg: f32[1, 2, 1] = Slice 'w_cg' (%W_torch, %two, %four, %one)
  %W: f32[1, 4, 1] = Concat 'w_onnx' (%W_if, %W_o, %W_cg) {axis=1}
  %R_t: f32[1, 1, 4] = Transpose 'r_t' (%R_torch) {perm=[0, 2, 1]}
  %R: f32[1, 4, 1] = Transpose 'r_back' (%R_t) {perm=[0, 2, 1]}
  %Y, %Y_h, %Y_c = LSTM 'lstm' (%x, %W, %R) {hidden_size=1}
  return %Y, %Y_h
}
)";

std::map<std::string, Tensor> ramp_input(const std::string& name, std::vector<int64_t> shape) {
  Tensor x(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = 0.25f * static_cast<float>(i % 7) - 0.6f;
  return {{name, x}};
}

TEST(GraphOptFold, FoldConstantsFoldsWeightSlicingBitwise) {
  auto model = parse(kWeightSlicing);
  auto inputs = ramp_input("x", {5, 2, 1});
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  std::vector<PassReport> reports = run_passes(*model, {"fold_constants", "dce"});
  EXPECT_EQ(reports[0].stats["nodes folded"], 6);
  EXPECT_EQ(count_nodes(*model->graph), 1);  // the LSTM
  expect_bitwise(evaluate(*model->graph, inputs), expected);
}

// A quantized weight read through DequantizeLinear stays quantized (per axis and per tensor, the
// latter on an integer tensor folded in the same run); the other quantization ops fold.
const char* kQuantized = R"(
model opset=13
graph main(%x: f32[2, 3], %a: u8[1, 3]) {
  const %w_q: i8[3, 2] = {1, -2, 3, -4, 5, -6}
  const %w_scale: f32[2] = {0.5, 0.25}
  const %w_zero: i8[2] = {0, 1}
  const %bias: f32[2] = {1.5, -2}
  const %bias_scale: f32[] = {0.5}
  const %levels: f32[3] = {0, 0.3, 2}
  const %w_u: u8[3, 2] = {1, 2, 3, 4, 5, 6}
  const %a_zero: u8[] = {1}
  %w: f32[3, 2] = DequantizeLinear 'dequantize_weight' (%w_q, %w_scale, %w_zero) {axis=1}
  %y: f32[2, 2] = MatMul 'matmul' (%x, %w)
  %bias_q: u8[2] = QuantizeLinear 'quantize_bias' (%bias, %bias_scale)
  %bias_dq: f32[2] = DequantizeLinear 'dequantize_bias' (%bias_q, %bias_scale)
  %out: f32[2, 2] = Add 'add_bias' (%y, %bias_dq)
  %levels_q: u8[3], %levels_scale: f32[], %levels_zero: u8[] = DynamicQuantizeLinear 'dynamic' (%levels)
  %product: i32[2] = MatMulInteger 'integer_product' (%levels_q, %w_u, %a_zero)
  %act: i32[1, 2] = MatMulInteger 'activation_product' (%a, %w_u, %a_zero)
  return %out, %levels_scale, %product, %act
}
)";

TEST(GraphOptFold, FoldConstantsKeepsQuantizedWeightsQuantizedBitwise) {
  auto model = parse(kQuantized);
  std::map<std::string, Tensor> inputs = ramp_input("x", {2, 3});
  inputs["a"] = Tensor::from_vector<uint8_t>({1, 3}, {0, 7, 255});
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  std::vector<PassReport> reports = run_passes(*model, {"fold_constants", "dce"});
  EXPECT_EQ(reports[0].stats["nodes folded"], 3);
  EXPECT_EQ(count_ops(*model->graph, "DequantizeLinear"), 2) << to_text(*model);
  EXPECT_EQ(count_ops(*model->graph, "QuantizeLinear"), 0);
  EXPECT_EQ(count_ops(*model->graph, "DynamicQuantizeLinear"), 0);
  EXPECT_EQ(count_ops(*model->graph, "MatMulInteger"), 1);  // the one reading input %a
  expect_bitwise(evaluate(*model->graph, inputs), expected);
}

// Zero initial states behind a Shape chain, for LSTM (sliced per layer) and GRU (unsqueezed).
const char* kZeroStates = R"(
model opset=14
graph main(%x: f32[seq, batch, 1]) {
  const %W: f32[1, 4, 1] = {0.5, -0.25, 1, 2}
  const %R: f32[1, 4, 1] = {1, 2, 3, 4}
  const %Wg: f32[1, 3, 1] = {0.5, -0.25, 1}
  const %Rg: f32[1, 3, 1] = {1, 2, 3}
  const %zero: i64[1] = {0}
  const %one: i64[1] = {1}
  const %two: i64[1] = {2}
  const %batch_axis: i64[] = {1}
  %shape: i64[3] = Shape 'shape' (%x)
  %batch: i64[] = Gather 'gather' (%shape, %batch_axis) {axis=0}
  %batch1: i64[1] = Unsqueeze 'unsqueeze' (%batch, %zero)
  %state_shape: i64[3] = Concat 'concat' (%two, %batch1, %one) {axis=0}
  %zeros: f32[2, batch, 1] = ConstantOfShape 'zeros' (%state_shape)
  %h0: f32[1, batch, 1] = Slice 'h0' (%zeros, %zero, %one, %zero)
  %c0: f32[1, batch, 1] = Slice 'c0' (%zeros, %one, %two, %zero)
  %Y, %Y_h, %Y_c = LSTM 'lstm' (%x, %W, %R, _, _, %h0, %c0) {hidden_size=1}
  %gru_shape: i64[2] = Concat 'gru_shape' (%batch1, %one) {axis=0}
  %gzeros: f32[batch, 1] = ConstantOfShape 'gru_zeros' (%gru_shape) {value=f32[1] = {0}}
  %g0: f32[1, batch, 1] = Unsqueeze 'g0' (%gzeros, %zero)
  %G, %G_h = GRU 'gru' (%x, %Wg, %Rg, _, _, %g0) {hidden_size=1}
  return %Y, %Y_c, %G_h
}
)";

TEST(GraphOptFold, FoldShapeChainsOmitsZeroStatesBitwise) {
  auto model = parse(kZeroStates);
  auto inputs = ramp_input("x", {4, 3, 1});
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  int64_t nodes = count_nodes(*model->graph);
  std::vector<PassReport> reports = run_passes(*model, {"fold_shape_chains", "dce"});
  EXPECT_EQ(reports[0].stats["initial states omitted"], 3);
  EXPECT_EQ(count_nodes(*model->graph), 2) << to_text(*model);  // LSTM, GRU
  EXPECT_LT(count_nodes(*model->graph), nodes);
  expect_bitwise(evaluate(*model->graph, inputs), expected);
}

TEST(GraphOptFold, FoldShapeChainsWithFixedBatchFoldsTheShapeValues) {
  auto model = parse(kZeroStates);
  auto inputs = ramp_input("x", {4, 1, 1});
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  PassContext context;
  context.fixed_dims = {{"batch", 1}};
  std::vector<PassReport> reports =
      run_passes(*model, {"specialize", "fold_shape_chains"}, context);
  // Gather, Unsqueeze, and both Concats are known numbers once batch is 1.
  EXPECT_EQ(reports[1].stats["shape values folded"], 4);
  EXPECT_EQ(count_ops(*model->graph, "Concat"), 0);
  expect_bitwise(evaluate(*model->graph, inputs), expected);
}

// A sample-rate input choosing a branch, as Silero's VAD does.
const char* kSampleRate = R"(
model opset=14
graph main(%x: f32[batch, n], %sr: i64[]) {
  const %k16000: i64[] = {16000}
  const %two: f32[] = {2}
  %is16k: bool[] = Equal 'is_16k' (%sr, %k16000)
  %scale: f32[] = Cast 'scale' (%is16k) {to=1}
  %scaled: f32[] = Mul 'scaled' (%scale, %two)
  %out: f32[batch, n] = If 'by_rate' (%is16k)
    else_branch = graph else_body() {
      %doubled: f32[batch, n] = Add 'add' (%x, %x)
      return %doubled: f32[batch, n]
    }
    then_branch = graph then_body() {
      %neg: f32[batch, n] = Neg 'neg' (%x)
      return %neg: f32[batch, n]
    }
  %y: f32[batch, n] = Mul 'mul' (%out, %scaled)
  return %y
}
)";

TEST(GraphOptFold, SpecializeFixedSampleRateFoldsTheConditionBitwise) {
  for (int64_t rate : {16000, 8000}) {
    auto model = parse(kSampleRate);
    auto inputs = ramp_input("x", {2, 3});
    auto with_rate = inputs;
    with_rate["sr"] = Tensor::scalar<int64_t>(rate);
    std::vector<Tensor> expected = evaluate(*model->graph, with_rate);
    PassContext context;
    context.fixed_inputs = {{"sr", parse_fixed_input(*model->graph, "sr", std::to_string(rate))}};
    std::vector<PassReport> reports = run_passes(*model, {}, context);  // the default pipeline
    EXPECT_EQ(reports[0].stats["inputs fixed"], 1);
    EXPECT_EQ(count_ops(*model->graph, "Equal"), 0);
    EXPECT_EQ(count_ops(*model->graph, "Cast"), 0);
    EXPECT_EQ(model->graph->inputs().size(), 1u);
    // The condition folded, so inline_if replaced the If by the branch the rate selects.
    EXPECT_EQ(count_ops(*model->graph, "If"), 0);
    EXPECT_EQ(count_ops(*model->graph, rate == 16000 ? "Neg" : "Add"), 1);
    expect_bitwise(evaluate(*model->graph, inputs), expected);
  }
}

TEST(GraphOptFold, FoldedGraphOutputKeepsItsNameAndNestedReturnsFollow) {
  auto model = parse(R"(
model opset=14
graph main(%c: bool[]) {
  const %a: f32[2] = {1, 2}
  %b: f32[2] = Neg 'neg' (%a)
  %out: f32[2] = If 'pick' (%c)
    else_branch = graph else_body() {
      return %b: f32[2]
    }
    then_branch = graph then_body() {
      return %a: f32[2]
    }
  return %b, %out
}
)");
  std::map<std::string, Tensor> inputs = {{"c", Tensor::scalar<bool>(false)}};
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  run_passes(*model, {"fold_constants", "dce"});
  EXPECT_EQ(count_nodes(*model->graph), 1);  // the If
  EXPECT_EQ(model->graph->outputs()[0]->name(), "b");
  EXPECT_TRUE(model->graph->outputs()[0]->is_constant());
  expect_bitwise(evaluate(*model->graph, inputs), expected);
}

// ---- specialize's errors -----------------------------------------------------------------------

const char* kTwoInputs = R"(
model opset=14
graph main(%x: f32[batch, 4], %sr: i64[], %gain: f32[1]) {
  %y: f32[batch, 4] = Mul 'scale' (%x, %gain)
  return %y, %sr
}
)";

std::string specialize_error(const PassContext& context) {
  auto model = parse(kTwoInputs);
  return error_of([&] { run_passes(*model, {"specialize"}, context); });
}

TEST(GraphOptFold, SpecializeErrorsNameTheInputOrDimAndWhatWasExpected) {
  PassContext unknown_input;
  unknown_input.fixed_inputs = {{"rate", Tensor::scalar<int64_t>(1)}};
  EXPECT_EQ(specialize_error(unknown_input),
            "cannot fix 'rate': the model has no input of that name (inputs: 'x', 'sr', 'gain')");

  PassContext wrong_dtype;
  wrong_dtype.fixed_inputs = {{"sr", Tensor::scalar<float>(16000)}};
  EXPECT_EQ(specialize_error(wrong_dtype),
            "cannot fix input 'sr' (i64[]): expected element type int64, got float");

  PassContext wrong_rank;
  wrong_rank.fixed_inputs = {{"x", Tensor(DType::kFloat32, {4})}};
  EXPECT_EQ(specialize_error(wrong_rank),
            "cannot fix input 'x' (f32[batch, 4]): expected shape [batch, 4] (rank 2), got [4]");

  PassContext wrong_dim;
  wrong_dim.fixed_inputs = {{"x", Tensor(DType::kFloat32, {2, 3})}};
  EXPECT_EQ(specialize_error(wrong_dim),
            "cannot fix input 'x' (f32[batch, 4]): expected shape [batch, 4], got [2, 3] (dim 1 "
            "is 3, expected 4)");

  PassContext unknown_dim;
  unknown_dim.fixed_dims = {{"batc", 1}};
  EXPECT_EQ(specialize_error(unknown_dim),
            "cannot fix dim 'batc': no dim of the model has that name (dims: batch)");

  PassContext negative_dim;
  negative_dim.fixed_dims = {{"batch", -1}};
  EXPECT_EQ(specialize_error(negative_dim), "cannot fix dim 'batch' to -1: a size is >= 0");

  PassContext conflict;
  conflict.fixed_dims = {{"batch", 2}};
  conflict.fixed_inputs = {{"x", Tensor(DType::kFloat32, {3, 4})}};
  EXPECT_EQ(specialize_error(conflict),
            "cannot fix dim 'batch' to 3 (input 'x' dim 0): --dim fixed it to 2");
}

TEST(GraphOptFold, FixedInputTextErrorsNameTheInputAndTheValue) {
  auto model = parse(kTwoInputs);
  const Graph& graph = *model->graph;
  EXPECT_EQ(error_of([&] { parse_fixed_input(graph, "rate", "1"); }),
            "cannot fix 'rate': the model has no input of that name (inputs: 'x', 'sr', 'gain')");
  EXPECT_EQ(error_of([&] { parse_fixed_input(graph, "sr", "16k"); }),
            "cannot fix input 'sr' (i64[]): '16k' is not an integer that fits int64");
  EXPECT_EQ(error_of([&] { parse_fixed_input(graph, "gain", "loud"); }),
            "cannot fix input 'gain' (f32[1]): 'loud' is not a number");
  EXPECT_EQ(error_of([&] { parse_fixed_input(graph, "x", "1"); }),
            "cannot fix input 'x' (f32[batch, 4]) to '1': a number fits only an input of shape [] "
            "(or all dims 1); give a tensor as @FILE.npy or @FILE.pb");
  EXPECT_EQ(error_of([&] { parse_fixed_input(graph, "x", "@/nonexistent.npy"); }, ErrorKind::kIo)
                    .find("/nonexistent.npy") != std::string::npos,
            true);

  Tensor rate = parse_fixed_input(graph, "sr", "16000");
  EXPECT_EQ(rate.dtype(), DType::kInt64);
  EXPECT_EQ(rate.rank(), 0);
  EXPECT_EQ(rate.data<int64_t>()[0], 16000);
  Tensor gain = parse_fixed_input(graph, "gain", "0.5");  // [1]: a number fills it
  EXPECT_EQ(gain.shape(), std::vector<int64_t>{1});
  EXPECT_EQ(gain.data<float>()[0], 0.5f);
}

// ---- every ONNX backend node test model --------------------------------------------------------

TEST(GraphOptFold, DefaultPipelineKeepsEveryBackendNodeModelsOutputs) {
  const fs::path root = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(root)) GTEST_SKIP() << root << " is not installed";
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(root)) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  int compared = 0, changed = 0, unsupported = 0, failing = 0;
  std::vector<std::string> inexact;
  for (const fs::path& dir : cases) {
    SCOPED_TRACE(dir.filename().string());
    std::unique_ptr<Model> model;
    std::map<std::string, Tensor> inputs;
    std::vector<Tensor> expected;
    try {
      model = import_onnx_file((dir / "model.onnx").string());
      inputs = testing::read_backend_inputs((dir / "test_data_set_0").string(), *model->graph);
      expected = evaluate(*model->graph, inputs);
    } catch (const Error& error) {
      // Unsupported, or one of the cases tests/onnx_backend/expected_failures.txt lists.
      ++(error.kind() == ErrorKind::kUnsupported ? unsupported : failing);
      continue;
    }
    int64_t nodes = count_nodes(*model->graph);
    ASSERT_NO_THROW(optimize(*model, OptimizeOptions{}));
    changed += count_nodes(*model->graph) != nodes;
    std::vector<Tensor> actual;
    ASSERT_NO_THROW(actual = evaluate(*model->graph, inputs));
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      testing::Comparison comparison =
          testing::compare_values(actual[i], expected[i], {1e-5, 1e-6});
      EXPECT_TRUE(comparison.ok) << "output " << i << ": " << comparison.message;
      if (comparison.ok && !actual[i].bitwise_equal(expected[i])) {
        inexact.push_back(cat(dir.filename().string(), " output ", i, " (max abs diff ",
                              comparison.max_abs_diff, ")"));
      }
    }
    ++compared;
  }
  std::cout << "[ backend  ] " << compared << " models compared (" << changed
            << " changed by the pipeline); skipped: " << unsupported << " unsupported, " << failing
            << " failing before optimization\n";
  for (const std::string& line : inexact) std::cout << "[ inexact  ] " << line << "\n";
  EXPECT_GT(compared, 500);
  EXPECT_GT(changed, 50);
}

}  // namespace
}  // namespace rnnc
