#include "ir/reference/evaluator.h"

#include <unordered_map>

#include "ir/reference/kernel.h"

namespace rnnc {

namespace {

const std::map<std::string, Kernel>& kernels() {
  static const std::map<std::string, Kernel> table = [] {
    std::map<std::string, Kernel> registry;
    register_elementwise_kernels(registry);
    register_recurrent_kernels(registry);
    register_nn_kernels(registry);
    register_tensor_kernels(registry);
    register_control_flow_kernels(registry);
    register_quant_kernels(registry);
    register_resize_kernels(registry);
    register_signal_kernels(registry);
    register_sequence_kernels(registry);
    return registry;
  }();
  return table;
}

// Values computed so far in one graph activation; lookups fall back to the enclosing scope.
struct Scope {
  const Scope* parent = nullptr;
  const ValueLookup* outer = nullptr;  // beyond the outermost scope (evaluate_node)
  std::unordered_map<const Value*, Tensor> values;

  const Tensor* find(const Value* value) const {
    const Scope* s = this;
    for (; s; s = s->parent) {
      auto it = s->values.find(value);
      if (it != s->values.end()) return &it->second;
      if (!s->parent && s->outer) return (*s->outer)(value);
    }
    return nullptr;
  }
};

// Whether `value` is of `kind`: a present optional is its tensor or sequence, an empty one none.
bool holds_kind(const Tensor& value, ValueKind kind) {
  switch (kind) {
    case ValueKind::kTensor: return value.is_tensor();
    case ValueKind::kSequence: return value.is_sequence();
    case ValueKind::kOptionalTensor: return value.is_tensor() || value.is_none();
    case ValueKind::kOptionalSequence: return value.is_sequence() || value.is_none();
  }
  return false;
}

const char* holds_name(const Tensor& value) {
  return value.is_sequence() ? "a sequence" : value.is_none() ? "an empty optional" : "a tensor";
}

void check_rank(const Value& input, const Tensor& tensor, const std::string& what) {
  if (input.type.shape && static_cast<int64_t>(input.type.shape->size()) != tensor.rank()) {
    raise_invalid_input(cat(what, ": expected rank ", input.type.shape->size(), " ",
                            shape_to_string(*input.type.shape), ", got rank ", tensor.rank()));
  }
}

// A graph input's kind, element type and rank (each element's, for a sequence).
void check_kind_dtype_and_rank(const Value& input, const Tensor& value) {
  std::string what = cat("input '", input.name(), "'");
  if (!holds_kind(value, input.type.kind)) {
    raise_invalid_input(cat(what, ": expected ", input.type.to_string(), ", got ",
                            holds_name(value)));
  }
  if (input.type.dtype != value.dtype()) {
    raise_invalid_input(cat(what, ": expected element type ", dtype_onnx_name(input.type.dtype),
                            ", got ", dtype_onnx_name(value.dtype())));
  }
  if (value.is_tensor()) {
    check_rank(input, value, what);
  } else if (value.is_sequence()) {
    for (size_t i = 0; i < value.elements().size(); ++i) {
      check_rank(input, value.elements()[i], cat(what, " element ", i));
    }
  }
}

std::vector<Tensor> run_graph(const Graph& graph, std::vector<Tensor> graph_inputs,
                              const Scope* parent, const NodeObserver& observer);

// Runs one node's kernel; nested graphs run in `scope` (their outer-scope references resolve
// there). Checks the kernel produced every output with its inferred dtype.
std::vector<Tensor> run_node(const Node& node, std::vector<const Tensor*> inputs,
                             const Scope& scope, const NodeObserver& observer) {
  auto it = kernels().find(node.domain().empty() ? node.op_type() : "");
  if (it == kernels().end()) {
    raise_unsupported(cat(node.describe(), ": no reference kernel for this operator"));
  }
  KernelContext context{node, std::move(inputs), {}, {}};
  context.run_subgraph = [&](const Graph& body, const std::vector<Tensor>& body_inputs) {
    return run_graph(body, body_inputs, &scope, observer);
  };
  context.outputs.resize(node.num_outputs());
  it->second(context);
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    const Value* out = node.output(i);
    if (!out) continue;
    RNNC_CHECK(context.outputs[i].defined(), node.describe(), " did not produce output ", i);
    RNNC_CHECK(holds_kind(context.outputs[i], out->type.kind), node.describe(), " output ", i,
               " is ", holds_name(context.outputs[i]), " but inferred as ", out->type.to_string());
    if (out->type.dtype != DType::kUndefined) {
      RNNC_CHECK(out->type.dtype == context.outputs[i].dtype(), node.describe(), " output ", i,
                 " is ", dtype_name(context.outputs[i].dtype()), " but inferred as ",
                 dtype_name(out->type.dtype));
    }
  }
  return std::move(context.outputs);
}

std::vector<Tensor> run_graph(const Graph& graph, std::vector<Tensor> graph_inputs,
                              const Scope* parent, const NodeObserver& observer) {
  Scope scope;
  scope.parent = parent;
  RNNC_CHECK(graph_inputs.size() <= graph.inputs().size(), "too many inputs for graph ",
             graph.name());
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value* input = graph.inputs()[i];
    if (i < graph_inputs.size() && graph_inputs[i].defined()) {
      scope.values[input] = std::move(graph_inputs[i]);
    } else if (input->is_constant()) {
      scope.values[input] = *input->constant();
    } else {
      raise_invalid_input(cat("graph '", graph.name(), "': input '", input->name(),
                              "' is missing"));
    }
  }
  for (const Value* value : graph.initializers()) scope.values[value] = *value->constant();

