// Every Silero VAD export a user may bring (models/fetch_silero.sh lists where each comes from),
// loaded as a service loads it: nothing fixed or specialized by hand, the sample rate passed at
// every run (the runtime compiles it in with the chunk's dims, runtime/shape_specializer.h).
// Each streams the same recorded speech (tests/data/make_speech.sh) chunk by chunk with its state
// carried, through the compiled model, the reference evaluator and, where the build links it, ONNX
// Runtime. Checked per export:
//   - the speech probability of every chunk within 1e-4 of the reference evaluator's and of ONNX
//     Runtime's (float32 summation order; measured at most 1.5e-5, and 5.6e-5 for v4), and every
//     carried state element within 5e-3. One chunk's states differ by under 3e-6 (v4, from zero
//     states); fed back through 331 chunks the differences grow: measured at most 2.7e-4 for the
//     v5 layouts and 1.2e-3 for v4's two layers, where ONNX Runtime drifts 1.2e-4 and 3.0e-4
//     from the reference evaluator (rnnc's activations and sums round differently from both);
//   - the model hears the speech and not the leading silence, so the comparison is not vacuous;
//   - the runs were shape-specialized (the dims the chunks bind, named or not in the file), no
//     reference block is left on the specialized program's path, and the LSTM runs as the
//     recurrent kernel (no GEMM blocks: the opset-18 export's cell equations are fused).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "rnnc/rnnc.h"
#include "tests/support/ort_quantized_models.h"
#include "tests/support/wav.h"

#ifdef RNNC_TEST_WITH_ORT
#include <onnxruntime_cxx_api.h>
#endif

