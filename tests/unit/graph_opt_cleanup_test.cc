// graph_opt's cleanup passes - eliminate_identity, cse, inline_if, canonicalize_recurrent -
// numerically: each case runs a model through the reference evaluator before and after one pass
// on the same inputs and requires the same outputs, and checks what the pass was meant to remove
// is gone (node count shrank, no If / Dropout / layout=1 left).
//
// Tolerance: none. eliminate_identity, cse and inline_if move no arithmetic, so outputs must be
// bit-identical. canonicalize_recurrent adds a zero bias and Transposes around a layout-0 node;
// the kernel computes the same sums in the same order, so outputs must be equal as values (rtol
// 0, atol 0: a zero bias may only turn a -0 pre-activation into +0).
//
// Models: hand-written IR for each rule, the ONNX backend cases that exercise each pass
// (test_identity*, test_dropout*, test_training_dropout* with training_mode fixed to false,
// test_if with its condition fixed, every LSTM/GRU/RNN case, batchwise = layout 1), and the
// recurrent cases of tests/data/recurrent (activations, clip, bidirectional, sequence_lens).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph_opt/pipeline.h"
#include "ir/onnx_import.h"
#include "ir/printer.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "tests/support/compare.h"

namespace fs = std::filesystem;

namespace rnnc {
namespace {

const fs::path kBackendCases = "/usr/share/libonnx-testdata/data/node";
const fs::path kRecurrentCases = fs::path(RNNC_SOURCE_DIR) / "tests/data/recurrent";

// ---- helpers -----------------------------------------------------------------------------------

PassReport run_pass(Model& model, const std::string& pass) {
  OptimizeOptions options;
  options.passes = {pass};
  return optimize(model, options).at(0);  // the verifier runs after the pass
}

int64_t count_ops(const Graph& graph, const std::string& op_type) {
  int64_t count = 0;
  for (const auto& node : graph.nodes()) {
    count += node->op_type() == op_type;
    for (const Graph* sub : node->subgraphs()) count += count_ops(*sub, op_type);
  }
  return count;
}

void expect_bitwise(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_TRUE(actual[i].bitwise_equal(expected[i]))
        << "output " << i << " changed: " << tensor_summary(actual[i]) << " vs "
        << tensor_summary(expected[i]);
  }
}

void expect_equal_values(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    testing::Comparison comparison = testing::compare_tensors(actual[i], expected[i], {0, 0});
    EXPECT_TRUE(comparison.ok) << "output " << i << ": " << comparison.message;
  }
}

// Deterministic inputs for a hand-written graph: symbolic dims bound by `dims`, floats in
// [-2, 2), integers 0..3, bools alternating.
std::map<std::string, Tensor> make_inputs(const Graph& graph,
                                          const std::map<std::string, int64_t>& dims = {}) {
  std::map<std::string, Tensor> inputs;
  uint32_t state = 12345;
  for (const Value* input : graph.inputs()) {
    std::vector<int64_t> shape;
    for (const Dim& dim : *input->type.shape) {
      shape.push_back(dim.is_known() ? dim.value() : dims.at(dim.to_string()));
    }
    Tensor tensor(input->type.dtype, shape);
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      state = state * 1664525u + 1013904223u;
      double unit = static_cast<double>(state >> 8) / static_cast<double>(1u << 24);
      switch (input->type.dtype) {
        case DType::kBool:
          tensor.set_double(i, i % 2);
          break;
        case DType::kInt32:
        case DType::kInt64:
          tensor.set_double(i, static_cast<double>(state >> 30));
          break;
        default:
          tensor.set_double(i, 4 * unit - 2);
      }
    }
    inputs[input->name()] = tensor;
  }
  return inputs;
}

std::unique_ptr<Model> parse(const std::string& text) { return parse_model_text(text, "test.ir"); }

// A case in the ONNX backend test layout: the model and its test_data_set_0 inputs.
struct Case {
  std::unique_ptr<Model> model;
  std::map<std::string, Tensor> inputs;
};

