// fold_shape_chains: folds the shape arithmetic exporters emit, using symbolic dims.
//
// (1) Shape values that are known numbers. Shape inference propagates the elements of small int
//     tensors as dims (Value::symbolic_value): Shape(x) of x: f32[seq, 4, 40] is [seq, 4, 40], and
//     Gather(., 1) of it is [4]. Every node output whose elements are all known numbers becomes an
//     initializer, although its inputs are not constants (x is an input). This is how fixed dims
//     (--dim batch=1) and static dims reach the shape subgraph.
//
//       %s: i64[3] = Shape 'shape' (%x)                 ; x: f32[seq, 4, 40]
//       %n: i64[1] = Gather 'gather' (%s, %one)    ->   const %n: i64[1] = {4}
//
// (2) Zero initial states. For the zero state h0 = c0 = 0, exporters compute the state's shape
//     from the input and fill it:
//
//       Shape -> Gather(batch) -> Unsqueeze -> Concat([layers], ., [hidden]) -> ConstantOfShape(0)
//
//     and PyTorch then slices one layer's state out of it per LSTM. ONNX defines an omitted
//     initial_h / initial_c as zeros, so when a zero source (ConstantOfShape with value 0 or no
//     value, or an initializer of zeros) reaches nothing but initial-state inputs of LSTM/GRU/RNN
//     nodes, through the zero-preserving ops of kZeroPreserving, those inputs are omitted and the
//     chain is left dead for dce:
//
//       %zeros: f32[2, batch, 128] = ConstantOfShape (%state_shape)
//       %h0: f32[1, batch, 128] = Slice (%zeros, %zero, %one, %zero)
//       %y, %h, %c = LSTM 'lstm' (%x, %W, %R, %B, _, %h0, %c0)
//     ->
//       %y, %h, %c = LSTM 'lstm' (%x, %W, %R, %B, _, _, _)      (the chain is now dead)
//
//     A zero source with any other reader (an Add, a graph output, a shape input of a Reshape) is
//     left alone: the chain would stay alive anyway.
//
// Run after fold_constants (Constant nodes in the chain are initializers by then) and before dce.
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "graph_opt/constant_value.h"
#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"

