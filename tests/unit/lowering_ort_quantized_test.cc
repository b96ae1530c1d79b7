// ONNX Runtime's dynamically quantized products compiled, against the reference evaluator on the
// model as written.
// - MatMul (DynamicQuantizeLinear + MatMulInteger + Cast + Mul, graph_opt/fuse_integer_matmul.cc)
//   as one integer GEMM per product, bit for bit (the per_tensor scheme is DynamicQuantizeLinear's
//   arithmetic, and the GEMM's integer sum MatMulInteger's), for every form quantize_dynamic
//   writes.
// - Conv (DynamicQuantizeLinear + ConvInteger + Cast + Mul + Add, graph_opt/
//   conv_integer_to_float.cc) as a float direct convolution over the same integers: its sums bit
//   for bit, the scaled output within the elementwise lowering's tolerance.
// ONNX Runtime on the same models: tests/runtime/ort_contrib_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compiler/compile.h"
#include "ir/onnx_import.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "lowering/program.h"
#include "tests/support/compare.h"
#include "tests/support/ort_quantized_models.h"
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

// ---- ConvInteger ------------------------------------------------------------------------------

using ConvCase = testing::IntegerConvCase;

std::vector<int64_t> conv_x_shape(const ConvCase& c, int64_t batch, int64_t time) {
  std::vector<int64_t> shape = {batch, c.channels, time};
  if (c.kernel.size() == 2) shape.push_back(time + 1);
  return shape;
}

// The compiled program against the reference: the sums ("sums") bit for bit, the scaled output
// ("y") within the elementwise lowering's tolerance (its Mul and bias Add may contract into one
// rounding), for a few shapes and value ranges (all positive: zero point 0; all zero: scale 1).
void expect_conv_exact(const Program& program, const std::string& bytes, const ConvCase& c,
                       const std::string& what) {
  std::mt19937 rng(6);
  std::vector<Tensor> xs;
  for (auto [batch, time] : {std::pair<int64_t, int64_t>{1, 9}, {2, 16}, {3, 7}}) {
    xs.push_back(testing::random_tensor(conv_x_shape(c, batch, time), rng, -3.0f, 2.0f));
    xs.push_back(testing::random_tensor(conv_x_shape(c, batch, time), rng, 0.5f, 4.0f));
  }
  xs.emplace_back(DType::kFloat32, conv_x_shape(c, 2, 8));  // all zero
  // Values halfway between quantization levels (x / scale a tie, rounded to even), which a
  // multiply by the reciprocal of the scale can miss by an ulp either way.
  Tensor ties(DType::kFloat32, conv_x_shape(c, 2, 8));
  float* t = ties.data<float>();
  t[0] = -0.77f;  // the range, so the scale is DynamicQuantizeLinear's (hi - lo) / 255
  t[1] = 2.9f;
  const float scale = (t[1] - t[0]) / 255.0f;
  for (int64_t i = 2; i < ties.numel(); ++i) {
    t[i] = scale * (static_cast<float>(i % 250 - 52) + 0.5f);
  }
  xs.push_back(ties);
  for (const Tensor& x : xs) {
    const std::string shape = what + " x " + shape_text(x.shape());
    const std::vector<Tensor> compiled = program.run({{"x", x}});
    const std::vector<Tensor> reference = evaluate(*import(bytes)->graph, {{"x", x}});
    ASSERT_EQ(compiled.size(), 2u) << what;
    const auto y = testing::compare_tensors(compiled[0], reference[0], {1e-5, 1e-6});
    EXPECT_TRUE(y.ok) << shape << ", y: " << y.message;
    const auto sums = testing::compare_tensors(compiled[1], reference[1], {0, 0});
    EXPECT_TRUE(sums.ok) << shape << ", sums: " << sums.message;
  }
}

