// quant/guard.h and quant/generated_inputs.h: the error budget, the per-node search, the inputs it
// measures on, the decision's text form. All on the reference evaluator (the compiled model
// against it: tests/runtime/quant_guard_test.cc).
#include <gtest/gtest.h>

#include <filesystem>

#include "graph_opt/pipeline.h"
#include "ir/error.h"
#include "ir/onnx_import.h"
#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"
#include "quant/generated_inputs.h"
#include "quant/guard.h"
#include "quant/quantize_model.h"
#include "tests/support/log_mel_model.h"
#include "tests/support/error_message.h"

namespace rnnc::quant {
namespace {

using testing::error_message;

const NodeDecision& decision_for(const GuardResult& result, const std::string& node) {
  for (const NodeDecision& decision : result.nodes) {
    if (decision.node == node) return decision;
  }
  ADD_FAILURE() << "no decision for " << node;
  static NodeDecision none;
  return none;
}

// The front-end as CompiledModel::load sees it: after graph_opt.
std::unique_ptr<Model> optimized_log_mel() {
  std::unique_ptr<Model> model = testing::make_log_mel_gru_model();
  optimize(*model, {});
  return model;
}

// ---- configuration --------------------------------------------------------------------------------

TEST(GuardConfig, DefaultsAndFields) {
  EXPECT_TRUE(parse_config("{}").guard.enabled);
  EXPECT_EQ(parse_config("{}").guard.max_error, 0.02);
  const Config config =
      parse_config(R"({"guard": {"enabled": false, "max_error": 0.05, "time_limit_seconds": 5}})");
  EXPECT_FALSE(config.guard.enabled);
  EXPECT_EQ(config.guard.max_error, 0.05);
  EXPECT_EQ(config.guard.time_limit_seconds, 5);
}

TEST(GuardConfig, ErrorsNameTheField) {
  auto message = [](const std::string& json) {
    return error_message([&] { parse_config(json, "q.json"); }, ErrorKind::kInvalidInput);
  };
  EXPECT_EQ(message(R"({"guard": {"max_error": 2}})"),
            "q.json: guard.max_error must be a number in (0, 1] (a fraction of each output's "
            "range)");
  EXPECT_EQ(message(R"({"guard": {"time_limit_seconds": 0}})"),
            "q.json: guard.time_limit_seconds must be a number > 0");
  EXPECT_EQ(message(R"({"guard": {"budget": 1}})"),
            "q.json: unknown field guard.budget (guard takes enabled, max_error, "
            "time_limit_seconds)");
  EXPECT_EQ(message(R"({"guard": true})"), "q.json: guard must be an object");
}

// ---- generated inputs ------------------------------------------------------------------------------

std::unique_ptr<Model> embedding_model() {
  auto model = std::make_unique<Model>();
  model->opsets[""] = 17;
  model->graph = std::make_unique<Graph>();
  Graph& g = *model->graph;
  TensorType ids;
  ids.dtype = DType::kInt64;
  ids.shape = Shape{Dim::symbol("seq"), Dim::symbol("batch")};
  TensorType features;
  features.dtype = DType::kFloat32;
  features.shape = Shape{Dim::symbol("seq"), Dim(3)};
  Value* tokens = g.add_input("tokens", ids);
  Value* extra = g.add_input("extra", features);
  Tensor table(DType::kFloat32, {7, 3});
  for (int64_t i = 0; i < table.numel(); ++i) table.data<float>()[i] = static_cast<float>(i);
  Node* gather = g.add_node("Gather", "embed", {g.add_initializer("table", table), tokens},
                            {"embedded"}, 17);
  g.add_output(gather->output(0));
  g.add_output(extra);
  infer_graph(g);
  return model;
}

TEST(GeneratedInputs, AreDeterministicAndFollowTheDeclaredTypes) {
  auto model = embedding_model();
  InputRecipe recipe;
  recipe.dims["batch"] = 2;
  const std::vector<Sample> a = generate_inputs(*model->graph, recipe);
  const std::vector<Sample> b = generate_inputs(*model->graph, recipe);
  ASSERT_EQ(a.size(), 4u);
  for (size_t s = 0; s < a.size(); ++s) {
    const Tensor& tokens = a[s].at("tokens");
    EXPECT_EQ(tokens.shape(), (std::vector<int64_t>{InputRecipe::kDefaultDim, 2}));
    // Indices of a Gather over 7 rows: all valid, and not all the same.
    int64_t lo = 7, hi = -1;
    for (int64_t i = 0; i < tokens.numel(); ++i) {
      lo = std::min(lo, tokens.data<int64_t>()[i]);
      hi = std::max(hi, tokens.data<int64_t>()[i]);
      EXPECT_EQ(tokens.data<int64_t>()[i], b[s].at("tokens").data<int64_t>()[i]);
    }
    EXPECT_GE(lo, 0);
    EXPECT_LE(hi, 6);
    EXPECT_GT(hi, lo);
    const Tensor& extra = a[s].at("extra");
    double peak = 0;
    for (int64_t i = 0; i < extra.numel(); ++i) {
      peak = std::max(peak, std::abs(static_cast<double>(extra.data<float>()[i])));
      EXPECT_EQ(extra.data<float>()[i], b[s].at("extra").data<float>()[i]);
    }
    EXPECT_GT(peak, 0);
  }
  // The samples differ in loudness: 1, 0.25, 0.05, 0.5.
  auto peak_of = [](const Tensor& t) {
    double peak = 0;
    for (int64_t i = 0; i < t.numel(); ++i) peak = std::max(peak, std::abs(t.get_double(i)));
    return peak;
  };
  EXPECT_GT(peak_of(a[0].at("extra")), 5 * peak_of(a[2].at("extra")));
  EXPECT_EQ(recipe.describe(*model->graph),
            "4 generated inputs (seed 0x726e6e63; dims batch=2, seq=16 (default))");
  evaluate(*model->graph, a[0]);  // the model runs on them
}

TEST(GeneratedInputs, UnknownDimsAreAnErrorNamingTheInput) {
  auto model = std::make_unique<Model>();
  model->opsets[""] = 17;
  model->graph = std::make_unique<Graph>();
  TensorType type;
  type.dtype = DType::kFloat32;
  type.shape = Shape{Dim::unknown(), Dim(3)};
  Value* x = model->graph->add_input("x", type);
  model->graph->add_output(x);
  EXPECT_EQ(error_message([&] { generate_inputs(*model->graph, {}); }, ErrorKind::kInvalidInput),
            "input 'x' dim 0 is '?': the quantization guard cannot generate it (give calibration "
            "inputs)");
}

// ---- the search on the log-mel front-end -----------------------------------------------------------

// Every node int8 misses the budget by far (the mel MatMul's 8-bit activations round the quiet
// bins of the power spectrum to zero, and Log amplifies that); the MatMul is by far the most
// sensitive node and goes float first; the classifier Gemm alone misses the target (half the
// budget) too and follows; the GRU stays int8.
TEST(QuantGuard, KeepsTheMelMatMulFloatAndTheGruInt8) {
  auto model = optimized_log_mel();
  const GuardResult result = guard_search(*model, Config{}, {}, {});
  std::printf("%s\n", result.to_markdown().c_str());
  EXPECT_TRUE(result.generated);
  EXPECT_GT(result.before.worst_fraction(), 0.1);
  EXPECT_TRUE(result.met);
  EXPECT_LE(result.after.worst_fraction(), 0.01);  // the target: half the budget
  const NodeDecision& mel = decision_for(result, "mel");
  const NodeDecision& gru = decision_for(result, "gru");
  EXPECT_EQ(mel.precision, Precision::kFloat);
  EXPECT_EQ(gru.precision, Precision::kConfigured);
  EXPECT_EQ(decision_for(result, "classifier").precision, Precision::kFloat);
  EXPECT_GT(mel.sensitivity, 0.1);
  EXPECT_LT(gru.sensitivity, 0.01);
  EXPECT_EQ(mel.reason.rfind("float: sensitivity ", 0), 0u) << mel.reason;
  EXPECT_NE(mel.reason.find("(rank 1 of 3), the model missed the target"), std::string::npos)
      << mel.reason;
  EXPECT_NE(mel.reason.find("MatMul/Gemm have no integer kernel wider than 8 bits"),
            std::string::npos);
  EXPECT_EQ(gru.reason.rfind("configured scheme: sensitivity ", 0), 0u) << gru.reason;
  const std::string summary = result.summary();
  EXPECT_EQ(summary.rfind("1 quantized as configured, 2 float (MatMul 'mel', Gemm 'classifier'); "
                         "max error ",
                         0), 0u)
      << summary;
  EXPECT_NE(summary.find("measured on 4 generated inputs (seed 0x726e6e63): real data is better"),
            std::string::npos)
      << summary;

  // Applied: the rewrite leaves the MatMul float and says why.
  const Report report = quantize_model(*model, apply_decisions(*model, Config{}, result.precisions()), {});
  for (const NodeReport& entry : report.nodes) {
    if (entry.node == "mel") {
      EXPECT_FALSE(entry.quantized);
      EXPECT_EQ(entry.scheme, "float (quantization guard: see the error budget)");
    }
    if (entry.node == "gru") {
      EXPECT_TRUE(entry.quantized);
    }
  }
}

// The MatMul kept float by the config, a budget the rest meets at int8: one measurement, no
// sensitivities, and the config's float node is no candidate.
TEST(QuantGuard, AModelThatMeetsTheTargetAsConfiguredIsMeasuredOnce) {
  auto model = optimized_log_mel();
  Config config = parse_config(R"({"nodes": {"mel": {"float": true}}, "guard": {"max_error": 0.1}})");
  const GuardResult result = guard_search(*model, config, {}, {});
  EXPECT_EQ(result.evaluations, 1);
  ASSERT_EQ(result.nodes.size(), 2u);
  for (const NodeDecision& node : result.nodes) {
    EXPECT_NE(node.node, "mel");
    EXPECT_EQ(node.precision, Precision::kConfigured) << node.node;
    EXPECT_EQ(node.sensitivity, -1);
    EXPECT_EQ(node.reason.rfind("the model with every node at its configured scheme meets the "
                                "target (", 0),
              0u)
        << node.reason;
  }
}

TEST(QuantGuard, OffMeasuresNothing) {
  auto model = optimized_log_mel();
  Config config;
  config.guard.enabled = false;
  const GuardResult result = guard_search(*model, config, {}, {});
  EXPECT_EQ(result.evaluations, 0);
  EXPECT_EQ(result.nodes.size(), 3u);
  EXPECT_EQ(result.summary(),
            "3 node(s) quantized as configured; quantization guard off: error not measured");
}

TEST(QuantGuard, TimeLimitMakesEveryNodeFloat) {
  auto model = optimized_log_mel();
  Config config;
  config.guard.time_limit_seconds = 1e-9;
  const GuardResult result = guard_search(*model, config, {}, {});
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.evaluations, 1);
  for (const NodeDecision& node : result.nodes) {
    EXPECT_EQ(node.precision, Precision::kFloat);
    EXPECT_EQ(node.reason, "float: the search's time limit (1e-09 s) ran out before the target "
                           "was met");
  }
}

// Calibration samples replace the generated inputs (and the report says which were used).
TEST(QuantGuard, MeasuresOnCalibrationSamplesWhenGiven) {
  auto model = optimized_log_mel();
  std::vector<Sample> samples;
  for (uint32_t seed : {1u, 2u}) {
    Tensor audio(DType::kFloat32, {1, 1, testing::kLogMelSamples});
    const std::vector<float> values = testing::chirp_with_noise(0.5f, seed);
    std::copy(values.begin(), values.end(), audio.data<float>());
    samples.push_back({{"audio", audio}});
  }
  const GuardResult result = guard_search(*model, Config{}, samples, {});
  EXPECT_FALSE(result.generated);
  EXPECT_EQ(result.inputs, "2 calibration sample(s)");
  EXPECT_EQ(decision_for(result, "mel").precision, Precision::kFloat);
  EXPECT_EQ(decision_for(result, "gru").precision, Precision::kConfigured);
}

TEST(QuantGuard, GeneratedInputsTheModelRejectsAreAnErrorSayingWhatToBind) {
  // An input whose symbolic length must be at least the Conv window: the default 16 is too short.
  auto model = testing::make_log_mel_gru_model();
  TensorType type = model->graph->inputs()[0]->type;
  (*type.shape)[2] = Dim::symbol("samples");
  model->graph->inputs()[0]->type = type;
  infer_graph(*model->graph);
  const std::string message =
      error_message([&] { guard_search(*model, Config{}, {}, {}); }, ErrorKind::kInvalidInput);
  EXPECT_EQ(message.rfind("quantization guard: the float model does not run on 4 generated inputs "
                          "(seed 0x726e6e63; dims samples=16 (default)): ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("(bind the dims: --dim NAME=N, ModelOptions::quantization_dims; or give "
                         "calibration inputs)"),
            std::string::npos)
      << message;
}

// ---- the decision's text form (the runtime's cache) ------------------------------------------------

TEST(QuantGuard, DecisionRoundTripsThroughItsTextForm) {
  auto model = optimized_log_mel();
  const GuardResult result = guard_search(*model, Config{}, {}, {});
  const GuardResult back = GuardResult::parse(result.serialize(), "d.txt");
  EXPECT_EQ(back.serialize(), result.serialize());
  EXPECT_EQ(back.summary(), result.summary());
  EXPECT_EQ(back.to_markdown(), result.to_markdown());
  EXPECT_EQ(error_message([] { GuardResult::parse("hello\n", "d.txt"); }, ErrorKind::kIo),
            "quantization decision 'd.txt': not a decision rnnc wrote");
  EXPECT_EQ(error_message([&] {
              const std::string text = result.serialize();
              GuardResult::parse(text.substr(0, text.size() - 4), "d.txt");
            },
                          ErrorKind::kIo),
            "quantization decision 'd.txt': truncated");
}

// ---- stacked recurrent models: the guard leaves their products int8 -------------------------------

class GuardOnStackedRecurrent : public ::testing::TestWithParam<std::string> {};

TEST_P(GuardOnStackedRecurrent, KeepsEveryRecurrentProductInt8) {
  const std::string path = std::string(RNNC_SOURCE_DIR) + "/models/smoke/" + GetParam();
  auto model = import_onnx_file(path);
  optimize(*model, {});
  const GuardResult result = guard_search(*model, Config{}, {}, {});
  std::printf("%s: %s\n", GetParam().c_str(), result.summary().c_str());
  ASSERT_FALSE(result.nodes.empty());
  EXPECT_EQ(result.evaluations, 1);
  for (const NodeDecision& node : result.nodes) {
    EXPECT_EQ(node.precision, Precision::kConfigured) << node.node << ": " << node.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Smoke, GuardOnStackedRecurrent,
                         ::testing::Values("smoke_lstm64_l2.onnx", "smoke_gru64_l2.onnx"),
                         [](const auto& info) {
                           std::string name = info.param.substr(0, info.param.find('.'));
                           return name;
                         });

}  // namespace
}  // namespace rnnc::quant
