#include "runtime/executor.h"

#include <oneapi/tbb/flow_graph.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

#include "runtime/batch_split.h"
#include "runtime/fp_mode.h"
#include "runtime/halide_tbb.h"
#include "runtime/parallel_indices.h"
#include "runtime/tsan.h"

namespace rnnc {

namespace flow = oneapi::tbb::flow;

namespace {

// Time steps per pipeline message: a multiple of the projection GEMM's row tile (6 rows on both
// x86 tables) keeps the chunked projections as cheap as one over the whole sequence, while a
// 17-step sequence still gives three chunks to overlap. RNNC_PIPELINE_CHUNK overrides it.
int64_t pipeline_chunk() {
  if (const char* text = std::getenv("RNNC_PIPELINE_CHUNK")) {
    const int64_t value = std::atoll(text);
    if (value > 0) return value;
  }
  return 6;
}

// How long a pipeline thread that finds none of its CPU's layers runnable waits before it takes
// another CPU's: about what moving an h128 float layer's 512 KiB of weights between two cores'
// caches costs at L3 speed, so a steal never costs much more than the wait it ends.
constexpr std::chrono::microseconds kStealAfter{50};

// One task arena per thread count for the whole process (see executor.h).
std::shared_ptr<oneapi::tbb::task_arena> shared_arena(int threads) {
  static std::mutex mutex;
  static std::map<int, std::weak_ptr<oneapi::tbb::task_arena>> arenas;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<oneapi::tbb::task_arena> arena = arenas[threads].lock();
  if (!arena) {
    arena = std::make_shared<oneapi::tbb::task_arena>(threads);
    arenas[threads] = arena;
  }
  return arena;
}

// task_arena::execute may run `body` on a worker thread when the caller cannot join the arena
// (its slots are taken by other sessions).
template <typename Body>
void execute_in(oneapi::tbb::task_arena& arena, const Body& body) {
  arena.execute(hand_off([&body] { body(); }, &body));
  RNNC_TSAN_ACQUIRE(&body);
}

}  // namespace

class Executor::Context {
 public:
  std::vector<Tensor> slots;
  std::vector<char> bound_now, bound_last;  // slot bound to a caller's output buffer
  std::vector<Tensor> view_copies;          // per slot: a view output's buffer while its block runs
  std::vector<BlockIO> io;                  // per block, kept for recycling
  std::unique_ptr<Workspace[]> workspaces;  // per block

  // Parallel plan: one continue_node per block, in a graph bound to the model's arena.
  std::shared_ptr<oneapi::tbb::task_arena> arena;
  std::unique_ptr<flow::graph> graph;
  std::unique_ptr<flow::broadcast_node<flow::continue_msg>> start;
  std::vector<std::unique_ptr<flow::continue_node<flow::continue_msg>>> block_nodes;
  // Pipeline plan: per chain, each layer's progress (chunks done), released by the layer's
  // thread and acquired by the next layer's.
  struct Chain {
    std::unique_ptr<std::atomic<int64_t>[]> progress;  // per layer
    std::unique_ptr<std::atomic<bool>[]> busy;         // per layer: a thread is running it
    // Per layer: the CPU that ran its last chunk (-1: none yet), kept across runs. The layer's
    // weights are in that core's cache.
    std::unique_ptr<std::atomic<int>[]> home;
    // Per work loop of the current run: the CPU it last ran on (-1: not running).
    std::unique_ptr<std::atomic<int>[]> worker_cpu;
  };
  std::vector<Chain> chains;

  // Profiling: per block, total microseconds and calls (written by the block's own thread).
  bool profiling = false;
  std::vector<double> block_us;
  std::vector<int64_t> block_calls;
  int64_t runs = 0;

