// The C API (rnnc/rnnc_c.h) over the public C++ API (rnnc/rnnc.h) only: handles own the C++
// objects, and every entry point runs its body inside `guarded`, which turns any exception into a
// status and this thread's last-error message, so none crosses into C.
#include <cstring>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "rnnc/rnnc.h"
#include "rnnc/rnnc_c.h"

struct rnnc_model {
  std::shared_ptr<const rnnc::CompiledModel> model;
  // Per input / output, each dim's size or -1 (symbolic or unknown), parsed once from the
  // TensorInfo dims text.
  std::vector<std::vector<int64_t>> input_dims, output_dims;
};

struct rnnc_batcher {
  explicit rnnc_batcher(std::shared_ptr<const rnnc::CompiledModel> model,
                        const rnnc::BatcherOptions& options)
      : batcher(std::move(model), options) {}
  rnnc::StreamBatcher batcher;
};

struct rnnc_stream {
  explicit rnnc_stream(rnnc::BatchStream&& s) : stream(std::move(s)) {}
  rnnc::BatchStream stream;
  std::vector<rnnc::NamedTensor> inputs;  // the C tensors as the C++ API takes them
};

struct rnnc_session {
  explicit rnnc_session(rnnc::Session&& s) : session(std::move(s)) {}
  rnnc::Session session;
  // The C tensors as the C++ API takes them, kept from run to run: once names and shapes repeat,
  // converting them allocates nothing, so a steady-state run stays allocation-free.
  std::vector<rnnc::NamedTensor> inputs, outputs;
  std::vector<rnnc_tensor> views;  // rnnc_session_run_views' result
};

namespace {

// ---- errors -------------------------------------------------------------------------------------

thread_local std::string last_error;
// Set instead when storing the message itself ran out of memory.
thread_local const char* last_error_fallback = nullptr;

// A C-level misuse (NULL pointer, index out of range): RNNC_INVALID_ARGUMENT.
class InvalidArgument : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream stream;
  (stream << ... << args);
  return stream.str();
}

template <typename... Args>
[[noreturn]] void invalid_argument(const Args&... args) {
  throw InvalidArgument(cat(args...));
}

rnnc_status fail(rnnc_status status, const char* message) noexcept {
  try {
    last_error.assign(message);
    last_error_fallback = nullptr;
  } catch (...) {
    last_error_fallback = "out of memory (storing the error message failed)";
  }
  return status;
}

rnnc_status status_of(rnnc::ErrorKind kind) {
  switch (kind) {
    case rnnc::ErrorKind::kInvalidModel:
      return RNNC_INVALID_MODEL;
    case rnnc::ErrorKind::kInvalidInput:
      return RNNC_INVALID_INPUT;
    case rnnc::ErrorKind::kUnsupported:
      return RNNC_UNSUPPORTED;
    case rnnc::ErrorKind::kIo:
      return RNNC_IO_ERROR;
    case rnnc::ErrorKind::kInternal:
      return RNNC_INTERNAL_ERROR;
    case rnnc::ErrorKind::kOverloaded:
      return RNNC_OVERLOADED;
    case rnnc::ErrorKind::kCancelled:
      return RNNC_CANCELLED;
  }
  return RNNC_INTERNAL_ERROR;
}

