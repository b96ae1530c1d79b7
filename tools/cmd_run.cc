// rnnc run: runs a model on inputs from files (or random ones) and prints or writes its outputs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

#include "ir/npy.h"
#include "ir/onnx_import.h"
#include "ir/reference/evaluator.h"
#include "rnnc/rnnc.h"
#include "tools/commands.h"

namespace rnnc::cli {

namespace {

Tensor random_tensor(const Value& input, const std::map<std::string, int64_t>& dims,
                     std::mt19937_64& rng) {
  if (!input.type.shape) {
    raise_invalid_input(cat("input '", input.name(), "' has unknown rank: give it with --input"));
  }
  std::vector<int64_t> shape;
  for (size_t k = 0; k < input.type.shape->size(); ++k) {
    const Dim& dim = (*input.type.shape)[k];
    auto value = dim.evaluate(dims);
    if (!value) {
      std::string names;
      for (const auto& s : dim.symbols()) names += " --dim " + s + "=N";
      raise_invalid_input(cat("input '", input.name(), "' dim ", k, " is '", dim.to_string(), "': ",
                              names.empty() ? "give the input with --input" : "bind it with" + names));
    }
    shape.push_back(*value);
  }
  Tensor tensor(input.type.dtype, shape);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    if (is_floating(tensor.dtype())) tensor.set_double(i, uniform(rng));
    else if (tensor.dtype() == DType::kBool) tensor.set_double(i, small(rng) % 2);
    else if (tensor.dtype() == DType::kString) tensor.strings()[static_cast<size_t>(i)] = "";
    else tensor.set_double(i, small(rng));
  }
  return tensor;
}

// Sets environment variables for the lifetime of the object (a compare model's load) and puts
// back what was there before.
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(const std::vector<std::pair<std::string, std::string>>& settings) {
    for (const auto& [name, value] : settings) {
      const char* old = std::getenv(name.c_str());
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnvironment() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// `value` with `decimals` digits after the point.
std::string fixed(double value, int decimals) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(decimals);
  out << value;
  return out.str();
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The largest |b - a| over the elements of two runs' float32 outputs (same names and shapes); NaN
// when either has a NaN where the other does not.
double max_float_difference(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].tensor.type != ElementType::kFloat32 || a[i].tensor.shape != b[i].tensor.shape) {
      continue;
    }
    const auto* x = static_cast<const float*>(a[i].tensor.data);
    const auto* y = static_cast<const float*>(b[i].tensor.data);
    for (int64_t k = 0; k < a[i].tensor.element_count(); ++k) {
      if (std::isnan(x[k]) && std::isnan(y[k])) continue;
      const double d = std::fabs(static_cast<double>(y[k]) - static_cast<double>(x[k]));
      if (std::isnan(d)) return d;
      worst = std::max(worst, d);
    }
  }
  return worst;
}

std::string file_name_for(const std::string& value_name) {
  std::string out = value_name;
  for (char& c : out) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  }
  return out;
}

void print_output(const std::string& name, const Tensor& tensor) {
  std::cout << name << ": " << tensor_summary(tensor, 8) << "\n";
  if (is_floating(tensor.dtype()) && tensor.numel() > 0) {
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      double v = tensor.get_double(i);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    std::cout << "  min " << lo << "  max " << hi << "  mean " << sum / tensor.numel() << "\n";
  }
}

