// rnnc streams: how many real-time streams a machine serves. Simulates N streams, each releasing a
// chunk of --chunk-frames frames every chunk period (frames of --frame-ms) from a random phase, as
// streams that started at random instants do, for --seconds; runs them through a StreamBatcher
// (--batching on) or one Session per stream on --threads threads (off), and reports per N the
// latency from each chunk's release to its result (p50, p99, max), the batch sizes and whether
// every stream kept up (each chunk done before the stream's next one was released).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "ir/dim.h"
#include "ir/error.h"
#include "ir/npy.h"
#include "rnnc/rnnc.h"
#include "tools/commands.h"

namespace rnnc::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
  bool batching = true;
  int max_batch = 64;
  double max_wait_ms = 2;
  // Batching on: the threads of each batched run (ModelOptions::threads); off: the threads
  // running the streams' sessions (each session's run on one thread).
  int threads = 1;
  int concurrent_runs = 1;  // batching on: batched runs at once (BatcherOptions::threads)
  double frame_ms = 10;
  int64_t chunk_frames = 16;
  double seconds = 5;
  std::vector<std::pair<std::string, std::string>> state;
  std::map<std::string, int> batch_axes;  // --batch-axis: BatcherOptions::batch_axes
  double period_ms() const { return frame_ms * static_cast<double>(chunk_frames); }
};

// One stream's chunk: every input a run needs but the state inputs, in owned memory.
struct ChunkInputs {
  std::vector<std::vector<uint8_t>> storage;
  std::vector<NamedTensor> named;
};

// A stream's chunk: the --input files' tensors (every stream the same), random values for the
// other inputs but the state inputs.
ChunkInputs random_chunk(const CompiledModel& model, const std::set<std::string>& state_inputs,
                         const std::map<std::string, Tensor>& files,
                         const std::map<std::string, int64_t>& dims, std::mt19937_64& rng) {
  ChunkInputs chunk;
  for (const TensorInfo& info : model.inputs()) {
    if (state_inputs.count(info.name)) continue;
    if (auto file = files.find(info.name); file != files.end()) {
      const Tensor& tensor = file->second;
      chunk.named.push_back({info.name,
                             {static_cast<ElementType>(static_cast<int32_t>(tensor.dtype())),
                              tensor.shape(), const_cast<void*>(tensor.raw_data())}});
      continue;
    }
    std::vector<int64_t> shape;
    for (const std::string& dim : info.dims) {
      auto bound = dims.find(dim);
      if (bound != dims.end()) {
        shape.push_back(bound->second);
        continue;
      }
      char* end = nullptr;
      const long long size = std::strtoll(dim.c_str(), &end, 10);
      if (dim.empty() || *end) {
        raise_invalid_input(cat("input ", info.to_string(), ": dim '", dim,
                                "' is not bound: give it with --dim ", dim, "=N"));
      }
      shape.push_back(size);
    }
    TensorRef tensor{info.type, shape, nullptr};
    std::vector<uint8_t>& bytes =
        chunk.storage.emplace_back(std::max<size_t>(tensor.byte_size(), 8));
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int64_t i = 0; i < tensor.element_count(); ++i) {
      switch (info.type) {
        case ElementType::kFloat32:
          reinterpret_cast<float*>(bytes.data())[i] = uniform(rng);
          break;
        case ElementType::kInt64:
          reinterpret_cast<int64_t*>(bytes.data())[i] = 0;
          break;
        case ElementType::kInt32:
          reinterpret_cast<int32_t*>(bytes.data())[i] = 0;
          break;
        default:
          raise_unsupported(cat("input ", info.to_string(), ": random ",
                                element_type_name(info.type),
                                " inputs (float, int32 and int64 only); fix it with --fix"));
      }
    }
    tensor.data = bytes.data();
    chunk.named.push_back({info.name, tensor});
  }
  return chunk;
}

