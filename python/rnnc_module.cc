// The Python module rnnc: the public C++ API (rnnc/rnnc.h) in the shape of ONNX Runtime's
// InferenceSession, so code written for onnxruntime runs after changing its import, plus what
// ONNX Runtime lacks: streams that carry recurrent state, and the offline quantizer. Reference:
// docs/install.md, "The Python module".
//
// Arrays: an input array that is C-contiguous and aligned is read in place (others are made so
// once, as numpy.ascontiguousarray would); outputs are new arrays copied from the session's
// memory, which the session reuses at its next run. The GIL is released while a model compiles
// and while it runs, so Python threads run sessions at once.
//
// The stream batcher (rnnc::StreamBatcher) is wrapped without Python callbacks: a callback would
// run on a batcher thread and first wait for the GIL, holding back every other stream's batch
// for as long as Python code elsewhere keeps it. Results are collected instead by a blocking
// run() or by a PendingChunk's result(), each waiting with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rnnc/rnnc.h"

namespace py = pybind11;

namespace {

// ---- errors ---------------------------------------------------------------------------------------

// rnnc.Error (a RuntimeError) and one subclass per rnnc::ErrorKind; the message is rnnc's own.
struct ErrorClasses {
  py::object base, invalid_model, invalid_input, unsupported, io, internal, overloaded, cancelled;
};
ErrorClasses* g_errors = nullptr;

py::object new_error_class(py::module_& m, const char* name, py::handle base, const char* doc) {
  const std::string qualified = std::string("rnnc.") + name;
  py::object type = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base.ptr(), nullptr));
  if (!type) throw py::error_already_set();
  m.attr(name) = type;
  return type;
}

void translate_error(std::exception_ptr error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const rnnc::Error& e) {
    py::handle type;
    switch (e.kind()) {
      case rnnc::ErrorKind::kInvalidModel:
        type = g_errors->invalid_model;
        break;
      case rnnc::ErrorKind::kInvalidInput:
        type = g_errors->invalid_input;
        break;
      case rnnc::ErrorKind::kUnsupported:
        type = g_errors->unsupported;
        break;
      case rnnc::ErrorKind::kIo:
        type = g_errors->io;
        break;
      case rnnc::ErrorKind::kInternal:
        type = g_errors->internal;
        break;
      case rnnc::ErrorKind::kOverloaded:
        type = g_errors->overloaded;
        break;
      case rnnc::ErrorKind::kCancelled:
        type = g_errors->cancelled;
        break;
    }
    PyErr_SetString(type.ptr(), e.what());
  }
}

[[noreturn]] void raise_invalid_input(const std::string& message) {
  throw rnnc::Error(rnnc::ErrorKind::kInvalidInput, message);
}

// ---- the GIL ------------------------------------------------------------------------------------

// Releases the GIL for the length of a call into rnnc (compiling, running, waiting for a chunk)
// and takes it back at reacquire() or at the end of the scope. A daemon thread still in such a
// call when the interpreter finalizes is ended by Python 3.11 with pthread_exit while it takes
// the GIL back; that forced unwind must not pass the C++ frames above (their destructors would
// touch Python objects without the GIL, and a noexcept one aborts the process), so the thread
// catches it and waits there for the process to end.
//
// That catch covers a thread waiting for the GIL in WithoutGil. A thread holding it in a call of
// this module can lose it too: building the result allocates Python objects, which may run the
// garbage collector and Python code, which hands the GIL over. So the interpreter's atexit hook,
// which runs before finalization starts, sets `exiting` and gives the GIL away for a moment: from
// then on a thread parks at reacquire() without taking the GIL back, and the threads inside
// result-building finish them first. The thread running the hook (the one finalizing, which
// Python does not end) goes on: later atexit handlers may still call rnnc.
std::atomic<bool> exiting{false};
std::thread::id exiting_thread;  // written before `exiting` is set

[[noreturn]] void park_until_exit() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

class WithoutGil {
 public:
  WithoutGil() : state_(PyEval_SaveThread()) {}
  ~WithoutGil() { reacquire(); }
  WithoutGil(const WithoutGil&) = delete;
  WithoutGil& operator=(const WithoutGil&) = delete;

  void reacquire() {
    if (!state_) return;
    PyThreadState* state = std::exchange(state_, nullptr);
    if (exiting.load() && std::this_thread::get_id() != exiting_thread) park_until_exit();
#if defined(__GLIBCXX__)
    try {
      PyEval_RestoreThread(state);
    } catch (abi::__forced_unwind&) {
      park_until_exit();
    }
#else
    PyEval_RestoreThread(state);
#endif
  }

