#include "ir/clone.h"

#include <map>

#include "ir/error.h"

namespace rnnc {

namespace {

using ValueMap = std::map<const Value*, Value*>;

void copy_value_fields(const Value& from, Value& to) {
  to.type = from.type;
  to.symbolic_value = from.symbolic_value;
  if (from.is_constant()) to.set_constant(from.constant());
}

std::unique_ptr<Graph> clone_graph(const Graph& source, Graph* parent, ValueMap& map);

Attribute clone_attribute(const Attribute& attribute, Graph* owner, ValueMap& map) {
  Attribute copy = attribute;  // tensors share storage; graphs are replaced below
  if (attribute.g) copy.g = clone_graph(*attribute.g, owner, map);
  for (size_t i = 0; i < attribute.graphs.size(); ++i) {
    copy.graphs[i] = clone_graph(*attribute.graphs[i], owner, map);
  }
  return copy;
}

// Values are created in the source's order: inputs, constants and values without a producer
// first as they come, node outputs with their nodes. Inputs are wired after every node exists
// (a graph's node list need not be topologically sorted); a node's inputs from enclosing graphs
// (captured values) are found in `map`, which holds the enclosing graphs' values too.
std::unique_ptr<Graph> clone_graph(const Graph& source, Graph* parent, ValueMap& map) {
  auto graph = std::make_unique<Graph>(source.name(), parent);
  for (const Value* input : source.inputs()) {
    map[input] = graph->add_input(input->name(), input->type);
  }
  for (const auto& value : source.values()) {
    if (value->producer() || value->is_graph_input()) continue;
    map[value.get()] = graph->add_value(value->name());
  }
  for (const auto& value : source.values()) {
    if (!value->producer()) copy_value_fields(*value, *map.at(value.get()));
  }
  std::vector<std::pair<const Node*, Node*>> nodes;
  for (const auto& node : source.nodes()) {
    std::vector<std::string> output_names;
    for (const Value* output : node->outputs())
      output_names.push_back(output ? output->name() : "");
    Node* copy = graph->add_node(node->op_type(), node->name(), {}, output_names, node->opset(),
                                 node->domain());
    for (size_t i = 0; i < node->num_outputs(); ++i) {
      if (const Value* output = node->output(i)) {
        map[output] = copy->output(i);
        copy_value_fields(*output, *copy->output(i));
      }
    }
    nodes.emplace_back(node.get(), copy);
  }
  for (auto& [node, copy] : nodes) {
    copy->grow_inputs(node->num_inputs());
    for (size_t i = 0; i < node->num_inputs(); ++i) {
      const Value* input = node->input(i);
      if (!input) continue;
      auto found = map.find(input);
      RNNC_CHECK(found != map.end(), "clone_model: input '", input->name(), "' of node '",
                 node->name(), "' is not a value of the graph or an enclosing one");
      copy->set_input(i, found->second);
    }
    for (const auto& [name, attribute] : node->attributes()) {
      copy->set_attr(name, clone_attribute(attribute, graph.get(), map));
    }
  }
  std::vector<Value*> outputs;
  for (const Value* output : source.outputs()) outputs.push_back(map.at(output));
  graph->set_outputs(std::move(outputs));
  return graph;
}

}  // namespace

std::unique_ptr<Model> clone_model(const Model& model) {
  auto copy = std::make_unique<Model>();
  copy->ir_version = model.ir_version;
  copy->opsets = model.opsets;
  copy->producer_name = model.producer_name;
  copy->producer_version = model.producer_version;
  copy->doc_string = model.doc_string;
  copy->metadata = model.metadata;
  ValueMap map;
  copy->graph = clone_graph(*model.graph, nullptr, map);
  return copy;
}

}  // namespace rnnc
