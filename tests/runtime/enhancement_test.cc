// A streaming speech-enhancement network (models/make_enhancement.py: Conv encoder, grouped
// bidirectional GRUs along frequency, grouped GRUs along time, ConvTranspose decoder, stream
// caches written in place) through rnnc against ONNX Runtime, in both cache forms: ScatterND
// (enhance_scatter.onnx, opset 11) and Concat-then-Slice (enhance_concat.onnx).
//
//   - one run over kFrames frames: rnnc against ONNX Runtime (every output, caches included);
//   - the same frames streamed one at a time through an rnnc Session carrying both caches
//     (conv_cache_out -> conv_cache, gru_cache_out -> gru_cache) against that one run;
//   - ONNX Runtime frame by frame with the caches passed by hand against the rnnc Session;
//   - the two cache forms against each other (same weights);
//   - no ScatterND left after graph_opt (fold_cache_updates writes the caches as copies), and the
//     model specialized to one frame per run streaming like one run.
//
// Tolerance: 1e-5 absolute (kTolerance) for rnnc against ONNX Runtime. Both compute in float32
// with different summation orders (rnnc's Conv and GRU kernels are Halide schedules and its
// ConvTranspose the reference kernel, ONNX Runtime's are MLAS) and different sigmoid/tanh
// approximations, each within a few ulps. The outputs are at most about 4 in magnitude
// (y = x * mask with x ~ N(0, 1), the GRU states within (-1, 1)), where a float32 ulp is 4.8e-7:
// 1e-5 is about 20 ulps, room for the rounding differences of six layers and 40 carried steps
// but not for a wrong element, which typically moves an output by 1e-2 or more. Measured: at most
// 2.4e-7 on y, 1.2e-7 on gru_cache, 0 on conv_cache (a copy). Streaming through a Session equals
// one run bit for bit: each frame is computed by the same kernels whatever the number of frames
// per run (kStreamTolerance = 0).
#include <gtest/gtest.h>
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "rnnc/rnnc.h"

namespace rnnc {
namespace {

constexpr int64_t kChannels = 2, kBins = 16, kPast = 2, kGroups = 2, kEncodedBins = 8, kHidden = 8;
constexpr int64_t kFrames = 40;
constexpr double kTolerance = 1e-5;       // rnnc against ONNX Runtime
constexpr double kStreamTolerance = 0.0;  // rnnc streamed against rnnc in one run

const std::vector<int64_t> kConvCacheShape = {1, kChannels, kPast, kBins};
const std::vector<int64_t> kGruCacheShape = {kGroups, 1, kEncodedBins, kHidden};

std::string model_path(const std::string& form) {
  return std::string(RNNC_ENHANCEMENT_DIR) + "/enhance_" + form + ".onnx";
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<float> normal(int64_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = dist(rng);
  return values;
}

// What one run (or a stream of runs) produced: y [1, C, T, F] and the caches after it.
struct Result {
  std::vector<float> y, conv_cache, gru_cache;
};

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return worst;
}

// Prints the differences, so the measured values beside the tolerances can be checked.
void expect_near(const Result& a, const Result& b, double tolerance, const std::string& what) {
  const double y = max_difference(a.y, b.y);
  const double conv = max_difference(a.conv_cache, b.conv_cache);
  const double gru = max_difference(a.gru_cache, b.gru_cache);
  std::printf("%s: max |difference| y %.3g, conv_cache %.3g, gru_cache %.3g\n", what.c_str(), y,
              conv, gru);
  EXPECT_LE(y, tolerance) << what << ": y";
  EXPECT_LE(conv, tolerance) << what << ": conv_cache";
  EXPECT_LE(gru, tolerance) << what << ": gru_cache";
}

// Frame t of x [1, C, T, F] as [1, C, 1, F].
std::vector<float> frame(const std::vector<float>& x, int64_t frames, int64_t t) {
  std::vector<float> out;
  for (int64_t c = 0; c < kChannels; ++c) {
    const auto begin = x.begin() + (c * frames + t) * kBins;
    out.insert(out.end(), begin, begin + kBins);
  }
  return out;
}

// Appends frame y1 [1, C, 1, F] into y [1, C, T, F] at frame t.
void put_frame(std::vector<float>& y, int64_t frames, int64_t t, const float* y1) {
  for (int64_t c = 0; c < kChannels; ++c) {
    std::copy_n(y1 + c * kBins, kBins, y.begin() + (c * frames + t) * kBins);
  }
}

// ---- ONNX Runtime ----------------------------------------------------------------------------

Ort::Env& ort_env() {
  static Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "enhancement_test");
  return env;
}

class OrtModel {
 public:
  explicit OrtModel(const std::string& path) {
    Ort::SessionOptions options;
    options.SetIntraOpNumThreads(1);
    options.SetInterOpNumThreads(1);
    session_ = std::make_unique<Ort::Session>(ort_env(), path.c_str(), options);
  }