struct Trial {
  int streams = 0;
  std::vector<double> latencies_ms;              // completed chunks
  uint64_t released = 0, dropped = 0, late = 0;  // late: done after the stream's next release
  std::vector<uint64_t> batch_sizes;             // batching on: runs per size
  double p(double q) const {
    if (latencies_ms.empty()) return NAN;
    const size_t index = std::min(
        latencies_ms.size() - 1, static_cast<size_t>(q * static_cast<double>(latencies_ms.size())));
    return latencies_ms[index];
  }
  bool kept_up() const { return late == 0 && dropped == 0 && latencies_ms.size() == released; }
};

// A release schedule: per stream a phase in [0, period); chunk k of stream s at phase + k period.
struct Release {
  double at_ms;
  int stream;
};

std::vector<Release> schedule(int streams, const Settings& settings, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> phase(0, settings.period_ms());
  std::vector<Release> releases;
  for (int s = 0; s < streams; ++s) {
    for (double at = phase(rng); at < settings.seconds * 1000; at += settings.period_ms()) {
      releases.push_back({at, s});
    }
  }
  std::sort(releases.begin(), releases.end(),
            [](const Release& a, const Release& b) { return a.at_ms < b.at_ms; });
  return releases;
}

double ms_since(Clock::time_point start, Clock::time_point now) {
  return std::chrono::duration<double, std::milli>(now - start).count();
}

Trial run_batched(const std::shared_ptr<const CompiledModel>& model,
                  const std::vector<ChunkInputs>& chunks, const std::vector<Release>& releases,
                  int streams, const Settings& settings) {
  Trial trial;
  trial.streams = streams;
  BatcherOptions options;
  options.state = settings.state;
  options.batch_axes = settings.batch_axes;
  options.max_batch = settings.max_batch;
  options.max_wait_us = static_cast<int64_t>(settings.max_wait_ms * 1000);
  options.threads = settings.concurrent_runs;
  options.queue_capacity = static_cast<size_t>(std::max(streams * 4, 64));
  std::mutex mutex;
  const double period = settings.period_ms();
  {
    StreamBatcher batcher(model, options);
    std::vector<BatchStream> handles;
    for (int s = 0; s < streams; ++s) handles.push_back(batcher.open_stream());
    const Clock::time_point start = Clock::now();
    for (const Release& release : releases) {
      std::this_thread::sleep_until(
          start + std::chrono::microseconds(static_cast<int64_t>(release.at_ms * 1000)));
      ++trial.released;
      try {
        handles[static_cast<size_t>(release.stream)].submit(
            chunks[static_cast<size_t>(release.stream)].named,
            [&, at = release.at_ms](ChunkResult result) {
              const double latency = ms_since(start, Clock::now()) - at;
              std::lock_guard<std::mutex> lock(mutex);
              if (result.error) {
                ++trial.dropped;
                return;
              }
              trial.latencies_ms.push_back(latency);
              if (latency > period) ++trial.late;
            });
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kOverloaded) throw;
        std::lock_guard<std::mutex> lock(mutex);
        ++trial.dropped;
      }
    }
    // The backlog gets one more period; what is still queued then is cancelled (dropped).
    const Clock::time_point give_up =
        start +
        std::chrono::microseconds(static_cast<int64_t>((settings.seconds * 1000 + period) * 1000));
    for (BatchStream& handle : handles) handle.close();
    while (Clock::now() < give_up) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (trial.latencies_ms.size() + trial.dropped == trial.released) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    trial.batch_sizes = batcher.stats().batch_sizes;
  }
  std::lock_guard<std::mutex> lock(mutex);
  trial.dropped = trial.released - trial.latencies_ms.size();
  return trial;
}

