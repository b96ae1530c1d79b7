// The Silero voice activity detector (a production speech model: Conv front end, LSTM, nested
// If on the sample rate and on chunk shapes) through graph_opt, the way a streaming service would
// specialize it: sample rate fixed, 512-sample chunks of one stream. Fetched by
// models/fetch_silero.sh (scripts/test.sh runs it) into the build's models folder.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "graph_opt/pipeline.h"
#include "ir/onnx_import.h"
#include "ir/reference/evaluator.h"
#include "tests/support/compare.h"

namespace rnnc {
namespace {

const std::string kSileroPath = RNNC_MODELS_DIR "/silero_vad_16k_op15.onnx";

std::unique_ptr<Model> load_silero() {
  if (!std::filesystem::exists(kSileroPath)) {
    ADD_FAILURE() << kSileroPath << " is missing: run models/fetch_silero.sh " RNNC_MODELS_DIR;
    return nullptr;
  }
  return import_onnx_file(kSileroPath);
}

// Counts nodes of an op type, nested graphs included.
size_t count_ops(const Graph& graph, const std::string& op) {
  size_t n = 0;
  for (const auto& node : graph.nodes()) {
    n += node->op_type() == op;
    for (const Graph* sub : node->subgraphs()) n += count_ops(*sub, op);
  }
  return n;
}

// A deterministic speech-like chunk: two tones with a slowly varying envelope.
Tensor chunk(int index) {
  Tensor samples(DType::kFloat32, {1, 512});
  for (int i = 0; i < 512; ++i) {
    double t = (index * 512 + i) / 16000.0;
    double envelope = 0.5 + 0.5 * std::sin(2 * M_PI * 3 * t);
    samples.data<float>()[i] = static_cast<float>(
        envelope * (0.3 * std::sin(2 * M_PI * 220 * t) + 0.1 * std::sin(2 * M_PI * 1250 * t)));
  }
  return samples;
}

// Runs `chunks` chunks through both graphs carrying each one's state; outputs must agree.
void expect_same_stream(const Graph& original, const Graph& optimized, bool optimized_has_sr) {
  Tensor state_a(DType::kFloat32, {2, 1, 128}), state_b = state_a;
  for (int c = 0; c < 8; ++c) {
    std::map<std::string, Tensor> a{{"input", chunk(c)}, {"state", state_a},
                                    {"sr", Tensor::scalar<int64_t>(16000)}};
    std::map<std::string, Tensor> b{{"input", chunk(c)}, {"state", state_b}};
    if (optimized_has_sr) b["sr"] = Tensor::scalar<int64_t>(16000);
    std::vector<Tensor> out_a = evaluate(original, a);
    std::vector<Tensor> out_b = evaluate(optimized, b);
    ASSERT_EQ(out_a.size(), out_b.size());
    for (size_t i = 0; i < out_a.size(); ++i) {
      // Folding runs the same kernels on the same values; only canonicalization's explicit zero
      // bias may change the sign of an exact zero. Anything beyond 1e-6 is a real difference.
      auto result = testing::compare_tensors(out_b[i], out_a[i], {0, 1e-6});
      EXPECT_TRUE(result.ok) << "chunk " << c << " output " << i << ": " << result.message;
    }
    state_a = out_a[1];
    state_b = out_b[1];
  }
}

TEST(GraphOptSilero, FixedRateAndChunkShapeLeaveNoIfAndNoShapeComputation) {
  auto original = load_silero();
  if (!original) return;
  auto optimized = load_silero();
  OptimizeOptions options;
  options.context.fixed_inputs["sr"] = Tensor::scalar<int64_t>(16000);
  options.context.fixed_dims = {{"batch", 1}, {"sequence", 512}};
  optimize(*optimized, options);
  const Graph& graph = *optimized->graph;
  for (const char* op : {"If", "Shape", "Size", "ConstantOfShape", "Constant", "Equal", "Not"}) {
    EXPECT_EQ(count_ops(graph, op), 0u) << op;
  }
  EXPECT_EQ(count_ops(graph, "LSTM"), 1u);
  EXPECT_LT(graph.nodes().size(), 50u);
  expect_same_stream(*original->graph, graph, /*optimized_has_sr=*/false);
}

// With only the sample rate fixed, the Ifs that test chunk-length-derived dims (the export
// squeezes axes when they happen to be 1) cannot be decided; the model must still compute the same.
TEST(GraphOptSilero, FixedRateAloneKeepsOnlyShapeDependentIfs) {
  auto original = load_silero();
  if (!original) return;
  auto optimized = load_silero();
  OptimizeOptions options;
  options.context.fixed_inputs["sr"] = Tensor::scalar<int64_t>(16000);
  optimize(*optimized, options);
  EXPECT_LT(count_ops(*optimized->graph, "If"), count_ops(*original->graph, "If"));
  EXPECT_EQ(optimized->graph->inputs().size(), 2u);  // sr is gone
  expect_same_stream(*original->graph, *optimized->graph, /*optimized_has_sr=*/false);
}

}  // namespace
}  // namespace rnnc