// The integer convolution compiled as a float Conv, its input's DynamicQuantizeLinear as float
// reductions and elementwise loops (graph_opt/expand_quantization.cc): no reference block
// left, and exact.
void expect_float_conv_and_exact(const ConvCase& c, const std::string& what) {
  const std::string bytes = testing::integer_conv_model(c);
  auto program = compile(bytes);
  EXPECT_EQ(blocks_of(*program, "reference"), 0u) << what << "\n" << program->describe();
  EXPECT_EQ(blocks_of(*program, "halide conv"), 1u) << what << "\n" << program->describe();
  expect_conv_exact(*program, bytes, c, what);
}

TEST(LowerIntegerConv, Int8PerChannelZeroPointsPaddedStrided) {
  ConvCase c;
  c.pads = {1, 2};
  c.strides = {2};
  expect_float_conv_and_exact(c, "int8 1-D");
}

TEST(LowerIntegerConv, Uint8FullRangeGroupedDilated2D) {
  ConvCase c;
  c.kernel = {3, 2};
  c.channels = 4;
  c.out_channels = 6;
  c.group = 2;
  c.dilations = {2, 1};
  c.pads = {1, 0, 1, 1};
  c.dtype = DType::kUInt8;
  c.per_channel = false;
  c.weight_bound = 127;
  expect_float_conv_and_exact(c, "uint8 2-D grouped");
}

TEST(LowerIntegerConv, WithoutZeroPoints) {
  ConvCase c;
  c.zero_points = false;
  c.weight_bound = 127;
  expect_float_conv_and_exact(c, "no zero points");
}

// Silero VAD's widest quantized Conv (129 channels, 3 taps) with full-range int8 weights: 387
// taps of up to 128 per output, a bound of 255 * 387 * 128 = 12.6 M, inside 2^24.
TEST(LowerIntegerConv, WideFullRangeWeightsStayExact) {
  ConvCase c;
  c.channels = 129;
  c.out_channels = 16;
  c.pads = {1, 1};
  c.weight_bound = 128;
  expect_float_conv_and_exact(c, "129 channels, full range");
}

// Over 2^24: 1200 taps of int8 weights in [0, 127], times 255 (x = 1 quantizes to 255 with zero
// point 0), sum to about 19.6 M, where float32 steps by 2. The ConvInteger stays on its reference
// kernel, and its sums are exact on that input too.
TEST(LowerIntegerConv, SumsBeyondFloatPrecisionStayInteger) {
  ConvCase c;
  c.channels = 400;
  c.out_channels = 4;
  c.weight_bound = 127;
  c.one_sided = true;
  const std::string bytes = testing::integer_conv_model(c);
  auto program = compile(bytes);
  EXPECT_EQ(blocks_of(*program, "reference ConvInteger"), 1u) << program->describe();
  EXPECT_EQ(blocks_of(*program, "halide conv"), 0u) << program->describe();
  expect_conv_exact(*program, bytes, c, "1200 taps");
  Tensor ones(DType::kFloat32, conv_x_shape(c, 1, 5));
  for (int64_t i = 0; i < ones.numel(); ++i) ones.data<float>()[i] = 1.0f;
  const std::vector<Tensor> compiled = program->run({{"x", ones}});
  const std::vector<Tensor> reference = evaluate(*import(bytes)->graph, {{"x", ones}});
  EXPECT_GT(reference[1].data<float>()[0], 16777216.0f);
  const auto sums = testing::compare_tensors(compiled[1], reference[1], {0, 0});
  EXPECT_TRUE(sums.ok) << "x all one, sums: " << sums.message;
}

// ---- DynamicQuantizeLinear written out ---------------------------------------------------------

