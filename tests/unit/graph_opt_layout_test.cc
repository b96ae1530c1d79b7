// graph_opt's eliminate_layout_ops and fusion_groups, numerically: every case runs the graph
// through the reference evaluator before and after the passes on the same inputs and requires
// bit-identical outputs (the passes only remove ops that provably compute nothing and add
// annotations the evaluator ignores, so no tolerance is needed), and checks what the passes did
// (ops gone, or the annotations lowering reads). Hand-written IR first, then PyTorch's exports from
// tests/data/graph_opt/make_exports.py.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "graph_opt/pipeline.h"
#include "ir/npy.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/printer.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "tests/support/compare.h"

namespace rnnc {
namespace {

// ---- helpers -----------------------------------------------------------------------------------

// Deterministic values in [-1, 1) for every float input, dims from `axes` (e.g. {seq: 5}).
std::map<std::string, Tensor> random_inputs(const Graph& graph,
                                            const std::map<std::string, int64_t>& axes) {
  uint32_t state = 12345;
  std::map<std::string, Tensor> inputs;
  for (const Value* input : graph.inputs()) {
    std::vector<int64_t> shape;
    for (const Dim& dim : *input->type.shape) {
      auto size = dim.evaluate(axes);
      EXPECT_TRUE(size.has_value()) << input->name() << ": no size for " << dim.to_string();
      shape.push_back(size.value_or(1));
    }
    Tensor tensor(input->type.dtype, shape);
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      state = state * 1664525u + 1013904223u;
      tensor.set_double(i, static_cast<double>(state >> 8) / (1 << 23) - 1.0);
    }
    inputs.emplace(input->name(), std::move(tensor));
  }
  return inputs;
}

PassReport run_pass(Model& model, const std::string& pass) {
  OptimizeOptions options;
  options.passes = {pass};
  return optimize(model, options).front();
}

void expect_identical(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_TRUE(actual[i].bitwise_equal(expected[i])) << "output " << i << " changed";
  }
}

const Node& node_named(const Graph& graph, const std::string& name) {
  for (const auto& node : graph.nodes()) {
    if (node->name() == name) return *node;
  }
  ADD_FAILURE() << "no node '" << name << "'";
  return *graph.nodes().front();
}

std::string string_attr(const Graph& graph, const std::string& node, const std::string& attr) {
  return node_named(graph, node).attr_string(attr, "(absent)");
}

int64_t int_attr(const Graph& graph, const std::string& node, const std::string& attr) {
  return node_named(graph, node).attr_int(attr, -1);
}

size_t count_ops(const Graph& graph, const std::string& op) {
  size_t count = 0;
  for (const auto& node : graph.nodes()) count += node->op_type() == op ? 1 : 0;
  return count;
}

size_t count_attr(const Graph& graph, const std::string& attr) {
  size_t count = 0;
  for (const auto& node : graph.nodes()) count += node->has_attr(attr) ? 1 : 0;
  return count;
}

// Parses `text`, evaluates it, runs `passes`, evaluates again on the same inputs and requires
// identical outputs; returns the optimized model.
std::unique_ptr<Model> optimize_and_compare(const std::string& text,
                                            const std::vector<std::string>& passes,
                                            const std::map<std::string, int64_t>& axes) {
  auto model = parse_model_text(text, "test.ir");
  auto inputs = random_inputs(*model->graph, axes);
  std::vector<Tensor> before = evaluate(*model->graph, inputs);
  OptimizeOptions options;
  options.passes = passes;
  optimize(*model, options);
  expect_identical(evaluate(*model->graph, inputs), before);
  return model;
}

const std::map<std::string, int64_t> kAxes = {{"seq", 5}, {"batch", 3}};

// ---- eliminate_layout_ops on hand-written IR ---------------------------------------------------

