#include "lowering/program.h"

#include <algorithm>
#include <functional>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>

#include <Halide.h>

#include "ir/reference/evaluator.h"
#include "lowering/halide_cache.h"
#include "lowering/lower_concat.h"
#include "lowering/lower_copy.h"
#include "lowering/lower_group.h"
#include "lowering/lower_recurrent.h"
#include "lowering/lower_view.h"
#include "lowering/partition.h"
#include "lowering/reference_block.h"

namespace rnnc {

namespace {

// ---- recurrent blocks ---------------------------------------------------------------------------

const char* const kInputSlots[] = {"x", "", "", "", "", "initial_h", "initial_c", ""};
const char* const kOutputSlots[] = {"y", "y_h", "y_c"};

bool is_view_of(const Node* node, const std::string& target) {
  if (!node) return false;
  const Attribute* a = node->find_attr(kLayoutOfAnnotation);
  return a && a->kind == Attribute::Kind::kString && a->s == target;
}

// The value holding node input `slot`'s data in the layout the block reads: the marked
// Transpose's input when graph_opt folded the Transpose into the node, else the input itself.
const Value* slot_source(const Node& node, size_t slot) {
  const Value* value = node.input(slot);
  const char* name = slot < std::size(kInputSlots) ? kInputSlots[slot] : "";
  if (value && *name && is_view_of(value->producer(), node.name() + "." + name)) {
    return value->producer()->input(0);
  }
  return value;
}

// The value receiving node output `slot`: the end of its chain of marked view ops, if any.
const Value* slot_destination(const Node& node, size_t slot) {
  const Value* value = node.output(slot);
  if (!value || slot >= std::size(kOutputSlots)) return value;
  std::string target = node.name() + "." + kOutputSlots[slot];
  while (value->uses().size() == 1 && is_view_of(value->uses()[0].node, target)) {
    value = value->uses()[0].node->output(0);
  }
  return value;
}

// Runs a block written against one node's own inputs and outputs (the reference-kernel
// convention lower_recurrent uses) as a block of the partition: the node's marked view ops are in
// the same block and emit nothing, since the inner block reads and writes the views' layouts.
class NodeConventionBlock : public ExecutionBlock {
 public:
  NodeConventionBlock(std::unique_ptr<ExecutionBlock> inner, const Node& node)
      : inner_(std::move(inner)), node_(node) {
    compile_ms = inner_->compile_ms;
    from_cache = inner_->from_cache;
  }

  std::string kind() const override { return inner_->kind(); }
  std::vector<OverflowCounts> overflow_counts() const override { return inner_->overflow_counts(); }
  bool holds_its_constants() const override { return inner_->holds_its_constants(); }

  // After the partition's inputs and outputs are known: where each node slot comes from and goes.
  void bind() {
    for (size_t i = 0; i < node_.num_inputs(); ++i) {
      const Value* source = slot_source(node_, i);
      auto it = std::find(inputs.begin(), inputs.end(), source);
      input_from_.push_back(source && it != inputs.end() ? it - inputs.begin() : -1);
    }
    for (const Value* out : outputs) {
      int slot = -1;
      for (size_t i = 0; i < node_.num_outputs(); ++i) {
        if (node_.output(i) && slot_destination(node_, i) == out) slot = static_cast<int>(i);
      }
      RNNC_CHECK(slot >= 0, "'", out->name(), "' leaves the block of ", node_.describe(),
                 " but is none of its outputs' views");
      output_slot_.push_back(slot);
    }
  }

  void run(BlockIO& io) const override {
    BlockIO& inner = enter(io);
    inner_->run(inner);
    leave(io);
  }