// Runs `body`; any exception becomes a status and this thread's message.
template <typename Body>
rnnc_status guarded(Body&& body) noexcept {
  try {
    body();
    return RNNC_OK;
  } catch (const InvalidArgument& e) {
    return fail(RNNC_INVALID_ARGUMENT, e.what());
  } catch (const rnnc::Error& e) {
    return fail(status_of(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(RNNC_IO_ERROR, "out of memory");
  } catch (const std::exception& e) {
    try {
      return fail(RNNC_INTERNAL_ERROR, cat("internal error: ", e.what()).c_str());
    } catch (...) {
      return fail(RNNC_INTERNAL_ERROR, "internal error (its message could not be stored)");
    }
  } catch (...) {
    return fail(RNNC_INTERNAL_ERROR, "internal error: a non-standard exception");
  }
}

template <typename T>
void require_pointer(const T* pointer, const char* function, const char* argument) {
  if (!pointer) invalid_argument(function, ": ", argument, " is NULL");
}

// ---- model options ------------------------------------------------------------------------------

rnnc::ModelOptions to_model_options(const rnnc_model_options* c, const char* function) {
  rnnc::ModelOptions options;
  if (!c) return options;
  if (c->threads < 1) {
    invalid_argument(function, ": options->threads = ", c->threads, ", must be >= 1");
  }
  options.threads = c->threads;
  // A C caller may store any int in the enum field; C++ may not read an out-of-range value as
  // the enum type (UBSan: "not a valid value for type 'rnnc_plan'"), so read its bits as an int.
  static_assert(sizeof(c->plan) == sizeof(int), "rnnc_plan is an int-sized C enum");
  int plan = 0;
  std::memcpy(&plan, &c->plan, sizeof(plan));
  switch (plan) {
    case RNNC_PLAN_AUTO:
      options.plan = rnnc::Plan::kAuto;
      break;
    case RNNC_PLAN_SEQUENTIAL:
      options.plan = rnnc::Plan::kSequential;
      break;
    case RNNC_PLAN_PARALLEL:
      options.plan = rnnc::Plan::kParallel;
      break;
    case RNNC_PLAN_PIPELINE:
      options.plan = rnnc::Plan::kPipeline;
      break;
    default:
      invalid_argument(function, ": options->plan = ", plan,
                       " is not an rnnc_plan (0 auto, 1 sequential, 2 parallel, 3 pipeline)");
  }
  if (c->cache_dir) options.cache_dir = c->cache_dir;
  if (c->target) options.target = c->target;
  if (c->n_fixed_dims > 0 && (!c->fixed_dim_names || !c->fixed_dim_values)) {
    invalid_argument(function, ": options->n_fixed_dims = ", c->n_fixed_dims,
                     " but options->fixed_dim_names or fixed_dim_values is NULL");
  }
  for (size_t i = 0; i < c->n_fixed_dims; ++i) {
    const char* name = c->fixed_dim_names[i];
    if (!name) invalid_argument(function, ": options->fixed_dim_names[", i, "] is NULL");
    if (!options.fixed_dims.emplace(name, c->fixed_dim_values[i]).second) {
      invalid_argument(function, ": options fix dim '", name, "' twice");
    }
  }
  if (c->n_fixed_inputs > 0 &&
      (!c->fixed_input_names || !c->fixed_input_values || !c->fixed_input_lengths)) {
    invalid_argument(function, ": options->n_fixed_inputs = ", c->n_fixed_inputs,
                     " but options->fixed_input_names, fixed_input_values or fixed_input_lengths "
                     "is NULL");
  }
  for (size_t i = 0; i < c->n_fixed_inputs; ++i) {
    const char* name = c->fixed_input_names[i];
    if (!name) invalid_argument(function, ": options->fixed_input_names[", i, "] is NULL");
    const int64_t* values = c->fixed_input_values[i];
    const size_t length = c->fixed_input_lengths[i];
    if (length > 0 && !values) {
      invalid_argument(function, ": options->fixed_input_values[", i, "] ('", name,
                       "') is NULL but its length is ", length);
    }
    if (!options.fixed_inputs.emplace(name, std::vector<int64_t>(values, values + length)).second) {
      invalid_argument(function, ": options fix input '", name, "' twice");
    }
  }
  options.expose_recurrent_state = c->expose_recurrent_state != 0;
  options.reference = c->reference != 0;
  return options;
}

// ---- model queries ------------------------------------------------------------------------------

enum class Io { kInput, kOutput };

// "128" -> 128; a symbol, an expression or "?" -> -1.
int64_t dim_size(const std::string& text) {
  if (text.empty() || text.size() > 18) return -1;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
  }
  return std::stoll(text);
}

std::vector<std::vector<int64_t>> dim_sizes(const std::vector<rnnc::TensorInfo>& infos) {
  std::vector<std::vector<int64_t>> sizes;
  for (const rnnc::TensorInfo& info : infos) {
    std::vector<int64_t>& dims = sizes.emplace_back();
    for (const std::string& dim : info.dims) dims.push_back(dim_size(dim));
  }
  return sizes;
}

// Stores the model `compile` returns in *model (NULL on failure).
template <typename Compile>
rnnc_status load(const char* function, rnnc_model** model, Compile&& compile) {
  return guarded([&] {
    require_pointer(model, function, "model");
    *model = nullptr;
    auto handle = std::make_unique<rnnc_model>();
    handle->model = compile();
    handle->input_dims = dim_sizes(handle->model->inputs());
    handle->output_dims = dim_sizes(handle->model->outputs());
    *model = handle.release();
  });
}

const std::vector<rnnc::TensorInfo>& infos(const rnnc_model& model, Io io) {
  return io == Io::kInput ? model.model->inputs() : model.model->outputs();
}

const char* io_name(Io io) { return io == Io::kInput ? "input" : "output"; }

// The model's input or output `index`, after checking the handle and the index.
const rnnc::TensorInfo& tensor_info(const rnnc_model* model, Io io, size_t index,
                                    const char* function) {
  require_pointer(model, function, "model");
  const std::vector<rnnc::TensorInfo>& all = infos(*model, io);
  if (index >= all.size()) {
    invalid_argument(function, ": ", io_name(io), " index ", index,
                     " is out of range (the model has ", all.size(), " ", io_name(io), "s)");
  }
  return all[index];
}

void check_dim(const rnnc::TensorInfo& info, Io io, size_t dim, const char* function) {
  if (dim >= info.dims.size()) {
    invalid_argument(function, ": dim ", dim, " is out of range (", io_name(io), " '", info.name,
                     "' has rank ", info.dims.size(), ")");
  }
}

rnnc_status tensor_count(const rnnc_model* model, Io io, size_t* count, const char* function) {
  return guarded([&] {
    require_pointer(model, function, "model");
    require_pointer(count, function, "count");
    *count = infos(*model, io).size();
  });
}

rnnc_status tensor_name(const rnnc_model* model, Io io, size_t index, const char** name,
                        const char* function) {
  return guarded([&] {
    const rnnc::TensorInfo& info = tensor_info(model, io, index, function);
    require_pointer(name, function, "name");
    *name = info.name.c_str();
  });
}

rnnc_status tensor_element_type(const rnnc_model* model, Io io, size_t index, int32_t* element_type,
                                const char* function) {
  return guarded([&] {
    const rnnc::TensorInfo& info = tensor_info(model, io, index, function);
    require_pointer(element_type, function, "element_type");
    *element_type = static_cast<int32_t>(info.type);
  });
}

rnnc_status tensor_rank(const rnnc_model* model, Io io, size_t index, size_t* rank,
                        const char* function) {
  return guarded([&] {
    const rnnc::TensorInfo& info = tensor_info(model, io, index, function);
    require_pointer(rank, function, "rank");
    *rank = info.dims.size();
  });
}

rnnc_status tensor_dim(const rnnc_model* model, Io io, size_t index, size_t dim, int64_t* size,
                       const char* function) {
  return guarded([&] {
    const rnnc::TensorInfo& info = tensor_info(model, io, index, function);
    check_dim(info, io, dim, function);
    require_pointer(size, function, "size");
    *size = (io == Io::kInput ? model->input_dims : model->output_dims)[index][dim];
  });
}

rnnc_status tensor_dim_name(const rnnc_model* model, Io io, size_t index, size_t dim,
                            const char** name, const char* function) {
  return guarded([&] {
    const rnnc::TensorInfo& info = tensor_info(model, io, index, function);
    check_dim(info, io, dim, function);
    require_pointer(name, function, "name");
    *name = info.dims[dim].c_str();
  });
}

// ---- runs ---------------------------------------------------------------------------------------

// Copies C tensors into `into` (reusing its strings and shape vectors), checking the pointers.
void to_named_tensors(const rnnc_tensor* tensors, size_t count, const char* function,
                      const char* argument, std::vector<rnnc::NamedTensor>& into) {
  if (count > 0 && !tensors) {
    invalid_argument(function, ": ", argument, " is NULL but n_", argument, " = ", count);
  }
  into.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const rnnc_tensor& tensor = tensors[i];
    if (!tensor.name) invalid_argument(function, ": ", argument, "[", i, "].name is NULL");
    if (tensor.rank > 0 && !tensor.shape) {
      invalid_argument(function, ": ", argument, "[", i, "] ('", tensor.name, "') has rank ",
                       tensor.rank, " but its shape is NULL");
    }
    rnnc::NamedTensor& named = into[i];
    named.name.assign(tensor.name);
    named.tensor.type = static_cast<rnnc::ElementType>(tensor.element_type);
    named.tensor.shape.assign(tensor.shape, tensor.shape + tensor.rank);
    named.tensor.data = tensor.data;
  }
}

