#include "tests/support/log_mel_model.h"

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "ir/error.h"
#include "ir/op_schema.h"

namespace rnnc::testing {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int64_t kWindow = 64, kHop = 32, kBins = kWindow / 2 + 1, kHidden = 32;
constexpr double kRate = 16000;

Attribute ints(std::vector<int64_t> values) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(values);
  return a;
}

Attribute integer(int64_t value) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = value;
  return a;
}

Tensor filled(std::vector<int64_t> shape, const std::function<float(int64_t)>& value) {
  Tensor t(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = value(i);
  return t;
}

Tensor normal(std::vector<int64_t> shape, float stddev, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> distribution(0.0f, stddev);
  return filled(std::move(shape), [&](int64_t) { return distribution(random); });
}

double mel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double hz(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

// Triangular filters at mel-spaced centres, [bins, bands].
Tensor mel_filterbank() {
  std::vector<double> edges;  // in bins
  for (int64_t m = 0; m < kLogMelBands + 2; ++m) {
    const double at = mel(0) + (mel(kRate / 2) - mel(0)) * static_cast<double>(m) /
                                   static_cast<double>(kLogMelBands + 1);
    edges.push_back(hz(at) * kWindow / kRate);
  }
  return filled({kBins, kLogMelBands}, [&](int64_t i) {
    const double bin = static_cast<double>(i / kLogMelBands);
    const size_t band = static_cast<size_t>(i % kLogMelBands);
    const double lo = edges[band], centre = edges[band + 1], hi = edges[band + 2];
    if (bin <= lo || bin >= hi) return 0.0f;
    return static_cast<float>(bin < centre ? (bin - lo) / (centre - lo)
                                           : (hi - bin) / (hi - centre));
  });
}

// Conv weights [bins, 1, window]: the Hann-windowed cosine (real) or minus sine (imaginary) rows.
Tensor dft_rows(bool imaginary) {
  return filled({kBins, 1, kWindow}, [&](int64_t i) {
    const double k = static_cast<double>(i / kWindow), n = static_cast<double>(i % kWindow);
    const double hann = 0.5 - 0.5 * std::cos(2 * kPi * n / kWindow);
    const double angle = 2 * kPi * k * n / kWindow;
    return static_cast<float>(hann * (imaginary ? -std::sin(angle) : std::cos(angle)));
  });
}

}  // namespace

std::unique_ptr<Model> make_log_mel_gru_model() {
  auto model = std::make_unique<Model>();
  model->opsets[""] = 17;
  model->graph = std::make_unique<Graph>();
  Graph& g = *model->graph;
  TensorType audio_type;
  audio_type.dtype = DType::kFloat32;
  audio_type.shape = Shape{Dim(1), Dim(1), Dim(kLogMelSamples)};
  Value* audio = g.add_input("audio", audio_type);

  Value* spectra[2];
  for (int part = 0; part < 2; ++part) {
    const char* name = part ? "im" : "re";
    Node* conv = g.add_node("Conv", name, {audio, g.add_initializer(cat(name, "_rows"),
                                                                     dft_rows(part == 1))},
                            {cat(name, "_out")}, 17);
    conv->set_attr("strides", ints({kHop}));
    Node* square = g.add_node("Mul", cat(name, "_squared"), {conv->output(0), conv->output(0)},
                              {cat(name, "_power")}, 17);
    spectra[part] = square->output(0);
  }
  Node* power = g.add_node("Add", "power", {spectra[0], spectra[1]}, {"power_out"}, 17);
  Node* frames = g.add_node("Transpose", "frames", {power->output(0)}, {"frames_out"}, 17);
  frames->set_attr("perm", ints({0, 2, 1}));  // [1, frames, bins]
  Node* mel = g.add_node("MatMul", "mel",
                         {frames->output(0), g.add_initializer("filterbank", mel_filterbank())},
                         {"mel_out"}, 17);
  Node* floor = g.add_node("Add", "floor",
                           {mel->output(0), g.add_initializer("epsilon", filled({}, [](int64_t) {
                                                                return 1e-6f;
                                                              }))},
                           {"mel_floored"}, 17);
  Node* log = g.add_node("Log", "log", {floor->output(0)}, {"features"}, 17);

  Node* sequence = g.add_node("Transpose", "sequence", {log->output(0)}, {"sequence_out"}, 17);
  sequence->set_attr("perm", ints({1, 0, 2}));  // [frames, 1, bands]
  Node* gru = g.add_node(
      "GRU", "gru",
      {sequence->output(0), g.add_initializer("gru_W", normal({1, 3 * kHidden, kLogMelBands}, 0.08f, 1)),
       g.add_initializer("gru_R", normal({1, 3 * kHidden, kHidden}, 0.2f, 2)),
       g.add_initializer("gru_B", normal({1, 6 * kHidden}, 0.1f, 3))},
      {"gru_Y", "gru_Y_h"}, 17);
  gru->set_attr("hidden_size", integer(kHidden));
  Tensor shape(DType::kInt64, {2});
  shape.data<int64_t>()[0] = 1;
  shape.data<int64_t>()[1] = kHidden;
  Node* flat = g.add_node("Reshape", "last_state",
                          {gru->output(1), g.add_initializer("state_shape", shape)}, {"state"}, 17);
  Node* classifier = g.add_node(
      "Gemm", "classifier",
      {flat->output(0), g.add_initializer("classifier_B", normal({kHidden, kLogMelClasses}, 0.5f, 4)),
       g.add_initializer("classifier_C", normal({kLogMelClasses}, 0.1f, 5))},
      {"logits"}, 17);
  (void)classifier;
  g.add_output(log->output(0));
  g.add_output(classifier->output(0));
  infer_graph(g);
  return model;
}

std::vector<float> chirp_with_noise(float amplitude, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  std::vector<float> audio(static_cast<size_t>(kLogMelSamples));
  const double duration = static_cast<double>(kLogMelSamples) / kRate;
  for (size_t i = 0; i < audio.size(); ++i) {
    const double t = static_cast<double>(i) / kRate;
    const double phase = 2 * kPi * (200.0 * t + (6000.0 - 200.0) * t * t / (2 * duration));
    audio[i] = amplitude * static_cast<float>(0.8 * std::sin(phase) + noise(random));
  }
  return audio;
}

}  // namespace rnnc::testing
