// Type and shape inference for If, Loop and Scan (docs/ops/control_flow.md). Their bodies are
// nested graphs whose nodes may use values of the enclosing graph, so the bodies are inferred
// here, after the enclosing graph's types up to this node are known (import runs inference once,
// from the main graph down).
#include <exception>

#include "ir/op_schema.h"

namespace rnnc {

namespace {

Graph& required_graph(const InferenceContext& context, const std::string& name) {
  Graph* graph = context.node().attr_graph(name);
  if (!graph) context.fail(cat("attribute '", name, "' (a graph) is missing"));
  return *graph;
}

// If(cond) -> the outputs of then_branch or else_branch. Only a branch that can run has to type
// under the graph's dims, as only it runs (ONNX Runtime evaluates the taken branch alone):
//   - a constant condition (specialization makes that common: `--fix sr=16000`) types only the
//     taken branch;
//   - otherwise a branch that does not type (Silero VAD v5 squeezes its batch dim in the branch
//     for batch 1, which does not type once the batch is fixed to 2, before the condition on it
//     is folded) leaves the If the other branch's types. A run that takes it fails there, on the
//     values: the If runs on the reference evaluator, which checks every node it runs.
// Both branches failing is the first branch's error.
void infer_if(InferenceContext& context) {
  const TensorType& cond = context.input_type(0);
  if (cond.dtype != DType::kBool) {
    context.fail(cat("input 0 'cond' must be bool, got ", dtype_onnx_name(cond.dtype)));
  }
  Graph& then_branch = required_graph(context, "then_branch");
  Graph& else_branch = required_graph(context, "else_branch");
  const Tensor* constant = context.input_constant(0);
  const int taken = constant && constant->numel() == 1 ? (constant->get_int64(0) ? 0 : 1) : -1;
  bool typed[2] = {false, false};
  std::exception_ptr first_error;
  Graph* branches[2] = {&then_branch, &else_branch};
  for (int b = 0; b < 2; ++b) {
    if (taken >= 0 && taken != b) continue;
    try {
      infer_graph(*branches[b]);
      typed[b] = true;
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::kInvalidModel) throw;
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (!typed[0] && !typed[1]) std::rethrow_exception(first_error);
  size_t outputs = context.node().num_outputs();
  if (then_branch.outputs().size() != outputs || else_branch.outputs().size() != outputs) {
    context.fail(cat("has ", outputs, " outputs but then_branch returns ",
                     then_branch.outputs().size(), " and else_branch ",
                     else_branch.outputs().size()));
  }
  for (size_t i = 0; i < outputs; ++i) {
    const TensorType& then_type = then_branch.outputs()[i]->type;
    const TensorType& else_type = else_branch.outputs()[i]->type;
    if (typed[0] && typed[1] && then_type.dtype != else_type.dtype) {
      context.fail(cat("output ", i, ": then_branch returns ", dtype_onnx_name(then_type.dtype),
                       " but else_branch returns ", dtype_onnx_name(else_type.dtype)));
    }
    if (typed[0] && typed[1]) {
      context.set_output_type(i, join_types(then_type, else_type));
    } else {
      context.set_output_type(i, typed[0] ? then_type : else_type);
    }
  }
}

// Loop(M, cond, v_initial...) -> (v_final..., scan_outputs...). Body inputs are
// (iteration_num, cond_in, v...), body outputs (cond_out, v..., scan...).
void infer_loop(InferenceContext& context) {
  const Node& node = context.node();
  Graph& body = required_graph(context, "body");
  if (node.num_inputs() < 2) {
    context.fail("needs inputs M and cond (either may be empty) before the loop-carried values");
  }
  size_t carried = node.num_inputs() - 2;
  if (body.inputs().size() != carried + 2) {
    context.fail(cat("body has ", body.inputs().size(), " inputs, expected ", carried + 2,
                     " (iteration_num, cond, and ", carried, " loop-carried values)"));
  }
  if (body.outputs().size() < carried + 1) {
    context.fail(cat("body has ", body.outputs().size(), " outputs, expected at least ",
                     carried + 1, " (cond and ", carried, " loop-carried values)"));
  }
  if (context.has_input(0) && context.input_type(0).dtype != DType::kInt64) {
    context.fail("input 0 'M' must be int64");
  }
  if (context.has_input(1) && context.input_type(1).dtype != DType::kBool) {
    context.fail("input 1 'cond' must be bool");
  }
  // Body inputs take the types the Loop feeds them, where the body left them open.
  auto bind = [](Value* body_input, const TensorType& type) {
    if (body_input->type.dtype == DType::kUndefined) {
      body_input->type.dtype = type.dtype;
      body_input->type.kind = type.kind;
    }
    if (!body_input->type.shape) body_input->type.shape = type.shape;
  };
  TensorType iteration{DType::kInt64, Shape{}, {}};
  TensorType condition{DType::kBool, Shape{}, {}};
  bind(body.inputs()[0], iteration);
  bind(body.inputs()[1], condition);
  for (size_t k = 0; k < carried; ++k) bind(body.inputs()[k + 2], context.input_type(k + 2));
  infer_graph(body);

  size_t scans = body.outputs().size() - 1 - carried;
  if (node.num_outputs() > carried + scans) {
    context.fail(cat("has ", node.num_outputs(), " outputs, but its body yields ", carried,
                     " loop-carried values and ", scans, " scan outputs"));
  }
  for (size_t k = 0; k < carried; ++k) {
    // The final value is the body's (an optional initial value may become a sequence).
    TensorType initial = context.input_type(k + 2);
    context.set_output_type(k, join_types(body.outputs()[k + 1]->type, initial));
  }
  Dim trips = Dim::unknown();
  const Tensor* max_trips = context.input_constant(0);
  if (max_trips && !context.has_input(1) && max_trips->numel() == 1) {
    trips = Dim(max_trips->get_int64(0));
  }
  for (size_t k = 0; k < scans && carried + k < node.num_outputs(); ++k) {
    const TensorType& element = body.outputs()[carried + 1 + k]->type;
    if (element.shape) {
      Shape shape{trips};
      shape.insert(shape.end(), element.shape->begin(), element.shape->end());
      context.set_output(carried + k, element.dtype, shape);
    } else {
      context.set_output_unknown_rank(carried + k, element.dtype);
    }
  }
}

// The type with axes [first, first + count) removed (a batch or scan axis the body does not see).
TensorType without_axes(const TensorType& type, size_t first, size_t count) {
  TensorType out = type;
  if (out.shape && out.shape->size() >= first + count) {
    out.shape->erase(out.shape->begin() + static_cast<int64_t>(first),
                     out.shape->begin() + static_cast<int64_t>(first + count));
  } else {
    out.shape.reset();
  }
  return out;
}

// Scan: the body sees each state and one slice of each scan input (opset 9+: along
// scan_input_axes; opset 8: past a leading batch axis, along axis 1). Outputs: the final states
// and the scan outputs stacked along scan_output_axes (opset 8: [batch, length, ...]).
void infer_scan(InferenceContext& context) {
  Node& node = context.node();
  Graph& body = required_graph(context, "body");
  int64_t scan_count = node.attr_int("num_scan_inputs", -1);
  if (scan_count < 1) context.fail("attribute 'num_scan_inputs' must be given and >= 1");
  bool batched = node.opset() < 9;
  size_t first = batched ? 1 : 0;
  size_t m = static_cast<size_t>(scan_count);
  if (node.num_inputs() < first + m) {
    context.fail(cat("has ", node.num_inputs(), " inputs, fewer than its ", m, " scan inputs",
                     batched ? " after sequence_lens" : ""));
  }
  size_t states = node.num_inputs() - first - m;
  if (body.inputs().size() != states + m) {
    context.fail(cat("body has ", body.inputs().size(), " inputs, expected ", states + m, " (",
                     states, " states and ", m, " scan inputs)"));
  }
  if (body.outputs().size() < states) {
    context.fail(cat("body has ", body.outputs().size(), " outputs, fewer than its ", states,
                     " states"));
  }
  size_t scan_outputs = body.outputs().size() - states;
  if (node.num_outputs() > states + scan_outputs) {
    context.fail(cat("has ", node.num_outputs(), " outputs, but its body yields ", states,
                     " states and ", scan_outputs, " scan outputs"));
  }
  auto ints = [&](const std::string& name, size_t count) {
    std::vector<int64_t> values = node.attr_ints(name, std::vector<int64_t>(count, 0));
    if (values.size() != count) {
      context.fail(cat("attribute '", name, "' has ", values.size(), " entries, expected ",
                       count));
    }
    return values;
  };
  for (const char* name : {"scan_input_directions", "directions"}) {
    for (int64_t direction : ints(name, m)) {
      if (direction != 0 && direction != 1) {
        context.fail(cat("attribute '", name, "' holds ", direction, ", must be 0 or 1"));
      }
    }
  }
  auto bind = [](Value* body_input, const TensorType& type) {
    if (body_input->type.dtype == DType::kUndefined) body_input->type.dtype = type.dtype;
    if (!body_input->type.shape) body_input->type.shape = type.shape;
  };
  Dim batch = Dim::unknown(), length = Dim::unknown();
  std::vector<int64_t> input_axes = ints("scan_input_axes", m);
  for (size_t k = 0; k < states; ++k) {
    const TensorType& type = context.input_type(first + k);
    bind(body.inputs()[k], batched ? without_axes(type, 0, 1) : type);
    if (batched && type.shape && !type.shape->empty()) batch = (*type.shape)[0];
  }
  for (size_t j = 0; j < m; ++j) {
    const TensorType& type = context.input_type(first + states + j);
    if (batched) {
      bind(body.inputs()[states + j], without_axes(type, 0, 2));
      if (type.shape && type.shape->size() >= 2) {
        batch = (*type.shape)[0];
        length = (*type.shape)[1];
      }
      continue;
    }
    if (!type.shape) {
      bind(body.inputs()[states + j], without_axes(type, 0, type.rank() + 1));
      continue;
    }
    int64_t rank = type.rank();
    int64_t axis = context.normalize_axis(input_axes[j], rank, cat("scan_input_axes[", j, "]"));
    bind(body.inputs()[states + j], without_axes(type, static_cast<size_t>(axis), 1));
    if (j == 0) length = (*type.shape)[static_cast<size_t>(axis)];
  }
  infer_graph(body);

  for (size_t k = 0; k < states && k < node.num_outputs(); ++k) {
    TensorType type = body.outputs()[k]->type;
    if (batched && type.shape) type.shape->insert(type.shape->begin(), batch);
    context.set_output_type(k, join_types(context.input_type(first + k), type));
  }
  std::vector<int64_t> output_axes = ints("scan_output_axes", scan_outputs);
  ints("scan_output_directions", scan_outputs);
  for (size_t k = 0; k < scan_outputs && states + k < node.num_outputs(); ++k) {
    const TensorType& element = body.outputs()[states + k]->type;
    if (!element.shape) {
      context.set_output_unknown_rank(states + k, element.dtype);
      continue;
    }
    Shape shape = *element.shape;
    if (batched) {
      shape.insert(shape.begin(), {batch, length});
    } else {
      int64_t axis = context.normalize_axis(output_axes[k], static_cast<int64_t>(shape.size()) + 1,
                                            cat("scan_output_axes[", k, "]"));
      shape.insert(shape.begin() + axis, length);
    }
    context.set_output(states + k, element.dtype, shape);
  }
}

}  // namespace

void register_control_flow_schemas(std::vector<OpSchema>& registry) {
  // Opset 8's first input, sequence_lens, may be omitted: infer_scan counts the inputs.
  registry.push_back({"Scan", 8, 0, -1, 1, -1, infer_scan});
  registry.push_back({"If", 1, 1, 1, 1, -1, infer_if, /*any_value_kind=*/true});
  // M and cond are optional but their slots are not: infer_loop checks there are two.
  registry.push_back({"Loop", 1, 0, -1, 1, -1, infer_loop, /*any_value_kind=*/true});
}

}  // namespace rnnc
