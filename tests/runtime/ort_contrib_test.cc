// Models that ONNX Runtime's quantizer writes with its com.microsoft.DynamicQuantizeLSTM, run by
// rnnc (imported as default-domain LSTMs on int8 weights, ir/contrib_ops.h) and by ONNX Runtime.
//
// The operator leaves how activations are quantized to the runtime, and the two quantize them
// differently (rnnc one scale per row), so the outputs are not equal. The yardstick is ONNX
// Runtime's own quantization error: each output's max |rnnc - ONNX Runtime| must stay within
// twice the max |ONNX Runtime DynamicQuantizeLSTM - ONNX Runtime float LSTM| on the same weights
// (the float model of a bench workload, or the dequantized weights of a generated one), and rnnc's
// own error against that float model within the same bound. A misread layout (W not transposed,
// gates or directions swapped, a zero point or scale on the wrong row) moves outputs by far more.
#include <gtest/gtest.h>
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/onnx_export.h"
#include "rnnc/rnnc.h"
#include "tests/support/dqlstm_model.h"
#include "tests/support/ort_quantized_models.h"
#include "tests/support/random.h"

namespace rnnc {
namespace {

using Outputs = std::vector<std::vector<float>>;
using Feed = std::map<std::string, Tensor>;

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

Outputs ort_run(const std::string& model, const Feed& feed, const std::vector<std::string>& names) {
  static Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "ort_contrib_test");
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(1);
  Ort::Session session(env, model.data(), model.size(), options);
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<const char*> input_names, output_names;
  std::vector<Ort::Value> inputs;
  for (const auto& [name, tensor] : feed) {
    input_names.push_back(name.c_str());
    inputs.push_back(Ort::Value::CreateTensor<float>(cpu, const_cast<float*>(tensor.data<float>()),
                                                     static_cast<size_t>(tensor.numel()),
                                                     tensor.shape().data(), tensor.shape().size()));
  }
  for (const std::string& name : names) output_names.push_back(name.c_str());
  std::vector<Ort::Value> results =
      session.Run(Ort::RunOptions{nullptr}, input_names.data(), inputs.data(), inputs.size(),
                  output_names.data(), output_names.size());
  Outputs out;
  for (Ort::Value& value : results) {
    const float* data = value.GetTensorData<float>();
    out.emplace_back(data, data + value.GetTensorTypeAndShapeInfo().GetElementCount());
  }
  return out;
}

Outputs rnnc_run(const std::string& model, const Feed& feed,
                 const std::vector<std::string>& names) {
  ModelOptions options;
  options.cache_dir = RNNC_KERNEL_CACHE;
  auto compiled = CompiledModel::load_bytes(model.data(), model.size(), options);
  std::vector<NamedTensor> inputs;
  for (const auto& [name, tensor] : feed) {
    inputs.push_back(
        {name, {ElementType::kFloat32, tensor.shape(), const_cast<float*>(tensor.data<float>())}});
  }
  std::vector<CompiledModel::Output> results = compiled->run(inputs);
  Outputs out;
  for (const std::string& name : names) {
    auto it = std::find_if(results.begin(), results.end(),
                           [&](const CompiledModel::Output& o) { return o.name == name; });
    if (it == results.end()) {
      ADD_FAILURE() << "rnnc gave no output '" << name << "'";
      out.emplace_back();
      continue;
    }
    int64_t count = 1;
    for (int64_t dim : it->shape) count *= dim;
    out.emplace_back(it->as<float>(), it->as<float>() + count);
  }
  return out;
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double largest = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    largest = std::max(largest, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return largest;
}

// rnnc and ONNX Runtime on the DynamicQuantizeLSTM model `contrib`, both against ONNX Runtime on
// the float model `float_model` with the same weights.
void expect_within_ort_quantization_error(const std::string& what, const std::string& contrib,
                                          const std::string& float_model, const Feed& feed,
                                          const std::vector<std::string>& names) {
  const Outputs ours = rnnc_run(contrib, feed, names);
  const Outputs ort = ort_run(contrib, feed, names);
  const Outputs reference = ort_run(float_model, feed, names);
  for (size_t i = 0; i < names.size(); ++i) {
    const double ort_error = max_difference(ort[i], reference[i]);
    const double our_error = max_difference(ours[i], reference[i]);
    const double between = max_difference(ours[i], ort[i]);
    std::printf("[ contrib  ] %s %s: |rnnc - ORT| %.3g; against float: rnnc %.3g, ORT %.3g\n",
                what.c_str(), names[i].c_str(), between, our_error, ort_error);
    EXPECT_GT(ort_error, 0) << what << " " << names[i] << ": ONNX Runtime quantized nothing";
    EXPECT_LE(between, 2 * ort_error) << what << " " << names[i];
    EXPECT_LE(our_error, 2 * ort_error) << what << " " << names[i];
  }
}

TEST(OrtContrib, BenchSmokeModelAgreesWithOnnxRuntime) {
  const std::string dir = RNNC_SOURCE_DIR "/models/smoke/";
  std::mt19937 rng(5);
  const Feed feed{{"x", testing::random_tensor({17, 2, 64}, rng, -1.5f, 1.5f)}};
  expect_within_ort_quantization_error(
      "smoke_lstm64_l2", read_file(dir + "smoke_lstm64_l2.dqlstm.onnx"),
      read_file(dir + "smoke_lstm64_l2.onnx"), feed, {"y", "h_n", "c_n"});
}

TEST(OrtContrib, GeneratedModelsAgreeWithOnnxRuntime) {
  struct Named {
    const char* what;
    testing::DqlstmCase c;
  };
  std::vector<Named> cases;
  {
    testing::DqlstmCase c;  // int8 per channel (symmetric: zero points 0), initial state
    c.input = 24;
    c.hidden = 32;
    c.initial_state = true;
    c.zero_points = false;
    cases.push_back({"forward int8 per channel", c});
    c.dirs = 2;  // uint8 per tensor with zero points, bidirectional
    c.direction = "bidirectional";
    c.dtype = DType::kUInt8;
    c.per_channel = false;
    c.zero_points = true;
    cases.push_back({"bidirectional uint8 per tensor", c});
  }
  for (const Named& named : cases) {
    const testing::DqlstmCase& c = named.c;
    testing::DqlstmModels models = testing::dqlstm_models(c);
    std::mt19937 rng(3);
    Feed feed{{"x", testing::random_tensor({12, 3, c.input}, rng, -2.0f, 2.0f)},
              {"h0", testing::random_tensor({c.dirs, 3, c.hidden}, rng, -0.5f, 0.5f)},
              {"c0", testing::random_tensor({c.dirs, 3, c.hidden}, rng, -0.5f, 0.5f)}};
    expect_within_ort_quantization_error(
        named.what, models.contrib, export_onnx_bytes(models.expected), feed, {"y", "y_h", "y_c"});
  }
}

// ONNX Runtime's dynamically quantized MatMul (DynamicQuantizeLinear + MatMulInteger + Cast +
// Mul, or its fused com.microsoft.DynamicQuantizeMatMul / MatMulIntegerToFloat), which rnnc runs
// as one int8 GEMM (graph_opt/fuse_integer_matmul.cc): the same arithmetic, so equal bit for bit.
TEST(OrtContrib, IntegerMatMulAgreesWithOnnxRuntime) {
  struct Named {
    const char* what;
    testing::IntegerMatMulCase c;
  };
  std::vector<Named> cases;
  {
    testing::IntegerMatMulCase c;  // int8 per column, zero points, bias, 7-bit weights
    c.k = 96;
    c.n = 40;
    cases.push_back({"int8 per column", c});
    c.dtype = DType::kUInt8;  // uint8 per tensor, full range, two products
    c.per_column = false;
    c.reduce_range = false;
    c.products = 2;
    c.scales_first = true;
    cases.push_back({"uint8 per tensor", c});
    c.scales_first = false;  // ONNX Runtime's fusions of the chain, run by its own kernels
    c.form = testing::IntegerMatMulCase::Form::kDynamicQuantizeMatMul;
    cases.push_back({"DynamicQuantizeMatMul", c});
    c.form = testing::IntegerMatMulCase::Form::kMatMulIntegerToFloat;
    c.dtype = DType::kInt8;
    c.per_column = true;
    cases.push_back({"MatMulIntegerToFloat", c});
  }
  for (const Named& named : cases) {
    const testing::IntegerMatMulCase& c = named.c;
    const std::string model = testing::integer_matmul_model(c);
    std::mt19937 rng(9);
    const Feed feed{{"x", testing::random_tensor({11, 3, c.k}, rng, -2.0f, 3.0f)}};
    std::vector<std::string> names;
    for (int p = 0; p < c.products; ++p) names.push_back("y" + std::to_string(p));
    const Outputs ours = rnnc_run(model, feed, names);
    const Outputs ort = ort_run(model, feed, names);
    for (size_t i = 0; i < names.size(); ++i) {
      const double between = max_difference(ours[i], ort[i]);
      std::printf("[ integer  ] %s %s: |rnnc - ORT| %.3g\n", named.what, names[i].c_str(), between);
      EXPECT_EQ(between, 0) << named.what << " " << names[i];
    }
  }
}

// ONNX Runtime's dynamically quantized Conv (DynamicQuantizeLinear + ConvInteger + Cast + Mul +
// bias Add), which rnnc runs as a float convolution over the same integers
// (graph_opt/conv_integer_to_float.cc): the integer sums equal bit for bit; the scaled output
// within the elementwise lowering's tolerance (rtol 1e-5, atol 1e-6), since rnnc may contract the
// Mul and the bias Add into one rounding where ONNX Runtime rounds twice.
TEST(OrtContrib, IntegerConvAgreesWithOnnxRuntime) {
  struct Named {
    const char* what;
    testing::IntegerConvCase c;
  };
  std::vector<Named> cases;
  {
    // ONNX Runtime's ConvInteger takes one weight zero point only.
    testing::IntegerConvCase c;  // int8, padded and strided
    c.per_channel = false;
    c.channels = 64;
    c.out_channels = 32;
    c.pads = {1, 1};
    c.strides = {2};
    cases.push_back({"int8 1-D", c});
    c.dtype = DType::kUInt8;  // uint8, full range
    c.weight_bound = 127;
    c.strides = {};
    cases.push_back({"uint8 1-D", c});
  }
  for (const Named& named : cases) {
    const testing::IntegerConvCase& c = named.c;
    const std::string model = testing::integer_conv_model(c);
    std::mt19937 rng(10);
    const Feed feed{{"x", testing::random_tensor({2, c.channels, 40}, rng, -2.0f, 3.0f)}};
    const std::vector<std::string> names = {"y", "sums"};
    const Outputs ours = rnnc_run(model, feed, names);
    const Outputs ort = ort_run(model, feed, names);
    const double sums = max_difference(ours[1], ort[1]);
    double y = 0, worst = 0;  // worst: |difference| over the tolerance's bound
    for (size_t i = 0; i < std::min(ours[0].size(), ort[0].size()); ++i) {
      const double difference = std::abs(static_cast<double>(ours[0][i]) - ort[0][i]);
      y = std::max(y, difference);
      worst = std::max(worst, difference / (1e-6 + 1e-5 * std::abs(ort[0][i])));
    }
    std::printf("[ integer  ] %s: sums |rnnc - ORT| %.3g, y |rnnc - ORT| %.3g\n", named.what, sums,
                y);
    EXPECT_EQ(sums, 0) << named.what;
    EXPECT_LE(worst, 1.0) << named.what << ": y differs by " << y;
  }
}

// quantize_static's QDQ format (QuantizeLinear + DequantizeLinear pairs around a Conv of
// dequantized weights), which rnnc computes as the pairs' float arithmetic around a float
// convolution (graph_opt/expand_quantization.cc) and ONNX Runtime as an integer convolution with
// its output requantized: the two round the output's quantization differently only for sums near
// a tie, so each output element is within one level (y_scale) of ONNX Runtime's, and few differ.
TEST(OrtContrib, QdqConvAgreesWithOnnxRuntime) {
  for (DType activations : {DType::kUInt8, DType::kInt8}) {
    testing::QdqConvCase c;
    c.activations = activations;
    c.channels = 32;
    const std::string model = testing::qdq_conv_model(c);
    std::mt19937 rng(11);
    const Feed feed{{"x", testing::random_tensor({2, c.channels, 50}, rng, -2.0f, 2.0f)}};
    const std::vector<std::string> names = {"y", "x_dq"};
    const Outputs ours = rnnc_run(model, feed, names);
    const Outputs ort = ort_run(model, feed, names);
    const char* what = activations == DType::kInt8 ? "int8" : "uint8";
    size_t off = 0;
    for (size_t i = 0; i < std::min(ours[0].size(), ort[0].size()); ++i) {
      off += ours[0][i] != ort[0][i];
    }
    const double y = max_difference(ours[0], ort[0]), x = max_difference(ours[1], ort[1]);
    std::printf("[ qdq      ] %s: x_dq |rnnc - ORT| %.3g, y |rnnc - ORT| %.3g (%zu of %zu)\n", what,
                x, y, off, ours[0].size());
    EXPECT_EQ(x, 0) << what;
    EXPECT_LE(y, c.y_scale * 1.0001) << what;
    EXPECT_LE(off * 50, ours[0].size()) << what;
  }
}

}  // namespace
}  // namespace rnnc