// nullopt-like: model == nullptr when the case is missing or rnnc does not support it.
Case load_case(const fs::path& dir) {
  Case loaded;
  if (!fs::exists(dir / "model.onnx")) return loaded;
  try {
    loaded.model = import_onnx_file((dir / "model.onnx").string());
  } catch (const Error& error) {
    if (error.kind() == ErrorKind::kUnsupported) return loaded;
    throw;
  }
  const Graph& graph = *loaded.model->graph;
  for (size_t i = 0; fs::exists(dir / "test_data_set_0" / cat("input_", i, ".pb")); ++i) {
    std::string name;
    Tensor tensor =
        read_tensor_pb((dir / "test_data_set_0" / cat("input_", i, ".pb")).string(), &name);
    const Value* named = graph.find_local_value(name);
    if (!named || !named->is_graph_input()) name = graph.inputs().at(i)->name();
    loaded.inputs[name] = tensor;
  }
  return loaded;
}

bool has_layout1(const Graph& graph) {
  for (const auto& node : graph.nodes()) {
    if (node->attr_int("layout", 0) == 1) return true;
  }
  return false;
}

// ---- eliminate_identity ------------------------------------------------------------------------

const char* const kIdentities = R"(
model opset=17
graph main(%x: f32[batch, 4], %scale: f32[4]) {
  const %w: f32[4] = {0.5, -1, 2, 0.25}
  %w_alias: f32[4] = Identity 'weight_alias' (%w)
  %a: f32[batch, 4] = Identity 'alias_a' (%x)
  %b: f32[batch, 4] = Identity 'alias_b' (%a)
  %m: f32[batch, 4] = Mul 'mul' (%b, %w_alias)
  %d: f32[batch, 4], %mask: bool[batch, 4] = Dropout 'dropout' (%m)
  %ln: f32[batch, 4], %mean: f32[batch, 1], %inv: f32[batch, 1] =
      LayerNormalization 'ln' (%d, %scale)
  %out: f32[batch, 4] = Identity 'to_output' (%ln)
  %passthrough: f32[batch, 4] = Identity 'input_to_output' (%x)
  return %out, %passthrough
}
)";

TEST(GraphOptCleanup, EliminateIdentityRemovesAliasesAndDropoutBitwise) {
  auto model = parse(kIdentities);
  auto inputs = make_inputs(*model->graph, {{"batch", 3}});
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  PassReport report = run_pass(*model, "eliminate_identity");
  EXPECT_TRUE(report.changed);
  EXPECT_EQ(report.nodes_before, 8);
  EXPECT_EQ(report.nodes_after, 3);  // Mul, LayerNormalization, the input_to_output Identity
  EXPECT_EQ(report.stats["identities removed"], 4);
  EXPECT_EQ(report.stats["dropouts removed"], 1);
  EXPECT_EQ(report.stats["training outputs dropped"], 2);
  EXPECT_EQ(count_ops(*model->graph, "Dropout"), 0);
  EXPECT_EQ(count_ops(*model->graph, "Identity"), 1);
  EXPECT_EQ(model->graph->outputs()[0]->name(), "out");
  EXPECT_EQ(model->graph->outputs()[0]->producer()->op_type(), "LayerNormalization");
  EXPECT_EQ(model->graph->outputs()[1]->name(), "passthrough");
  expect_bitwise(evaluate(*model->graph, inputs), expected);
  EXPECT_FALSE(run_pass(*model, "eliminate_identity").changed);  // a fixed point
}

TEST(GraphOptCleanup, EliminateIdentityMakesAUsedMaskConstantBitwise) {
  auto model = parse(R"(
model opset=13
graph main(%x: f32[2, 3]) {
  %d: f32[2, 3], %mask: bool[2, 3] = Dropout 'dropout' (%x)
  %mask_f: f32[2, 3] = Cast 'cast' (%mask) {to=1}
  %y: f32[2, 3] = Mul 'mul' (%d, %mask_f)
  return %y
}
)");
  auto inputs = make_inputs(*model->graph);
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  PassReport report = run_pass(*model, "eliminate_identity");
  EXPECT_LT(report.nodes_after, report.nodes_before);
  EXPECT_EQ(report.stats["dropout masks made constant"], 1);
  EXPECT_EQ(count_ops(*model->graph, "Dropout"), 0);
  expect_bitwise(evaluate(*model->graph, inputs), expected);
}

// Backend cases: the Dropout or Identity is the whole graph, between a graph input and a graph
// output, so it cannot vanish (the output keeps its name): an inference Dropout becomes an
// Identity, a Dropout whose mask is a graph output stays, and so does one in training mode.
struct IdentityCase {
  const char* name;
  int64_t dropouts_after;
  int64_t identities_after;
};