// (a): PyTorch's Y -> Squeeze(1) per one-direction layer.
const char* const kUnidirectionalSqueeze = R"(
model opset=14
graph main(%x: f32[seq, batch, 2], %W0: f32[1, 8, 2], %R0: f32[1, 8, 2], %W1: f32[1, 6, 2],
           %R1: f32[1, 6, 2]) {
  const %axes: i64[1] = {1}
  %Y0, _, _ = LSTM 'layer0' (%x, %W0, %R0) {hidden_size=2}
  %s0 = Squeeze 'layer0_squeeze' (%Y0, %axes)
  %Y1, _ = GRU 'layer1' (%s0, %W1, %R1) {hidden_size=2, linear_before_reset=1}
  %s1 = Squeeze 'layer1_squeeze' (%Y1, %axes)
  %out = Relu 'head' (%s1)
  return %out
}
)";

TEST(EliminateLayoutOps, UnidirectionalSqueezeBecomesAViewOfY) {
  auto model = optimize_and_compare(kUnidirectionalSqueeze, {"eliminate_layout_ops"}, kAxes);
  const Graph& graph = *model->graph;
  EXPECT_EQ(string_attr(graph, "layer0", "rnnc.y_layout"), "seq_batch_hidden");
  EXPECT_EQ(string_attr(graph, "layer1", "rnnc.y_layout"), "seq_batch_hidden");
  EXPECT_EQ(string_attr(graph, "layer0_squeeze", "rnnc.layout_of"), "layer0.y");
  EXPECT_EQ(string_attr(graph, "layer1_squeeze", "rnnc.layout_of"), "layer1.y");
  EXPECT_EQ(count_ops(graph, "Squeeze"), 2u);  // still plain ONNX
}

// (b): PyTorch's bidirectional Y -> Transpose(0, 2, 1, 3) -> Reshape([0, 0, -1]).
const char* const kBidirectional = R"(
model opset=14
graph main(%x: f32[seq, batch, 2], %W: f32[2, 12, 2], %R: f32[2, 12, 3]) {
  const %concat_directions: i64[3] = {0, 0, -1}
  %Y, %Y_h, _ = LSTM 'bilstm' (%x, %W, %R) {direction="bidirectional", hidden_size=3}
  %t = Transpose 'join_transpose' (%Y) {perm=[0, 2, 1, 3]}
  %r = Reshape 'join_reshape' (%t, %concat_directions)
  %out = Tanh 'head' (%r)
  return %out, %Y_h
}
)";

TEST(EliminateLayoutOps, BidirectionalTransposeReshapeBecomesConcatenatedDirections) {
  auto model = optimize_and_compare(kBidirectional, {"eliminate_layout_ops"}, kAxes);
  const Graph& graph = *model->graph;
  EXPECT_EQ(string_attr(graph, "bilstm", "rnnc.y_layout"), "seq_batch_dirhidden");
  EXPECT_EQ(string_attr(graph, "join_transpose", "rnnc.layout_of"), "bilstm.y");
  EXPECT_EQ(string_attr(graph, "join_reshape", "rnnc.layout_of"), "bilstm.y");
  // Y_h is a graph output: read in its ONNX layout, so not folded.
  EXPECT_FALSE(node_named(graph, "bilstm").has_attr("rnnc.y_h_layout"));
}

// (d): batch-major X, initial_h, Y and Y_h around a layout-0 node; also a layout=1 node.
const char* const kBatchMajor = R"(
model opset=14
graph main(%x: f32[batch, seq, 2], %W: f32[1, 4, 2], %R: f32[1, 4, 1], %h0: f32[batch, 1, 1],
           %Wr: f32[1, 1, 1], %Rr: f32[1, 1, 1]) {
  const %dir_axis: i64[1] = {1}
  const %dir_axis_layout1: i64[1] = {2}
  %xt = Transpose 'x_to_time_major' (%x) {perm=[1, 0, 2]}
  %h0t = Transpose 'h0_to_dir_major' (%h0) {perm=[1, 0, 2]}
  %Y, %Y_h, _ = LSTM 'lstm' (%xt, %W, %R, _, _, %h0t) {hidden_size=1}
  %s = Squeeze 'drop_dir' (%Y, %dir_axis)
  %yb = Transpose 'y_to_batch_major' (%s) {perm=[1, 0, 2]}
  %hb = Transpose 'h_to_batch_major' (%Y_h) {perm=[1, 0, 2]}
  %Y1, _ = RNN 'rnn_layout1' (%yb, %Wr, %Rr) {hidden_size=1, layout=1}
  %s1 = Squeeze 'drop_dir_layout1' (%Y1, %dir_axis_layout1)
  %t1 = Transpose 'to_time_major' (%s1) {perm=[1, 0, 2]}
  return %t1, %hb
}
)";

