// rnnc_bench: runs every workload of a models folder (models/make_workloads.py) on rnnc and on
// ONNX Runtime in this one process, on identical inputs, and reports how they compare.
//
// Per workload and thread count:
//   1. load: ORT session creation and rnnc's load, each timed over --load-repeats, with the
//      resident memory they add;
//   2. agreement: both run the same inputs (a stream of chunks with the state carried for Silero);
//      every output must satisfy |rnnc - ort| <= atol + rtol * |ort|, else the run exits non-zero
//      and the workload is not timed for rnnc;
//   3. timing: Google Benchmark runs alternate rounds of ORT and rnnc (ort, rnnc, ort, rnnc, ...
//      so drift on a noisy machine hits both alike), each round starting with one untimed warm
//      run; every run is timed alone (manual time), giving per-run median, p90 and min.
// A workload rnnc cannot load or run yet is reported as "unsupported (<message>)", and ORT is
// still measured. Before the workloads, the machine bounds (benchmarks/machine_bounds.h: one
// core's streaming bandwidth per cache level and FMA peak) are measured, unless --no-bounds or
// --smoke. --json writes the raw results benchmarks/report.py turns into the docs.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "benchmarks/json_writer.h"
#include "benchmarks/machine_bounds.h"
#include "benchmarks/measure.h"
#include "benchmarks/ort_engine.h"
#include "benchmarks/rnnc_engine.h"
#include "benchmarks/workload.h"
#include "ir/error.h"
#include "ir/npy.h"
#include "lowering/kernel_target.h"

namespace rnnc::bench {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::micro>(end - start).count();
}

constexpr const char* kUsage = R"(usage: rnnc_bench [options] [--benchmark_* flags]
  --models=DIR          folder with workloads.json and the models (default build/models)
  --threads=LIST        thread counts, e.g. 1,2 (default 1)
  --filter=REGEX        only workloads whose name matches
  --budget=SECONDS      timed seconds per engine per workload (default 1.5)
  --rounds=N            alternating rounds per engine (default 3)
  --max-iterations=N    per round (default 2000)
  --min-iterations=N    per round (default 2)
  --load-repeats=N      loads timed per engine (default 3)
  --atol=X --rtol=X     agreement tolerance (default 1e-4, 1e-4)
  --json=FILE           write the raw results
  --dump-io=DIR         write each workload's inputs and ORT's outputs as .npy (torch_runner.py)
  --smoke               tiny budget for the test suite (models/smoke, 1 thread, few iterations,
                        no machine bounds unless --bounds or --bounds-quick)
  --bounds              measure the machine bounds first (the default, except with --smoke)
  --bounds-quick        the same on a tiny table (32 KiB and 256 KiB, 3 short calls), for tests
  --no-bounds           skip the machine bounds
  --no-quant            skip the quantized paths (rnnc int8 with dynamic and with calibrated static
                        activations, ONNX Runtime DynamicQuantizeLSTM), which run by default at 1
                        thread on LSTM/GRU workloads
)";

struct Options {
  std::string models_dir = RNNC_SOURCE_DIR "/build/models";
  bool models_given = false;
  std::vector<int> threads = {1};
  std::string filter;
  double budget_s = 1.5;
  int rounds = 3;
  int64_t max_iterations = 2000;
  int64_t min_iterations = 2;
  int load_repeats = 3;
  double atol = 1e-4;
  double rtol = 1e-4;
  std::string json_path;
  std::string dump_io_dir;
  bool smoke = false;
  bool quant = true;  // also time the quantized paths (1 thread, LSTM/GRU workloads)
  enum class Bounds { kDefault, kOn, kQuick, kOff } bounds = Bounds::kDefault;
  std::string command;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "rnnc_bench: " << message << "\n" << kUsage;
  std::exit(2);
}

double parse_number(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  usage_error(flag + " expects a number, got '" + text + "'");
}

Options parse_options(int argc, char** argv, const std::string& command) {
  Options options;
  options.command = command;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string flag = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (flag == "--smoke") {
      options.smoke = true;
    } else if (flag == "--no-quant") {
      options.quant = false;
    } else if (flag == "--bounds") {
      options.bounds = Options::Bounds::kOn;
    } else if (flag == "--bounds-quick") {
      options.bounds = Options::Bounds::kQuick;
    } else if (flag == "--no-bounds") {
      options.bounds = Options::Bounds::kOff;
    } else if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (eq == std::string::npos) {
      usage_error("unknown argument '" + arg + "'");
    } else if (flag == "--models") {
      options.models_dir = value;
      options.models_given = true;
    } else if (flag == "--threads") {
      options.threads.clear();
      std::stringstream list(value);
      std::string item;
      while (std::getline(list, item, ',')) {
        const double n = parse_number(flag, item);
        if (n < 1 || n != static_cast<int>(n)) usage_error("--threads: '" + item + "' is not >= 1");
        options.threads.push_back(static_cast<int>(n));
      }
      if (options.threads.empty()) usage_error("--threads: empty list");
    } else if (flag == "--filter") {
      options.filter = value;
    } else if (flag == "--budget") {
      options.budget_s = parse_number(flag, value);
    } else if (flag == "--rounds") {
      options.rounds = std::max(1, static_cast<int>(parse_number(flag, value)));
    } else if (flag == "--max-iterations") {
      options.max_iterations = std::max<int64_t>(1, parse_number(flag, value));
    } else if (flag == "--min-iterations") {
      options.min_iterations = std::max<int64_t>(1, parse_number(flag, value));
    } else if (flag == "--load-repeats") {
      options.load_repeats = std::max(1, static_cast<int>(parse_number(flag, value)));
    } else if (flag == "--atol") {
      options.atol = parse_number(flag, value);
    } else if (flag == "--rtol") {
      options.rtol = parse_number(flag, value);
    } else if (flag == "--json") {
      options.json_path = value;
    } else if (flag == "--dump-io") {
      options.dump_io_dir = value;
    } else {
      usage_error("unknown flag '" + flag + "'");
    }
  }
  if (options.smoke) {
    if (!options.models_given) options.models_dir = RNNC_SOURCE_DIR "/models/smoke";
    options.budget_s = std::min(options.budget_s, 0.02);
    options.rounds = 2;
    options.max_iterations = std::min<int64_t>(options.max_iterations, 20);
    options.min_iterations = 1;
    options.load_repeats = 1;
  }
  if (options.bounds == Options::Bounds::kDefault)
    options.bounds = options.smoke ? Options::Bounds::kOff : Options::Bounds::kOn;
  return options;
}