 private:
  PyThreadState* state_;
};

// ---- arrays ---------------------------------------------------------------------------------------

const char* numpy_name(rnnc::ElementType type) {
  using rnnc::ElementType;
  switch (type) {
    case ElementType::kFloat32: return "float32";
    case ElementType::kUInt8: return "uint8";
    case ElementType::kInt8: return "int8";
    case ElementType::kUInt16: return "uint16";
    case ElementType::kInt16: return "int16";
    case ElementType::kInt32: return "int32";
    case ElementType::kInt64: return "int64";
    case ElementType::kBool: return "bool";
    case ElementType::kFloat16: return "float16";
    case ElementType::kFloat64: return "float64";
    case ElementType::kUInt32: return "uint32";
    case ElementType::kUInt64: return "uint64";
    case ElementType::kBFloat16: return nullptr;  // NumPy has no bfloat16
  }
  return nullptr;
}

std::optional<rnnc::ElementType> element_type_of(const py::dtype& dtype) {
  using rnnc::ElementType;
  const char kind = dtype.kind();
  const ssize_t size = dtype.itemsize();
  if (kind == 'b' && size == 1) return ElementType::kBool;
  if (kind == 'f') {
    if (size == 2) return ElementType::kFloat16;
    if (size == 4) return ElementType::kFloat32;
    if (size == 8) return ElementType::kFloat64;
  }
  if (kind == 'i') {
    if (size == 1) return ElementType::kInt8;
    if (size == 2) return ElementType::kInt16;
    if (size == 4) return ElementType::kInt32;
    if (size == 8) return ElementType::kInt64;
  }
  if (kind == 'u') {
    if (size == 1) return ElementType::kUInt8;
    if (size == 2) return ElementType::kUInt16;
    if (size == 4) return ElementType::kUInt32;
    if (size == 8) return ElementType::kUInt64;
  }
  return std::nullopt;
}

// Input arrays as rnnc tensors; holds the arrays (converted ones included) for the run.
struct Feed {
  std::vector<py::array> arrays;
  std::vector<rnnc::NamedTensor> tensors;
};

constexpr int kNumpyAligned = 0x0100;  // NPY_ARRAY_ALIGNED

rnnc::NamedTensor tensor_of(const std::string& name, const py::handle& value,
                            std::vector<py::array>& keep) {
  // np.asarray, then C order and alignment: no copy when the array has them already.
  py::array array = py::array::ensure(value, py::array::c_style | kNumpyAligned);
  if (!array) {
    PyErr_Clear();
    raise_invalid_input("input '" + name + "': " + std::string(py::str(value.get_type())) +
                        " is not an array (give a numpy.ndarray)");
  }
  std::optional<rnnc::ElementType> type = element_type_of(array.dtype());
  if (!type) {
    raise_invalid_input("input '" + name + "': NumPy dtype " + std::string(py::str(array.dtype())) +
                        " has no ONNX element type rnnc holds");
  }
  // rnnc only reads inputs; a read-only array (np.load's mmap mode, a broadcast view) is fine.
  rnnc::NamedTensor tensor{name, {*type, {}, const_cast<void*>(array.data())}};
  for (ssize_t d = 0; d < array.ndim(); ++d) tensor.tensor.shape.push_back(array.shape(d));
  keep.push_back(std::move(array));
  return tensor;
}

Feed feed_of(const py::dict& input_feed) {
  Feed feed;
  for (const auto& [key, value] : input_feed) {
    feed.tensors.push_back(tensor_of(py::cast<std::string>(key), value, feed.arrays));
  }
  return feed;
}

py::array array_of(const rnnc::NamedTensor& view) {
  const char* dtype = numpy_name(view.tensor.type);
  if (!dtype) {
    throw rnnc::Error(rnnc::ErrorKind::kUnsupported,
                      "output '" + view.name + "' is " + rnnc::element_type_name(view.tensor.type) +
                          ", which NumPy has no type for");
  }
  // Without a base object pybind11 copies the data into the new array.
  return py::array(py::dtype(dtype), view.tensor.shape, view.tensor.data);
}