TEST(EliminateLayoutOps, BatchMajorTransposesBecomeViews) {
  auto model = optimize_and_compare(kBatchMajor, {"eliminate_layout_ops"}, kAxes);
  const Graph& graph = *model->graph;
  EXPECT_EQ(string_attr(graph, "lstm", "rnnc.x_layout"), "batch_seq_input");
  EXPECT_EQ(string_attr(graph, "lstm", "rnnc.initial_h_layout"), "batch_dir_hidden");
  EXPECT_EQ(string_attr(graph, "lstm", "rnnc.y_layout"), "batch_seq_hidden");
  EXPECT_EQ(string_attr(graph, "lstm", "rnnc.y_h_layout"), "batch_dir_hidden");
  EXPECT_EQ(string_attr(graph, "x_to_time_major", "rnnc.layout_of"), "lstm.x");
  EXPECT_EQ(string_attr(graph, "h0_to_dir_major", "rnnc.layout_of"), "lstm.initial_h");
  EXPECT_EQ(string_attr(graph, "y_to_batch_major", "rnnc.layout_of"), "lstm.y");
  EXPECT_EQ(string_attr(graph, "h_to_batch_major", "rnnc.layout_of"), "lstm.y_h");
  // layout=1 RNN: Y [batch, seq, 1, H] -> Squeeze(2) -> Transpose(1, 0, 2) -> [seq, batch, H].
  EXPECT_EQ(string_attr(graph, "rnn_layout1", "rnnc.y_layout"), "seq_batch_hidden");
  EXPECT_EQ(string_attr(graph, "to_time_major", "rnnc.layout_of"), "rnn_layout1.y");
  // Its X is the LSTM's batch-major Y view: the first claim (the LSTM's) keeps the Transpose.
  EXPECT_FALSE(node_named(graph, "rnn_layout1").has_attr("rnnc.x_layout"));
}

// canonicalize_recurrent turns a layout=1 node into Transposes around a layout-0 node; every one
// of them folds back, so lowering reads and writes the batch-major tensors in place.
const char* const kLayout1Gru = R"(
model opset=14
graph main(%x: f32[batch, seq, 2], %W: f32[1, 3, 2], %R: f32[1, 3, 1], %B: f32[1, 6],
           %h0: f32[batch, 1, 1]) {
  %Y, %Y_h = GRU 'gru' (%x, %W, %R, %B, _, %h0) {hidden_size=1, layout=1}
  %out = Relu 'head' (%Y)
  return %out, %Y_h
}
)";

TEST(EliminateLayoutOps, CanonicalizedLayout1TransposesFoldBack) {
  auto model =
      optimize_and_compare(kLayout1Gru, {"canonicalize_recurrent", "eliminate_layout_ops"}, kAxes);
  const Graph& graph = *model->graph;
  EXPECT_FALSE(node_named(graph, "gru").has_attr("layout"));
  EXPECT_EQ(string_attr(graph, "gru", "rnnc.x_layout"), "batch_seq_input");
  EXPECT_EQ(string_attr(graph, "gru", "rnnc.initial_h_layout"), "batch_dir_hidden");
  EXPECT_EQ(string_attr(graph, "gru", "rnnc.y_layout"), "batch_seq_dir_hidden");
  EXPECT_EQ(string_attr(graph, "gru", "rnnc.y_h_layout"), "batch_dir_hidden");
  EXPECT_EQ(count_ops(graph, "Transpose"), 4u);
  EXPECT_EQ(count_attr(graph, "rnnc.layout_of"), 4u);
}