// The (output, input) state pairs of a C array; the strings are copied.
std::vector<std::pair<std::string, std::string>> to_state_pairs(const rnnc_state_pair* state_pairs,
                                                                size_t count,
                                                                const char* function) {
  if (count > 0 && !state_pairs) {
    invalid_argument(function, ": state_pairs is NULL but n_state_pairs = ", count);
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < count; ++i) {
    if (!state_pairs[i].output || !state_pairs[i].input) {
      invalid_argument(function, ": state_pairs[", i, "].",
                       state_pairs[i].output ? "input" : "output", " is NULL");
    }
    pairs.emplace_back(state_pairs[i].output, state_pairs[i].input);
  }
  return pairs;
}

// A chunk's outputs as C views (valid while `outputs` lives).
std::vector<rnnc_tensor> to_views(const std::vector<rnnc::CompiledModel::Output>& outputs) {
  std::vector<rnnc_tensor> views;
  for (const rnnc::CompiledModel::Output& out : outputs) {
    views.push_back({out.name.c_str(), static_cast<int32_t>(out.type), out.shape.data(),
                     out.shape.size(), const_cast<void*>(out.data())});
  }
  return views;
}

}  // namespace

// ---- errors and element types -------------------------------------------------------------------

extern "C" {

const char* rnnc_last_error(void) {
  return last_error_fallback ? last_error_fallback : last_error.c_str();
}

const char* rnnc_status_name(rnnc_status status) {
  switch (status) {
    case RNNC_OK:
      return "ok";
    case RNNC_INVALID_MODEL:
      return "invalid model";
    case RNNC_INVALID_INPUT:
      return "invalid input";
    case RNNC_UNSUPPORTED:
      return "unsupported";
    case RNNC_IO_ERROR:
      return "I/O error";
    case RNNC_INTERNAL_ERROR:
      return "internal error";
    case RNNC_INVALID_ARGUMENT:
      return "invalid argument";
    case RNNC_OVERLOADED:
      return "overloaded";
    case RNNC_CANCELLED:
      return "cancelled";
  }
  return "unknown status";
}

size_t rnnc_element_size(int32_t element_type) {
  return rnnc::element_size(static_cast<rnnc::ElementType>(element_type));
}

// ---- models -------------------------------------------------------------------------------------

void rnnc_model_options_init(rnnc_model_options* options) {
  if (!options) return;
  *options = rnnc_model_options{};
  options->threads = 1;
  options->plan = RNNC_PLAN_AUTO;
  options->expose_recurrent_state = 1;
}

rnnc_status rnnc_model_load(const char* path, const rnnc_model_options* options,
                            rnnc_model** model) {
  constexpr const char* kFunction = "rnnc_model_load";
  return load(kFunction, model, [&] {
    require_pointer(path, kFunction, "path");
    return rnnc::CompiledModel::load(path, to_model_options(options, kFunction));
  });
}

rnnc_status rnnc_model_load_bytes(const void* data, size_t size, const rnnc_model_options* options,
                                  rnnc_model** model) {
  constexpr const char* kFunction = "rnnc_model_load_bytes";
  return load(kFunction, model, [&] {
    if (size > 0) require_pointer(data, kFunction, "data");
    return rnnc::CompiledModel::load_bytes(data, size, to_model_options(options, kFunction));
  });
}

void rnnc_model_free(rnnc_model* model) { delete model; }

rnnc_status rnnc_model_input_count(const rnnc_model* model, size_t* count) {
  return tensor_count(model, Io::kInput, count, "rnnc_model_input_count");
}
rnnc_status rnnc_model_output_count(const rnnc_model* model, size_t* count) {
  return tensor_count(model, Io::kOutput, count, "rnnc_model_output_count");
}

rnnc_status rnnc_model_input_name(const rnnc_model* model, size_t index, const char** name) {
  return tensor_name(model, Io::kInput, index, name, "rnnc_model_input_name");
}
rnnc_status rnnc_model_output_name(const rnnc_model* model, size_t index, const char** name) {
  return tensor_name(model, Io::kOutput, index, name, "rnnc_model_output_name");
}

rnnc_status rnnc_model_input_element_type(const rnnc_model* model, size_t index,
                                          int32_t* element_type) {
  return tensor_element_type(model, Io::kInput, index, element_type,
                             "rnnc_model_input_element_type");
}
rnnc_status rnnc_model_output_element_type(const rnnc_model* model, size_t index,
                                           int32_t* element_type) {
  return tensor_element_type(model, Io::kOutput, index, element_type,
                             "rnnc_model_output_element_type");
}

rnnc_status rnnc_model_input_rank(const rnnc_model* model, size_t index, size_t* rank) {
  return tensor_rank(model, Io::kInput, index, rank, "rnnc_model_input_rank");
}
rnnc_status rnnc_model_output_rank(const rnnc_model* model, size_t index, size_t* rank) {
  return tensor_rank(model, Io::kOutput, index, rank, "rnnc_model_output_rank");
}

rnnc_status rnnc_model_input_dim(const rnnc_model* model, size_t index, size_t dim, int64_t* size) {
  return tensor_dim(model, Io::kInput, index, dim, size, "rnnc_model_input_dim");
}
rnnc_status rnnc_model_output_dim(const rnnc_model* model, size_t index, size_t dim,
                                  int64_t* size) {
  return tensor_dim(model, Io::kOutput, index, dim, size, "rnnc_model_output_dim");
}

rnnc_status rnnc_model_input_dim_name(const rnnc_model* model, size_t index, size_t dim,
                                      const char** name) {
  return tensor_dim_name(model, Io::kInput, index, dim, name, "rnnc_model_input_dim_name");
}
rnnc_status rnnc_model_output_dim_name(const rnnc_model* model, size_t index, size_t dim,
                                       const char** name) {
  return tensor_dim_name(model, Io::kOutput, index, dim, name, "rnnc_model_output_dim_name");
}

rnnc_status rnnc_model_state_count(const rnnc_model* model, size_t* count) {
  constexpr const char* kFunction = "rnnc_model_state_count";
  return guarded([&] {
    require_pointer(model, kFunction, "model");
    require_pointer(count, kFunction, "count");
    *count = model->model->recurrent_state().size();
  });
}

rnnc_status rnnc_model_state_pair(const rnnc_model* model, size_t index, const char** state_output,
                                  const char** state_input) {
  constexpr const char* kFunction = "rnnc_model_state_pair";
  return guarded([&] {
    require_pointer(model, kFunction, "model");
    const auto& pairs = model->model->recurrent_state();
    if (index >= pairs.size()) {
      invalid_argument(kFunction, ": state pair index ", index, " is out of range (the model has ",
                       pairs.size(), " state pairs)");
    }
    require_pointer(state_output, kFunction, "state_output");
    require_pointer(state_input, kFunction, "state_input");
    *state_output = pairs[index].first.c_str();
    *state_input = pairs[index].second.c_str();
  });
}

// ---- sessions -----------------------------------------------------------------------------------

rnnc_status rnnc_session_new(const rnnc_model* model, const rnnc_state_pair* state_pairs,
                             size_t n_state_pairs, rnnc_session** session) {
  constexpr const char* kFunction = "rnnc_session_new";
  return guarded([&] {
    require_pointer(session, kFunction, "session");
    *session = nullptr;
    require_pointer(model, kFunction, "model");
    auto handle = std::make_unique<rnnc_session>(
        model->model->new_session(to_state_pairs(state_pairs, n_state_pairs, kFunction)));
    handle->views.reserve(model->model->outputs().size());
    *session = handle.release();
  });
}

void rnnc_session_free(rnnc_session* session) { delete session; }

rnnc_status rnnc_session_run(rnnc_session* session, const rnnc_tensor* inputs, size_t n_inputs,
                             rnnc_tensor* outputs, size_t n_outputs) {
  constexpr const char* kFunction = "rnnc_session_run";
  return guarded([&] {
    require_pointer(session, kFunction, "session");
    to_named_tensors(inputs, n_inputs, kFunction, "inputs", session->inputs);
    to_named_tensors(outputs, n_outputs, kFunction, "outputs", session->outputs);
    session->session.run_into(session->inputs, session->outputs);
  });
}

rnnc_status rnnc_session_run_views(rnnc_session* session, const rnnc_tensor* inputs,
                                   size_t n_inputs, const rnnc_tensor** outputs,
                                   size_t* n_outputs) {
  constexpr const char* kFunction = "rnnc_session_run_views";
  return guarded([&] {
    require_pointer(session, kFunction, "session");
    require_pointer(outputs, kFunction, "outputs");
    require_pointer(n_outputs, kFunction, "n_outputs");
    to_named_tensors(inputs, n_inputs, kFunction, "inputs", session->inputs);
    const std::vector<rnnc::NamedTensor>& results = session->session.run(session->inputs);
    session->views.resize(results.size());
    for (size_t i = 0; i < results.size(); ++i) {
      const rnnc::NamedTensor& result = results[i];
      session->views[i] = {result.name.c_str(), static_cast<int32_t>(result.tensor.type),
                           result.tensor.shape.data(), result.tensor.shape.size(),
                           result.tensor.data};
    }
    *outputs = session->views.data();
    *n_outputs = session->views.size();
  });
}

rnnc_status rnnc_session_reset(rnnc_session* session) {
  return guarded([&] {
    require_pointer(session, "rnnc_session_reset", "session");
    session->session.reset();
  });
}

rnnc_status rnnc_session_clone(const rnnc_session* session, rnnc_session** clone) {
  constexpr const char* kFunction = "rnnc_session_clone";
  return guarded([&] {
    require_pointer(clone, kFunction, "clone");
    *clone = nullptr;
    require_pointer(session, kFunction, "session");
    auto handle = std::make_unique<rnnc_session>(session->session.clone());
    handle->views.reserve(session->views.capacity());
    *clone = handle.release();
  });
}

// ---- cross-stream batching ----------------------------------------------------------------------

void rnnc_batcher_options_init(rnnc_batcher_options* options) {
  if (!options) return;
  const rnnc::BatcherOptions defaults;
  *options = {};
  options->max_batch = defaults.max_batch;
  options->max_wait_us = defaults.max_wait_us;
  options->queue_capacity = defaults.queue_capacity;
  options->threads = defaults.threads;
}

rnnc_status rnnc_batcher_new(const rnnc_model* model, const rnnc_batcher_options* options,
                             rnnc_batcher** batcher) {
  constexpr const char* kFunction = "rnnc_batcher_new";
  return guarded([&] {
    require_pointer(batcher, kFunction, "batcher");
    *batcher = nullptr;
    require_pointer(model, kFunction, "model");
    rnnc_batcher_options defaults;
    rnnc_batcher_options_init(&defaults);
    const rnnc_batcher_options& given = options ? *options : defaults;
    rnnc::BatcherOptions cpp;
    cpp.max_batch = given.max_batch;
    cpp.max_wait_us = given.max_wait_us;
    cpp.queue_capacity = given.queue_capacity;
    cpp.threads = given.threads;
    cpp.state = to_state_pairs(given.state_pairs, given.n_state_pairs, kFunction);
    if (given.n_batch_axes > 0 && (!given.batch_axis_names || !given.batch_axis_values)) {
      invalid_argument(kFunction, ": batch_axis_names or batch_axis_values is NULL but "
                       "n_batch_axes = ", given.n_batch_axes);
    }
    for (size_t i = 0; i < given.n_batch_axes; ++i) {
      if (!given.batch_axis_names[i]) {
        invalid_argument(kFunction, ": batch_axis_names[", i, "] is NULL");
      }
      cpp.batch_axes[given.batch_axis_names[i]] = given.batch_axis_values[i];
    }
    *batcher = new rnnc_batcher(model->model, cpp);
  });
}

void rnnc_batcher_free(rnnc_batcher* batcher) { delete batcher; }

rnnc_status rnnc_stream_open(rnnc_batcher* batcher, rnnc_stream** stream) {
  return guarded([&] {
    require_pointer(stream, "rnnc_stream_open", "stream");
    *stream = nullptr;
    require_pointer(batcher, "rnnc_stream_open", "batcher");
    *stream = new rnnc_stream(batcher->batcher.open_stream());
  });
}

rnnc_status rnnc_stream_run(rnnc_stream* stream, const rnnc_tensor* inputs, size_t n_inputs,
                            rnnc_tensor* outputs, size_t n_outputs) {
  constexpr const char* kFunction = "rnnc_stream_run";
  return guarded([&] {
    require_pointer(stream, kFunction, "stream");
    if (n_outputs > 0 && !outputs) {
      invalid_argument(kFunction, ": outputs is NULL but n_outputs = ", n_outputs);
    }
    to_named_tensors(inputs, n_inputs, kFunction, "inputs", stream->inputs);
    const std::vector<rnnc::CompiledModel::Output> results =
        stream->stream.run(stream->inputs);
    for (size_t n = 0; n < n_outputs; ++n) {
      const rnnc_tensor& buffer = outputs[n];
      if (!buffer.name) invalid_argument(kFunction, ": outputs[", n, "].name is NULL");
      const rnnc::CompiledModel::Output* result = nullptr;
      for (const auto& out : results) {
        if (out.name == buffer.name) result = &out;
      }
      if (!result) {
        throw rnnc::Error(rnnc::ErrorKind::kInvalidInput,
                          cat("'", buffer.name, "' is not an output of the model"));
      }
      const std::vector<int64_t> shape(buffer.shape, buffer.shape + buffer.rank);
      if (buffer.element_type != static_cast<int32_t>(result->type) || shape != result->shape) {
        throw rnnc::Error(rnnc::ErrorKind::kInvalidInput,
                          cat("output '", buffer.name, "': the buffer does not have the element "
                              "type and shape the chunk produced (the stream's state has moved "
                              "on)"));
      }
      const size_t bytes = static_cast<size_t>(rnnc::TensorRef{result->type, result->shape,
                                                               nullptr}.byte_size());
      if (bytes > 0) std::memcpy(buffer.data, result->data(), bytes);
    }
  });
}

rnnc_status rnnc_stream_submit(rnnc_stream* stream, const rnnc_tensor* inputs, size_t n_inputs,
                               rnnc_chunk_callback done, void* user_data) {
  constexpr const char* kFunction = "rnnc_stream_submit";
  return guarded([&] {
    require_pointer(stream, kFunction, "stream");
    if (!done) invalid_argument(kFunction, ": done is NULL");
    to_named_tensors(inputs, n_inputs, kFunction, "inputs", stream->inputs);
    stream->stream.submit(stream->inputs, [done, user_data](rnnc::ChunkResult result) {
      if (result.error) {
        done(user_data, status_of(result.error->kind()), nullptr, 0, result.error->what());
        return;
      }
      const std::vector<rnnc_tensor> views = to_views(result.outputs);
      done(user_data, RNNC_OK, views.data(), views.size(), nullptr);
    });
  });
}

rnnc_status rnnc_stream_reset(rnnc_stream* stream) {
  return guarded([&] {
    require_pointer(stream, "rnnc_stream_reset", "stream");
    stream->stream.reset();
  });
}

void rnnc_stream_close(rnnc_stream* stream) { delete stream; }

}  // extern "C"