struct EngineResult {
  std::string name;
  std::string status = "not run";  // ok | unsupported | failed | disagrees | not run
  std::string error;
  std::vector<double> load_ms;
  int64_t model_rss = 0;   // resident bytes the loaded model added
  int64_t peak_rss = 0;    // peak resident bytes over load and runs, above the pre-load level
  double estimate_us = 0;  // the fastest of a few early runs, to size the timing rounds
  std::vector<double> samples_us;
  // The median of each timing round, in round order: engines timed in the same rounds pair up
  // round by round (the report's paired ratios), which cancels load that drifts between rounds.
  std::vector<double> round_medians_us;
  // rnnc quantized at load: the quantization guard's decision (CompiledModel::quantization_summary).
  std::string quantization;
};

struct WorkloadResult {
  const Workload* workload = nullptr;
  int threads = 1;
  std::string status = "ok";  // ok | missing model | onnxruntime failed
  std::string detail;
  EngineResult ort, rnnc;
  // At 2+ threads: the same model on the plan kAuto did not pick (sequential, or the pipeline
  // plan when kAuto picked sequential), timed in the same rounds, so the overlapping plan's
  // speedup over sequential is measured whichever way kAuto's load-time profiling went.
  EngineResult rnnc_other;
  std::string rnnc_plan, rnnc_other_plan;
  // Quantized paths (1 thread, LSTM/GRU/Silero workloads): rnnc with its default quantization as a
  // user loads it (the quantization guard on), and
  // ONNX Runtime's DynamicQuantizeLSTM model (LSTM only). Their accuracy: the largest |output -
  // float ONNX Runtime output| over the compared runs and outputs (-1: not measured).
  // rnnc_dqlstm: rnnc on the DynamicQuantizeLSTM file itself (ir/contrib_ops.h).
  // rnnc_int8_static: the model quantized offline with static u8 activations calibrated on
  // generated inputs (quantize_static; stateless LSTM/GRU workloads).
  EngineResult rnnc_int8, ort_dqlstm, rnnc_dqlstm, rnnc_int8_static;
  double rnnc_int8_error = -1, ort_dqlstm_error = -1, rnnc_dqlstm_error = -1;
  double rnnc_int8_static_error = -1;
  bool agreement_checked = false;
  bool agreement_ok = false;
  int agreement_steps = 0;
  std::vector<OutputAgreement> agreement;
  // One run's multiply-adds and weight bytes (workload_cost); cost_error says why it is missing.
  std::optional<ModelCost> cost;
  std::string cost_error;
};

// Records an engine failure as "unsupported" (rnnc's kUnsupported) or "failed" (anything else).
void record_failure(EngineResult& result, const std::exception& error) {
  const auto* rnnc_error = dynamic_cast<const Error*>(&error);
  result.status =
      rnnc_error && rnnc_error->kind() == ErrorKind::kUnsupported ? "unsupported" : "failed";
  result.error = error.what();
  if (rnnc_error && result.status == "failed")
    result.error = std::string(error_kind_name(rnnc_error->kind())) + ": " + result.error;
}

bool load_engine(Engine& engine, const std::string& path, const EngineOptions& options, int repeats,
                 EngineResult& result) {
  result.name = engine.name();
  try {
    reset_peak_rss();
    const Rss before = read_rss();
    for (int i = 0; i < repeats; ++i) {
      const auto start = Clock::now();
      engine.load(path, options);
      result.load_ms.push_back(elapsed_us(start, Clock::now()) / 1000.0);
      if (i == 0) {
        const Rss after = read_rss();
        result.model_rss = after.current - before.current;
        result.peak_rss = after.peak - before.current;
      }
    }
    result.status = "ok";
    return true;
  } catch (const std::exception& error) {
    record_failure(result, error);
    return false;
  }
}

// Static int8: the workload's model quantized offline as `rnnc quantize --config Q.json
// --calibrate ...` does (docs/quant.md), int8 weights per row and static u8 activations whose
// coefficients (minmax) come from kCalibrationSamples inputs made like the timed ones with other
// seeds, so the timed input is not among them; the quantization guard on. Returns the written
// model's path, or "" with the failure in `result`.
constexpr int kCalibrationSamples = 8;
constexpr const char* kStaticConfig = R"({"default": {
  "weights": {"bits": 8, "symmetric": true, "granularity": "row"},
  "activations": {"bits": 8, "symmetric": false, "dynamic": false, "method": "minmax"}}})";