  // The first error a block raised on a worker thread; later blocks of the run are skipped.
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;
};

Executor::Executor(const Program& program, RunPlan plan, int threads, bool flush_denormals)
    : program_(program), plan_(plan), threads_(std::max(1, threads)),
      flush_denormals_(flush_denormals),
      arena_(shared_arena(threads_)) {
  const Graph& graph = *program.model().graph;
  std::map<const Value*, size_t> slot_of;
  std::map<const Value*, size_t> producer_of;
  auto slot = [&](const Value* value) {
    auto [it, inserted] = slot_of.emplace(value, num_slots_);
    if (inserted) ++num_slots_;
    return it->second;
  };
  for (const Value* input : graph.inputs()) input_slots_.push_back(slot(input));
  const auto& blocks = program.blocks();
  blocks_.resize(blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (const Value* value : blocks[b]->inputs) {
      blocks_[b].inputs.push_back(slot(value));
      if (auto it = producer_of.find(value); it != producer_of.end()) {
        auto& preds = blocks_[b].predecessors;
        if (std::find(preds.begin(), preds.end(), it->second) == preds.end()) {
          preds.push_back(it->second);
        }
      }
    }
    for (const Value* value : blocks[b]->outputs) {
      blocks_[b].outputs.push_back(slot(value));
      producer_of[value] = b;
    }
  }
  for (const Value* output : graph.outputs()) output_slots_.push_back(slot(output));
  view_output_slots_.resize(blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (!blocks[b]->aliases_input()) continue;
    for (size_t s : blocks_[b].outputs) {
      if (std::find(output_slots_.begin(), output_slots_.end(), s) == output_slots_.end()) {
        alias_slots_.push_back(s);
      } else {
        view_output_slots_[b].push_back(s);
      }
    }
  }

  // In-place updates: the value must come from a block (not the caller), reach no graph output
  // and be read once, by this block.
  std::vector<int> readers(num_slots_, 0);
  for (const BlockSlots& slots : blocks_) {
    for (size_t s : slots.inputs) ++readers[s];
  }
  in_place_slot_.assign(blocks.size(), kNoSlot);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const int input = blocks[b]->in_place_input();
    if (input < 0 || static_cast<size_t>(input) >= blocks_[b].inputs.size() ||
        blocks_[b].outputs.empty()) {
      continue;
    }
    const Value* value = blocks[b]->inputs[static_cast<size_t>(input)];
    const size_t s = blocks_[b].inputs[static_cast<size_t>(input)];
    const auto listed = [s](const std::vector<size_t>& list) {
      return std::find(list.begin(), list.end(), s) != list.end();
    };
    if (!producer_of.count(value) || readers[s] != 1 || listed(input_slots_) ||
        listed(output_slots_)) {
      continue;
    }
    in_place_slot_[b] = s;
  }

  chain_of_.assign(blocks.size(), -1);
  if (plan_ == RunPlan::kPipeline) {
    chains_ = pipeline_chains(program);
    for (size_t c = 0; c < chains_.size(); ++c) {
      for (size_t b : chains_[c]) chain_of_[b] = static_cast<int>(c);
    }
  }
}

Executor::~Executor() = default;

void Executor::ContextDeleter::operator()(Context* context) const {
  // A flow graph's destructor waits for its tasks in its arena, maybe on a worker the wait is
  // delegated to: tear it down inside the arena as a run would, so that wait is joined too.
  if (context->graph) {
    execute_in(*context->arena, [context] {
      context->block_nodes.clear();
      context->start.reset();
      context->graph.reset();
    });
  }
  delete context;
}

Executor::ContextPtr Executor::new_context() const {
  // Flow graphs run their tasks in the arena they are constructed in: build them in ours.
  ContextPtr context;
  execute_in(*arena_, [&] { context = build_context(); });
  return context;
}

