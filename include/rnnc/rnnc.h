// rnnc public C++ API: load an ONNX recurrent model, compile it once, run it from many threads.
//
//   auto model = rnnc::CompiledModel::load("vad.onnx", options);     // compiled, immutable, shareable
//   rnnc::Session session = model->new_session();            // one per stream / thread
//   for (chunk : audio) {
//     const auto& out = session.run({{"input", {rnnc::ElementType::kFloat32, {1, 512}, chunk}}});
//     ...                                                     // state carried to the next chunk
//   }
//
// Threading: a CompiledModel is immutable; any number of threads may create sessions from it and run
// them at once. A Session is not thread-safe: one thread at a time (one per stream).
// Memory: inputs are read in place from caller memory (no copies); outputs are written into
// caller buffers (run_into) or into session memory the session reuses (run). After the first
// runs at a given size, a run performs no heap allocation on the compiled path.
// Errors: everything throws rnnc::Error (rnnc/error.h); a bad model or input never aborts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rnnc/error.h"
#include "rnnc/version.h"

// Everything declared here is librnnc.so's public API (its symbols are exported), except the
// classes' private implementation types (RNNC_IMPL_TYPE), which stay inside the library.
#pragma GCC visibility push(default)
#define RNNC_IMPL_TYPE __attribute__((visibility("hidden")))

namespace rnnc {

// Element types, numbered as ONNX's TensorProto.DataType.
enum class ElementType : int32_t {
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};
size_t element_size(ElementType type);       // bytes per element
const char* element_type_name(ElementType type);  // ONNX spelling: "float", "int64", ...

// A dense row-major tensor in caller memory. rnnc reads inputs and writes outputs in place; the
// memory must stay valid for the call and be aligned for the element type.
struct TensorRef {
  ElementType type = ElementType::kFloat32;
  std::vector<int64_t> shape;
  void* data = nullptr;

