// ONNX Runtime's dynamically quantized MatMul (DynamicQuantizeLinear + MatMulInteger + Cast +
// Mul, graph_opt/fuse_integer_matmul.cc) compiled as one integer GEMM per product: the compiled
// program against the reference evaluator on the model as written, bit for bit (the per_tensor
// scheme is DynamicQuantizeLinear's arithmetic, and the GEMM's integer sum MatMulInteger's), for
// every form quantize_dynamic writes. ONNX Runtime on the same models: tests/runtime/
// ort_contrib_test.cc.
#include <gtest/gtest.h>

#include <random>

#include "compiler/compile.h"
#include "ir/onnx_import.h"
#include "ir/reference/evaluator.h"
#include "lowering/program.h"
#include "tests/support/compare.h"
#include "tests/support/integer_matmul_model.h"
#include "tests/support/random.h"

namespace rnnc {
namespace {

using Case = testing::IntegerMatMulCase;

std::unique_ptr<Model> import(const std::string& bytes) {
  return import_onnx_bytes(bytes.data(), bytes.size());
}

std::unique_ptr<Program> compile(const std::string& bytes) {
  ProgramOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  return compile_program(import(bytes), options);
}

// Blocks whose kind starts with `prefix`.
size_t blocks_of(const Program& program, const std::string& prefix) {
  size_t count = 0;
  for (const auto& block : program.blocks()) count += block->kind().rfind(prefix, 0) == 0;
  return count;
}

std::vector<int64_t> x_shape(const Case& c, const std::vector<int64_t>& rows) {
  std::vector<int64_t> shape = rows;
  shape.push_back(c.k);
  return shape;
}

// The compiled program's outputs equal the reference evaluator's on the model as written.
void expect_bitwise_equal(const Program& program, const std::string& bytes,
                          const std::map<std::string, Tensor>& inputs, const std::string& what) {
  const std::vector<Tensor> compiled = program.run(inputs);
  const std::vector<Tensor> reference = evaluate(*import(bytes)->graph, inputs);
  ASSERT_EQ(compiled.size(), reference.size()) << what;
  for (size_t i = 0; i < compiled.size(); ++i) {
    const auto result = testing::compare_tensors(compiled[i], reference[i], {0, 0});
    EXPECT_TRUE(result.ok) << what << ", output " << i << ": " << result.message;
  }
}

// One int8 GEMM per product and nothing on reference kernels; equal to the reference for a few
// input shapes (rows of one, a ragged tail) and value ranges (all positive: zero point 0; all
// zero: scale 1).
void expect_fused_and_exact(const Case& c, const std::string& what) {
  const std::string bytes = testing::integer_matmul_model(c);
  auto program = compile(bytes);
  EXPECT_EQ(blocks_of(*program, "halide"), program->blocks().size()) << what << "\n"
                                                                     << program->describe();
  EXPECT_EQ(blocks_of(*program, "halide matmul"), static_cast<size_t>(c.products))
      << what << "\n"
      << program->describe();
  std::mt19937 rng(3);
  const std::vector<std::vector<int64_t>> row_shapes =
      c.rows.size() == 2 ? std::vector<std::vector<int64_t>>{{7, 3}, {1, 1}, {5, 2}}
                         : std::vector<std::vector<int64_t>>{{13}, {1}};
  for (const auto& rows : row_shapes) {
    for (auto [low, high] : {std::pair{-3.0f, 2.0f}, std::pair{0.5f, 4.0f}}) {
      expect_bitwise_equal(
          *program, bytes, {{"x", testing::random_tensor(x_shape(c, rows), rng, low, high)}},
          what + " x in [" + std::to_string(low) + ", " + std::to_string(high) + ")");
    }
  }
  Tensor zeros(DType::kFloat32, x_shape(c, row_shapes[0]));
  expect_bitwise_equal(*program, bytes, {{"x", zeros}}, what + " x all zero");
  // Values halfway between quantization levels: x / scale is a tie (rounded to even), which
  // x * (1 / scale) can miss by an ulp either way.
  Tensor ties(DType::kFloat32, x_shape(c, row_shapes[0]));
  float* t = ties.data<float>();
  t[0] = -0.77f;  // the range, so the scale is DynamicQuantizeLinear's (hi - lo) / 255
  t[1] = 2.9f;
  const float scale = (t[1] - t[0]) / 255.0f;
  for (int64_t i = 2; i < ties.numel(); ++i) {
    t[i] = scale * (static_cast<float>(i % 250 - 52) + 0.5f);
  }
  expect_bitwise_equal(*program, bytes, {{"x", ties}}, what + " x on ties");
}

TEST(LowerIntegerMatMul, Int8PerColumnWithZeroPointsAndBias) {
  expect_fused_and_exact(Case{}, "int8 per column");
}

TEST(LowerIntegerMatMul, Uint8PerTensorOperandsSwapped) {
  Case c;
  c.dtype = DType::kUInt8;
  c.per_column = false;
  c.scales_first = true;
  c.bias = false;
  c.rows = {"m"};
  c.k = 67;  // a ragged tail of k
  c.n = 33;
  expect_fused_and_exact(c, "uint8 per tensor");
}

TEST(LowerIntegerMatMul, FullRangeWeightsWithoutZeroPointInput) {
  Case c;
  c.reduce_range = false;
  c.no_zero_point = true;
  c.k = 300;
  c.n = 48;
  expect_fused_and_exact(c, "8-bit weights, no b_zero_point");
}

// A 2 MB weight (over half of L2 on both host kinds): column panels, A quantized once for all.
TEST(LowerIntegerMatMul, WeightsInColumnPanels) {
  Case c;
  c.k = 512;
  c.n = 4000;
  expect_fused_and_exact(c, "2 MB weight");
}

TEST(LowerIntegerMatMul, ProductsSharingOneDynamicQuantizeLinear) {
  Case c;
  c.products = 3;
  c.opset = 11;  // per-tensor weights need no DequantizeLinear axis
  c.per_column = false;
  expect_fused_and_exact(c, "three products at opset 11");
}

// ONNX Runtime's fusions of the chain (com.microsoft.DynamicQuantizeMatMul and
// MatMulIntegerToFloat, ir/contrib_ops.h) import as the chain and compile the same way; on the
// reference evaluator they equal the chain with the same weights bit for bit.
TEST(LowerIntegerMatMul, OnnxRuntimeFusedOperatorsRunAsTheChain) {
  for (Case::Form form : {Case::Form::kDynamicQuantizeMatMul, Case::Form::kMatMulIntegerToFloat}) {
    Case c;
    c.form = form;
    c.products = 2;
    const std::string what = form == Case::Form::kDynamicQuantizeMatMul ? "DynamicQuantizeMatMul"
                                                                        : "MatMulIntegerToFloat";
    expect_fused_and_exact(c, what);
    Case chain = c;
    chain.form = Case::Form::kChain;
    std::mt19937 rng(8);
    const std::map<std::string, Tensor> inputs{
        {"x", testing::random_tensor(x_shape(c, {6, 2}), rng, -1.0f, 2.0f)}};
    const std::vector<Tensor> fused =
        evaluate(*import(testing::integer_matmul_model(c))->graph, inputs);
    const std::vector<Tensor> expected =
        evaluate(*import(testing::integer_matmul_model(chain))->graph, inputs);
    ASSERT_EQ(fused.size(), expected.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      const auto result = testing::compare_tensors(fused[i], expected[i], {0, 0});
      EXPECT_TRUE(result.ok) << what << " output " << i << ": " << result.message;
    }
  }
}

// Per-column weights below opset 13 (DequantizeLinear has no axis there) keep the old form: the
// product on the reference kernels, the Cast, Mul and bias Add after it one compiled elementwise
// loop, which may contract the Mul and the Add into one rounding (the elementwise lowering's
// tolerance, tests/unit/lowering_dense_test.cc: rtol 1e-5, atol 1e-6).
TEST(LowerIntegerMatMul, PerColumnBelowOpset13KeepsTheProductOnReferenceKernels) {
  Case c;
  c.opset = 12;
  const std::string bytes = testing::integer_matmul_model(c);
  auto program = compile(bytes);
  EXPECT_EQ(blocks_of(*program, "halide matmul"), 0u) << program->describe();
  EXPECT_EQ(blocks_of(*program, "reference MatMulInteger"), 1u) << program->describe();
  std::mt19937 rng(4);
  const std::map<std::string, Tensor> inputs{
      {"x", testing::random_tensor(x_shape(c, {4, 2}), rng, -1.0f, 1.0f)}};
  const std::vector<Tensor> compiled = program->run(inputs);
  const std::vector<Tensor> reference = evaluate(*import(bytes)->graph, inputs);
  const auto result = testing::compare_tensors(compiled[0], reference[0], {1e-5, 1e-6});
  EXPECT_TRUE(result.ok) << result.message;
}

}  // namespace
}  // namespace rnnc
