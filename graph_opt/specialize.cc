// specialize: compiles the model for inputs and dims the user fixes (--fix NAME=VALUE, --dim N=S).
//
// Fixed inputs (PassContext::fixed_inputs) become initializers, so a sample-rate input or a mode
// flag folds through fold_constants and control flow down to one branch:
//
//   graph main(%x: f32[n], %sr: i64[]) {    --fix sr=16000    graph main(%x: f32[n]) {
//                                                                 const %sr: i64[] = {16000}
//     %is16k = Equal (%sr, %k16000)                               %is16k = Equal (%sr, %k16000)
//
// Fixed dims (PassContext::fixed_dims) replace every symbolic dim of that name, in every value
// type of every graph (nested ones too) and in the dims values shape inference propagates through
// Shape chains, so fold_shape_chains sees numbers:
//
//   %x: f32[seq, batch, 40]     --dim batch=1     %x: f32[seq, 1, 40]
//
// A polynomial dim (batch*seq, 2*seq) is replaced when every axis in it is bound; a partially
// bound one stays symbolic (Dim has no partial substitution). A fixed input's tensor binds the
// axes its declared shape names (state: f32[2, batch, 128] fixed to a [2, 1, 128] tensor binds
// batch = 1), as the evaluator binds inputs. Types are then re-inferred over the whole model; an
// If branch that no longer types under the fixed dims (Silero's 8 kHz branch with 16 kHz chunks)
// leaves the If the other branch's types (ir/shape_inference/control_flow.cc), and folding the
// fixed inputs later takes the branch they choose.
//
// What the user gets wrong is kInvalidInput naming the input or dim and what was expected: an
// unknown input (listing the inputs), a tensor of another element type or shape, an axis name the
// model does not use (listing its axes), a negative size, two sizes for one axis.
#include "graph_opt/specialize.h"

#include <limits>
#include <set>

#include "graph_opt/pass.h"
#include "ir/npy.h"
#include "ir/op_schema.h"

namespace rnnc {

namespace {

std::string input_list(const Graph& graph) {
  std::string names;
  for (const Value* input : graph.inputs()) {
    names += (names.empty() ? "'" : ", '") + input->name() + "'";
  }
  return names.empty() ? "none" : names;
}

std::string describe_input(const Value& input) {
  return cat("input '", input.name(), "' (", input.type.to_string(), ")");
}

// ---- parsing --fix text ------------------------------------------------------------------------

template <typename T>
Tensor integer_scalar(const Value& input, const std::string& text, std::vector<int64_t> shape) {
  size_t used = 0;
  bool ok = !text.empty();
  T value{};
  try {
    if constexpr (std::is_unsigned_v<T>) {
      unsigned long long parsed = std::stoull(text, &used);
      ok = ok && text[0] != '-' && parsed <= std::numeric_limits<T>::max();
      value = static_cast<T>(parsed);
    } else {
      long long parsed = std::stoll(text, &used);
      ok = ok && parsed >= std::numeric_limits<T>::min() && parsed <= std::numeric_limits<T>::max();
      value = static_cast<T>(parsed);
    }
  } catch (const std::exception&) {
    ok = false;
  }
  if (!ok || used != text.size()) {
    raise_invalid_input(cat("cannot fix ", describe_input(input), ": '", text,
                            "' is not an integer that fits ", dtype_onnx_name(input.type.dtype)));
  }
  Tensor tensor(dtype_of<T>(), std::move(shape));
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<T>()[i] = value;
  return tensor;
}

Tensor parse_scalar(const Value& input, const std::string& text, std::vector<int64_t> shape) {
  switch (input.type.dtype) {
    case DType::kInt8:
      return integer_scalar<int8_t>(input, text, shape);
    case DType::kInt16:
      return integer_scalar<int16_t>(input, text, shape);
    case DType::kInt32:
      return integer_scalar<int32_t>(input, text, shape);
    case DType::kInt64:
      return integer_scalar<int64_t>(input, text, shape);
    case DType::kUInt8:
      return integer_scalar<uint8_t>(input, text, shape);
    case DType::kUInt16:
      return integer_scalar<uint16_t>(input, text, shape);
    case DType::kUInt32:
      return integer_scalar<uint32_t>(input, text, shape);
    case DType::kUInt64:
      return integer_scalar<uint64_t>(input, text, shape);
    case DType::kBool: {
      bool value = text == "true" || text == "1";
      if (!value && text != "false" && text != "0") {
        raise_invalid_input(cat("cannot fix ", describe_input(input), ": '", text,
                                "' is not a bool value (true, false, 1, 0)"));
      }
      Tensor tensor(DType::kBool, std::move(shape));
      for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<bool>()[i] = value;
      return tensor;
    }
    default:
      break;
  }
  if (!is_floating(input.type.dtype)) {
    raise_invalid_input(cat("cannot fix ", describe_input(input), " from text: give its value as ",
                            "@FILE.npy or @FILE.pb"));
  }
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size()) {
    raise_invalid_input(
        cat("cannot fix ", describe_input(input), ": '", text, "' is not a number"));
  }
  Tensor tensor(input.type.dtype, std::move(shape));
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.set_double(i, value);
  return tensor;
}

// ---- checking a fixed input against its declared type ------------------------------------------

// Axis name -> size, with what set it (for the message when two disagree).
struct Bindings {
  std::map<std::string, int64_t> sizes;
  std::map<std::string, std::string> set_by;