class EliminateIdentityBackend : public ::testing::TestWithParam<IdentityCase> {};

TEST_P(EliminateIdentityBackend, KeepsOutputsBitwise) {
  Case loaded = load_case(kBackendCases / GetParam().name);
  if (!loaded.model) GTEST_SKIP() << GetParam().name << " is not installed or not supported";
  Graph& graph = *loaded.model->graph;
  // Training mode with a run-time flag is left alone; fixed to false it is inference.
  if (Value* training = graph.find_local_value("t"); training && training->is_graph_input()) {
    loaded.inputs["t"] = Tensor::scalar<bool>(false);
    graph.convert_input_to_constant(training, loaded.inputs["t"]);
    loaded.inputs.erase("t");
  }
  std::vector<Tensor> expected = evaluate(graph, loaded.inputs);
  run_pass(*loaded.model, "eliminate_identity");
  EXPECT_EQ(count_ops(graph, "Dropout"), GetParam().dropouts_after);
  EXPECT_EQ(count_ops(graph, "Identity"), GetParam().identities_after);
  expect_bitwise(evaluate(graph, loaded.inputs), expected);
}

INSTANTIATE_TEST_SUITE_P(
    GraphOptCleanup, EliminateIdentityBackend,
    ::testing::Values(IdentityCase{"test_identity", 0, 1},
                      IdentityCase{"test_dropout_default", 0, 1},
                      IdentityCase{"test_dropout_default_ratio", 0, 1},
                      IdentityCase{"test_dropout_default_old", 0, 1},
                      IdentityCase{"test_dropout_random_old", 0, 1},
                      IdentityCase{"test_dropout_default_mask", 1, 0},  // mask is an output
                      IdentityCase{"test_dropout_default_mask_ratio", 1, 0},
                      IdentityCase{"test_training_dropout", 0, 1},  // t fixed to false
                      IdentityCase{"test_training_dropout_default", 0, 1},
                      IdentityCase{"test_training_dropout_zero_ratio", 0, 1},
                      IdentityCase{"test_training_dropout_mask", 1, 0}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(GraphOptCleanup, EliminateIdentityLeavesARunTimeTrainingModeAlone) {
  Case loaded = load_case(kBackendCases / "test_training_dropout_zero_ratio");
  if (!loaded.model) GTEST_SKIP() << "test_training_dropout_zero_ratio is not installed";
  std::vector<Tensor> expected = evaluate(*loaded.model->graph, loaded.inputs);
  EXPECT_FALSE(run_pass(*loaded.model, "eliminate_identity").changed);
  EXPECT_EQ(count_ops(*loaded.model->graph, "Dropout"), 1);
  expect_bitwise(evaluate(*loaded.model->graph, loaded.inputs), expected);
}

// ---- cse ---------------------------------------------------------------------------------------

const char* const kRepeated = R"(
model opset=14
graph main(%x: f32[seq, 4], %c: bool[]) {
  const %k1: f32[4] = {1, 2, 3, 4}
  const %k2: f32[4] = {1, 2, 3, 4}
  const %index: i64[1] = {0}
  %s1: i64[2] = Shape 'shape_1' (%x)
  %s2: i64[2] = Shape 'shape_2' (%x)
  %g1: i64[1] = Gather 'gather_1' (%s1, %index) {axis=0}
  %g2: i64[1] = Gather 'gather_2' (%s2, %index) {axis=0}
  %n: i64[2] = Concat 'dims' (%g1, %g2) {axis=0}
  %flat: f32[?, ?] = Reshape 'reshape' (%x, %s1)
  %l1: f32[seq, 4] = LeakyRelu 'leaky_1' (%x) {alpha=0.1}
  %l2: f32[seq, 4] = LeakyRelu 'leaky_2' (%x) {alpha=0.1}
  %l3: f32[seq, 4] = LeakyRelu 'leaky_3' (%x) {alpha=0.2}
  %a1: f32[seq, 4] = Mul 'scale_1' (%l1, %k1)
  %a2: f32[seq, 4] = Mul 'scale_2' (%l2, %k2)
  %b: f32[seq, 4] = Sub 'difference' (%a1, %a2)
  %y: f32[seq, 4] = Add 'sum' (%b, %l3)
  %u1: f32[seq, 4] = If 'if_1' (%c)
    else_branch = graph else_1() {
      return %x
    }
    then_branch = graph then_1() {
      %r1: f32[seq, 4] = Relu 'inner_1' (%x)
      %r2: f32[seq, 4] = Relu 'inner_2' (%x)
      %r: f32[seq, 4] = Add 'inner_add' (%r1, %r2)
      return %r
    }
  %u2: f32[seq, 4] = If 'if_2' (%c)
    else_branch = graph else_2() {
      return %x
    }
    then_branch = graph then_2() {
      %r3: f32[seq, 4] = Relu 'inner_3' (%x)
      %r4: f32[seq, 4] = Relu 'inner_4' (%x)
      %rr: f32[seq, 4] = Add 'inner_add_2' (%r3, %r4)
      return %rr
    }
  %u: f32[seq, 4] = Sub 'branches' (%u1, %u2)
  return %y, %n, %flat, %u
}
)";

TEST(GraphOptCleanup, CseMergesRepeatedNodesAndConstantsBitwise) {
  for (bool condition : {false, true}) {
    auto model = parse(kRepeated);
    auto inputs = make_inputs(*model->graph, {{"seq", 5}});
    inputs["c"] = Tensor::scalar<bool>(condition);
    std::vector<Tensor> expected = evaluate(*model->graph, inputs);
    PassReport report = run_pass(*model, "cse");
    EXPECT_EQ(report.stats["constants merged"], 1);
    // shape_2, gather_2, leaky_2, scale_2, and one Relu inside each then-branch.
    EXPECT_EQ(report.stats["nodes merged"], 6);
    EXPECT_EQ(report.nodes_after, report.nodes_before - 6);
    EXPECT_EQ(count_ops(*model->graph, "If"), 2);  // nodes with nested graphs never merge
    expect_bitwise(evaluate(*model->graph, inputs), expected);
    EXPECT_FALSE(run_pass(*model, "cse").changed);  // a fixed point
  }
}

TEST(GraphOptCleanup, CseKeepsEveryGraphOutputNamedAndDistinct) {
  auto model = parse(R"(
model opset=14
graph main(%x: f32[4]) {
  %inner: f32[4] = Relu 'relu_1' (%x)
  %out: f32[4] = Relu 'relu_2' (%x)
  %n: f32[4] = Neg 'neg' (%inner)
  %first: f32[4] = Sigmoid 'sigmoid_1' (%x)
  %second: f32[4] = Sigmoid 'sigmoid_2' (%x)
  return %out, %n, %first, %second
}
)");
  auto inputs = make_inputs(*model->graph);
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  PassReport report = run_pass(*model, "cse");
  EXPECT_EQ(report.nodes_after, 4);
  std::vector<std::string> names;
  for (const Value* output : model->graph->outputs()) names.push_back(output->name());
  EXPECT_EQ(names, (std::vector<std::string>{"out", "n", "first", "second"}));
  EXPECT_NE(model->graph->outputs()[2], model->graph->outputs()[3]);
  expect_bitwise(evaluate(*model->graph, inputs), expected);
}

// ---- inline_if ---------------------------------------------------------------------------------

const char* const kConstantIfs = R"(
model opset=14
graph main(%x: f32[batch, 4]) {
  const %outer_cond: bool[] = {%OUTER%}
  const %inner_cond: bool[] = {%INNER%}
  const %scale: f32[4] = {1, 2, 3, 4}
  %y: f32[batch, 4] = If 'outer_if' (%outer_cond)
    else_branch = graph outer_else() {
      %n: f32[batch, 4] = Neg 'outer_neg' (%x)
      return %n
    }
    then_branch = graph outer_then() {
      const %scale: f32[] = {0.5}
      %m: f32[batch, 4] = Mul 'branch_mul' (%x, %scale)
      %i: f32[batch, 4] = If 'inner_if' (%inner_cond)
        else_branch = graph inner_else() {
          %e: f32[batch, 4] = Exp 'inner_exp' (%m)
          return %e
        }
        then_branch = graph inner_then() {
          return %m
        }
      return %i
    }
  %z: f32[batch, 4] = Mul 'outer_mul' (%y, %scale)
  return %z, %y
}
)";