// The outputs a run returns: `names`, or (None) every output not in `hidden`, in graph order.
py::list select_outputs(const std::vector<rnnc::NamedTensor>& views,
                        const std::optional<std::vector<std::string>>& names,
                        const std::set<std::string>& hidden) {
  py::list result;
  if (!names) {
    for (const rnnc::NamedTensor& view : views) {
      if (!hidden.count(view.name)) result.append(array_of(view));
    }
    return result;
  }
  for (const std::string& name : *names) {
    const rnnc::NamedTensor* found = nullptr;
    for (const rnnc::NamedTensor& view : views) {
      if (view.name == name) found = &view;
    }
    if (!found) {
      std::string list;
      for (const rnnc::NamedTensor& view : views) {
        if (!hidden.count(view.name)) list += (list.empty() ? "'" : ", '") + view.name + "'";
      }
      raise_invalid_input("'" + name + "' is not an output of the model (outputs: " + list + ")");
    }
    result.append(array_of(*found));
  }
  return result;
}

// ---- model metadata -------------------------------------------------------------------------------

// onnxruntime.NodeArg's shape: name, shape (ints, symbolic dims as strings, None when unknown),
// type ("tensor(float)").
struct NodeArg {
  std::string name;
  py::list shape;
  std::string type;
};

NodeArg node_arg_of(const rnnc::TensorInfo& info) {
  NodeArg arg{info.name, py::list(), std::string("tensor(") + rnnc::element_type_name(info.type) + ")"};
  for (const std::string& dim : info.dims) {
    if (dim == "?") {
      arg.shape.append(py::none());
    } else if (!dim.empty() && dim.find_first_not_of("0123456789") == std::string::npos) {
      arg.shape.append(py::int_(std::stoll(dim)));
    } else {
      arg.shape.append(py::str(dim));
    }
  }
  return arg;
}

// `fix`: {input name: int or sequence of ints} as ModelOptions::fixed_inputs.
std::map<std::string, std::vector<int64_t>> fixed_inputs_of(const py::dict& fix) {
  std::map<std::string, std::vector<int64_t>> inputs;
  for (const auto& [key, value] : fix) {
    const std::string name = py::cast<std::string>(key);
    try {
      if (py::isinstance<py::int_>(value) || py::hasattr(value, "__index__")) {
        inputs[name] = {value.cast<int64_t>()};
      } else {
        inputs[name] = value.cast<std::vector<int64_t>>();
      }
    } catch (const py::cast_error&) {
      raise_invalid_input("fixed input '" + name + "': give an int or a sequence of ints, not " +
                          std::string(py::str(value.get_type())));
    }
  }
  return inputs;
}

std::map<std::string, std::string> state_map(const std::optional<py::object>& state) {
  std::map<std::string, std::string> pairs;
  if (!state || state->is_none()) return pairs;
  if (py::isinstance<py::dict>(*state)) {
    for (const auto& [output, input] : state->cast<py::dict>()) {
      pairs[py::cast<std::string>(output)] = py::cast<std::string>(input);
    }
    return pairs;
  }
  for (const auto& pair : *state) {
    auto [output, input] = pair.cast<std::pair<std::string, std::string>>();
    pairs[output] = input;
  }
  return pairs;
}

// ---- sessions -------------------------------------------------------------------------------------

// A stream of runs carrying recurrent state (rnnc::Session). One run at a time: a second Python
// thread waits for the first (with the GIL released).
class Stream {
 public:
  Stream(rnnc::Session session, std::set<std::string> hidden)
      : session_(std::move(session)), hidden_(std::move(hidden)) {}

  py::list run(const std::optional<std::vector<std::string>>& output_names,
               const py::dict& input_feed) {
    Feed feed = feed_of(input_feed);
    WithoutGil released;
    std::lock_guard<std::mutex> lock(mutex_);
    const std::vector<rnnc::NamedTensor>& views = session_.run(feed.tensors);
    released.reacquire();
    return select_outputs(views, output_names, hidden_);
  }

  void reset() {
    WithoutGil released;
    std::lock_guard<std::mutex> lock(mutex_);
    session_.reset();
  }

  // The carried state: state input name -> a copy of its value (empty before the first run).
  py::dict state() {
    WithoutGil released;
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<rnnc::NamedTensor> values = session_.state();
    released.reacquire();
    py::dict result;
    for (const rnnc::NamedTensor& value : values) result[py::str(value.name)] = array_of(value);
    return result;
  }

  std::unique_ptr<Stream> clone() {
    WithoutGil released;
    std::lock_guard<std::mutex> lock(mutex_);
    return std::make_unique<Stream>(session_.clone(), hidden_);
  }