TEST(EliminateLayoutOps, ViewsItCannotExpressStayUnmarked) {
  // Y read in its ONNX layout by a second node must exist as [seq, 2, batch, H].
  std::string text = kBidirectional;
  text.replace(text.find("  return %out, %Y_h"), 19,
               "  %other = Relu 'reads_y' (%Y)\n  return %out, %Y_h, %other");
  auto model = optimize_and_compare(text, {"eliminate_layout_ops"}, kAxes);
  EXPECT_EQ(count_attr(*model->graph, "rnnc.layout_of"), 0u);
  EXPECT_FALSE(node_named(*model->graph, "bilstm").has_attr("rnnc.y_layout"));
}

// (c): pairs that cancel anywhere in the graph go for real.
const char* const kPairs = R"(
model opset=14
graph main(%x: f32[seq, 4, 3]) {
  const %front: i64[1] = {0}
  const %flat: i64[1] = {-1}
  const %back: i64[3] = {-1, 4, 3}
  const %rows: i64[2] = {-1, 3}
  %a = Transpose 'rotate' (%x) {perm=[1, 2, 0]}
  %b = Transpose 'rotate_back' (%a) {perm=[2, 0, 1]}
  %c = Relu 'reads_restored' (%b)
  %d = Transpose 'swap01' (%x) {perm=[1, 0, 2]}
  %e = Transpose 'swap12' (%d) {perm=[0, 2, 1]}
  %f = Unsqueeze 'add_axis' (%c, %front)
  %g = Squeeze 'drop_axis' (%f, %front)
  %h = Sigmoid 'reads_squeezed' (%g)
  %i = Reshape 'flatten' (%x, %flat)
  %j = Reshape 'unflatten' (%i, %back)
  %k = Neg 'reads_unflattened' (%j)
  %l = Unsqueeze 'unsqueeze_then_reshape' (%x, %front)
  %m = Reshape 'to_rows' (%l, %rows)
  %n = Transpose 'out_rotate' (%x) {perm=[1, 2, 0]}
  %o = Transpose 'out_rotate_back' (%n) {perm=[2, 0, 1]}
  return %e, %h, %k, %m, %o
}
)";

TEST(EliminateLayoutOps, CancellingPairsShrinkTheGraph) {
  auto model = parse_model_text(kPairs, "pairs.ir");
  auto inputs = random_inputs(*model->graph, kAxes);
  std::vector<Tensor> before = evaluate(*model->graph, inputs);
  PassReport report = run_pass(*model, "eliminate_layout_ops");
  EXPECT_TRUE(report.changed);
  EXPECT_EQ(report.nodes_before, 15);
  EXPECT_EQ(report.nodes_after, 6);  // 4 readers, the composed Transpose, the output's copy
  EXPECT_EQ(report.stats["transpose pairs cancelled"], 1);
  EXPECT_EQ(report.stats["transposes composed"], 2);  // swap01/swap12, out_rotate/out_rotate_back
  EXPECT_EQ(report.stats["reshape pairs cancelled"], 2);
  EXPECT_EQ(report.stats["reshapes collapsed"], 1);
  EXPECT_EQ(report.stats["nodes removed"], 9);
  expect_identical(evaluate(*model->graph, inputs), before);
}

// ---- fusion_groups on hand-written IR ----------------------------------------------------------

const char* const kFusion = R"(
model opset=14
graph main(%x: f32[seq, 4], %w: f32[4, 4], %bias: f32[4], %z: f32[seq, 4]) {
  %m = MatMul 'project' (%x, %w)
  %b = Add 'add_bias' (%m, %bias)
  %t = Tanh 'activation' (%b)
  %e = Exp 'left' (%t)
  %n = Neg 'right' (%t)
  %d = Add 'join' (%e, %n)
  %s = Sigmoid 'after_output' (%d)
  %u = Mul 'scale' (%s, %z)
  %small = Relu 'small' (%bias)
  %wide = Add 'broadcasts_small' (%small, %u)
  return %d, %wide
}
)";