  void bind(const std::string& axis, int64_t size, const std::string& by) {
    auto [slot, inserted] = sizes.emplace(axis, size);
    if (inserted) {
      set_by[axis] = by;
    } else if (slot->second != size) {
      raise_invalid_input(cat("cannot fix dim '", axis, "' to ", size, " (", by,
                              "): ", set_by[axis], " fixed it to ", slot->second));
    }
  }
};

void check_fixed_value(const Value& input, const Tensor& value, Bindings& bindings) {
  if (value.dtype() != input.type.dtype) {
    raise_invalid_input(cat("cannot fix ", describe_input(input), ": expected element type ",
                            dtype_onnx_name(input.type.dtype), ", got ",
                            dtype_onnx_name(value.dtype())));
  }
  if (!input.type.shape) return;
  const Shape& declared = *input.type.shape;
  std::string got = shape_to_string(shape_from_values(value.shape()));
  if (static_cast<int64_t>(declared.size()) != value.rank()) {
    raise_invalid_input(cat("cannot fix ", describe_input(input), ": expected shape ",
                            shape_to_string(declared), " (rank ", declared.size(), "), got ", got));
  }
  for (size_t axis = 0; axis < declared.size(); ++axis) {
    const Dim& dim = declared[axis];
    int64_t size = value.shape()[axis];
    if (dim.is_known() && dim.value() != size) {
      raise_invalid_input(cat("cannot fix ", describe_input(input), ": expected shape ",
                              shape_to_string(declared), ", got ", got, " (dim ", axis, " is ",
                              size, ", expected ", dim.value(), ")"));
    }
    std::vector<std::string> axes = dim.symbols();
    if (axes.size() == 1 && dim == Dim::symbol(axes[0])) {
      bindings.bind(axes[0], size, cat("input '", input.name(), "' dim ", axis));
    }
  }
}

// ---- substituting fixed dims -------------------------------------------------------------------

// The dim with its axes bound, when all of them are; otherwise the dim as it is.
Dim bind_dim(const Dim& dim, const std::map<std::string, int64_t>& sizes, int64_t& count) {
  if (!dim.is_symbolic()) return dim;
  std::optional<int64_t> value = dim.evaluate(sizes);
  if (!value) return dim;
  ++count;
  return Dim(*value);
}

int64_t bind_dims_in_graph(Graph& graph, const std::map<std::string, int64_t>& sizes) {
  int64_t count = 0;
  for (const auto& value : graph.values()) {
    if (value->type.shape) {
      for (Dim& dim : *value->type.shape) dim = bind_dim(dim, sizes, count);
    }
    if (value->symbolic_value) {
      int64_t ignored = 0;
      for (Dim& dim : *value->symbolic_value) dim = bind_dim(dim, sizes, ignored);
    }
  }
  return count;
}

std::set<std::string> axis_names(Model& model) {
  std::set<std::string> names;
  for_each_graph(model, [&](Graph& graph) {
    for (const auto& value : graph.values()) {
      if (!value->type.shape) continue;
      for (const Dim& dim : *value->type.shape) {
        for (const std::string& name : dim.symbols()) names.insert(name);
      }
    }
  });
  return names;
}

}  // namespace

