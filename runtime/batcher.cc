// StreamBatcher (rnnc/rnnc.h): many streams' chunks of one model run as one batched run.
//
// Each stream keeps its state rows (one tensor per state pair, the stream's rows only) and a queue
// of checked chunks. A chunk is ready when it heads its stream's queue and the stream has no chunk
// running. Worker threads (BatcherOptions::threads) form batches under one mutex: the oldest ready
// chunk, then the next ready chunks of the same group key (same shapes but for the batch axis,
// same values of the inputs without one) in submission order, up to max_batch. The batch runs
// once the oldest chunk has waited max_wait_us, the batch is full, or no other stream could join
// it. The worker gathers the chunks' inputs and the streams' states along each tensor's batch
// axis, runs its own Session (generic program, every state input given), scatters each chunk's
// output rows into owned tensors and its state rows back into its stream, calls the chunks'
// callbacks, and only then makes each stream's next chunk ready: a stream's results arrive in
// order.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "ir/dim.h"
#include "ir/error.h"
#include "ir/tensor.h"
#include "rnnc/rnnc.h"
#include "runtime/input_checker.h"

#define RNNC_INTERNAL __attribute__((visibility("hidden")))

namespace rnnc {

namespace {

using Clock = std::chrono::steady_clock;

// Copies `rows` rows from row `from` of `source` (null: zeros) to row `to` of `target`: both are
// row-major tensors whose batch axis has `source_rows` / `target_rows` rows, `outer` the product of
// the dims before it, `row_bytes` the bytes of one row (the dims after it).
void copy_rows(const uint8_t* source, int64_t source_rows, int64_t from, uint8_t* target,
               int64_t target_rows, int64_t to, int64_t rows, int64_t outer, size_t row_bytes) {
  const size_t bytes = static_cast<size_t>(rows) * row_bytes;
  if (bytes == 0) return;
  for (int64_t o = 0; o < outer; ++o) {
    uint8_t* out = target + static_cast<size_t>(o * target_rows + to) * row_bytes;
    if (source) {
      std::memcpy(out, source + static_cast<size_t>(o * source_rows + from) * row_bytes, bytes);
    } else {
      std::memset(out, 0, bytes);
    }
  }
}

// outer and row_bytes of copy_rows for `shape` split at `axis`.
std::pair<int64_t, size_t> split_at(const std::vector<int64_t>& shape, int axis, ElementType type) {
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (static_cast<int>(k) < axis) outer *= shape[k];
    if (static_cast<int>(k) > axis) inner *= shape[k];
  }
  return {outer, static_cast<size_t>(inner) * element_size(type)};
}

std::shared_ptr<const Error> error_of_current_exception() {
  try {
    throw;
  } catch (const Error& e) {
    return std::make_shared<const Error>(e);
  } catch (const std::bad_alloc&) {
    return std::make_shared<const Error>(ErrorKind::kIo, "out of memory in a batched run");
  } catch (const std::exception& e) {
    return std::make_shared<const Error>(ErrorKind::kInternal,
                                         cat("internal error in a batched run: ", e.what()));
  }
}

}  // namespace

// One model input as the batcher gathers it.
struct RNNC_INTERNAL InputSlot {
  std::string name;
  size_t index = 0;  // the InputChecker's (graph) index
  ElementType type = ElementType::kFloat32;
  int axis = -1;  // batch axis, -1: none (equal within a batch)
  int pair = -1;  // the state pair feeding it, -1: a data input
};

// A checked chunk with its own copy of the inputs.
struct RNNC_INTERNAL Chunk {
  std::shared_ptr<BatchStream::State> stream;
  std::vector<Tensor> inputs;  // per slot; undefined when the chunk leaves the input out
  // Per state pair left out: the shape of the state this chunk runs on, and whether the stream
  // starts over with zeros at this chunk (its first, or after reset()).
  std::vector<std::vector<int64_t>> state_shape;
  std::vector<char> starts_over;
  int64_t rows = 1;  // on the batch axis
  std::string key;   // chunks with equal keys may share a run
  uint64_t sequence = 0;
  Clock::time_point arrival;
  std::function<void(ChunkResult)> done;
};

struct RNNC_INTERNAL BatchStream::State {
  State(std::shared_ptr<StreamBatcher::Impl> batcher, uint64_t id, InputChecker checker)
      : batcher(std::move(batcher)), id(id), checker(std::move(checker)) {}
  ~State();

  const std::shared_ptr<StreamBatcher::Impl> batcher;
  const uint64_t id;
  // Guarded by submit_mutex (orders this stream's submits and resets):
  std::mutex submit_mutex;
  InputChecker checker;
  // Per state pair, the shape the state has when the next submitted chunk runs (empty: zeros
  // shaped by that chunk, at the start and after reset()).
  std::vector<std::vector<int64_t>> next_state_shape;
  // Guarded by the batcher's mutex:
  std::deque<std::unique_ptr<Chunk>> pending;  // submitted, not started
  bool running = false;                        // a chunk of it is in a batched run
  bool closed = false;
  size_t outstanding = 0;        // submitted, callback not yet returned
  std::condition_variable idle;  // outstanding became 0
  // Owned by the worker running this stream's chunk (running == true), else by nobody:
  std::vector<Tensor> state;  // per state pair, this stream's rows; undefined: zeros
};