TEST(GraphOptCleanup, InlineIfReplacesConstantIfsByTheirBranchBitwise) {
  for (const char* outer : {"0", "1"}) {
    for (const char* inner : {"0", "1"}) {
      SCOPED_TRACE(cat("outer ", outer, ", inner ", inner));
      std::string text = kConstantIfs;
      text.replace(text.find("%OUTER%"), 7, outer);
      text.replace(text.find("%INNER%"), 7, inner);
      auto model = parse(text);
      auto inputs = make_inputs(*model->graph, {{"batch", 2}});
      std::vector<Tensor> expected = evaluate(*model->graph, inputs);
      PassReport report = run_pass(*model, "inline_if");
      EXPECT_TRUE(report.changed);
      EXPECT_LT(report.nodes_after, report.nodes_before);
      EXPECT_EQ(count_ops(*model->graph, "If"), 0);
      EXPECT_EQ(model->graph->outputs()[1]->name(), "y");  // the graph output keeps its name
      expect_bitwise(evaluate(*model->graph, inputs), expected);
    }
  }
}

TEST(GraphOptCleanup, InlineIfLeavesARunTimeConditionAlone) {
  auto model = parse(R"(
model opset=14
graph main(%x: f32[4], %c: bool[], %d: bool[] = default) {
  default %d = bool[] = {1}
  %y: f32[4] = If 'runtime' (%c)
    else_branch = graph else_1() {
      return %x
    }
    then_branch = graph then_1() {
      %n: f32[4] = Neg 'neg' (%x)
      return %n
    }
  %z: f32[4] = If 'overridable' (%d)
    else_branch = graph else_2() {
      return %x
    }
    then_branch = graph then_2() {
      return %y
    }
  return %z
}
)");
  EXPECT_FALSE(run_pass(*model, "inline_if").changed);
  EXPECT_EQ(count_ops(*model->graph, "If"), 2);
}

