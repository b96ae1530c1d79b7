// Quantized MatMul and Gemm (ir/quantization.h): a node quant/ annotated with an activation
// quantization multiplies integers, A quantized one K-long row at a time. The reference kernels
// fake-quantize those rows; each test checks them against the arithmetic of docs/quant.md written
// out here independently, and that the annotation changes the result (so it cannot be ignored).
//
// Tolerance: rtol 1e-6, atol 1e-6. Both sides compute the same rounded integers q (the formula
// below is the documented one, float32 x * (1 / scale)); they differ only in summing
// K = 8..16 products of the dequantized values in double (here) or double-then-float32 (the
// kernel), ~1e-7. A wrong zero point or a row quantized with another row's scale is off by
// scale * |b| ~ 1e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "compiler/compile.h"
#include "ir/quantization.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "lowering/program.h"
#include "tests/support/compare.h"
#include "tests/support/random.h"

namespace rnnc {
namespace {

using testing::Tolerance;

constexpr Tolerance kSameIntegers = {1e-6, 1e-6};

using testing::random_tensor;

// docs/quant.md, dynamic asymmetric u8 of one row: [lo, hi] = [min(0, min x), max(0, max x)],
// scale = (hi - lo) / 255, zero point = clamp(round(-lo / scale), 0, 255),
// q = clamp(round(x * (1 / scale)) + zero point, 0, 255); the row becomes scale * (q - zero point).
std::vector<double> dynamic_u8_row(const std::vector<float>& x) {
  float lo = 0, hi = 0;
  for (float v : x) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  float scale = (hi - lo) / 255.0f;
  if (!(scale > 0)) scale = 1;
  const float zero_point = std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f);
  const float inverse = 1.0f / scale;
  std::vector<double> out;
  for (float v : x) {
    const float q = std::clamp(std::nearbyint(v * inverse) + zero_point, 0.0f, 255.0f);
    out.push_back(static_cast<double>(scale) * (q - zero_point));
  }
  return out;
}

// The same for static coefficients.
std::vector<double> static_row(const std::vector<float>& x, float scale, int zero_point, int bits) {
  std::vector<double> out;
  const float inverse = 1.0f / scale, qmax = static_cast<float>((1 << bits) - 1);
  for (float v : x) {
    const float q = std::clamp(std::nearbyint(v * inverse) + zero_point, 0.0f, qmax);
    out.push_back(static_cast<double>(scale) * (q - zero_point));
  }
  return out;
}

Node& only_node(Model& model) {
  EXPECT_EQ(model.graph->nodes().size(), 1u);
  return *model.graph->nodes().front();
}

void expect_close(const Tensor& actual, const Tensor& expected, Tolerance tolerance) {
  const testing::Comparison comparison = testing::compare_tensors(actual, expected, tolerance);
  EXPECT_TRUE(comparison.ok) << comparison.message;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return testing::compare_tensors(a, b, {0, 0}).max_abs_diff;
}

TEST(QuantizedProduct, MatMulReferenceQuantizesEachRowOfADynamically) {
  auto model = parse_model_text(R"(model opset=17
graph main(%a: f32[2, 3, 16], %b: f32[16, 5]) {
  %y = MatMul 'project' (%a, %b)
  return %y
})",
                                "matmul");
  const Tensor a = random_tensor({2, 3, 16}, 1, -2, 3), b = random_tensor({16, 5}, 2);
  const Tensor float_result = evaluate(*model->graph, {{"a", a}, {"b", b}})[0];
  set_activation_quant(only_node(*model), ActivationQuant{});  // dynamic u8, asymmetric
  const Tensor quantized = evaluate(*model->graph, {{"a", a}, {"b", b}})[0];

  Tensor expected(DType::kFloat32, {2, 3, 5});
  for (int64_t row = 0; row < 6; ++row) {
    const std::vector<double> a_row =
        dynamic_u8_row(std::vector<float>(a.data<float>() + row * 16, a.data<float>() + row * 16 + 16));
    for (int64_t j = 0; j < 5; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < 16; ++k) sum += a_row[k] * b.data<float>()[k * 5 + j];
      expected.data<float>()[row * 5 + j] = static_cast<float>(sum);
    }
  }
  expect_close(quantized, expected, kSameIntegers);
  EXPECT_GT(max_abs_diff(quantized, float_result), 1e-4);  // the rounding is visible
}