Trial run_sessions(const std::shared_ptr<const CompiledModel>& model,
                   const std::vector<ChunkInputs>& chunks, const std::vector<Release>& releases,
                   int streams, const Settings& settings) {
  Trial trial;
  trial.streams = streams;
  trial.released = releases.size();
  const double period = settings.period_ms();
  std::vector<Session> sessions;
  for (int s = 0; s < streams; ++s) sessions.push_back(model->new_session(settings.state));
  std::mutex mutex;
  const Clock::time_point start = Clock::now();
  const double give_up_ms = settings.seconds * 1000 + period;
  // Thread t serves streams t, t + threads, ...: their chunks in release order.
  std::vector<std::thread> threads;
  for (int t = 0; t < settings.threads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<double> latencies;
      uint64_t late = 0;
      for (const Release& release : releases) {
        if (release.stream % settings.threads != t) continue;
        std::this_thread::sleep_until(
            start + std::chrono::microseconds(static_cast<int64_t>(release.at_ms * 1000)));
        if (ms_since(start, Clock::now()) > give_up_ms) break;
        sessions[static_cast<size_t>(release.stream)].run(
            chunks[static_cast<size_t>(release.stream)].named);
        const double latency = ms_since(start, Clock::now()) - release.at_ms;
        latencies.push_back(latency);
        if (latency > period) ++late;
      }
      std::lock_guard<std::mutex> lock(mutex);
      trial.latencies_ms.insert(trial.latencies_ms.end(), latencies.begin(), latencies.end());
      trial.late += late;
    });
  }
  for (std::thread& thread : threads) thread.join();
  trial.dropped = trial.released - trial.latencies_ms.size();
  return trial;
}

Trial run_trial(const std::shared_ptr<const CompiledModel>& model,
                const std::set<std::string>& state_inputs,
                const std::map<std::string, Tensor>& files,
                const std::map<std::string, int64_t>& dims, int streams, const Settings& settings,
                uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ChunkInputs> chunks;
  for (int s = 0; s < streams; ++s)
    chunks.push_back(random_chunk(*model, state_inputs, files, dims, rng));
  // Warm-up outside the timing: the first runs of a shape compile or choose what later ones use.
  {
    Session warm = model->new_session(settings.state);
    for (int r = 0; r < 3; ++r) warm.run(chunks[0].named);
  }
  const std::vector<Release> releases = schedule(streams, settings, rng);
  Trial trial = settings.batching ? run_batched(model, chunks, releases, streams, settings)
                                  : run_sessions(model, chunks, releases, streams, settings);
  std::sort(trial.latencies_ms.begin(), trial.latencies_ms.end());
  return trial;
}

void print_header() {
  std::cout << "streams  p50_ms   p99_ms   max_ms   mean_batch  chunks  late  dropped  kept_up\n";
}

void print_trial(const Trial& trial) {
  uint64_t runs = 0, rows = 0;
  for (size_t b = 0; b < trial.batch_sizes.size(); ++b) {
    runs += trial.batch_sizes[b];
    rows += b * trial.batch_sizes[b];
  }
  std::ostringstream line;
  line << std::fixed << std::setprecision(2) << std::left << std::setw(9) << trial.streams
       << std::setw(9) << trial.p(0.5) << std::setw(9) << trial.p(0.99) << std::setw(9)
       << (trial.latencies_ms.empty() ? NAN : trial.latencies_ms.back()) << std::setw(12)
       << (runs ? static_cast<double>(rows) / static_cast<double>(runs) : 1.0) << std::setw(8)
       << trial.released << std::setw(6) << trial.late << std::setw(9) << trial.dropped
       << (trial.kept_up() ? "yes" : "no");
  std::cout << line.str() << "\n";
  if (runs) {
    std::cout << "         batch sizes (size x runs):";
    for (size_t b = 1; b < trial.batch_sizes.size(); ++b) {
      if (trial.batch_sizes[b]) std::cout << " " << b << "x" << trial.batch_sizes[b];
    }
    std::cout << "\n";
  }
  std::cout.flush();
}

