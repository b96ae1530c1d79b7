#include "ir/op_schema.h"

#include <algorithm>
#include <map>

#include "ir/error.h"

namespace rnnc {

namespace {

const std::map<std::string, OpSchema>& registry() {
  static const std::map<std::string, OpSchema> table = [] {
    std::vector<OpSchema> schemas;
    register_elementwise_schemas(schemas);
    register_recurrent_schemas(schemas);
    register_nn_schemas(schemas);
    register_tensor_schemas(schemas);
    register_control_flow_schemas(schemas);
    register_quant_schemas(schemas);
    register_resize_schemas(schemas);
    register_signal_schemas(schemas);
    register_sequence_schemas(schemas);
    std::map<std::string, OpSchema> by_name;
    for (auto& schema : schemas) {
      RNNC_CHECK(!by_name.count(schema.op_type), "op ", schema.op_type, " registered twice");
      by_name.emplace(schema.op_type, schema);
    }
    return by_name;
  }();
  return table;
}

// Merges a declared dim (from the model's value_info) into an inferred one.
Dim merge_dim(const Dim& inferred, const Dim& declared, const Node& node, const Value& value,
              size_t axis) {
  if (inferred.is_unknown()) return declared;
  if (declared.is_known() && inferred.is_known() && declared.value() != inferred.value()) {
    raise_invalid_model(cat(node.describe(), ": output '", value.name(), "' is declared with dim ",
                            declared.value(), " at axis ", axis, " but the op produces ",
                            inferred.value()));
  }
  // A symbolic name the model gave keeps readability ("seq") over an inferred expression only
  // when inference could not do better than a fresh unknown; otherwise inference wins.
  return inferred;
}

}  // namespace

const TensorType& InferenceContext::input_type(size_t i) const {
  Value* value = node_.input(i);
  if (!value) fail(cat("input ", i, " is required but missing"));
  return value->type;
}

const Shape& InferenceContext::input_shape(size_t i) const {
  const TensorType& type = input_type(i);
  if (!type.shape) {
    raise_unsupported(cat(node_.describe(), ": input ", i, " '", node_.input(i)->name(),
                          "' has unknown rank"));
  }
  return *type.shape;
}

const Tensor* InferenceContext::input_constant(size_t i) const {
  Value* value = node_.input(i);
  return value && value->is_constant() ? value->constant().get() : nullptr;
}

std::optional<std::vector<Dim>> InferenceContext::input_dims_value(size_t i) const {
  Value* value = node_.input(i);
  if (!value) return std::nullopt;
  if (value->is_constant()) {
    const Tensor& data = *value->constant();
    if (data.rank() > 1 || !(data.dtype() == DType::kInt64 || data.dtype() == DType::kInt32)) {
      return std::nullopt;
    }
    std::vector<Dim> dims;
    for (int64_t k = 0; k < data.numel(); ++k) dims.emplace_back(data.get_int64(k));
    return dims;
  }
  return value->symbolic_value;
}

void InferenceContext::set_output(size_t i, DType dtype, Shape shape) const {
  Value* value = node_.output(i);
  if (!value) return;
  if (value->type.shape && value->type.shape->size() == shape.size()) {
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      shape[axis] = merge_dim(shape[axis], (*value->type.shape)[axis], node_, *value, axis);
    }
  } else if (value->type.shape && !value->type.shape->empty() && !shape.empty()) {
    fail(cat("output '", value->name(), "' is declared with rank ", value->type.shape->size(),
             " but the op produces rank ", shape.size()));
  }
  if (value->type.dtype != DType::kUndefined && value->type.dtype != dtype) {
    fail(cat("output '", value->name(), "' is declared as ", dtype_onnx_name(value->type.dtype),
             " but the op produces ", dtype_onnx_name(dtype)));
  }
  value->type.dtype = dtype;
  value->type.shape = std::move(shape);
}

void InferenceContext::set_output_type(size_t i, const TensorType& type) const {
  if (Value* output = node_.output(i)) output->type.kind = type.kind;
  if (type.shape) {
    set_output(i, type.dtype, *type.shape);
  } else {
    set_output_unknown_rank(i, type.dtype);
  }
}

TensorType join_types(const TensorType& a, const TensorType& b) {
  TensorType out;
  out.kind = a.kind;
  out.dtype = a.dtype;
  if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
    Shape shape;
    for (size_t k = 0; k < a.shape->size(); ++k) {
      shape.push_back((*a.shape)[k] == (*b.shape)[k] ? (*a.shape)[k] : Dim::unknown());
    }
    out.shape = shape;
  }
  return out;
}

void InferenceContext::set_output_unknown_rank(size_t i, DType dtype) const {
  Value* value = node_.output(i);
  if (!value) return;
  value->type.dtype = dtype;
}

void InferenceContext::set_output_dims_value(size_t i, std::vector<Dim> dims) const {
  if (Value* value = node_.output(i)) value->symbolic_value = std::move(dims);
}