 private:
  rnnc::Session session_;
  std::set<std::string> hidden_;
  std::mutex mutex_;
};

class InferenceSession {
 public:
  InferenceSession(const py::object& path_or_bytes, int threads,
                   const std::optional<std::string>& quantize,
                   const py::dict& fix, const std::map<std::string, int64_t>& dims,
                   const std::string& plan,
                   const std::optional<std::string>& cache_dir,
                   const std::optional<std::string>& target, bool flush_denormals) {
    rnnc::ModelOptions options;
    options.threads = threads;
    options.plan = rnnc::parse_plan(plan);
    options.quantization_config = quantize.value_or("");
    options.fixed_inputs = fixed_inputs_of(fix);
    options.fixed_dims = dims;
    options.cache_dir = cache_dir.value_or("");
    options.target = target.value_or("");
    options.flush_denormals = flush_denormals;
    if (py::isinstance<py::bytes>(path_or_bytes)) {
      const std::string bytes = path_or_bytes.cast<std::string>();
      WithoutGil released;
      model_ = rnnc::CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
    } else {
      const std::string path =
          py::str(py::module_::import("os").attr("fspath")(path_or_bytes)).cast<std::string>();
      WithoutGil released;
      model_ = rnnc::CompiledModel::load(path, options);
    }
    // The state rnnc exposed for streams is not part of the model ONNX Runtime would show.
    for (const auto& [output, input] : model_->recurrent_state()) {
      hidden_outputs_.insert(output);
      hidden_inputs_.insert(input);
    }
  }

  std::vector<NodeArg> get_inputs() const {
    std::vector<NodeArg> args;
    for (const rnnc::TensorInfo& info : model_->inputs()) {
      if (!hidden_inputs_.count(info.name)) args.push_back(node_arg_of(info));
    }
    return args;
  }

  std::vector<NodeArg> get_outputs() const {
    std::vector<NodeArg> args;
    for (const rnnc::TensorInfo& info : model_->outputs()) {
      if (!hidden_outputs_.count(info.name)) args.push_back(node_arg_of(info));
    }
    return args;
  }

  // One stateless run (as onnxruntime's): exposed state starts from zeros, a session per call,
  // so any number of Python threads may call it at once.
  py::list run(const std::optional<std::vector<std::string>>& output_names,
               const py::dict& input_feed) const {
    Feed feed = feed_of(input_feed);
    WithoutGil released;
    rnnc::Session session = model_->new_session();
    const std::vector<rnnc::NamedTensor>& views = session.run(feed.tensors);
    released.reacquire();
    return select_outputs(views, output_names, hidden_outputs_);
  }

  std::unique_ptr<Stream> new_stream(const std::optional<py::object>& state) const {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const auto& pair : state_map(state)) pairs.push_back(pair);
    std::set<std::string> hidden = hidden_outputs_;
    WithoutGil released;
    return std::make_unique<Stream>(model_->new_session(pairs), std::move(hidden));
  }

  const rnnc::CompiledModel& model() const { return *model_; }
  const std::shared_ptr<const rnnc::CompiledModel>& shared_model() const { return model_; }
  const std::set<std::string>& hidden_outputs() const { return hidden_outputs_; }

 private:
  std::shared_ptr<const rnnc::CompiledModel> model_;
  std::set<std::string> hidden_inputs_, hidden_outputs_;
};

// ---- stream batcher -----------------------------------------------------------------------------

// What a batched chunk's outputs are turned into: the names asked for (None: every output but
// the exposed state), as Stream.run returns them.
struct OutputSelection {
  std::optional<std::vector<std::string>> names;
  std::shared_ptr<const std::set<std::string>> hidden;

  py::list select(const std::vector<rnnc::CompiledModel::Output>& outputs) const {
    std::vector<rnnc::NamedTensor> views;
    for (const rnnc::CompiledModel::Output& output : outputs) {
      views.push_back({output.name, {output.type, output.shape, const_cast<void*>(output.data())}});
    }
    return select_outputs(views, names, *hidden);
  }
};

// A chunk submitted to a batch stream (BatchStream::submit's future), as
// concurrent.futures.Future's result() and done().
class PendingChunk {
 public:
  PendingChunk(std::shared_future<std::vector<rnnc::CompiledModel::Output>> future,
               OutputSelection selection)
      : future_(std::move(future)), selection_(std::move(selection)) {}

