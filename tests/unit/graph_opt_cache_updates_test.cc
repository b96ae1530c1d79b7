// graph_opt's fold_cache_updates numerically: each case runs a graph through the reference
// evaluator before and after the pass on the same inputs and requires bit-identical outputs (the
// pass only moves data), and checks what it folded (ScatterND / Slice-of-Concat count).
//
// Cases: the golden test's graph (tests/graph_opt/fold_cache_updates.ir: a whole-cache write, two
// group writes into one cache, Concat-then-Slice of a new frame, and the forms left alone), a
// write whose tuples are out of row-major order (left alone: the updates would land permuted), and
// random single-axis block writes into caches of rank 1 to 4.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph_opt/pipeline.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"

namespace rnnc {
namespace {

void run_pass(Model& model) {
  OptimizeOptions options;
  options.passes = {"fold_cache_updates", "dce"};
  optimize(model, options);  // the verifier runs after each pass
}

int64_t count_ops(const Graph& graph, const std::string& op_type) {
  int64_t count = 0;
  for (const auto& node : graph.nodes()) count += node->op_type() == op_type;
  return count;
}

// Floats from a seeded generator (distinct values, so a misplaced element shows).
std::map<std::string, Tensor> make_inputs(const Graph& graph, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::map<std::string, Tensor> inputs;
  for (const Value* input : graph.inputs()) {
    Tensor tensor(input->type.dtype, shape_values(*input->type.shape));
    for (int64_t i = 0; i < tensor.numel(); ++i) tensor.set_double(i, value(rng));
    inputs[input->name()] = tensor;
  }
  return inputs;
}

// Runs the pass on `model`; the outputs before and after must be the same bits.
void expect_folds_bitwise(Model& model, const std::string& what) {
  const std::map<std::string, Tensor> inputs = make_inputs(*model.graph, 26);
  const std::vector<Tensor> before = evaluate(*model.graph, inputs);
  run_pass(model);
  const std::vector<Tensor> after = evaluate(*model.graph, inputs);
  ASSERT_EQ(after.size(), before.size()) << what;
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(after[i].bitwise_equal(before[i]))
        << what << ": output " << i << " " << tensor_summary(after[i]) << " vs "
        << tensor_summary(before[i]) << "\n"
        << to_text(model);
  }
}

TEST(GraphOptCacheUpdates, GoldenGraphFoldsBitwise) {
  auto model = parse_model_text_file(RNNC_SOURCE_DIR "/tests/graph_opt/fold_cache_updates.ir");
  EXPECT_EQ(count_ops(*model->graph, "ScatterND"), 4);
  expect_folds_bitwise(*model, "golden graph");
  EXPECT_EQ(count_ops(*model->graph, "ScatterND"), 1);  // the rows written apart
  EXPECT_EQ(count_ops(*model->graph, "Slice"), 2);      // the kept frame, the other-axis slice
}

TEST(GraphOptCacheUpdates, TuplesOutOfOrderStay) {
  auto model = parse_model_text(R"(model opset=11
graph main(%cache: f32[2, 3], %rows: f32[2, 3]) {
  const %swapped: i64[2, 1] = {1, 0}
  %y: f32[2, 3] = ScatterND 'swapped_rows' (%cache, %swapped, %rows)
  return %y
})",
                                "test.ir");
  expect_folds_bitwise(*model, "swapped rows");
  EXPECT_EQ(count_ops(*model->graph, "ScatterND"), 1);
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text;
  for (int64_t d : dims) text += (text.empty() ? "" : ", ") + std::to_string(d);
  return text;
}

TEST(GraphOptCacheUpdates, RandomBlockWritesFoldBitwise) {
  std::mt19937 rng(11);
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t rank = uniform(1, 4);
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d) shape.push_back(uniform(1, 4));
    const int64_t k = uniform(1, rank);
    const int64_t axis = uniform(0, k - 1);
    const int64_t begin = uniform(0, shape[axis] - 1);
    const int64_t end = uniform(begin + 1, shape[axis]);
    // The block: every axis below k whole but `axis`, [begin, end) there; tuples row-major.
    std::vector<int64_t> box(shape.begin(), shape.begin() + k);
    box[axis] = end - begin;
    std::vector<int64_t> indices, at(static_cast<size_t>(k), 0);
    for (bool more = true; more;) {
      for (int64_t j = 0; j < k; ++j) indices.push_back(at[j] + (j == axis ? begin : 0));
      more = false;
      for (int64_t j = k - 1; j >= 0 && !more; --j) {
        more = ++at[j] < box[j];
        if (!more) at[j] = 0;
      }
    }
    std::vector<int64_t> index_shape = box;
    index_shape.push_back(k);
    std::vector<int64_t> update_shape = box;
    update_shape.insert(update_shape.end(), shape.begin() + k, shape.end());
    std::string values;
    for (int64_t v : indices) values += (values.empty() ? "" : ", ") + std::to_string(v);
    auto model = parse_model_text(
        cat("model opset=11\ngraph main(%cache: f32[", dims_text(shape), "], %frame: f32[",
            dims_text(update_shape), "]) {\n  const %at: i64[", dims_text(index_shape), "] = {",
            values, "}\n  %y: f32[", dims_text(shape),
            "] = ScatterND 'write' (%cache, %at, %frame)\n  return %y\n}\n"),
        "random.ir");
    const std::string what = cat("trial ", trial, ": cache [", dims_text(shape), "], block [",
                                 dims_text(index_shape), "] at ", begin, " on axis ", axis);
    expect_folds_bitwise(*model, what);
    EXPECT_EQ(count_ops(*model->graph, "ScatterND"), 0) << what;
  }
}

}  // namespace
}  // namespace rnnc
