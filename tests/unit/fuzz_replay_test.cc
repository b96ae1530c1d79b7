// Replays the fuzz target's parsers on deterministic mutations of real inputs (the demo model, the
// bench smoke model with ONNX Runtime's DynamicQuantizeLSTM, generated models with its quantized
// MatMul operators, a backend test tensor, a .npy file, an IR text with nested graphs, a
// quantization config): truncations at many lengths and random byte flips. Each must either load or
// raise an rnnc::Error, never crash and never throw anything else. The open-ended coverage-guided
// run is scripts/fuzz.sh (libFuzzer + ASan/UBSan).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/error.h"
#include "tests/support/ort_quantized_models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace rnnc {
namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void replay_mutations(char selector, const std::string& original, int flips) {
  ASSERT_FALSE(original.empty());
  auto run = [&](const std::string& bytes) {
    std::string input = std::string(1, selector) + bytes;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  };
  run(original);
  for (size_t cut = 0; cut < original.size(); cut += 1 + original.size() / 200) {
    run(original.substr(0, cut));
  }
  std::mt19937 rng(1234);
  for (int i = 0; i < flips; ++i) {
    std::string mutated = original;
    int changes = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < changes; ++c) {
      size_t at = rng() % mutated.size();
      mutated[at] = static_cast<char>(rng() & 0xff);
    }
    run(mutated);
  }
}

TEST(FuzzReplay, OnnxModelMutationsNeverCrash) {
  replay_mutations(0, read_bytes(RNNC_SOURCE_DIR "/models/demo/lstm_demo.onnx"), 300);
}

// ONNX Runtime's DynamicQuantizeLSTM, rewritten at import (ir/contrib_ops.h).
TEST(FuzzReplay, DynamicQuantizeLstmModelMutationsNeverCrash) {
  replay_mutations(0, read_bytes(RNNC_SOURCE_DIR "/models/smoke/smoke_lstm64_l2.dqlstm.onnx"), 300);
}

// ONNX Runtime's DynamicQuantizeMatMul and MatMulIntegerToFloat, rewritten at import.
TEST(FuzzReplay, QuantizedMatMulModelMutationsNeverCrash) {
  testing::IntegerMatMulCase c;
  c.form = testing::IntegerMatMulCase::Form::kDynamicQuantizeMatMul;
  replay_mutations(0, testing::integer_matmul_model(c), 300);
  c.form = testing::IntegerMatMulCase::Form::kMatMulIntegerToFloat;
  replay_mutations(0, testing::integer_matmul_model(c), 300);
}

TEST(FuzzReplay, TensorProtoMutationsNeverCrash) {
  replay_mutations(1, read_bytes("/usr/share/libonnx-testdata/data/node/test_lstm_defaults/"
                                 "test_data_set_0/input_0.pb"), 2000);
}

TEST(FuzzReplay, NpyMutationsNeverCrash) {
  replay_mutations(2, read_bytes(RNNC_SOURCE_DIR "/models/demo/input.npy"), 2000);
}

TEST(FuzzReplay, IrTextMutationsNeverCrash) {
  replay_mutations(5, read_bytes(RNNC_SOURCE_DIR "/tests/graph_opt/dce_nested.ir"), 2000);
}

// docs/quant.md's example: every section, op and node overrides.
constexpr char kQuantizationConfig[] = R"({
  "default": {"weights": {"bits": 8, "symmetric": true, "granularity": "row"},
              "activations": {"bits": 8, "symmetric": false, "dynamic": true}},
  "ops":     {"GRU": {"activations": {"dynamic": false, "method": "percentile", "percentile": 99.9}}},
  "nodes":   {"/LSTM_3": {"float": true}, "/LSTM": {"weights": {"bits": 4, "method": "mse"}}},
  "guard":   {"max_error": 0.02}
})";

TEST(FuzzReplay, QuantizationConfigMutationsNeverCrash) {
  replay_mutations(6, kQuantizationConfig, 2000);
}

// Inputs that once crashed a fuzz run (tests/fuzz/regressions/, raw fuzzer inputs with the
// selector byte first) must now load or fail cleanly.
TEST(FuzzReplay, RegressionInputsFailCleanly) {
  int replayed = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(RNNC_SOURCE_DIR "/tests/fuzz/regressions")) {
    std::string bytes = read_bytes(entry.path().string());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++replayed;
  }
  EXPECT_GT(replayed, 0);
}

}  // namespace
}  // namespace rnnc