namespace rnnc {
namespace {

constexpr int64_t kChunk = 512, kRate = 16000;
constexpr double kProbabilityTolerance = 1e-4;
constexpr double kStateTolerance = 5e-3;
constexpr int64_t kSilenceEnd = 14400;  // chunks ending before 0.9 s lie in the leading silence

struct StateSpec {
  std::string input, output;
  std::vector<int64_t> shape;
};

struct Variant {
  std::string file;
  int64_t context;  // samples of the previous chunk prepended (64 from v5 on, none for v4)
  std::vector<StateSpec> states;
  bool has_sr;
};

std::string name_of(const Variant& v) { return v.file.substr(0, v.file.find('.')); }
void PrintTo(const Variant& v, std::ostream* os) { *os << v.file; }

const std::vector<StateSpec> kV5State = {{"state", "stateN", {2, 1, 128}}};

const Variant kVariants[] = {
    {"silero_vad_16k_op15.onnx", 64, kV5State, true},
    {"silero_vad_v5.onnx", 64, kV5State, true},
    {"silero_vad_v6.onnx", 64, kV5State, true},
    {"silero_vad_half.onnx", 64, kV5State, false},
    {"silero_vad_op18_ifless.onnx", 64, kV5State, true},
    {"silero_vad_v4.onnx", 0, {{"h", "hn", {2, 1, 64}}, {"c", "cn", {2, 1, 64}}}, true},
};

// One engine's view of a chunk: the probability and every state output.
struct Step {
  float probability = 0;
  std::vector<std::vector<float>> states;
};

size_t elements(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// Streams `audio` through `run` (input samples and states in, one Step out), carrying the states.
template <typename Run>
std::vector<Step> stream(const Variant& variant, const std::vector<float>& audio, Run run) {
  std::vector<float> input(static_cast<size_t>(variant.context + kChunk), 0.0f);
  std::vector<std::vector<float>> states;
  for (const StateSpec& s : variant.states) states.emplace_back(elements(s.shape), 0.0f);
  std::vector<Step> steps;
  for (size_t start = 0; start < audio.size(); start += kChunk) {
    std::copy(input.end() - variant.context, input.end(), input.begin());
    const size_t n = std::min<size_t>(kChunk, audio.size() - start);
    std::fill(input.begin() + variant.context, input.end(), 0.0f);
    std::copy_n(audio.begin() + static_cast<std::ptrdiff_t>(start), n,
                input.begin() + variant.context);
    Step step = run(input, states);
    if (step.states.size() != states.size()) return steps;
    states = step.states;
    steps.push_back(std::move(step));
  }
  return steps;
}

Step rnnc_step(Session& session, const Variant& variant, std::vector<float>& input,
               std::vector<std::vector<float>>& states) {
  int64_t rate = kRate;
  std::vector<NamedTensor> inputs = {
      {"input", {ElementType::kFloat32, {1, static_cast<int64_t>(input.size())}, input.data()}}};
  for (size_t i = 0; i < variant.states.size(); ++i) {
    inputs.push_back({variant.states[i].input,
                      {ElementType::kFloat32, variant.states[i].shape, states[i].data()}});
  }
  if (variant.has_sr) inputs.push_back({"sr", {ElementType::kInt64, {}, &rate}});
  const std::vector<NamedTensor>& outputs = session.run(inputs);
  Step step;
  auto find = [&](const std::string& name) -> const TensorRef* {
    for (const NamedTensor& t : outputs) {
      if (t.name == name) return &t.tensor;
    }
    ADD_FAILURE() << "no output '" << name << "'";
    return nullptr;
  };
  const TensorRef* p = find("output");
  if (!p) return step;
  step.probability = *static_cast<const float*>(p->data);
  for (const StateSpec& s : variant.states) {
    const TensorRef* t = find(s.output);
    if (!t) return Step{};
    EXPECT_EQ(t->shape, s.shape) << s.output;
    const float* data = static_cast<const float*>(t->data);
    step.states.emplace_back(data, data + elements(s.shape));
  }
  return step;
}

#ifdef RNNC_TEST_WITH_ORT
std::vector<Step> ort_stream(const Variant& variant, const std::string& path,
                             const std::vector<float>& audio) {
  static Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "silero_variants_test");
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(1);
  options.SetInterOpNumThreads(1);
  Ort::Session session(env, path.c_str(), options);
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  return stream(variant, audio,
                [&](std::vector<float>& input, std::vector<std::vector<float>>& states) {
                  std::vector<const char*> input_names = {"input"}, output_names = {"output"};
                  std::vector<Ort::Value> inputs;
                  const std::vector<int64_t> input_shape = {1, static_cast<int64_t>(input.size())};
                  inputs.push_back(Ort::Value::CreateTensor<float>(
                      cpu, input.data(), input.size(), input_shape.data(), input_shape.size()));
                  for (size_t i = 0; i < variant.states.size(); ++i) {
                    const StateSpec& s = variant.states[i];
                    input_names.push_back(s.input.c_str());
                    output_names.push_back(s.output.c_str());
                    inputs.push_back(Ort::Value::CreateTensor<float>(
                        cpu, states[i].data(), states[i].size(), s.shape.data(), s.shape.size()));
                  }
                  int64_t rate = kRate;
                  if (variant.has_sr) {
                    input_names.push_back("sr");
                    inputs.push_back(Ort::Value::CreateTensor<int64_t>(cpu, &rate, 1, nullptr, 0));
                  }
                  std::vector<Ort::Value> outputs =
                      session.Run(Ort::RunOptions{nullptr}, input_names.data(), inputs.data(),
                                  inputs.size(), output_names.data(), output_names.size());
                  Step step;
                  step.probability = *outputs[0].GetTensorData<float>();
                  for (size_t i = 1; i < outputs.size(); ++i) {
                    const float* data = outputs[i].GetTensorData<float>();
                    step.states.emplace_back(
                        data, data + outputs[i].GetTensorTypeAndShapeInfo().GetElementCount());
                  }
                  return step;
                });
}
#endif

std::vector<float> read_speech(const std::string& name) {
  return testing::read_speech(RNNC_SPEECH_DIR, name, static_cast<int>(kRate));
}

// |a - b| over the probabilities and states of two streams.
void expect_close(const std::vector<Step>& a, const std::vector<Step>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double worst_p = 0, worst_state = 0;
  size_t worst_chunk = 0;
  for (size_t c = 0; c < a.size(); ++c) {
    const double d = std::abs(static_cast<double>(a[c].probability) - b[c].probability);
    if (d > worst_p) worst_p = d, worst_chunk = c;
    ASSERT_EQ(a[c].states.size(), b[c].states.size());
    for (size_t s = 0; s < a[c].states.size(); ++s) {
      ASSERT_EQ(a[c].states[s].size(), b[c].states[s].size());
      for (size_t i = 0; i < a[c].states[s].size(); ++i) {
        worst_state = std::max(
            worst_state, std::abs(static_cast<double>(a[c].states[s][i]) - b[c].states[s][i]));
      }
    }
  }
  std::printf("  %s: %zu chunks, |p| max %.3g (chunk %zu), |state| max %.3g\n", what, a.size(),
              worst_p, worst_chunk, worst_state);
  EXPECT_LE(worst_p, kProbabilityTolerance) << what << ", chunk " << worst_chunk;
  EXPECT_LE(worst_state, kStateTolerance) << what;
}

// A stream through the compiled model and what its session's profile says of the specialized
// program (the part after "shape specialization:").
struct Streamed {
  std::vector<Step> steps;
  std::string specialized_profile;
};

// Streams `audio` through the model at `path` (nothing fixed, from the tests' kernel cache),
// compiled and on the reference evaluator, and compares the two, and ONNX Runtime where linked.
Streamed stream_against_oracles(const Variant& variant, const std::string& path,
                                const std::vector<float>& audio, const std::string& title) {
  ModelOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  auto compiled = CompiledModel::load(path, options);
  options.reference = true;
  auto reference = CompiledModel::load(path, options);
  Session session = compiled->new_session();
  session.set_profiling(true);
  Streamed out;
  out.steps = stream(variant, audio, [&](auto& input, auto& states) {
    return rnnc_step(session, variant, input, states);
  });
  Session reference_session = reference->new_session();
  const std::vector<Step> theirs = stream(variant, audio, [&](auto& input, auto& states) {
    return rnnc_step(reference_session, variant, input, states);
  });
  std::printf("%s\n", title.c_str());
  expect_close(out.steps, theirs, "rnnc against the reference evaluator");
#ifdef RNNC_TEST_WITH_ORT
  expect_close(out.steps, ort_stream(variant, path, audio), "rnnc against ONNX Runtime");
#endif
  compiled->wait_for_specializations();
  const std::string profile = session.profile_report();
  const size_t special = profile.find("shape specialization:");
  EXPECT_NE(special, std::string::npos) << profile;
  if (special != std::string::npos) out.specialized_profile = profile.substr(special);
  return out;
}

class SileroVariant : public ::testing::TestWithParam<Variant> {
 protected:
  // The export compiled as a service loads it (nothing fixed), from the tests' kernel cache.
  static std::shared_ptr<const CompiledModel> load(const Variant& variant) {
    const std::string path = std::string(RNNC_MODELS_DIR) + "/" + variant.file;
    EXPECT_TRUE(std::filesystem::exists(path))
        << path << " is missing: run models/fetch_silero.sh " RNNC_MODELS_DIR;
    ModelOptions options;
    options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
    return CompiledModel::load(path, options);
  }
};

TEST_P(SileroVariant, StreamsSpecializedWithoutReferenceBlocksAndMatchesItsOracles) {
  const Variant& variant = GetParam();
  const std::string path = std::string(RNNC_MODELS_DIR) + "/" + variant.file;
  ASSERT_TRUE(std::filesystem::exists(path))
      << path << " is missing: run models/fetch_silero.sh " RNNC_MODELS_DIR;
  const Streamed streamed =
      stream_against_oracles(variant, path, read_speech("speech_en_us"), name_of(variant));
  const std::vector<Step>& ours = streamed.steps;

  // It hears the speech and not the silence before it.
  size_t speech = 0;
  for (size_t c = 0; c < ours.size(); ++c) {
    if (static_cast<int64_t>(c + 1) * kChunk <= kSilenceEnd) {
      EXPECT_LT(ours[c].probability, 0.5f) << "chunk " << c << " lies in the leading silence";
    }
    speech += ours[c].probability > 0.5f;
  }
  EXPECT_GE(speech, ours.size() / 4) << "too little speech heard";

  // Specialized for the chunks' shape, and nothing left to the reference kernels on its path.
  const std::string& profile = streamed.specialized_profile;
  EXPECT_EQ(profile.find("reference "), std::string::npos) << profile;
  // Every export's LSTM runs as the recurrent kernel (the opset-18 one's written-out cell too).
  EXPECT_NE(profile.find("halide lstm forward"), std::string::npos) << profile;
  EXPECT_EQ(profile.find("gemm"), std::string::npos) << profile;
}

// The chunks `stream` feeds for `count` chunks of audio from chunk `first` on (the context of the
// chunk before `first` included).
std::vector<std::vector<float>> chunks_of(const Variant& variant, const std::vector<float>& audio,
                                          size_t first, size_t count) {
  std::vector<std::vector<float>> chunks;
  std::vector<float> input(static_cast<size_t>(variant.context + kChunk), 0.0f);
  for (size_t c = first == 0 ? 0 : first - 1; c < first + count; ++c) {
    std::copy(input.end() - variant.context, input.end(), input.begin());
    const size_t start = c * kChunk;
    const size_t n = std::min<size_t>(kChunk, audio.size() - start);
    std::fill(input.begin() + variant.context, input.end(), 0.0f);
    std::copy_n(audio.begin() + static_cast<std::ptrdiff_t>(start), n,
                input.begin() + variant.context);
    if (c >= first) chunks.push_back(input);
  }
  return chunks;
}

// A service holds the state: sessions and the stream batcher carry it from zeros, the caller
// passing only the audio (and the rate). v5 and v6 name their state's batch dim apart from the
// audio's (state_dim1, input_dim0), so the zeros take the shape the model gives the state output
// for the first chunk (runtime/shape_specializer.h), and the batcher takes its batch axes from
// the shapes the model gives for that chunk. A session carrying the state equals the
// explicit-state run bit for bit (the same specialized program). The batcher's runs (4 streams per
// run) take the generic program at batch 4, whose sums round differently: within the tolerances
// above (measured over these 24 chunks, AMD EPYC: probability at most 1.2e-5, and 5.9e-5 for v4;
// states 3.4e-5, and 3.6e-4 for v4's two layers).
TEST_P(SileroVariant, CarriesItsStateFromZerosInSessionsAndTheBatcher) {
  const Variant& variant = GetParam();
  const std::vector<float> audio = read_speech("speech_en_us");
  auto compiled = load(variant);
  std::vector<std::pair<std::string, std::string>> pairs;
  BatcherOptions batching;  // batch axes from the model: its dim names, or the first chunk
  for (const StateSpec& s : variant.states) pairs.emplace_back(s.output, s.input);
  batching.state = pairs;
  batching.max_wait_us = 20000;
  int64_t rate = kRate;
  auto inputs_of = [&](std::vector<float>& chunk) {
    std::vector<NamedTensor> inputs = {
        {"input", {ElementType::kFloat32, {1, static_cast<int64_t>(chunk.size())}, chunk.data()}}};
    if (variant.has_sr) inputs.push_back({"sr", {ElementType::kInt64, {}, &rate}});
    return inputs;
  };
  constexpr size_t kStreams = 4, kChunks = 24;
  std::vector<std::vector<std::vector<float>>> chunks;  // per stream, from chunk 20 k on
  for (size_t k = 0; k < kStreams; ++k)
    chunks.push_back(chunks_of(variant, audio, 20 * k, kChunks));

  // Per stream: the explicit-state run, and a session that carries the state itself.
  std::vector<std::vector<Step>> expected(kStreams);
  for (size_t k = 0; k < kStreams; ++k) {
    Session given = compiled->new_session();
    Session carried = compiled->new_session(pairs);
    std::vector<std::vector<float>> states;
    for (const StateSpec& s : variant.states) states.emplace_back(elements(s.shape), 0.0f);
    for (size_t c = 0; c < kChunks; ++c) {
      Step step = rnnc_step(given, variant, chunks[k][c], states);
      ASSERT_EQ(step.states.size(), states.size());
      states = step.states;
      const std::vector<NamedTensor>& out = carried.run(inputs_of(chunks[k][c]));
      for (const NamedTensor& t : out) {
        if (t.name == "output") {
          EXPECT_EQ(*static_cast<const float*>(t.tensor.data), step.probability)
              << "stream " << k << ", chunk " << c;
        }
        for (size_t i = 0; i < variant.states.size(); ++i) {
          if (t.name != variant.states[i].output) continue;
          ASSERT_EQ(t.tensor.shape, variant.states[i].shape) << t.name;
          EXPECT_EQ(std::memcmp(t.tensor.data, step.states[i].data(), t.tensor.byte_size()), 0)
              << t.name << ", stream " << k << ", chunk " << c;
        }
      }
      expected[k].push_back(std::move(step));
    }
  }

  // The same streams through the batcher, their chunks submitted together.
  StreamBatcher batcher(compiled, batching);
  std::vector<BatchStream> streams;
  for (size_t k = 0; k < kStreams; ++k) streams.push_back(batcher.open_stream());
  bool first = true;
  double worst_p = 0, worst_state = 0;
  for (size_t c = 0; c < kChunks; ++c) {
    std::vector<std::future<std::vector<CompiledModel::Output>>> results;
    for (size_t k = 0; k < kStreams; ++k) {
      results.push_back(streams[k].submit(inputs_of(chunks[k][c])));
      if (!first) continue;
      // Named dims or not, every export batches its audio on dim 0 and its states on dim 1.
      const std::map<std::string, int> axes = batcher.batch_axes();
      EXPECT_EQ(axes.at("input"), 0);
      EXPECT_EQ(axes.at("output"), 0);
      for (const StateSpec& state : variant.states) {
        EXPECT_EQ(axes.at(state.input), 1) << state.input;
        EXPECT_EQ(axes.at(state.output), 1) << state.output;
      }
      if (variant.has_sr) {
        EXPECT_EQ(axes.at("sr"), -1);
      }
      first = false;
    }
    for (size_t k = 0; k < kStreams; ++k) {
      const std::vector<CompiledModel::Output> out = results[k].get();
      const Step& step = expected[k][c];
      for (const CompiledModel::Output& o : out) {
        const float* data = static_cast<const float*>(o.data());
        if (o.name == "output") {
          worst_p = std::max(worst_p, std::abs(double{data[0]} - step.probability));
        }
        for (size_t i = 0; i < variant.states.size(); ++i) {
          if (o.name != variant.states[i].output) continue;
          ASSERT_EQ(o.shape, variant.states[i].shape) << o.name;
          for (size_t e = 0; e < step.states[i].size(); ++e) {
            worst_state = std::max(worst_state, std::abs(double{data[e]} - step.states[i][e]));
          }
        }
      }
    }
  }
  std::printf("  %s through the batcher: |p| max %.3g, |state| max %.3g, batch sizes:",
              name_of(variant).c_str(), worst_p, worst_state);
  const BatcherStats stats = batcher.stats();
  for (size_t b = 1; b < stats.batch_sizes.size(); ++b) {
    if (stats.batch_sizes[b])
      std::printf(" %zux%llu", b, static_cast<unsigned long long>(stats.batch_sizes[b]));
  }
  std::printf("\n");
  EXPECT_LE(worst_p, kProbabilityTolerance);
  EXPECT_LE(worst_state, kStateTolerance);
}

INSTANTIATE_TEST_SUITE_P(Exports, SileroVariant, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return name_of(info.param); });

// The export as ONNX Runtime's quantize_dynamic writes it (its six Convs as DynamicQuantizeLinear
// + ConvInteger + Cast + Mul, tests/support/ort_quantized_models.h), streamed like the float
// exports above: the ConvIntegers run as float convolutions over the same integers and their
// inputs' quantization as float arithmetic (graph_opt/conv_integer_to_float.cc,
// expand_quantization.cc), so nothing is left to the reference kernels, and the stream
// matches the reference evaluator and ONNX Runtime on the same file.
TEST(SileroQuantizedByOnnxRuntime, StreamsWithoutReferenceBlocksAndMatchesItsOracles) {
  const Variant& variant = kVariants[0];
  const std::string float_path = std::string(RNNC_MODELS_DIR) + "/" + variant.file;
  std::ifstream file(float_path, std::ios::binary);
  ASSERT_TRUE(file) << float_path << " is missing: run models/fetch_silero.sh " RNNC_MODELS_DIR;
  const std::string quantized = testing::dynamically_quantized_convs(
      std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()));
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("rnnc_silero_convinteger_" + std::to_string(::getpid()) + ".onnx");
  std::ofstream(path, std::ios::binary) << quantized;
  const Streamed streamed =
      stream_against_oracles(variant, path.string(), read_speech("speech_en_us"),
                             "silero_vad_16k_op15, quantized by ONNX Runtime");
  std::filesystem::remove(path);
  const std::string& profile = streamed.specialized_profile;
  EXPECT_EQ(profile.find("reference "), std::string::npos) << profile;
  EXPECT_NE(profile.find("halide conv"), std::string::npos) << profile;
}

}  // namespace
}  // namespace rnnc