std::string quantize_static(const std::string& path, const Workload& workload,
                            EngineResult& result) {
  namespace fs = std::filesystem;
  const std::string stem = cat("rnnc_bench_", getpid(), "_", workload.name);
  const std::string config = (fs::temp_directory_path() / (stem + ".json")).string();
  const std::string output = (fs::temp_directory_path() / (stem + ".onnx")).string();
  std::ofstream(config) << kStaticConfig;
  std::vector<TensorMap> samples;
  for (int i = 0; i < kCalibrationSamples; ++i) {
    Workload seeded = workload;
    seeded.name = cat(workload.name, "/calibration ", i);
    samples.push_back(InputStream(seeded).current());
  }
  QuantizeOptions options;
  options.config = config;
  for (TensorMap& sample : samples) {
    std::vector<NamedTensor>& named = options.calibration.emplace_back();
    for (auto& [name, tensor] : sample) {
      named.push_back({name,
                       {static_cast<ElementType>(static_cast<int32_t>(tensor.dtype())),
                        tensor.shape(), tensor.raw_data()}});
    }
  }
  std::string written;
  try {
    result.quantization = quantize_model(path, output, options).summary;
    written = output;
  } catch (const std::exception& error) {
    record_failure(result, error);
    fs::remove(output);
  }
  fs::remove(config);
  return written;
}

// Runs `steps` runs (advancing the stream between them) and returns every run's outputs. The
// fastest of those runs and of kEstimateRuns more on the last input is the engine's time estimate:
// the first runs after a load are often many times slower than the median, and a round sized by
// one of them would get a fraction of its budget.
constexpr int kEstimateRuns = 3;
std::vector<TensorMap> run_stream(Engine& engine, InputStream& stream, int steps,
                                  EngineResult& result) {
  std::vector<TensorMap> outputs;
  try {
    stream.reset();
    reset_peak_rss();
    const Rss before = read_rss();
    for (int step = 0; step < steps; ++step) {
      if (step > 0) stream.advance(outputs.back());
      engine.prepare(stream.current());
      const auto start = Clock::now();
      engine.execute();
      const double us = elapsed_us(start, Clock::now());
      result.estimate_us = step == 0 ? us : std::min(result.estimate_us, us);
      outputs.push_back(engine.outputs());
    }
    for (int run = 0; run < kEstimateRuns && steps > 0; ++run) {
      const auto start = Clock::now();
      engine.execute();
      result.estimate_us = std::min(result.estimate_us, elapsed_us(start, Clock::now()));
    }
    const Rss after = read_rss();
    result.peak_rss = std::max(result.peak_rss, result.model_rss + after.peak - before.current);
    engine.quiesce();
  } catch (const std::exception& error) {
    record_failure(result, error);
    outputs.clear();
  }
  return outputs;
}

// One timing round of one engine, as a Google Benchmark: an untimed warm run, then one timed run
// per iteration (manual time: input handling between runs is not counted).
void time_round(benchmark::State& state, Engine* engine, InputStream* stream, EngineResult* result,
                int64_t batch) {
  stream->reset();
  engine->prepare(stream->current());
  engine->execute();
  std::vector<double> round_us;
  for (auto _ : state) {
    if (stream->stateful()) {
      stream->advance(engine->outputs());
      engine->prepare(stream->current());
    }
    const auto start = Clock::now();
    engine->execute();
    const double us = elapsed_us(start, Clock::now());
    state.SetIterationTime(us * 1e-6);
    round_us.push_back(us);
  }
  engine->quiesce();
  result->samples_us.insert(result->samples_us.end(), round_us.begin(), round_us.end());
  const LatencyStats stats = latency_stats(round_us);
  result->round_medians_us.push_back(stats.median_us);
  state.counters["median_us"] = stats.median_us;
  state.counters["p90_us"] = stats.p90_us;
  state.counters["min_us"] = stats.min_us;
  if (batch > 1) state.counters["seq_per_s"] = batch * 1e6 / stats.median_us;
  state.SetLabel(result->name);
}

// Google Benchmark's console reporter prints the machine context once, not once per workload.
class ProgressReporter : public benchmark::ConsoleReporter {
 public:
  bool ReportContext(const Context& context) override {
    if (!printed_context_) {
      printed_context_ = true;
      ConsoleReporter::ReportContext(context);
    }
    name_field_width_ = 44;
    printed_header_ = false;
    return true;
  }

 private:
  bool printed_context_ = false;
};

int64_t iterations_for(const Options& options, double estimate_us) {
  const double round_budget_us = options.budget_s * 1e6 / options.rounds;
  const double wanted = round_budget_us / std::max(estimate_us, 1.0);
  return std::clamp(static_cast<int64_t>(wanted), options.min_iterations, options.max_iterations);
}

void dump_io(const Options& options, const Workload& workload, const TensorMap& inputs,
             const TensorMap& ort_outputs) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(options.dump_io_dir) / workload.name;
  fs::create_directories(dir);
  for (const auto& [name, tensor] : inputs)
    write_npy((dir / ("input." + name + ".npy")).string(), tensor);
  for (const auto& [name, tensor] : ort_outputs)
    write_npy((dir / ("ort." + name + ".npy")).string(), tensor);
}