  // The outputs, or the chunk's error raised; TimeoutError when `timeout` seconds pass first.
  py::list result(std::optional<double> timeout) const {
    bool ready = true;
    {
      WithoutGil released;
      if (timeout) {
        const auto wait = std::chrono::duration<double>(std::max(0.0, *timeout));
        ready = future_.wait_for(wait) == std::future_status::ready;
      } else {
        future_.wait();
      }
    }
    if (!ready) {
      PyErr_SetString(PyExc_TimeoutError, "the chunk's result is not ready yet");
      throw py::error_already_set();
    }
    return selection_.select(future_.get());
  }

  bool done() const {
    return future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

 private:
  std::shared_future<std::vector<rnnc::CompiledModel::Output>> future_;
  OutputSelection selection_;
};

// One stream of a StreamBatcher (rnnc::BatchStream); its methods may be called from any thread.
class BatchStream {
 public:
  BatchStream(rnnc::BatchStream stream, std::shared_ptr<const std::set<std::string>> hidden)
      : stream_(std::move(stream)), hidden_(std::move(hidden)) {}

  py::list run(const std::optional<std::vector<std::string>>& output_names,
               const py::dict& input_feed) {
    Feed feed = feed_of(input_feed);
    std::vector<rnnc::CompiledModel::Output> outputs;
    {
      WithoutGil released;
      outputs = stream_.run(feed.tensors);
    }
    return OutputSelection{output_names, hidden_}.select(outputs);
  }

  PendingChunk submit(const std::optional<std::vector<std::string>>& output_names,
                      const py::dict& input_feed) {
    Feed feed = feed_of(input_feed);
    std::shared_future<std::vector<rnnc::CompiledModel::Output>> future;
    {
      WithoutGil released;
      future = stream_.submit(feed.tensors).share();
    }
    return PendingChunk(std::move(future), OutputSelection{output_names, hidden_});
  }

  void reset() { stream_.reset(); }
  void close() { stream_.close(); }
  void wait() const {
    WithoutGil released;
    stream_.wait();
  }
  uint64_t id() const { return stream_.id(); }

 private:
  rnnc::BatchStream stream_;
  std::shared_ptr<const std::set<std::string>> hidden_;
};

// rnnc::StreamBatcher until close(): Python destroys objects when it likes (the streams keep
// their batcher alive), so a service that stops says when, as the C++ destructor does it.
class StreamBatcher {
 public:
  StreamBatcher(const InferenceSession& session, const std::optional<py::object>& state,
                int max_batch, int64_t max_wait_us, size_t queue_capacity,
                const std::map<std::string, int>& batch_axes, int threads)
      : hidden_(std::make_shared<const std::set<std::string>>(session.hidden_outputs())) {
    rnnc::BatcherOptions options;
    for (const auto& pair : state_map(state)) options.state.push_back(pair);
    options.max_batch = max_batch;
    options.max_wait_us = max_wait_us;
    options.queue_capacity = queue_capacity;
    options.batch_axes = batch_axes;
    options.threads = threads;
    WithoutGil released;
    batcher_ = std::make_unique<rnnc::StreamBatcher>(session.shared_model(), options);
  }

  BatchStream open_stream() {
    WithoutGil released;
    std::lock_guard<std::mutex> lock(mutex_);
    return BatchStream(open().open_stream(), hidden_);
  }

  std::map<std::string, int> batch_axes() {
    WithoutGil released;
    std::lock_guard<std::mutex> lock(mutex_);
    return open().batch_axes();
  }

  py::dict stats() {
    rnnc::BatcherStats stats;
    {
      WithoutGil released;
      std::lock_guard<std::mutex> lock(mutex_);
      stats = open().stats();
    }
    py::dict result;
    result["runs"] = stats.runs;
    result["chunks"] = stats.chunks;
    py::dict sizes;
    for (size_t b = 1; b < stats.batch_sizes.size(); ++b) {
      if (stats.batch_sizes[b] > 0) sizes[py::int_(b)] = stats.batch_sizes[b];
    }
    result["batch_sizes"] = sizes;
    result["cancelled"] = stats.cancelled;
    result["overloaded"] = stats.overloaded;
    return result;
  }

  // Waits for the batches running, cancels the queued chunks (CancelledError) and makes later
  // submits on the streams fail; as destroying the C++ batcher. Idempotent.
  void close() {
    WithoutGil released;
    std::lock_guard<std::mutex> lock(mutex_);
    batcher_.reset();
  }

 private:
  rnnc::StreamBatcher& open() const {
    if (!batcher_) raise_invalid_input("the StreamBatcher is closed");
    return *batcher_;
  }