  bool chunkable() const override { return inner_->chunkable(); }
  // The outputs are handed out when the chunked run begins (their rows fill chunk by chunk).
  int64_t begin_chunks(BlockIO& io) const override {
    const int64_t length = inner_->begin_chunks(enter(io));
    leave(io);
    return length;
  }
  void run_chunk(BlockIO& io, int64_t begin, int64_t end) const override {
    inner_->run_chunk(inner_io(io), begin, end);
  }
  void end_chunks(BlockIO& io) const override { inner_->end_chunks(inner_io(io)); }
  int independent_parts() const override { return inner_->independent_parts(); }
  void begin_parts(BlockIO& io) const override {
    inner_->begin_parts(enter(io));
    leave(io);
  }
  void run_part(BlockIO& io, int part) const override { inner_->run_part(inner_io(io), part); }
  void end_parts(BlockIO& io) const override { inner_->end_parts(inner_io(io)); }
  int64_t batch_slice_unit() const override { return inner_->batch_slice_unit(); }
  int64_t batch_size(BlockIO& io) const override { return inner_->batch_size(inner_inputs(io)); }
  bool begin_batch_slices(BlockIO& io, const int64_t* bounds, int slices) const override {
    const bool ready = inner_->begin_batch_slices(enter(io), bounds, slices);
    leave(io);
    return ready;
  }
  void run_batch_slice(BlockIO& io, int slice) const override {
    inner_->run_batch_slice(inner_io(io), slice);
  }
  SliceLayout batch_slice_layout(const BlockIO& io) const override {
    return inner_->batch_slice_layout(static_cast<const State&>(*io.state).inner);
  }
  double step_weight_bytes() const override { return inner_->step_weight_bytes(); }
  // The inner block writes the node's slots: the block's values mapped as enter() maps tensors.
  void write_aot(AotWriter& writer, const AotBlockIO& io) const override {
    AotBlockIO slots;
    for (int from : input_from_) slots.inputs.push_back(from >= 0 ? io.inputs.at(from) : nullptr);
    slots.outputs.assign(node_.num_outputs(), nullptr);
    for (size_t i = 0; i < io.outputs.size() && i < output_slot_.size(); ++i) {
      slots.outputs[output_slot_[i]] = io.outputs[i];
    }
    inner_->write_aot(writer, slots);
  }
  const Value* sequence_input() const override { return slot_source(node_, 0); }
  const Value* sequence_output() const override { return slot_destination(node_, 0); }

 private:
  // The inner block's BlockIO, kept across runs so its outputs and state are reused.
  struct State : BlockRunState {
    BlockIO inner;
  };
  BlockIO& inner_io(BlockIO& io) const { return run_state<State>(io).inner; }
  // Points the inner block's input slots at the block's inputs.
  BlockIO& inner_inputs(BlockIO& io) const {
    BlockIO& inner = inner_io(io);
    inner.inputs.resize(input_from_.size());
    for (size_t i = 0; i < input_from_.size(); ++i) {
      inner.inputs[i] = input_from_[i] >= 0 ? io.inputs[input_from_[i]] : nullptr;
    }
    return inner;
  }
  // Hands the block's inputs, workspace and recyclable outputs to the inner block's slots.
  BlockIO& enter(BlockIO& io) const {
    BlockIO& inner = inner_inputs(io);
    inner.workspace = io.workspace;
    inner.outputs.resize(node_.num_outputs());
    for (size_t i = 0; i < io.outputs.size() && i < output_slot_.size(); ++i) {
      inner.outputs[output_slot_[i]] = std::move(io.outputs[i]);
    }
    return inner;
  }
  void leave(BlockIO& io) const {
    BlockIO& inner = inner_io(io);
    io.outputs.resize(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      // The inner block wrote a view's data in the view's own axis order and shape.
      Tensor& data = inner.outputs[output_slot_[i]];
      RNNC_CHECK(data.rank() == outputs[i]->type.rank(), kind(), " wrote '", outputs[i]->name(),
                 "' with rank ", data.rank(), ", expected ", outputs[i]->type.to_string());
      io.outputs[i] = std::move(data);
    }
  }