// y = rows == 1 ? Unsqueeze(Squeeze(x)) : Relu(x), as Silero VAD v5 squeezes its batch dim for
// batch 1. With `rows` fixed to 2 the then-branch no longer types (a dim of size 2 squeezed); the
// branch cannot run, so specializing for 2 and folding the condition takes the else-branch.
constexpr char kSqueezeForOneRow[] = R"(
model opset=13
graph main(%x: f32[rows, 4]) {
  const %zero: i64[] = {0}
  const %one: i64[] = {1}
  const %front: i64[1] = {0}
  %shape = Shape 'shape' (%x)
  %rows = Gather 'rows' (%shape, %zero)
  %single = Equal 'single' (%rows, %one)
  %y = If 'squeeze_if_single' (%single)
    else_branch = graph many() {
      %r = Relu 'keep' (%x)
      return %r
    }
    then_branch = graph single() {
      %s = Squeeze 'squeeze_rows' (%x, %front)
      %u = Unsqueeze 'unsqueeze_rows' (%s, %front)
      return %u
    }
  return %y
}
)";

TEST(GraphOptCleanup, ABranchThatCannotRunUnderFixedDimsDoesNotMakeTheModelInvalid) {
  for (int64_t rows : {2, 1}) {
    SCOPED_TRACE(cat("rows ", rows));
    auto model = parse(kSqueezeForOneRow);
    auto inputs = make_inputs(*model->graph, {{"rows", rows}});
    const std::vector<Tensor> expected = evaluate(*model->graph, inputs);
    OptimizeOptions options;
    options.passes = {"specialize", "fold_shape_chains", "fold_constants", "inline_if", "dce"};
    options.context.fixed_dims = {{"rows", rows}};
    optimize(*model, options);
    EXPECT_EQ(count_ops(*model->graph, "If"), 0);
    EXPECT_EQ(count_ops(*model->graph, "Squeeze"), rows == 1 ? 1 : 0);
    EXPECT_EQ(model->graph->outputs()[0]->type.to_string(), cat("f32[", rows, ", 4]"));
    expect_bitwise(evaluate(*model->graph, inputs), expected);
  }
}