void log(const std::string& line) { std::cerr << "[rnnc_bench] " << line << std::endl; }

std::string format_diff(const std::vector<OutputAgreement>& agreement) {
  std::ostringstream text;
  for (const OutputAgreement& output : agreement) {
    char value[32];
    std::snprintf(value, sizeof(value), "%.2e", output.max_abs_diff);
    text << " " << output.name << "=" << value;
    if (!output.ok) text << " (FAIL: " << output.problem << ")";
  }
  return text.str();
}

WorkloadResult bench_workload(const Options& options, const Workload& workload, int threads,
                              ProgressReporter& reporter, const std::string& progress) {
  WorkloadResult result;
  result.workload = &workload;
  result.threads = threads;
  const std::string path = (std::filesystem::path(options.models_dir) / workload.model).string();
  if (!std::filesystem::exists(path)) {
    result.status = "missing model";
    result.detail = path + " not found" +
                    (workload.fetch.empty() ? " (run models/make_workloads.py)"
                                            : " (run " + workload.fetch + ")");
    log(progress + ": skipped, " + result.detail);
    return result;
  }
  try {
    result.cost = workload_cost(path, workload);
  } catch (const std::exception& error) {
    result.cost_error = error.what();
  }
  EngineOptions engine_options;
  engine_options.threads = threads;
  for (const InputSpec& input : workload.inputs)
    engine_options.input_shapes[input.name] = input.shape;
  for (const auto& [name, value] : fixed_scalar_inputs(workload)) {
    engine_options.fixed_inputs[name] = {value};
  }
  OrtEngine ort;
  RnncEngine rnnc;
  InputStream stream(workload);
  const int steps = stream.stateful() ? 16 : 2;
  result.agreement_steps = steps;

  log(progress + ": loading into ONNX Runtime and rnnc");
  load_engine(ort, path, engine_options, options.load_repeats, result.ort);
  load_engine(rnnc, path, engine_options, options.load_repeats, result.rnnc);
  // At 2+ threads the plan kAuto did not choose for this workload's shape is timed too; it is
  // loaded once kAuto has chosen (below).
  RnncEngine rnnc_other;
  RnncEngine rnnc_int8(Plan::kAuto, "default");
  OrtEngine ort_dqlstm;
  RnncEngine rnnc_dqlstm;
  RnncEngine rnnc_int8_static(Plan::kAuto, "",
                              "int8 with static activations, rnnc quantize --calibrate");
  const bool quantized_paths = options.quant && threads == 1 &&
                               (workload.family == "lstm" || workload.family == "gru" ||
                                workload.family == "silero");
  if (quantized_paths) {
    load_engine(rnnc_int8, path, engine_options, 1, result.rnnc_int8);
    result.rnnc_int8.quantization = rnnc_int8.quantization_summary();
    if (!result.rnnc_int8.quantization.empty())
      log(progress + ": rnnc quantized: " + result.rnnc_int8.quantization);
    if (!workload.dqlstm_model.empty()) {
      const std::string dq_path =
          (std::filesystem::path(options.models_dir) / workload.dqlstm_model).string();
      load_engine(ort_dqlstm, dq_path, engine_options, 1, result.ort_dqlstm);
      load_engine(rnnc_dqlstm, dq_path, engine_options, 1, result.rnnc_dqlstm);
    }
    if (!stream.stateful()) {
      log(progress + ": quantizing with static activations (" +
          std::to_string(kCalibrationSamples) + " calibration inputs)");
      const std::string static_path = quantize_static(path, workload, result.rnnc_int8_static);
      if (!static_path.empty()) {
        const std::string summary = result.rnnc_int8_static.quantization;
        load_engine(rnnc_int8_static, static_path, engine_options, 1, result.rnnc_int8_static);
        result.rnnc_int8_static.quantization = summary;
        std::filesystem::remove(static_path);
        log(progress + ": rnnc static int8: " + summary);
      }
    }
  }
  if (result.ort.status != "ok") {
    result.status = "onnxruntime failed";
    result.detail = result.ort.error;
    log(progress + ": ONNX Runtime failed to load: " + result.ort.error);
    return result;
  }
  std::vector<TensorMap> expected = run_stream(ort, stream, steps, result.ort);
  if (result.ort.status != "ok") {
    result.status = "onnxruntime failed";
    result.detail = result.ort.error;
    log(progress + ": ONNX Runtime failed to run: " + result.ort.error);
    return result;
  }
  if (!options.dump_io_dir.empty() && workload.torch && threads == options.threads.front()) {
    stream.reset();
    dump_io(options, workload, stream.current(), expected.front());
  }
  if (result.rnnc.status == "ok") {
    std::vector<TensorMap> actual = run_stream(rnnc, stream, steps, result.rnnc);
    if (result.rnnc.status == "ok") {
      result.agreement_checked = true;
      result.agreement_ok = true;
      // Per output, the worst step.
      for (int step = 0; step < steps; ++step) {
        std::vector<OutputAgreement> at_step =
            compare_outputs(actual[step], expected[step], options.atol, options.rtol);
        if (result.agreement.empty()) {
          result.agreement = at_step;
        } else {
          for (size_t i = 0; i < at_step.size() && i < result.agreement.size(); ++i) {
            OutputAgreement& worst = result.agreement[i];
            worst.max_abs_diff = std::max(worst.max_abs_diff, at_step[i].max_abs_diff);
            worst.max_abs_expected = std::max(worst.max_abs_expected, at_step[i].max_abs_expected);
            if (!at_step[i].ok && worst.ok) {
              worst.ok = false;
              worst.problem = cat("step ", step, ": ", at_step[i].problem);
            }
          }
        }
      }
      for (const OutputAgreement& output : result.agreement)
        result.agreement_ok = result.agreement_ok && output.ok;
      log(progress + ": max|rnnc - ort|" + format_diff(result.agreement));
      if (!result.agreement_ok) {
        result.rnnc.status = "disagrees";
        char bound[96];
        std::snprintf(bound, sizeof(bound), "atol %g + rtol %g * |ort|", options.atol,
                      options.rtol);
        log(progress + ": DISAGREEMENT beyond " + bound);
      }
    }
  }
  if (result.rnnc.status == "unsupported" || result.rnnc.status == "failed")
    log(progress + ": rnnc " + result.rnnc.status + " (" + result.rnnc.error + ")");

  if (result.rnnc.status == "ok") result.rnnc_plan = plan_name(rnnc.plan());
  if (result.rnnc.status == "ok" && threads > 1) {
    // kAuto picks the plan per input shape from duels on a shape's first runs
    // (runtime/plan_chooser.h: 3 warm-ups per plan and 5 duels of 4 runs, 26 runs): enough runs
    // on this workload's inputs that the choice is made before the timing.
    stream.reset();
    rnnc.prepare(stream.current());
    for (int run = 0; run < 32; ++run) rnnc.execute();
    result.rnnc_plan = plan_name(rnnc.plan());
    const std::vector<Plan> candidates = rnnc.plan_candidates();
    if (candidates.size() == 2) {
      const Plan other_plan = rnnc.plan() == candidates[0] ? candidates[1] : candidates[0];
      rnnc_other = RnncEngine(other_plan);
      result.rnnc_other_plan = plan_name(other_plan);
      load_engine(rnnc_other, path, engine_options, 1, result.rnnc_other);
      if (result.rnnc_other.status == "ok") {
        run_stream(rnnc_other, stream, steps, result.rnnc_other);
      }
    }
  }
  // The quantized paths' error against float ONNX Runtime (no pass/fail: quantization changes
  // the numbers; the report compares the two quantized paths' errors).
  auto quantized_error = [&](Engine& engine, EngineResult& engine_result, double& error) {
    if (engine_result.status != "ok") return;
    std::vector<TensorMap> actual = run_stream(engine, stream, steps, engine_result);
    if (engine_result.status != "ok") return;
    error = 0;
    for (int step = 0; step < steps; ++step) {
      for (const OutputAgreement& output : compare_outputs(actual[step], expected[step], 1e30, 0)) {
        error = std::max(error, output.max_abs_diff);
      }
    }
    log(cat(progress, ": max|", engine_result.name, " - float ort| = ", error));
  };
  quantized_error(rnnc_int8, result.rnnc_int8, result.rnnc_int8_error);
  quantized_error(ort_dqlstm, result.ort_dqlstm, result.ort_dqlstm_error);
  quantized_error(rnnc_dqlstm, result.rnnc_dqlstm, result.rnnc_dqlstm_error);
  quantized_error(rnnc_int8_static, result.rnnc_int8_static, result.rnnc_int8_static_error);

  // Timing: alternating rounds, registered in the order they should run.
  log(progress + ": timing");
  const bool time_rnnc = result.rnnc.status == "ok";
  for (int round = 0; round < options.rounds; ++round) {
    std::vector<std::pair<std::string, std::pair<Engine*, EngineResult*>>> engines = {
        {"ort", {&ort, &result.ort}}};
    if (time_rnnc) engines.push_back({"rnnc", {&rnnc, &result.rnnc}});
    if (time_rnnc && result.rnnc_other.status == "ok") {
      engines.push_back({"rnnc_" + result.rnnc_other_plan, {&rnnc_other, &result.rnnc_other}});
    }
    if (result.rnnc_int8.status == "ok") engines.push_back({"rnnc_int8", {&rnnc_int8, &result.rnnc_int8}});
    if (result.rnnc_int8_static.status == "ok") {
      engines.push_back({"rnnc_int8_static", {&rnnc_int8_static, &result.rnnc_int8_static}});
    }
    if (result.ort_dqlstm.status == "ok") {
      engines.push_back({"ort_dqlstm", {&ort_dqlstm, &result.ort_dqlstm}});
    }
    if (result.rnnc_dqlstm.status == "ok") {
      engines.push_back({"rnnc_dqlstm", {&rnnc_dqlstm, &result.rnnc_dqlstm}});
    }
    for (auto& [short_name, engine] : engines) {
      const std::string name =
          cat(workload.name, "/", short_name, "/threads:", threads, "/round:", round + 1);
      Engine* engine_ptr = engine.first;
      EngineResult* engine_result = engine.second;
      InputStream* stream_ptr = &stream;
      const int64_t batch = workload.batch;
      benchmark::RegisterBenchmark(name.c_str(),
                                   [=](benchmark::State& state) {
                                     time_round(state, engine_ptr, stream_ptr, engine_result,
                                                batch);
                                   })
          ->Iterations(iterations_for(options, engine_result->estimate_us))
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::ClearRegisteredBenchmarks();
  return result;
}

Json engine_json(const EngineResult& engine, const Workload& workload) {
  Json json = Json::object();
  json.set("engine", engine.name);
  json.set("status", engine.status);
  if (!engine.error.empty()) json.set("error", engine.error);
  if (!engine.quantization.empty()) json.set("quantization", engine.quantization);
  if (!engine.load_ms.empty()) {
    Json load = Json::object();
    std::vector<double> sorted = engine.load_ms;
    std::sort(sorted.begin(), sorted.end());
    load.set("first", engine.load_ms.front());
    load.set("median", sorted[sorted.size() / 2]);
    load.set("min", sorted.front());
    Json all = Json::array();
    for (double ms : engine.load_ms) all.push(ms);
    load.set("all", all);
    json.set("load_ms", load);
    json.set("model_rss_mb", engine.model_rss / 1048576.0);
    json.set("peak_rss_mb", engine.peak_rss / 1048576.0);
  }
  if (!engine.samples_us.empty()) {
    const LatencyStats stats = latency_stats(engine.samples_us);
    Json latency = Json::object();
    latency.set("count", stats.count);
    latency.set("median", stats.median_us);
    latency.set("p90", stats.p90_us);
    latency.set("min", stats.min_us);
    latency.set("mean", stats.mean_us);
    latency.set("max", stats.max_us);
    json.set("latency_us", latency);
    json.set("throughput_seq_per_s", workload.batch * 1e6 / stats.median_us);
    Json rounds = Json::array();
    for (double us : engine.round_medians_us) rounds.push(us);
    json.set("round_medians_us", rounds);
  }
  return json;
}

Json result_json(const WorkloadResult& result, const Options& options) {
  const Workload& workload = *result.workload;
  Json json = Json::object();
  json.set("workload", workload.name);
  json.set("threads", result.threads);
  json.set("model", workload.model);
  json.set("family", workload.family);
  json.set("seq", workload.seq);
  json.set("batch", workload.batch);
  json.set("param_bytes", workload.param_bytes);
  json.set("stands_for", workload.stands_for);
  json.set("status", result.status);
  if (!result.detail.empty()) json.set("detail", result.detail);
  Json agreement = Json::object();
  agreement.set("checked", result.agreement_checked);
  agreement.set("ok", result.agreement_ok);
  agreement.set("atol", options.atol);
  agreement.set("rtol", options.rtol);
  agreement.set("runs_compared", result.agreement_steps);
  Json outputs = Json::array();
  for (const OutputAgreement& output : result.agreement) {
    Json item = Json::object();
    item.set("name", output.name);
    item.set("max_abs_diff", output.max_abs_diff);
    item.set("max_abs_value", output.max_abs_expected);
    item.set("ok", output.ok);
    if (!output.problem.empty()) item.set("problem", output.problem);
    outputs.push(item);
  }
  agreement.set("outputs", outputs);
  json.set("agreement", agreement);
  Json cost = Json::object();
  if (result.cost) {
    cost.set("macs", result.cost->macs);
    cost.set("weight_bytes", result.cost->weight_bytes);
    Json nodes = Json::array();
    for (const NodeCost& node : result.cost->nodes) {
      Json item = Json::object();
      item.set("node", node.node);
      item.set("op", node.op);
      item.set("macs", node.macs);
      item.set("weight_bytes", node.weight_bytes);
      nodes.push(item);
    }
    cost.set("nodes", nodes);
    Json unknown = Json::array();
    for (const std::string& name : result.cost->unknown) unknown.push(Json(name));
    cost.set("unknown", unknown);
  } else {
    cost.set("error", result.cost_error);
  }
  json.set("cost", cost);
  json.set("onnxruntime", engine_json(result.ort, workload));
  json.set("rnnc", engine_json(result.rnnc, workload));
  json.set("rnnc_plan", result.rnnc_plan);
  if (result.rnnc_other.status != "not run") {
    json.set("rnnc_other", engine_json(result.rnnc_other, workload));
    json.set("rnnc_other_plan", result.rnnc_other_plan);
  }
  if (result.rnnc_int8.status != "not run") {
    json.set("rnnc_int8", engine_json(result.rnnc_int8, workload));
    json.set("rnnc_int8_max_abs_error", result.rnnc_int8_error);
  }
  if (result.rnnc_int8_static.status != "not run") {
    json.set("rnnc_int8_static", engine_json(result.rnnc_int8_static, workload));
    json.set("rnnc_int8_static_max_abs_error", result.rnnc_int8_static_error);
  }
  if (result.rnnc_dqlstm.status != "not run") {
    json.set("rnnc_dqlstm", engine_json(result.rnnc_dqlstm, workload));
    json.set("rnnc_dqlstm_max_abs_error", result.rnnc_dqlstm_error);
  }
  if (result.ort_dqlstm.status != "not run") {
    json.set("ort_dqlstm", engine_json(result.ort_dqlstm, workload));
    json.set("ort_dqlstm_max_abs_error", result.ort_dqlstm_error);
  }
  if (!result.ort.samples_us.empty() && !result.rnnc.samples_us.empty()) {
    const LatencyStats ort = latency_stats(result.ort.samples_us);
    const LatencyStats rnnc = latency_stats(result.rnnc.samples_us);
    Json ratio = Json::object();
    ratio.set("median", rnnc.median_us / ort.median_us);
    ratio.set("min", rnnc.min_us / ort.min_us);
    json.set("ratio_rnnc_over_ort", ratio);
  }
  return json;
}

Json bounds_json(const MachineBounds& bounds, const BoundsConfig& config) {
  auto rates = [](Json& json, const std::string& unit, const RateStats& stats) {
    json.set(unit + "_median", stats.median);
    json.set(unit + "_best", stats.best);
    json.set(unit + "_worst", stats.worst);
  };
  Json json = Json::object();
  json.set("target", bounds.target);
  json.set("vector_lanes", bounds.vector_lanes);
  json.set("accumulators", bounds.accumulators);
  json.set("repetitions", bounds.repetitions);
  json.set("seconds_per_call", config.seconds_per_call);
  Json stream = Json::array();
  for (const StreamBandwidth& m : bounds.stream) {
    Json item = Json::object();
    item.set("bytes", m.bytes);
    item.set("level", m.level);
    item.set("passes_per_call", m.passes_per_call);
    rates(item, "gbps", m.gbps);
    stream.push(item);
  }
  json.set("stream", stream);
  Json fma = Json::object();
  fma.set("fma_per_chain_per_call", bounds.fma_per_call);
  rates(fma, "gflops", bounds.fma_gflops);
  json.set("fma", fma);
  if (!bounds.vnni_instruction.empty()) {
    Json vnni = Json::object();
    vnni.set("instruction", bounds.vnni_instruction);
    vnni.set("per_accumulator_per_call", bounds.vnni_per_call);
    rates(vnni, "gops", bounds.vnni_gops);
    json.set("vnni", vnni);
  }
  return json;
}

std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// The L3 this CPU shares, as the kernel sees it (sysfs: "32768K"); in a VM CPUID may describe
// the host's whole L3 instead. 0 when neither says.
int64_t l3_bytes() {
  const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index3/";
  std::ifstream level_file(dir + "level"), size_file(dir + "size");
  int level = 0;
  int64_t size = 0;
  char unit = 0;
  if (level_file >> level && level == 3 && size_file >> size >> unit) {
    return unit == 'K' ? size << 10 : unit == 'M' ? size << 20 : size;
  }
  return std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE));
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

void print_summary(const std::vector<WorkloadResult>& results) {
  std::printf(
      "\nSummary (latency per run in us: median / p90 / min; ratio = rnnc / ONNX Runtime "
      "median)\n");
  std::printf("  rnnc path measured: %s\n", RnncEngine().name().c_str());
  std::printf("  %-20s %3s %26s %26s %10s %10s  %s\n", "workload", "thr", "ONNX Runtime", "rnnc",
              "rnnc/ORT", "max|diff|", "rnnc status");
  for (const WorkloadResult& result : results) {
    auto cell = [](const EngineResult& engine) {
      if (engine.samples_us.empty()) return std::string("-");
      const LatencyStats stats = latency_stats(engine.samples_us);
      char text[64];
      std::snprintf(text, sizeof(text), "%.1f / %.1f / %.1f", stats.median_us, stats.p90_us,
                    stats.min_us);
      return std::string(text);
    };
    std::string ratio = "-";
    if (!result.ort.samples_us.empty() && !result.rnnc.samples_us.empty()) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.2f",
                    latency_stats(result.rnnc.samples_us).median_us /
                        latency_stats(result.ort.samples_us).median_us);
      ratio = text;
    }
    double max_diff = 0;
    for (const OutputAgreement& output : result.agreement)
      max_diff = std::max(max_diff, output.max_abs_diff);
    char diff[32];
    std::snprintf(diff, sizeof(diff), "%.2e", max_diff);
    std::string status = result.status != "ok" ? result.status : result.rnnc.status;
    if (result.rnnc.status == "unsupported" || result.rnnc.status == "failed")
      status += " (" + result.rnnc.error.substr(0, 100) + ")";
    std::printf("  %-20s %3d %26s %26s %10s %10s  %s\n", result.workload->name.c_str(),
                result.threads, cell(result.ort).c_str(), cell(result.rnnc).c_str(), ratio.c_str(),
                result.agreement_checked ? diff : "-", status.c_str());
    if (!result.rnnc_other.samples_us.empty() && !result.rnnc.samples_us.empty()) {
      const bool auto_sequential = result.rnnc_plan == "sequential";
      const double sequential = latency_stats((auto_sequential ? result.rnnc : result.rnnc_other)
                                                  .samples_us).median_us;
      const double overlapping = latency_stats((auto_sequential ? result.rnnc_other : result.rnnc)
                                                   .samples_us).median_us;
      std::printf("  %-20s %3s %26s %26s %10.2f  (auto plan: %s; %s plan speedup over "
                  "sequential)\n",
                  "", "", ("rnnc " + result.rnnc_other_plan + " plan").c_str(),
                  cell(result.rnnc_other).c_str(), sequential / overlapping,
                  result.rnnc_plan.c_str(),
                  auto_sequential ? result.rnnc_other_plan.c_str() : result.rnnc_plan.c_str());
    }
  }
}