TEST(FusionGroups, SingleReaderChainsAreGroupedAndOutputsUnchanged) {
  auto model = parse_model_text(kFusion, "fusion.ir");
  auto inputs = random_inputs(*model->graph, kAxes);
  std::vector<Tensor> before = evaluate(*model->graph, inputs);
  PassReport report = run_pass(*model, "fusion_groups");
  EXPECT_TRUE(report.changed);
  EXPECT_EQ(report.nodes_after, report.nodes_before);  // annotations only
  EXPECT_EQ(report.stats["fusion groups"], 3);
  EXPECT_EQ(report.stats["nodes fused"], 9);
  EXPECT_EQ(report.stats["epilogues absorbed"], 1);
  const Graph& graph = *model->graph;
  EXPECT_EQ(int_attr(graph, "project", "rnnc.fusion_group"), 0);
  EXPECT_EQ(int_attr(graph, "project", "rnnc.fusion_root"), 1);
  EXPECT_EQ(int_attr(graph, "activation", "rnnc.fusion_group"), 0);
  // %t has two readers: materialized, and fused into neither branch's group with its producer.
  EXPECT_EQ(int_attr(graph, "left", "rnnc.fusion_group"), 1);
  EXPECT_EQ(int_attr(graph, "right", "rnnc.fusion_group"), 1);
  EXPECT_EQ(int_attr(graph, "join", "rnnc.fusion_group"), 1);
  // %d is a graph output: the Sigmoid reading it starts a new group.
  EXPECT_EQ(int_attr(graph, "after_output", "rnnc.fusion_group"), 2);
  EXPECT_EQ(int_attr(graph, "scale", "rnnc.fusion_group"), 2);
  EXPECT_EQ(int_attr(graph, "broadcasts_small", "rnnc.fusion_group"), 2);
  // Relu [4] is broadcast to [seq, 4] by its reader: not fused (it would run once per row).
  EXPECT_FALSE(node_named(graph, "small").has_attr("rnnc.fusion_group"));
  expect_identical(evaluate(*model->graph, inputs), before);
}

// ---- both passes: idempotent, and what ONNX export makes of their results ---------------------

TEST(LayoutAndFusion, RunningTwiceChangesNothing) {
  for (const char* text : {kUnidirectionalSqueeze, kBidirectional, kBatchMajor, kPairs, kFusion}) {
    auto model = parse_model_text(text, "twice.ir");
    run_pass(*model, "eliminate_layout_ops");
    run_pass(*model, "fusion_groups");
    std::string once = to_text(*model);
    EXPECT_FALSE(run_pass(*model, "eliminate_layout_ops").changed) << once;
    EXPECT_FALSE(run_pass(*model, "fusion_groups").changed) << once;
    EXPECT_EQ(to_text(*model), once);
  }
}

TEST(LayoutAndFusion, OnnxExportDropsTheAnnotationsAndTheyAreRecomputedAfterLoading) {
  auto model = parse_model_text(kBidirectional, "export.ir");
  run_pass(*model, "eliminate_layout_ops");
  run_pass(*model, "fusion_groups");
  std::string optimized = to_text(*model);
  ASSERT_NE(optimized.find("rnnc.layout_of"), std::string::npos);
  std::string bytes = export_onnx_bytes(*model);
  auto loaded = import_onnx_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(to_text(*loaded).find("rnnc."), std::string::npos);
  run_pass(*loaded, "eliminate_layout_ops");
  run_pass(*loaded, "fusion_groups");
  EXPECT_EQ(to_text(*loaded), optimized);
}

// ---- PyTorch exports ---------------------------------------------------------------------------

struct Export {
  const char* name;
  size_t recurrent_nodes;
  const char* y_layout;  // what every recurrent node's Y is folded to
  size_t views;          // layout ops marked as views
};

const Export kExports[] = {
    {"lstm_bidirectional", 2, "seq_batch_dirhidden", 4},  // Transpose + Reshape per layer
    {"gru", 2, "seq_batch_hidden", 2},                    // Squeeze per layer
    {"lstm_batch_first", 1, "batch_seq_hidden", 3},       // X Transpose, Y Squeeze + Transpose
};

