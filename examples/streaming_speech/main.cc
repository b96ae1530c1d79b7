// streaming_speech: how a speech service feeds audio to rnnc chunk by chunk.
//
// Audio arrives in chunks (here 10 frames of 40 filterbank features, 100 ms). The service keeps
// one rnnc::Session per audio stream; each chunk is one Session::run, and the session carries the
// LSTM state to the next chunk, so no frame is ever run twice. At the end the program checks the
// promise that makes this correct: the streamed outputs, concatenated, equal one run over the
// whole utterance on a fresh session, bit for bit (exit code 1 if not).
//
//   streaming_speech [model.onnx] [--chunks N] [--frames F] [--threads T] [--cache-dir DIR]
//                    [--stateless]
//
// --stateless compiles the model without exposing its recurrent state, so every chunk starts
// from zeros, as a service that forgot the state would: the check then fails.
//
// The model takes features f32[seq, batch, F] (time-major) and gives f32[seq, batch, C]
// per-frame scores, as models/demo/lstm_demo.onnx (F = 40, C = 32 log-probabilities) does.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rnnc/rnnc.h"

// The build passes the demo model's path; built by hand, run it from the repository root.
#ifndef RNNC_DEMO_MODEL
#define RNNC_DEMO_MODEL "models/demo/lstm_demo.onnx"
#endif

namespace {

struct Arguments {
  std::string model = RNNC_DEMO_MODEL;
  int chunks = 8;
  int frames_per_chunk = 10;
  rnnc::ModelOptions options;
};

Arguments parse_arguments(int argc, char** argv) {
  Arguments arguments;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--chunks" && has_value) {
      arguments.chunks = std::atoi(argv[++i]);
    } else if (arg == "--frames" && has_value) {
      arguments.frames_per_chunk = std::atoi(argv[++i]);
    } else if (arg == "--threads" && has_value) {
      arguments.options.threads = std::atoi(argv[++i]);
    } else if (arg == "--cache-dir" && has_value) {
      arguments.options.cache_dir = argv[++i];
    } else if (arg == "--stateless") {
      arguments.options.expose_recurrent_state = false;
    } else if (!arg.empty() && arg[0] != '-') {
      arguments.model = arg;
    } else {
      std::fprintf(stderr,
                   "usage: streaming_speech [model.onnx] [--chunks N] [--frames F] [--threads T] "
                   "[--cache-dir DIR] [--stateless]\n");
      std::exit(2);
    }
  }
  if (arguments.chunks < 1 || arguments.frames_per_chunk < 1) {
    std::fprintf(stderr, "streaming_speech: --chunks and --frames must be >= 1\n");
    std::exit(2);
  }
  return arguments;
}

// The input a run feeds (the first one that is not recurrent state the session feeds itself).
const rnnc::TensorInfo& features_input(const rnnc::CompiledModel& model) {
  for (const rnnc::TensorInfo& input : model.inputs()) {
    bool is_state = false;
    for (const auto& [output, state_input] : model.recurrent_state()) {
      is_state = is_state || state_input == input.name;
    }
    if (!is_state) return input;
  }
  throw rnnc::Error(rnnc::ErrorKind::kInvalidModel, "the model has no input besides its state");
}

// Synthetic filterbank frames: a tone sweeping up the bands, on a little deterministic noise.
void synthesize_frames(int first_frame, int frames, int64_t features, std::vector<float>& out) {
  out.resize(static_cast<size_t>(frames * features));
  for (int t = 0; t < frames; ++t) {
    const int frame = first_frame + t;
    const double band = std::fmod(frame * 0.7, static_cast<double>(features));
    for (int64_t f = 0; f < features; ++f) {
      const double tone = std::exp(-(f - band) * (f - band) / 8.0);
      const double noise = 0.05 * std::sin(frame * 12.9898 + f * 78.233);
      out[static_cast<size_t>(t * features + f)] = static_cast<float>(tone + noise - 0.5);
    }
  }
}

