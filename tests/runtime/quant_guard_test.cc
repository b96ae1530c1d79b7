// The quantization guard at load (ModelOptions::quantization_config): the compiled, quantized
// model against the float reference evaluator, end to end.
//
// The log-mel front-end + GRU (tests/support/log_mel_model.h) runs on test audio the guard never
// saw (a chirp with noise at three loudnesses, not the guard's generated signals). Tolerance: the
// guard's own budget, each output's max |compiled - float reference| <= 2% of that output's range
// over the test inputs. The compiled integer kernels equal the fake-quantized reference the guard
// measures up to float summation order (1e-5 + 1e-4 |ref| in the lowering tests), far inside it.
// With the guard off the default int8 scheme misses it (the mel MatMul's 8-bit activations).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "ir/onnx_export.h"
#include "ir/reference/evaluator.h"
#include "rnnc/rnnc.h"
#include "tests/runtime/test_models.h"
#include "tests/support/log_mel_model.h"

namespace rnnc {
namespace {

constexpr double kBudget = 0.02;

const std::string& log_mel_bytes() {
  static const std::string bytes = export_onnx_bytes(*testing::make_log_mel_gru_model());
  return bytes;
}

ModelOptions quantized(bool guard) {
  ModelOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  options.quantization_config = "default";
  options.quantization_guard = guard;
  options.expose_recurrent_state = false;  // one run each: the model's own outputs
  return options;
}

// Per output, max |compiled - reference| as a fraction of the reference's range over the test
// audio.
void measure_error_fractions(const CompiledModel& compiled, std::map<std::string, double>& worst) {
  const std::unique_ptr<Model> model = testing::make_log_mel_gru_model();
  std::map<std::string, double> lo, hi;
  uint32_t seed = 7;
  for (float amplitude : {1.0f, 0.3f, 0.05f}) {
    std::vector<float> audio = testing::chirp_with_noise(amplitude, seed++);
    Tensor input(DType::kFloat32, {1, 1, testing::kLogMelSamples});
    std::copy(audio.begin(), audio.end(), input.data<float>());
    const std::vector<Tensor> reference = evaluate(*model->graph, {{"audio", input}});
    const std::vector<CompiledModel::Output> outputs =
        compiled.run({{"audio", {ElementType::kFloat32, {1, 1, testing::kLogMelSamples},
                                 audio.data()}}});
    ASSERT_EQ(outputs.size(), reference.size());
    for (size_t k = 0; k < outputs.size(); ++k) {
      const std::string& name = outputs[k].name;
      EXPECT_EQ(model->graph->outputs()[k]->name(), name);
      lo.try_emplace(name, INFINITY);
      hi.try_emplace(name, -INFINITY);
      for (int64_t i = 0; i < reference[k].numel(); ++i) {
        const double f = reference[k].data<float>()[i];
        const double q = outputs[k].as<float>()[i];
        worst[name] = std::max(worst[name], std::abs(q - f));
        lo[name] = std::min(lo[name], f);
        hi[name] = std::max(hi[name], f);
      }
    }
  }
  for (auto& [name, error] : worst) {
    error /= hi[name] - lo[name];
    std::printf("  %s: max error %.3g%% of its range %.3g\n", name.c_str(), 100 * error,
                hi[name] - lo[name]);
  }
}

std::map<std::string, double> error_fractions(const CompiledModel& compiled) {
  std::map<std::string, double> worst;
  measure_error_fractions(compiled, worst);  // ASSERTs return from a void function only
  return worst;
}

TEST(QuantGuardAtLoad, LogMelFrontEndMeetsTheBudgetWithTheGruInt8) {
  const auto compiled = CompiledModel::load_bytes(log_mel_bytes().data(), log_mel_bytes().size(),
                                                  quantized(true));
  std::printf("%s\n", compiled->quantization_summary().c_str());
  for (const auto& [output, fraction] : error_fractions(*compiled)) {
    EXPECT_LE(fraction, kBudget) << output;
  }
  const std::string blocks = compiled->describe();
  EXPECT_NE(blocks.find("gru int8"), std::string::npos) << blocks;
  EXPECT_EQ(compiled->quantization_summary().rfind(
                "1 quantized as configured, 2 float (MatMul 'mel', Gemm 'classifier'); max error ",
                0),
            0u)
      << compiled->quantization_summary();
  EXPECT_NE(compiled->quantization_report().find("| mel | MatMul | float |"), std::string::npos)
      << compiled->quantization_report();
}

TEST(QuantGuardAtLoad, LogMelFrontEndMissesTheBudgetWithoutTheGuard) {
  const auto compiled = CompiledModel::load_bytes(log_mel_bytes().data(), log_mel_bytes().size(),
                                                  quantized(false));
  EXPECT_EQ(compiled->quantization_summary(),
            "3 node(s) quantized as configured; quantization guard off: error not measured");
  const std::map<std::string, double> fractions = error_fractions(*compiled);
  EXPECT_GT(fractions.at("features"), kBudget);
}

// The second load of the same model and options applies the decision the first one cached.
TEST(QuantGuardAtLoad, TheDecisionIsCachedWithTheKernels) {
  const auto first = CompiledModel::load_bytes(log_mel_bytes().data(), log_mel_bytes().size(),
                                               quantized(true));
  const auto second = CompiledModel::load_bytes(log_mel_bytes().data(), log_mel_bytes().size(),
                                                quantized(true));
  const std::string suffix = "; decision read from the cache";
  const std::string summary = second->quantization_summary();
  ASSERT_GE(summary.size(), suffix.size());
  EXPECT_EQ(summary.substr(summary.size() - suffix.size()), suffix) << summary;
  std::string first_summary = first->quantization_summary();
  if (first_summary.size() > suffix.size() &&
      first_summary.substr(first_summary.size() - suffix.size()) == suffix) {
    first_summary.resize(first_summary.size() - suffix.size());
  }
  EXPECT_EQ(summary.substr(0, summary.size() - suffix.size()), first_summary);
  EXPECT_TRUE(std::filesystem::is_directory(RNNC_MODELS_DIR "/../kernel_cache/quant_decisions"));
  // Another budget is another decision.
  ModelOptions looser = quantized(true);
  looser.quantization_max_error = 0.9;
  const auto third =
      CompiledModel::load_bytes(log_mel_bytes().data(), log_mel_bytes().size(), looser);
  EXPECT_EQ(third->quantization_summary().rfind(
                "2 quantized as configured, 1 float (MatMul 'mel'); max error ", 0),
            0u)
      << third->quantization_summary();
}

TEST(QuantGuardAtLoad, MaxErrorOutOfRangeIsAnError) {
  ModelOptions options = quantized(true);
  options.quantization_max_error = 2;
  try {
    CompiledModel::load_bytes(log_mel_bytes().data(), log_mel_bytes().size(), options);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_STREQ(e.what(), "ModelOptions::quantization_max_error = 2, must be in (0, 1] (a "
                           "fraction of each output's range)");
  }
}

// A stacked LSTM as the speech benchmark models are built: the guard leaves every layer's
// products int8 (and measures once).
TEST(QuantGuardAtLoad, StackedLstmStaysInt8) {
  const std::string bytes = testing::stacked_recurrent_onnx("LSTM", 4, 128, 64);
  ModelOptions options = quantized(true);
  options.quantization_dims = {{"seq", 16}, {"batch", 1}};
  const auto compiled = CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
  EXPECT_EQ(compiled->quantization_summary().rfind("4 quantized as configured; max error ", 0), 0u)
      << compiled->quantization_summary();
  const std::string blocks = compiled->describe();
  size_t int8_layers = 0;
  for (size_t at = 0; (at = blocks.find("lstm int8", at)) != std::string::npos; ++at) ++int8_layers;
  EXPECT_EQ(int8_layers, 4u) << blocks;
}

}  // namespace
}  // namespace rnnc
