// Integer MatMul/Gemm (lowering/lower_dense_quant.h): each test writes a float model, quantizes it
// with quant::quantize_model (B becomes DequantizeLinear of int8/uint8, the node is annotated),
// compiles it (graph_opt folds B back into a quantized constant, lowering packs its integers) and
// compares the compiled program with the reference evaluator on the same quantized model, which
// fake-quantizes each row of A (ir/reference/kernels_elementwise.cc). One behaviour per test.
//
// Tolerance: |compiled - reference| <= 3e-6 + 1e-6 * |reference|. Both compute the same
// integers (A's q per row by the same float arithmetic, B's exact integers). The compiled sum is
// exact in int32 and scaled once by scale_a * scale_b (a few float roundings of the result:
// the rtol); the reference sums, in double, K products of the dequantized factors, each factor
// rounded to float (2^-24 relative), so it strays from the exact value by a random walk of
// ~1.2e-7 * sqrt(K) * rms|a b| ~ 7e-7 for K = 40, |a| <= 3, |b| <= 1, the largest of a few
// hundred outputs ~3x that (the atol). Measured: max 3.8e-6 absolute on results up to ~10,
// at most 0.18 of the bound. A wrong zero point, column sum or scale is off by about
// scale_a * scale_b * |colsum| ~ 0.02 * 0.008 * 400 = 0.06.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iterator>

#include "compiler/compile.h"
#include "graph_opt/pipeline.h"
#include "ir/error.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/op_schema.h"
#include "ir/quantization.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "lowering/halide_block.h"
#include "lowering/halide_cache.h"
#include "lowering/lower_group.h"
#include "lowering/program.h"
#include "quant/quantize_model.h"
#include "quant/weights.h"
#include "tests/support/compare.h"
#include "tests/support/disassembly.h"
#include "tests/support/random.h"

namespace rnnc {
namespace {

constexpr testing::Tolerance kSameIntegers = {1e-6, 3e-6};

std::string cache_dir() {
  return (std::filesystem::temp_directory_path() / "rnnc_lowering_dense_quant_test").string();
}

using testing::random_tensor;

// A float model (text), the graph inputs that become its weights, the run's inputs, and the
// quantization config.
struct Case {
  std::string text;
  std::map<std::string, Tensor> weights;
  std::map<std::string, Tensor> inputs;
  std::string config = "{}";
};

// The quantized model; static activations calibrate on the run's inputs.
std::unique_ptr<Model> quantized_model(const Case& c) {
  auto model = parse_model_text(c.text, "case");
  for (const auto& [name, tensor] : c.weights) {
    model->graph->convert_input_to_constant(model->graph->find_value(name), tensor);
  }
  infer_graph(*model->graph);
  const quant::Config config = quant::parse_config(c.config, "test config");
  std::vector<quant::Sample> samples = {c.inputs};
  const quant::Report report = quant::quantize_model(*model, config, samples);
  for (const quant::NodeReport& entry : report.nodes) {
    EXPECT_TRUE(entry.quantized) << entry.node << ": " << entry.scheme;
  }
  return model;
}

std::unique_ptr<Program> compiled(const Case& c, const std::string& target = "") {
  ProgramOptions options;
  options.cache_dir = cache_dir();
  options.target = target;
  options.keep_objects = true;
  return compile_program(quantized_model(c), options);
}

// Runs the case compiled and through the reference evaluator; returns the max abs difference.
double expect_matches_reference(const Case& c, const std::string& target = "") {
  auto reference_model = quantized_model(c);
  const Tensor expected = evaluate(*reference_model->graph, c.inputs)[0];
  auto program = compiled(c, target);
  const std::string plan = program->describe();
  EXPECT_NE(plan.find(" int8 [K="), std::string::npos) << plan;
  EXPECT_EQ(plan.find("reference"), std::string::npos) << plan;
  const Tensor actual = program->run(c.inputs)[0];
  const testing::Comparison comparison = testing::compare_tensors(actual, expected, kSameIntegers);
  EXPECT_TRUE(comparison.ok) << comparison.message;
  // The share of the tolerance used, and the largest relative error of results away from 0.
  double used = 0, relative = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double e = expected.data<float>()[i], d = std::abs(actual.data<float>()[i] - e);
    used = std::max(used, d / (kSameIntegers.atol + kSameIntegers.rtol * std::abs(e)));
    if (std::abs(e) > 1e-2) relative = std::max(relative, d / std::abs(e));
  }
  std::cout << "max |compiled - reference| = " << comparison.max_abs_diff
            << ", max relative = " << relative << ", tolerance used = " << used << "\n";
  return comparison.max_abs_diff;
}

// The quantized model optimized for lowering, its product node lowered alone: the lowering's
// error (which compile_model swallows, keeping the reference kernels).
std::string lowering_error(std::unique_ptr<Model> model) {
  OptimizeOptions options;
  options.for_lowering = true;
  optimize(*model, options);
  static HalideCache cache(cache_dir(), "");
  for (const auto& node : model->graph->nodes()) {
    if (node->op_type() != "MatMul" && node->op_type() != "Gemm") continue;
    try {
      lower_nodes({node.get()}, cache);
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::kUnsupported) << error.what();
      return error.what();
    }
    return "lowered";
  }
  return "no product";
}