  // Each node output is dropped once the last node that reads it (directly, or from inside one of
  // its subgraphs) has run, unless the graph returns it: a graph of large intermediates (a
  // quantized model's dequantized weights) holds only those still to be read.
  std::unordered_map<const Value*, size_t> last_read;
  {
    size_t index = 0;
    for (const auto& node : graph.nodes()) {
      for (const Value* input : node->inputs()) {
        if (input) last_read[input] = index;
      }
      for (const Graph* subgraph : node->subgraphs()) {
        for (const Value* captured : captured_values(*subgraph)) last_read[captured] = index;
      }
      ++index;
    }
    for (const Value* output : graph.outputs()) last_read.erase(output);
  }
  std::vector<std::vector<const Value*>> drop_after(graph.nodes().size());
  for (const auto& [value, index] : last_read) {
    if (value->producer() && value->owner() == &graph) drop_after[index].push_back(value);
  }

  size_t index = 0;
  for (const auto& node_ptr : graph.nodes()) {
    const Node& node = *node_ptr;
    std::vector<const Tensor*> inputs;
    for (const Value* input : node.inputs()) {
      const Tensor* tensor = input ? scope.find(input) : nullptr;
      RNNC_CHECK(!input || tensor, node.describe(), " reads '", input->name(),
                 "' before it is computed");
      inputs.push_back(tensor);
    }
    std::vector<Tensor> outputs = run_node(node, std::move(inputs), scope, observer);
    if (observer) observer(node, outputs);
    for (size_t i = 0; i < node.num_outputs(); ++i) {
      if (const Value* out = node.output(i)) scope.values[out] = std::move(outputs[i]);
    }
    for (const Value* value : drop_after[index++]) scope.values.erase(value);
  }

  std::vector<Tensor> outputs;
  for (const Value* out : graph.outputs()) {
    const Tensor* tensor = scope.find(out);
    RNNC_CHECK(tensor, "graph output '", out->name(), "' was not computed");
    outputs.push_back(*tensor);
  }
  return outputs;
}

}  // namespace

std::vector<Tensor> evaluate_node(const Node& node, const std::vector<const Tensor*>& inputs,
                                  const ValueLookup& outer) {
  Scope scope;
  scope.outer = &outer;
  return run_node(node, inputs, scope, nullptr);
}

Kernel find_kernel(const std::string& op_type) {
  auto it = kernels().find(op_type);
  return it == kernels().end() ? nullptr : it->second;
}

std::vector<std::string> kernel_op_types() {
  std::vector<std::string> names;
  for (const auto& [name, kernel] : kernels()) names.push_back(name);
  return names;
}

void check_tensor_interface(const Graph& graph) {
  auto check = [](const Value* value, const char* role) {
    if (value->type.is_tensor()) return;
    raise_unsupported(cat("graph ", role, " '", value->name(), "' is ", value->type.to_string(),
                          ": compiled models take and return tensors only (the reference "
                          "evaluator, rnnc run --reference, runs sequence and optional ones)"));
  };
  for (const Value* input : graph.inputs()) check(input, "input");
  for (const Value* output : graph.outputs()) check(output, "output");
}

std::map<std::string, int64_t> bind_inputs(const Graph& graph,
                                           const std::map<std::string, Tensor>& inputs) {
  for (const auto& [name, tensor] : inputs) {
    bool known = false;
    for (const Value* input : graph.inputs()) known = known || input->name() == name;
    if (!known) {
      std::string names;
      for (const Value* input : graph.inputs()) {
        if (!input->is_constant()) names += (names.empty() ? "'" : ", '") + input->name() + "'";
      }
      raise_invalid_input(cat("'", name, "' is not an input of the model (inputs: ", names, ")"));
    }
  }
  std::map<std::string, int64_t> bindings;
  std::map<std::string, std::string> bound_by;
  for (const Value* input : graph.inputs()) {
    auto it = inputs.find(input->name());
    if (it == inputs.end()) {
      if (input->is_constant()) continue;
      raise_invalid_input(cat("input '", input->name(), "' (", input->type.to_string(),
                              ") is missing"));
    }
    const Tensor& tensor = it->second;
    check_kind_dtype_and_rank(*input, tensor);
    if (!input->type.shape || !tensor.is_tensor()) continue;
    const Shape& shape = *input->type.shape;
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      const Dim& dim = shape[axis];
      int64_t actual = tensor.shape()[axis];
      if (dim.is_known() && dim.value() != actual) {
        raise_invalid_input(cat("input '", input->name(), "': dim ", axis, " is ", actual,
                                ", expected ", dim.value(), " (shape ", shape_to_string(shape),
                                ")"));
      }
      std::vector<std::string> symbols = dim.symbols();
      if (symbols.size() == 1 && dim == Dim::symbol(symbols[0])) {
        auto [slot, inserted] = bindings.emplace(symbols[0], actual);
        if (inserted) {
          bound_by[symbols[0]] = cat("input '", input->name(), "' dim ", axis);
        } else if (slot->second != actual) {
          raise_invalid_input(cat("input '", input->name(), "': dim ", axis, " ('", symbols[0],
                                  "') is ", actual, " but ", bound_by[symbols[0]], " set '",
                                  symbols[0], "' = ", slot->second));
        }
      }
    }
  }
  return bindings;
}

std::vector<Tensor> evaluate(const Graph& graph, const std::map<std::string, Tensor>& inputs,
                             const NodeObserver& observer) {
  bind_inputs(graph, inputs);
  std::vector<Tensor> ordered;
  for (const Value* input : graph.inputs()) {
    auto it = inputs.find(input->name());
    ordered.push_back(it == inputs.end() ? Tensor() : it->second);
  }
  return run_graph(graph, std::move(ordered), nullptr, observer);
}

}  // namespace rnnc