  std::shared_ptr<const std::set<std::string>> hidden_;
  std::mutex mutex_;
  std::unique_ptr<rnnc::StreamBatcher> batcher_;
};

// ---- quantization ---------------------------------------------------------------------------------

py::dict quantize(const py::object& model, const py::object& output, const py::dict& fix,
                  const std::map<std::string, int64_t>& dims,
                  const std::optional<py::object>& config, const std::vector<py::dict>& calibrate,
                  const std::optional<py::object>& report, bool measure_error, bool guard,
                  double max_error) {
  py::object fspath = py::module_::import("os").attr("fspath");
  const std::string input_path = py::str(fspath(model));
  const std::string output_path = py::str(fspath(output));
  rnnc::QuantizeOptions options;
  options.fixed_inputs = fixed_inputs_of(fix);
  options.fixed_dims = dims;
  if (config && !config->is_none()) options.config = py::str(fspath(*config));
  options.measure_error = measure_error;
  options.guard = guard;
  options.max_error = max_error;
  std::vector<py::array> keep;
  for (const py::dict& sample : calibrate) {
    std::vector<rnnc::NamedTensor>& tensors = options.calibration.emplace_back();
    for (const auto& [key, value] : sample) {
      tensors.push_back(tensor_of(py::cast<std::string>(key), value, keep));
    }
  }
  rnnc::QuantizeResult result;
  {
    WithoutGil released;
    result = rnnc::quantize_model(input_path, output_path, options);
  }
  if (report && !report->is_none()) {
    py::module_::import("pathlib").attr("Path")(fspath(*report)).attr("write_text")(
        "# rnnc quantize report\n\nModel: `" + input_path + "` -> `" + output_path + "`\n\n" +
        result.report);
  }
  py::dict summary;
  summary["nodes"] = result.nodes;
  summary["quantized_nodes"] = result.quantized_nodes;
  summary["weight_bytes_before"] = result.weight_bytes_before;
  summary["weight_bytes_after"] = result.weight_bytes_after;
  summary["report"] = result.report;
  summary["summary"] = result.summary;
  return summary;
}

}  // namespace