Case matmul_bias_relu() {
  Case c;
  c.text = R"(model opset=17
graph main(%x: f32[seq, 40], %w: f32[40, 56], %bias: f32[56]) {
  %m = MatMul 'project' (%x, %w)
  %b = Add 'add_bias' (%m, %bias)
  %y = Relu 'relu' (%b)
  return %y
})";
  c.weights = {{"w", random_tensor({40, 56}, 1)}, {"bias", random_tensor({56}, 2)}};
  c.inputs = {{"x", random_tensor({9, 40}, 3, -2, 3)}};
  return c;
}

TEST(LowerQuantizedGemm, MatMulDynamicPerColumnWithBiasReluEpilogue) {
  expect_matches_reference(matmul_bias_relu());
}

TEST(LowerQuantizedGemm, EveryRowCountThroughTwoRegisterTiles) {
  Case c = matmul_bias_relu();
  for (int64_t rows = 1; rows <= 13; ++rows) {
    SCOPED_TRACE(rows);
    c.inputs = {{"x", random_tensor({rows, 40}, 4, -2, 3)}};
    expect_matches_reference(c);
  }
}

// A B of 1.2 MB int8 (over half of L2 on both host kinds) walks column panels, A's rows
// quantized once for all of them; the last panel partial.
TEST(LowerQuantizedGemm, WeightsInColumnPanels) {
  Case c;
  c.text = R"(model opset=17
graph main(%x: f32[seq, 200], %w: f32[200, 6000]) {
  %y = MatMul 'project' (%x, %w)
  return %y
})";
  c.weights = {{"w", random_tensor({200, 6000}, 6)}};
  for (int64_t rows : {1, 5, 17}) {
    SCOPED_TRACE(rows);
    c.inputs = {{"x", random_tensor({rows, 200}, 7)}};
    expect_matches_reference(c);
  }
}

// A [batch, seq, K] rows merge into one tiled dim; K = 37 pads to 40, N = 20 to the tile.
TEST(LowerQuantizedGemm, MatMul3dAWithOddKAndAsymmetricPerTensorWeights) {
  Case c;
  c.text = R"(model opset=17
graph main(%x: f32[2, seq, 37], %w: f32[37, 20]) {
  %y = MatMul 'project' (%x, %w)
  return %y
})";
  c.weights = {{"w", random_tensor({37, 20}, 5, -0.5f, 1.5f)}};
  c.inputs = {{"x", random_tensor({2, 7, 37}, 6, -1, 2)}};
  c.config = R"({"default": {"weights": {"symmetric": false, "granularity": "tensor"}}})";
  expect_matches_reference(c);
}

TEST(LowerQuantizedGemm, GemmTransATransBAlphaBetaAndC) {
  Case c;
  c.text = R"(model opset=17
graph main(%a: f32[30, 5], %w: f32[24, 30], %c: f32[24]) {
  %y = Gemm 'head' (%a, %w, %c) {transA=1, transB=1, alpha=0.5, beta=2.0}
  return %y
})";
  c.weights = {{"w", random_tensor({24, 30}, 7)}, {"c", random_tensor({24}, 8)}};
  c.inputs = {{"a", random_tensor({30, 5}, 9, -3, 1)}};
  c.config = R"({"default": {"weights": {"symmetric": false, "granularity": "channel"}}})";
  expect_matches_reference(c);
}

TEST(LowerQuantizedGemm, GemmWithARunTimeMatrixC) {
  Case c;
  c.text = R"(model opset=17
graph main(%a: f32[6, 33], %w: f32[33, 17], %c: f32[6, 17]) {
  %y = Gemm 'head' (%a, %w, %c) {beta=0.25}
  return %y
})";
  c.weights = {{"w", random_tensor({33, 17}, 10)}};
  c.inputs = {{"a", random_tensor({6, 33}, 11)}, {"c", random_tensor({6, 17}, 12)}};
  expect_matches_reference(c);
}

