// View blocks (lowering/lower_view.h) against the reference evaluator: each case is a graph of one
// view node; the block's output must equal the reference's bit for bit and, where the view is
// contiguous, be an alias of the input (its data pointer inside the input's buffer, no copy).
// Operands the view cannot take run the reference kernel: the same result or the same error.
#include <gtest/gtest.h>

#include <string>

#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "lowering/lower_copy.h"
#include "lowering/lower_view.h"

namespace rnnc {
namespace {

struct ViewRun {
  std::unique_ptr<Model> model;
  std::unique_ptr<ExecutionBlock> block;
  Tensor input;
  Tensor output;
};

// Parses a one-node model whose first graph input is `x`, lowers its node to a view block and
// runs it on an iota input of the declared shape (`lower`: the lowering, lower_view or lower_copy).
ViewRun run_view(const std::string& text, std::unique_ptr<ExecutionBlock> (*lower)(
                                              const std::vector<const Node*>&) = lower_view) {
  ViewRun run;
  run.model = parse_model_text(text, "view case");
  Graph& graph = *run.model->graph;
  infer_graph(graph);
  const Node* node = graph.nodes().front().get();
  run.block = lower({node});
  const Value* x = graph.inputs().front();
  run.block->inputs = {x};
  std::vector<int64_t> shape;
  for (const Dim& dim : *x->type.shape) shape.push_back(dim.value());
  run.input = Tensor(DType::kFloat32, shape);
  for (int64_t i = 0; i < run.input.numel(); ++i) run.input.data<float>()[i] = static_cast<float>(i);
  BlockIO io;
  io.inputs = {&run.input};
  run.block->run(io);
  run.output = io.outputs.at(0);
  const Tensor expected = evaluate(graph, {{"x", run.input}}).at(0);
  EXPECT_TRUE(run.output.bitwise_equal(expected))
      << node->op_type() << ": " << tensor_summary(run.output) << " vs " << tensor_summary(expected);
  return run;
}

// The output's first element is element `offset` of the input's buffer.
void expect_alias(const ViewRun& run, int64_t offset) {
  EXPECT_EQ(run.output.raw_data(),
            static_cast<const void*>(run.input.data<float>() + offset))
      << run.block->kind() << " copied instead of aliasing";
}

TEST(LoweringView, SqueezeAndUnsqueezeAliasTheirInput) {
  ViewRun unsqueeze = run_view(R"(model opset=13
graph main(%x: f32[2, 3]) {
  const %axes: i64[2] = {0, -1}
  %y = Unsqueeze 'u' (%x, %axes)
  return %y
})");
  EXPECT_EQ(unsqueeze.output.shape(), (std::vector<int64_t>{1, 2, 3, 1}));
  expect_alias(unsqueeze, 0);
  ViewRun squeeze = run_view(R"(model opset=13
graph main(%x: f32[2, 1, 3, 1]) {
  const %axes: i64[1] = {1}
  %y = Squeeze 's' (%x, %axes)
  return %y
})");
  EXPECT_EQ(squeeze.output.shape(), (std::vector<int64_t>{2, 3, 1}));
  expect_alias(squeeze, 0);
  ViewRun squeeze_all = run_view(R"(model opset=11
graph main(%x: f32[1, 5, 1]) {
  %y = Squeeze 's' (%x)
  return %y
})");
  EXPECT_EQ(squeeze_all.output.shape(), (std::vector<int64_t>{5}));
  expect_alias(squeeze_all, 0);
  ViewRun squeeze_attribute = run_view(R"(model opset=11
graph main(%x: f32[1, 5, 1]) {
  %y = Squeeze 's' (%x) {axes=[0]}
  return %y
})");
  EXPECT_EQ(squeeze_attribute.output.shape(), (std::vector<int64_t>{5, 1}));
}

TEST(LoweringView, ReshapeFlattenAndIdentityAliasTheirInput) {
  ViewRun reshape = run_view(R"(model opset=14
graph main(%x: f32[2, 3, 4]) {
  const %shape: i64[2] = {0, -1}
  %y = Reshape 'r' (%x, %shape)
  return %y
})");
  EXPECT_EQ(reshape.output.shape(), (std::vector<int64_t>{2, 12}));
  expect_alias(reshape, 0);
  ViewRun flatten = run_view(R"(model opset=13
graph main(%x: f32[2, 3, 4]) {
  %y = Flatten 'f' (%x) {axis=2}
  return %y
})");
  EXPECT_EQ(flatten.output.shape(), (std::vector<int64_t>{6, 4}));
  expect_alias(flatten, 0);
  expect_alias(run_view(R"(model opset=13
graph main(%x: f32[3, 2]) {
  %y = Identity 'i' (%x)
  return %y
})"),
               0);
}

TEST(LoweringView, GatherOfOneIndexBelowUnitOuterDimsIsAContiguousAlias) {
  ViewRun scalar = run_view(R"(model opset=13
graph main(%x: f32[1, 5, 3]) {
  const %index: i64[] = {-2}
  %y = Gather 'g' (%x, %index) {axis=1}
  return %y
})");
  EXPECT_EQ(scalar.output.shape(), (std::vector<int64_t>{1, 3}));
  expect_alias(scalar, 3 * 3);
  ViewRun one = run_view(R"(model opset=13
graph main(%x: f32[4, 2]) {
  const %index: i64[1] = {3}
  %y = Gather 'g' (%x, %index)
  return %y
})");
  EXPECT_EQ(one.output.shape(), (std::vector<int64_t>{1, 2}));
  expect_alias(one, 3 * 2);
}

TEST(LoweringView, GatherOfAnAxisOfOneIsTheWholeInput) {
  // [1, 4, 1] -> [1, 4] (a conv's last output step taken): contiguous whatever the outer dims.
  ViewRun last = run_view(R"(model opset=13
graph main(%x: f32[2, 4, 1]) {
  const %index: i64[] = {0}
  %y = Gather 'g' (%x, %index) {axis=2}
  return %y
})");
  EXPECT_EQ(last.output.shape(), (std::vector<int64_t>{2, 4}));
  expect_alias(last, 0);
  ViewRun negative = run_view(R"(model opset=13
graph main(%x: f32[3, 1, 2]) {
  const %index: i64[1] = {-1}
  %y = Gather 'g' (%x, %index) {axis=1}
  return %y
})");
  EXPECT_EQ(negative.output.shape(), (std::vector<int64_t>{3, 1, 2}));
  expect_alias(negative, 0);
}

TEST(LoweringView, GatherAcrossOuterDimsRunsTheReferenceKernel) {
  // Outer dim 2: the gathered elements are not contiguous, so the reference computes them.
  ViewRun run = run_view(R"(model opset=13
graph main(%x: f32[2, 5, 3]) {
  const %index: i64[] = {1}
  %y = Gather 'g' (%x, %index) {axis=1}
  return %y
})");
  EXPECT_EQ(run.output.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_NE(run.output.raw_data(), static_cast<const void*>(run.input.data<float>() + 3));
}

// A Slice of rows 2..4 along axis 1 of %x: f32[shape].
std::string middle_rows(const std::string& shape) {
  return "model opset=13\ngraph main(%x: f32[" + shape + R"(]) {
  const %starts: i64[1] = {2}
  const %ends: i64[1] = {5}
  const %axes: i64[1] = {1}
  %y = Slice 's' (%x, %starts, %ends, %axes)
  return %y
})";
}

TEST(LoweringView, ContiguousSliceOfAStaticShapeIsAnAlias) {
  ViewRun middle = run_view(middle_rows("1, 6, 4"), lower_copy);
  EXPECT_EQ(middle.block->kind(), "view Slice");
  EXPECT_TRUE(middle.block->aliases_input());
  EXPECT_EQ(middle.output.shape(), (std::vector<int64_t>{1, 3, 4}));
  expect_alias(middle, 2 * 4);
  // One position of the outer axis, the inner ones whole: still one run.
  ViewRun outer = run_view(R"(model opset=13
graph main(%x: f32[3, 2, 4]) {
  const %starts: i64[2] = {1, 0}
  const %ends: i64[2] = {2, 100}
  %y = Slice 's' (%x, %starts, %ends)
  return %y
})",
                           lower_copy);
  EXPECT_EQ(outer.block->kind(), "view Slice");
  expect_alias(outer, 8);
}