struct RNNC_INTERNAL StreamBatcher::Impl : std::enable_shared_from_this<StreamBatcher::Impl> {
  Impl(std::shared_ptr<const CompiledModel> model, const BatcherOptions& options);

  // A worker's loop: take a batch, run it, finish it, until stop.
  void work(size_t worker);
  // Under the lock: moves the next batch into `batch` and returns true, or waits (for work or
  // the oldest chunk's deadline) and returns false.
  bool take_batch(std::unique_lock<std::mutex>& lock, std::vector<std::unique_ptr<Chunk>>& batch);
  // Streams that could still add a chunk to a forming batch: not running, and open or queued.
  size_t streams_that_could_join() const;
  void run_batch(size_t worker, std::vector<std::unique_ptr<Chunk>>& batch);
  // Checks `inputs` against `stream` and copies them into a chunk; throws Session::run's errors.
  std::unique_ptr<Chunk> prepare(BatchStream::State& stream, const std::vector<NamedTensor>& inputs,
                                 std::vector<std::vector<int64_t>>& next_state_shape);
  void enqueue(BatchStream::State& stream, std::unique_ptr<Chunk> chunk);
  // After a chunk's callback: the stream may run its next chunk.
  void release(BatchStream::State& stream);
  void shutdown();

  const std::shared_ptr<const CompiledModel> model;
  const BatcherOptions options;
  std::vector<InputSlot> slots;                     // per model input, inputs() order
  std::vector<std::pair<int, size_t>> state_pairs;  // (output index, slot)
  std::vector<int> output_axis;                     // per model output
  std::map<std::string, int> axes;                  // by name, for batch_axes()
  std::vector<int> fed;                             // graph indices of the state inputs
  // The axes the model's names do not decide (a state whose batch dim is named apart from the
  // data's, Silero VAD v5's state_dim1 beside input_dim0), decided by the first chunk
  // (resolve_axes): until then `pending_axes` is set and `pending_reason` says what is missing.
  // Written under axes_mutex before any chunk is queued; read after `pending_axes` (acquire).
  std::atomic<bool> pending_axes{false};
  std::string pending_reason;
  std::vector<char> axis_given;  // per slot, then per output: BatcherOptions::batch_axes names it
  mutable std::mutex axes_mutex;
  // Decides the pending axes from a checked chunk, or throws kInvalidInput with pending_reason.
  void resolve_axes(const InputChecker& checker, const std::vector<NamedTensor>& inputs);

  mutable std::mutex mutex;
  std::condition_variable work_ready;
  std::map<uint64_t, Chunk*> ready;  // by sequence; owned by their streams' pending queues
  std::set<BatchStream::State*> streams;
  size_t queued = 0;
  uint64_t next_sequence = 0, next_stream = 0;
  bool stopping = false;
  BatcherStats stats;
  std::vector<Session> sessions;  // per worker
  std::vector<std::thread> workers;
};

// ---- construction: batch axes ----------------------------------------------------------------