  int64_t element_count() const;
  size_t byte_size() const { return static_cast<size_t>(element_count()) * element_size(type); }
};

struct NamedTensor {
  std::string name;
  TensorRef tensor;
};

// A graph input or output as the compiled model sees it: dims are numbers or symbolic names
// ("batch", "sequence") that each run binds.
struct TensorInfo {
  std::string name;
  ElementType type = ElementType::kFloat32;
  std::vector<std::string> dims;  // "128", "batch", "?" (unknown)
  std::string to_string() const;  // "input: float[batch, sequence, 128]"
};

// How the executor schedules a run.
enum class Plan {
  kAuto,        // sequential with threads = 1; with more, per input shape sequential or the plan
                // that overlaps work (pipeline for a chain of recurrent layers, else parallel),
                // whichever the shape's first runs measured faster (docs/runtime.md)
  kSequential,  // blocks in order (Halide's parallel loops use the model's threads)
  kParallel,    // a TBB flow graph: independent blocks at once
  kPipeline,    // blocks in order, except that chains of recurrent layers overlap over time
};
const char* plan_name(Plan plan);
Plan parse_plan(const std::string& name);  // kInvalidInput for unknown names

struct ModelOptions {
  int threads = 1;  // worker threads of the model's executor (its own TBB arena)
  Plan plan = Plan::kAuto;
  // Specialization before compiling: dims fixed by symbol ("batch" -> 1) and inputs fixed to
  // constants (graph_opt folds everything they decide).
  std::map<std::string, int64_t> fixed_dims;
  std::map<std::string, std::vector<int64_t>> fixed_inputs;  // int64 inputs (e.g. "sr" -> {16000})
  // Compiled-kernel cache; "" = $RNNC_CACHE_DIR, else a default that also works for a service
  // user without a home directory (docs/install.md, "Kernel cache").
  std::string cache_dir;
  // The CPU features kernels may use: "" = $RNNC_TARGET, else "host" (this CPU's, from CPUID);
  // "x86-64" (SSE2), "x86-64-v2" (SSE4.2), "x86-64-v3" (AVX2, FMA), "x86-64-v4", "x86-64-v4-vnni",
  // "zen4", "sapphirerapids". A target
  // with a feature this CPU lacks is an invalid-input error naming it.
  std::string target;
  bool reference = false;   // run every block on the reference evaluator (debugging)
  // Streaming: expose the state of recurrent nodes that start from zeros (no initial_h input)
  // and end without a Y_h output, so a Session can carry it (see Session).
  bool expose_recurrent_state = true;
  // Quantize at load (docs/quant.md): "" none, "default" (the products of LSTM/GRU/RNN nodes and
  // of MatMul/Gemm with a constant 2-D B: int8 weights per output row or column, dynamic u8
  // activations), or the path of a JSON config. A model written by `rnnc quantize`
  // is already quantized and needs nothing here.
  // Before the quantized model is used, the quantization guard (docs/quant.md) measures it
  // against the float model and keeps float (or widens to 12 bits, for recurrent nodes) the most
  // sensitive nodes until each float output's max error is within the budget: by default 2% of
  // that output's range over the measured inputs. It measures on generated inputs (real data is
  // better: `rnnc quantize --calibrate` writes a model decided on it); the decision is cached in
  // the kernel cache directory, so only the first load of a model measures.
  std::string quantization_config;
  bool quantization_guard = true;      // false: quantize as configured, unmeasured (experiments)
  double quantization_max_error = 0;   // the budget's fraction of each output's range; 0: the
                                       // config's guard.max_error (default 0.02)
  // Sizes of the symbolic dims in the inputs the guard generates (dims fixed_dims binds need
  // none); others are 16.
  std::map<std::string, int64_t> quantization_dims;
  // Overflow mode (docs/quant.md): the quantized kernels also count, per node, activations
  // clamped to their integer range and exact sums beyond the declared accumulation width
  // (CompiledModel::overflow_report). Slower: debugging only.
  bool count_overflow = false;
  // Run the kernels with flush-to-zero and denormals-are-zero (x86 MXCSR FTZ and DAZ, set per
  // run on the threads rnnc uses and restored after): values below 1.2e-38 become 0, which
  // avoids the ~100-cycle penalty each subnormal operation takes on Intel cores (Silero VAD runs
  // 3-4x faster). Off: IEEE subnormals, as the reference evaluator computes.
  bool flush_denormals = true;
  // Shape specialization (docs/runtime.md): for each new set of symbolic dims the runs bind (and
  // values of required scalar integer inputs), the shape's first run compiles a program with
  // them fixed and keeps it when it folds shape computations away, for up to
  // max_specialized_shapes shapes. Only for models whose program still computes on shapes (If,
  // Shape, Size nodes) and whose weights are at most 16 MiB; with plan kAuto and threads > 1
  // (plans chosen per shape) runs stay generic.
  bool specialize_shapes = true;
  int max_specialized_shapes = 4;
};

class Session;

class CompiledModel : public std::enable_shared_from_this<CompiledModel> {
 public:
  static std::shared_ptr<const CompiledModel> load(const std::string& path, const ModelOptions& options = {});
  static std::shared_ptr<const CompiledModel> load_bytes(const void* data, size_t size,
                                                 const ModelOptions& options = {});
  ~CompiledModel();

  // The inputs a run takes (state inputs a session feeds itself are listed too) and the outputs
  // it produces, in graph order.
  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  // The recurrent state rnnc exposed (ModelOptions::expose_recurrent_state): pairs (state
  // output, state input), named "<node>.Y_h" -> "<node>.initial_h": the output's value after a
  // run is the input's value at the next run of a session. A session adds the pairs given to
  // new_session.
  const std::vector<std::pair<std::string, std::string>>& recurrent_state() const;
  // The plan runs use: kAuto only when it is chosen per input shape (threads > 1; then
  // Session::last_plan() says which one a run used and describe() lists the choices so far).
  Plan plan() const;
  // The plans runs choose among: {plan()}, or with kAuto {kSequential, kPipeline or kParallel}.
  std::vector<Plan> plan_candidates() const;
  int threads() const;
  // Blocks, their kinds, nodes, plans, costs and compile times (as `rnnc plan`).
  std::string describe() const;
  // ModelOptions::count_overflow: the counts of every run so far (all sessions), one line per
  // quantized node; "" when the model was not loaded to count.
  std::string overflow_report() const;
  // Blocks until no run (of any session, in any thread) is compiling a shape specialization.
  void wait_for_specializations() const;
  // Quantization at load: one line (nodes quantized as configured / 12-bit / float, the measured
  // error against the budget, the inputs it was measured on), and the full report (markdown: the
  // error budget per output, per node the precision, scheme, sensitivity and why). "" when the
  // model was not quantized at load.
  std::string quantization_summary() const;
  std::string quantization_report() const;