PYBIND11_MODULE(rnnc, m) {
  m.doc() =
      "rnnc: an optimizing inference engine for recurrent ONNX models. InferenceSession has "
      "onnxruntime's shape (get_inputs, get_outputs, run); new_stream() gives a stream that "
      "carries recurrent state between runs; quantize() is `rnnc quantize`. See docs/install.md.";
  m.attr("__version__") = RNNC_VERSION_STRING;
  // Before finalization (WithoutGil): park the threads still in rnnc calls, after letting the
  // ones building results finish.
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    exiting_thread = std::this_thread::get_id();
    exiting.store(true);
    const bool others = py::module_::import("threading").attr("active_count")().cast<int>() > 1;
    if (!others) return;
    py::gil_scoped_release released;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }));

  // Never destroyed: the classes live as long as the interpreter.
  ErrorClasses& errors = *new ErrorClasses;
  errors.base = new_error_class(m, "Error", PyExc_RuntimeError, "Any error rnnc reports.");
  errors.invalid_model = new_error_class(m, "InvalidModelError", errors.base,
                                         "The model is malformed or uses an operator wrongly.");
  errors.invalid_input = new_error_class(m, "InvalidInputError", errors.base,
                                         "A run's input, an option or an argument is wrong.");
  errors.unsupported =
      new_error_class(m, "UnsupportedError", errors.base, "Valid ONNX that rnnc does not handle.");
  errors.io = new_error_class(m, "IoError", errors.base,
                              "A file cannot be read or written, or memory ran out.");
  errors.internal = new_error_class(m, "InternalError", errors.base,
                                    "An rnnc invariant broke (a bug: please report it).");
  errors.overloaded = new_error_class(m, "OverloadedError", errors.base,
                                      "A stream batcher's queue is full: shed the load or retry.");
  errors.cancelled = new_error_class(m, "CancelledError", errors.base,
                                     "A queued chunk was cancelled by its batcher's destruction.");
  g_errors = &errors;
  py::register_exception_translator(&translate_error);

  py::class_<NodeArg>(m, "NodeArg", "A model input or output, as onnxruntime.NodeArg.")
      .def_readonly("name", &NodeArg::name)
      .def_readonly("shape", &NodeArg::shape,
                    "Dims: ints, symbolic dims as strings ('batch'), None when unknown.")
      .def_readonly("type", &NodeArg::type, "'tensor(float)', 'tensor(int64)', ...")
      .def("__repr__", [](const NodeArg& arg) {
        return "NodeArg(name='" + arg.name + "', type='" + arg.type +
               "', shape=" + std::string(py::repr(arg.shape)) + ")";
      });

  py::class_<Stream>(m, "Stream",
                     "Runs of one model that carry recurrent state from one run to the next "
                     "(InferenceSession.new_stream). One run at a time.")
      .def("run",
           [](Stream& stream, const std::optional<std::vector<std::string>>& output_names,
              const py::dict& input_feed, const py::object& /*run_options*/) {
             return stream.run(output_names, input_feed);
           },
           py::arg("output_names"), py::arg("input_feed"),
           py::arg("run_options") = py::none(),
           "As InferenceSession.run; state inputs may be left out (the stream feeds the carried "
           "state, zeros at first).")
      .def("reset", &Stream::reset, "Zero the carried state, as a new stream has it.")
      .def("state", &Stream::state, "The carried state: {state input name: array copy}.")
      .def("clone", &Stream::clone, "An independent stream with a copy of this one's state.");

  py::class_<InferenceSession>(m, "InferenceSession",
                               "An ONNX model compiled for this machine (onnxruntime's "
                               "InferenceSession shape).")
      .def(py::init([](const py::object& path_or_bytes, const py::object& /*sess_options*/,
                       const py::object& /*providers*/, const py::object& /*provider_options*/,
                       int threads, const std::optional<std::string>& quantize, const py::dict& fix,
                       const std::map<std::string, int64_t>& dims, const std::string& plan,
                       const std::optional<std::string>& cache_dir,
                       const std::optional<std::string>& target, bool flush_denormals) {
             return std::make_unique<InferenceSession>(path_or_bytes, threads, quantize, fix, dims,
                                                       plan, cache_dir, target, flush_denormals);
           }),
           py::arg("path_or_bytes"), py::arg("sess_options") = py::none(),
           py::arg("providers") = py::none(), py::arg("provider_options") = py::none(),
           py::kw_only(), py::arg("threads") = 1, py::arg("quantize") = py::none(),
           py::arg("fix") = py::dict(),
           py::arg("dims") = std::map<std::string, int64_t>{}, py::arg("plan") = "auto",
           py::arg("cache_dir") = py::none(), py::arg("target") = py::none(),
           py::arg("flush_denormals") = true,
           "Load and compile a model (a path or the bytes of an ONNX file). sess_options, "
           "providers and provider_options are accepted for onnxruntime code and ignored.")
      .def("get_inputs", &InferenceSession::get_inputs)
      .def("get_outputs", &InferenceSession::get_outputs)
      .def("get_providers", [](const InferenceSession&) {
        return std::vector<std::string>{"CPUExecutionProvider"};
      })
      .def("run",
           [](const InferenceSession& session,
              const std::optional<std::vector<std::string>>& output_names,
              const py::dict& input_feed, const py::object& /*run_options*/) {
             return session.run(output_names, input_feed);
           },
           py::arg("output_names"), py::arg("input_feed"),
           py::arg("run_options") = py::none(),
           "Run once: output_names (None: all) and {input name: array}; returns a list of "
           "arrays.")
      .def("new_stream", &InferenceSession::new_stream, py::arg("state") = py::none(),
           "A stream that carries the model's recurrent state between runs. `state` adds the "
           "model's own state tensors as {output: input} (Silero VAD: {'stateN': 'state'}).")
      .def_property_readonly(
          "recurrent_state",
          [](const InferenceSession& s) { return s.model().recurrent_state(); },
          "The (state output, state input) pairs rnnc exposed for streams.")
      .def("describe", [](const InferenceSession& s) { return s.model().describe(); },
           "Blocks, plans and kernels, as `rnnc plan`.");

  py::class_<PendingChunk>(m, "PendingChunk",
                           "A chunk submitted to a BatchStream (BatchStream.submit), as "
                           "concurrent.futures.Future.")
      .def("result", &PendingChunk::result, py::arg("timeout") = py::none(),
           "Wait for the chunk (the GIL released) and return its outputs, as Stream.run, or "
           "raise its error; TimeoutError when `timeout` seconds pass first. May be called "
           "again.")
      .def("done", &PendingChunk::done, "Whether the chunk has completed (outputs or error).");

  py::class_<BatchStream>(m, "BatchStream",
                          "One stream of a StreamBatcher (StreamBatcher.open_stream): its chunks "
                          "run in order, in batched runs with other streams' chunks, carrying "
                          "its own state. Any thread may use it.")
      .def(
          "run",
          [](BatchStream& stream, const std::optional<std::vector<std::string>>& output_names,
             const py::dict& input_feed,
             const py::object& /*run_options*/) { return stream.run(output_names, input_feed); },
          py::arg("output_names"), py::arg("input_feed"), py::arg("run_options") = py::none(),
          "Submit a chunk and wait for it (the GIL released): as Stream.run. Raises "
          "OverloadedError when the batcher's queue is full.")
      .def("submit", &BatchStream::submit, py::arg("output_names"), py::arg("input_feed"),
           "Queue a chunk and return at once (inputs copied during the call): a PendingChunk. "
           "The chunk is checked here: a bad one raises and is not queued.")
      .def("reset", &BatchStream::reset, "Zero the state for the chunks submitted after this call.")
      .def("close", &BatchStream::close,
           "Refuse later chunks; those already submitted still run. Idempotent.")
      .def("wait", &BatchStream::wait, "Block until every chunk submitted so far has completed.")
      .def_property_readonly("id", &BatchStream::id, "Unique within its batcher.")
      .def(
          "__enter__", [](BatchStream& stream) -> BatchStream& { return stream; },
          py::return_value_policy::reference)
      .def("__exit__", [](BatchStream& stream, const py::args&) { stream.close(); });

  py::class_<StreamBatcher>(m, "StreamBatcher",
                            "Many streams of one model in batched runs (rnnc::StreamBatcher, "
                            "docs/runtime.md): the chunks ready at the same time run as one "
                            "batch, which reads the weights once for all of them.")
      .def(py::init<const InferenceSession&, const std::optional<py::object>&, int, int64_t, size_t,
                    const std::map<std::string, int>&, int>(),
           py::arg("session"), py::kw_only(), py::arg("state") = py::none(),
           py::arg("max_batch") = 32, py::arg("max_wait_us") = 2000,
           py::arg("queue_capacity") = 1024, py::arg("batch_axes") = std::map<std::string, int>{},
           py::arg("threads") = 1,
           "A batcher over the session's model. state: the model's own state tensors as "
           "{output: input}, as new_stream; max_batch: chunks per run; max_wait_us: how long "
           "the oldest ready chunk waits for others; queue_capacity: chunks queued over all "
           "streams before submits raise OverloadedError; batch_axes: {tensor: axis or -1} "
           "where the model's dims cannot tell; threads: batched runs at once.")
      .def("open_stream", &StreamBatcher::open_stream, py::keep_alive<0, 1>(),
           "A new stream (zero state). It keeps the batcher alive.")
      .def("batch_axes", &StreamBatcher::batch_axes,
           "{input or output name: its batch axis, -1 for none}.")
      .def("stats", &StreamBatcher::stats,
           "{runs, chunks, batch_sizes: {size: runs}, cancelled, overloaded}.")
      .def("close", &StreamBatcher::close,
           "Stop: wait for the batches running, cancel the queued chunks (CancelledError), fail "
           "later submits. Idempotent; also on leaving a `with` block.")
      .def(
          "__enter__", [](StreamBatcher& batcher) -> StreamBatcher& { return batcher; },
          py::return_value_policy::reference)
      .def("__exit__", [](StreamBatcher& batcher, const py::args&) { batcher.close(); });

  m.def("quantize", &quantize, py::arg("model"), py::arg("output"),
        py::arg("fix") = py::dict(),
        py::arg("dims") = std::map<std::string, int64_t>{}, py::arg("config") = py::none(),
        py::arg("calibrate") = std::vector<py::dict>{}, py::arg("report") = py::none(),
        py::arg("measure_error") = true, py::arg("guard") = true, py::arg("max_error") = 0.0,
        "`rnnc quantize`: quantize the float model at `model` and write standard ONNX to "
        "`output`. fix/dims specialize it first; config is a JSON scheme file (None: the "
        "default int8 scheme); calibrate is a list of samples {input name: array}; report "
        "writes the Markdown report there. The quantization guard keeps nodes wider where the "
        "outputs' error would pass max_error of their range (0: the config's, 2% by default; "
        "guard=False: as configured). Returns {nodes, quantized_nodes, weight_bytes_before, "
        "weight_bytes_after, report, summary}.");
}