// Names the case in test listings (ctest shows the parameter).
void PrintTo(const Export& e, std::ostream* out) { *out << e.name; }

std::string data_path(const std::string& file) {
  return std::string(RNNC_SOURCE_DIR) + "/tests/data/graph_opt/" + file;
}

bool is_recurrent(const Node& node) {
  return node.op_type() == "LSTM" || node.op_type() == "GRU" || node.op_type() == "RNN";
}

class PytorchExport : public ::testing::TestWithParam<Export> {};

TEST_P(PytorchExport, LayoutAndFusionPassesKeepOutputsAndFoldTheViews) {
  const Export& e = GetParam();
  auto model = import_onnx_file(data_path(std::string(e.name) + ".onnx"));
  std::map<std::string, Tensor> inputs = {
      {"x", read_npy(data_path(std::string(e.name) + "_input.npy"))}};
  std::vector<Tensor> before = evaluate(*model->graph, inputs);
  // The reference evaluator agrees with PyTorch (float32 reassociation: 1e-5).
  Tensor expected = read_npy(data_path(std::string(e.name) + "_expected.npy"));
  auto comparison = testing::compare_tensors(before[0], expected, {1e-5, 1e-5});
  EXPECT_TRUE(comparison.ok) << comparison.message;

  OptimizeOptions options;
  options.passes = {"eliminate_layout_ops", "fusion_groups"};
  optimize(*model, options);
  expect_identical(evaluate(*model->graph, inputs), before);
  const Graph& graph = *model->graph;
  size_t folded = 0;
  for (const auto& node : graph.nodes()) {
    if (!is_recurrent(*node)) continue;
    EXPECT_EQ(node->attr_string("rnnc.y_layout", "(absent)"), e.y_layout) << node->name();
    ++folded;
  }
  EXPECT_EQ(folded, e.recurrent_nodes);
  EXPECT_EQ(count_attr(graph, "rnnc.layout_of"), e.views);
  // The head: MatMul + bias Add (+ Tanh), one group rooted at the MatMul.
  EXPECT_EQ(int_attr(graph, "/head/MatMul", "rnnc.fusion_root"), 1);
  EXPECT_EQ(int_attr(graph, "/head/Add", "rnnc.fusion_group"), 0);
}

// The whole lowering pipeline (folding passes included): only the recurrent nodes, the head and
// the layout ops marked as free views remain, with the same outputs.
TEST_P(PytorchExport, LoweringPipelineLeavesRecurrentNodesHeadAndViews) {
  const Export& e = GetParam();
  auto model = import_onnx_file(data_path(std::string(e.name) + ".onnx"));
  std::map<std::string, Tensor> inputs = {
      {"x", read_npy(data_path(std::string(e.name) + "_input.npy"))}};
  std::vector<Tensor> before = evaluate(*model->graph, inputs);
  OptimizeOptions options;
  options.for_lowering = true;
  optimize(*model, options);
  expect_identical(evaluate(*model->graph, inputs), before);
  const std::set<std::string> head = {"MatMul", "Add", "Tanh"};
  size_t recurrent = 0;
  for (const auto& node : model->graph->nodes()) {
    if (is_recurrent(*node)) {
      ++recurrent;
      continue;
    }
    EXPECT_TRUE(head.count(node->op_type()) || node->has_attr("rnnc.layout_of"))
        << node->describe() << " is neither recurrent, the head, nor a view\n"
        << to_text(*model);
  }
  EXPECT_EQ(recurrent, e.recurrent_nodes);
  EXPECT_EQ(count_attr(*model->graph, "rnnc.layout_of"), e.views);
  for (const char* op :
       {"Shape", "Gather", "Constant", "ConstantOfShape", "Slice", "Concat", "Unsqueeze"}) {
    EXPECT_EQ(count_ops(*model->graph, op), 0u) << op;
  }
}

INSTANTIATE_TEST_SUITE_P(GraphOpt, PytorchExport, ::testing::ValuesIn(kExports),
                         [](const ::testing::TestParamInfo<Export>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace rnnc