int bench_main(int argc, char** argv) {
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  benchmark::Initialize(&argc, argv);  // takes the --benchmark_* flags out of argv
  // A fixed mmap threshold (glibc otherwise raises it after large frees, up to 32 MiB) returns a
  // freed model's weights to the kernel, so the next workload's RSS delta is its own.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  const Options options = parse_options(argc, argv, command);

  const std::string manifest = (std::filesystem::path(options.models_dir) / "workloads.json");
  std::vector<Workload> workloads = read_manifest(manifest);
  if (!options.filter.empty()) {
    const std::regex pattern(options.filter);
    std::vector<Workload> selected;
    for (const Workload& workload : workloads)
      if (std::regex_search(workload.name, pattern)) selected.push_back(workload);
    workloads = selected;
  }
  if (workloads.empty()) usage_error("no workload in " + manifest + " matches the filter");

  const std::string ort_version = OrtEngine::library_version();
  log("ONNX Runtime library version " + ort_version + "; rnnc path: " + RnncEngine().name());
  log(cat("machine: ", cpu_model(), ", ", std::thread::hardware_concurrency(), " cores, ",
          kernel_release()));
  const KernelTarget kernel_target = resolve_kernel_target("");
  log(cat("rnnc kernel target: ", kernel_target.name, " (", kernel_target.features.to_string(),
          "; tuned for ", kernel_target.tune_cpu, "), schedule class: ",
          kernel_target.schedule_class()));
  const bool peak_rss_supported = reset_peak_rss();
  const std::string load_at_start = load_average();

  // Measured before any engine is loaded, so no engine's threads or memory are around yet.
  std::optional<Json> bounds;
  if (options.bounds != Options::Bounds::kOff) {
    const BoundsConfig config = options.bounds == Options::Bounds::kQuick ? quick_bounds_config()
                                                                          : default_bounds_config();
    bounds = bounds_json(measure_machine_bounds(config, log), config);
  }

  ProgressReporter reporter;
  std::vector<WorkloadResult> results;
  for (int threads : options.threads) {
    for (size_t i = 0; i < workloads.size(); ++i) {
      const std::string progress =
          cat("threads ", threads, " [", i + 1, "/", workloads.size(), "] ", workloads[i].name);
      results.push_back(bench_workload(options, workloads[i], threads, reporter, progress));
    }
  }
  std::printf("\nONNX Runtime library version: %s\n", ort_version.c_str());
  print_summary(results);

  int failures = 0;
  for (const WorkloadResult& result : results) {
    if (result.status == "onnxruntime failed") ++failures;
    if (result.agreement_checked && !result.agreement_ok) ++failures;
  }

  if (!options.json_path.empty()) {
    Json root = Json::object();
    Json meta = Json::object();
    meta.set("tool", "rnnc_bench");
    meta.set("command", options.command);
    meta.set("date_utc", utc_now());
    meta.set("onnxruntime_version", ort_version);
    meta.set("onnxruntime_settings",
             "graph optimizations ORT_ENABLE_ALL, intra-op threads = threads, inter-op threads 1, "
             "sequential execution, denormals flushed to zero (session.set_denormal_as_zero, as "
             "rnnc's default), inputs bound through IoBinding; at 2+ threads a 150 ms pause "
             "after each series of its runs, past its idle workers' spin");
    meta.set("rnnc_engine", RnncEngine().name());
    meta.set("cpu", cpu_model());
    // The report tells AMD's Zen generations apart by these (benchmarks/report.py cpu_kind).
    meta.set("cpu_vendor", host_cpu().vendor);
    meta.set("cpu_family", static_cast<int64_t>(host_cpu().family));
    meta.set("cpu_model_number", static_cast<int64_t>(host_cpu().model));
    meta.set("kernel_target", cat(kernel_target.name, " (", kernel_target.features.to_string(),
                                  "; tuned for ", kernel_target.tune_cpu, ")"));
    meta.set("l2_bytes_per_core", host_cpu().l2_bytes_per_core);
    // The weight-streaming floors price bytes by the cache level they fit (benchmarks/report.py).
    meta.set("l3_bytes", l3_bytes());
    meta.set("schedule_class", kernel_target.schedule_class());
    meta.set("cores", static_cast<int64_t>(std::thread::hardware_concurrency()));
    meta.set("kernel", kernel_release());
    meta.set("loadavg_start", load_at_start);
    meta.set("loadavg_end", load_average());
    Json threads = Json::array();
    for (int n : options.threads) threads.push(n);
    meta.set("threads", threads);
    meta.set("budget_s_per_engine", options.budget_s);
    meta.set("rounds", options.rounds);
    meta.set("atol", options.atol);
    meta.set("rtol", options.rtol);
    meta.set("peak_rss_resettable", peak_rss_supported);
    meta.set("models_dir", options.models_dir);
    meta.set("smoke", options.smoke);
    root.set("meta", meta);
    if (bounds) root.set("machine_bounds", *bounds);
    Json list = Json::array();
    for (const WorkloadResult& result : results) list.push(result_json(result, options));
    root.set("results", list);
    std::ofstream out(options.json_path);
    out << root.dump();
    if (!out) {
      std::cerr << "rnnc_bench: cannot write " << options.json_path << "\n";
      return 1;
    }
    log("wrote " + options.json_path);
  }
  if (failures) {
    std::fprintf(stderr,
                 "\nrnnc_bench: FAILED: %d workload run(s) disagree with ONNX Runtime beyond the "
                 "tolerance or ONNX Runtime failed (see above)\n",
                 failures);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace rnnc::bench

int main(int argc, char** argv) {
  try {
    return rnnc::bench::bench_main(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rnnc_bench: %s\n", error.what());
    return 1;
  }
}