  std::unique_ptr<ExecutionBlock> inner_;
  const Node& node_;
  std::vector<int> input_from_;
  std::vector<int> output_slot_;
};

std::unique_ptr<ExecutionBlock> lower_recurrent_block(const BlockSpec& spec, HalideCache& cache) {
  const Node* node = nullptr;
  for (const Node* n : spec.nodes) {
    if (n->op_type() == "LSTM" || n->op_type() == "GRU" || n->op_type() == "RNN") node = n;
  }
  if (!node) raise_unsupported("not a recurrent block");
  return std::make_unique<NodeConventionBlock>(
      lower_recurrent(*node, cache, annotated_recurrent_layouts(*node)), *node);
}

// The Halide lowerings, tried in order for each block; each throws kUnsupported for a block it
// does not handle, and the block then runs on reference kernels.
using BlockLowerer = std::unique_ptr<ExecutionBlock> (*)(const BlockSpec& spec, HalideCache& cache);
const std::vector<BlockLowerer>& lowerers() {
  static const std::vector<BlockLowerer> list = {
      lower_recurrent_block,
      [](const BlockSpec& spec, HalideCache&) { return lower_concat(spec.nodes); },
      [](const BlockSpec& spec, HalideCache&) { return lower_copy(spec.nodes); },
      [](const BlockSpec& spec, HalideCache&) { return lower_view(spec.nodes); },
      [](const BlockSpec& spec, HalideCache& cache) { return lower_nodes(spec.nodes, cache); },
  };
  return list;
}

void collect_nodes(const Node& node, std::set<const Node*>& out) {
  out.insert(&node);
  for (const Graph* sub : node.subgraphs()) {
    for (const auto& inner : sub->nodes()) collect_nodes(*inner, out);
  }
}

bool is_runtime_value(const Value* value) {
  return value && (!value->is_constant() || value->is_graph_input());
}

// Which values a block reads from outside and which it must hand on.
void assign_block_io(ExecutionBlock& block, const Graph& graph) {
  block.inputs.clear();
  block.outputs.clear();
  std::set<const Node*> members;
  for (const Node* node : block.nodes) collect_nodes(*node, members);
  std::set<const Value*> produced, seen_inputs;
  for (const Node* node : block.nodes) {
    std::vector<const Value*> reads(node->inputs().begin(), node->inputs().end());
    for (const Graph* sub : node->subgraphs()) {
      for (const Value* v : captured_values(*sub)) reads.push_back(v);
    }
    for (const Value* value : reads) {
      if (is_runtime_value(value) && !produced.count(value) && seen_inputs.insert(value).second) {
        block.inputs.push_back(value);
      }
    }
    for (const Value* out : node->outputs()) {
      if (out) produced.insert(out);
    }
  }
  for (const Node* node : block.nodes) {
    for (const Value* out : node->outputs()) {
      if (!out) continue;
      bool used_outside = false;
      for (const Use& use : out->uses()) used_outside = used_outside || !members.count(use.node);
      for (const Value* g : graph.outputs()) used_outside = used_outside || g == out;
      // Values nested graphs outside the block return directly have no use record.
      for (const auto& other : graph.nodes()) {
        if (members.count(other.get())) continue;
        for (const Graph* sub : other->subgraphs()) {
          for (const Value* v : captured_values(*sub)) used_outside = used_outside || v == out;
        }
      }
      if (used_outside) block.outputs.push_back(out);
    }
  }
}

// Sequences and optionals (ValueKind) have no buffer layout: a block that reads or writes one
// runs on reference kernels, which pass them as values.
bool handles_only_tensors(const BlockSpec& spec) {
  for (const Node* node : spec.nodes) {
    for (const Value* v : node->inputs()) {
      if (v && !v->type.is_tensor()) return false;
    }
    for (const Value* v : node->outputs()) {
      if (v && !v->type.is_tensor()) return false;
    }
  }
  return true;
}

std::unique_ptr<ExecutionBlock> lower_block(const BlockSpec& spec, HalideCache* cache) {
  if (cache && handles_only_tensors(spec)) {
    for (BlockLowerer lowerer : lowerers()) {
      try {
        std::unique_ptr<ExecutionBlock> block = lowerer(spec, *cache);
        block->nodes = spec.nodes;
        block->plan = spec.plan;
        block->cost = spec.cost;
        return block;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kUnsupported) throw;
      }
    }
  }
  return make_reference_block(spec);
}

// Releases the data of the graph's constants (initializers and folded values; not graph inputs
// or outputs) that no block reads from the graph at run time: their only readers are blocks that
// hold their own copies (packed recurrent weights, Halide arguments), so the graph's data would
// stay resident twice. Called after each block is lowered, so a model's weights are held about
// once, plus one layer's, while it compiles. The values keep their dtype and shape.
class HeldConstantRelease {
 public:
  explicit HeldConstantRelease(const Graph& graph)
      : kept_(graph.outputs().begin(), graph.outputs().end()) {
    // Values nested graphs read have no use record: they stay.
    for (const auto& node : graph.nodes()) {
      for (const Graph* sub : node->subgraphs()) {
        for (const Value* value : captured_values(*sub)) kept_.insert(value);
      }
    }
  }

  void after_lowering(const ExecutionBlock& block) {
    if (!block.holds_its_constants()) return;
    for (const Node* node : block.nodes) holding_.insert(node);
    for (const Node* node : block.nodes) {
      for (Value* value : node->inputs()) {
        if (!value || !value->is_constant() || value->is_graph_input() || kept_.count(value) ||
            !value->constant()->has_data()) {
          continue;
        }
        bool held = true;
        for (const Use& use : value->uses()) held = held && holding_.count(use.node);
        if (!held) continue;
        released_bytes_ += value->constant()->nbytes();
        value->set_constant(std::make_shared<const Tensor>(value->constant()->without_data()));
      }
    }
  }
  size_t released_bytes() const { return released_bytes_; }