TEST(LoweringView, OtherSlicesCopy) {
  // A window of every outer row, a step of 2, a shape known only at run time: copies.
  ViewRun rows = run_view(middle_rows("2, 6, 4"), lower_copy);
  EXPECT_EQ(rows.block->kind(), "copy Slice");
  EXPECT_FALSE(rows.block->aliases_input());
  ViewRun stepped = run_view(R"(model opset=13
graph main(%x: f32[1, 6]) {
  const %starts: i64[1] = {0}
  const %ends: i64[1] = {6}
  const %axes: i64[1] = {1}
  const %steps: i64[1] = {2}
  %y = Slice 's' (%x, %starts, %ends, %axes, %steps)
  return %y
})",
                             lower_copy);
  EXPECT_EQ(stepped.block->kind(), "copy Slice");
  auto model = parse_model_text(middle_rows("1, time"), "slice case");
  infer_graph(*model->graph);
  EXPECT_EQ(lower_copy({model->graph->nodes().front().get()})->kind(), "copy Slice");
}

TEST(LoweringView, InvalidOperandsRaiseTheReferenceError) {
  auto model = parse_model_text(R"(model opset=14
graph main(%x: f32[2, 3], %shape: i64[2]) {
  %y = Reshape 'r' (%x, %shape)
  return %y
})",
                                "view case");
  Graph& graph = *model->graph;
  infer_graph(graph);
  std::unique_ptr<ExecutionBlock> block = lower_view({graph.nodes().front().get()});
  block->inputs = {graph.inputs()[0], graph.inputs()[1]};
  Tensor x(DType::kFloat32, {2, 3});
  Tensor shape = Tensor::from_vector<int64_t>({2}, {4, 2});  // 8 elements, not 6
  auto message_of = [](auto&& body) -> std::string {
    try {
      body();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string reference =
      message_of([&] { evaluate(graph, {{"x", x}, {"shape", shape}}); });
  BlockIO io;
  io.inputs = {&x, &shape};
  EXPECT_NE(reference, "(no error)");
  EXPECT_EQ(message_of([&] { block->run(io); }), reference);
}

TEST(LoweringView, OnlyViewOpsAndSingleConstantGatherIndicesLower) {
  auto model = parse_model_text(R"(model opset=13
graph main(%x: f32[4, 2], %i: i64[2]) {
  %y = Gather 'g' (%x, %i)
  %z = Relu 'relu' (%x)
  return %y, %z
})",
                                "view case");
  infer_graph(*model->graph);
  for (const auto& node : model->graph->nodes()) {
    try {
      lower_view({node.get()});
      ADD_FAILURE() << node->op_type() << " lowered to a view";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
    }
  }
}

}  // namespace
}  // namespace rnnc