StreamBatcher::Impl::Impl(std::shared_ptr<const CompiledModel> model_in,
                          const BatcherOptions& options_in)
    : model(std::move(model_in)), options(options_in) {
  auto at_least_one = [](const char* name, int64_t value) {
    if (value < 1) {
      raise_invalid_input(cat("BatcherOptions::", name, " = ", value, ", must be >= 1"));
    }
  };
  at_least_one("max_batch", options.max_batch);
  at_least_one("queue_capacity", static_cast<int64_t>(options.queue_capacity));
  at_least_one("threads", options.threads);
  if (options.max_wait_us < 0) {
    raise_invalid_input(
        cat("BatcherOptions::max_wait_us = ", options.max_wait_us, ", must be >= 0"));
  }
  // The worker sessions check the state pairs (new_session's messages).
  for (int w = 0; w < options.threads; ++w) {
    sessions.push_back(new_generic_session(*model, options.state));
  }

  const std::vector<TensorInfo>& inputs = model->inputs();
  const std::vector<TensorInfo>& outputs = model->outputs();
  std::vector<std::pair<std::string, std::string>> pairs = model->recurrent_state();
  pairs.insert(pairs.end(), options.state.begin(), options.state.end());
  const InputChecker names(*model, {});
  for (const TensorInfo& info : inputs) {
    InputSlot slot;
    slot.name = info.name;
    slot.index = static_cast<size_t>(names.find_input(info.name));
    slot.type = info.type;
    slots.push_back(slot);
  }
  auto slot_of = [&](const std::string& name) {
    for (size_t s = 0; s < slots.size(); ++s) {
      if (slots[s].name == name) return s;
    }
    RNNC_CHECK(false, "state input '", name, "' is not an input");
    return size_t{0};
  };
  auto output_of = [&](const std::string& name) {
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (outputs[o].name == name) return static_cast<int>(o);
    }
    RNNC_CHECK(false, "state output '", name, "' is not an output");
    return 0;
  };
  for (const auto& [output, input] : pairs) {
    const size_t slot = slot_of(input);
    slots[slot].pair = static_cast<int>(state_pairs.size());
    state_pairs.emplace_back(output_of(output), slot);
    fed.push_back(static_cast<int>(slots[slot].index));
  }

  // The batch symbol: shared by every state input and some data input (by every data input when
  // the model has no state).
  std::set<std::string> candidates;
  bool first = true;
  for (size_t s = 0; s < slots.size(); ++s) {
    if (!state_pairs.empty() && slots[s].pair < 0) continue;
    std::set<std::string> symbols;
    for (const std::string& dim : inputs[s].dims) {
      if (is_symbol_text(dim)) symbols.insert(dim);
    }
    if (first) {
      candidates = symbols;
      first = false;
    } else {
      std::set<std::string> common;
      std::set_intersection(candidates.begin(), candidates.end(), symbols.begin(), symbols.end(),
                            std::inserter(common, common.begin()));
      candidates = common;
    }
  }
  if (!state_pairs.empty()) {
    std::set<std::string> in_data;
    for (size_t s = 0; s < slots.size(); ++s) {
      if (slots[s].pair >= 0) continue;
      for (const std::string& dim : inputs[s].dims) {
        if (candidates.count(dim)) in_data.insert(dim);
      }
    }
    candidates = in_data;
  }
  const std::string symbol = candidates.size() == 1 ? *candidates.begin() : "";
  auto axis_in = [&](const std::vector<std::string>& dims) {
    if (symbol.empty()) return -1;
    auto it = std::find(dims.begin(), dims.end(), symbol);
    return it == dims.end() ? -1 : static_cast<int>(it - dims.begin());
  };
  auto why_none = [&]() {
    if (!symbol.empty()) return cat("has no dim '", symbol, "'");
    if (candidates.empty()) {
      return std::string(
          "has no batch axis: no dim symbol is shared by the state inputs and a "
          "data input");
    }
    std::string names;
    for (const std::string& name : candidates) names += (names.empty() ? "'" : ", '") + name + "'";
    return cat("has no batch axis: the dim symbols ", names, " could each be it");
  };
  for (const auto& entry : options.batch_axes) {
    const std::string& name = entry.first;  // (C++17 lambdas cannot capture a binding)
    const int axis = entry.second;
    bool found = false;
    auto check_axis = [&](const TensorInfo& info) {
      found = found || info.name == name;
      if (info.name != name) return;
      // An empty dims list is a scalar or a shape the model leaves unknown (Silero v5's outputs
      // behind an If): the rows are checked per run there.
      if (axis < -1 || (!info.dims.empty() && axis >= static_cast<int>(info.dims.size()))) {
        raise_invalid_input(cat("BatcherOptions::batch_axes['", name, "'] = ", axis,
                                ": must be -1 or a dim of ", info.to_string()));
      }
    };
    for (const TensorInfo& info : inputs) check_axis(info);
    for (const TensorInfo& info : outputs) check_axis(info);
    if (!found) {
      raise_invalid_input(
          cat("BatcherOptions::batch_axes: '", name, "' is not an input or output of the model"));
    }
  }
  auto given_axis = [&](const std::string& name, int derived) {
    auto it = options.batch_axes.find(name);
    return it == options.batch_axes.end() ? derived : it->second;
  };
  // No symbol shared, but every state input has a symbolic dim of its own: the names cannot
  // say which, the model's shapes can once a chunk's dims are known (resolve_axes).
  bool own_state_dims = !state_pairs.empty() && candidates.empty();
  for (const auto& [output, slot] : state_pairs) {
    bool symbolic = false;
    for (const std::string& dim : inputs[slot].dims) symbolic = symbolic || is_symbol_text(dim);
    own_state_dims = own_state_dims && symbolic;
  }
  auto defer_or_raise = [&](const std::string& message) {
    if (!own_state_dims) raise_invalid_input(message);
    if (pending_reason.empty()) pending_reason = message;
    pending_axes.store(true, std::memory_order_relaxed);
  };
  for (size_t s = 0; s < slots.size(); ++s) {
    InputSlot& slot = slots[s];
    slot.axis = given_axis(slot.name, axis_in(inputs[s].dims));
    axis_given.push_back(options.batch_axes.count(slot.name) ? 1 : 0);
    if (slot.axis < 0 && slot.pair >= 0) {
      defer_or_raise(cat("state input ", inputs[s].to_string(), " ", why_none(),
                         ": give its batch axis in BatcherOptions::batch_axes"));
    }
    axes[slot.name] = slot.axis;
  }
  for (const TensorInfo& info : outputs) {
    const int derived = axis_in(info.dims);
    const int axis = given_axis(info.name, derived);
    axis_given.push_back(options.batch_axes.count(info.name) ? 1 : 0);
    if (!options.batch_axes.count(info.name) && derived < 0) {
      defer_or_raise(cat("output ", info.to_string(), " ", why_none(),
                         ": give its batch axis in BatcherOptions::batch_axes (-1: every chunk of "
                         "a batch receives it whole)"));
    }
    output_axis.push_back(axis);
    axes[info.name] = axis;
  }
  for (const auto& [output, slot] : state_pairs) {
    if (output_axis[static_cast<size_t>(output)] < 0 &&
        axis_given[slots.size() + static_cast<size_t>(output)]) {
      raise_invalid_input(cat("state output ", outputs[static_cast<size_t>(output)].to_string(),
                              " needs a batch axis (BatcherOptions::batch_axes)"));
    }
  }
  stats.batch_sizes.assign(static_cast<size_t>(options.max_batch) + 1, 0);
}