TEST(LowerQuantizedGemm, StaticActivationsFromCalibration) {
  Case c = matmul_bias_relu();
  c.config = R"({"default": {"activations": {"dynamic": false}}})";
  expect_matches_reference(c);
}

TEST(LowerQuantizedGemm, SymmetricDynamicActivations) {
  Case c = matmul_bias_relu();
  c.config = R"({"default": {"activations": {"symmetric": true}}})";
  expect_matches_reference(c);
}

TEST(LowerQuantizedGemm, FourBitStaticActivationsAndWeights) {
  Case c = matmul_bias_relu();
  c.config = R"({"default": {"weights": {"bits": 4, "granularity": "column"},
                             "activations": {"bits": 4, "dynamic": false}}})";
  expect_matches_reference(c);
}

TEST(LowerQuantizedGemm, Avx2TargetAgreesWithReference) {
  Case c = matmul_bias_relu();
  c.config = R"({"default": {"weights": {"symmetric": false}}})";
  expect_matches_reference(c, "avx2");
}

// rnnc quantize's output as a file: standard ONNX (DequantizeLinear weights; the annotation in
// the metadata), reloaded with the integer GEMM.
TEST(LowerQuantizedGemm, QuantizedModelRoundTripsThroughOnnx) {
  Case c = matmul_bias_relu();
  c.config = R"({"default": {"activations": {"dynamic": false}}})";
  auto model = quantized_model(c);
  auto annotation = [](const Model& m) {
    for (const auto& node : m.graph->nodes()) {
      if (node->op_type() == "MatMul") return activation_quant(*node).to_string();
    }
    return std::string("no MatMul");
  };
  const std::string bytes = export_onnx_bytes(*model);
  auto reloaded = import_onnx_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(annotation(*reloaded), annotation(*model));
  EXPECT_NE(annotation(*reloaded).find("static asymmetric bits=8 x="), std::string::npos);
  const Tensor expected = evaluate(*reloaded->graph, c.inputs)[0];
  ProgramOptions options;
  options.cache_dir = cache_dir();
  auto program = compile_program(std::move(reloaded), options);
  EXPECT_NE(program->describe().find(" int8 [K=40,N=56]"), std::string::npos) << program->describe();
  const testing::Comparison comparison =
      testing::compare_tensors(program->run(c.inputs)[0], expected, kSameIntegers);
  EXPECT_TRUE(comparison.ok) << comparison.message;
}

// The integer product stays close to float (the quantization error, not the kernel's).
TEST(LowerQuantizedGemm, StaysNearFloat) {
  const Case c = matmul_bias_relu();
  auto float_model = parse_model_text(c.text, "case");
  std::map<std::string, Tensor> all = c.inputs;
  all.insert(c.weights.begin(), c.weights.end());
  const Tensor expected = evaluate(*float_model->graph, all)[0];
  const Tensor actual = compiled(c)->run(c.inputs)[0];
  // |x| <= 3 over 256 levels (0.02 per step), |w| <= 1 over 254: K = 40 terms of error ~0.01.
  const testing::Comparison comparison = testing::compare_tensors(actual, expected, {0, 0.1});
  EXPECT_TRUE(comparison.ok) << comparison.message;
  EXPECT_GT(comparison.max_abs_diff, 1e-4);  // the integer path really ran
}

