// ir/model_cost.h: multiply-adds and weight bytes of the compute nodes of a graph with static
// shapes, each formula checked on a node whose count is worked out by hand; a node whose shape the
// graph leaves symbolic is listed as unknown, not counted.
#include "ir/model_cost.h"

#include <gtest/gtest.h>

#include <string>

#include "ir/op_schema.h"
#include "ir/text_parser.h"

namespace rnnc {
namespace {

// "{0, 0, ...}": a constant's `count` values.
std::string zeros(int count) {
  std::string text = "{0";
  for (int i = 1; i < count; ++i) text += ", 0";
  return text + "}";
}

ModelCost cost_of(const std::string& text) {
  std::unique_ptr<Model> model = parse_model_text(text, "cost case");
  infer_graph(*model->graph);
  return model_cost(*model->graph);
}

TEST(ModelCost, EachComputeNodeByItsFormula) {
  const ModelCost cost = cost_of(
      "model opset=17\n"
      "graph main(%x: f32[2, 3, 10], %s: f32[5, 2, 8]) {\n"
      "  const %w: f32[4, 3, 3] = " +
      zeros(36) +
      "\n"
      "  const %m: f32[8, 6] = " +
      zeros(48) +
      "\n"
      "  const %W: f32[1, 12, 8] = " +
      zeros(96) +
      "\n"
      "  const %R: f32[1, 12, 4] = " +
      zeros(48) +
      "\n"
      "  %c = Conv 'conv' (%x, %w) {pads=[1, 1]}\n"
      "  %r = Relu 'relu' (%c)\n"
      "  %p = MatMul 'project' (%s, %m)\n"
      "  %y, %h = GRU 'gru' (%s, %W, %R) {hidden_size=4}\n"
      "  return %r, %p, %y\n"
      "}");
  ASSERT_EQ(cost.nodes.size(), 3u);
  // Conv: output [2, 4, 10] x (3 channels x 3 taps); MatMul: [5, 2, 6] x K 8;
  // GRU: seq 5 x batch 2 x (3 gates x 4 hidden) x (8 inputs + 4 hidden).
  EXPECT_EQ(cost.nodes[0].macs, 2 * 4 * 10 * 3 * 3);
  EXPECT_EQ(cost.nodes[0].weight_bytes, 4 * 36);
  EXPECT_EQ(cost.nodes[1].macs, 5 * 2 * 6 * 8);
  EXPECT_EQ(cost.nodes[1].weight_bytes, 4 * 48);
  EXPECT_EQ(cost.nodes[2].macs, 5 * 2 * 12 * (8 + 4));
  EXPECT_EQ(cost.nodes[2].weight_bytes, 4 * (96 + 48));
  EXPECT_EQ(cost.macs, cost.nodes[0].macs + cost.nodes[1].macs + cost.nodes[2].macs);
  EXPECT_EQ(cost.weight_bytes, 4 * (36 + 48 + 96 + 48));
  EXPECT_TRUE(cost.unknown.empty());
}

TEST(ModelCost, ASymbolicShapeIsUnknownNotCounted) {
  const ModelCost cost = cost_of(R"(model opset=17
graph main(%x: f32[seq, 8], %m: f32[8, 6]) {
  %p = MatMul 'project' (%x, %m)
  return %p
})");
  EXPECT_EQ(cost.macs, 0);
  EXPECT_EQ(cost.unknown, std::vector<std::string>{"project"});
}

}  // namespace
}  // namespace rnnc