  Result run(std::vector<float> x, int64_t frames, std::vector<float> conv_cache,
             std::vector<float> gru_cache) {
    Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    const std::vector<int64_t> x_shape = {1, kChannels, frames, kBins};
    std::vector<Ort::Value> inputs;
    inputs.push_back(
        Ort::Value::CreateTensor<float>(cpu, x.data(), x.size(), x_shape.data(), x_shape.size()));
    inputs.push_back(Ort::Value::CreateTensor<float>(
        cpu, conv_cache.data(), conv_cache.size(), kConvCacheShape.data(), kConvCacheShape.size()));
    inputs.push_back(Ort::Value::CreateTensor<float>(cpu, gru_cache.data(), gru_cache.size(),
                                                     kGruCacheShape.data(), kGruCacheShape.size()));
    const char* input_names[] = {"x", "conv_cache", "gru_cache"};
    const char* output_names[] = {"y", "conv_cache_out", "gru_cache_out"};
    std::vector<Ort::Value> outputs =
        session_->Run(Ort::RunOptions{nullptr}, input_names, inputs.data(), 3, output_names, 3);
    Result result;
    std::vector<float>* targets[] = {&result.y, &result.conv_cache, &result.gru_cache};
    for (size_t i = 0; i < 3; ++i) {
      const size_t n = outputs[i].GetTensorTypeAndShapeInfo().GetElementCount();
      const float* data = outputs[i].GetTensorData<float>();
      targets[i]->assign(data, data + n);
    }
    return result;
  }