 private:
  std::set<const Value*> kept_;
  std::set<const Node*> holding_;  // nodes of lowered blocks that hold their constants
  size_t released_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Program> lower_program(std::unique_ptr<Model> model,
                                       const std::vector<BlockSpec>& blocks,
                                       const ProgramOptions& options) {
  auto program = std::unique_ptr<Program>(new Program());
  if (!options.reference_only) {
    program->cache_ = std::make_shared<HalideCache>(options.cache_dir, options.target);
    program->cache_->set_keep_objects(options.keep_objects);
    program->cache_->set_count_overflow(options.count_overflow);
  }
  std::optional<HeldConstantRelease> release;
  if (options.release_held_constants) release.emplace(*model->graph);
  for (const BlockSpec& spec : blocks) {
    std::unique_ptr<ExecutionBlock> block = lower_block(spec, program->cache_.get());
    assign_block_io(*block, *model->graph);
    if (auto* recurrent = dynamic_cast<NodeConventionBlock*>(block.get())) recurrent->bind();
    if (release) release->after_lowering(*block);
    program->blocks_.push_back(std::move(block));
  }
  if (release) program->released_constant_bytes_ = release->released_bytes();
  program->model_ = std::move(model);
  return program;
}

std::vector<Tensor> Program::run(const std::map<std::string, Tensor>& inputs) const {
  const Graph& graph = *model_->graph;
  bind_inputs(graph, inputs);
  std::map<const Value*, Tensor> slots;
  for (const Value* input : graph.inputs()) {
    auto it = inputs.find(input->name());
    slots[input] = it != inputs.end() ? it->second : *input->constant();
  }
  for (const auto& block : blocks_) {
    BlockIO io;
    for (const Value* value : block->inputs) {
      auto it = slots.find(value);
      RNNC_CHECK(it != slots.end(), "block '", block->kind(), "' reads '", value->name(),
                 "' before it is computed");
      io.inputs.push_back(&it->second);
    }
    block->run(io);
    RNNC_CHECK(io.outputs.size() == block->outputs.size(), "block '", block->kind(),
               "' produced ", io.outputs.size(), " outputs, expected ", block->outputs.size());
    for (size_t i = 0; i < io.outputs.size(); ++i) slots[block->outputs[i]] = std::move(io.outputs[i]);
  }
  std::vector<Tensor> outputs;
  for (const Value* out : graph.outputs()) {
    if (auto it = slots.find(out); it != slots.end()) {
      outputs.push_back(it->second);
    } else {
      RNNC_CHECK(out->is_constant(), "graph output '", out->name(), "' was not computed");
      outputs.push_back(*out->constant());
    }
  }
  return outputs;
}

std::vector<OverflowCounts> Program::overflow_counts() const {
  std::vector<OverflowCounts> all;
  for (const auto& block : blocks_) {
    for (OverflowCounts& counts : block->overflow_counts()) all.push_back(std::move(counts));
  }
  return all;
}

std::string Program::overflow_report() const {
  if (!cache_ || !cache_->count_overflow()) return "";
  std::ostringstream out;
  out << "overflow counts (quantized nodes; activations clamped to their integer range, exact sums "
         "beyond the declared accumulation width)\n";
  for (const OverflowCounts& c : overflow_counts()) {
    auto share = [&](int64_t n) {
      std::ostringstream text;
      text << n;
      if (c.values > 0 && n > 0) {
        text << " (" << std::setprecision(3) << 100.0 * static_cast<double>(n) /
                                                    static_cast<double>(c.values)
             << "%)";
      }
      return text.str();
    };
    out << "  " << c.node << ": " << c.values << " activations quantized to " << c.activation_bits
        << " bits, " << share(c.above) << " clamped above, " << share(c.below)
        << " clamped below; " << c.sums_beyond << " sums beyond " << c.accumulation_bits
        << " bits\n";
  }
  return out.str();
}

std::string Program::describe() const {
  std::ostringstream out;
  out << blocks_.size() << " execution blocks";
  if (cache_) {
    const KernelTarget& target = cache_->kernel_target();
    out << " (target " << target.name << ": " << target.features.to_string() << "; tuned for "
        << target.tune_cpu << "; schedule class " << target.schedule_class() << ")";
  }
  out << "\n";
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const ExecutionBlock& block = *blocks_[i];
    out << "block " << i << ": " << block.kind() << "\n    plan: seq="
        << axis_plan_name(block.plan.sequence) << " batch=" << axis_plan_name(block.plan.batch)
        << std::fixed << std::setprecision(0) << "  cost " << block.cost;
    if (block.compile_ms > 0) out << "  compiled in " << block.compile_ms << " ms";
    out << std::defaultfloat;
    if (block.from_cache) out << "  (cached)";
    out << "\n    nodes:";
    for (const Node* node : block.nodes) out << " " << node->op_type() << "'" << node->name() << "'";
    out << "\n";
  }
  return out.str();
}

}  // namespace rnnc