// Overflow mode: the GEMM's counts equal the same quantities computed here from the arithmetic
// of ir/quantization.h: A's values quantized, those clamped above qmax or below qmin, and the
// exact sums sum_k (qa - za) * qb beyond the declared accumulation width. Static coefficients
// calibrated on x and a run on 1.5x make clamps happen; 16-bit accumulation makes sums exceed it.
// The counting kernel computes what the plain one does (checked against the reference).
TEST(LowerQuantizedGemm, OverflowModeCountsClampsAndSumsBeyondTheDeclaredWidth) {
  Case c = matmul_bias_relu();
  c.config = R"({"default": {"activations": {"dynamic": false, "accumulation_bits": 16}}})";
  const Tensor& calibration = c.inputs.at("x");
  Tensor x(DType::kFloat32, calibration.shape());  // a copy: Tensors share their storage
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.5f * calibration.data<float>()[i];
  const std::map<std::string, Tensor> run_inputs = {{"x", x}};

  // The quantized model as lowering sees it: B folded back into a quantized constant.
  auto model = quantized_model(c);
  const Tensor expected = evaluate(*model->graph, run_inputs)[0];
  OptimizeOptions optimize_options;
  optimize_options.for_lowering = true;
  optimize(*model, optimize_options);
  const Node* matmul = nullptr;
  for (const auto& node : model->graph->nodes()) {
    if (node->op_type() == "MatMul") matmul = node.get();
  }
  ASSERT_TRUE(matmul);
  const ActivationQuant quant = activation_quant(*matmul);
  ASSERT_FALSE(quant.dynamic);
  ASSERT_EQ(quant.accumulation_bits, 16);
  const Tensor& w = *matmul->input(1)->constant();  // [K, N], dequantized
  const QuantParams& w_params = *matmul->input(1)->type.quant;
  const int64_t rows = x.dim(0), k_size = w.dim(0), n_size = w.dim(1);
  const RowQuant row_quant = static_row_quant(quant.input_scale, quant.input_zero_point);
  const int64_t limit = (int64_t{1} << (quant.accumulation_bits - 1)) - 1;
  int64_t values = 0, above = 0, below = 0, sums_beyond = 0;
  for (int64_t m = 0; m < rows; ++m) {
    std::vector<int64_t> q(static_cast<size_t>(k_size));
    for (int64_t k = 0; k < k_size; ++k) {
      const float value = x.data<float>()[m * k_size + k];
      const float raw =
          std::nearbyint(value * row_quant.inv_scale) + static_cast<float>(row_quant.zero_point);
      values += 1;
      above += raw > static_cast<float>(quant.qmax());
      below += raw < static_cast<float>(quant.qmin());
      q[static_cast<size_t>(k)] = quantize_value(value, row_quant, quant) - row_quant.zero_point;
    }
    for (int64_t n = 0; n < n_size; ++n) {
      const float scale = w_params.scales.size() == 1 ? w_params.scales[0]
                                                      : w_params.scales.at(static_cast<size_t>(n));
      int64_t sum = 0;
      for (int64_t k = 0; k < k_size; ++k) {
        sum += q[static_cast<size_t>(k)] * std::lround(w.data<float>()[k * n_size + n] / scale);
      }
      sums_beyond += sum > limit || sum < -limit - 1;
    }
  }

  ProgramOptions options;
  options.cache_dir = cache_dir();
  options.count_overflow = true;
  auto program = compile_program(quantized_model(c), options);
  EXPECT_NE(program->describe().find(" int8 [K="), std::string::npos) << program->describe();
  const testing::Comparison comparison =
      testing::compare_tensors(program->run(run_inputs)[0], expected, kSameIntegers);
  EXPECT_TRUE(comparison.ok) << comparison.message;
  const std::vector<OverflowCounts> counts = program->overflow_counts();
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].node, matmul->describe());
  EXPECT_EQ(counts[0].values, values);
  EXPECT_EQ(counts[0].above, above);
  EXPECT_EQ(counts[0].below, below);
  EXPECT_EQ(counts[0].sums_beyond, sums_beyond);
  EXPECT_EQ(counts[0].accumulation_bits, 16);
  // Not vacuous: each kind happened, and not everywhere.
  EXPECT_GT(above, 0);
  EXPECT_GT(below, 0);
  EXPECT_GT(sums_beyond, 0);
  EXPECT_LT(above + below, values / 2);
  EXPECT_LT(sums_beyond, rows * n_size);
  std::printf("[ overflow ] %ld values, %ld above, %ld below, %ld of %ld sums beyond 16 bits\n",
              static_cast<long>(values), static_cast<long>(above), static_cast<long>(below),
              static_cast<long>(sums_beyond), static_cast<long>(rows * n_size));
  // A second run adds to the counts; a program compiled without overflow mode reports nothing.
  program->run(run_inputs);
  EXPECT_EQ(program->overflow_counts()[0].values, 2 * values);
  EXPECT_TRUE(compiled(c)->overflow_counts().empty());
}

// The host target (AVX-512 with VNNI here) must really use the dot-product instruction.
TEST(LowerQuantizedGemm, HostGemmUsesVnniDotProducts) {
  const KernelTarget host = resolve_kernel_target("host");
  if (!host.halide.has_feature(Halide::Target::AVX512_SapphireRapids)) {
    GTEST_SKIP() << "host has no AVX512-VNNI (target " << host.halide.to_string() << ")";
  }
  auto program = compiled(matmul_bias_relu(), "host");
  const HalideBlock* block = nullptr;
  for (const auto& candidate : program->blocks()) {
    if (auto* halide = dynamic_cast<const HalideBlock*>(candidate.get())) block = halide;
  }
  ASSERT_TRUE(block);
  ASSERT_FALSE(block->pipeline_.object_path.empty());
  const std::string text = testing::disassemble(block->pipeline_.object_path);
  EXPECT_NE(text.find("vpdpbusd"), std::string::npos) << block->kind() << " has no vpdpbusd";
}

