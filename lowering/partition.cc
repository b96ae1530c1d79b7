#include "lowering/partition.h"

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

std::vector<BlockSpec> partition_graph(const Graph& graph) {
  std::vector<BlockSpec> blocks;
  std::map<int64_t, size_t> group_block;  // fusion group -> block index
  std::map<const Node*, size_t> block_of;
  for (const auto& node_ptr : graph.nodes()) {
    const Node& node = *node_ptr;
    int64_t group = -1;
    if (const Attribute* a = node.find_attr(std::string(kAnnotationPrefix) + "fusion_group")) {
      if (a->kind == Attribute::Kind::kInt) group = a->i;
    }
    size_t index;
    if (group >= 0 && group_block.count(group)) {
      index = group_block[group];
    } else {
      index = blocks.size();
      blocks.emplace_back();
      if (group >= 0) group_block[group] = index;
    }
    BlockSpec& block = blocks[index];
    block.nodes.push_back(&node);
    block.cost += estimate_node_cost(node);
    block.recurrent = block.recurrent || is_recurrent(node);
    block_of[&node] = index;
  }
  // Plans, decided together: a recurrent block whose sequence input comes (possibly through
  // layout-only nodes) from a recurrent block of the same direction pipelines with it.
  for (BlockSpec& block : blocks) {
    block.plan = ExecutionPlan{AxisPlan::kParallel, AxisPlan::kParallel};
    if (!block.recurrent) continue;
    block.plan.sequence = AxisPlan::kSequential;
    const Node& node = *block.nodes.front();
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