// ---- submitting ------------------------------------------------------------------------------

// The batch axes a chunk decides: a dim symbol of the data inputs that this chunk binds is the
// batch dim when raising it by one raises exactly one dim of every state output (and of each
// other output at most one) by one, in the shapes the model gives its outputs for the chunk
// (InputChecker::output_shape). Exactly one symbol must do so. Data inputs then batch along
// that symbol, each state input along its output's axis, and outputs it leaves unchanged are
// given whole.
void StreamBatcher::Impl::resolve_axes(const InputChecker& checker,
                                       const std::vector<NamedTensor>& inputs) {
  std::lock_guard<std::mutex> lock(axes_mutex);
  if (!pending_axes.load(std::memory_order_relaxed)) return;
  const std::vector<TensorInfo>& outputs = model->outputs();
  const std::vector<TensorInfo>& infos = model->inputs();
  std::set<std::string> candidates;
  for (size_t s = 0; s < slots.size(); ++s) {
    if (slots[s].pair >= 0) continue;
    for (const std::string& dim : infos[s].dims) {
      const int symbol = is_symbol_text(dim) ? checker.symbol_index(dim) : -1;
      if (symbol >= 0 && checker.bound()[static_cast<size_t>(symbol)] >= 1) candidates.insert(dim);
    }
  }
  // The state inputs' own dims are left unbound: the outputs' shapes come from the data.
  std::vector<std::pair<int, int64_t>> unbound;
  for (const auto& [output, slot] : state_pairs) {
    for (const std::string& dim : infos[slot].dims) {
      const int symbol = is_symbol_text(dim) ? checker.symbol_index(dim) : -1;
      if (symbol >= 0 && !candidates.count(dim)) unbound.emplace_back(symbol, -1);
    }
  }
  // The outputs' shapes for this chunk, then per candidate with it one larger.
  std::vector<std::optional<std::vector<int64_t>>> shapes;
  for (const TensorInfo& output : outputs) {
    shapes.push_back(checker.output_shape(output.name, inputs, unbound));
  }
  std::string chosen;
  std::vector<int> chosen_axes;  // per output
  size_t found = 0;
  for (const std::string& name : candidates) {
    const int symbol = checker.symbol_index(name);
    const int64_t rows = checker.bound()[static_cast<size_t>(symbol)];
    std::vector<std::pair<int, int64_t>> raised = unbound;
    raised.emplace_back(symbol, rows + 1);
    std::vector<int> found_axes;
    bool works = true;
    for (size_t o = 0; works && o < outputs.size(); ++o) {
      const std::optional<std::vector<int64_t>>& one = shapes[o];
      const std::optional<std::vector<int64_t>> more =
          checker.output_shape(outputs[o].name, inputs, raised);
      works = one && more && one->size() == more->size();
      int axis = -1;
      for (size_t k = 0; works && k < one->size(); ++k) {
        if ((*one)[k] == (*more)[k]) continue;
        works = axis < 0 && (*one)[k] == rows && (*more)[k] == rows + 1;
        axis = static_cast<int>(k);
      }
      found_axes.push_back(axis);
    }
    for (const auto& [output, slot] : state_pairs) {
      works = works && found_axes[static_cast<size_t>(output)] >= 0;
    }
    if (!works) continue;
    ++found;
    chosen = name;
    chosen_axes = found_axes;
  }
  if (found != 1) {
    raise_invalid_input(cat(pending_reason, " (nor do the shapes the model gives its outputs for ",
                            "this chunk: ", found, " of its dims could be the batch dim)"));
  }
  for (size_t s = 0; s < slots.size(); ++s) {
    InputSlot& slot = slots[s];
    if (axis_given[s]) continue;
    if (slot.pair >= 0) {
      slot.axis =
          chosen_axes[static_cast<size_t>(state_pairs[static_cast<size_t>(slot.pair)].first)];
    } else {
      const std::vector<std::string>& dims = infos[s].dims;
      auto it = std::find(dims.begin(), dims.end(), chosen);
      slot.axis = it == dims.end() ? -1 : static_cast<int>(it - dims.begin());
    }
    axes[slot.name] = slot.axis;
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (axis_given[slots.size() + o]) continue;
    output_axis[o] = chosen_axes[o];
    axes[outputs[o].name] = output_axis[o];
  }
  pending_axes.store(false, std::memory_order_release);
}

