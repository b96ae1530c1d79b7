// The public C++ API (rnnc/rnnc.h) over Program (lowering/) and the Executor.
//
// A run's input checks are compiled at load time into per-input tables (element type, rank, each
// dim a number or a symbol index), so checking a run allocates nothing; only a failing check
// builds its message.
#include "rnnc/rnnc.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <malloc.h>
#include <sstream>

#include "compiler/compile.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "lowering/cache_location.h"
#include "lowering/halide_cache.h"
#include "lowering/program.h"
#include "quant/guard.h"
#include "quant/quantize_model.h"
#include "runtime/executor.h"
#include "runtime/halide_tbb.h"
#include "runtime/input_checker.h"
#include "runtime/plan_chooser.h"
#include "runtime/shape_specializer.h"

#define RNNC_INTERNAL __attribute__((visibility("hidden")))

namespace rnnc {

// ---- small public helpers ---------------------------------------------------------------------

namespace {

std::optional<DType> to_dtype(ElementType type) {
  std::optional<DType> dtype = dtype_from_onnx(static_cast<int32_t>(type));
  if (!dtype || *dtype == DType::kString || dtype_size(*dtype) == 0) return std::nullopt;
  return dtype;
}


}  // namespace

size_t element_size(ElementType type) {
  std::optional<DType> dtype = to_dtype(type);
  return dtype ? dtype_size(*dtype) : 0;
}

const char* element_type_name(ElementType type) {
  std::optional<DType> dtype = to_dtype(type);
  return dtype ? dtype_onnx_name(*dtype) : "unknown";
}

int64_t TensorRef::element_count() const {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

std::string TensorInfo::to_string() const {
  std::string text = name + ": " + element_type_name(type) + "[";
  for (size_t k = 0; k < dims.size(); ++k) text += (k ? ", " : "") + dims[k];
  return text + "]";
}

const char* plan_name(Plan plan) {
  switch (plan) {
    case Plan::kAuto: return "auto";
    case Plan::kSequential: return "sequential";
    case Plan::kParallel: return "parallel";
    case Plan::kPipeline: return "pipeline";
  }
  return "?";
}

Plan parse_plan(const std::string& name) {
  for (Plan plan : {Plan::kAuto, Plan::kSequential,
                             Plan::kParallel, Plan::kPipeline}) {
    if (name == plan_name(plan)) return plan;
  }
  raise_invalid_input(
      cat("unknown execution plan '", name, "' (expected auto, sequential, parallel or pipeline)"));
}

// ---- CompiledModel ------------------------------------------------------------------------------------

// The Impl classes are declared in the public header, so they would take its default visibility:
// hidden here, they stay out of librnnc.so's exported symbols.
struct RNNC_INTERNAL CompiledModel::Impl {
  // One graph input as a run checks it.
  struct InputCheck {
    std::string name;
    DType dtype = DType::kFloat32;
    int64_t rank = -1;            // -1: any
    std::vector<int64_t> known;   // per dim: its size, or -1
    std::vector<int> symbol;      // per dim: index into symbols, or -1
    std::string type_text;        // "f32[seq, batch, 128]"
    bool required = true;         // no constant default
    int state = -1;               // index into state_pairs when a session feeds it
  };

  std::unique_ptr<Program> program;
  // Programs for the dims runs bind (declared after `program`, which it reads: destroyed first,
  // waiting for a compile in flight); null when the model has nothing to specialize.
  std::unique_ptr<ShapeSpecializer> specializer;
  // One executor per plan a run may use: [0] the plan, or with kAuto and threads > 1
  // [PlanChooser::kSequential] and [PlanChooser::kOverlapping], chosen per shape by `chooser`.
  std::vector<std::unique_ptr<Executor>> executors;
  std::unique_ptr<PlanChooser> chooser;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<InputCheck> checks;  // per graph input (graph order)
  // Per graph output, its shape as the generic program's types state it: rank (-1 unknown),
  // per dim its size or -1, and its symbol when it is one of the inputs' symbols (else -1).
  struct OutputShape {
    int64_t rank = -1;
    std::vector<int64_t> known;
    std::vector<int> symbol;
  };
  std::vector<OutputShape> output_shapes;
  std::vector<std::string> symbols;
  // Required rank-0 integer graph inputs (a sample rate, a mode): part of a specialization's key.
  std::vector<size_t> scalar_inputs;
  std::vector<std::pair<std::string, std::string>> state;  // exposed (output, input) pairs
  Plan plan = Plan::kSequential;                           // kAuto: per shape (chooser)
  std::string plan_note;                                   // how the plan was chosen
  int threads = 1;
  std::string quantization_summary, quantization_report;  // quantized at load

  int find_input(const std::string& name) const {
    for (size_t i = 0; i < checks.size(); ++i) {
      if (checks[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
  // A shape specialization's key for a run: the bound dims (per symbol its size, -1 unbound),
  // then the scalar integer inputs' values (0 for one the run leaves out).
  void specialization_key(const std::vector<int64_t>& bound,
                          const std::vector<NamedTensor>& run_inputs,
                          std::vector<int64_t>& key) const {
    key.assign(bound.begin(), bound.end());
    for (size_t index : scalar_inputs) {
      int64_t value = 0;
      for (const NamedTensor& input : run_inputs) {
        if (input.name != checks[index].name) continue;
        value = input.tensor.type == ElementType::kInt64
                    ? *static_cast<const int64_t*>(input.tensor.data)
                    : *static_cast<const int32_t*>(input.tensor.data);
      }
      key.push_back(value);
    }
  }
  int find_output(const std::string& name) const {
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
  std::string input_names() const {
    std::string names;
    for (const InputCheck& check : checks) {
      if (check.required || check.state >= 0) names += (names.empty() ? "'" : ", '") + check.name + "'";
    }
    return names;
  }
};

namespace {

TensorInfo info_of(const Value& value) {
  TensorInfo info;
  info.name = value.name();
  info.type = static_cast<ElementType>(static_cast<int32_t>(value.type.dtype));
  if (value.type.shape) {
    for (const Dim& dim : *value.type.shape) info.dims.push_back(dim.to_string());
  }
  return info;
}

Tensor fixed_input_tensor(const Value& input, const std::vector<int64_t>& values) {
  if (input.type.dtype == DType::kString || dtype_size(input.type.dtype) == 0) {
    raise_invalid_input(cat("fixed input '", input.name(), "' has element type ",
                            dtype_onnx_name(input.type.dtype), ", which cannot be fixed"));
  }
  const bool scalar = input.type.rank() == 0;
  if (scalar && values.size() != 1) {
    raise_invalid_input(cat("fixed input '", input.name(), "' is a scalar, got ", values.size(),
                            " values"));
  }
  Tensor tensor(input.type.dtype, scalar ? std::vector<int64_t>{}
                                         : std::vector<int64_t>{static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) tensor.set_double(static_cast<int64_t>(i), static_cast<double>(values[i]));
  return tensor;
}

// The specialization ModelOptions or QuantizeOptions ask for, each fixed input checked against the
// model's inputs.
PassContext specialization_of(const Graph& graph, const std::map<std::string, int64_t>& fixed_dims,
                              const std::map<std::string, std::vector<int64_t>>& fixed_inputs) {
  PassContext context;
  context.fixed_dims = fixed_dims;
  for (const auto& [name, values] : fixed_inputs) {
    const Value* input = nullptr;
    for (const Value* candidate : graph.inputs()) {
      if (candidate->name() == name) input = candidate;
    }
    if (!input) {
      raise_invalid_input(cat("fixed input '", name, "' is not an input of the model"));
    }
    context.fixed_inputs[name] = fixed_input_tensor(*input, values);
  }
  return context;
}

// The API promises rnnc::Error only: running out of memory is kIo (rnnc/error.h).
template <typename Body>
auto memory_errors_as_rnnc(const char* what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    raise(ErrorKind::kIo, cat("out of memory while ", what));
  }
}

Plan to_plan(RunPlan plan) {
  return plan == RunPlan::kPipeline   ? Plan::kPipeline
         : plan == RunPlan::kParallel ? Plan::kParallel
                                      : Plan::kSequential;
}

RunPlan to_run_plan(Plan plan) {
  return plan == Plan::kPipeline   ? RunPlan::kPipeline
         : plan == Plan::kParallel ? RunPlan::kParallel
                                   : RunPlan::kSequential;
}

// Compiles `source` through the compiler's pipeline (compiler/compile.h) and builds the
// executors its plan stage chose.
std::unique_ptr<CompiledModel::Impl> load_model(ModelSource source, const ModelOptions& options) {
  if (options.threads < 1) {
    raise_invalid_input(cat("ModelOptions::threads = ", options.threads, ", must be >= 1"));
  }
  if (options.quantization_max_error != 0 &&
      !(options.quantization_max_error > 0 && options.quantization_max_error <= 1)) {
    raise_invalid_input(cat("ModelOptions::quantization_max_error = ",
                            options.quantization_max_error,
                            ", must be in (0, 1] (a fraction of each output's range)"));
  }
  // Kernels for features this CPU lacks would stop the process with an illegal instruction.
  if (!options.reference) check_host_runs(resolve_kernel_target(options.target));
  auto impl = std::make_unique<CompiledModel::Impl>();
  CompileOptions compile_options;
  compile_options.expose_recurrent_state = options.expose_recurrent_state;
  compile_options.specialization = [&](const Graph& graph) {
    return specialization_of(graph, options.fixed_dims, options.fixed_inputs);
  };
  compile_options.quantize.config = options.quantization_config;
  compile_options.quantize.guard = options.quantization_guard;
  compile_options.quantize.max_error = options.quantization_max_error;
  compile_options.quantize.generated_dims = options.quantization_dims;
  compile_options.quantize.decision_cache_dir = kernel_cache_directory(options.cache_dir);
  // The model as partitioning gets it, for programs specialized to the dims runs bind.
  if (options.specialize_shapes && !options.reference && options.max_specialized_shapes > 0) {
    compile_options.keep_model_bytes = ShapeSpecializer::worth_keeping;
  }
  ProgramOptions& program_options = compile_options.program;
  program_options.cache_dir = options.cache_dir;
  program_options.target = options.target;
  program_options.reference_only = options.reference;
  program_options.count_overflow = options.count_overflow;
  program_options.release_held_constants = true;  // only what runs stays resident
  compile_options.plan.threads = options.threads;
  if (options.plan != Plan::kAuto) compile_options.plan.plan = to_run_plan(options.plan);

  Compiled compiled = compile(std::move(source), compile_options);
  // What compiling freed (the imported tensors, float weights quantization replaced, constants
  // blocks hold their own copies of) goes back to the system: glibc keeps freed heap memory
  // resident otherwise, and only what runs should stay.
  ::malloc_trim(0);
  impl->state = std::move(compiled.state);
  if (compiled.quantization) {
    impl->quantization_summary = std::move(compiled.quantization->summary);
    impl->quantization_report = std::move(compiled.quantization->report);
  }
  std::string specializer_bytes = std::move(compiled.model_bytes);
  impl->program = std::move(compiled.program);
  if (HalideCache* cache = impl->program->kernel_cache()) cache->set_do_par_for(tbb_do_par_for());
  impl->threads = options.threads;

  // The plan: one executor, or sequential and the plan that overlaps work, whichever runs each
  // input shape faster (runtime/plan_chooser.h).
  const std::vector<RunPlan>& candidates = compiled.plan.candidates;
  impl->plan = candidates.size() > 1 ? Plan::kAuto : to_plan(candidates[0]);
  impl->plan_note = compiled.plan.note;
  for (RunPlan plan : candidates) {
    impl->executors.push_back(std::make_unique<Executor>(*impl->program, plan, options.threads,
                                                         options.flush_denormals));
  }
  if (candidates.size() > 1) impl->chooser = std::make_unique<PlanChooser>();

  // Input checks and the public descriptions.
  const Graph& graph = *impl->program->model().graph;
  // A type's rank (-1 unknown) and per dim its size (-1 unknown) and its index in impl->symbols
  // when it is one symbol (-1 otherwise); the inputs add their symbols, the outputs only look
  // theirs up.
  auto read_dims = [&](const TensorType& type, bool add_symbols, int64_t& rank,
                       std::vector<int64_t>& known, std::vector<int>& symbols) {
    if (!type.shape) return;
    rank = type.rank();
    for (const Dim& dim : *type.shape) {
      known.push_back(dim.is_known() ? dim.value() : -1);
      int symbol = -1;
      const std::vector<std::string> names = dim.symbols();
      if (names.size() == 1 && dim == Dim::symbol(names[0])) {
        auto it = std::find(impl->symbols.begin(), impl->symbols.end(), names[0]);
        if (it == impl->symbols.end() && add_symbols) {
          it = impl->symbols.insert(impl->symbols.end(), names[0]);
        }
        if (it != impl->symbols.end()) symbol = static_cast<int>(it - impl->symbols.begin());
      }
      symbols.push_back(symbol);
    }
  };
  for (const Value* input : graph.inputs()) {
    CompiledModel::Impl::InputCheck check;
    check.name = input->name();
    check.dtype = input->type.dtype;
    check.type_text = input->type.to_string();
    check.required = !input->is_constant();
    read_dims(input->type, true, check.rank, check.known, check.symbol);
    impl->checks.push_back(std::move(check));
    if (!input->is_constant()) impl->inputs.push_back(info_of(*input));
  }
  for (const Value* output : graph.outputs()) {
    impl->outputs.push_back(info_of(*output));
    CompiledModel::Impl::OutputShape shape;
    read_dims(output->type, false, shape.rank, shape.known, shape.symbol);
    impl->output_shapes.push_back(std::move(shape));
  }
  std::vector<std::string> scalar_names;
  for (size_t i = 0; i < impl->checks.size(); ++i) {
    const CompiledModel::Impl::InputCheck& check = impl->checks[i];
    if (check.required && check.rank == 0 &&
        (check.dtype == DType::kInt64 || check.dtype == DType::kInt32)) {
      impl->scalar_inputs.push_back(i);
      scalar_names.push_back(check.name);
    }
  }
  // Specialized programs run the first candidate's plan: the plan asked for, or, under kAuto,
  // sequential (the shapes specialization serves are those a model's shape computations depend
  // on, fixed-size chunks of small models, where the overlapping plan's hand-offs cost more than
  // they overlap). A specialized run does not take part in kAuto's duels.
  if (!specializer_bytes.empty()) {
    ShapeSpecializer::Settings settings;
    settings.program = compile_options.program;
    settings.plan = impl->executors[0]->plan();
    settings.threads = options.threads;
    settings.flush_denormals = options.flush_denormals;
    settings.max_shapes = static_cast<size_t>(options.max_specialized_shapes);
    impl->specializer = ShapeSpecializer::create(std::move(specializer_bytes), *impl->program,
                                                 impl->symbols, std::move(scalar_names),
                                                 std::move(settings));
  }
  return impl;
}

}  // namespace

CompiledModel::CompiledModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledModel::~CompiledModel() = default;

std::shared_ptr<const CompiledModel> CompiledModel::load(const std::string& path,
                                                         const ModelOptions& options) {
  return memory_errors_as_rnnc("loading a model", [&] {
    return std::shared_ptr<const CompiledModel>(
        new CompiledModel(load_model(ModelSource::file(path), options)));
  });
}

std::shared_ptr<const CompiledModel> CompiledModel::load_bytes(const void* data, size_t size,
                                                               const ModelOptions& options) {
  return memory_errors_as_rnnc("loading a model", [&] {
    return std::shared_ptr<const CompiledModel>(
        new CompiledModel(load_model(ModelSource::bytes(data, size), options)));
  });
}

const std::vector<TensorInfo>& CompiledModel::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& CompiledModel::outputs() const { return impl_->outputs; }
const std::vector<std::pair<std::string, std::string>>& CompiledModel::recurrent_state() const {
  return impl_->state;
}
Plan CompiledModel::plan() const { return impl_->plan; }
std::vector<Plan> CompiledModel::plan_candidates() const {
  std::vector<Plan> plans;
  for (const auto& executor : impl_->executors) plans.push_back(to_plan(executor->plan()));
  return plans;
}
int CompiledModel::threads() const { return impl_->threads; }

std::string CompiledModel::overflow_report() const { return impl_->program->overflow_report(); }
std::string CompiledModel::quantization_summary() const { return impl_->quantization_summary; }
std::string CompiledModel::quantization_report() const { return impl_->quantization_report; }

void CompiledModel::wait_for_specializations() const {
  if (impl_->specializer) impl_->specializer->wait();
}

std::string CompiledModel::describe() const {
  std::string text = impl_->program->describe();
  text += cat("execution plan: ", plan_name(impl_->plan), ", ", impl_->threads, " thread(s)",
              impl_->plan_note.empty() ? "" : " (" + impl_->plan_note + ")", "\n");
  if (impl_->chooser) {
    text += impl_->chooser->report(impl_->symbols, run_plan_name(impl_->executors.back()->plan()));
  }
  for (const std::vector<size_t>& chain : impl_->executors.back()->chains()) {
    text += "  pipelined chain: blocks";
    for (size_t b : chain) text += cat(" ", b);
    text += "\n";
  }
  for (const auto& [output, input] : impl_->state) {
    text += cat("  recurrent state: ", output, " -> ", input, "\n");
  }
  if (impl_->specializer) text += impl_->specializer->describe();
  return text;
}

// ---- Session ----------------------------------------------------------------------------------

struct RNNC_INTERNAL Session::Impl {
  std::shared_ptr<const CompiledModel> model;
  std::vector<Executor::ContextPtr> contexts;  // per executor of the model
  // The run's plan (index into the model's executors and contexts), chosen after the checks.
  size_t current = 0;
  // The executor and context the run uses: the plan's, or a shape specialization's.
  const Executor* run_executor = nullptr;
  Executor::Context* run_context = nullptr;
  std::vector<std::pair<const Executor*, Executor::ContextPtr>> specialized_contexts;
  bool profiling = false;
  PlanChooser::Pick pick;
  bool ran = false;                        // a run has picked a plan
  std::vector<int64_t> shape_key;          // the run's PlanChooser bucket
  std::vector<std::pair<int, int>> state;  // (output index, input index)
  std::vector<Tensor> state_values;        // per pair; undefined: zeros at the next run
  std::vector<NamedTensor> outputs;        // run()'s result views
  std::optional<InputChecker> checker;     // this run's inputs: given, bound dims
  // The batcher's sessions (new_generic_session): runs take no shape specialization, and in a
  // kAuto model always the sequential plan rather than the plan chooser's pick.
  bool generic = false;
  std::vector<int64_t> specialization_key;  // bound, then the scalar inputs' values

  const CompiledModel::Impl& m() const { return model->impl(); }
  const Executor& executor() const { return run_executor ? *run_executor : *m().executors[current]; }
  Executor::Context& context() { return run_context ? *run_context : *contexts[current]; }
  // This session's context for a shape specialization's executor (made at its first run).
  Executor::Context& specialized_context(const Executor& executor);
  // Checks the inputs, picks the run's plan and binds the inputs to it.
  void check_and_bind(const std::vector<NamedTensor>& inputs);
  // Runs the picked plan, timed when the model's chooser has it in a duel.
  void execute();
  void carry_state();
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Session CompiledModel::new_session(const std::vector<std::pair<std::string, std::string>>& state) const {
  auto impl = std::make_unique<Session::Impl>();
  impl->model = shared_from_this();
  for (const auto& executor : impl_->executors) impl->contexts.push_back(executor->new_context());
  std::vector<std::pair<std::string, std::string>> pairs = impl_->state;
  pairs.insert(pairs.end(), state.begin(), state.end());
  for (const auto& [output_name, input_name] : pairs) {
    const int output = impl_->find_output(output_name);
    const int input = impl_->find_input(input_name);
    if (output < 0) {
      raise_invalid_input(cat("state pair (", output_name, " -> ", input_name, "): '", output_name,
                              "' is not an output of the model"));
    }
    if (input < 0) {
      raise_invalid_input(cat("state pair (", output_name, " -> ", input_name, "): '", input_name,
                              "' is not an input of the model (inputs: ", impl_->input_names(), ")"));
    }
    const CompiledModel::Impl::InputCheck& check = impl_->checks[static_cast<size_t>(input)];
    const ElementType out_type = impl_->outputs[static_cast<size_t>(output)].type;
    if (static_cast<int32_t>(out_type) != static_cast<int32_t>(check.dtype)) {
      raise_invalid_input(cat("state pair (", output_name, " -> ", input_name, "): the output is ",
                              element_type_name(out_type), ", the input ",
                              dtype_onnx_name(check.dtype)));
    }
    for (const auto& [o, i] : impl->state) {
      if (i == input) {
        raise_invalid_input(cat("state pair (", output_name, " -> ", input_name, "): '",
                                input_name, "' is already fed by another state output"));
      }
    }
    impl->state.emplace_back(output, input);
  }
  impl->state_values.resize(impl->state.size());
  for (const TensorInfo& info : impl_->outputs) impl->outputs.push_back({info.name, {info.type, {}, nullptr}});
  std::vector<int> fed;
  for (const auto& pair : impl->state) fed.push_back(pair.second);
  impl->checker.emplace(*this, std::move(fed));
  return Session(std::move(impl));
}

Session new_generic_session(const CompiledModel& model,
                            const std::vector<std::pair<std::string, std::string>>& state) {
  Session session = model.new_session(state);
  // Shape specializations: a program per batch size would fill max_specialized_shapes with
  // shapes tried once. Plans: a batcher's runs come in every batch size up to its max_batch, and
  // the plan chooser learns each size up to 32 as a bucket of its own, from warm-up runs and duels
  // that run the slower plan too: spikes in the chunks' latency, at every new size and at every
  // exploring duel. The sequential plan spreads a run over the model's threads by itself (a batch's
  // entries in slices, runtime/batch_split.h; a step's hidden tiles where R is over L2), without
  // them.
  session.impl_->generic = true;
  return session;
}

const CompiledModel& Session::model() const { return *impl_->model; }

Plan Session::last_plan() const {
  return impl_->ran ? to_plan(impl_->executor().plan()) : impl_->m().plan;
}

// ---- InputChecker -----------------------------------------------------------------------------

InputChecker::InputChecker(const CompiledModel& model, std::vector<int> fed)
    : model_(model.impl()),
      fed_(std::move(fed)),
      given_(model_.checks.size(), 0),
      bound_(model_.symbols.size(), -1) {}

int InputChecker::find_input(const std::string& name) const { return model_.find_input(name); }

void InputChecker::check_one(size_t index, ElementType type, const std::vector<int64_t>& shape,
                             const void* data, const char* what) {
  const CompiledModel::Impl::InputCheck& check = model_.checks[index];
  const std::optional<DType> dtype = to_dtype(type);
  if (!dtype || *dtype != check.dtype) {
    raise_invalid_input(cat(what, " '", check.name, "' has element type ", element_type_name(type),
                            ", expected ", dtype_onnx_name(check.dtype), " (", check.type_text, ")"));
  }
  if (check.rank >= 0 && static_cast<int64_t>(shape.size()) != check.rank) {
    raise_invalid_input(cat(what, " '", check.name, "' has rank ", shape.size(), " (shape ",
                            shape_text(shape), "), expected ", check.rank, " (", check.type_text, ")"));
  }
  int64_t count = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    const int64_t size = shape[k];
    if (size < 0) {
      raise_invalid_input(cat(what, " '", check.name, "' has a negative dim ", k, " (shape ",
                              shape_text(shape), ")"));
    }
    count *= size;
    if (check.rank < 0) continue;
    if (check.known[k] >= 0 && size != check.known[k]) {
      raise_invalid_input(cat(what, " '", check.name, "': dim ", k, " is ", size, ", expected ",
                              check.known[k], " (", check.type_text, ")"));
    }
    const int symbol = check.symbol[k];
    if (symbol < 0) continue;
    int64_t& value = bound_[static_cast<size_t>(symbol)];
    if (value < 0) {
      value = size;
    } else if (value != size) {
      // Whoever bound it first: find it again for the message.
      std::string first;
      for (size_t i = 0; i < model_.checks.size() && first.empty(); ++i) {
        if (!given_[i] || i == index) continue;
        const auto& other = model_.checks[i];
        for (size_t j = 0; j < other.symbol.size(); ++j) {
          if (other.symbol[j] == symbol) first = cat("input '", other.name, "' dim ", j);
        }
      }
      raise_invalid_input(cat(what, " '", check.name, "': dim ", k, " ('",
                              model_.symbols[static_cast<size_t>(symbol)], "') is ", size, " but ",
                              first.empty() ? std::string("another dim of it") : first, " set '",
                              model_.symbols[static_cast<size_t>(symbol)], "' = ", value));
    }
  }
  if (count > 0 && !data) {
    raise_invalid_input(cat(what, " '", check.name, "' has no data (null pointer)"));
  }
}

void InputChecker::check(const std::vector<NamedTensor>& inputs) {
  const CompiledModel::Impl& model_impl = model_;
  std::fill(given_.begin(), given_.end(), 0);
  std::fill(bound_.begin(), bound_.end(), -1);
  for (const NamedTensor& input : inputs) {
    const int index = model_impl.find_input(input.name);
    if (index < 0 || !model_impl.checks[static_cast<size_t>(index)].required) {
      raise_invalid_input(cat("'", input.name, "' is not an input of the model (inputs: ",
                              model_impl.input_names(), ")"));
    }
    if (given_[static_cast<size_t>(index)]) {
      raise_invalid_input(cat("input '", input.name, "' is given twice"));
    }
    given_[static_cast<size_t>(index)] = 1;
  }
  for (const NamedTensor& input : inputs) {
    const size_t index = static_cast<size_t>(model_impl.find_input(input.name));
    check_one(index, input.tensor.type, input.tensor.shape, input.tensor.data, "input");
  }
  for (size_t i = 0; i < model_impl.checks.size(); ++i) {
    const CompiledModel::Impl::InputCheck& check = model_impl.checks[i];
    const bool fed = std::find(fed_.begin(), fed_.end(), static_cast<int>(i)) != fed_.end();
    if (check.required && !given_[i] && !fed) {
      raise_invalid_input(cat("input '", check.name, "' (", check.type_text, ") is missing"));
    }
  }
}

std::vector<int64_t> InputChecker::zero_state_shape(size_t index, const std::string& output,
                                                    const std::vector<NamedTensor>& inputs,
                                                    int batch_axis, int64_t rows) const {
  const CompiledModel::Impl::InputCheck& check = model_.checks[index];
  if (check.rank < 0) {
    raise_invalid_input(cat("state input '", check.name, "' has an unknown rank; pass it "
                            "explicitly on the first run"));
  }
  std::vector<int64_t> shape;
  int undecided = -1;
  for (size_t k = 0; k < static_cast<size_t>(check.rank); ++k) {
    int64_t size = check.known[k];
    if (size < 0 && check.symbol[k] >= 0) size = bound_[static_cast<size_t>(check.symbol[k])];
    if (size < 0 && static_cast<int>(k) == batch_axis) size = rows;
    if (size < 0 && undecided < 0) undecided = static_cast<int>(k);
    shape.push_back(size);
  }
  if (undecided < 0) return shape;
  // A dim no other input binds: the state starts with the shape the model gives the state
  // output it is carried from for the other inputs.
  const std::optional<std::vector<int64_t>> carried = output_shape(output, inputs);
  bool agrees = carried && carried->size() == shape.size();
  for (size_t k = 0; agrees && k < shape.size(); ++k) {
    agrees = shape[k] < 0 || shape[k] == (*carried)[k];
  }
  if (agrees) return *carried;
  raise_invalid_input(cat("state input '", check.name, "' (", check.type_text, "): dim ", undecided,
                          " is decided neither by the other inputs nor by the shape of state "
                          "output '", output, "' for them; pass '", check.name,
                          "' explicitly on the first run"));
}

std::optional<std::vector<int64_t>> InputChecker::output_shape(
    const std::string& output, const std::vector<NamedTensor>& inputs,
    const std::vector<std::pair<int, int64_t>>& overrides) const {
  std::vector<int64_t> bound = bound_;
  for (const auto& [symbol, value] : overrides) bound[static_cast<size_t>(symbol)] = value;
  // First the output's type in the generic program (an LSTM's Y_h takes its batch from X,
  // whatever initial_h's dim is named), with the bound dims put in.
  const int output_index = model_.find_output(output);
  if (output_index < 0) return std::nullopt;
  const CompiledModel::Impl::OutputShape& typed =
      model_.output_shapes[static_cast<size_t>(output_index)];
  if (typed.rank >= 0) {
    std::vector<int64_t> shape;
    for (size_t k = 0; k < typed.known.size(); ++k) {
      const int64_t size = typed.known[k] >= 0    ? typed.known[k]
                           : typed.symbol[k] >= 0 ? bound[static_cast<size_t>(typed.symbol[k])]
                                                  : -1;
      if (size < 0) break;
      shape.push_back(size);
    }
    if (shape.size() == typed.known.size()) return shape;
  }
  // Else what graph_opt infers with the bound dims and the scalar inputs' values fixed (Silero
  // VAD v5: the Ifs on the audio's dims fold, and the state output gets its shape).
  if (!model_.specializer) return std::nullopt;
  std::vector<int64_t> key;
  model_.specialization_key(bound, inputs, key);
  return model_.specializer->output_shape(key, output);
}

int InputChecker::symbol_index(const std::string& name) const {
  for (size_t s = 0; s < model_.symbols.size(); ++s) {
    if (model_.symbols[s] == name) return static_cast<int>(s);
  }
  return -1;
}

// ---- Session runs ------------------------------------------------------------------------------

void Session::Impl::check_and_bind(const std::vector<NamedTensor>& inputs) {
  const CompiledModel::Impl& model_impl = m();
  checker->check(inputs);
  const std::vector<int64_t>& bound = checker->bound();
  // State inputs the caller left out: the carried state, or zeros shaped by the other inputs.
  for (size_t p = 0; p < state.size(); ++p) {
    const size_t index = static_cast<size_t>(state[p].second);
    if (checker->given(index)) continue;
    Tensor& value = state_values[p];
    if (!value.defined()) {
      value =
          Tensor(model_impl.checks[index].dtype,
                 checker->zero_state_shape(
                     index, model_impl.outputs[static_cast<size_t>(state[p].first)].name, inputs));
    }
    checker->set_given(index);
    checker->check_one(index, static_cast<ElementType>(static_cast<int32_t>(value.dtype())),
                       value.shape(), value.raw_data(), "carried state");
  }
  // Everything checked: a shape's specialization if there is one, else pick the plan; bind.
  run_executor = nullptr;
  run_context = nullptr;
  pick = PlanChooser::Pick{};
  const ShapeSpecializer::Specialized* specialized = nullptr;
  if (model_impl.specializer && !generic) {
    model_impl.specialization_key(bound, inputs, specialization_key);
    specialized = model_impl.specializer->specialized_for(specialization_key);
    if (specialized) {
      run_context = &specialized_context(*specialized->executor);
      run_executor = specialized->executor.get();
    }
  }
  if (model_impl.chooser && !specialized && !generic) {
    PlanChooser::bucket(bound, shape_key);
    pick = model_impl.chooser->pick(shape_key);
    current = static_cast<size_t>(pick.candidate);
  }
  const Executor& executor = this->executor();
  Executor::Context& context = this->context();
  // A generic input's index in the program that runs (-1: compiled into it).
  auto slot_of = [&](size_t index) {
    return specialized ? specialized->input_map[index] : static_cast<int>(index);
  };
  for (const NamedTensor& input : inputs) {
    const int index = slot_of(static_cast<size_t>(model_impl.find_input(input.name)));
    if (index < 0) continue;
    executor.bind_input(context, static_cast<size_t>(index), static_cast<DType>(input.tensor.type),
                        input.tensor.shape.data(), input.tensor.shape.size(), input.tensor.data);
  }
  for (size_t p = 0; p < state.size(); ++p) {
    const size_t index = static_cast<size_t>(state[p].second);
    bool explicit_input = false;
    for (const NamedTensor& input : inputs) explicit_input = explicit_input || input.name == model_impl.checks[index].name;
    if (explicit_input) continue;
    const Tensor& value = state_values[p];
    const int slot = slot_of(index);
    if (slot < 0) continue;
    executor.bind_input(context, static_cast<size_t>(slot), value.dtype(), value.shape().data(),
                        value.shape().size(), value.raw_data());
  }
}

Executor::Context& Session::Impl::specialized_context(const Executor& executor) {
  for (auto& [owner, context] : specialized_contexts) {
    if (owner == &executor) return *context;
  }
  specialized_contexts.emplace_back(&executor, executor.new_context());
  if (profiling) executor.set_profiling(*specialized_contexts.back().second, true);
  return *specialized_contexts.back().second;
}

void Session::Impl::execute() {
  ran = true;
  const auto start = std::chrono::steady_clock::now();
  executor().run(context());
  if (pick.role == PlanChooser::Role::kUntimed) return;
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  m().chooser->record(shape_key, pick, us);
}

void Session::Impl::carry_state() {
  const Executor& executor = this->executor();
  for (size_t p = 0; p < state.size(); ++p) {
    const Tensor& output = executor.output(context(), static_cast<size_t>(state[p].first));
    Tensor& value = state_values[p];
    Tensor::recycle(value, output.dtype(), output.shape().data(), output.shape().size());
    if (output.nbytes() > 0) std::memcpy(value.raw_data(), output.raw_data(), output.nbytes());
  }
}

const std::vector<NamedTensor>& Session::run(const std::vector<NamedTensor>& inputs) {
  return memory_errors_as_rnnc("running a session",
                               [&]() -> const std::vector<NamedTensor>& { return run_views(inputs); });
}

const std::vector<NamedTensor>& Session::run_views(const std::vector<NamedTensor>& inputs) {
  Impl& s = *impl_;
  s.check_and_bind(inputs);
  s.execute();
  s.carry_state();
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    const Tensor& tensor = s.executor().output(s.context(), i);
    TensorRef& out = s.outputs[i].tensor;
    out.type = static_cast<ElementType>(static_cast<int32_t>(tensor.dtype()));
    out.shape.assign(tensor.shape().begin(), tensor.shape().end());
    out.data = const_cast<void*>(tensor.raw_data());
  }
  return s.outputs;
}

void Session::run_into(const std::vector<NamedTensor>& inputs,
                       const std::vector<NamedTensor>& outputs) {
  memory_errors_as_rnnc("running a session", [&] { run_into_buffers(inputs, outputs); });
}

void Session::run_into_buffers(const std::vector<NamedTensor>& inputs,
                               const std::vector<NamedTensor>& outputs) {
  Impl& s = *impl_;
  const CompiledModel::Impl& model_impl = s.m();
  for (size_t n = 0; n < outputs.size(); ++n) {
    const NamedTensor& out = outputs[n];
    const int index = model_impl.find_output(out.name);
    if (index < 0) {
      std::string names;
      for (const TensorInfo& info : model_impl.outputs) names += (names.empty() ? "'" : ", '") + info.name + "'";
      raise_invalid_input(cat("'", out.name, "' is not an output of the model (outputs: ", names, ")"));
    }
    for (size_t e = 0; e < n; ++e) {
      if (outputs[e].name == out.name) raise_invalid_input(cat("output '", out.name, "' is given twice"));
    }
    const TensorInfo& info = model_impl.outputs[static_cast<size_t>(index)];
    if (out.tensor.type != info.type) {
      raise_invalid_input(cat("output '", out.name, "' buffer has element type ",
                              element_type_name(out.tensor.type), ", the model produces ",
                              element_type_name(info.type), " (", info.to_string(), ")"));
    }
    if (out.tensor.element_count() > 0 && !out.tensor.data) {
      raise_invalid_input(cat("output '", out.name, "' buffer has no data (null pointer)"));
    }
  }
  s.check_and_bind(inputs);
  const Executor& executor = s.executor();
  for (const NamedTensor& out : outputs) {
    const size_t index = static_cast<size_t>(model_impl.find_output(out.name));
    executor.bind_output(s.context(), index, static_cast<DType>(out.tensor.type),
                         out.tensor.shape.data(), out.tensor.shape.size(), out.tensor.data);
  }
  s.execute();
  // Every buffer is checked before any is filled or the state moves on: a failed run_into leaves
  // the stream where it was.
  for (const NamedTensor& out : outputs) {
    const size_t index = static_cast<size_t>(model_impl.find_output(out.name));
    const Tensor& tensor = executor.output(s.context(), index);
    if (tensor.raw_data() != out.tensor.data && tensor.shape() != out.tensor.shape) {
      raise_invalid_input(cat("output '", out.name, "' has shape ", shape_text(tensor.shape()),
                              " at this run, but the buffer given has shape ",
                              shape_text(out.tensor.shape)));
    }
  }
  for (const NamedTensor& out : outputs) {
    const size_t index = static_cast<size_t>(model_impl.find_output(out.name));
    const Tensor& tensor = executor.output(s.context(), index);
    if (tensor.raw_data() == out.tensor.data) continue;  // written in place
    if (tensor.nbytes() > 0) std::memcpy(out.tensor.data, tensor.raw_data(), tensor.nbytes());
  }
  s.carry_state();
}

void Session::set_profiling(bool on) {
  impl_->profiling = on;
  for (size_t e = 0; e < impl_->contexts.size(); ++e) {
    impl_->m().executors[e]->set_profiling(*impl_->contexts[e], on);
  }
  for (auto& [executor, context] : impl_->specialized_contexts) executor->set_profiling(*context, on);
}

std::string Session::profile_report() const {
  // One report per plan that ran (a kAuto model on trial runs both).
  std::string text;
  for (size_t e = 0; e < impl_->contexts.size(); ++e) {
    const Executor& executor = *impl_->m().executors[e];
    if (executor.profiled_runs(*impl_->contexts[e]) > 0) {
      text += executor.profile_report(*impl_->contexts[e]);
    }
  }
  for (const auto& [executor, context] : impl_->specialized_contexts) {
    if (executor->profiled_runs(*context) > 0) {
      text += "shape specialization: " + executor->profile_report(*context);
    }
  }
  return text.empty() ? "no profiled runs\n" : text;
}

void Session::reset() {
  for (Tensor& value : impl_->state_values) value = Tensor();
}

Session Session::clone() const {
  Session copy = impl_->model->new_session({});
  // The same pairs (including ones given to new_session), each with a copy of the state.
  copy.impl_->state = impl_->state;
  copy.impl_->checker.emplace(*impl_->model, impl_->checker->fed());
  copy.impl_->state_values.clear();
  for (const Tensor& value : impl_->state_values) {
    copy.impl_->state_values.push_back(value.defined() ? value.clone() : Tensor());
  }
  return copy;
}

std::vector<NamedTensor> Session::state() const {
  std::vector<NamedTensor> result;
  for (size_t p = 0; p < impl_->state.size(); ++p) {
    const Tensor& value = impl_->state_values[p];
    if (!value.defined()) continue;
    const std::string& name = impl_->m().checks[static_cast<size_t>(impl_->state[p].second)].name;
    result.push_back({name, {static_cast<ElementType>(static_cast<int32_t>(value.dtype())),
                             value.shape(), const_cast<void*>(value.raw_data())}});
  }
  return result;
}

std::vector<CompiledModel::Output> CompiledModel::run(const std::vector<NamedTensor>& inputs) const {
  Session session = new_session();
  const std::vector<NamedTensor>& views = session.run(inputs);
  std::vector<Output> outputs;
  for (const NamedTensor& view : views) {
    Output out;
    out.name = view.name;
    out.type = view.tensor.type;
    out.shape = view.tensor.shape;
    const size_t bytes = view.tensor.byte_size();
    std::shared_ptr<uint8_t> storage(new uint8_t[std::max<size_t>(bytes, 1)],
                                     std::default_delete<uint8_t[]>());
    if (bytes > 0) std::memcpy(storage.get(), view.tensor.data, bytes);
    out.storage = storage;
    outputs.push_back(std::move(out));
  }
  return outputs;
}

// ---- offline quantization ----------------------------------------------------------------------

QuantizeResult quantize_model(const std::string& input_path, const std::string& output_path,
                              const QuantizeOptions& options) {
  return memory_errors_as_rnnc("quantizing", [&] {
    std::vector<quant::Sample> samples;
    for (size_t s = 0; s < options.calibration.size(); ++s) {
      quant::Sample& sample = samples.emplace_back();
      for (const NamedTensor& input : options.calibration[s]) {
        std::optional<DType> dtype = to_dtype(input.tensor.type);
        if (!dtype) {
          raise_invalid_input(cat("calibration sample ", s, ", input '", input.name,
                                  "': element type ", static_cast<int>(input.tensor.type),
                                  " is not one rnnc holds"));
        }
        sample[input.name] = Tensor::borrow(*dtype, input.tensor.shape, input.tensor.data);
      }
    }
    // The compiler's stages through quantize (compiler/compile.h), as a load runs them.
    CompileOptions compile_options;
    compile_options.stop_after = Stage::kQuantize;
    compile_options.specialization = [&](const Graph& graph) {
      return specialization_of(graph, options.fixed_dims, options.fixed_inputs);
    };
    QuantizationOptions& quantize = compile_options.quantize;
    quantize.config = options.config.empty() ? "default" : options.config;
    quantize.guard = options.guard;
    quantize.max_error = options.max_error > 0 ? options.max_error : 0;
    quantize.calibration = [&](const Graph&) { return samples; };
    quantize.keep_float_model = options.measure_error && !samples.empty();
    Compiled compiled = compile(ModelSource::file(input_path), compile_options);
    export_onnx_file(*compiled.model, output_path);
    Quantization& quantization = *compiled.quantization;
    quant::Report& report = quantization.nodes;
    if (quantization.float_model) {
      // Both models through the reference evaluator: the quantized one computes with its
      // activations fake-quantized exactly as the integer kernels do.
      std::unique_ptr<Model> reloaded = import_onnx_file(output_path);
      quant::measure_error(*quantization.float_model, *reloaded, samples, report);
    }
    const quant::GuardResult& guard = quantization.guard;
    QuantizeResult result;
    result.nodes = report.nodes.size();
    for (const quant::NodeReport& entry : report.nodes) {
      if (!entry.quantized) continue;
      ++result.quantized_nodes;
      result.weight_bytes_before += entry.weight_bytes_before;
      result.weight_bytes_after += entry.weight_bytes_after;
    }
    result.report = guard.to_markdown() + "\n## Nodes\n\n" + report.to_markdown();
    result.summary = guard.summary();
    return result;
  });
}

}  // namespace rnnc