Executor::ContextPtr Executor::build_context() const {
  ContextPtr context(new Context());
  Context& ctx = *context;
  ctx.slots.resize(num_slots_);
  ctx.bound_now.assign(num_slots_, 0);
  ctx.bound_last.assign(num_slots_, 0);
  ctx.view_copies.resize(num_slots_);
  const Graph& graph = *program_.model().graph;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value* input = graph.inputs()[i];
    if (input->is_constant()) ctx.slots[input_slots_[i]] = *input->constant();  // a default
  }
  const size_t count = program_.blocks().size();
  ctx.io.resize(count);
  ctx.block_us.assign(count, 0.0);
  ctx.block_calls.assign(count, 0);
  ctx.workspaces.reset(new Workspace[count]);
  for (size_t b = 0; b < count; ++b) {
    ctx.io[b].inputs.resize(blocks_[b].inputs.size());
    ctx.io[b].outputs.resize(blocks_[b].outputs.size());
    ctx.io[b].workspace = &ctx.workspaces[b];
  }
  Context* raw = context.get();
  if (plan_ == RunPlan::kParallel) {
    ctx.arena = arena_;
    ctx.graph = std::make_unique<flow::graph>();
    ctx.start = std::make_unique<flow::broadcast_node<flow::continue_msg>>(*ctx.graph);
    for (size_t b = 0; b < count; ++b) {
      // The graph's edges as TSan hand-offs: a block starts after the run's start (released on
      // &context) and its predecessors' ends (each released on its own &context.io[p]).
      auto body = [this, raw, b](const flow::continue_msg&) {
        RNNC_TSAN_ACQUIRE(raw);
        for (size_t p : blocks_[b].predecessors) RNNC_TSAN_ACQUIRE(&raw->io[p]);
        if (!raw->failed.load()) {
          // A node runs on whichever arena thread takes it: the run's mode is set there too
          // (the sequential plans set it once per run, in run()).
          ScopedFpMode fp_mode(ScopedFpMode::run_mode(flush_denormals_));
          try {
            run_block(*raw, b);
          } catch (...) {
            fail(*raw);
          }
        }
      };
      ctx.block_nodes.push_back(std::make_unique<flow::continue_node<flow::continue_msg>>(
          *ctx.graph, hand_off(body, &ctx.io[b])));
    }
    for (size_t b = 0; b < count; ++b) {
      if (blocks_[b].predecessors.empty()) flow::make_edge(*ctx.start, *ctx.block_nodes[b]);
      for (size_t p : blocks_[b].predecessors) {
        flow::make_edge(*ctx.block_nodes[p], *ctx.block_nodes[b]);
      }
    }
  }
  for (const std::vector<size_t>& chain : chains_) {
    Context::Chain c{std::make_unique<std::atomic<int64_t>[]>(chain.size()),
                     std::make_unique<std::atomic<bool>[]>(chain.size()),
                     std::make_unique<std::atomic<int>[]>(chain.size()),
                     std::make_unique<std::atomic<int>[]>(static_cast<size_t>(threads_))};
    for (size_t k = 0; k < chain.size(); ++k) c.home[k].store(-1);
    for (int t = 0; t < threads_; ++t) c.worker_cpu[t].store(-1);
    ctx.chains.push_back(std::move(c));
  }
  return context;
}

void Executor::bind_input(Context& context, size_t input, DType dtype, const int64_t* shape,
                          size_t rank, const void* data) const {
  context.slots[input_slots_[input]].rebind(dtype, shape, rank, const_cast<void*>(data));
}

void Executor::bind_output(Context& context, size_t output, DType dtype, const int64_t* shape,
                           size_t rank, void* data) const {
  const size_t slot = output_slots_[output];
  context.slots[slot].rebind(dtype, shape, rank, data, /*writable=*/true);
  context.bound_now[slot] = 1;
}

const Tensor& Executor::output(const Context& context, size_t output) const {
  const Value* value = program_.model().graph->outputs()[output];
  const Tensor& tensor = context.slots[output_slots_[output]];
  if (!tensor.defined() && value->is_constant() && !value->is_graph_input()) {
    return *value->constant();
  }
  return tensor;
}

void Executor::fail(Context& context) const {
  std::lock_guard<std::mutex> lock(context.error_mutex);
  if (!context.error) context.error = std::current_exception();
  context.failed.store(true);
}

namespace {
// Adds the time since `start` to block b's profile when profiling is on.
struct BlockTimer {
  BlockTimer(bool on, double& total, int64_t& calls)
      : on_(on), total_(total), calls_(calls),
        start_(on ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point()) {}
  ~BlockTimer() {
    if (!on_) return;
    total_ += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_)
                  .count();
    ++calls_;
  }
  bool on_;
  double& total_;
  int64_t& calls_;
  std::chrono::steady_clock::time_point start_;
};
}  // namespace

void Executor::set_profiling(Context& context, bool on) const {
  context.profiling = on;
  context.block_us.assign(program_.blocks().size(), 0.0);
  context.block_calls.assign(program_.blocks().size(), 0);
  context.runs = 0;
}

int64_t Executor::profiled_runs(const Context& context) const {
  return context.profiling ? static_cast<int64_t>(context.runs) : 0;
}

std::string Executor::profile_report(const Context& context) const {
  if (!context.profiling || context.runs == 0) return "no profiled runs\n";
  std::vector<size_t> order(program_.blocks().size());
  for (size_t b = 0; b < order.size(); ++b) order[b] = b;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return context.block_us[a] > context.block_us[b]; });
  double total = 0;
  for (double us : context.block_us) total += us;
  std::string text = cat("per-block time over ", context.runs, " runs (", run_plan_name(plan_),
                         " plan; us per run, share of the blocks' total):\n");
  for (size_t b : order) {
    const double per_run = context.block_us[b] / static_cast<double>(context.runs);
    char line[64];
    std::snprintf(line, sizeof(line), "  %9.2f us %5.1f%%  block %zu: ", per_run,
                  total > 0 ? 100.0 * context.block_us[b] / total : 0.0, b);
    text += line + program_.blocks()[b]->kind() + "\n";
  }
  return text;
}