// With a run-time condition a branch that does not type leaves the If the other branch's types;
// a run that takes it fails on the node that cannot run. Both branches failing is an error.
TEST(GraphOptCleanup, AnIfTypesFromTheBranchThatTypes) {
  // y = c ? then_op(x) : else_op(x) with x: f32[2, 4]; Squeeze of axis 0 does not type there.
  auto if_model = [](const std::string& then_op, const std::string& else_op) {
    std::string text = R"(
model opset=13
graph main(%x: f32[2, 4], %c: bool[]) {
  const %front: i64[1] = {0}
  %y = If 'choose' (%c)
    else_branch = graph else_body() {
      %e = %ELSE% (%x, %front)
      return %e
    }
    then_branch = graph then_body() {
      %t = %THEN% (%x, %front)
      return %t
    }
  return %y
}
)";
    text.replace(text.find("%ELSE%"), 6, else_op);
    text.replace(text.find("%THEN%"), 6, then_op);
    return parse(text);
  };
  auto model = if_model("Squeeze 'squeeze_rows'", "Unsqueeze 'add_axis'");
  EXPECT_EQ(model->graph->outputs()[0]->type.to_string(), "f32[1, 2, 4]");
  std::map<std::string, Tensor> inputs = make_inputs(*model->graph);
  inputs["c"] = Tensor::scalar<bool>(false);
  EXPECT_EQ(evaluate(*model->graph, inputs).at(0).shape(), (std::vector<int64_t>{1, 2, 4}));
  inputs["c"] = Tensor::scalar<bool>(true);
  try {
    evaluate(*model->graph, inputs);
    ADD_FAILURE() << "the branch that cannot run ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("squeeze_rows"), std::string::npos) << e.what();
  }
  try {
    if_model("Squeeze 'squeeze_then'", "Squeeze 'squeeze_else'");
    ADD_FAILURE() << "an If neither of whose branches types was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("squeeze_then"), std::string::npos) << e.what();
  }
}

// test_if: `res = If(cond)` with constant branches; the condition, a graph input, is fixed (as
// `--fix cond=...` would) to each value in turn.
TEST(GraphOptCleanup, InlineIfOnBackendTestIfWithTheConditionFixedBitwise) {
  for (bool condition : {true, false}) {
    Case loaded = load_case(kBackendCases / "test_if");
    if (!loaded.model) GTEST_SKIP() << "test_if is not installed";
    Graph& graph = *loaded.model->graph;
    loaded.inputs["cond"] = Tensor::scalar<bool>(condition);
    std::vector<Tensor> expected = evaluate(graph, loaded.inputs);
    graph.convert_input_to_constant(graph.find_local_value("cond"), loaded.inputs["cond"]);
    loaded.inputs.erase("cond");
    PassReport report = run_pass(*loaded.model, "inline_if");
    EXPECT_EQ(report.stats["Ifs inlined"], 1);
    EXPECT_EQ(count_ops(graph, "If"), 0);
    EXPECT_EQ(graph.outputs()[0]->name(), "res");
    expect_bitwise(evaluate(graph, loaded.inputs), expected);
  }
}

// ---- canonicalize_recurrent --------------------------------------------------------------------

const char* const kRecurrent = R"(
model opset=14
graph main(%x: f32[batch, seq, 2], %h0: f32[batch, 2, 1], %lens: i32[batch]) {
  const %W: f32[2, 3, 2] = {0.5, -0.25, 1, 2, -1, 0.75, 0.25, 0.5, -0.5, 1, 1.5, -2}
  const %R: f32[2, 3, 1] = {1, -0.5, 0.25, -1, 0.5, 2}
  %Y: f32[batch, seq, 2, 1], %Y_h: f32[batch, 2, 1] = GRU 'gru' (%x, %W, %R, _, %lens, %h0)
      {activations=["hardsigmoid", "Tanh", "Sigmoid", "affine"], activation_alpha=[0.3],
       direction="bidirectional", layout=1, linear_before_reset=1}
  %x_t: f32[seq, batch, 2] = Transpose 'time_major' (%x) {perm=[1, 0, 2]}
  const %W1: f32[1, 1, 2] = {0.5, -1}
  const %R1: f32[1, 1, 1] = {0.75}
  %Y1: f32[seq, 1, batch, 1] = RNN 'rnn' (%x_t, %W1, %R1) {activations=["tanh", "tanh"]}
  const %W2: f32[1, 4, 2] = {0.5, -0.25, 1, 2, -1, 0.75, 0.25, 0.5}
  const %R2: f32[1, 4, 1] = {1, -0.5, 0.25, -1}
  %Y2: f32[seq, 1, batch, 1], %Y2_h: f32[1, batch, 1], %Y2_c: f32[1, batch, 1] =
      LSTM 'lstm' (%x_t, %W2, %R2)
      {activations=["Sigmoid", "ScaledTanh", "LeakyRelu"], activation_beta=[0.5],
       direction="reverse"}
  return %Y, %Y_h, %Y1, %Y2, %Y2_c
}
)";