  // A new session with zero state. `state` adds (output, input) pairs of the model's own state
  // tensors (e.g. Silero's {"hn", "h"}, {"cn", "c"}) to the exposed recurrent state.
  Session new_session(const std::vector<std::pair<std::string, std::string>>& state = {}) const;

  // One stateless run with owned outputs (allocates; a service should use a Session).
  struct Output {
    std::string name;
    ElementType type = ElementType::kFloat32;
    std::vector<int64_t> shape;
    std::shared_ptr<const void> storage;
    const void* data() const { return storage.get(); }
    template <typename T>
    const T* as() const {
      return static_cast<const T*>(storage.get());
    }
  };
  std::vector<Output> run(const std::vector<NamedTensor>& inputs) const;

  struct RNNC_IMPL_TYPE Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit CompiledModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A stream of runs over one model, carrying recurrent state from one run to the next. Inputs
// that are state inputs may be omitted (the session feeds the carried state: zeros at first);
// passing one explicitly overrides the carried value for that run.
class Session {
 public:
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // Outputs in session memory, valid until the next run or reset of this session.
  const std::vector<NamedTensor>& run(const std::vector<NamedTensor>& inputs);
  // Outputs written into caller buffers; every output name given must be a model output with the
  // exact shape the run produces (outputs not named are computed but not returned).
  void run_into(const std::vector<NamedTensor>& inputs, const std::vector<NamedTensor>& outputs);

  void reset();            // zero state, as a new session
  // Profiling: per-block wall time over the runs since profiling was switched on, slowest
  // first (what to optimize, or which block runs on reference kernels).
  void set_profiling(bool on);
  std::string profile_report() const;
  Session clone() const;   // an independent session with a copy of this one's state
  // The carried state tensors (state input name -> value); empty before the first run.
  std::vector<NamedTensor> state() const;
  const CompiledModel& model() const;
  // The plan the last run used (kAuto resolved); before the first run, the model's plan().
  Plan last_plan() const;

  struct RNNC_IMPL_TYPE Impl;

