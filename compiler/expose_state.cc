#include "compiler/expose_state.h"

#include <algorithm>
#include <set>

namespace rnnc {

namespace {

constexpr size_t kX = 0, kInitialH = 5, kInitialC = 6;

std::string unused_name(const Graph& graph, const std::string& wanted) {
  std::string name = wanted;
  for (int suffix = 1; graph.find_value(name); ++suffix) name = cat(wanted, "_", suffix);
  return name;
}

// True when `value`'s data (not just its shape) depends on a graph input: such an initial state
// is the model's own streaming state (Silero's `state`), which the model already carries.
bool depends_on_input_data(const Value* value, std::set<const Value*>& seen) {
  if (!value || !seen.insert(value).second) return false;
  if (value->is_graph_input()) return !value->is_constant();
  const Node* producer = value->producer();
  if (!producer || producer->op_type() == "Shape" || producer->op_type() == "Size") return false;
  for (const Value* input : producer->inputs()) {
    if (depends_on_input_data(input, seen)) return true;
  }
  for (const Graph* sub : producer->subgraphs()) {
    for (const Value* captured : captured_values(*sub)) {
      if (depends_on_input_data(captured, seen)) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> expose_recurrent_state(Model& model) {
  Graph& graph = *model.graph;
  std::vector<std::pair<std::string, std::string>> pairs;
  int index = 0;
  std::vector<Node*> recurrent;
  for (const auto& node : graph.nodes()) {
    const std::string& op = node->op_type();
    if (node->domain().empty() && (op == "LSTM" || op == "GRU" || op == "RNN")) {
      recurrent.push_back(node.get());
    }
  }
  for (Node* node : recurrent) {
    const std::string base = node->name().empty() ? cat(node->op_type(), index) : node->name();
    ++index;
    if (node->attr_string("direction", "forward") != "forward") continue;
    const int64_t hidden = node->attr_int("hidden_size", 0);
    const int64_t layout = node->attr_int("layout", 0);
    const Value* x = node->input(kX);
    if (hidden <= 0 || !x || x->type.rank() != 3) continue;  // import or lowering reports these
    const Dim batch = (*x->type.shape)[layout == 0 ? 1 : 0];
    TensorType state_type;
    state_type.dtype = x->type.dtype;
    state_type.shape = layout == 0 ? Shape{Dim(1), batch, Dim(hidden)} : Shape{batch, Dim(1), Dim(hidden)};

    const bool lstm = node->op_type() == "LSTM";
    bool own_state = false;
    for (size_t slot : {kInitialH, kInitialC}) {
      std::set<const Value*> seen;
      const Value* initial = node->input(slot);
      own_state = own_state || (initial && !initial->is_graph_input() &&
                                depends_on_input_data(initial, seen));
    }
    if (own_state) continue;
    for (size_t slot : {kInitialH, kInitialC}) {
      if (slot == kInitialC && !lstm) continue;
      const size_t out_slot = slot == kInitialH ? 1 : 2;
      const char* in_suffix = slot == kInitialH ? ".initial_h" : ".initial_c";
      const char* out_suffix = slot == kInitialH ? ".Y_h" : ".Y_c";
      Value* input = node->input(slot);
      if (!input || !input->is_graph_input()) {
        input = graph.add_input(unused_name(graph, base + in_suffix), state_type);
        node->grow_inputs(slot + 1);
        node->set_input(slot, input);
      }
      Value* output = node->output(out_slot);
      if (!output) output = graph.add_node_output(node, out_slot, unused_name(graph, base + out_suffix), state_type);
      const auto& outs = graph.outputs();
      if (std::find(outs.begin(), outs.end(), output) == outs.end()) graph.add_output(output);
      pairs.emplace_back(output->name(), input->name());
    }
  }
  return pairs;
}

}  // namespace rnnc