void Executor::bind_inputs(Context& context, size_t b) const {
  const std::vector<size_t>& inputs = blocks_[b].inputs;
  BlockIO& io = context.io[b];
  for (size_t k = 0; k < inputs.size(); ++k) io.inputs[k] = &context.slots[inputs[k]];
}

void Executor::take_outputs(Context& context, size_t b) const {
  const std::vector<size_t>& outputs = blocks_[b].outputs;
  BlockIO& io = context.io[b];
  io.outputs.resize(outputs.size());
  for (size_t j = 0; j < outputs.size(); ++j) io.outputs[j] = std::move(context.slots[outputs[j]]);
}

void Executor::return_outputs(Context& context, size_t b) const {
  const std::vector<size_t>& outputs = blocks_[b].outputs;
  BlockIO& io = context.io[b];
  for (size_t j = 0; j < outputs.size(); ++j) context.slots[outputs[j]] = std::move(io.outputs[j]);
}

void Executor::run_block(Context& context, size_t b) const {
  const ExecutionBlock& block = *program_.blocks()[b];
  // With threads to spare, a block's batch entries may run as slices on the model's arena
  // (a bidirectional layer's directions already fill two threads).
  if (threads_ > 1 && plan_ != RunPlan::kSequential && block.batch_slice_unit() > 0 &&
      block.independent_parts() <= 1 && run_batch_slices(context, &b, 1)) {
    return;
  }
  BlockTimer timer(context.profiling, context.block_us[b], context.block_calls[b]);
  BlockIO& io = context.io[b];
  const BlockSlots& slots = blocks_[b];
  bind_inputs(context, b);
  for (size_t s : view_output_slots_[b]) {
    // The copy waits aside; the slot gets the last run's emptied view, whose shape storage the
    // new view reuses.
    if (!context.bound_now[s]) std::swap(context.view_copies[s], context.slots[s]);
  }
  take_outputs(context, b);
  // An in-place update takes its input's buffer when it alone holds it (not a view of another
  // value, not a caller's output buffer) and gives the producer its last output to recycle.
  if (const size_t s = in_place_slot_[b]; s != kNoSlot) {
    Tensor& input = context.slots[s];
    if (input.defined() && !input.borrowed() && input.exclusive() &&
        !context.bound_now[slots.outputs[0]]) {
      std::swap(io.outputs[0], input);
      const size_t k = static_cast<size_t>(block.in_place_input());
      io.inputs[k] = &io.outputs[0];
    }
  }
  // With threads to spare, a block's independent parts (a bidirectional layer's directions)
  // run at once on the model's arena.
  const int parts = threads_ > 1 && plan_ != RunPlan::kSequential ? block.independent_parts() : 0;
  if (parts > 1) {
    block.begin_parts(io);
    parallel_indices(parts, [&](int64_t part) { block.run_part(io, static_cast<int>(part)); });
    block.end_parts(io);
  } else {
    block.run(io);
  }
  RNNC_CHECK(io.outputs.size() == slots.outputs.size(), "block '", block.kind(), "' produced ",
             io.outputs.size(), " outputs, expected ", slots.outputs.size());
  return_outputs(context, b);
  for (size_t s : view_output_slots_[b]) copy_view_output(context, s);
}

void Executor::copy_view_output(Context& context, size_t s) const {
  Tensor& view = context.slots[s];
  // A caller's buffer was filled by the block; a block that fell back to computing its output
  // owns it alone.
  if (context.bound_now[s] || !view.defined() || !view.is_tensor() || view.exclusive()) return;
  Tensor& copy = context.view_copies[s];
  Tensor::recycle(copy, view.dtype(), view.shape().data(), view.shape().size());
  if (view.nbytes() > 0) std::memcpy(copy.raw_data(), view.raw_data(), view.nbytes());
  std::swap(view, copy);
  copy.drop_storage();  // lets the producer recycle the buffer the view shared
}