 private:
  friend class CompiledModel;
  friend Session new_generic_session(const CompiledModel&,
                                     const std::vector<std::pair<std::string, std::string>>&);
  explicit Session(std::unique_ptr<Impl> impl);
  const std::vector<NamedTensor>& run_views(const std::vector<NamedTensor>& inputs);
  void run_into_buffers(const std::vector<NamedTensor>& inputs,
                        const std::vector<NamedTensor>& outputs);
  std::unique_ptr<Impl> impl_;
};

// ---- cross-stream batching ---------------------------------------------------------------------
//
// A StreamBatcher serves many streams of one model, each carrying its own state exactly as a
// Session does (zeros at the start and after reset; the exposed recurrent state and the state
// pairs given in BatcherOptions), and runs the chunks that are ready at the same time as one
// batched run: the streams' inputs and states are gathered into the rows of the batch axis, the
// model runs once (reading its weights once for all of them), and the outputs and states are
// scattered back (docs/runtime.md, "Stream batcher").
//
//   rnnc::BatcherOptions options;
//   options.state = {{"stateN", "state"}};                  // Silero's own state, as new_session
//   rnnc::StreamBatcher batcher(model, options);
//   rnnc::BatchStream stream = batcher.open_stream();       // one per audio stream, any thread
//   auto outputs = stream.run({{"input", {rnnc::ElementType::kFloat32, {1, 512}, chunk}}});
//
// Batch axes: each input's and each output's batch axis is the axis holding the dim symbol that
// every state input and at least one other input share (Silero: "batch" in input [batch, sequence]
// and state [2, batch, 128]; a stacked LSTM: "batch" in x [seq, batch, 24] and
// l0.rnn.initial_h [1, batch, 128]). When no symbol is shared but every state input has a
// symbolic dim of its own (Silero VAD v5 exports with unnamed dims: input [input_dim0,
// input_dim1], state [2, state_dim1, 128]), the first chunk submitted decides the axes the names
// do not: the data dim whose size, raised by one, raises exactly one dim of every state output in
// the shapes the model gives for that chunk (an error for that chunk when not exactly one dim
// does). BatcherOptions::batch_axes overrides or completes it per tensor.
// Inputs without a batch axis (Silero's sr) must be equal, and the inputs' other dims equal, for
// chunks to share a run: chunks of different lengths run in different batches (grouped by shape,
// never padded).
// Order and fairness: a stream's chunks run in submission order, one at a time (chunk k+1 starts
// after chunk k's state is carried, never in the same run). Batches form around the oldest ready
// chunk (FIFO by submission): it waits at most max_wait_us for others to join, however many keep
// arriving after it.
// Errors: submit checks a chunk before it is queued (the messages Session::run gives) and throws
// rnnc::Error there: a bad chunk fails that submission only and leaves the stream's state and
// every other stream untouched; a full queue is ErrorKind::kOverloaded.
// Threading: a StreamBatcher and its streams may be used from any number of threads at once.

struct BatcherOptions {
  int max_batch = 32;           // chunks (streams) per batched run, >= 1
  int64_t max_wait_us = 2000;   // the longest the oldest ready chunk waits for others to join
  // Chunks submitted and not yet started, over all streams, >= 1; a submit beyond it throws
  // kOverloaded.
  size_t queue_capacity = 1024;
  // The model's own state pairs (output, input), as CompiledModel::new_session.
  std::vector<std::pair<std::string, std::string>> state;
  // Explicit batch axes by input or output name (a state input included): the axis, or -1 for a
  // tensor without one (an input that must then be equal within a batch; an output every chunk
  // of the batch receives whole). Tensors not named take the derived axis.
  std::map<std::string, int> batch_axes;
  // Batched runs at once, each on a thread of the batcher's own (and each using the model's
  // ModelOptions::threads inside), >= 1. Either spreads the work over more cores: runs at once
  // each take their share of the ready chunks; a run on several threads splits each batch's
  // steps (docs/benchmarks.md, "Stream batcher", measures both).
  int threads = 1;
};

// A chunk's outcome: its outputs (every model output, state outputs included, each the stream's
// own rows), or the error that kept it from running.
struct ChunkResult {
  std::vector<CompiledModel::Output> outputs;
  std::shared_ptr<const Error> error;  // null on success
  // The outputs, or throws the error.
  std::vector<CompiledModel::Output>& value();
};

class StreamBatcher;

// One stream of a StreamBatcher (movable handle). Its methods may be called from any thread.
class BatchStream {
 public:
  BatchStream(BatchStream&&) noexcept;
  BatchStream& operator=(BatchStream&&) noexcept;
  ~BatchStream();  // close()