namespace rnnc {

namespace {

// ---- (1) shape values known as numbers ---------------------------------------------------------

// The tensor a value's symbolic_value stands for, when every element is a known number.
std::optional<Tensor> known_shape_value(const Value& value) {
  if (!value.symbolic_value || value.is_constant()) return std::nullopt;
  if (value.type.dtype != DType::kInt64 && value.type.dtype != DType::kInt32) return std::nullopt;
  const std::vector<Dim>& dims = *value.symbolic_value;
  std::vector<int64_t> shape;
  if (value.type.rank() == 1) {
    shape = {static_cast<int64_t>(dims.size())};
    const Dim& declared = (*value.type.shape)[0];
    if (declared.is_known() && declared.value() != shape[0]) return std::nullopt;
  } else if (value.type.rank() != 0 || dims.size() != 1) {
    return std::nullopt;
  }
  Tensor data(value.type.dtype, shape);
  for (size_t k = 0; k < dims.size(); ++k) {
    if (!dims[k].is_known()) return std::nullopt;
    data.set_double(static_cast<int64_t>(k), static_cast<double>(dims[k].value()));
    if (data.get_int64(static_cast<int64_t>(k)) != dims[k].value()) return std::nullopt;
  }
  return data;
}

bool fold_known_shape_values(Graph& graph, PassStats& stats) {
  bool changed = false;
  std::vector<Node*> order;
  for (const auto& node : graph.nodes()) order.push_back(node.get());
  for (Node* node : order) {
    // The node is removed with its last replaced output: take the outputs first.
    std::vector<Value*> outputs = node->outputs();
    for (Value* output : outputs) {
      if (!output) continue;
      if (std::optional<Tensor> data = known_shape_value(*output)) {
        replace_with_constant(output, std::move(*data));
        ++stats["shape values folded"];
        changed = true;
      }
    }
  }
  return changed;
}

// ---- (2) zero initial states -------------------------------------------------------------------

// Ops whose output is all zeros when their input 0 is (the other inputs only say where the zeros
// go), as exporters put them between the zero source and the recurrent node.
const std::set<std::string> kZeroPreserving = {
    "Slice",      // zeros[0:1] -> zeros
    "Squeeze",    // squeeze(zeros) -> zeros
    "Unsqueeze",  // unsqueeze(zeros) -> zeros
    "Reshape",    // reshape(zeros) -> zeros
    "Expand",     // expand(zeros) -> zeros
    "Transpose",  // transpose(zeros) -> zeros
    "Identity",   // zeros -> zeros
    "Cast",       // cast(zeros) -> zeros
};

// Recurrent op -> its initial-state input slots (optional; omitted means zeros).
const std::map<std::string, std::vector<int>> kInitialStateInputs = {
    {"LSTM", {5, 6}},  // initial_h, initial_c
    {"GRU", {5}},      // initial_h
    {"RNN", {5}},      // initial_h
};

bool is_default_domain(const Node& node) {
  return node.domain().empty() || node.domain() == "ai.onnx";
}

bool is_positive_zero(const Tensor& data, int64_t i) {
  double v = data.get_double(i);
  return v == 0 && !std::signbit(v);
}

bool is_zero_source(const Value& value) {
  if (is_known_constant(&value)) {
    const Tensor& data = *value.constant();
    if (!is_floating(data.dtype()) && !is_integer(data.dtype())) return false;
    for (int64_t i = 0; i < data.numel(); ++i) {
      if (!is_positive_zero(data, i)) return false;
    }
    return true;
  }
  const Node* producer = value.producer();
  if (!producer || producer->op_type() != "ConstantOfShape" || !is_default_domain(*producer)) {
    return false;
  }
  const Tensor* fill = producer->attr_tensor("value");  // absent: float 0
  return !fill ||
         (fill->numel() == 1 && (is_floating(fill->dtype()) || is_integer(fill->dtype())) &&
          is_positive_zero(*fill, 0));
}

bool is_zero_preserving(const Node& node) {
  return is_default_domain(node) && kZeroPreserving.count(node.op_type()) != 0;
}

bool is_initial_state_input(const Node& node, int input_index) {
  if (!is_default_domain(node)) return false;
  auto it = kInitialStateInputs.find(node.op_type());
  if (it == kInitialStateInputs.end()) return false;
  for (int slot : it->second) {
    if (slot == input_index) return true;
  }
  return false;
}

// Collects the initial-state slots `value` reaches through zero-preserving ops; false if it (or a
// value derived from it) has any other reader.
bool only_feeds_initial_states(const Value* value, std::vector<Use>& state_inputs) {
  const Graph& graph = *value->owner();
  if (is_graph_output(graph, value) || returned_by_nested_graph(graph, value)) return false;
  for (const Use& use : value->uses()) {
    if (is_initial_state_input(*use.node, use.input_index)) {
      state_inputs.push_back(use);
    } else if (is_zero_preserving(*use.node) && use.input_index == 0) {
      for (const Value* output : use.node->outputs()) {
        if (output && !only_feeds_initial_states(output, state_inputs)) return false;
      }
    } else {
      return false;
    }
  }
  return true;
}

bool omit_zero_initial_states(Graph& graph, PassStats& stats) {
  std::vector<Value*> sources;
  for (const auto& value : graph.values()) {
    if (!value->uses().empty() && is_zero_source(*value)) sources.push_back(value.get());
  }
  bool changed = false;
  for (Value* source : sources) {
    std::vector<Use> state_inputs;
    if (!only_feeds_initial_states(source, state_inputs) || state_inputs.empty()) continue;
    for (const Use& use : state_inputs) {
      use.node->set_input(static_cast<size_t>(use.input_index), nullptr);
      ++stats["initial states omitted"];
    }
    changed = true;
  }
  return changed;
}

}  // namespace

bool fold_shape_chains(Model& model, const PassContext& context, PassStats& stats) {
  bool changed = false;
  for_each_graph(model, [&](Graph& graph) {
    changed = fold_known_shape_values(graph, stats) || changed;
    changed = omit_zero_initial_states(graph, stats) || changed;
  });
  return changed;
}

}  // namespace rnnc