TEST(GraphOptCleanup, CanonicalizeRecurrentGivesOneFormWithTheSameValues) {
  auto model = parse(kRecurrent);
  auto inputs = make_inputs(*model->graph, {{"batch", 3}, {"seq", 4}});
  inputs["lens"] = Tensor::from_vector<int32_t>({3}, {4, 2, 0});
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  PassReport report = run_pass(*model, "canonicalize_recurrent");
  EXPECT_EQ(report.stats["layouts rewritten"], 1);
  EXPECT_EQ(report.stats["biases added"], 3);
  // Transposes on X and initial_h in, Y and Y_h out.
  EXPECT_EQ(report.nodes_after, report.nodes_before + 4);
  const Graph& graph = *model->graph;
  EXPECT_FALSE(has_layout1(graph));
  for (const auto& node : graph.nodes()) {
    if (node->op_type() != "GRU" && node->op_type() != "RNN" && node->op_type() != "LSTM") continue;
    SCOPED_TRACE(node->describe());
    EXPECT_FALSE(node->has_attr("layout"));
    EXPECT_TRUE(node->has_attr("direction"));
    EXPECT_EQ(node->attr_int("hidden_size", 0), 1);
    ASSERT_NE(node->input(3), nullptr);  // B
    if (node->op_type() == "GRU") {
      EXPECT_EQ(node->attr_strings("activations"),
                (std::vector<std::string>{"HardSigmoid", "Tanh", "Sigmoid", "Affine"}));
      EXPECT_EQ(node->attr_floats("activation_alpha"), (std::vector<float>{0.3f, 1.0f}));
      EXPECT_EQ(node->attr_floats("activation_beta"), (std::vector<float>{0.5f, 0.0f}));
      EXPECT_EQ(node->attr_int("linear_before_reset", 0), 1);  // left as written
    } else if (node->op_type() == "RNN") {
      EXPECT_EQ(node->attr_strings("activations"), std::vector<std::string>{"Tanh"});
      EXPECT_FALSE(node->has_attr("activation_alpha"));
    } else {
      EXPECT_EQ(node->attr_floats("activation_alpha"), (std::vector<float>{1.0f, 0.01f}));
      EXPECT_EQ(node->attr_floats("activation_beta"), (std::vector<float>{0.5f}));
    }
  }
  std::vector<std::string> names;
  for (const Value* output : graph.outputs()) names.push_back(output->name());
  EXPECT_EQ(names, (std::vector<std::string>{"Y", "Y_h", "Y1", "Y2", "Y2_c"}));
  expect_equal_values(evaluate(graph, inputs), expected);
  EXPECT_FALSE(run_pass(*model, "canonicalize_recurrent").changed);  // a fixed point
}

TEST(GraphOptCleanup, CanonicalizeRecurrentAddsNoLayoutBelowOpset14) {
  auto model = parse(R"(
model opset=7
graph main(%x: f32[seq, batch, 2]) {
  const %W: f32[1, 3, 2] = {0.5, -0.25, 1, 2, -1, 0.75}
  const %R: f32[1, 3, 1] = {1, -0.5, 0.25}
  %Y: f32[seq, 1, batch, 1] = GRU 'gru' (%x, %W, %R)
  return %Y
}
)");
  auto inputs = make_inputs(*model->graph, {{"batch", 2}, {"seq", 3}});
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  EXPECT_TRUE(run_pass(*model, "canonicalize_recurrent").changed);
  const Node& gru = *model->graph->nodes().front();
  EXPECT_FALSE(gru.has_attr("layout"));
  EXPECT_EQ(gru.attr_int("hidden_size", 0), 1);
  expect_equal_values(evaluate(*model->graph, inputs), expected);
}

// Every LSTM / GRU / RNN case: the backend's (the *_batchwise ones are layout 1) and
// tests/data/recurrent's (activations, clip, bidirectional, sequence_lens, float16/float64).
class CanonicalizeRecurrentCases : public ::testing::TestWithParam<std::string> {};

