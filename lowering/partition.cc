#include "lowering/partition.h"

#include "ir/error.h"

#include <algorithm>
#include <map>
#include <set>

namespace rnnc {

namespace {

bool is_recurrent(const Node& node) {
  return node.op_type() == "LSTM" || node.op_type() == "GRU" || node.op_type() == "RNN";
}

// Nominal sizes for dynamic axes when estimating costs.
int64_t nominal(const Dim& dim) {
  if (dim.is_known()) return dim.value();
  std::map<std::string, int64_t> bindings;
  for (const auto& name : dim.symbols()) bindings[name] = name.find("batch") != std::string::npos ? 1 : 16;
  return dim.evaluate(bindings).value_or(16);
}

int64_t nominal_elements(const Value* value) {
  if (!value || !value->type.shape) return 0;
  int64_t count = 1;
  for (const Dim& dim : *value->type.shape) count *= std::max<int64_t>(nominal(dim), 0);
  return count;
}

std::string direction_of(const Node& node) { return node.attr_string("direction", "forward"); }

}  // namespace

double estimate_node_cost(const Node& node) {
  double weight_bytes = 0;
  for (const Value* input : node.inputs()) {
    if (input && input->is_constant()) weight_bytes += static_cast<double>(input->constant()->nbytes());
  }
  double work = 0;
  for (const Value* output : node.outputs()) work += static_cast<double>(nominal_elements(output));
  // Recurrent weights are streamed once per step; others once per run.
  if (is_recurrent(node)) {
    const Value* x = node.input(0);
    int64_t steps = x && x->type.shape && !x->type.shape->empty() ? nominal((*x->type.shape)[0]) : 16;
    return weight_bytes * static_cast<double>(std::max<int64_t>(steps, 1)) + 4 * work;
  }
  return weight_bytes + 4 * work;
}

namespace {

// Which block a node belongs to: its recurrent node's (for the node itself and for the layout ops
// graph_opt marked as views of it), its fusion group's, or its own.
std::string block_key(const Node& node, size_t position) {
  if (is_recurrent(node)) return "recurrent:" + node.name();
  if (const Attribute* a = node.find_attr(kLayoutOfAnnotation)) {
    if (a->kind == Attribute::Kind::kString) {
      return "recurrent:" + a->s.substr(0, a->s.rfind('.'));
    }
  }
  if (const Attribute* a = node.find_attr(kFusionGroupAnnotation)) {
    if (a->kind == Attribute::Kind::kInt) return cat("fusion:", a->i);
  }
  return cat("node:", position);
}

// Orders blocks so each runs after the blocks producing what it reads (stable: ties keep the
// order of first appearance).
std::vector<BlockSpec> order_blocks(std::vector<BlockSpec> blocks) {
  std::map<const Node*, size_t> block_of;
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (const Node* node : blocks[i].nodes) block_of[node] = i;
  }
  std::vector<std::set<size_t>> depends(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (const Node* node : blocks[i].nodes) {
      std::vector<const Value*> reads(node->inputs().begin(), node->inputs().end());
      for (const Graph* sub : node->subgraphs()) {
        for (const Value* v : captured_values(*sub)) reads.push_back(v);
      }
      for (const Value* v : reads) {
        if (!v || !v->producer()) continue;
        auto it = block_of.find(v->producer());
        if (it != block_of.end() && it->second != i) depends[i].insert(it->second);
      }
    }
  }
  std::vector<BlockSpec> ordered;
  std::vector<bool> done(blocks.size(), false);
  while (ordered.size() < blocks.size()) {
    bool progressed = false;
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (done[i]) continue;
      bool ready = true;
      for (size_t d : depends[i]) ready = ready && done[d];
      if (!ready) continue;
      done[i] = true;
      ordered.push_back(std::move(blocks[i]));
      progressed = true;
      break;
    }
    RNNC_CHECK(progressed, "execution blocks depend on each other in a cycle");
  }
  return ordered;
}

}  // namespace

std::vector<BlockSpec> partition_graph(const Graph& graph) {
  std::vector<BlockSpec> blocks;
  std::map<std::string, size_t> by_key;
  size_t position = 0;
  for (const auto& node_ptr : graph.nodes()) {
    const Node& node = *node_ptr;
    std::string key = block_key(node, position++);
    auto [it, inserted] = by_key.emplace(key, blocks.size());
    if (inserted) blocks.emplace_back();
    BlockSpec& block = blocks[it->second];
    block.nodes.push_back(&node);
    block.cost += estimate_node_cost(node);
    block.recurrent = block.recurrent || is_recurrent(node);
  }
  blocks = order_blocks(std::move(blocks));
  std::map<const Node*, size_t> block_of;
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (const Node* node : blocks[i].nodes) block_of[node] = i;
  }
  // Plans, decided together: a recurrent block whose sequence input comes (possibly through
  // layout-only nodes) from a recurrent block of the same direction pipelines with it.
  for (BlockSpec& block : blocks) {
    block.plan = ExecutionPlan{AxisPlan::kParallel, AxisPlan::kParallel};
    if (!block.recurrent) continue;
    block.plan.sequence = AxisPlan::kSequential;
    const Node& node = **std::find_if(block.nodes.begin(), block.nodes.end(),
                                      [](const Node* n) { return is_recurrent(*n); });
    std::set<const Node*> seen;
    const Value* x = node.input(0);
    while (x && x->producer() && !seen.count(x->producer())) {
      const Node* producer = x->producer();
      seen.insert(producer);
      if (is_recurrent(*producer)) {
        if (direction_of(*producer) == direction_of(node) && direction_of(node) != "bidirectional") {
          block.plan.sequence = AxisPlan::kPipeline;
          blocks[block_of[producer]].plan.sequence = AxisPlan::kPipeline;
        }
        break;
      }
      // Only layout-only nodes keep the step-by-step correspondence.
      const std::string& op = producer->op_type();
      if (op != "Squeeze" && op != "Unsqueeze" && op != "Reshape" && op != "Transpose" &&
          op != "Identity") {
        break;
      }
      x = producer->input(0);
    }
  }
  return blocks;
}

const char* axis_plan_name(AxisPlan plan) {
  switch (plan) {
    case AxisPlan::kSequential: return "sequential";
    case AxisPlan::kParallel: return "parallel";
    case AxisPlan::kPipeline: return "pipeline";
  }
  return "?";
}

}  // namespace rnnc