// A DynamicQuantizeLinear read through Casts (graph_opt/expand_quantization.cc) compiled as
// float reductions and elementwise loops: its values, scale and zero point equal the operator's
// bit for bit, on random values, values halfway between levels, one sign only, all zero (scale 1)
// and a single element.
TEST(LowerDynamicQuantize, ExpandedEqualsTheOperator) {
  const std::string text = R"(model opset=13
graph main(%x: f32[rows, 5]) {
  %q: u8[rows, 5], %s: f32[], %z: u8[] = DynamicQuantizeLinear 'dql' (%x)
  %qf: f32[rows, 5] = Cast 'q_float' (%q) {to=1}
  %zf: f32[] = Cast 'z_float' (%z) {to=1}
  return %qf, %s, %zf
}
)";
  ProgramOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  auto program = compile_program(parse_model_text(text, "dql"), options);
  EXPECT_EQ(blocks_of(*program, "reference"), 0u) << program->describe();
  std::mt19937 rng(12);
  std::vector<std::pair<std::string, Tensor>> xs = {
      {"random", testing::random_tensor({7, 5}, rng, -3.0f, 2.0f)},
      {"positive", testing::random_tensor({4, 5}, rng, 0.25f, 9.0f)},
      {"negative", testing::random_tensor({4, 5}, rng, -9.0f, -0.25f)},
      {"zero", Tensor(DType::kFloat32, {3, 5})},
      {"one row", testing::random_tensor({1, 5}, rng, -1.0f, 1.0f)}};
  Tensor ties(DType::kFloat32, {60, 5});
  float* t = ties.data<float>();
  t[0] = -0.77f;
  t[1] = 2.9f;
  const float scale = (t[1] - t[0]) / 255.0f;
  for (int64_t i = 2; i < ties.numel(); ++i) {
    t[i] = scale * (static_cast<float>(i % 250 - 52) + 0.5f);
  }
  xs.emplace_back("ties", ties);
  for (const auto& [what, x] : xs) {
    const std::vector<Tensor> compiled = program->run({{"x", x}});
    const std::vector<Tensor> reference =
        evaluate(*parse_model_text(text, "dql")->graph, {{"x", x}});
    ASSERT_EQ(compiled.size(), 3u);
    for (size_t i = 0; i < compiled.size(); ++i) {
      const auto result = testing::compare_tensors(compiled[i], reference[i], {0, 0});
      EXPECT_TRUE(result.ok) << what << ", output " << i << ": " << result.message;
    }
  }
}

// ---- QDQ pairs ---------------------------------------------------------------------------------

// quantize_static's QDQ format (tests/support/ort_quantized_models.h): the pairs compiled as
// float arithmetic (graph_opt/expand_quantization.cc) fused with their neighbours, no reference
// block left. The input pair's output ("x_dq") equals the reference bit for bit. The output pair
// quantizes a float convolution whose sums round differently from the reference's (summation
// order), so an element near a rounding tie may land one level (y_scale) away: at most one level,
// and in few elements.
void expect_qdq_conv(const testing::QdqConvCase& c, const std::string& what) {
  const std::string bytes = testing::qdq_conv_model(c);
  auto program = compile(bytes);
  EXPECT_EQ(blocks_of(*program, "reference"), 0u) << what << "\n" << program->describe();
  std::mt19937 rng(7);
  for (int64_t time : {5, 33}) {
    const Tensor x = testing::random_tensor({2, c.channels, time}, rng, -2.0f, 2.0f);
    const std::vector<Tensor> compiled = program->run({{"x", x}});
    const std::vector<Tensor> reference = evaluate(*import(bytes)->graph, {{"x", x}});
    ASSERT_EQ(compiled.size(), 2u);
    const auto x_dq = testing::compare_tensors(compiled[1], reference[1], {0, 0});
    EXPECT_TRUE(x_dq.ok) << what << ", x_dq: " << x_dq.message;
    int64_t off = 0;
    for (int64_t i = 0; i < compiled[0].numel(); ++i) {
      const float d = std::abs(compiled[0].data<float>()[i] - reference[0].data<float>()[i]);
      EXPECT_LE(d, c.y_scale * 1.0001f) << what << ", y element " << i;
      off += d > 0;
    }
    EXPECT_LE(off * 50, compiled[0].numel()) << what << ": " << off << " elements a level away";
  }
}

TEST(LowerQdqPairs, Uint8ActivationsAroundAConv) { expect_qdq_conv({}, "uint8 pairs"); }

TEST(LowerQdqPairs, Int8ActivationsAroundAConv) {
  testing::QdqConvCase c;
  c.activations = DType::kInt8;
  c.channels = 32;
  expect_qdq_conv(c, "int8 pairs");
}

}  // namespace
}  // namespace rnnc
