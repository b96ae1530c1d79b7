#include "ir/graph.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "ir/error.h"

namespace rnnc {

std::string QuantParams::to_string() const {
  std::ostringstream out;
  out << (is_signed ? "s" : "u") << bits << (symmetric ? " sym" : " asym");
  if (granularity == Granularity::kAxis) out << " axis=" << axis;
  if (dynamic) out << " dynamic";
  return out.str();
}

std::string TensorType::to_string() const {
  std::string out = dtype_name(dtype);
  out += shape ? shape_to_string(*shape) : "[?rank]";
  if (quant) out += " quant=<" + quant->to_string() + ">";
  switch (kind) {
    case ValueKind::kTensor: return out;
    case ValueKind::kSequence: return "seq<" + out + ">";
    case ValueKind::kOptionalTensor: return "opt<" + out + ">";
    case ValueKind::kOptionalSequence: return "opt<seq<" + out + ">>";
  }
  return out;
}

Attribute Attribute::of_int(int64_t value) {
  Attribute attribute;
  attribute.kind = Kind::kInt;
  attribute.i = value;
  return attribute;
}

Attribute Attribute::of_float(float value) {
  Attribute attribute;
  attribute.kind = Kind::kFloat;
  attribute.f = value;
  return attribute;
}

Attribute Attribute::of_string(std::string value) {
  Attribute attribute;
  attribute.kind = Kind::kString;
  attribute.s = std::move(value);
  return attribute;
}

Attribute Attribute::of_graph(std::shared_ptr<Graph> graph) {
  Attribute attribute;
  attribute.kind = Kind::kGraph;
  attribute.g = std::move(graph);
  return attribute;
}

Attribute Attribute::of_type(TensorType type) {
  Attribute attribute;
  attribute.kind = Kind::kType;
  attribute.tp = std::move(type);
  return attribute;
}

Attribute Attribute::of_ints(std::vector<int64_t> values) {
  Attribute attribute;
  attribute.kind = Kind::kInts;
  attribute.ints = std::move(values);
  return attribute;
}

Attribute Attribute::of_floats(std::vector<float> values) {
  Attribute attribute;
  attribute.kind = Kind::kFloats;
  attribute.floats = std::move(values);
  return attribute;
}

Attribute Attribute::of_strings(std::vector<std::string> values) {
  Attribute attribute;
  attribute.kind = Kind::kStrings;
  attribute.strings = std::move(values);
  return attribute;
}

const char* Attribute::kind_name(Kind kind) {
  switch (kind) {
    case Kind::kFloat: return "FLOAT";
    case Kind::kInt: return "INT";
    case Kind::kString: return "STRING";
    case Kind::kTensor: return "TENSOR";
    case Kind::kGraph: return "GRAPH";
    case Kind::kFloats: return "FLOATS";
    case Kind::kInts: return "INTS";
    case Kind::kStrings: return "STRINGS";
    case Kind::kTensors: return "TENSORS";
    case Kind::kGraphs: return "GRAPHS";
    case Kind::kType: return "TYPE_PROTO";
  }
  return "?";
}

// ---- Node -----------------------------------------------------------------------------------

void Node::set_input(size_t i, Value* value) {
  RNNC_CHECK(i < inputs_.size(), "input index ", i, " out of range for ", describe());
  if (Value* old = inputs_[i]) {
    auto& uses = old->uses_;
    for (auto it = uses.begin(); it != uses.end(); ++it) {
      if (it->node == this && it->input_index == static_cast<int>(i)) {
        uses.erase(it);
        break;
      }
    }
  }
  inputs_[i] = value;
  if (value) value->uses_.push_back({this, static_cast<int>(i)});
}

const Attribute* Node::find_attr(const std::string& name) const {
  auto it = attributes_.find(name);
  return it == attributes_.end() ? nullptr : &it->second;
}

void Node::set_attr(const std::string& name, Attribute attribute) {
  attributes_[name] = std::move(attribute);
}

const Attribute& Node::typed_attr(const std::string& name, Attribute::Kind kind) const {
  const Attribute& attribute = attributes_.at(name);
  if (attribute.kind != kind) {
    raise_invalid_model(cat(describe(), ": attribute '", name, "' has type ",
                            Attribute::kind_name(attribute.kind), ", expected ",
                            Attribute::kind_name(kind)));
  }
  return attribute;
}

int64_t Node::attr_int(const std::string& name, int64_t fallback) const {
  return has_attr(name) ? typed_attr(name, Attribute::Kind::kInt).i : fallback;
}

float Node::attr_float(const std::string& name, float fallback) const {
  return has_attr(name) ? typed_attr(name, Attribute::Kind::kFloat).f : fallback;
}

std::string Node::attr_string(const std::string& name, const std::string& fallback) const {
  return has_attr(name) ? typed_attr(name, Attribute::Kind::kString).s : fallback;
}

std::vector<int64_t> Node::attr_ints(const std::string& name, std::vector<int64_t> fallback) const {
  return has_attr(name) ? typed_attr(name, Attribute::Kind::kInts).ints : fallback;
}

std::vector<float> Node::attr_floats(const std::string& name, std::vector<float> fallback) const {
  return has_attr(name) ? typed_attr(name, Attribute::Kind::kFloats).floats : fallback;
}

std::vector<std::string> Node::attr_strings(const std::string& name,
                                            std::vector<std::string> fallback) const {
  return has_attr(name) ? typed_attr(name, Attribute::Kind::kStrings).strings : fallback;
}

const Tensor* Node::attr_tensor(const std::string& name) const {
  return has_attr(name) ? &typed_attr(name, Attribute::Kind::kTensor).t : nullptr;
}

Graph* Node::attr_graph(const std::string& name) const {
  return has_attr(name) ? typed_attr(name, Attribute::Kind::kGraph).g.get() : nullptr;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> graphs;
  for (const auto& [name, attribute] : attributes_) {
    if (attribute.kind == Attribute::Kind::kGraph) graphs.push_back(attribute.g.get());
    if (attribute.kind == Attribute::Kind::kGraphs) {
      for (const auto& g : attribute.graphs) graphs.push_back(g.get());
    }
  }
  return graphs;
}

std::string Node::describe() const {
  std::string out = op_type_;
  if (!domain_.empty() && domain_ != "ai.onnx") out = domain_ + "." + out;
  out += " '" + name_ + "'";
  if (opset_ > 0) out += cat(" (opset ", opset_, ")");
  return out;
}

// ---- Graph ----------------------------------------------------------------------------------

std::vector<Value*> Graph::initializers() const {
  std::vector<Value*> out;
  for (const auto& value : values_) {
    if (value->is_constant() && !value->producer() && !value->is_graph_input()) {
      out.push_back(value.get());
    }
  }
  return out;
}

Value* Graph::add_value(const std::string& name, TensorType type) {
  if (name.empty()) raise_invalid_model(cat("graph '", name_, "': a value has an empty name"));
  if (by_name_.count(name)) {
    raise_invalid_model(cat("graph '", name_, "': value name '", name, "' is defined twice"));
  }
  auto value = std::make_unique<Value>();
  value->name_ = name;
  value->owner_ = this;
  value->type = std::move(type);
  Value* raw = value.get();
  by_name_[name] = raw;
  values_.push_back(std::move(value));
  return raw;
}

Value* Graph::add_input(const std::string& name, TensorType type) {
  Value* value = add_value(name, std::move(type));
  value->is_graph_input_ = true;
  inputs_.push_back(value);
  return value;
}

Value* Graph::add_initializer(const std::string& name, Tensor data) {
  TensorType type;
  type.dtype = data.dtype();
  type.shape = shape_from_values(data.shape());
  Value* value = add_value(name, type);
  value->constant_ = std::make_shared<const Tensor>(std::move(data));
  return value;
}

void Graph::add_output(Value* value) { outputs_.push_back(value); }

Node* Graph::add_node(const std::string& op_type, const std::string& name,
                      const std::vector<Value*>& inputs,
                      const std::vector<std::string>& output_names, int opset,
                      const std::string& domain) {
  auto node = std::make_unique<Node>();
  node->op_type_ = op_type;
  node->domain_ = domain;
  node->name_ = name;
  node->opset_ = opset;
  node->owner_ = this;
  node->inputs_.resize(inputs.size(), nullptr);
  Node* raw = node.get();
  for (size_t i = 0; i < inputs.size(); ++i) raw->set_input(i, inputs[i]);
  for (size_t i = 0; i < output_names.size(); ++i) {
    if (output_names[i].empty()) {
      raw->outputs_.push_back(nullptr);
      continue;
    }
    Value* out = add_value(output_names[i]);
    out->producer_ = raw;
    out->producer_output_ = static_cast<int>(i);
    raw->outputs_.push_back(out);
  }
  nodes_.push_back(std::move(node));
  return raw;
}

namespace {

// Drops the use records of every node in a nested graph, so outer values do not keep uses by
// nodes about to be destroyed.
void release_uses(Graph& graph) {
  for (const auto& inner : graph.nodes()) {
    for (size_t i = 0; i < inner->num_inputs(); ++i) inner->set_input(i, nullptr);
    for (Graph* sub : inner->subgraphs()) release_uses(*sub);
  }
}

}  // namespace

void Graph::remove_node(Node* node) {
  for (Value* out : node->outputs_) {
    RNNC_CHECK(!out || out->uses_.empty(), "removing ", node->describe(), " whose output '",
               out->name(), "' is still used");
  }
  for (size_t i = 0; i < node->inputs_.size(); ++i) node->set_input(i, nullptr);
  for (Graph* sub : node->subgraphs()) release_uses(*sub);
  for (Value* out : node->outputs_) {
    if (!out) continue;
    out->producer_ = nullptr;
    by_name_.erase(out->name_);
    values_.erase(std::find_if(values_.begin(), values_.end(),
                               [&](const auto& v) { return v.get() == out; }));
  }
  nodes_.remove_if([&](const auto& n) { return n.get() == node; });
}

void Graph::remove_initializer(Value* value) {
  RNNC_CHECK(value->owner_ == this && !value->producer_ && value->uses_.empty() &&
                 !value->is_graph_input_,
             "'", value->name(), "' is not an unused initializer of graph '", name_, "'");
  by_name_.erase(value->name_);
  values_.erase(std::find_if(values_.begin(), values_.end(),
                             [&](const auto& v) { return v.get() == value; }));
}

void Graph::remove_node_output(Node* node, size_t i) {
  Value* out = node->output(i);
  RNNC_CHECK(node->owner_ == this && out && out->uses_.empty(), "output ", i, " of ",
             node->describe(), " is missing or still used");
  RNNC_CHECK(std::find(outputs_.begin(), outputs_.end(), out) == outputs_.end(), "output '",
             out->name(), "' is a graph output");
  node->outputs_[i] = nullptr;
  while (!node->outputs_.empty() && node->outputs_.back() == nullptr) node->outputs_.pop_back();
  by_name_.erase(out->name_);
  values_.erase(std::find_if(values_.begin(), values_.end(),
                             [&](const auto& v) { return v.get() == out; }));
}

Value* Graph::add_node_output(Node* node, size_t i, const std::string& name, TensorType type) {
  RNNC_CHECK(node->owner_ == this && !node->output(i), "output ", i, " of ", node->describe(),
             " already exists");
  Value* out = add_value(name, std::move(type));
  out->producer_ = node;
  out->producer_output_ = static_cast<int>(i);
  if (node->outputs_.size() <= i) node->outputs_.resize(i + 1, nullptr);
  node->outputs_[i] = out;
  return out;
}

void Graph::convert_input_to_constant(Value* input, Tensor data) {
  auto it = std::find(inputs_.begin(), inputs_.end(), input);
  RNNC_CHECK(it != inputs_.end(), "'", input->name(), "' is not an input of graph '", name_, "'");
  inputs_.erase(it);
  input->is_graph_input_ = false;
  input->type.dtype = data.dtype();
  input->type.shape = shape_from_values(data.shape());
  input->constant_ = std::make_shared<const Tensor>(std::move(data));
}

namespace {

std::unique_ptr<Value> take_value(std::vector<std::unique_ptr<Value>>& values, Value* value) {
  auto it = std::find_if(values.begin(), values.end(), [&](const auto& v) { return v.get() == value; });
  RNNC_CHECK(it != values.end(), "value '", value->name(), "' is not owned by the graph");
  std::unique_ptr<Value> owned = std::move(*it);
  values.erase(it);
  return owned;
}

}  // namespace

Value* Graph::adopt_initializer(Graph& from, Value* value) {
  RNNC_CHECK(value->owner_ == &from && !value->producer_, "'", value->name(),
             "' is not an initializer of graph '", from.name_, "'");
  from.by_name_.erase(value->name_);
  std::unique_ptr<Value> owned = take_value(from.values_, value);
  if (find_value(owned->name_)) owned->name_ = unique_name(owned->name_);
  owned->owner_ = this;
  by_name_[owned->name_] = owned.get();
  values_.push_back(std::move(owned));
  return value;
}

Node* Graph::adopt_node(Graph& from, Node* node, Node* before) {
  RNNC_CHECK(node->owner_ == &from, node->describe(), " is not in graph '", from.name_, "'");
  auto it = std::find_if(from.nodes_.begin(), from.nodes_.end(),
                         [&](const auto& n) { return n.get() == node; });
  std::unique_ptr<Node> owned = std::move(*it);
  from.nodes_.erase(it);
  for (Value* out : node->outputs_) {
    if (!out) continue;
    from.by_name_.erase(out->name_);
    std::unique_ptr<Value> value = take_value(from.values_, out);
    if (find_value(value->name_)) value->name_ = unique_name(value->name_);
    value->owner_ = this;
    by_name_[value->name_] = value.get();
    values_.push_back(std::move(value));
  }
  node->owner_ = this;
  for (Graph* sub : node->subgraphs()) sub->parent_ = this;
  auto position = std::find_if(nodes_.begin(), nodes_.end(),
                               [&](const auto& n) { return n.get() == before; });
  nodes_.insert(position, std::move(owned));
  return node;
}

namespace {

// Nested graphs may return an outer value directly (no use record): redirect those returns.
void replace_nested_returns(Graph& graph, Value* from, Value* to) {
  for (const auto& node : graph.nodes()) {
    for (Graph* sub : node->subgraphs()) {
      std::vector<Value*> outputs = sub->outputs();
      bool changed = false;
      for (Value*& out : outputs) {
        if (out == from) {
          out = to;
          changed = true;
        }
      }
      if (changed) sub->set_outputs(outputs);
      replace_nested_returns(*sub, from, to);
    }
  }
}

}  // namespace

void Graph::replace_all_uses(Value* from, Value* to) {
  std::vector<Use> uses = from->uses_;
  for (const Use& use : uses) use.node->set_input(static_cast<size_t>(use.input_index), to);
  for (Value*& out : outputs_) {
    if (out == from) out = to;
  }
  replace_nested_returns(*this, from, to);
}

void Graph::rename_value(Value* value, const std::string& name) {
  RNNC_CHECK(value->owner_ == this, "'", value->name(), "' is not a value of graph '", name_, "'");
  RNNC_CHECK(!find_value(name), "renaming '", value->name(), "' to '", name, "', which is taken");
  by_name_.erase(value->name_);
  value->name_ = name;
  by_name_[name] = value;
}

Value* Graph::find_local_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::find_value(const std::string& name) const {
  for (const Graph* g = this; g; g = g->parent_) {
    if (Value* v = g->find_local_value(name)) return v;
  }
  return nullptr;
}

std::string Graph::unique_name(const std::string& prefix) {
  while (true) {
    std::string candidate = cat(prefix, "_", name_counter_++);
    if (!find_value(candidate)) return candidate;
  }
}

namespace {

bool defined_within(const Value* value, const Graph* graph) {
  for (const Graph* g = value->owner(); g; g = g->parent()) {
    if (g == graph) return true;
  }
  return false;
}

void collect_captures(const Graph& graph, const Graph& root, std::vector<Value*>& out) {
  for (const auto& node : graph.nodes()) {
    for (Value* input : node->inputs()) {
      if (input && !defined_within(input, &root) &&
          std::find(out.begin(), out.end(), input) == out.end()) {
        out.push_back(input);
      }
    }
    for (Graph* sub : node->subgraphs()) collect_captures(*sub, root, out);
  }
  for (Value* output : graph.outputs()) {
    if (!defined_within(output, &root) && std::find(out.begin(), out.end(), output) == out.end()) {
      out.push_back(output);
    }
  }
}

}  // namespace

std::vector<Value*> captured_values(const Graph& graph) {
  std::vector<Value*> out;
  collect_captures(graph, graph, out);
  return out;
}

void Graph::sort_topologically() {
  // Kahn's algorithm, stable: among ready nodes the earlier one in the current order goes first.
  std::vector<Node*> order;
  std::map<const Node*, size_t> position;
  for (const auto& node : nodes_) {
    position[node.get()] = order.size();
    order.push_back(node.get());
  }
  auto dependencies = [&](const Node* node) {
    std::vector<Node*> producers;
    auto add = [&](const Value* v) {
      if (v && v->producer() && v->producer()->owner() == this) producers.push_back(v->producer());
    };
    for (const Value* v : node->inputs()) add(v);
    for (const Graph* sub : node->subgraphs()) {
      for (const Value* v : captured_values(*sub)) add(v);
    }
    return producers;
  };
  std::vector<size_t> pending(order.size(), 0);
  std::vector<std::vector<size_t>> users(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    for (Node* producer : dependencies(order[i])) {
      ++pending[i];
      users[position[producer]].push_back(i);
    }
  }
  // Ready nodes in a set ordered by original position keeps the result stable.
  std::set<size_t> ready;
  for (size_t i = 0; i < order.size(); ++i) {
    if (pending[i] == 0) ready.insert(i);
  }
  std::vector<size_t> sorted;
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    sorted.push_back(i);
    for (size_t user : users[i]) {
      if (--pending[user] == 0) ready.insert(user);
    }
  }
  if (sorted.size() < order.size()) {
    for (size_t i = 0; i < order.size(); ++i) {
      if (pending[i] != 0) {
        raise_invalid_model(cat(order[i]->describe(),
                                ": is part of a cycle (its inputs depend on its own outputs)"));
      }
    }
  }
  std::list<std::unique_ptr<Node>> reordered;
  std::vector<std::unique_ptr<Node>*> slots;
  for (auto& node : nodes_) slots.push_back(&node);
  for (size_t i : sorted) reordered.push_back(std::move(*slots[i]));
  nodes_ = std::move(reordered);
}

int64_t Model::default_opset() const {
  auto it = opsets.find("");
  if (it != opsets.end()) return it->second;
  it = opsets.find("ai.onnx");
  return it == opsets.end() ? 0 : it->second;
}

}  // namespace rnnc