bool Executor::run_batch_slices(Context& context, const size_t* list, size_t count) const {
  const auto& blocks = program_.blocks();
  int64_t unit = 1;
  double weight_bytes = 0;
  for (size_t i = 0; i < count; ++i) {
    const ExecutionBlock& block = *blocks[list[i]];
    const int64_t block_unit = block.batch_slice_unit();
    if (block_unit <= 0) return false;
    unit = std::lcm(unit, block_unit);
    weight_bytes = std::max(weight_bytes, block.step_weight_bytes());
  }
  bind_inputs(context, list[0]);
  const int64_t batch = blocks[list[0]]->batch_size(context.io[list[0]]);
  int64_t bounds[kMaxSlices + 1];
  const int slices = batch < 0 ? 0 : batch_slices(batch, unit, weight_bytes, threads_, bounds);
  if (slices < 2) return false;
  // Every block binds its outputs first (a layer's sequence output is the next one's input), and
  // an entry's rows of one layer's Y must be that entry's rows of the next layer's X.
  ExecutionBlock::SliceLayout previous;
  for (size_t i = 0; i < count; ++i) {
    const size_t b = list[i];
    const ExecutionBlock& block = *blocks[b];
    BlockIO& io = context.io[b];
    bind_inputs(context, b);
    take_outputs(context, b);
    const bool ready = block.begin_batch_slices(io, bounds, slices);
    return_outputs(context, b);
    if (!ready) return false;
    const ExecutionBlock::SliceLayout layout = block.batch_slice_layout(io);
    if (i > 0 && (layout.x != previous.y || layout.x_seq_stride != previous.y_seq_stride ||
                  layout.x_batch_stride != previous.y_batch_stride)) {
      return false;
    }
    previous = layout;
  }
  // One thread per slice runs every block over its entries: a block's slice reads only the rows
  // the same thread wrote in the block before. Slice 0's times stand for the block's. With a
  // slice per arena thread, the kernels' own parallel loops (the projection's row tiles) run in
  // order on their slice's thread: every thread is busy, and a thread taking another slice's
  // tiles would pull that slice's weights into its cache.
  parallel_indices(slices, [&](int64_t slice) {
    std::optional<SerialHalideLoops> serial;
    if (slices >= threads_) serial.emplace();
    for (size_t i = 0; i < count && !context.failed.load(std::memory_order_relaxed); ++i) {
      const size_t b = list[i];
      try {
        BlockTimer timer(context.profiling && slice == 0, context.block_us[b],
                         context.block_calls[b]);
        blocks[b]->run_batch_slice(context.io[b], static_cast<int>(slice));
      } catch (...) {
        fail(context);
      }
    }
  });
  return true;
}