TEST_P(CanonicalizeRecurrentCases, KeepsOutputsAndLeavesNoLayout1) {
  fs::path dir =
      fs::path(GetParam()).is_absolute() ? fs::path(GetParam()) : kRecurrentCases / GetParam();
  Case loaded = load_case(dir);
  if (!loaded.model) GTEST_SKIP() << dir << " is not installed or not supported";
  Graph& graph = *loaded.model->graph;
  bool was_layout1 = has_layout1(graph);
  std::vector<Tensor> expected = evaluate(graph, loaded.inputs);
  PassReport report = run_pass(*loaded.model, "canonicalize_recurrent");
  EXPECT_EQ(report.stats["layouts rewritten"], was_layout1 ? 1 : 0);
  EXPECT_FALSE(has_layout1(graph));
  for (const auto& node : graph.nodes()) {
    if (node->op_type() != "GRU" && node->op_type() != "RNN" && node->op_type() != "LSTM") continue;
    EXPECT_TRUE(node->has_attr("activations") && node->has_attr("direction") &&
                node->has_attr("hidden_size") && node->input(3) != nullptr)
        << to_text(graph);
  }
  expect_equal_values(evaluate(graph, loaded.inputs), expected);
  EXPECT_FALSE(run_pass(*loaded.model, "canonicalize_recurrent").changed);
}

std::vector<std::string> recurrent_cases() {
  std::vector<std::string> cases;
  for (const char* name :
       {"test_lstm_batchwise", "test_lstm_defaults", "test_lstm_with_initial_bias",
        "test_lstm_with_peepholes", "test_gru_batchwise", "test_gru_defaults",
        "test_gru_seq_length", "test_gru_with_initial_bias", "test_rnn_seq_length",
        "test_simple_rnn_batchwise", "test_simple_rnn_defaults",
        "test_simple_rnn_with_initial_bias"}) {
    cases.push_back((kBackendCases / name).string());
  }
  if (fs::exists(kRecurrentCases)) {
    for (const auto& entry : fs::directory_iterator(kRecurrentCases)) {
      if (entry.is_directory()) cases.push_back(entry.path().filename().string());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

INSTANTIATE_TEST_SUITE_P(GraphOptCleanup, CanonicalizeRecurrentCases,
                         ::testing::ValuesIn(recurrent_cases()),
                         [](const auto& info) { return fs::path(info.param).filename().string(); });

// ---- every ONNX backend node test model --------------------------------------------------------

// Each pass alone over every model the foundation supports: the rewrites hold on graphs nobody
// wrote for them (Loop bodies, If branches, every op).
TEST(GraphOptCleanup, EachPassKeepsEveryBackendNodeModelsOutputs) {
  if (!fs::exists(kBackendCases)) GTEST_SKIP() << kBackendCases << " is not installed";
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(kBackendCases)) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  std::map<std::string, int> changed;
  int compared = 0;
  for (const fs::path& dir : dirs) {
    SCOPED_TRACE(dir.filename().string());
    for (const char* pass : {"eliminate_identity", "cse", "inline_if", "canonicalize_recurrent"}) {
      Case loaded;
      std::vector<Tensor> expected;
      try {
        loaded = load_case(dir);
        if (!loaded.model) break;
        expected = evaluate(*loaded.model->graph, loaded.inputs);
      } catch (const Error&) {
        break;  // fails before any pass: tests/onnx_backend/expected_failures.txt
      }
      SCOPED_TRACE(pass);
      PassReport report;
      ASSERT_NO_THROW(report = run_pass(*loaded.model, pass));
      changed[pass] += report.changed;
      std::vector<Tensor> actual;
      ASSERT_NO_THROW(actual = evaluate(*loaded.model->graph, loaded.inputs));
      if (std::string(pass) == "canonicalize_recurrent") {
        expect_equal_values(actual, expected);
      } else {
        expect_bitwise(actual, expected);
      }
      compared += std::string(pass) == "cse";
    }
  }
  std::cout << "[ backend  ] " << compared << " models; changed by eliminate_identity "
            << changed["eliminate_identity"] << ", cse " << changed["cse"] << ", inline_if "
            << changed["inline_if"] << ", canonicalize_recurrent "
            << changed["canonicalize_recurrent"] << "\n";
  EXPECT_GT(compared, 500);
}

}  // namespace
}  // namespace rnnc
