#include "lowering/reference_block.h"

#include <map>

#include "ir/reference/evaluator.h"

namespace rnnc {

namespace {

class ReferenceBlock : public ExecutionBlock {
 public:
  std::string kind() const override {
    std::string ops;
    for (const Node* node : nodes) ops += (ops.empty() ? "" : "+") + node->op_type();
    return "reference " + ops;
  }

  void run(BlockIO& io) const override {
    std::map<const Value*, Tensor> local;
    ValueLookup lookup = [&](const Value* value) -> const Tensor* {
      if (auto it = local.find(value); it != local.end()) return &it->second;
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i] == value) return io.inputs[i];
      }
      if (value->is_constant()) return value->constant().get();
      return nullptr;
    };
    for (const Node* node : nodes) {
      std::vector<const Tensor*> node_inputs;
      for (const Value* input : node->inputs()) node_inputs.push_back(input ? lookup(input) : nullptr);
      std::vector<Tensor> results = evaluate_node(*node, node_inputs, lookup);
      for (size_t i = 0; i < node->num_outputs(); ++i) {
        if (const Value* out = node->output(i)) local[out] = std::move(results[i]);
      }
    }
    io.outputs.clear();
    for (const Value* out : outputs) io.outputs.push_back(local.at(out));
  }
};

}  // namespace

std::unique_ptr<ExecutionBlock> make_reference_block(const BlockSpec& spec) {
  auto block = std::make_unique<ReferenceBlock>();
  block->nodes = spec.nodes;
  block->plan = spec.plan;
  block->cost = spec.cost;
  return block;
}

}  // namespace rnnc
