// clone_model: the copy prints as the original, shares its constants' storage, and is
// independent of it (rewriting either leaves the other as it was).
#include "ir/clone.h"

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/text_parser.h"

namespace rnnc {
namespace {

// Nested Ifs whose branches read values of the enclosing graphs, a constant shadowed inside a
// branch, a node output that is also a graph output, a Tensor attribute.
const char* const kModel = R"(model ir_version=8 opset=14 producer="rnnc-tests 0.1"
graph main(%x: f32[batch, 4], %c: bool[]) {
  const %scale: f32[4] = {1, 2, 3, 4}
  %y: f32[batch, 4] = If 'outer_if' (%c)
    else_branch = graph outer_else() {
      %n: f32[batch, 4] = Neg 'outer_neg' (%x)
      return %n
    }
    then_branch = graph outer_then() {
      const %scale: f32[] = {0.5}
      %m: f32[batch, 4] = Mul 'branch_mul' (%x, %scale)
      %i: f32[batch, 4] = If 'inner_if' (%c)
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
  %k: f32[4] = Constant 'k' () {value=f32[4] = {0, 1, 2, 3}}
  %w: f32[batch, 4] = Add 'add_k' (%z, %k)
  return %w, %y
}
)";

std::unique_ptr<Model> parse(const std::string& text) { return parse_model_text(text, "t.ir"); }

TEST(CloneModel, PrintsAsTheOriginal) {
  auto model = parse(kModel);
  auto copy = clone_model(*model);
  EXPECT_EQ(to_text(*copy), to_text(*model));
  EXPECT_EQ(copy->producer_name, model->producer_name);
  EXPECT_EQ(copy->opsets, model->opsets);
}

TEST(CloneModel, SharesConstantStorage) {
  auto model = parse(kModel);
  auto copy = clone_model(*model);
  const Value* original = model->graph->find_local_value("scale");
  const Value* cloned = copy->graph->find_local_value("scale");
  ASSERT_TRUE(original && cloned);
  EXPECT_NE(original, cloned);
  EXPECT_EQ(original->constant()->data<float>(), cloned->constant()->data<float>());
}

TEST(CloneModel, IsIndependentOfTheOriginal) {
  auto model = parse(kModel);
  const std::string before = to_text(*model);
  auto copy = clone_model(*model);
  Graph& graph = *copy->graph;
  // Rewrites a quantizer makes: a constant replaced, a node removed after rewiring its uses.
  graph.find_local_value("scale")->set_constant(
      std::make_shared<const Tensor>(Tensor::from_vector<float>({4}, {4, 3, 2, 1})));
  Node* add = nullptr;
  for (const auto& node : graph.nodes()) {
    if (node->name() == "add_k") add = node.get();
  }
  ASSERT_NE(add, nullptr);
  graph.replace_all_uses(add->output(0), add->input(0));
  graph.remove_node(add);
  EXPECT_EQ(to_text(*model), before);
  EXPECT_NE(to_text(*copy), before);
  // The captured values of the copy's branches are the copy's own.
  for (const auto& node : graph.nodes()) {
    for (Graph* branch : node->subgraphs()) {
      EXPECT_EQ(branch->parent(), &graph);
      for (const auto& inner : branch->nodes()) {
        for (const Value* input : inner->inputs()) {
          for (const Graph* g = input->owner(); g; g = g->parent()) {
            EXPECT_NE(g, model->graph.get()) << inner->name() << " reads the original's values";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace rnnc