std::unique_ptr<Chunk> StreamBatcher::Impl::prepare(
    BatchStream::State& stream, const std::vector<NamedTensor>& inputs,
    std::vector<std::vector<int64_t>>& next_state_shape) {
  InputChecker& checker = stream.checker;
  checker.check(inputs);
  if (pending_axes.load(std::memory_order_acquire)) resolve_axes(checker, inputs);
  auto chunk = std::make_unique<Chunk>();
  chunk->inputs.resize(slots.size());
  chunk->state_shape.resize(state_pairs.size());
  chunk->starts_over.resize(state_pairs.size(), 0);
  next_state_shape = stream.next_state_shape;
  // Rows on the batch axis, equal across the inputs that have one.
  const NamedTensor* rows_from = nullptr;
  int64_t rows = -1;
  for (const NamedTensor& input : inputs) {
    const int axis = axes.at(input.name);
    if (axis < 0) continue;
    if (static_cast<size_t>(axis) >= input.tensor.shape.size()) {
      raise_invalid_input(cat("input '", input.name, "' has shape ", shape_text(input.tensor.shape),
                              ", which has no batch axis ", axis));
    }
    const int64_t size = input.tensor.shape[static_cast<size_t>(axis)];
    if (rows >= 0 && size != rows) {
      raise_invalid_input(cat("input '", input.name, "' has ", size, " rows on its batch axis ",
                              axis, ", input '", rows_from->name, "' has ", rows));
    }
    rows = size;
    rows_from = &input;
  }
  // State inputs left out: the stream's state (its shape checked as Session checks a carried
  // state) or, at its start, zeros shaped by this chunk.
  for (size_t p = 0; p < state_pairs.size(); ++p) {
    const InputSlot& slot = slots[state_pairs[p].second];
    if (checker.given(slot.index)) {
      for (const NamedTensor& input : inputs) {
        if (input.name == slot.name) next_state_shape[p] = input.tensor.shape;
      }
      continue;
    }
    if (next_state_shape[p].empty()) {
      next_state_shape[p] = checker.zero_state_shape(
          slot.index, model->outputs()[static_cast<size_t>(state_pairs[p].first)].name, inputs,
          rows >= 0 ? slot.axis : -1, rows);
      chunk->starts_over[p] = 1;
    }
    chunk->state_shape[p] = next_state_shape[p];
    checker.set_given(slot.index);
    const uint8_t placeholder = 0;
    checker.check_one(slot.index, slot.type, next_state_shape[p], &placeholder, "carried state");
  }
  for (size_t p = 0; p < state_pairs.size() && rows < 0; ++p) {
    const InputSlot& slot = slots[state_pairs[p].second];
    if (static_cast<size_t>(slot.axis) >= next_state_shape[p].size()) {
      raise_invalid_input(cat("state input '", slot.name, "' has shape ",
                              shape_text(next_state_shape[p]), ", which has no batch axis ",
                              slot.axis));
    }
    rows = next_state_shape[p][static_cast<size_t>(slot.axis)];
  }
  chunk->rows = rows < 0 ? 1 : rows;
  // The group key: per input given, its type and dims but the batch axis, and the values of one
  // without a batch axis; then the state shapes but the batch axis.
  std::string& key = chunk->key;
  auto add_shape = [&](const std::vector<int64_t>& shape, int axis) {
    for (size_t k = 0; k < shape.size(); ++k) {
      const int64_t dim = static_cast<int>(k) == axis ? -1 : shape[k];
      key.append(reinterpret_cast<const char*>(&dim), sizeof dim);
    }
    key.push_back(';');
  };
  for (const NamedTensor& input : inputs) {
    size_t s = 0;
    while (slots[s].name != input.name) ++s;
    const InputSlot& slot = slots[s];
    Tensor copy(static_cast<DType>(input.tensor.type), input.tensor.shape);
    if (copy.nbytes() > 0) std::memcpy(copy.raw_data(), input.tensor.data, copy.nbytes());
    key.append(std::to_string(s)).push_back(':');
    add_shape(input.tensor.shape, slot.axis);
    if (slot.axis < 0) key.append(static_cast<const char*>(copy.raw_data()), copy.nbytes());
    chunk->inputs[s] = std::move(copy);
  }
  for (size_t p = 0; p < state_pairs.size(); ++p) {
    add_shape(next_state_shape[p], slots[state_pairs[p].second].axis);
  }
  return chunk;
}

