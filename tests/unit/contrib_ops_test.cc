// ONNX Runtime's com.microsoft.DynamicQuantizeLSTM at import (ir/contrib_ops.h): the rewrite on the
// printed IR; the imported model on the reference evaluator against a default-domain LSTM built
// here from the dequantized weights (bit for bit); the compiled int8 kernels against the
// reference; each error. ONNX Runtime's own results on such models:
// tests/runtime/contrib_ops_test.cc.
#include "ir/contrib_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "compiler/compile.h"
#include "ir/onnx_import.h"
#include "ir/printer.h"
#include "ir/quantization.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "lowering/program.h"
#include "tests/support/compare.h"
#include "tests/support/dqlstm_model.h"
#include "tests/support/error_message.h"
#include "tests/support/ort_quantized_models.h"
#include "tests/support/random.h"

namespace rnnc {
namespace {

using Case = testing::DqlstmCase;
using ::testing::HasSubstr;
using ::testing::Not;

std::unique_ptr<Model> import(const std::string& bytes) {
  return import_onnx_bytes(bytes.data(), bytes.size());
}

std::map<std::string, Tensor> inputs_for(const Case& c, int64_t seq, int64_t batch) {
  std::mt19937 rng(11);
  std::map<std::string, Tensor> inputs{
      {"x", testing::random_tensor({seq, batch, c.input}, rng, -2.0f, 2.0f)}};
  if (c.initial_state) {
    inputs["h0"] = testing::random_tensor({c.dirs, batch, c.hidden}, rng, -0.5f, 0.5f);
    inputs["c0"] = testing::random_tensor({c.dirs, batch, c.hidden}, rng, -0.5f, 0.5f);
  }
  return inputs;
}

// The imported model equals the hand-built default-domain LSTM on the reference evaluator, bit
// for bit (both fake-quantize the same rows, ir/quantization.h, with the same float weights).
void expect_equals_hand_built(const Case& c) {
  testing::DqlstmModels models = testing::dqlstm_models(c);
  std::unique_ptr<Model> imported = import(models.contrib);
  const auto inputs = inputs_for(c, 6, 3);
  const std::vector<Tensor> ours = evaluate(*imported->graph, inputs);
  const std::vector<Tensor> expected = evaluate(*models.expected.graph, inputs);
  ASSERT_EQ(ours.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const auto result = testing::compare_tensors(ours[i], expected[i], {0, 0});
    EXPECT_TRUE(result.ok) << "output " << i << ": " << result.message;
  }
}

TEST(ContribOps, ForwardBecomesOneAnnotatedLstmOnDequantizedWeights) {
  Case c;
  testing::DqlstmModels models = testing::dqlstm_models(c);
  std::unique_ptr<Model> imported = import(models.contrib);
  const std::string text = to_text(*imported);
  EXPECT_THAT(text, Not(HasSubstr("com.microsoft.DynamicQuantizeLSTM")));
  // W [1, 5, 16] transposed into [1, 16, 5], per-channel scales on axis 1.
  EXPECT_THAT(text, HasSubstr(": i8[1, 16, 5] = {"));
  EXPECT_THAT(text, HasSubstr(": f32[1, 16, 5] = DequantizeLinear"));
  EXPECT_THAT(text, HasSubstr(": f32[1, 16, 4] = DequantizeLinear"));
  EXPECT_THAT(text, HasSubstr("{axis=1}"));
  // The node's name and outputs are kept; the activations are rnnc's dynamic u8 scheme.
  EXPECT_THAT(text, HasSubstr("%y: f32[seq, 1, batch, 4], %y_h: f32[1, batch, 4], "
                              "%y_c: f32[1, batch, 4] = LSTM 'lstm' "));
  int lstms = 0;
  for (const auto& node : imported->graph->nodes()) {
    if (node->op_type() != "LSTM") continue;
    ++lstms;
    ASSERT_TRUE(has_activation_quant(*node));
    EXPECT_EQ(activation_quant(*node).to_string(), "dynamic asymmetric bits=8");
  }
  EXPECT_EQ(lstms, 1);
  expect_equals_hand_built(c);
}

TEST(ContribOps, PerTensorUint8WithZeroPointsAtOpset11) {
  Case c;
  c.dtype = DType::kUInt8;
  c.per_channel = false;
  c.default_opset = 11;
  c.direction = "reverse";
  c.initial_state = true;
  c.hidden_size_attribute = false;  // the LSTM gets it from W's shape
  std::unique_ptr<Model> imported = import(testing::dqlstm_models(c).contrib);
  const std::string text = to_text(*imported);
  EXPECT_THAT(text, Not(HasSubstr("axis=1")));
  EXPECT_THAT(text, HasSubstr("direction=\"reverse\", hidden_size=4"));
  expect_equals_hand_built(c);
}

TEST(ContribOps, BidirectionalBecomesTwoLstmsConcatenated) {
  Case c;
  c.dirs = 2;
  c.direction = "bidirectional";
  c.initial_state = true;
  c.activations = {"Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Tanh", "Tanh"};
  testing::DqlstmModels models = testing::dqlstm_models(c);
  std::unique_ptr<Model> imported = import(models.contrib);
  const std::string text = to_text(*imported);
  EXPECT_THAT(text, HasSubstr("= LSTM 'lstm.forward' "));
  EXPECT_THAT(text, HasSubstr("= LSTM 'lstm.reverse' "));
  EXPECT_THAT(text, HasSubstr("{activations=[\"HardSigmoid\", \"Tanh\", \"Tanh\"], "
                              "direction=\"reverse\""));
  EXPECT_THAT(text, HasSubstr("%y: f32[seq, 2, batch, 4] = Concat"));
  EXPECT_THAT(text, HasSubstr("%y_h: f32[2, batch, 4] = Concat"));
  expect_equals_hand_built(c);
  c.per_channel = false;
  c.dtype = DType::kUInt8;
  expect_equals_hand_built(c);
}

// The compiled program runs the int8 kernels on the imported model, within the tolerance the
// integer recurrent kernels keep against the reference (tests/unit/lowering_recurrent_test.cc).
TEST(ContribOps, CompiledInt8KernelsMatchTheReference) {
  for (bool bidirectional : {false, true}) {
    Case c;
    c.input = 24;
    c.hidden = 32;
    c.initial_state = true;
    if (bidirectional) {  // uint8, one scale per direction
      c.dirs = 2;
      c.direction = "bidirectional";
      c.dtype = DType::kUInt8;
      c.per_channel = false;
    }
    const std::string bytes = testing::dqlstm_models(c).contrib;
    ProgramOptions options;
    options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
    auto program = compile_program(import(bytes), options);
    size_t integer_blocks = 0;
    for (const auto& block : program->blocks()) {
      integer_blocks += block->kind().rfind("halide lstm int8", 0) == 0;
    }
    EXPECT_EQ(integer_blocks, static_cast<size_t>(c.dirs));
    const auto inputs = inputs_for(c, 9, 3);
    const std::vector<Tensor> compiled = program->run(inputs);
    const std::vector<Tensor> reference = evaluate(*import(bytes)->graph, inputs);
    ASSERT_EQ(compiled.size(), reference.size());
    for (size_t i = 0; i < compiled.size(); ++i) {
      const auto result = testing::compare_tensors(compiled[i], reference[i], {1e-4, 1e-5});
      EXPECT_TRUE(result.ok) << (bidirectional ? "bidirectional" : "forward") << " output " << i
                             << ": " << result.message;
    }
  }
}

// DynamicQuantizeMatMul and MatMulIntegerToFloat become the default-domain chain, the output
// keeping its name. Numbers: tests/unit/lowering_integer_matmul_test.cc.
TEST(ContribOps, QuantizedMatMulsBecomeTheIntegerChain) {
  testing::IntegerMatMulCase c;
  c.form = testing::IntegerMatMulCase::Form::kDynamicQuantizeMatMul;
  std::string text = to_text(*import(testing::integer_matmul_model(c)));
  EXPECT_THAT(text, Not(HasSubstr("= com.microsoft.")));
  EXPECT_THAT(text, HasSubstr("= DynamicQuantizeLinear 'matmul0.quantize' (%x)"));
  EXPECT_THAT(text, HasSubstr("= MatMulInteger 'matmul0.product' (%matmul0.a_quantized_0, "
                              "%matmul0_w_q, %matmul0.a_zero_point_2, %matmul0_w_zero_point)"));
  EXPECT_THAT(text, HasSubstr("= Cast 'matmul0.cast' (%matmul0.product_3) {to=1}"));
  EXPECT_THAT(text, HasSubstr("= Mul 'matmul0.scales' (%matmul0.a_scale_1, %matmul0_w_scale)"));
  EXPECT_THAT(text, HasSubstr("%y0: f32[seq, batch, 10] = Add 'matmul0.bias' (%matmul0.scaled_6, "
                              "%matmul0_bias)"));
  c.form = testing::IntegerMatMulCase::Form::kMatMulIntegerToFloat;
  c.bias = false;
  c.no_zero_point = true;
  text = to_text(*import(testing::integer_matmul_model(c)));
  EXPECT_THAT(text, Not(HasSubstr("= com.microsoft.")));
  EXPECT_THAT(text, HasSubstr("= MatMulInteger 'matmul0.product' (%x_quantized, %matmul0_w_q, "
                              "%x_zero_point)"));
  EXPECT_THAT(text, HasSubstr("= Mul 'matmul0.scales' (%x_scale, %matmul0_w_scale)"));
  EXPECT_THAT(text, HasSubstr("%y0: f32[seq, batch, 10] = Mul 'matmul0.scale' (%matmul0.cast_1, "
                              "%matmul0.scales_2)"));
}

void expect_import_error(const std::string& bytes, ErrorKind kind, const std::string& message) {
  try {
    import(bytes);
    ADD_FAILURE() << "imported, expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(ContribOps, Errors) {
  const std::string prefix = "com.microsoft.DynamicQuantizeLSTM 'lstm' (opset 1): ";
  {
    Case c;
    c.per_channel = true;
    c.default_opset = 12;
    expect_import_error(testing::dqlstm_models(c).contrib, ErrorKind::kUnsupported,
                        prefix +
                            "W's per-channel scales need DequantizeLinear's axis "
                            "(default-domain opset 13; the model imports 12)");
  }
  // Weights computed at run time, a wrong scale count, a wrong dtype: built from the text form.
  const std::string header = "model ir_version=8 opset=14 opset(com.microsoft)=1\n";
  const std::string inputs =
      "  const %r: i8[1, 2, 8] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}\n"
      "  const %s: f32[1] = {0.1}\n"
      "  const %z: i8[1] = {0}\n";
  auto parse_error = [&](const std::string& body, ErrorKind kind, const std::string& message) {
    try {
      parse_model_text(header + body, "c.ir");
      ADD_FAILURE() << "parsed, expected: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_THAT(std::string(e.what()), HasSubstr(message));
    }
  };
  parse_error("graph g(%x: f32[3, 1, 2], %w: i8[1, 2, 8]) {\n" + inputs +
                  "  %y = com.microsoft.DynamicQuantizeLSTM 'lstm' (%x, %w, %r, _, _, _, _, _, "
                  "%s, %z, %s, %z) {hidden_size=2}\n  return %y\n}\n",
              ErrorKind::kUnsupported,
              prefix + "input 1 (W, 'w') is computed at run time; rnnc needs it as an initializer");
  parse_error("graph g(%x: f32[3, 1, 2]) {\n" + inputs +
                  "  const %w: i8[1, 2, 8] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}\n"
                  "  const %s3: f32[3] = {0.1, 0.1, 0.1}\n"
                  "  %y = com.microsoft.DynamicQuantizeLSTM 'lstm' (%x, %w, %r, _, _, _, _, _, "
                  "%s3, %z, %s, %z) {hidden_size=2}\n  return %y\n}\n",
              ErrorKind::kInvalidModel,
              prefix + "W_scale has 3 elements: expected 1 (per tensor) or 8 (per channel)");
  parse_error("graph g(%x: f32[3, 1, 2]) {\n" + inputs +
                  "  const %w: i16[1, 2, 8] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}\n"
                  "  %y = com.microsoft.DynamicQuantizeLSTM 'lstm' (%x, %w, %r, _, _, _, _, _, "
                  "%s, %z, %s, %z) {hidden_size=2}\n  return %y\n}\n",
              ErrorKind::kInvalidModel, prefix + "W is i16, expected int8 or uint8");
  parse_error("graph g(%x: f32[3, 1, 2]) {\n" + inputs +
                  "  const %w: i8[1, 2, 8] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}\n"
                  "  %y = com.microsoft.DynamicQuantizeLSTM 'lstm' (%x, %w, %r, _, _, _, _, _, "
                  "%s, %z, %s, %z) {hidden_size=3}\n  return %y\n}\n",
              ErrorKind::kInvalidModel,
              prefix + "attribute 'hidden_size' = 3 but W holds 8 = 4 * 2 gate rows");
  parse_error("graph g(%x: f32[3, 1, 2]) {\n" + inputs +
                  "  const %w: i8[2, 2, 8] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
                  "0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}\n"
                  "  const %s2: f32[2] = {0.1, 0.1}\n"
                  "  const %z2: i8[2] = {0, 0}\n"
                  "  const %r2: i8[2, 2, 8] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
                  "0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}\n"
                  "  %y = com.microsoft.DynamicQuantizeLSTM 'lstm' (%x, %w, %r2, _, _, _, _, _, "
                  "%s2, %z2, %s2, %z2) {direction=\"bidirectional\", activation_alpha=[0.2]}\n"
                  "  return %y\n}\n",
              ErrorKind::kUnsupported,
              prefix + "activation_alpha / activation_beta on a bidirectional node");
}

TEST(ContribOps, QuantizedMatMulErrorsNameTheNode) {
  auto error = [](const std::string& opset, const std::string& call, ErrorKind kind) {
    return testing::error_message(
        [&] {
          parse_model_text("model ir_version=8 opset=" + opset + " opset(com.microsoft)=1\n" +
                               "graph g(%x: f32[3, 4], %w: i8[4, 2], %s: f32[]) {\n  %y = " + call +
                               "\n  return %y\n}\n",
                           "q.ir");
        },
        kind);
  };
  EXPECT_THAT(
      error("14", "com.microsoft.DynamicQuantizeMatMul 'dq' (%x, %w)", ErrorKind::kInvalidModel),
      HasSubstr("com.microsoft.DynamicQuantizeMatMul 'dq' (opset 1): 2 inputs, expected "
                "3 to 5"));
  EXPECT_THAT(error("14", "com.microsoft.MatMulIntegerToFloat 'mm' (%x, %w, _, %s)",
                    ErrorKind::kInvalidModel),
              HasSubstr("com.microsoft.MatMulIntegerToFloat 'mm' (opset 1): required input 2 is "
                        "missing"));
  EXPECT_THAT(
      error("9", "com.microsoft.DynamicQuantizeMatMul 'dq' (%x, %w, %s)", ErrorKind::kUnsupported),
      HasSubstr("com.microsoft.DynamicQuantizeMatMul 'dq' (opset 1): it becomes "
                "DynamicQuantizeLinear and MatMulInteger, which need default-domain "
                "opset 10 (the model imports 9)"));
}

}  // namespace
}  // namespace rnnc
