// quant/: the quantization arithmetic against a plain restatement of docs/quant.md, for every
// scheme / granularity / bit width combination; the config file; the model rewrite.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "graph_opt/pipeline.h"
#include "ir/error.h"
#include "ir/op_schema.h"
#include "ir/quantization.h"
#include "ir/reference/evaluator.h"
#include "quant/quantize_model.h"
#include "quant/scheme.h"
#include "quant/weights.h"
#include "tests/support/error_message.h"

namespace rnnc::quant {
namespace {

Tensor random_weight(std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  Tensor t(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(random);
  t.data<float>()[3] = 2.5f;  // an outlier, so percentile/mse ranges differ from min/max
  return t;
}

using testing::error_message;

int32_t stored(const Tensor& q, int64_t i) {
  switch (q.dtype()) {
    case DType::kInt8: return q.data<int8_t>()[i];
    case DType::kUInt8: return q.data<uint8_t>()[i];
    default: return q.data<int32_t>()[i];
  }
}

// ---- weights: every scheme x granularity x width ------------------------------------------------

struct WeightCase {
  int bits;
  bool symmetric;
  Granularity granularity;
  RangeMethod method;
};

class WeightQuantization : public ::testing::TestWithParam<WeightCase> {};

// The rules of docs/quant.md restated per element: the integers lie in the width's range, the
// dequantized value is (q - zp) * scale of the element's group, every element within half a
// step of its value (clipped ones within half a step of the clip bound), and the groups are the
// granularity's.
TEST_P(WeightQuantization, FollowsTheArithmetic) {
  const WeightCase c = GetParam();
  WeightScheme scheme;
  scheme.bits = c.bits;
  scheme.symmetric = c.symmetric;
  scheme.granularity = c.granularity;
  scheme.method = c.method;
  const int64_t dirs = 2, hidden = 6, gates = 4, k = 5;
  const Tensor w = random_weight({dirs, gates * hidden, k}, 7);
  const QuantizedWeight q = quantize_weight(w, scheme, recurrent_weight_shape(hidden));

  const int64_t expected_axis = c.granularity == Granularity::kTensor   ? -1
                                : c.granularity == Granularity::kColumn ? 2
                                                                        : 1;
  ASSERT_EQ(q.axis, expected_axis);
  EXPECT_EQ(q.q.dtype(), c.bits > 8 ? DType::kInt32 : c.symmetric ? DType::kInt8 : DType::kUInt8);
  EXPECT_EQ(q.zero_point.defined(), !c.symmetric);
  const int32_t qmax = c.symmetric ? (1 << (c.bits - 1)) - 1 : (1 << c.bits) - 1;
  const int32_t qmin = c.symmetric ? -qmax : 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int64_t d = i / (gates * hidden * k), row = i / k % (gates * hidden), col = i % k;
    (void)d;
    const int64_t group = expected_axis < 0 ? 0 : expected_axis == 2 ? col : row;
    const float scale = q.scale.data<float>()[group];
    const int32_t zp = c.symmetric ? 0 : q.zero_point.data<uint8_t>()[group];
    const int32_t v = stored(q.q, i);
    ASSERT_GE(v, qmin);
    ASSERT_LE(v, qmax);
    ASSERT_EQ(q.dequantized.data<float>()[i], static_cast<float>(v - zp) * scale) << i;
    const float value = w.data<float>()[i];
    const float lo = static_cast<float>(qmin - zp) * scale, hi = static_cast<float>(qmax - zp) * scale;
    const float clipped = std::min(std::max(value, lo), hi);
    // Half a step, plus float rounding of (q - zp) * scale at 16-bit magnitudes.
    ASSERT_LE(std::abs(q.dequantized.data<float>()[i] - clipped),
              0.5f * scale * 1.0001f + 1e-6f * std::abs(clipped))
        << i;
  }
  // Channel granularity: the hidden_size rows of one gate block share a scale.
  if (c.granularity == Granularity::kChannel) {
    for (int64_t row = 0; row < gates * hidden; ++row) {
      EXPECT_EQ(q.scale.data<float>()[row], q.scale.data<float>()[row / hidden * hidden]);
    }
  }
  // Min/max ranges cover every value: nothing clipped.
  if (c.method == RangeMethod::kMinMax) {
    for (int64_t i = 0; i < w.numel(); ++i) {
      const int64_t group = expected_axis < 0 ? 0 : expected_axis == 2 ? i % k : i / k % (gates * hidden);
      EXPECT_LE(std::abs(q.dequantized.data<float>()[i] - w.data<float>()[i]),
                0.5f * q.scale.data<float>()[group] * 1.0001f + 1e-6f * std::abs(w.data<float>()[i]));
    }
  }
}

std::vector<WeightCase> all_weight_cases() {
  std::vector<WeightCase> cases;
  for (int bits : {2, 4, 7, 8, 12, 16}) {
    for (bool symmetric : {true, false}) {
      if (bits > 8 && !symmetric) continue;  // wider weights are symmetric int32 (config rejects)
      for (Granularity g : {Granularity::kTensor, Granularity::kRow, Granularity::kColumn,
                            Granularity::kChannel}) {
        for (RangeMethod m : {RangeMethod::kMinMax, RangeMethod::kPercentile, RangeMethod::kMse}) {
          cases.push_back({bits, symmetric, g, m});
        }
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllSchemes, WeightQuantization, ::testing::ValuesIn(all_weight_cases()),
                         [](const ::testing::TestParamInfo<WeightCase>& info) {
                           const WeightCase& c = info.param;
                           return cat(c.bits, "bit_", c.symmetric ? "symmetric" : "asymmetric", "_",
                                      granularity_name(c.granularity), "_",
                                      range_method_name(c.method));
                         });

TEST(WeightQuantizationRange, MseAndPercentileClipTheOutlier) {
  const Tensor w = random_weight({64, 64}, 3);
  std::vector<float> values(w.data<float>(), w.data<float>() + w.numel());
  float lo = 0, hi = 0;
  choose_range(values, RangeMethod::kMinMax, 99.99, 4, true, lo, hi);
  EXPECT_FLOAT_EQ(hi, 2.5f);
  choose_range(values, RangeMethod::kPercentile, 99.0, 4, true, lo, hi);
  EXPECT_LT(hi, 1.5f);
  choose_range(values, RangeMethod::kMse, 99.99, 4, true, lo, hi);
  EXPECT_LT(hi, 2.5f);
}

TEST(WeightQuantizationRange, MatrixChannelIsTheOutputColumn) {
  WeightScheme scheme;
  scheme.granularity = Granularity::kChannel;
  const Tensor b = random_weight({6, 10}, 5);
  EXPECT_EQ(quantize_weight(b, scheme, matrix_weight_shape(false)).axis, 1);
  EXPECT_EQ(quantize_weight(b, scheme, matrix_weight_shape(true)).axis, 0);
}

TEST(WeightQuantizationRange, RejectsNonFloatAndVectors) {
  WeightScheme scheme;
  EXPECT_EQ(error_message([&] { quantize_weight(Tensor(DType::kInt32, {3, 3}), scheme, {}); },
                          ErrorKind::kInvalidInput),
            "weight of element type int32: only float32 weights are quantized");
  EXPECT_EQ(error_message([&] { quantize_weight(Tensor(DType::kFloat32, {3}), scheme, {}); },
                          ErrorKind::kInvalidInput),
            "weight of shape [3]: quantization needs a matrix (rank >= 2)");
}

// ---- activations (ir/quantization.h) -------------------------------------------------------------

TEST(ActivationQuantization, DynamicAsymmetricRowsFollowDynamicQuantizeLinear) {
  const float row[] = {-0.5f, 0.25f, 1.5f, 0.0f};
  ActivationQuant quant;  // dynamic u8 asymmetric
  const RowQuant params = dynamic_row_quant(row, 4, quant);
  EXPECT_FLOAT_EQ(params.scale, 2.0f / 255);
  EXPECT_EQ(params.zero_point, 64);  // round(0.5 / (2 / 255)) = round(63.75)
  EXPECT_EQ(quantize_value(1.5f, params, quant), 255);
  EXPECT_EQ(quantize_value(-0.5f, params, quant), 0);
  EXPECT_EQ(quantize_value(0.0f, params, quant), 64);
}

TEST(ActivationQuantization, PositiveRowsStillContainZero) {
  const float row[] = {1.0f, 2.0f};
  const RowQuant params = dynamic_row_quant(row, 2, ActivationQuant{});
  EXPECT_EQ(params.zero_point, 0);
  EXPECT_FLOAT_EQ(params.scale, 2.0f / 255);
}

TEST(ActivationQuantization, SymmetricNarrowUsesTheMidpointZeroPoint) {
  ActivationQuant quant;
  quant.symmetric = true;
  quant.bits = 4;
  const float row[] = {-0.7f, 0.35f};
  const RowQuant params = dynamic_row_quant(row, 2, quant);
  EXPECT_EQ(params.zero_point, 8);
  EXPECT_FLOAT_EQ(params.scale, 0.1f);
  EXPECT_EQ(quant.qmin(), 1);
  EXPECT_EQ(quant.qmax(), 15);
  EXPECT_EQ(quantize_value(-0.7f, params, quant), 1);
  EXPECT_EQ(quantize_value(10.0f, params, quant), 15);  // saturates
}

TEST(ActivationQuantization, WideIsSymmetricInt16) {
  ActivationQuant quant;
  quant.symmetric = true;
  quant.bits = 12;
  const float row[] = {-2.0f, 1.0f};
  const RowQuant params = dynamic_row_quant(row, 2, quant);
  EXPECT_EQ(params.zero_point, 0);
  EXPECT_EQ(quantize_value(-2.0f, params, quant), -2047);
}

TEST(ActivationQuantization, RoundsHalfToEven) {
  ActivationQuant quant;
  const RowQuant params = static_row_quant(1.0f, 10);
  EXPECT_EQ(quantize_value(2.5f, params, quant), 12);
  EXPECT_EQ(quantize_value(3.5f, params, quant), 14);
  EXPECT_EQ(quantize_value(-0.5f, params, quant), 10);
}

TEST(ActivationQuantization, AllZeroRowGetsScaleOne) {
  const float row[] = {0.0f, 0.0f};
  EXPECT_EQ(dynamic_row_quant(row, 2, ActivationQuant{}).scale, 1.0f);
}

TEST(ActivationQuantization, AnnotationRoundTripsAndRejectsGarbage) {
  Graph graph;
  Node* node = graph.add_node("LSTM", "lstm", {}, {"y"}, 14);
  ActivationQuant quant;
  quant.dynamic = false;
  quant.bits = 6;
  quant.input_scale = 0.013f;
  quant.input_zero_point = 31;
  quant.state_scale = 1.0f / 31;
  quant.state_zero_point = 32;
  set_activation_quant(*node, quant);
  const ActivationQuant back = activation_quant(*node);
  EXPECT_EQ(back.to_string(), quant.to_string());
  EXPECT_EQ(back.input_scale, quant.input_scale);
  Attribute bad;
  bad.kind = Attribute::Kind::kString;
  bad.s = "dynamic sideways bits=8";
  node->set_attr("rnnc.quant_activations", bad);
  EXPECT_EQ(error_message([&] { activation_quant(*node); }, ErrorKind::kInvalidModel),
            "LSTM 'lstm' (opset 14): attribute 'rnnc.quant_activations' = 'dynamic sideways "
            "bits=8' is not a valid activation quantization");
  quant.bits = 12;
  quant.symmetric = false;
  EXPECT_EQ(error_message([&] { set_activation_quant(*node, quant); }, ErrorKind::kInvalidModel),
            "LSTM 'lstm' (opset 14): activation bit width 12 needs symmetric quantization (widths "
            "above 8 are stored as int16 with zero point 0)");
  // The declared accumulation width is part of the annotation when it is not 32.
  ActivationQuant accumulating;
  accumulating.accumulation_bits = 16;
  set_activation_quant(*node, accumulating);
  EXPECT_EQ(node->attr_string("rnnc.quant_activations", ""),
            "dynamic asymmetric bits=8 accumulation=16");
  EXPECT_EQ(activation_quant(*node).accumulation_bits, 16);
  accumulating.accumulation_bits = 40;
  EXPECT_EQ(
      error_message([&] { set_activation_quant(*node, accumulating); }, ErrorKind::kInvalidModel),
      "LSTM 'lstm' (opset 14): accumulation bit width 40, must be in 8..32");
  bad.s = "dynamic asymmetric bits=8 accumulation=";
  node->set_attr("rnnc.quant_activations", bad);
  EXPECT_EQ(error_message([&] { activation_quant(*node); }, ErrorKind::kInvalidModel),
            "LSTM 'lstm' (opset 14): attribute 'rnnc.quant_activations' = 'dynamic asymmetric "
            "bits=8 accumulation=' is not a valid activation quantization");
}

// per_tensor is DynamicQuantizeLinear's arithmetic: x divided by the scale (a tie stays a tie),
// and only for dynamic asymmetric 8-bit operands of MatMul and Gemm.
TEST(ActivationQuantization, PerTensorDividesAndAnnotatesProductsOnly) {
  ActivationQuant quant;
  quant.per_tensor = true;
  const float range[] = {-0.77f, 2.9f};
  const RowQuant params = dynamic_row_quant(range, 2, quant);
  // Values halfway between levels, x = scale * (j + 0.5): the divide gives the tie, rounded to
  // even; the per-row schemes' multiply by the reciprocal misses some of them by an ulp.
  int differ = 0;
  for (int j = 0; j < 180; ++j) {
    const float x = params.scale * (static_cast<float>(j) + 0.5f);
    const int32_t divided = static_cast<int32_t>(std::nearbyint(x / params.scale));
    EXPECT_EQ(quantize_value(x, params, quant), std::min(divided + params.zero_point, 255)) << j;
    differ += quantize_value(x, params, ActivationQuant{}) != quantize_value(x, params, quant);
  }
  EXPECT_GT(differ, 0);

  Graph graph;
  Node* matmul = graph.add_node("MatMul", "product", {}, {"y"}, 13);
  set_activation_quant(*matmul, quant);
  EXPECT_EQ(matmul->attr_string("rnnc.quant_activations", ""),
            "dynamic asymmetric bits=8 per_tensor");
  EXPECT_TRUE(activation_quant(*matmul).per_tensor);
  quant.accumulation_bits = 24;
  set_activation_quant(*matmul, quant);
  EXPECT_EQ(activation_quant(*matmul).to_string(),
            "dynamic asymmetric bits=8 per_tensor accumulation=24");
  Node* lstm = graph.add_node("LSTM", "lstm", {}, {"h"}, 14);
  EXPECT_EQ(error_message([&] { set_activation_quant(*lstm, quant); }, ErrorKind::kInvalidModel),
            "LSTM 'lstm' (opset 14): per-tensor activation coefficients (DynamicQuantizeLinear's) "
            "need dynamic asymmetric 8-bit quantization of a MatMul or Gemm operand");
  quant.symmetric = true;
  EXPECT_THROW(set_activation_quant(*matmul, quant), Error);
}

// ---- config ------------------------------------------------------------------------------------

// ProductWidths: the worst-case sum K * max|a| * max|w| in signed bits, worked out by hand.
ActivationQuant activation_bits(int bits, bool symmetric) {
  ActivationQuant quant;
  quant.bits = bits;
  quant.symmetric = symmetric;
  return quant;
}

TEST(ProductWidths, EightBitOperandsAreU8xS8InOneInt32Sum) {
  // 255 * 128 * 128 = 4177920 < 2^22: 22 bits + sign.
  const ProductWidths widths = product_widths(activation_bits(8, false), 8, false, 128, false, 4);
  EXPECT_EQ(widths.storage_bits, 8);
  EXPECT_EQ(widths.lane, 4);
  EXPECT_EQ(widths.activation_max, 255);
  EXPECT_EQ(widths.weight_max, 128);
  EXPECT_EQ(widths.sum_bits, 23);
  EXPECT_FALSE(widths.int64_sum);
  EXPECT_EQ(widths.chunk_terms, 128);
  EXPECT_EQ(widths.to_string(), "u8 x s8 -> s32 (sums need 23 bits)");
  // 4-bit weights: 255 * 8 * 30 = 61200 < 2^16; K = 30 padded to whole lanes of 4.
  const ProductWidths narrow = product_widths(activation_bits(8, false), 4, false, 30, false, 4);
  EXPECT_EQ(narrow.sum_bits, 17);
  EXPECT_EQ(narrow.chunk_terms, 32);
  // Without VNNI the same u8 x s8 operands are summed in pairs: the same bounds, K padded to 2.
  const ProductWidths pairs = product_widths(activation_bits(8, false), 4, false, 31, false, 2);
  EXPECT_EQ(pairs.storage_bits, 8);
  EXPECT_EQ(pairs.lane, 2);
  EXPECT_EQ(pairs.sum_bits, 17);
  EXPECT_EQ(pairs.chunk_terms, 32);
}

TEST(ProductWidths, WideOperandsAreS16xS16AndChunkedWhenInt32CouldOverflow) {
  // 12 x 12 bits over 128: 2047 * 2048 * 128 = 536608768 < 2^29, three of them < 2^31: one sum.
  const ProductWidths fits = product_widths(activation_bits(12, true), 12, false, 128, false, 4);
  EXPECT_EQ(fits.storage_bits, 16);
  EXPECT_EQ(fits.lane, 2);
  EXPECT_EQ(fits.activation_max, 2047);
  EXPECT_EQ(fits.sum_bits, 30);
  EXPECT_FALSE(fits.int64_sum);
  // Over 608 (the speech-like models' hidden size): 2.5e9 > 2^31, chunks of
  // floor(2147483647 / (2047 * 2048) / 2) * 2 = 512 products.
  const ProductWidths speech = product_widths(activation_bits(12, true), 12, false, 608, false, 4);
  EXPECT_TRUE(speech.int64_sum);
  EXPECT_EQ(speech.chunk_terms, 512);
  EXPECT_EQ(speech.sum_bits, 33);
  // 16 x 16 bits: 32767 * 32768 * 128 ~ 1.4e11 needs 38 bits; one lane (2 products) per chunk.
  const ProductWidths full = product_widths(activation_bits(16, true), 16, false, 128, false, 4);
  EXPECT_TRUE(full.int64_sum);
  EXPECT_EQ(full.chunk_terms, 2);
  EXPECT_EQ(full.sum_bits, 38);
  EXPECT_EQ(full.to_string(), "s16 x s16 -> s32 in chunks of 2 -> s64 (sums need 38 bits)");
  // 8-bit operands forced wide (the node's other product has 12-bit weights).
  const ProductWidths forced = product_widths(activation_bits(8, false), 8, false, 64, true, 4);
  EXPECT_EQ(forced.storage_bits, 16);
  EXPECT_EQ(forced.lane, 2);
}

TEST(QuantConfig, DefaultsAreInt8RowWeightsAndDynamicU8Activations) {
  const Config config = parse_config("{}");
  EXPECT_EQ(config.default_scheme.to_string(),
            "weights symmetric 8-bit per row (minmax), activations dynamic asymmetric 8-bit");
}

TEST(QuantConfig, NodeOverridesOpOverridesDefault) {
  const Config config = parse_config(R"({
    "default": {"weights": {"bits": 6}},
    "ops": {"GRU": {"activations": {"dynamic": false, "method": "percentile"}}},
    "nodes": {"gru_2": {"weights": {"granularity": "channel"}}, "lstm_9": {"float": true}}
  })");
  Graph graph;
  Node* gru = graph.add_node("GRU", "gru_2", {}, {"a"}, 14);
  Node* lstm = graph.add_node("LSTM", "lstm_9", {}, {"b"}, 14);
  Node* other = graph.add_node("LSTM", "lstm_1", {}, {"c"}, 14);
  EXPECT_EQ(config.scheme_for(*gru).to_string(),
            "weights symmetric 6-bit per channel (minmax), activations static asymmetric 8-bit "
            "(percentile)");
  EXPECT_TRUE(config.scheme_for(*lstm).keep_float);
  EXPECT_EQ(config.scheme_for(*other).weights.bits, 6);
}

TEST(QuantConfig, ErrorsNameTheField) {
  auto message = [](const std::string& json) {
    return error_message([&] { parse_config(json, "q.json"); }, ErrorKind::kInvalidInput);
  };
  EXPECT_EQ(message(R"({"nodes": {"lstm_1": {"weights": {"bits": 20}}}})"),
            "q.json: nodes.lstm_1.weights.bits = 20, must be in 2..16");
  EXPECT_EQ(message(R"({"default": {"weights": {"granularity": "diagonal"}}})"),
            "q.json: default.weights.granularity must be one of tensor, row, column, channel");
  EXPECT_EQ(message(R"({"default": {"activations": {"bits": 12}}})"),
            "q.json: default.activations: activations wider than 8 bits must be symmetric "
            "(int16 storage)");
  EXPECT_EQ(message(R"({"defaults": {}})"),
            "q.json: unknown field defaults (the top level takes default, ops, nodes, guard)");
  EXPECT_NE(message("{not json").find("q.json: not a JSON object"), std::string::npos);
}

// ---- the model rewrite -----------------------------------------------------------------------------

std::unique_ptr<Model> one_lstm_model(int64_t hidden, int64_t input) {
  auto model = std::make_unique<Model>();
  model->opsets[""] = 14;
  model->graph = std::make_unique<Graph>();
  Graph& g = *model->graph;
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  x_type.shape = Shape{Dim(3), Dim(1), Dim(input)};
  Value* x = g.add_input("x", x_type);
  Value* w = g.add_initializer("W", random_weight({1, 4 * hidden, input}, 1));
  Value* r = g.add_initializer("R", random_weight({1, 4 * hidden, hidden}, 2));
  Node* lstm = g.add_node("LSTM", "lstm", {x, w, r}, {"y"}, 14);
  Attribute h;
  h.kind = Attribute::Kind::kInt;
  h.i = hidden;
  lstm->set_attr("hidden_size", h);
  g.add_output(lstm->output(0));
  infer_graph(g);
  return model;
}

TEST(QuantizeModel, RecurrentWeightsBecomeDequantizeLinearAndTheNodeIsAnnotated) {
  auto model = one_lstm_model(8, 4);
  const Report report = quantize_model(*model, Config{}, {});
  ASSERT_EQ(report.nodes.size(), 1u);
  EXPECT_TRUE(report.nodes[0].quantized);
  EXPECT_EQ(report.nodes[0].weight_bytes_before, 4 * (32 * 4 + 32 * 8));
  EXPECT_EQ(report.nodes[0].weight_bytes_after, 32 * 4 + 32 * 4 + 32 * 8 + 32 * 4);
  const Node* lstm = nullptr;
  int dequantize = 0;
  for (const auto& node : model->graph->nodes()) {
    if (node->op_type() == "DequantizeLinear") ++dequantize;
    if (node->op_type() == "LSTM") lstm = node.get();
  }
  EXPECT_EQ(dequantize, 2);
  ASSERT_TRUE(lstm);
  EXPECT_EQ(activation_quant(*lstm).to_string(), "dynamic asymmetric bits=8");
  EXPECT_EQ(lstm->input(1)->producer()->op_type(), "DequantizeLinear");
}

TEST(QuantizeModel, ReportGivesTheIntegerProductsWidths) {
  auto model = one_lstm_model(8, 4);
  Config config;
  config.default_scheme.weights.bits = 16;
  config.default_scheme.activations.bits = 16;
  config.default_scheme.activations.symmetric = true;
  config.default_scheme.activations.accumulation_bits = 32;
  const Report report = quantize_model(*model, config, {});
  ASSERT_EQ(report.nodes.size(), 1u);
  // W.x over the input size 4: 32767 * 32768 * 4 ~ 4.3e9 needs 33 bits; R.h over the hidden
  // size 8: 34. Both above the declared 32, so the kernels sum lanes of 2 products in int64.
  EXPECT_EQ(report.nodes[0].arithmetic,
            "W.x s16 x s16 -> s32 in chunks of 2 -> s64 (sums need 33 bits), above "
            "accumulation_bits 32; R.h s16 x s16 -> s32 in chunks of 2 -> s64 (sums need 34 "
            "bits), above accumulation_bits 32");
  EXPECT_NE(report.to_markdown().find(report.nodes[0].arithmetic), std::string::npos);
}

TEST(QuantizeModel, StaticActivationsWithoutCalibrationIsAnError) {
  auto model = one_lstm_model(8, 4);
  const Config config = parse_config(R"({"default": {"activations": {"dynamic": false}}})");
  EXPECT_EQ(error_message([&] { quantize_model(*model, config, {}); }, ErrorKind::kInvalidInput),
            "LSTM 'lstm' (opset 14): static activation quantization needs calibration data "
            "(rnnc quantize --calibrate)");
}

TEST(QuantizeModel, StaticActivationsCalibrateFromTheFloatRun) {
  auto model = one_lstm_model(8, 4);
  const Config config = parse_config(R"({"default": {"activations": {"dynamic": false}}})");
  Tensor x(DType::kFloat32, {3, 1, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.375f * static_cast<float>(i % 5) - 0.5f;
  quantize_model(*model, config, {{{"x", x}}});
  const Node* lstm = nullptr;
  for (const auto& node : model->graph->nodes()) {
    if (node->op_type() == "LSTM") lstm = node.get();
  }
  const ActivationQuant quant = activation_quant(*lstm);
  EXPECT_FALSE(quant.dynamic);
  EXPECT_FLOAT_EQ(quant.input_scale, 1.5f / 255);  // x in [-0.5, 1]
  EXPECT_EQ(quant.input_zero_point, 85);
  EXPECT_GT(quant.state_scale, 0.0f);
}

TEST(QuantizeModel, FloatNodesStayAndSayWhy) {
  auto model = one_lstm_model(8, 4);
  const Config config = parse_config(R"({"nodes": {"lstm": {"float": true}}})");
  const Report report = quantize_model(*model, config, {});
  EXPECT_EQ(report.nodes[0].scheme, "float (config)");
  EXPECT_FALSE(report.nodes[0].quantized);
}

// ---- MatMul and Gemm: B becomes DequantizeLinear, A's rows are quantized (annotation) ----------

// x [3, 4] . B (MatMul B [4, 6]; Gemm with transB B [6, 4]) + C [6] for Gemm.
std::unique_ptr<Model> one_product_model(const std::string& op, bool trans_b = false,
                                         bool runtime_b = false) {
  auto model = std::make_unique<Model>();
  model->opsets[""] = 17;
  model->graph = std::make_unique<Graph>();
  Graph& g = *model->graph;
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  x_type.shape = Shape{Dim(3), Dim(4)};
  Value* x = g.add_input("x", x_type);
  const std::vector<int64_t> b_shape = trans_b ? std::vector<int64_t>{6, 4}
                                               : std::vector<int64_t>{4, 6};
  Value* b = nullptr;
  if (runtime_b) {
    TensorType b_type;
    b_type.dtype = DType::kFloat32;
    b_type.shape = Shape{Dim(b_shape[0]), Dim(b_shape[1])};
    b = g.add_input("B", b_type);
  } else {
    b = g.add_initializer("B", random_weight(b_shape, 3));
  }
  std::vector<Value*> inputs = {x, b};
  if (op == "Gemm") inputs.push_back(g.add_initializer("C", random_weight({6}, 4)));
  Node* product = g.add_node(op, "product", inputs, {"y"}, 17);
  if (trans_b) {
    Attribute attribute;
    attribute.kind = Attribute::Kind::kInt;
    attribute.i = 1;
    product->set_attr("transB", attribute);
  }
  g.add_output(product->output(0));
  infer_graph(g);
  return model;
}

const Node* find_op(const Model& model, const std::string& op) {
  for (const auto& node : model.graph->nodes()) {
    if (node->op_type() == op) return node.get();
  }
  return nullptr;
}

// The default per-row granularity names B [K, N]'s rows, which run along K; scales there cannot
// leave an integer dot product, so B gets them per output column and the report says so.
TEST(QuantizeModel, MatMulWeightsBecomeDequantizeLinearPerOutputColumn) {
  auto model = one_product_model("MatMul");
  const Report report = quantize_model(*model, Config{}, {});
  ASSERT_EQ(report.nodes.size(), 1u);
  EXPECT_TRUE(report.nodes[0].quantized);
  EXPECT_EQ(report.nodes[0].scheme,
            "weights symmetric 8-bit per channel (minmax), activations dynamic asymmetric 8-bit "
            "(B's rows run along K: per output channel)");
  EXPECT_EQ(report.nodes[0].weight_bytes_before, 4 * 24);
  EXPECT_EQ(report.nodes[0].weight_bytes_after, 24 + 4 * 6);
  const Node* product = find_op(*model, "MatMul");
  ASSERT_TRUE(product);
  const Node* dequantize = product->input(1)->producer();
  ASSERT_TRUE(dequantize);
  EXPECT_EQ(dequantize->op_type(), "DequantizeLinear");
  EXPECT_EQ(dequantize->attr_int("axis", -1), 1);
  EXPECT_EQ(dequantize->input(0)->constant()->dtype(), DType::kInt8);
  EXPECT_EQ(activation_quant(*product).to_string(), "dynamic asymmetric bits=8");
}

TEST(QuantizeModel, GemmTransBRowsAreOutputChannels) {
  auto model = one_product_model("Gemm", /*trans_b=*/true);
  const Report report = quantize_model(*model, Config{}, {});
  ASSERT_EQ(report.nodes.size(), 1u);
  EXPECT_EQ(report.nodes[0].scheme,
            "weights symmetric 8-bit per row (minmax), activations dynamic asymmetric 8-bit");
  const Node* product = find_op(*model, "Gemm");
  EXPECT_EQ(product->input(1)->producer()->attr_int("axis", -1), 0);
  EXPECT_FALSE(product->input(2)->producer());  // C stays float
  EXPECT_TRUE(has_activation_quant(*product));
}

TEST(QuantizeModel, ProductOverridesAndFloatAreRespected) {
  {
    auto model = one_product_model("MatMul");
    const Report report =
        quantize_model(*model, parse_config(R"({"ops": {"MatMul": {"float": true}}})"), {});
    EXPECT_EQ(report.nodes[0].scheme, "float (config)");
    EXPECT_FALSE(report.nodes[0].quantized);
    EXPECT_FALSE(find_op(*model, "DequantizeLinear"));
    EXPECT_FALSE(has_activation_quant(*find_op(*model, "MatMul")));
  }
  auto model = one_product_model("MatMul");
  const Report report = quantize_model(
      *model,
      parse_config(R"({"nodes": {"product": {"weights": {"granularity": "tensor", "bits": 4,
                                                          "symmetric": false},
                                             "activations": {"symmetric": true}}}})"),
      {});
  EXPECT_EQ(report.nodes[0].scheme,
            "weights asymmetric 4-bit per tensor (minmax), activations dynamic symmetric 8-bit");
  const Node* dequantize = find_op(*model, "DequantizeLinear");
  EXPECT_FALSE(dequantize->has_attr("axis"));
  EXPECT_EQ(dequantize->input(0)->constant()->dtype(), DType::kUInt8);
  EXPECT_EQ(activation_quant(*find_op(*model, "MatMul")).to_string(), "dynamic symmetric bits=8");
}

TEST(QuantizeModel, WideProductsSayTheyRunOnTheReferenceKernels) {
  auto model = one_product_model("MatMul");
  const Report report =
      quantize_model(*model, parse_config(R"({"default": {"weights": {"bits": 12}}})"), {});
  EXPECT_EQ(report.nodes[0].scheme,
            "weights symmetric 12-bit per channel (minmax), activations dynamic asymmetric 8-bit "
            "(B's rows run along K: per output channel) (wider than 8 bits: rnnc computes it on "
            "its reference kernels)");
}

TEST(QuantizeModel, ProductWithARunTimeBStaysFloatAndSaysWhy) {
  auto model = one_product_model("MatMul", false, /*runtime_b=*/true);
  const Report report = quantize_model(*model, Config{}, {});
  EXPECT_EQ(report.nodes[0].scheme, "float (B is not a 2-D float32 initializer)");
  EXPECT_FALSE(report.nodes[0].quantized);
}

TEST(QuantizeModel, ProductStaticActivationsCalibrateOnA) {
  auto model = one_product_model("MatMul");
  Tensor x(DType::kFloat32, {3, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.25f * static_cast<float>(i) - 1;
  quantize_model(*model, parse_config(R"({"default": {"activations": {"dynamic": false}}})"),
                 {{{"x", x}}});
  const ActivationQuant quant = activation_quant(*find_op(*model, "MatMul"));
  EXPECT_FALSE(quant.dynamic);
  EXPECT_FLOAT_EQ(quant.input_scale, 2.75f / 255);  // x in [-1, 1.75]
  EXPECT_EQ(quant.input_zero_point, 93);
  EXPECT_EQ(quant.state_scale, 0.0f);  // no state operand
}

// Silero's shape: an LSTM in each branch of an If on a graph input. The rewrite walks the main
// graph only, so both stay float, and the report says what inlines them.
std::unique_ptr<Model> lstm_in_if_model() {
  auto model = std::make_unique<Model>();
  model->opsets[""] = 14;
  model->graph = std::make_unique<Graph>();
  Graph& g = *model->graph;
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  x_type.shape = Shape{Dim(3), Dim(1), Dim(4)};
  Value* x = g.add_input("x", x_type);
  TensorType sr_type;
  sr_type.dtype = DType::kInt64;
  sr_type.shape = Shape{};
  Value* sr = g.add_input("sr", sr_type);
  Value* rate = g.add_initializer("k16000", Tensor::scalar<int64_t>(16000));
  Node* equal = g.add_node("Equal", "is_16k", {sr, rate}, {"cond"}, 14);
  Node* branch = g.add_node("If", "rate_branch", {equal->output(0)}, {"y"}, 14);
  for (const char* name : {"then_branch", "else_branch"}) {
    auto body = std::make_shared<Graph>(name, &g);
    const std::string prefix = name == std::string("then_branch") ? "then_" : "else_";
    Value* w = body->add_initializer(prefix + "W", random_weight({1, 32, 4}, 1));
    Value* r = body->add_initializer(prefix + "R", random_weight({1, 32, 8}, 2));
    Node* lstm = body->add_node("LSTM", prefix + "lstm", {x, w, r}, {prefix + "y"}, 14);
    Attribute hidden;
    hidden.kind = Attribute::Kind::kInt;
    hidden.i = 8;
    lstm->set_attr("hidden_size", hidden);
    body->add_output(lstm->output(0));
    Attribute attribute;
    attribute.kind = Attribute::Kind::kGraph;
    attribute.g = body;
    branch->set_attr(name, attribute);
  }
  g.add_output(branch->output(0));
  infer_graph(g);
  return model;
}

TEST(QuantizeModel, RecurrentNodesInsideAnIfAreReportedFloatWithTheInputsToFix) {
  auto model = lstm_in_if_model();
  const Report report = quantize_model(*model, Config{}, {});
  ASSERT_EQ(report.nodes.size(), 2u);
  EXPECT_EQ(report.nodes[0].node, "else_lstm");
  EXPECT_EQ(report.nodes[0].scheme,
            "float (inside If 'rate_branch' else_branch: fix the inputs its condition depends on "
            "(--fix sr=VALUE) so the branch is inlined)");
  EXPECT_EQ(report.nodes[1].node, "then_lstm");
  EXPECT_EQ(report.nodes[1].scheme,
            "float (inside If 'rate_branch' then_branch: fix the inputs its condition depends on "
            "(--fix sr=VALUE) so the branch is inlined)");
  for (const NodeReport& entry : report.nodes) EXPECT_FALSE(entry.quantized) << entry.node;
}

// What the report asks for works: with sr fixed, graph_opt inlines the branch taken and the
// quantizer rewrites its LSTM (CompiledModel::load and `rnnc quantize --fix` run this order).
TEST(QuantizeModel, FixingTheConditionInputInlinesTheBranchAndQuantizesIt) {
  auto model = lstm_in_if_model();
  OptimizeOptions options;
  options.context.fixed_inputs["sr"] = Tensor::scalar<int64_t>(16000);
  optimize(*model, options);
  const Report report = quantize_model(*model, Config{}, {});
  ASSERT_EQ(report.nodes.size(), 1u);
  EXPECT_EQ(report.nodes[0].node, "then_lstm");
  EXPECT_TRUE(report.nodes[0].quantized);
}

}  // namespace
}  // namespace rnnc::quant