void StreamBatcher::Impl::enqueue(BatchStream::State& stream, std::unique_ptr<Chunk> chunk) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (stopping) {
      raise_invalid_input(cat("stream ", stream.id, ": its StreamBatcher was destroyed"));
    }
    if (stream.closed) raise_invalid_input(cat("stream ", stream.id, " is closed"));
    if (queued >= options.queue_capacity) {
      ++stats.overloaded;
      raise(ErrorKind::kOverloaded,
            cat("stream batcher overloaded: ", queued, " chunks are queued (queue_capacity ",
                options.queue_capacity, "); submit again later"));
    }
    chunk->sequence = next_sequence++;
    chunk->arrival = Clock::now();
    Chunk* raw = chunk.get();
    stream.pending.push_back(std::move(chunk));
    ++queued;
    ++stream.outstanding;
    if (!stream.running && stream.pending.size() == 1) ready.emplace(raw->sequence, raw);
  }
  work_ready.notify_all();
}

// ---- forming and running batches ---------------------------------------------------------------

size_t StreamBatcher::Impl::streams_that_could_join() const {
  size_t count = 0;
  for (const BatchStream::State* stream : streams) {
    if (!stream->running && (!stream->closed || !stream->pending.empty())) ++count;
  }
  return count;
}

bool StreamBatcher::Impl::take_batch(std::unique_lock<std::mutex>& lock,
                                     std::vector<std::unique_ptr<Chunk>>& batch) {
  if (ready.empty()) {
    work_ready.wait(lock);
    return false;
  }
  const Chunk& oldest = *ready.begin()->second;
  std::vector<Chunk*> members;
  for (const auto& [sequence, chunk] : ready) {
    if (chunk->key != oldest.key) continue;
    members.push_back(chunk);
    if (members.size() == static_cast<size_t>(options.max_batch)) break;
  }
  const Clock::time_point deadline =
      oldest.arrival + std::chrono::microseconds(options.max_wait_us);
  if (members.size() < static_cast<size_t>(options.max_batch) &&
      members.size() < streams_that_could_join() && Clock::now() < deadline) {
    work_ready.wait_until(lock, deadline);
    return false;
  }
  for (Chunk* member : members) {
    ready.erase(member->sequence);
    BatchStream::State& stream = *member->stream;
    RNNC_CHECK(stream.pending.front().get() == member, "a ready chunk heads its stream's queue");
    batch.push_back(std::move(stream.pending.front()));
    stream.pending.pop_front();
    stream.running = true;
    --queued;
  }
  return true;
}

void StreamBatcher::Impl::work(size_t worker) {
  for (;;) {
    std::vector<std::unique_ptr<Chunk>> batch;
    {
      std::unique_lock<std::mutex> lock(mutex);
      while (!stopping && !take_batch(lock, batch)) {
      }
      if (stopping && batch.empty()) return;
      ++stats.runs;
      stats.chunks += batch.size();
      ++stats.batch_sizes[batch.size()];
    }
    run_batch(worker, batch);
    // Destroyed outside the lock: a chunk may hold its closed stream's last reference.
    batch.clear();
  }
}