void Executor::run_chain(Context& context, size_t index) const {
  const std::vector<size_t>& chain = chains_[index];
  if (run_batch_slices(context, chain.data(), chain.size())) return;
  Context::Chain& c = context.chains[index];
  // Every layer binds its outputs first (a layer's sequence output is the next one's input).
  int64_t length = -1;
  for (size_t b : chain) {
    const ExecutionBlock& block = *program_.blocks()[b];
    bind_inputs(context, b);
    take_outputs(context, b);
    const int64_t layer_length = block.begin_chunks(context.io[b]);
    RNNC_CHECK(length < 0 || layer_length == length, "pipeline layers with sequence lengths ",
               length, " and ", layer_length);
    length = layer_length;
    return_outputs(context, b);
  }
  const int64_t chunk = pipeline_chunk();
  const int64_t chunks = (length + chunk - 1) / chunk;
  const size_t layers = chain.size();
  for (size_t k = 0; k < layers; ++k) c.progress[k].store(0);

  // A wavefront over (layer, chunk): each of the model's threads repeatedly takes a runnable
  // chunk - the next chunk of a layer nobody is running whose layer below has released that
  // chunk (its rows of the sequence output are final). Layer k+1 thus runs chunk c while layer k
  // runs chunk c+1. A thread takes the layers whose last chunk ran on its CPU, that none ran yet,
  // or whose CPU no other thread of this run is on; another thread's layer only after it has
  // found nothing for kStealAfter: a layer's weights live in the cache of the core that last ran
  // it, and moving them costs more than a short wait (taking any runnable layer at once, with
  // preferences by thread index - which differs from run to run - makes chunks slower than in a
  // sequential run). The calling thread takes part, so a run completes even when no worker
  // joins the arena (and then finds every layer its own).
  for (size_t k = 0; k < layers; ++k) c.busy[k].store(false);
  const size_t threads = std::min(static_cast<size_t>(threads_), layers);
  auto work = [&](size_t me) {
    int idle = 0;
    std::chrono::steady_clock::time_point idle_since;
    while (!context.failed.load(std::memory_order_relaxed) &&
           c.progress[layers - 1].load(std::memory_order_acquire) < chunks) {
      // Stored only when it changes: a spinning thread does not write shared memory.
      const int cpu = sched_getcpu();
      if (c.worker_cpu[me].load(std::memory_order_relaxed) != cpu) {
        c.worker_cpu[me].store(cpu, std::memory_order_relaxed);
      }
      auto mine = [&](int home) {
        if (home == cpu || home < 0) return true;
        for (size_t t = 0; t < threads; ++t) {
          if (t != me && c.worker_cpu[t].load(std::memory_order_relaxed) == home) return false;
        }
        return true;
      };
      const bool may_steal =
          idle > 0 && std::chrono::steady_clock::now() - idle_since > kStealAfter;
      size_t picked = layers;
      int64_t index = 0;
      for (int pass = 0; pass < (may_steal ? 2 : 1) && picked == layers; ++pass) {
        for (size_t k = 0; k < layers; ++k) {
          const int home = c.home[k].load(std::memory_order_relaxed);
          if ((pass == 0) != mine(home)) continue;
          auto runnable = [&] {
            index = c.progress[k].load(std::memory_order_acquire);
            return index < chunks &&
                   (k == 0 || c.progress[k - 1].load(std::memory_order_acquire) > index);
          };
          if (!runnable() || c.busy[k].exchange(true, std::memory_order_acquire)) continue;
          if (runnable()) {  // still, now that we hold it
            picked = k;
            break;
          }
          c.busy[k].store(false, std::memory_order_release);
        }
      }
      if (picked == layers) {
        if (idle++ == 0) idle_since = std::chrono::steady_clock::now();
        if (idle > 64) std::this_thread::yield();
        continue;
      }
      idle = 0;
      c.home[picked].store(cpu, std::memory_order_relaxed);
      const size_t b = chain[picked];
      try {
        BlockTimer timer(context.profiling, context.block_us[b], context.block_calls[b]);
        const int64_t begin = index * chunk;
        program_.blocks()[b]->run_chunk(context.io[b], begin, std::min(length, begin + chunk));
      } catch (...) {
        fail(context);
      }
      c.progress[picked].store(index + 1, std::memory_order_release);
      c.busy[picked].store(false, std::memory_order_release);
    }
  };
  // One work loop per thread, up to one per layer; the caller runs one.
  parallel_indices(static_cast<int64_t>(threads), [&](int64_t me) {
    work(static_cast<size_t>(me));
    c.worker_cpu[me].store(-1, std::memory_order_relaxed);
  });
  if (context.failed.load()) return;
  for (size_t b : chain) program_.blocks()[b]->end_chunks(context.io[b]);
}

void Executor::run(Context& context) const {
  // A caller buffer bound at the previous run but not this one must not be written again.
  for (size_t s = 0; s < num_slots_; ++s) {
    if (context.bound_last[s] && !context.bound_now[s]) context.slots[s] = Tensor();
  }
  context.failed.store(false);
  context.error = nullptr;
  const size_t count = program_.blocks().size();
  // Inside the model's arena even when sequential: Halide's parallel loops (halide_tbb.h) then
  // use at most the model's threads.
  execute_in(*arena_, [&] {
    ScopedFpMode fp_mode(ScopedFpMode::run_mode(flush_denormals_));
    if (plan_ == RunPlan::kParallel) {
      RNNC_TSAN_RELEASE(&context);  // the block nodes acquire it (build_context)
      context.start->try_put(flow::continue_msg());
      context.graph->wait_for_all();
      // Every graph task's last access is releasing the graph's wait count (oneTBB's
      // graph_task::finalize), which lives in the graph object: acquiring it orders all the
      // workers did, blocks and their nodes' successor walks alike, before the next run or
      // the teardown.
      tsan_acquire_words(*context.graph);
      return;
    }
    for (size_t b = 0; b < count && !context.failed.load(); ++b) {
      try {
        if (chain_of_[b] < 0) {
          run_block(context, b);
        } else if (chains_[static_cast<size_t>(chain_of_[b])].front() == b) {
          run_chain(context, static_cast<size_t>(chain_of_[b]));
        }
      } catch (...) {
        fail(context);
      }
    }
  });
  for (size_t s : alias_slots_) context.slots[s].drop_storage();
  if (context.profiling) ++context.runs;
  context.bound_last.swap(context.bound_now);
  std::fill(context.bound_now.begin(), context.bound_now.end(), 0);
  if (context.error) std::rethrow_exception(context.error);
}

}  // namespace rnnc