void InferenceContext::fail(const std::string& message) const {
  raise_invalid_model(cat(node_.describe(), ": ", message));
}

void InferenceContext::require_input_type(int i, const std::string& name,
                                          const std::vector<DType>& allowed) const {
  if (i < 0 || !has_input(static_cast<size_t>(i))) return;
  const DType dtype = input_type(static_cast<size_t>(i)).dtype;
  if (dtype == DType::kUndefined ||
      std::find(allowed.begin(), allowed.end(), dtype) != allowed.end()) {
    return;
  }
  std::string list;
  for (DType type : allowed) {
    list += (list.empty() ? "" : ", ") + std::string(dtype_onnx_name(type));
  }
  fail(cat("input ", name, " has element type ", dtype_onnx_name(dtype), ", expected ",
           allowed.size() == 1 ? "" : "one of ", list));
}

int64_t InferenceContext::normalize_axis(int64_t axis, int64_t rank, const std::string& what) const {
  if (axis < -rank || axis >= rank) {
    fail(cat(what, " = ", axis, " is out of range for rank ", rank, " (valid: [", -rank, ", ",
             rank - 1, "])"));
  }
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const InferenceContext& context) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t k = 0; k < rank; ++k) {
    Dim da = k < rank - a.size() ? Dim(1) : a[k - (rank - a.size())];
    Dim db = k < rank - b.size() ? Dim(1) : b[k - (rank - b.size())];
    if (da.is_known() && da.value() == 1) {
      out[k] = db;
    } else if (db.is_known() && db.value() == 1) {
      out[k] = da;
    } else if (da == db) {
      out[k] = da;
    } else if (da.is_known() && db.is_known()) {
      context.fail(cat("shapes ", shape_to_string(a), " and ", shape_to_string(b),
                       " cannot be broadcast (dim ", k, ": ", da.value(), " vs ", db.value(), ")"));
    } else if (da.is_known()) {
      out[k] = da;
    } else if (db.is_known()) {
      out[k] = db;
    } else {
      out[k] = Dim::unknown();
    }
  }
  return out;
}

const OpSchema* find_op_schema(const std::string& domain, const std::string& op_type) {
  if (!domain.empty() && domain != "ai.onnx") return nullptr;
  auto it = registry().find(op_type);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<const OpSchema*> all_op_schemas() {
  std::vector<const OpSchema*> out;
  for (const auto& [name, schema] : registry()) out.push_back(&schema);
  return out;
}

void infer_node(Node& node) {
  const OpSchema* schema = find_op_schema(node.domain(), node.op_type());
  if (!schema) {
    raise_unsupported(cat(node.describe(), ": operator '",
                          node.domain().empty() ? "" : node.domain() + ".", node.op_type(),
                          "' is not supported"));
  }
  if (node.opset() < schema->since_opset) {
    raise_invalid_model(cat(node.describe(), ": ", node.op_type(), " does not exist before opset ",
                            schema->since_opset));
  }
  auto count_present = [](const std::vector<Value*>& values) {
    // Trailing omitted optional values do not count against the maximum.
    size_t n = values.size();
    while (n > 0 && values[n - 1] == nullptr) --n;
    return static_cast<int>(n);
  };
  int inputs = count_present(node.inputs());
  if (static_cast<int>(node.num_inputs()) < schema->min_inputs ||
      (schema->max_inputs >= 0 && inputs > schema->max_inputs)) {
    raise_invalid_model(cat(node.describe(), ": has ", node.num_inputs(), " inputs, expected ",
                            schema->min_inputs, schema->max_inputs < 0 ? " or more" : "",
                            schema->max_inputs > schema->min_inputs
                                ? cat(" to ", schema->max_inputs) : std::string()));
  }
  for (int i = 0; i < schema->min_inputs; ++i) {
    if (!node.input(static_cast<size_t>(i))) {
      raise_invalid_model(cat(node.describe(), ": required input ", i, " is missing"));
    }
  }
  int outputs = count_present(node.outputs());
  if (outputs < schema->min_outputs ||
      (schema->max_outputs >= 0 && outputs > schema->max_outputs)) {
    raise_invalid_model(cat(node.describe(), ": has ", outputs, " outputs, expected ",
                            schema->min_outputs, schema->max_outputs > schema->min_outputs
                                ? cat(" to ", schema->max_outputs) : std::string()));
  }
  for (size_t i = 0; i < node.num_inputs() && !schema->any_value_kind; ++i) {
    const Value* input = node.input(i);
    if (input && !input->type.is_tensor()) {
      raise_invalid_model(cat(node.describe(), ": input ", i, " '", input->name(), "' is ",
                              input->type.to_string(), ", but ", node.op_type(),
                              " takes tensors only"));
    }
  }
  InferenceContext context(node);
  schema->infer(context);
}

void infer_graph(Graph& graph) {
  for (const auto& node : graph.nodes()) infer_node(*node);
}

}  // namespace rnnc
