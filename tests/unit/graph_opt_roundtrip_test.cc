// `rnnc optimize` output round-trips: for real models, load(export(optimize(m))) prints the same
// IR text as optimize(m), so what rnnc writes is exactly what it optimized.
#include <gtest/gtest.h>

#include <filesystem>

#include "graph_opt/pipeline.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/printer.h"

namespace rnnc {
namespace {

void expect_round_trip(const std::string& path, const PassContext& context) {
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing";
  auto model = import_onnx_file(path);
  OptimizeOptions options;
  options.context = context;
  optimize(*model, options);
  std::string bytes = export_onnx_bytes(*model);
  auto reloaded = import_onnx_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(to_text(*reloaded), to_text(*model)) << path;
}

TEST(GraphOptRoundTrip, DemoModel) {
  expect_round_trip(RNNC_SOURCE_DIR "/models/demo/lstm_demo.onnx", {});
}

TEST(GraphOptRoundTrip, PytorchExports) {
  for (const char* name : {"lstm_bidirectional", "gru", "lstm_batch_first"}) {
    expect_round_trip(std::string(RNNC_SOURCE_DIR "/tests/data/graph_opt/") + name + ".onnx", {});
  }
}

TEST(GraphOptRoundTrip, SileroSpecialized) {
  PassContext context;
  context.fixed_inputs["sr"] = Tensor::scalar<int64_t>(16000);
  expect_round_trip(RNNC_MODELS_DIR "/silero_vad_16k_op15.onnx", context);
  context.fixed_dims = {{"batch", 1}, {"sequence", 512}};
  expect_round_trip(RNNC_MODELS_DIR "/silero_vad_16k_op15.onnx", context);
}

}  // namespace
}  // namespace rnnc