int run_run(const Parsed& args) {
  if (args.positional.size() != 1) raise_invalid_input("expects one MODEL argument");
  // The imported graph: its inputs size the random inputs, and --reference runs it. The compiled
  // path loads the file itself and this copy is released first (it holds every weight).
  std::unique_ptr<Model> model = import_onnx_file(args.positional[0]);
  std::vector<std::string> output_names;
  std::vector<TensorType> output_types;
  for (const Value* output : model->graph->outputs()) {
    output_names.push_back(output->name());
    output_types.push_back(output->type);
  }

  std::map<std::string, Tensor> inputs;
  for (const auto& text : args.all("input")) {
    auto [name, path] = split_assignment(text, "input");
    if (inputs.count(name)) raise_invalid_input(cat("input '", name, "' is given twice"));
    // A sequence or optional input of the model is read from its SequenceProto / OptionalProto.
    const Value* input = model->graph->find_local_value(name);
    bool other_kind = input && input->is_graph_input() && !input->type.is_tensor();
    inputs[name] = other_kind ? read_value_pb(path, input->type) : read_tensor_file(path);
  }
  std::map<std::string, int64_t> dims = parse_dims(args);
  if (args.has("random")) {
    std::mt19937_64 rng(static_cast<uint64_t>(args.get_int("seed", 0)));
    for (const Value* input : model->graph->inputs()) {
      if (!inputs.count(input->name()) && !input->is_constant()) {
        inputs[input->name()] = random_tensor(*input, dims, rng);
      }
    }
  }

  // --dump-dir and --reference run the reference evaluator on the graph as imported, so dumped
  // intermediates keep the model's own value names; otherwise the model is compiled.
  std::string dump_dir = args.get("dump-dir");
  bool reference = args.has("reference") || !dump_dir.empty();
  // The compiled path runs through the public API (runtime/), as a service would.
  std::shared_ptr<const CompiledModel> compiled;
  std::optional<Session> session;
  std::vector<NamedTensor> named_inputs;
  std::string path_name = "reference evaluator";
  ModelOptions options;
  if (!reference) {
    options.target = args.get("target");
    options.cache_dir = args.get("cache-dir");
    options.threads = static_cast<int>(args.get_int("threads", 1));
    options.plan = parse_plan(args.get("plan", "auto"));
    options.quantization_config = args.get("quantize");
    options.quantization_guard = !args.has("no-guard");
    options.quantization_max_error = parse_max_error(args);
    options.quantization_dims = dims;  // the guard's generated inputs take the run's sizes
    options.count_overflow = args.has("count-overflow");
    options.expose_recurrent_state = false;  // one run: the model's own outputs only
    options.fixed_inputs = parse_fixed_inputs(args);
    for (const auto& [name, values] : options.fixed_inputs) {
      inputs.erase(name);  // compiled in: no longer an input
    }
    model.reset();
    compiled = CompiledModel::load(args.positional[0], options);
    if (!options.quantization_config.empty()) {
      std::cerr << "rnnc run: quantized: " << compiled->quantization_summary() << "\n";
    }
    session = compiled->new_session();
    session->set_profiling(args.has("profile"));
    for (auto& [name, tensor] : inputs) {
      if (tensor.dtype() == DType::kString) raise_unsupported(cat("string input '", name, "'"));
      named_inputs.push_back({name, {static_cast<ElementType>(static_cast<int32_t>(tensor.dtype())),
                                     tensor.shape(), tensor.raw_data()}});
    }
  }
  // The session's outputs stay valid until its next run: copied once they are printed.
  auto copy_outputs = [&](const std::vector<NamedTensor>& named) {
    std::vector<Tensor> outputs;
    for (const NamedTensor& out : named) {
      outputs.push_back(Tensor::borrow(static_cast<DType>(out.tensor.type), out.tensor.shape,
                                       out.tensor.data)
                            .clone());
    }
    return outputs;
  };
  auto run_once = [&](const NodeObserver& observer) {
    if (!session) return evaluate(*model->graph, inputs, observer);
    return copy_outputs(session->run(named_inputs));
  };

  NodeObserver observer;
  std::ofstream dump_index;
  if (!dump_dir.empty()) {
    std::filesystem::create_directories(dump_dir);
    dump_index.open(dump_dir + "/index.txt");
    if (!dump_index) raise(ErrorKind::kIo, cat("cannot write '", dump_dir, "/index.txt'"));
    observer = [&](const Node& node, const std::vector<Tensor>& outputs) {
      for (size_t i = 0; i < outputs.size(); ++i) {
        const Value* value = node.output(i);
        if (!value) continue;
        std::string file = file_name_for(value->name()) + ".pb";
        write_value_pb(dump_dir + "/" + file, outputs[i], value->type, value->name());
        dump_index << value->name() << "\t" << file << "\t" << node.describe() << "\t"
                   << tensor_summary(outputs[i], 4) << "\n";
      }
    };
  }

  std::vector<Tensor> outputs = run_once(observer);
  int64_t repeat = args.get_int("repeat", 0);
  if (repeat < 0) raise_invalid_input("--repeat must be >= 0");
  // The warm-up run compiled its shape's specialization, if the model has one: the timed runs
  // measure the program a long-running stream gets.
  std::vector<double> times_us;
  // A timed run is the session's run alone (the reference evaluator's returns its outputs).
  const std::vector<NamedTensor>* last = nullptr;
  for (int64_t r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (session) {
      last = &session->run(named_inputs);
    } else {
      outputs = run_once(nullptr);
    }
    auto stop = std::chrono::steady_clock::now();
    times_us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
  }

  // --compare-env: the model loaded as A (the options above) and as B (the same, with the given
  // environment variables set), timed against each other in one process: each round loads both
  // afresh and runs them `repeat` times each in alternation (the order swapped every pair), so
  // both share the machine's load at every moment. Separate processes on a shared host differ by
  // more than most schedule changes. Within one process, where a load's weights land moves its
  // speed too, and a second load of the same model ran faster than the first
  // (docs/measurements.md, the controls): the rounds load A first and B first in turn, and the
  // default count is even.
  const std::vector<std::string> compare_env = args.all("compare-env");
  if (!compare_env.empty()) {
    if (!session) raise_invalid_input("--compare-env needs the compiled path (not --reference)");
    if (repeat < 1) raise_invalid_input("--compare-env needs --repeat N (the runs per round)");
    const int64_t rounds = args.get_int("rounds", 6);
    if (rounds < 1) raise_invalid_input("--rounds must be >= 1");
    std::vector<std::pair<std::string, std::string>> settings;
    std::string label;
    for (const std::string& text : compare_env) {
      settings.push_back(split_assignment(text, "compare-env"));
      label += (label.empty() ? "" : " ") + text;
    }
    ModelOptions options_b = options;
    if (args.has("compare-cache-dir")) options_b.cache_dir = args.get("compare-cache-dir");
    // A loaded model and its session, after one warm-up run. B's variables stay set through that
    // run, which compiles the shape's specialization for models that have one
    // (runtime/shape_specializer.h).
    struct Loaded {
      std::shared_ptr<const CompiledModel> model;
      std::optional<Session> session;
    };
    auto load = [&](bool b) {
      std::optional<ScopedEnvironment> environment;
      if (b) environment.emplace(settings);
      Loaded loaded;
      loaded.model = CompiledModel::load(args.positional[0], b ? options_b : options);
      loaded.session = loaded.model->new_session();
      loaded.session->run(named_inputs);
      return loaded;
    };
    std::vector<double> ratios;
    double difference = 0;
    for (int64_t round = 0; round < rounds; ++round) {
      const bool a_first = round % 2 == 0;
      Loaded first = load(!a_first);
      Loaded second = load(a_first);
      Session& a_session = *(a_first ? first : second).session;
      Session& b_session = *(a_first ? second : first).session;
      std::vector<double> a_us, b_us;
      for (int64_t r = 0; r < repeat; ++r) {
        for (int turn = 0; turn < 2; ++turn) {
          const bool a_turn = (turn == 0) == (r % 2 == 0);
          auto start = std::chrono::steady_clock::now();
          (a_turn ? a_session : b_session).run(named_inputs);
          auto stop = std::chrono::steady_clock::now();
          (a_turn ? a_us : b_us)
              .push_back(std::chrono::duration<double, std::micro>(stop - start).count());
        }
      }
      const double a = median_of(a_us), b = median_of(b_us);
      ratios.push_back(b / a);
      const std::vector<NamedTensor>& a_outputs = a_session.run(named_inputs);
      const double round_difference = max_float_difference(a_outputs, b_session.run(named_inputs));
      if (!(round_difference <= difference)) difference = round_difference;
      std::cout << "compare round " << round + 1 << " (" << (a_first ? "A" : "B")
                << " loaded first): A median " << fixed(a, 1) << " us, B median " << fixed(b, 1)
                << " us, B/A " << fixed(b / a, 3) << "\n";
    }
    std::cout << "compare: B (" << label << ") against A, " << rounds << " rounds of " << repeat
              << " runs each: B/A median " << fixed(median_of(ratios), 3) << " ("
              << fixed(*std::min_element(ratios.begin(), ratios.end()), 3) << ".."
              << fixed(*std::max_element(ratios.begin(), ratios.end()), 3)
              << ") per round; max |B - A| over the float outputs " << difference << "\n";
  }
  if (last) outputs = copy_outputs(*last);

  std::string output_dir = args.get("output-dir");
  if (!output_dir.empty()) std::filesystem::create_directories(output_dir);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = output_names[i];
    if (!output_dir.empty()) {
      std::string path = output_dir + "/" + file_name_for(name) + ".pb";
      write_value_pb(path, outputs[i], output_types[i], name);
      std::cout << "wrote " << path << "\n";
    } else {
      print_output(name, outputs[i]);
    }
  }
  if (session && args.has("profile")) {
    std::cout << session->profile_report();
    // The shapes given programs of their own (runtime/shape_specializer.h), from describe().
    std::istringstream lines(compiled->describe());
    for (std::string line; std::getline(lines, line);) {
      if (line.find("specialized for") != std::string::npos) std::cout << line << "\n";
    }
  }
  if (compiled && args.has("count-overflow")) std::cout << compiled->overflow_report();
  if (session) {
    path_name = cat("compiled, ", plan_name(session->last_plan()), " plan",
                    compiled->plan() == Plan::kAuto ? " (the last run's, under kAuto)" : "", ", ",
                    compiled->threads(), " thread(s)");
  }
  if (!times_us.empty()) {
    std::cout << "time per run (" << path_name << ", " << times_us.size()
              << " runs after 1 warm-up): median " << median_of(times_us) << " us, min "
              << *std::min_element(times_us.begin(), times_us.end()) << " us\n";
  }
  return 0;
}

}  // namespace