double parse_number(const Parsed& args, const std::string& name, double fallback, double minimum) {
  if (!args.has(name)) return fallback;
  const std::string text = args.get(name);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(value >= minimum)) {
    raise_invalid_input(cat("--", name, " expects a number >= ", minimum, ", got '", text, "'"));
  }
  return value;
}

int run_streams(const Parsed& args) {
  if (args.positional.size() != 1) raise_invalid_input("expects one MODEL argument");
  Settings settings;
  const std::string batching = args.get("batching", "on");
  if (batching != "on" && batching != "off") {
    raise_invalid_input(cat("--batching expects on or off, got '", batching, "'"));
  }
  settings.batching = batching == "on";
  settings.max_batch = static_cast<int>(args.get_int("max-batch", settings.max_batch));
  settings.max_wait_ms = parse_number(args, "max-wait-ms", settings.max_wait_ms, 0);
  settings.threads = static_cast<int>(args.get_int("threads", 1));
  settings.concurrent_runs = static_cast<int>(args.get_int("concurrent-runs", 1));
  settings.frame_ms = parse_number(args, "frame-ms", settings.frame_ms, 0.001);
  settings.chunk_frames = args.get_int("chunk-frames", settings.chunk_frames);
  settings.seconds = parse_number(args, "seconds", settings.seconds, 0.01);
  if (settings.threads < 1) raise_invalid_input("--threads must be >= 1");
  if (settings.concurrent_runs < 1) raise_invalid_input("--concurrent-runs must be >= 1");
  if (settings.max_batch < 1) raise_invalid_input("--max-batch must be >= 1");
  if (settings.chunk_frames < 1) raise_invalid_input("--chunk-frames must be >= 1");
  for (const std::string& text : args.all("state")) {
    settings.state.push_back(split_assignment(text, "state"));
  }
  for (const std::string& text : args.all("batch-axis")) {
    auto [name, value] = split_assignment(text, "batch-axis");
    char* end = nullptr;
    const long axis = std::strtol(value.c_str(), &end, 10);
    if (*end || axis < -1 || axis > 64) {
      raise_invalid_input(cat("--batch-axis ", name, ": '", value, "' is not -1 or an axis"));
    }
    settings.batch_axes[name] = static_cast<int>(axis);
  }
  std::vector<int> counts;
  {
    std::stringstream items(args.get("streams", "8"));
    for (std::string item; std::getline(items, item, ',');) {
      char* end = nullptr;
      const long count = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end || count < 1) {
        raise_invalid_input(cat("--streams expects counts >= 1 separated by commas, got '",
                                args.get("streams"), "'"));
      }
      counts.push_back(static_cast<int>(count));
    }
  }
  const int trials = static_cast<int>(args.get_int("trials", 1));
  if (trials < 1) raise_invalid_input("--trials must be >= 1");
  const bool find_max = args.has("find-max");
  const double p99_budget = parse_number(args, "p99-ms", 0, 0);
  if (find_max && !args.has("p99-ms")) raise_invalid_input("--find-max needs --p99-ms X");

  ModelOptions options;
  options.threads = settings.batching ? settings.threads : 1;
  options.target = args.get("target");
  options.cache_dir = args.get("cache-dir");
  options.quantization_config = args.get("quantize");
  options.fixed_inputs = parse_fixed_inputs(args);
  std::map<std::string, int64_t> dims = parse_dims(args);
  options.quantization_dims = dims;
  std::map<std::string, Tensor> files;
  for (const auto& text : args.all("input")) {
    auto [name, path] = split_assignment(text, "input");
    if (files.count(name)) raise_invalid_input(cat("input '", name, "' is given twice"));
    files[name] = read_tensor_file(path);
    if (files[name].dtype() == DType::kString) raise_unsupported(cat("string input '", name, "'"));
  }
  auto model = CompiledModel::load(args.positional[0], options);
  if (!options.quantization_config.empty()) {
    std::cerr << "rnnc streams: quantized: " << model->quantization_summary() << "\n";
  }
  // The batch dim is 1 per stream; the time dim (--time-dim) holds a chunk's frames.
  std::set<std::string> state_inputs;
  for (const auto& [output, input] : model->recurrent_state()) state_inputs.insert(input);
  for (const auto& [output, input] : settings.state) state_inputs.insert(input);
  const std::string time_dim = args.get("time-dim", "seq");
  {
    BatcherOptions probe;
    probe.state = settings.state;
    probe.batch_axes = settings.batch_axes;
    StreamBatcher axes(model, probe);
    const std::map<std::string, int> batch_axes = axes.batch_axes();
    // A state input without an axis yet: the batcher takes the axes from the first chunk
    // (docs/runtime.md), so every data dim but the time dim is the stream's batch of 1.
    bool from_first_chunk = false;
    for (const std::string& name : state_inputs) from_first_chunk |= batch_axes.at(name) < 0;
    for (const TensorInfo& info : model->inputs()) {
      if (state_inputs.count(info.name)) continue;
      const int axis = batch_axes.at(info.name);
      for (size_t k = 0; k < info.dims.size(); ++k) {
        const std::string& dim = info.dims[k];
        const bool batch =
            from_first_chunk ? is_symbol_text(dim) && dim != time_dim : static_cast<int>(k) == axis;
        if (!batch || dims.count(dim)) continue;
        dims[dim] = 1;
        if (from_first_chunk) {
          std::cerr << "rnnc streams: " << info.name << " dim " << k << " ('" << dim
                    << "') = 1: the batcher takes its batch axes from the first chunk; --dim "
                    << dim << "=N if it is not the batch\n";
        }
      }
    }
  }
  if (!dims.count(time_dim)) dims[time_dim] = settings.chunk_frames;

  std::cout << "rnnc streams " << args.positional[0] << ": chunks of " << settings.chunk_frames
            << " x " << settings.frame_ms << " ms frames (one per " << settings.period_ms()
            << " ms per stream), " << settings.seconds << " s, batching " << batching;
  if (settings.batching) {
    std::cout << " (max batch " << settings.max_batch << ", max wait " << settings.max_wait_ms
              << " ms, " << settings.concurrent_runs << " run(s) at once of " << settings.threads
              << " thread(s))\n";
  } else {
    std::cout << ", " << settings.threads << " thread(s)\n";
  }
  const uint64_t seed = static_cast<uint64_t>(args.get_int("seed", 0));
  // --trials N runs each count N times, trial i with seed + i (its inputs and phases).
  auto run_trials = [&](int count) {
    std::vector<Trial> out;
    for (int i = 0; i < trials; ++i) {
      out.push_back(run_trial(model, state_inputs, files, dims, count, settings, seed + i));
      print_trial(out.back());
    }
    return out;
  };
  print_header();
  if (!find_max) {
    for (int count : counts) run_trials(count);
    return 0;
  }
  // The largest N whose median trial keeps up with p99 within the budget: doubling from the first
  // --streams count, then bisection. A trial that fell behind ranks above every trial that kept
  // up; with an even number of trials the upper of the two middle ones decides.
  auto passes = [&](int count) {
    std::vector<Trial> runs = run_trials(count);
    auto rank = [](const Trial& trial) {
      return trial.kept_up() ? trial.p(0.99) : std::numeric_limits<double>::infinity();
    };
    std::sort(runs.begin(), runs.end(),
              [&](const Trial& a, const Trial& b) { return rank(a) < rank(b); });
    const Trial& median = runs[runs.size() / 2];
    const bool ok = median.kept_up() && median.p(0.99) <= p99_budget;
    std::cerr << "find-max: " << count << " streams: p99 " << std::fixed << std::setprecision(2);
    for (size_t i = 0; i < runs.size(); ++i) {
      std::cerr << (i ? " / " : "") << runs[i].p(0.99)
                << (runs[i].kept_up() ? "" : " (fell behind)");
    }
    std::cerr << " ms" << (trials > 1 ? cat(", median of ", trials, " trials") : std::string())
              << " -> " << (ok ? "ok" : "too many") << "\n";
    return ok;
  };
  constexpr int kMostStreams = 1 << 16;
  int good = 0, bad = 0;
  for (int count = counts.front(); count <= kMostStreams; count *= 2) {
    if (!passes(count)) {
      bad = count;
      break;
    }
    good = count;
  }
  if (bad == 0) bad = good + 1;  // every count up to the cap passed
  while (bad - good > 1) {
    const int middle = good + (bad - good) / 2;
    (passes(middle) ? good : bad) = middle;
  }
  std::cout << "max streams with p99 <= " << p99_budget << " ms: " << good;
  if (trials > 1) std::cout << " (median of " << trials << " trials)";
  std::cout << "\n";
  return 0;
}

}  // namespace