// ---- what stays on the reference kernels, and why ----------------------------------------------

TEST(LowerQuantizedGemm, WideActivationsAreUnsupported) {
  Case c = matmul_bias_relu();
  c.config = R"({"default": {"activations": {"bits": 12, "symmetric": true}}})";
  EXPECT_EQ(lowering_error(quantized_model(c)),
            "MatMul 'project' (opset 17): activations quantized to 12 bits; the integer GEMM "
            "takes up to 8 (u8 x s8 products)");
}

// int32 sums of u8 x s8 products are exact up to K = 65793; past it the GEMM is not lowered.
TEST(LowerQuantizedGemm, ReductionsBeyondExactInt32SumsAreUnsupported) {
  Case c;
  c.text = R"(model opset=17
graph main(%x: f32[2, 65800], %w: f32[65800, 3]) {
  %y = MatMul 'long' (%x, %w)
  return %y
})";
  c.weights = {{"w", random_tensor({65800, 3}, 1)}};
  c.inputs = {{"x", random_tensor({2, 65800}, 2)}};
  EXPECT_EQ(lowering_error(quantized_model(c)),
            "MatMul 'long' (opset 17): K = 65800 products of u8 x s8 can overflow the integer "
            "GEMM's int32 sums (exact up to K = 65793)");
}

TEST(LowerQuantizedGemm, WideWeightsAreUnsupported) {
  Case c = matmul_bias_relu();
  c.config = R"({"default": {"weights": {"bits": 12}}})";
  EXPECT_EQ(lowering_error(quantized_model(c)),
            "MatMul 'project' (opset 17): input 'B' is quantized to 12 bits; the integer GEMM "
            "takes weights of up to 8 (u8 x s8 products)");
}

TEST(LowerQuantizedGemm, FloatWeightIsUnsupported) {
  Case c = matmul_bias_relu();
  auto model = parse_model_text(c.text, "case");
  for (const auto& [name, tensor] : c.weights) {
    model->graph->convert_input_to_constant(model->graph->find_value(name), tensor);
  }
  for (const auto& node : model->graph->nodes()) {
    if (node->op_type() == "MatMul") set_activation_quant(*node, ActivationQuant{});
  }
  EXPECT_EQ(lowering_error(std::move(model)),
            "MatMul 'project' (opset 17): activations are quantized but input 'B' is a float "
            "weight (quantize it with rnnc quantize)");
}

// Scales per row of B [K, N] (along K) cannot be factored out of the dot product. quant/ never
// writes them for a product, so the DequantizeLinear is built here.
TEST(LowerQuantizedGemm, ScalesAlongTheReductionAxisAreUnsupported) {
  Case c = matmul_bias_relu();
  auto model = parse_model_text(c.text, "case");
  Graph& graph = *model->graph;
  quant::WeightScheme scheme;
  scheme.granularity = quant::Granularity::kRow;
  const quant::QuantizedWeight q =
      quant::quantize_weight(c.weights.at("w"), scheme, quant::matrix_weight_shape(false));
  ASSERT_EQ(q.axis, 0);
  graph.convert_input_to_constant(graph.find_value("w"), q.q);
  graph.convert_input_to_constant(graph.find_value("bias"), c.weights.at("bias"));
  Value* scale = graph.add_initializer("w_scale", q.scale);
  Node* dequantize = graph.add_node("DequantizeLinear", "w_dequantize",
                                    {graph.find_value("w"), scale}, {"w_dequantized"}, 17);
  Attribute axis;
  axis.kind = Attribute::Kind::kInt;
  axis.i = 0;
  dequantize->set_attr("axis", axis);
  for (const auto& node : graph.nodes()) {
    if (node->op_type() == "MatMul") {
      node->set_input(1, dequantize->output(0));
      set_activation_quant(*node, ActivationQuant{});
    }
  }
  graph.sort_topologically();
  infer_graph(graph);
  EXPECT_EQ(lowering_error(std::move(model)),
            "MatMul 'project' (opset 17): input 'B' has scales along axis 0, the reduction axis; "
            "integer products need per-tensor scales or scales along an output axis (keep this "
            "node's activations in float)");
}

}  // namespace
}  // namespace rnnc