void StreamBatcher::Impl::run_batch(size_t worker, std::vector<std::unique_ptr<Chunk>>& batch) {
  const std::vector<TensorInfo>& output_infos = model->outputs();
  std::vector<ChunkResult> results(batch.size());
  try {
    int64_t total_rows = 0;
    std::vector<int64_t> offset;
    for (const auto& chunk : batch) {
      offset.push_back(total_rows);
      total_rows += chunk->rows;
    }
    // Gathered inputs, in memory this run owns.
    std::vector<Tensor> gathered(slots.size());
    std::vector<NamedTensor> inputs;
    const Chunk& first = *batch.front();
    for (size_t s = 0; s < slots.size(); ++s) {
      const InputSlot& slot = slots[s];
      const Tensor* model_shape = first.inputs[s].defined() ? &first.inputs[s] : nullptr;
      std::vector<int64_t> shape;
      if (model_shape) {
        shape = model_shape->shape();
      } else if (slot.pair >= 0) {
        shape = first.state_shape[static_cast<size_t>(slot.pair)];
      } else {
        continue;  // an optional input no chunk of this group gives
      }
      if (slot.axis < 0) {
        inputs.push_back(
            {slot.name, {slot.type, shape, const_cast<void*>(model_shape->raw_data())}});
        continue;
      }
      shape[static_cast<size_t>(slot.axis)] = total_rows;
      Tensor& target = gathered[s];
      target = Tensor(static_cast<DType>(slot.type), shape);
      const auto [outer, row_bytes] = split_at(shape, slot.axis, slot.type);
      for (size_t c = 0; c < batch.size(); ++c) {
        const Chunk& chunk = *batch[c];
        // The chunk's input, else the stream's state; zeros (null) when the stream starts over
        // or no run of it has succeeded yet.
        const uint8_t* source = nullptr;
        if (chunk.inputs[s].defined()) {
          source = static_cast<const uint8_t*>(chunk.inputs[s].raw_data());
        } else if (!chunk.starts_over[static_cast<size_t>(slot.pair)]) {
          source = static_cast<const uint8_t*>(
              chunk.stream->state[static_cast<size_t>(slot.pair)].raw_data());
        }
        copy_rows(source, chunk.rows, 0, static_cast<uint8_t*>(target.raw_data()), total_rows,
                  offset[c], chunk.rows, outer, row_bytes);
      }
      inputs.push_back({slot.name, {slot.type, shape, target.raw_data()}});
    }
    const std::vector<NamedTensor>& outputs = sessions[worker].run(inputs);
    // Every output's batch axis must hold the batch's rows before anything is scattered.
    for (size_t o = 0; o < outputs.size(); ++o) {
      const int axis = output_axis[o];
      if (axis < 0) continue;
      const std::vector<int64_t>& shape = outputs[o].tensor.shape;
      if (static_cast<size_t>(axis) >= shape.size() ||
          shape[static_cast<size_t>(axis)] != total_rows) {
        raise_invalid_input(cat("output '", outputs[o].name, "' has shape ", shape_text(shape),
                                ", not ", total_rows, " rows (the batch's) on its batch axis ",
                                axis, ": give its batch axis in BatcherOptions::batch_axes"));
      }
    }
    for (size_t c = 0; c < batch.size(); ++c) {
      Chunk& chunk = *batch[c];
      for (size_t o = 0; o < outputs.size(); ++o) {
        const TensorRef& tensor = outputs[o].tensor;
        const int axis = output_axis[o];
        CompiledModel::Output out;
        out.name = output_infos[o].name;
        out.type = tensor.type;
        out.shape = tensor.shape;
        if (axis >= 0) out.shape[static_cast<size_t>(axis)] = chunk.rows;
        const size_t bytes = static_cast<size_t>(shape_numel(out.shape)) * element_size(out.type);
        std::shared_ptr<uint8_t> storage(new uint8_t[std::max<size_t>(bytes, 1)],
                                         std::default_delete<uint8_t[]>());
        if (axis < 0) {
          if (bytes > 0) std::memcpy(storage.get(), tensor.data, bytes);
        } else {
          const auto [outer, row_bytes] = split_at(tensor.shape, axis, tensor.type);
          copy_rows(static_cast<const uint8_t*>(tensor.data), total_rows, offset[c], storage.get(),
                    chunk.rows, 0, chunk.rows, outer, row_bytes);
        }
        out.storage = std::move(storage);
        results[c].outputs.push_back(std::move(out));
      }
    }
    // The states move on only once every chunk's outputs are out.
    for (size_t c = 0; c < batch.size(); ++c) {
      Chunk& chunk = *batch[c];
      for (size_t p = 0; p < state_pairs.size(); ++p) {
        const TensorRef& tensor = outputs[static_cast<size_t>(state_pairs[p].first)].tensor;
        const int axis = output_axis[static_cast<size_t>(state_pairs[p].first)];
        std::vector<int64_t> shape = tensor.shape;
        shape[static_cast<size_t>(axis)] = chunk.rows;
        Tensor& value = chunk.stream->state[p];
        Tensor::recycle(value, static_cast<DType>(tensor.type), shape.data(), shape.size());
        const auto [outer, row_bytes] = split_at(tensor.shape, axis, tensor.type);
        copy_rows(static_cast<const uint8_t*>(tensor.data), total_rows, offset[c],
                  static_cast<uint8_t*>(value.raw_data()), chunk.rows, 0, chunk.rows, outer,
                  row_bytes);
      }
    }
  } catch (...) {
    const std::shared_ptr<const Error> error = error_of_current_exception();
    for (ChunkResult& result : results) {
      result.outputs.clear();
      result.error = error;
    }
  }
  for (size_t c = 0; c < batch.size(); ++c) {
    Chunk& chunk = *batch[c];
    try {
      chunk.done(std::move(results[c]));
    } catch (...) {
      // A callback's own exception is its caller's to handle; it must not stop the batcher.
    }
    std::lock_guard<std::mutex> lock(mutex);
    chunk.stream->running = false;
    release(*chunk.stream);
  }
  work_ready.notify_all();
}

void StreamBatcher::Impl::release(BatchStream::State& stream) {
  if (!stream.running && !stream.pending.empty()) {
    Chunk* next = stream.pending.front().get();
    ready.emplace(next->sequence, next);
  }
  if (--stream.outstanding == 0) stream.idle.notify_all();
}

void StreamBatcher::Impl::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  work_ready.notify_all();
  for (std::thread& worker : workers) worker.join();
  std::vector<std::unique_ptr<Chunk>> cancelled;
  {
    std::lock_guard<std::mutex> lock(mutex);
    ready.clear();
    for (BatchStream::State* stream : streams) {
      for (auto& chunk : stream->pending) cancelled.push_back(std::move(chunk));
      stream->pending.clear();
    }
    queued = 0;
    stats.cancelled += cancelled.size();
  }
  for (auto& chunk : cancelled) {
    ChunkResult result;
    result.error = std::make_shared<const Error>(
        ErrorKind::kCancelled,
        cat("stream ", chunk->stream->id, ": chunk cancelled, its StreamBatcher was destroyed"));
    try {
      chunk->done(std::move(result));
    } catch (...) {
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (--chunk->stream->outstanding == 0) chunk->stream->idle.notify_all();
  }
}