const Command kStreamsCommand{
    "streams",
    "rnnc streams MODEL [--streams N[,N...]] [--batching on|off] [options]",
    "Simulate N real-time streams on one model and report chunk latency (p50, p99, max from\n"
    "each chunk's release to its result), the batch sizes and whether every stream kept up.\n"
    "Each stream releases a chunk of --chunk-frames frames every chunk period from a random\n"
    "phase, with random inputs (or --input files); --batching on runs them through a\n"
    "StreamBatcher, off through one Session per stream on --threads threads. --find-max\n"
    "--p99-ms X searches the largest N that keeps p99 <= X ms.",
    {
        {"streams", "N[,N...]",
         "stream counts to try (default 8); with --find-max, the first count"},
        {"batching", "on|off", "cross-stream batching (default on)"},
        {"max-batch", "B", "batching on: chunks per batched run (default 64)"},
        {"max-wait-ms", "MS", "batching on: the longest a chunk waits for others (default 2)"},
        {"threads", "N",
         "batching on: threads inside each batched run (the executor and the kernels' parallel "
         "loops); off: threads running the streams' sessions; default 1"},
        {"concurrent-runs", "K",
         "batching on: batched runs at once, each on --threads threads (default 1)"},
        {"frame-ms", "MS", "one frame's duration (default 10)"},
        {"chunk-frames", "N", "frames per chunk (default 16); binds --time-dim"},
        {"time-dim", "NAME", "the input dim holding a chunk's frames (default seq)"},
        {"seconds", "S", "simulated duration per stream count (default 5)"},
        {"state", "OUT=IN", "a state pair of the model's own, e.g. stateN=state (repeatable)"},
        {"batch-axis", "NAME=AXIS",
         "the batch axis of an input or output where the batcher cannot tell it (from shared dim "
         "names or the first chunk's shapes), e.g. state=1 (-1: none; repeatable)"},
        {"input", "NAME=FILE",
         "an input's chunk from a .pb or .npy file, the same for every stream (repeatable); other "
         "inputs are random"},
        {"find-max", "", "search the largest stream count with p99 <= --p99-ms"},
        {"trials", "N",
         "trials per stream count, each with its own seed (default 1); --find-max judges a "
         "count by its median trial's p99"},
        {"p99-ms", "X", "the p99 latency budget for --find-max"},
        {"quantize", "CONFIG", "quantize at load, as rnnc run --quantize"},
        {"fix", "NAME=V[,V...]", "compile an integer input in, e.g. --fix sr=16000 (repeatable)"},
        {"dim", "NAME=N", "bind a symbolic input dim, e.g. --dim sequence=512 (repeatable)"},
        {"seed", "N", "random seed for inputs and phases (default 0)"},
        {"target", "T", kTargetHelp},
        {"cache-dir", "DIR", "compiled kernel cache (default $RNNC_CACHE_DIR, else ~/.cache/rnnc)"},
    },
    run_streams,
};

}  // namespace rnnc::cli