Value* find_fixable_input(const Graph& graph, const std::string& name) {
  for (Value* input : graph.inputs()) {
    if (input->name() == name) return input;
  }
  raise_invalid_input(cat("cannot fix '", name, "': the model has no input of that name (inputs: ",
                          input_list(graph), ")"));
}

Tensor parse_fixed_input(const Graph& graph, const std::string& name, const std::string& text) {
  const Value& input = *find_fixable_input(graph, name);
  if (!text.empty() && text[0] == '@') return read_tensor_file(text.substr(1));
  // A scalar fills an input whose declared dims are all 1 ([], [1], [1, 1]).
  std::vector<int64_t> shape;
  bool all_ones = input.type.shape.has_value();
  if (input.type.shape) {
    for (const Dim& dim : *input.type.shape) {
      all_ones = all_ones && dim.is_known() && dim.value() == 1;
      shape.push_back(1);
    }
  }
  if (input.type.shape && !all_ones) {
    raise_invalid_input(cat("cannot fix ", describe_input(input), " to '", text,
                            "': a number fits only an input of shape [] (or all dims 1); give a ",
                            "tensor as @FILE.npy or @FILE.pb"));
  }
  return parse_scalar(input, text, shape);
}

bool specialize(Model& model, const PassContext& context, PassStats& stats) {
  if (context.fixed_inputs.empty() && context.fixed_dims.empty()) return false;
  Graph& graph = *model.graph;

  Bindings bindings;
  std::set<std::string> axes = axis_names(model);
  for (const auto& [axis, size] : context.fixed_dims) {
    if (!axes.count(axis)) {
      std::string known;
      for (const std::string& name : axes) known += (known.empty() ? "" : ", ") + name;
      raise_invalid_input(cat("cannot fix dim '", axis, "': no dim of the model has that name (",
                              known.empty() ? "the model has no symbolic dims" : "dims: " + known,
                              ")"));
    }
    if (size < 0) {
      raise_invalid_input(cat("cannot fix dim '", axis, "' to ", size, ": a size is >= 0"));
    }
    bindings.bind(axis, size, "--dim");
  }
  std::vector<std::pair<Value*, Tensor>> fixed;
  for (const auto& [name, value] : context.fixed_inputs) {
    Value* input = find_fixable_input(graph, name);
    check_fixed_value(*input, value, bindings);
    fixed.emplace_back(input, value);
  }

  for (auto& [input, value] : fixed) {
    graph.convert_input_to_constant(input, value);
    ++stats["inputs fixed"];
  }
  try {
    int64_t dims = 0;
    for_each_graph(model, [&](Graph& g) { dims += bind_dims_in_graph(g, bindings.sizes); });
    if (dims) stats["dims fixed"] += dims;
    infer_graph(graph);
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::kInvalidModel) throw;
    std::string fixes;
    for (const auto& [name, value] : context.fixed_inputs) {
      fixes += (fixes.empty() ? "" : ", ") + name + "=" + tensor_summary(value, 4);
    }
    for (const auto& [axis, size] : context.fixed_dims) {
      fixes += cat(fixes.empty() ? "" : ", ", "dim ", axis, "=", size);
    }
    raise_invalid_input(cat("the model is invalid with ", fixes, ": ", error.what()));
  }
  return true;
}

}  // namespace rnnc