// The highest-scoring class of one frame's scores.
int best_class(const float* scores, int64_t classes) {
  return static_cast<int>(std::max_element(scores, scores + classes) - scores);
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

int run(const Arguments& arguments) {
  // Compile once at service start; the model is immutable and shared by every stream.
  std::printf("loading %s\n", arguments.model.c_str());
  auto model = rnnc::CompiledModel::load(arguments.model, arguments.options);
  const rnnc::TensorInfo& input = features_input(*model);
  const rnnc::TensorInfo& output = model->outputs()[0];
  const int64_t features = input.dims.size() == 3 ? std::atoll(input.dims[2].c_str()) : 0;
  if (features <= 0 || output.dims.size() != 3) {
    std::fprintf(stderr,
                 "streaming_speech: expected features [seq, batch, F] -> [seq, batch, C], "
                 "got %s -> %s\n",
                 input.to_string().c_str(), output.to_string().c_str());
    return 2;
  }
  std::printf("  %s -> %s, %zu recurrent state tensors carried, plan %s\n",
              input.to_string().c_str(), output.to_string().c_str(),
              model->recurrent_state().size(), rnnc::plan_name(model->plan()));

  // One session per audio stream: it carries the recurrent state from chunk to chunk.
  rnnc::Session stream = model->new_session();
  const int frames = arguments.frames_per_chunk;
  std::vector<float> chunk;
  std::vector<float> streamed;  // every chunk's output, in order
  int64_t classes = 0;
  std::vector<double> latencies;
  for (int c = 0; c < arguments.chunks; ++c) {
    synthesize_frames(c * frames, frames, features, chunk);  // the audio front end's features
    const auto start = std::chrono::steady_clock::now();
    const std::vector<rnnc::NamedTensor>& outputs = stream.run(
        {{input.name, {rnnc::ElementType::kFloat32, {frames, 1, features}, chunk.data()}}});
    latencies.push_back(milliseconds_since(start));

    // The views are valid until the next run: use or copy them now.
    const rnnc::TensorRef& scores = outputs[0].tensor;
    classes = scores.shape[2];
    const float* data = static_cast<const float*>(scores.data);
    streamed.insert(streamed.end(), data, data + scores.element_count());
    const float* last_frame = data + (frames - 1) * classes;
    const int best = best_class(last_frame, classes);
    std::printf("chunk %2d  frames %3d-%3d  %7.3f ms  last frame: class %2d (score %.3f)\n", c,
                c * frames, (c + 1) * frames - 1, latencies.back(), best, last_frame[best]);
  }
  std::vector<double> steady(latencies.begin() + 1, latencies.end());
  std::sort(steady.begin(), steady.end());
  if (!steady.empty()) {
    std::printf(
        "first chunk %.3f ms (sizes its buffers); later chunks median %.3f ms for %d "
        "frames (%.0f ms of audio at 10 ms per frame)\n",
        latencies[0], steady[steady.size() / 2], frames, frames * 10.0);
  }

  // The check: one run over the whole utterance on a fresh session gives the same outputs.
  const int total = arguments.chunks * frames;
  std::vector<float> utterance;
  synthesize_frames(0, total, features, utterance);
  rnnc::Session whole = model->new_session();
  const std::vector<rnnc::NamedTensor>& outputs = whole.run(
      {{input.name, {rnnc::ElementType::kFloat32, {total, 1, features}, utterance.data()}}});
  const float* expected = static_cast<const float*>(outputs[0].tensor.data);
  if (outputs[0].tensor.element_count() != static_cast<int64_t>(streamed.size())) {
    std::printf("FAIL: the whole run gave %lld values, the chunks %zu\n",
                static_cast<long long>(outputs[0].tensor.element_count()), streamed.size());
    return 1;
  }
  double max_difference = 0;
  for (size_t i = 0; i < streamed.size(); ++i) {
    max_difference = std::max(max_difference, std::fabs(double(streamed[i]) - expected[i]));
  }
  if (std::memcmp(streamed.data(), expected, streamed.size() * sizeof(float)) != 0) {
    std::printf("FAIL: %d chunks of %d frames differ from one run of %d frames (max |diff| %g)\n",
                arguments.chunks, frames, total, max_difference);
    return 1;
  }
  std::printf("OK: %d chunks of %d frames equal one run of %d frames bit for bit\n",
              arguments.chunks, frames, total);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Arguments arguments = parse_arguments(argc, argv);
  try {
    return run(arguments);
  } catch (const rnnc::Error& e) {
    std::fprintf(stderr, "streaming_speech: %s: %s\n", rnnc::error_kind_name(e.kind()), e.what());
    return 2;
  }
}