 private:
  std::unique_ptr<Ort::Session> session_;
};

// ---- rnnc ------------------------------------------------------------------------------------

const std::vector<std::pair<std::string, std::string>> kCaches = {{"conv_cache_out", "conv_cache"},
                                                                  {"gru_cache_out", "gru_cache"}};

Result rnnc_run(const CompiledModel& model, std::vector<float> x, int64_t frames,
                std::vector<float> conv_cache, std::vector<float> gru_cache) {
  const auto outputs =
      model.run({{"x", {ElementType::kFloat32, {1, kChannels, frames, kBins}, x.data()}},
                 {"conv_cache", {ElementType::kFloat32, kConvCacheShape, conv_cache.data()}},
                 {"gru_cache", {ElementType::kFloat32, kGruCacheShape, gru_cache.data()}}});
  Result result;
  for (const auto& output : outputs) {
    const float* data = output.as<float>();
    const std::vector<float> values(data, data + numel(output.shape));
    if (output.name == "y") result.y = values;
    if (output.name == "conv_cache_out") result.conv_cache = values;
    if (output.name == "gru_cache_out") result.gru_cache = values;
  }
  return result;
}

// The frames of x one at a time through a session carrying the caches (zeros at the start).
Result rnnc_stream(const CompiledModel& model, const std::vector<float>& x, int64_t frames) {
  Session session = model.new_session(kCaches);
  Result result;
  result.y.assign(x.size(), 0.0f);
  for (int64_t t = 0; t < frames; ++t) {
    std::vector<float> x1 = frame(x, frames, t);
    const auto& outputs =
        session.run({{"x", {ElementType::kFloat32, {1, kChannels, 1, kBins}, x1.data()}}});
    for (const NamedTensor& output : outputs) {
      const float* data = static_cast<const float*>(output.tensor.data);
      const std::vector<float> values(data, data + output.tensor.element_count());
      if (output.name == "y") put_frame(result.y, frames, t, data);
      if (output.name == "conv_cache_out") result.conv_cache = values;
      if (output.name == "gru_cache_out") result.gru_cache = values;
    }
  }
  return result;
}

// ONNX Runtime frame by frame, the caches passed from each run's outputs to the next's inputs.
Result ort_stream(OrtModel& model, const std::vector<float>& x, int64_t frames) {
  Result result;
  result.y.assign(x.size(), 0.0f);
  result.conv_cache.assign(static_cast<size_t>(numel(kConvCacheShape)), 0.0f);
  result.gru_cache.assign(static_cast<size_t>(numel(kGruCacheShape)), 0.0f);
  for (int64_t t = 0; t < frames; ++t) {
    Result step = model.run(frame(x, frames, t), 1, result.conv_cache, result.gru_cache);
    put_frame(result.y, frames, t, step.y.data());
    result.conv_cache = step.conv_cache;
    result.gru_cache = step.gru_cache;
  }
  return result;
}

class EnhancementTest : public ::testing::TestWithParam<std::string> {
 protected:
  static std::shared_ptr<const CompiledModel> load(const std::string& form) {
    ModelOptions options;
    options.cache_dir = RNNC_KERNEL_CACHE;
    return CompiledModel::load(model_path(form), options);
  }
};

TEST_P(EnhancementTest, OneRunMatchesOnnxRuntime) {
  const auto model = load(GetParam());
  OrtModel ort(model_path(GetParam()));
  const std::vector<float> x = normal(kChannels * kFrames * kBins, 1);
  // Zero caches (a stream's start) and caches of a stream already under way.
  const std::vector<float> zero_conv(static_cast<size_t>(numel(kConvCacheShape)), 0.0f);
  const std::vector<float> zero_gru(static_cast<size_t>(numel(kGruCacheShape)), 0.0f);
  expect_near(rnnc_run(*model, x, kFrames, zero_conv, zero_gru),
              ort.run(x, kFrames, zero_conv, zero_gru), kTolerance, "zero caches");
  const std::vector<float> conv = normal(numel(kConvCacheShape), 2);
  const std::vector<float> gru = normal(numel(kGruCacheShape), 3, 0.5f);
  expect_near(rnnc_run(*model, x, kFrames, conv, gru), ort.run(x, kFrames, conv, gru), kTolerance,
              "carried caches");
}

TEST_P(EnhancementTest, StreamedFrameByFrameEqualsOneRun) {
  const auto model = load(GetParam());
  const std::vector<float> x = normal(kChannels * kFrames * kBins, 4);
  const std::vector<float> zero_conv(static_cast<size_t>(numel(kConvCacheShape)), 0.0f);
  const std::vector<float> zero_gru(static_cast<size_t>(numel(kGruCacheShape)), 0.0f);
  expect_near(rnnc_stream(*model, x, kFrames), rnnc_run(*model, x, kFrames, zero_conv, zero_gru),
              kStreamTolerance, "streamed against one run");
}

TEST_P(EnhancementTest, SessionCarryMatchesOnnxRuntimeWithCachesPassedByHand) {
  const auto model = load(GetParam());
  OrtModel ort(model_path(GetParam()));
  const std::vector<float> x = normal(kChannels * kFrames * kBins, 5);
  expect_near(rnnc_stream(*model, x, kFrames), ort_stream(ort, x, kFrames), kTolerance,
              "rnnc session against ONNX Runtime by hand");
}

TEST_P(EnhancementTest, SpecializedToOneFrameStreamsLikeOneRun) {
  // A streaming service fixes `time` to 1: graph_opt then also folds the Concat/Slice form's
  // cache update (the Slice's range is known) into a copy of the kept frame and the new one.
  ModelOptions options;
  options.cache_dir = RNNC_KERNEL_CACHE;
  options.fixed_dims = {{"time", 1}};
  const auto specialized = CompiledModel::load(model_path(GetParam()), options);
  const auto model = load(GetParam());
  const std::vector<float> x = normal(kChannels * kFrames * kBins, 7);
  const std::vector<float> zero_conv(static_cast<size_t>(numel(kConvCacheShape)), 0.0f);
  const std::vector<float> zero_gru(static_cast<size_t>(numel(kGruCacheShape)), 0.0f);
  expect_near(rnnc_stream(*specialized, x, kFrames),
              rnnc_run(*model, x, kFrames, zero_conv, zero_gru), kStreamTolerance,
              "specialized to one frame, streamed, against one run");
}

TEST_P(EnhancementTest, CacheWritesRunAsCopies) {
  // graph_opt's fold_cache_updates writes every cache update as copies of its pieces: no
  // ScatterND is left to run, on a reference kernel or as a copy block.
  const auto model = load(GetParam());
  EXPECT_EQ(model->describe().find("reference ScatterND"), std::string::npos) << model->describe();
  EXPECT_EQ(model->describe().find("copy ScatterND"), std::string::npos) << model->describe();
}

INSTANTIATE_TEST_SUITE_P(CacheForms, EnhancementTest, ::testing::Values("scatter", "concat"));

TEST(Enhancement, CacheFormsAgree) {
  ModelOptions options;
  options.cache_dir = RNNC_KERNEL_CACHE;
  const auto scatter = CompiledModel::load(model_path("scatter"), options);
  const auto concat = CompiledModel::load(model_path("concat"), options);
  const std::vector<float> x = normal(kChannels * kFrames * kBins, 6);
  expect_near(rnnc_stream(*scatter, x, kFrames), rnnc_stream(*concat, x, kFrames), kStreamTolerance,
              "ScatterND caches against Concat/Slice caches");
}

}  // namespace
}  // namespace rnnc