TEST(QuantizedProduct, GemmWithTransAQuantizesColumnsOfAWithStaticCoefficients) {
  auto model = parse_model_text(R"(model opset=17
graph main(%a: f32[8, 3], %b: f32[4, 8], %c: f32[4]) {
  %y = Gemm 'head' (%a, %b, %c) {transA=1, transB=1, alpha=0.5, beta=2.0}
  return %y
})",
                                "gemm");
  const Tensor a = random_tensor({8, 3}, 3), b = random_tensor({4, 8}, 4), c = random_tensor({4}, 5);
  ActivationQuant quant;
  quant.dynamic = false;
  quant.bits = 6;
  quant.input_scale = 0.03f;
  quant.input_zero_point = 31;
  set_activation_quant(only_node(*model), quant);
  const Tensor quantized = evaluate(*model->graph, {{"a", a}, {"b", b}, {"c", c}})[0];

  Tensor expected(DType::kFloat32, {3, 4});
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<float> column;
    for (int64_t k = 0; k < 8; ++k) column.push_back(a.data<float>()[k * 3 + i]);
    const std::vector<double> a_row = static_row(column, 0.03f, 31, 6);
    for (int64_t j = 0; j < 4; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < 8; ++k) sum += a_row[k] * b.data<float>()[j * 8 + k];
      expected.data<float>()[i * 4 + j] = static_cast<float>(0.5 * sum + 2.0 * c.data<float>()[j]);
    }
  }
  expect_close(quantized, expected, kSameIntegers);
}

TEST(QuantizedProduct, NonFloatOperandIsAnInvalidModel) {
  auto model = parse_model_text(R"(model opset=17
graph main(%a: i32[2, 4], %b: i32[4, 2]) {
  %y = MatMul 'project' (%a, %b)
  return %y
})",
                                "matmul_int");
  set_activation_quant(only_node(*model), ActivationQuant{});
  Tensor a(DType::kInt32, {2, 4}), b(DType::kInt32, {4, 2});
  try {
    evaluate(*model->graph, {{"a", a}, {"b", b}});
    FAIL() << "an int32 MatMul with an activation quantization ran";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidModel) << error.what();
    EXPECT_NE(std::string(error.what()).find("activation quantization needs float32 A, not int32"),
              std::string::npos)
        << error.what();
  }
}

// The float GEMM kernel must not run an annotated product, and the integer GEMM needs B's
// quantization parameters (lowering_dense_quant_test.cc): with a plain float B the block stays on
// the reference kernels, and the compiled program computes exactly what the evaluator does.
TEST(QuantizedProduct, CompiledProgramKeepsAnnotatedMatMulOnTheReferenceKernels) {
  const std::string text = R"(model opset=17
graph main(%x: f32[seq, 12], %w: f32[12, 7], %bias: f32[7]) {
  %m = MatMul 'project' (%x, %w)
  %y = Add 'add_bias' (%m, %bias)
  return %y
})";
  const Tensor x = random_tensor({9, 12}, 6), w = random_tensor({12, 7}, 7),
               bias = random_tensor({7}, 8);
  auto annotate = [](Model& model) {
    for (const auto& node : model.graph->nodes()) {
      if (node->op_type() == "MatMul") set_activation_quant(*node, ActivationQuant{});
    }
  };
  auto reference_model = parse_model_text(text, "head");
  annotate(*reference_model);
  const Tensor expected = evaluate(*reference_model->graph, {{"x", x}, {"w", w}, {"bias", bias}})[0];

  auto model = parse_model_text(text, "head");
  annotate(*model);
  ProgramOptions options;
  options.cache_dir = (std::filesystem::temp_directory_path() / "rnnc_quant_product_test").string();
  PassContext specialization;
  specialization.fixed_inputs = {{"w", w}, {"bias", bias}};
  auto program = compile_program(std::move(model), options, specialization);
  const std::string plan = program->describe();
  EXPECT_NE(plan.find("reference MatMul"), std::string::npos) << plan;
  const Tensor actual = program->run({{"x", x}})[0];
  expect_close(actual, expected, {0, 0});
}

}  // namespace
}  // namespace rnnc