const Command kRunCommand{
    "run",
    "rnnc run MODEL [--input NAME=FILE]... [--random] [--dim NAME=N]... [options]",
    "Run a model and print its outputs (summary and first values) or write them as .pb files.\n"
    "Input files are ONNX TensorProto .pb or NumPy .npy (by extension).",
    {
        {"input", "NAME=FILE", "an input tensor from a .pb or .npy file (repeatable)"},
        {"random", "", "fill inputs not given with random values (floats in [-1, 1))"},
        {"dim", "NAME=N", "bind a symbolic dim for --random, e.g. --dim seq=17 (repeatable)"},
        {"seed", "N", "random seed for --random (default 0)"},
        {"output-dir", "DIR", "write each output as DIR/<output name>.pb instead of printing"},
        {"repeat", "N", "run N more times after the first and print median and min time"},
        {"threads", "N", "compiled path: executor threads (default 1)"},
        {"profile", "", "compiled path: print each block's time per run, slowest first"},
        {"fix", "NAME=V[,V...]",
         "compiled path: compile an integer input in as a constant, e.g. "
         "--fix sr=16000 (repeatable)"},
        {"plan", "P", "compiled path: auto (default), sequential, parallel or pipeline"},
        {"quantize", "CONFIG",
         "compiled path: quantize at load: 'default' (LSTM/GRU/RNN and MatMul/Gemm with constant "
         "weights int8, dynamic u8 activations) or a JSON config (docs/quant.md); the guard keeps "
         "nodes that break the error budget wider, and one line says what it chose"},
        {"max-error", "F",
         "with --quantize: the error budget, each float output's max error as a fraction of its "
         "range over the guard's inputs (default 0.02)"},
        {"no-guard", "", "with --quantize: quantize as configured without measuring the error"},
        {"count-overflow", "",
         "compiled path: quantized kernels count activations clamped to their integer range and "
         "sums beyond the declared accumulation width, printed per node after the runs"},
        {"dump-dir", "DIR",
         "write every intermediate tensor of the imported graph to DIR (<value>.pb + index.txt; "
         "runs the reference evaluator)"},
        {"reference", "", "run the reference evaluator instead of the compiled model"},
        {"compare-env", "VAR=VALUE",
         "compiled path, with --repeat N: compare two loads of the model in this process, A as "
         "is and B with this environment variable set (repeatable) while it loads and runs once, "
         "e.g. RNNC_TARGET=x86-64-v3 or RNNC_XW_CHUNK_KIB=0 (variables read at every run, such "
         "as RNNC_PIPELINE_CHUNK, act on neither); each round loads both afresh and alternates "
         "their runs; prints B/A per round, the median and range, and the largest output "
         "difference. Run a control first: RNNC_UNUSED_CONTROL=1"},
        {"rounds", "N",
         "with --compare-env: rounds of N = --repeat runs of each, A and B loaded afresh for each "
         "(default 6)"},
        {"compare-cache-dir", "DIR",
         "with --compare-env: B's kernel cache (default A's; a variable the cache key does not "
         "see, such as a throwaway switch in the lowering, needs a directory of its own)"},
        {"target", "T", kTargetHelp},
        {"cache-dir", "DIR",
         "compiled kernel cache (default $RNNC_CACHE_DIR, else ~/.cache/rnnc; docs/install.md)"},
    },
    run_run,
};

}  // namespace rnnc::cli