// ---- public API
// ----------------------------------------------------------------------------------

std::vector<CompiledModel::Output>& ChunkResult::value() {
  if (error) throw *error;
  return outputs;
}

BatchStream::State::~State() {
  std::lock_guard<std::mutex> lock(batcher->mutex);
  batcher->streams.erase(this);
}

StreamBatcher::StreamBatcher(std::shared_ptr<const CompiledModel> model,
                             const BatcherOptions& options) {
  if (!model) raise_invalid_input("StreamBatcher: the model is null");
  impl_ = std::make_shared<Impl>(std::move(model), options);
  for (size_t w = 0; w < static_cast<size_t>(options.threads); ++w) {
    impl_->workers.emplace_back([impl = impl_.get(), w] { impl->work(w); });
  }
}

StreamBatcher::~StreamBatcher() { impl_->shutdown(); }

BatchStream StreamBatcher::open_stream() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->stopping) raise_invalid_input("StreamBatcher: open_stream after destruction began");
  auto state = std::make_shared<BatchStream::State>(impl_, impl_->next_stream++,
                                                    InputChecker(*impl_->model, impl_->fed));
  state->next_state_shape.resize(impl_->state_pairs.size());
  state->state.resize(impl_->state_pairs.size());
  impl_->streams.insert(state.get());
  return BatchStream(std::move(state));
}

std::map<std::string, int> StreamBatcher::batch_axes() const {
  std::lock_guard<std::mutex> lock(impl_->axes_mutex);
  return impl_->axes;
}

BatcherStats StreamBatcher::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}

const CompiledModel& StreamBatcher::model() const { return *impl_->model; }

BatchStream::BatchStream(std::shared_ptr<State> state) : state_(std::move(state)) {}
BatchStream::BatchStream(BatchStream&&) noexcept = default;
BatchStream& BatchStream::operator=(BatchStream&& other) noexcept {
  if (this != &other) {
    if (state_) close();
    state_ = std::move(other.state_);
  }
  return *this;
}
BatchStream::~BatchStream() {
  if (state_) close();
}

uint64_t BatchStream::id() const { return state_->id; }

void BatchStream::submit(const std::vector<NamedTensor>& inputs,
                         std::function<void(ChunkResult)> done) {
  if (!state_) raise_invalid_input("BatchStream: submit on a moved-from stream");
  if (!done) raise_invalid_input("BatchStream::submit: the callback is empty");
  State& stream = *state_;
  StreamBatcher::Impl& batcher = *stream.batcher;
  try {
    std::lock_guard<std::mutex> order(stream.submit_mutex);
    std::vector<std::vector<int64_t>> next_state_shape;
    std::unique_ptr<Chunk> chunk = batcher.prepare(stream, inputs, next_state_shape);
    chunk->stream = state_;
    chunk->done = std::move(done);
    batcher.enqueue(stream, std::move(chunk));
    stream.next_state_shape = std::move(next_state_shape);
  } catch (const std::bad_alloc&) {
    raise(ErrorKind::kIo, "out of memory while submitting a chunk");
  }
}

std::future<std::vector<CompiledModel::Output>> BatchStream::submit(
    const std::vector<NamedTensor>& inputs) {
  auto promise = std::make_shared<std::promise<std::vector<CompiledModel::Output>>>();
  std::future<std::vector<CompiledModel::Output>> future = promise->get_future();
  submit(inputs, [promise](ChunkResult result) {
    if (result.error) {
      promise->set_exception(std::make_exception_ptr(*result.error));
    } else {
      promise->set_value(std::move(result.outputs));
    }
  });
  return future;
}

std::vector<CompiledModel::Output> BatchStream::run(const std::vector<NamedTensor>& inputs) {
  return submit(inputs).get();
}

void BatchStream::reset() {
  if (!state_) raise_invalid_input("BatchStream: reset on a moved-from stream");
  std::lock_guard<std::mutex> order(state_->submit_mutex);
  for (std::vector<int64_t>& shape : state_->next_state_shape) shape.clear();
}

void BatchStream::close() {
  if (!state_) return;
  {
    std::lock_guard<std::mutex> lock(state_->batcher->mutex);
    state_->closed = true;
  }
  // A forming batch may have been waiting for this stream to join.
  state_->batcher->work_ready.notify_all();
}

void BatchStream::wait() const {
  if (!state_) return;
  std::unique_lock<std::mutex> lock(state_->batcher->mutex);
  state_->idle.wait(lock, [&] { return state_->outstanding == 0; });
}

}  // namespace rnnc