  // Queues a chunk (inputs copied during the call; state inputs left out, as for Session::run)
  // and returns at once. `done` is called exactly once, on a batcher thread, with the outputs or
  // a kCancelled error; keep it short: it may submit again, but must not wait for results
  // (wait(), a future's get()), which need that thread. Throws rnnc::Error, without
  // queuing or calling `done`, when the chunk is invalid (kInvalidInput, Session::run's message),
  // the queue is full (kOverloaded) or the stream is closed (kInvalidInput).
  void submit(const std::vector<NamedTensor>& inputs, std::function<void(ChunkResult)> done);
  // As submit with a callback, the result as a future (future.get() throws the error).
  std::future<std::vector<CompiledModel::Output>> submit(const std::vector<NamedTensor>& inputs);
  // Blocking: submit and wait for the outputs.
  std::vector<CompiledModel::Output> run(const std::vector<NamedTensor>& inputs);
  // Zeroes the state for the chunks submitted after this call; chunks submitted before it run on
  // the state they would have had.
  void reset();
  // Closes the stream: chunks already submitted still run and complete (their results are
  // delivered), later submits throw kInvalidInput. Does not wait. Idempotent.
  void close();
  // Blocks until every chunk submitted so far has completed.
  void wait() const;
  uint64_t id() const;  // unique within its batcher

  struct RNNC_IMPL_TYPE State;

 private:
  friend class StreamBatcher;
  explicit BatchStream(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

struct BatcherStats {
  uint64_t runs = 0;    // batched runs
  uint64_t chunks = 0;  // chunks completed by them
  std::vector<uint64_t> batch_sizes;  // [b]: runs of b chunks (index 0 unused)
  uint64_t cancelled = 0;  // chunks cancelled by the batcher's destruction
  uint64_t overloaded = 0;  // submits refused with kOverloaded
};

class StreamBatcher {
 public:
  // Checks the options against the model (state pairs as new_session; every input and output a
  // batch axis or -1): kInvalidInput naming what is wrong.
  StreamBatcher(std::shared_ptr<const CompiledModel> model, const BatcherOptions& options = {});
  // Waits for the batches running now; chunks still queued complete with a kCancelled error.
  // Streams still open may be destroyed later (their submits then throw kInvalidInput).
  ~StreamBatcher();
  StreamBatcher(const StreamBatcher&) = delete;
  StreamBatcher& operator=(const StreamBatcher&) = delete;

  BatchStream open_stream();
  // Per input and output name, its batch axis (-1: none), as derived or given. Axes the first
  // chunk decides (see "Batch axes" above) are -1 until a chunk was submitted.
  std::map<std::string, int> batch_axes() const;
  BatcherStats stats() const;
  const CompiledModel& model() const;

  struct RNNC_IMPL_TYPE Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Offline quantization, as `rnnc quantize` (docs/quant.md): reads the float ONNX model at
// `input_path`, specializes it (fixed dims and inputs) and optimizes it as loading does,
// quantizes it as the config says and writes standard ONNX to `output_path` (DequantizeLinear
// weights; rnnc reloads it with its integer kernels).
struct QuantizeOptions {
  std::map<std::string, int64_t> fixed_dims;                 // as ModelOptions::fixed_dims
  std::map<std::string, std::vector<int64_t>> fixed_inputs;  // as ModelOptions::fixed_inputs
  std::string config;  // a JSON config file (quant/configs/); "" = the default scheme
  // Calibration samples (needed for static activations and for measured errors): each names
  // every model input it gives, in caller memory read during the call.
  std::vector<std::vector<NamedTensor>> calibration;
  // With calibration samples: run the float and the quantized model on them and report each
  // quantized node's error.
  bool measure_error = true;
  // The quantization guard (docs/quant.md), as `rnnc quantize`: nodes whose quantization would
  // push an output's error past max_error (a fraction of its range; <= 0: the config's, 2% by
  // default) stay wider, measured on the calibration samples or else on generated inputs.
  bool guard = true;
  double max_error = 0;
};

struct QuantizeResult {
  size_t nodes = 0;            // nodes with weights the config covers
  size_t quantized_nodes = 0;  // of those, quantized
  int64_t weight_bytes_before = 0, weight_bytes_after = 0;  // of the quantized nodes
  std::string report;  // Markdown: the guard's error budget, then per node its scheme, weight
                       // bytes and error against float
  std::string summary;  // the guard's one line (nodes int8 / wider / float, measured error)
};

QuantizeResult quantize_model(const std::string& input_path, const std::string& output_path,
                              const QuantizeOptions& options = {});

}  // namespace rnnc

#undef RNNC_IMPL_TYPE
#pragma GCC visibility pop
