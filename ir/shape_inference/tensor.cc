// Type and shape inference for the data-movement ops: Concat, Split, Slice, Gather(Elements),
// Scatter(Elements), GatherND, ScatterND, DepthToSpace, SpaceToDepth, Squeeze, Unsqueeze, Reshape,
// Transpose, Flatten, Expand, Tile, Pad, Shape, Size, ConstantOfShape, Cast(Like), Identity, Range,
// Constant, NonZero, Trilu, EyeLike, OneHot, Compress, ReverseSequence, Unique.
//
// Beyond plain shapes this file does two things later stages rely on:
//  - Symbolic dims survive: Slice(1:) of [seq] is [seq - 1], Reshape of [seq, batch, 512] to
//    [-1, 512] is [batch*seq, 512], Concat along seq adds dims.
//  - Dims values (ONNX data propagation): a small int tensor whose elements are dims, e.g.
//    Shape(x) = [seq, batch, 40], flows through Gather/Slice/Concat/Unsqueeze/Squeeze/Cast/
//    Identity/Reshape, so the ConstantOfShape/Reshape/Expand/Tile it feeds gets a symbolic shape:
//      Shape -> Gather(1) -> Unsqueeze -> Concat([1], ., [128]) -> ConstantOfShape
//    on x: f32[seq, batch, 40] infers f32[1, batch, 128].
//
// Symbolic reasoning assumes what exporters assume: every dynamic axis is at least 1 and below
// 2^31, so INT_MAX/INT64_MAX Slice ends mean "to the end". A result that needs more than that (a
// max or ceil of unknown sign, a clamp we cannot decide) becomes Dim::unknown(), never a guess.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/op_schema.h"
#include "ir/slice_bounds.h"

namespace rnnc {

namespace {

// Exporters write INT_MAX / INT_MIN (or the int64 limits) for "slice to the end" of a dim whose
// size they do not know; on a symbolic dim (assumed < 2^31) such bounds clamp to the dim's end.
constexpr int64_t kIntMax = 2147483647;
constexpr int64_t kIntMin = -2147483647 - 1;


// ---- symbolic arithmetic under "every axis >= 1" -------------------------------------------

// True when d >= 0 for every binding of its axes to sizes >= 1. Decided for a known value and for
// k*monomial + c with k > 0 (its minimum is k + c, at all axes = 1): seq - 1, 2*seq*batch - 1.
bool provably_nonnegative(const Dim& d) {
  if (d.is_unknown()) return false;
  if (d.is_known()) return d.value() >= 0;
  std::map<std::string, int64_t> zeros, ones;
  for (const auto& name : d.symbols()) {
    zeros[name] = 0;
    ones[name] = 1;
  }
  int64_t constant = *d.evaluate(zeros);
  Dim rest = d - Dim(constant);
  if (rest.exact_div(rest) != Dim(1)) return false;  // more than one monomial
  int64_t coefficient = *rest.evaluate(ones);
  return coefficient > 0 && coefficient + constant >= 0;
}

bool provably_le(const Dim& a, const Dim& b) { return provably_nonnegative(b - a); }

// min(max(x, lo), hi) when the order of x, lo and hi is provable; unknown otherwise.
Dim clamp_dim(const Dim& x, const Dim& lo, const Dim& hi) {
  if (provably_le(hi, x)) return hi;
  if (provably_le(x, lo)) return lo;
  if (provably_le(lo, x) && provably_le(x, hi)) return x;
  return Dim::unknown();
}

Dim product(const Shape& dims, size_t begin = 0, size_t end = SIZE_MAX) {
  Dim total(1);
  for (size_t k = begin; k < std::min(end, dims.size()); ++k) total = total * dims[k];
  return total;
}

std::optional<std::vector<int64_t>> known_values(const std::optional<std::vector<Dim>>& dims) {
  if (!dims || !shape_is_known(*dims)) return std::nullopt;
  return shape_values(*dims);
}

// ---- Slice arithmetic (shared by Slice shapes and Slice on dims values) ---------------------

// step_count (ir/slice_bounds.h) on a dim: distance itself for unit steps, an exact quotient
// otherwise.
Dim dim_step_count(const Dim& distance, int64_t step) {
  if (distance.is_known()) return step_count(distance.value(), step);
  if (provably_le(distance, 0)) return 0;
  if (!provably_nonnegative(distance)) return Dim::unknown();
  if (step == 1 || step == -1) return distance;
  if (step == std::numeric_limits<int64_t>::min()) return Dim::unknown();
  return distance.exact_div(step > 0 ? step : -step);  // a ceil only when the division is exact
}

// One Slice bound on a dim that is not a known number, clamped into [lo, hi] as resolve_slice
// does. A bound given as a dim (from a dims value) is used only if provably >= 0, since a negative
// one would count from the end.
Dim symbolic_slice_bound(const Dim& bound, const Dim& d, const Dim& lo, const Dim& hi) {
  if (bound.is_known()) {
    int64_t v = bound.value();
    if (v >= kIntMax) return hi;
    if (v <= kIntMin) return lo;
    return clamp_dim(v < 0 ? d + Dim(v) : bound, lo, hi);
  }
  if (!provably_nonnegative(bound)) return Dim::unknown();
  return clamp_dim(bound, lo, hi);
}

// Number of elements a Slice takes from an axis of size d.
Dim slice_extent(const Dim& d, const Dim& start, const Dim& end, int64_t step) {
  if (d.is_known() && start.is_known() && end.is_known()) {
    return resolve_slice(d.value(), start.value(), end.value(), step).count;
  }
  Dim first, last;  // clamped start and end
  if (step > 0) {
    first = symbolic_slice_bound(start, d, 0, d);
    last = symbolic_slice_bound(end, d, 0, d);
  } else {
    first = symbolic_slice_bound(start, d, 0, d - 1);
    last = symbolic_slice_bound(end, d, -1, d - 1);
  }
  return dim_step_count(step > 0 ? last - first : first - last, step);
}

// ---- operands ------------------------------------------------------------------------------

// The elements of a shape-like input as dims (constant data or a propagated dims value). A large
// int constant, such as an index table, is not shape-like; reading it would cost a Dim per element.
constexpr int64_t kMaxDimsValue = 64;

std::optional<std::vector<Dim>> dims_value(const InferenceContext& context, size_t i) {
  const Tensor* constant = context.input_constant(i);
  if (constant && constant->numel() > kMaxDimsValue) return std::nullopt;
  return context.input_dims_value(i);
}

const Shape* shape_if_known(const InferenceContext& context, size_t i) {
  const TensorType& type = context.input_type(i);
  return type.shape ? &*type.shape : nullptr;
}

// An int list that is attribute `name` before opset `input_since` and input `index` from it
// (Split's split, Squeeze's axes, Slice's starts, Pad's pads).
struct IntListOperand {
  bool present = false;
  std::optional<std::vector<Dim>> dims;  // the elements when known (constant or dims value)
};

IntListOperand int_list_operand(const InferenceContext& context, const std::string& name,
                                size_t index, int input_since) {
  const Node& node = context.node();
  IntListOperand operand;
  if (node.opset() < input_since) {
    if (context.has_input(index)) {
      context.fail(cat("input ", index, " ('", name, "') exists from opset ", input_since,
                       "; before it '", name, "' is an attribute"));
    }
    if (node.has_attr(name)) {
      std::vector<int64_t> values = node.attr_ints(name);
      operand.present = true;
      operand.dims = shape_from_values(values);
    }
    return operand;
  }
  if (node.has_attr(name)) {
    context.fail(cat("attribute '", name, "' became input ", index, " in opset ", input_since));
  }
  if (context.has_input(index)) {
    const TensorType& type = context.input_type(index);
    if (type.dtype != DType::kInt64 && type.dtype != DType::kInt32) {
      context.fail(cat("input ", index, " '", name, "' must be int32 or int64, got ",
                       dtype_onnx_name(type.dtype)));
    }
    operand.present = true;
    operand.dims = dims_value(context, index);
  }
  return operand;
}

// Normalizes a list of axes against `rank`, rejecting repeats.
std::vector<int64_t> normalize_axes(const InferenceContext& context, std::vector<int64_t> axes,
                                    int64_t rank, const std::string& what) {
  std::set<int64_t> seen;
  for (int64_t& axis : axes) {
    axis = context.normalize_axis(axis, rank, what);
    if (!seen.insert(axis).second) {
      context.fail(cat(what, " names axis ", axis, " twice"));
    }
  }
  return axes;
}

// The length of a 1-D input (shape, repeats, axes) when its shape says so.
std::optional<int64_t> vector_length(const InferenceContext& context, size_t i) {
  const Shape* shape = shape_if_known(context, i);
  if (!shape || shape->size() != 1 || !(*shape)[0].is_known()) return std::nullopt;
  return (*shape)[0].value();
}

// Unknown dims of a given rank, or unknown rank.
void set_output_rank_only(const InferenceContext& context, DType dtype,
                          std::optional<int64_t> rank) {
  if (rank) {
    context.set_output(0, dtype, Shape(static_cast<size_t>(*rank), Dim::unknown()));
  } else {
    context.set_output_unknown_rank(0, dtype);
  }
}

// A shape taken from a dims value (ConstantOfShape, Expand); known negative sizes are invalid.
Shape shape_from_dims_value(const InferenceContext& context, const std::vector<Dim>& dims,
                            const std::string& what) {
  for (const Dim& dim : dims) {
    if (dim.is_known() && dim.value() < 0) {
      context.fail(cat(what, " ", shape_to_string(dims), " has a negative size"));
    }
  }
  return dims;
}

// ---- per-op inference ----------------------------------------------------------------------

void infer_identity(InferenceContext& context) {
  const TensorType& type = context.input_type(0);
  if (Value* output = context.node().output(0)) output->type.kind = type.kind;
  if (type.shape) {
    context.set_output(0, type.dtype, *type.shape);
  } else {
    context.set_output_unknown_rank(0, type.dtype);
  }
  if (auto dims = dims_value(context, 0)) context.set_output_dims_value(0, *dims);
}

// Validates a Cast target: ONNX types rnnc cannot hold are unsupported, not invalid.
DType cast_target(const InferenceContext& context, int64_t to) {
  if (to >= 17 && to <= 23) {
    raise_unsupported(cat(context.node().describe(), ": attribute 'to' = ", to,
                          " (float8, int4, uint4 or float4) is not supported"));
  }
  std::optional<DType> dtype = dtype_from_onnx(static_cast<int32_t>(to));
  if (!dtype || *dtype == DType::kUndefined) {
    context.fail(cat("attribute 'to' = ", to, " is not an ONNX data type"));
  }
  if (*dtype == DType::kComplex64 || *dtype == DType::kComplex128) {
    raise_unsupported(cat(context.node().describe(), ": casts to ", dtype_onnx_name(*dtype),
                          " are not supported"));
  }
  return *dtype;
}

void infer_cast_to(InferenceContext& context, DType to) {
  const TensorType& type = context.input_type(0);
  if (type.shape) {
    context.set_output(0, to, *type.shape);
  } else {
    context.set_output_unknown_rank(0, to);
  }
  // Dims are integers: int32 <-> int64 casts keep them (exporters cast Shape outputs around).
  bool integral = to == DType::kInt32 || to == DType::kInt64;
  if (auto dims = dims_value(context, 0); dims && integral) {
    context.set_output_dims_value(0, *dims);
  }
}

void infer_cast(InferenceContext& context) {
  if (!context.node().has_attr("to")) context.fail("attribute 'to' is required");
  infer_cast_to(context, cast_target(context, context.node().attr_int("to", 0)));
}

void infer_cast_like(InferenceContext& context) {
  DType to = context.input_type(1).dtype;
  if (to == DType::kUndefined) context.fail("input 1 'target_type' has no known element type");
  cast_target(context, static_cast<int64_t>(to));
  infer_cast_to(context, to);
}

// Builds the tensor a Constant node holds from whichever value attribute it has.
Tensor constant_value(const InferenceContext& context) {
  const Node& node = context.node();
  static const char* const kValueAttributes[] = {"value",        "sparse_value", "value_float",
                                                 "value_floats", "value_int",    "value_ints",
                                                 "value_string", "value_strings"};
  std::vector<std::string> given;
  for (const char* name : kValueAttributes) {
    if (node.has_attr(name)) given.push_back(name);
  }
  if (given.size() != 1) {
    std::string names;
    for (const auto& name : given) names += (names.empty() ? "'" : ", '") + name + "'";
    context.fail(cat("needs exactly one value attribute, got ", given.size(),
                     given.empty() ? "" : " (" + names + ")"));
  }
  const std::string& name = given[0];
  if (name == "sparse_value") {
    raise_unsupported(cat(node.describe(), ": attribute 'sparse_value' (sparse tensors)"));
  }
  if (name != "value" && node.opset() < 12) {
    context.fail(cat("attribute '", name, "' exists from opset 12"));
  }
  if (name == "value") return *node.attr_tensor("value");
  if (name == "value_float") return Tensor::scalar<float>(node.attr_float(name, 0));
  if (name == "value_int") return Tensor::scalar<int64_t>(node.attr_int(name, 0));
  if (name == "value_floats") {
    std::vector<float> values = node.attr_floats(name);
    return Tensor::from_vector<float>({static_cast<int64_t>(values.size())}, values);
  }
  if (name == "value_ints") {
    std::vector<int64_t> values = node.attr_ints(name);
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
  }
  std::vector<std::string> strings = name == "value_string"
                                         ? std::vector<std::string>{node.attr_string(name, "")}
                                         : node.attr_strings(name);
  Tensor tensor(DType::kString, name == "value_string"
                                    ? std::vector<int64_t>{}
                                    : std::vector<int64_t>{static_cast<int64_t>(strings.size())});
  tensor.strings() = strings;
  return tensor;
}

void infer_constant(InferenceContext& context) {
  Tensor value = constant_value(context);
  context.set_output(0, value.dtype(), shape_from_values(value.shape()));
  // Downstream inference reads the data (Reshape's shape, Slice's starts, ...) from the value.
  if (Value* output = context.node().output(0)) {
    output->set_constant(std::make_shared<const Tensor>(std::move(value)));
  }
}

void infer_shape(InferenceContext& context) {
  const Shape* input = shape_if_known(context, 0);
  if (!input) {
    context.set_output(0, DType::kInt64, {Dim::unknown()});
    return;
  }
  // start/end (opset 15) clamp into [0, rank] after counting negatives from the end.
  int64_t rank = static_cast<int64_t>(input->size());
  auto clamp_axis = [rank](int64_t axis) {
    return std::clamp<int64_t>(axis < 0 ? axis + rank : axis, 0, rank);
  };
  int64_t start = 0, end = rank;
  if (context.node().opset() >= 15) {
    start = clamp_axis(context.node().attr_int("start", 0));
    end = clamp_axis(context.node().attr_int("end", rank));
  }
  std::vector<Dim> dims(input->begin() + start, input->begin() + std::max(start, end));
  context.set_output(0, DType::kInt64, {Dim(static_cast<int64_t>(dims.size()))});
  context.set_output_dims_value(0, dims);
}

void infer_size(InferenceContext& context) {
  context.set_output(0, DType::kInt64, {});
  if (const Shape* input = shape_if_known(context, 0)) {
    Dim count = product(*input);
    if (!count.is_unknown()) context.set_output_dims_value(0, {count});
  }
}

void infer_constant_of_shape(InferenceContext& context) {
  const Tensor* value = context.node().attr_tensor("value");
  if (value && value->numel() != 1) {
    context.fail(cat("attribute 'value' must hold one element, got ", value->numel()));
  }
  DType dtype = value ? value->dtype() : DType::kFloat32;
  if (context.input_type(0).dtype != DType::kInt64) {
    context.fail(
        cat("input 0 'input' must be int64, got ", dtype_onnx_name(context.input_type(0).dtype)));
  }
  if (auto dims = dims_value(context, 0)) {
    context.set_output(0, dtype, shape_from_dims_value(context, *dims, "input 0 'input'"));
  } else {
    set_output_rank_only(context, dtype, vector_length(context, 0));
  }
}

void infer_concat(InferenceContext& context) {
  const Node& node = context.node();
  if (!node.has_attr("axis")) context.fail("attribute 'axis' is required");
  DType dtype = context.input_type(0).dtype;
  const Shape* reference = nullptr;
  for (size_t i = 0; i < context.num_inputs(); ++i) {
    const TensorType& type = context.input_type(i);
    if (type.dtype != dtype) {
      context.fail(cat("input ", i, " is ", dtype_onnx_name(type.dtype), ", expected ",
                       dtype_onnx_name(dtype), " like input 0"));
    }
    if (!reference && type.shape) reference = &*type.shape;
  }
  if (!reference) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(reference->size());
  if (rank == 0) context.fail("cannot concatenate scalars (inputs must have rank >= 1)");
  size_t axis = static_cast<size_t>(
      context.normalize_axis(node.attr_int("axis", 0), rank, "attribute 'axis'"));
  Shape out = *reference;
  out[axis] = 0;
  for (size_t i = 0; i < context.num_inputs(); ++i) {
    const Shape* shape = shape_if_known(context, i);
    if (!shape) {
      out[axis] = Dim::unknown();
      continue;
    }
    if (shape->size() != out.size()) {
      context.fail(cat("input ", i, " has rank ", shape->size(), " ", shape_to_string(*shape),
                       ", expected rank ", rank));
    }
    for (size_t k = 0; k < out.size(); ++k) {
      if (k == axis) continue;
      const Dim& dim = (*shape)[k];
      if (out[k].is_known() && dim.is_known() && out[k] != dim) {
        Shape expected = out;
        expected[axis] = Dim::unknown();
        context.fail(cat("input ", i, " has shape ", shape_to_string(*shape), ", expected ",
                         shape_to_string(expected), " (all dims but axis ", axis, " equal)"));
      }
      if (out[k].is_unknown() || (!out[k].is_known() && dim.is_known())) out[k] = dim;
    }
    out[axis] = out[axis] + (*shape)[axis];
  }
  context.set_output(0, dtype, out);

  if (rank == 1) {  // concatenating dims values: Concat([1], [batch], [128]) = [1, batch, 128]
    std::vector<Dim> joined;
    for (size_t i = 0; i < context.num_inputs(); ++i) {
      auto dims = dims_value(context, i);
      if (!dims) return;
      joined.insert(joined.end(), dims->begin(), dims->end());
    }
    context.set_output_dims_value(0, joined);
  }
}

void infer_split(InferenceContext& context) {
  const Node& node = context.node();
  DType dtype = context.input_type(0).dtype;
  size_t outputs = node.num_outputs();
  const Shape* input = shape_if_known(context, 0);
  IntListOperand split = int_list_operand(context, "split", 1, 13);
  bool has_num_outputs = node.has_attr("num_outputs");
  if (has_num_outputs && node.opset() < 18) {
    context.fail("attribute 'num_outputs' exists from opset 18");
  }
  if (has_num_outputs && split.present) {
    context.fail("input 'split' and attribute 'num_outputs' are mutually exclusive");
  }
  if (!input) {
    for (size_t i = 0; i < outputs; ++i) context.set_output_unknown_rank(i, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(input->size());
  size_t axis = static_cast<size_t>(
      context.normalize_axis(node.attr_int("axis", 0), rank, "attribute 'axis'"));
  const Dim& d = (*input)[axis];
  std::vector<Dim> parts(outputs, Dim::unknown());
  int64_t n = static_cast<int64_t>(outputs);
  if (split.present) {
    if (split.dims) {
      if (split.dims->size() != outputs) {
        context.fail(cat("'split' ", shape_to_string(*split.dims), " has ", split.dims->size(),
                         " entries but the node has ", outputs, " outputs"));
      }
      for (const Dim& part : *split.dims) {
        if (part.is_known() && part.value() < 0) {
          context.fail(cat("'split' ", shape_to_string(*split.dims), " has a negative size"));
        }
      }
      Dim total = 0;
      for (const Dim& part : *split.dims) total = total + part;
      if (total.is_known() && d.is_known() && total != d) {
        context.fail(cat("'split' ", shape_to_string(*split.dims), " sums to ", total.value(),
                         " but dim ", axis, " of ", shape_to_string(*input), " is ", d.value()));
      }
      parts = *split.dims;
    }
  } else if (has_num_outputs) {
    // Equal chunks of ceil(d / n); the last one takes what is left and may be smaller.
    int64_t count = node.attr_int("num_outputs", 0);
    if (count != n) {
      context.fail(
          cat("attribute 'num_outputs' = ", count, " but the node has ", outputs, " outputs"));
    }
    if (d.is_known()) {
      int64_t chunk = (d.value() + n - 1) / n;
      int64_t last = d.value() - chunk * (n - 1);
      if (last < 0) {
        context.fail(cat("attribute 'num_outputs' = ", n, " cannot split dim ", axis, " of size ",
                         d.value(), ": chunks of ", chunk, " leave ", last,
                         " for the last output"));
      }
      std::fill(parts.begin(), parts.end(), Dim(chunk));
      parts.back() = last;
    } else {
      std::fill(parts.begin(), parts.end(), d.exact_div(n));
    }
  } else {
    if (d.is_known() && d.value() % n != 0) {
      context.fail(cat("dim ", axis, " of ", shape_to_string(*input), " (", d.value(),
                       ") does not split evenly into ", outputs, " outputs"));
    }
    std::fill(parts.begin(), parts.end(), d.exact_div(n));
  }
  for (size_t i = 0; i < outputs; ++i) {
    Shape out = *input;
    out[axis] = parts[i];
    context.set_output(i, dtype, out);
  }
}

void infer_slice(InferenceContext& context) {
  const Node& node = context.node();
  DType dtype = context.input_type(0).dtype;
  IntListOperand starts = int_list_operand(context, "starts", 1, 10);
  IntListOperand ends = int_list_operand(context, "ends", 2, 10);
  IntListOperand axes_operand = int_list_operand(context, "axes", 3, 10);
  IntListOperand steps_operand;
  if (node.opset() >= 10) steps_operand = int_list_operand(context, "steps", 4, 10);
  if (!starts.present || !ends.present) {
    context.fail(node.opset() < 10 ? "attributes 'starts' and 'ends' are required"
                                   : "inputs 1 'starts' and 2 'ends' are required");
  }
  const Shape* input = shape_if_known(context, 0);
  if (!input) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(input->size());
  Shape out = *input;
  std::optional<std::vector<int64_t>> axes;
  if (axes_operand.present) {
    axes = known_values(axes_operand.dims);
    if (axes) axes = normalize_axes(context, *axes, rank, "'axes'");
  } else if (starts.dims) {
    axes = std::vector<int64_t>();
    for (int64_t k = 0; k < static_cast<int64_t>(starts.dims->size()); ++k) axes->push_back(k);
  }
  if (!axes) {  // which axes change is not known: all may
    context.set_output(0, dtype, Shape(input->size(), Dim::unknown()));
    return;
  }
  std::optional<std::vector<int64_t>> steps = steps_operand.present
                                                  ? known_values(steps_operand.dims)
                                                  : std::vector<int64_t>(axes->size(), 1);
  auto check_length = [&](const std::optional<std::vector<Dim>>& list, const char* name) {
    if (list && list->size() != axes->size()) {
      context.fail(cat("'", name, "' ", shape_to_string(*list), " has ", list->size(),
                       " entries, 'axes' has ", axes->size()));
    }
  };
  check_length(starts.dims, "starts");
  check_length(ends.dims, "ends");
  check_length(steps_operand.present ? steps_operand.dims : std::nullopt, "steps");
  for (size_t i = 0; i < axes->size(); ++i) {
    size_t axis = static_cast<size_t>((*axes)[i]);
    if (steps && (*steps)[i] == 0) context.fail(cat("'steps' has 0 for axis ", axis));
    if (!starts.dims || !ends.dims || !steps) {
      out[axis] = Dim::unknown();
      continue;
    }
    out[axis] = slice_extent((*input)[axis], (*starts.dims)[i], (*ends.dims)[i], (*steps)[i]);
  }
  context.set_output(0, dtype, out);

  // Slicing a dims value: Shape(x)[1:] = [batch, 40].
  auto dims = dims_value(context, 0);
  auto start_values = known_values(starts.dims), end_values = known_values(ends.dims);
  if (rank == 1 && axes->size() == 1 && dims && start_values && end_values && steps) {
    SliceRange range = resolve_slice(static_cast<int64_t>(dims->size()), (*start_values)[0],
                                     (*end_values)[0], (*steps)[0]);
    std::vector<Dim> sliced;
    for (int64_t k = 0; k < range.count; ++k) {
      sliced.push_back((*dims)[static_cast<size_t>(range.start + k * (*steps)[0])]);
    }
    context.set_output_dims_value(0, sliced);
  }
}

void infer_gather(InferenceContext& context) {
  const Node& node = context.node();
  DType dtype = context.input_type(0).dtype;
  DType index_type = context.input_type(1).dtype;
  if (index_type != DType::kInt32 && index_type != DType::kInt64) {
    context.fail(
        cat("input 1 'indices' must be int32 or int64, got ", dtype_onnx_name(index_type)));
  }
  const Shape* data = shape_if_known(context, 0);
  const Shape* indices = shape_if_known(context, 1);
  if (!data || !indices) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(data->size());
  if (rank == 0) context.fail("input 0 'data' must have rank >= 1, got a scalar");
  size_t axis = static_cast<size_t>(
      context.normalize_axis(node.attr_int("axis", 0), rank, "attribute 'axis'"));
  const Dim& d = (*data)[axis];
  if (const Tensor* constant = context.input_constant(1); constant && d.is_known()) {
    for (int64_t i = 0; i < constant->numel(); ++i) {
      int64_t index = constant->get_int64(i);
      if (index < -d.value() || index >= d.value()) {
        context.fail(cat("input 1 'indices' element ", i, " = ", index,
                         " is out of range for axis ", axis, " of size ", d.value(), " (valid: [",
                         -d.value(), ", ", d.value() - 1, "])"));
      }
    }
  }
  Shape out(data->begin(), data->begin() + static_cast<int64_t>(axis));
  out.insert(out.end(), indices->begin(), indices->end());
  out.insert(out.end(), data->begin() + static_cast<int64_t>(axis) + 1, data->end());
  context.set_output(0, dtype, out);

  // Picking dims out of a dims value: Gather(Shape(x), 1) = batch.
  auto dims = dims_value(context, 0);
  auto index_values = known_values(dims_value(context, 1));
  if (dims && rank == 1 && index_values && indices->size() <= 1) {
    std::vector<Dim> picked;
    int64_t size = static_cast<int64_t>(dims->size());
    for (int64_t index : *index_values) {
      if (index < -size || index >= size) return;  // reported above when the data is constant
      picked.push_back((*dims)[static_cast<size_t>(index < 0 ? index + size : index)]);
    }
    context.set_output_dims_value(0, picked);
  }
}

void infer_gather_elements(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  const Shape* data = shape_if_known(context, 0);
  const Shape* indices = shape_if_known(context, 1);
  if (!indices) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  if (data) {
    if (data->size() != indices->size()) {
      context.fail(cat("input 1 'indices' ", shape_to_string(*indices), " must have the rank of ",
                       "input 0 'data' ", shape_to_string(*data)));
    }
    context.normalize_axis(context.node().attr_int("axis", 0), static_cast<int64_t>(data->size()),
                           "attribute 'axis'");
  }
  context.set_output(0, dtype, *indices);
}

// Known dims that differ: a contradiction inference can report.
bool dims_conflict(const Dim& a, const Dim& b) { return a.is_known() && b.is_known() && a != b; }

// ScatterElements and ScatterND: the reduction valid at the node's opset, and updates of data's
// element type. Returns that type.
DType check_scatter_operands(const InferenceContext& context) {
  const Node& node = context.node();
  std::string reduction = node.attr_string("reduction", "none");
  int since = reduction == "none"                        ? 0
              : reduction == "add" || reduction == "mul" ? 16
              : reduction == "max" || reduction == "min" ? 18
                                                         : -1;
  if (since < 0 || node.opset() < since) {
    context.fail(cat("attribute 'reduction' = '", reduction, "' is not valid at this opset ",
                     "(none; add, mul from 16; max, min from 18)"));
  }
  DType dtype = context.input_type(0).dtype;
  if (context.input_type(2).dtype != dtype) {
    context.fail(cat("input 2 'updates' is ", dtype_onnx_name(context.input_type(2).dtype),
                     ", expected ", dtype_onnx_name(dtype), " like input 0 'data'"));
  }
  return dtype;
}

void infer_scatter_elements(InferenceContext& context) {
  const Node& node = context.node();
  if (node.op_type() == "Scatter" && node.opset() >= 11) {
    context.fail("Scatter was replaced by ScatterElements in opset 11");
  }
  DType dtype = check_scatter_operands(context);
  const Shape* data = shape_if_known(context, 0);
  const Shape* indices = shape_if_known(context, 1);
  const Shape* updates = shape_if_known(context, 2);
  if (indices && updates) {
    bool same = indices->size() == updates->size();
    for (size_t k = 0; same && k < indices->size(); ++k) {
      same =
          !((*indices)[k].is_known() && (*updates)[k].is_known() && (*indices)[k] != (*updates)[k]);
    }
    if (!same) {
      context.fail(cat("input 2 'updates' ", shape_to_string(*updates), " must have the shape ",
                       "of input 1 'indices' ", shape_to_string(*indices)));
    }
  }
  if (!data) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  if (indices && indices->size() != data->size()) {
    context.fail(cat("input 1 'indices' ", shape_to_string(*indices), " must have the rank of ",
                     "input 0 'data' ", shape_to_string(*data)));
  }
  context.normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(data->size()),
                         "attribute 'axis'");
  context.set_output(0, dtype, *data);
}


// GatherND and ScatterND: int64 indices of rank >= 1 whose last dim k (when known) is within
// [min_k, rank(data) - batch_dims], and batch dims shared with data. Returns k when known.
std::optional<int64_t> check_nd_indices(const InferenceContext& context, const Shape* data,
                                        const Shape* indices, int64_t batch_dims, int64_t min_k) {
  DType index_type = context.input_type(1).dtype;
  if (index_type != DType::kInt64) {
    context.fail(cat("input 1 'indices' must be int64, got ", dtype_onnx_name(index_type)));
  }
  if (data && data->empty()) context.fail("input 0 'data' must have rank >= 1, got a scalar");
  if (!indices) return std::nullopt;
  if (indices->empty()) context.fail("input 1 'indices' must have rank >= 1, got a scalar");
  int64_t q = static_cast<int64_t>(indices->size());
  if (!data) return std::nullopt;
  int64_t r = static_cast<int64_t>(data->size());
  if (batch_dims >= std::min(q, r)) {
    context.fail(cat("attribute 'batch_dims' = ", batch_dims, " must be below the ranks of input 0 ",
                     "'data' ", shape_to_string(*data), " and input 1 'indices' ",
                     shape_to_string(*indices)));
  }
  for (size_t b = 0; b < static_cast<size_t>(batch_dims); ++b) {
    if (dims_conflict((*data)[b], (*indices)[b])) {
      context.fail(cat("input 1 'indices' ", shape_to_string(*indices), " and input 0 'data' ",
                       shape_to_string(*data), " differ in batch dim ", b));
    }
  }
  const Dim& k = indices->back();
  if (!k.is_known()) return std::nullopt;
  if (k.value() < min_k || k.value() > r - batch_dims) {
    context.fail(cat("input 1 'indices' ", shape_to_string(*indices), " has tuples of ", k.value(),
                     " indices, expected ", min_k, " to ", r - batch_dims, " for input 0 'data' ",
                     shape_to_string(*data)));
  }
  return k.value();
}

void infer_gather_nd(InferenceContext& context) {
  const Node& node = context.node();
  if (node.has_attr("batch_dims") && node.opset() < 12) {
    context.fail("attribute 'batch_dims' needs opset 12 or later");
  }
  int64_t batch_dims = node.attr_int("batch_dims", 0);
  if (batch_dims < 0) context.fail(cat("attribute 'batch_dims' = ", batch_dims, ", must be >= 0"));
  DType dtype = context.input_type(0).dtype;
  const Shape* data = shape_if_known(context, 0);
  const Shape* indices = shape_if_known(context, 1);
  std::optional<int64_t> k = check_nd_indices(context, data, indices, batch_dims, 1);
  if (!k) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  // indices.shape[:-1] + data.shape[batch_dims + k:]
  Shape out(indices->begin(), indices->end() - 1);
  out.insert(out.end(), data->begin() + batch_dims + *k, data->end());
  context.set_output(0, dtype, out);
}

void infer_scatter_nd(InferenceContext& context) {
  DType dtype = check_scatter_operands(context);
  const Shape* data = shape_if_known(context, 0);
  const Shape* indices = shape_if_known(context, 1);
  const Shape* updates = shape_if_known(context, 2);
  std::optional<int64_t> k = check_nd_indices(context, data, indices, 0, 0);
  if (k && updates) {
    // updates.shape == indices.shape[:-1] + data.shape[k:]
    Shape expected(indices->begin(), indices->end() - 1);
    expected.insert(expected.end(), data->begin() + *k, data->end());
    bool fits = expected.size() == updates->size();
    for (size_t i = 0; fits && i < expected.size(); ++i) {
      fits = !dims_conflict(expected[i], (*updates)[i]);
    }
    if (!fits) {
      context.fail(cat("input 2 'updates' ", shape_to_string(*updates), " must have shape ",
                       shape_to_string(expected), " (indices.shape[:-1] + data.shape[k:])"));
    }
  }
  if (data) {
    context.set_output(0, dtype, *data);
  } else {
    context.set_output_unknown_rank(0, dtype);
  }
}

// DepthToSpace and SpaceToDepth: N x C x H x W (unknown dims when the rank is unknown) with a
// positive blocksize.
Shape block_operands(const InferenceContext& context, int64_t& b) {
  const Node& node = context.node();
  if (!node.has_attr("blocksize")) context.fail("attribute 'blocksize' is required");
  b = node.attr_int("blocksize", 0);
  if (b < 1) context.fail(cat("attribute 'blocksize' = ", b, ", must be > 0"));
  const Shape* input = shape_if_known(context, 0);
  if (input && input->size() != 4) {
    context.fail(cat("input 0 'input' has shape ", shape_to_string(*input),
                     ", expected rank 4 (N x C x H x W)"));
  }
  return input ? *input : Shape(4, Dim::unknown());
}

// x / b for a dim the op requires to be a multiple of b.
Dim divide_dim(const InferenceContext& context, const Dim& x, int64_t b, const char* what) {
  if (x.is_known() && x.value() % b != 0) {
    context.fail(cat(what, " ", x.value(), " is not a multiple of ", b));
  }
  return x.is_unknown() ? x : x.exact_div(b);
}

void infer_depth_to_space(InferenceContext& context) {
  const Node& node = context.node();
  if (node.has_attr("mode") && node.opset() < 11) {
    context.fail("attribute 'mode' needs opset 11 or later");
  }
  std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") {
    context.fail(cat("attribute 'mode' = '", mode, "', expected DCR or CRD"));
  }
  int64_t b = 0;
  Shape x = block_operands(context, b);
  context.set_output(0, context.input_type(0).dtype,
                     {x[0], divide_dim(context, x[1], b * b, "input 0 channels C (blocksize^2)"),
                      x[2] * Dim(b), x[3] * Dim(b)});
}

void infer_space_to_depth(InferenceContext& context) {
  int64_t b = 0;
  Shape x = block_operands(context, b);
  context.set_output(0, context.input_type(0).dtype,
                     {x[0], x[1] * Dim(b * b), divide_dim(context, x[2], b, "input 0 height H"),
                      divide_dim(context, x[3], b, "input 0 width W")});
}

void infer_squeeze(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  IntListOperand axes_operand = int_list_operand(context, "axes", 1, 13);
  const Shape* input = shape_if_known(context, 0);
  if (!input) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(input->size());
  Shape out;
  if (!axes_operand.present) {
    // Without axes every size-1 dim goes; a dim we cannot prove is or is not 1 leaves the output
    // rank unknown.
    for (const Dim& dim : *input) {
      if (!dim.is_known()) {
        context.set_output_unknown_rank(0, dtype);
        return;
      }
      if (dim.value() != 1) out.push_back(dim);
    }
  } else {
    auto axes = known_values(axes_operand.dims);
    if (!axes) {
      auto count = vector_length(context, 1);
      set_output_rank_only(context, dtype, count ? std::optional(rank - *count) : std::nullopt);
      return;
    }
    std::vector<int64_t> squeezed = normalize_axes(context, *axes, rank, "'axes'");
    for (int64_t axis : squeezed) {
      const Dim& dim = (*input)[static_cast<size_t>(axis)];
      if (dim.is_known() && dim.value() != 1) {
        context.fail(cat("'axes' names axis ", axis, " of ", shape_to_string(*input),
                         ", which has size ", dim.value(), " (only size-1 dims can be squeezed)"));
      }
    }
    for (int64_t k = 0; k < rank; ++k) {
      if (std::find(squeezed.begin(), squeezed.end(), k) == squeezed.end()) {
        out.push_back((*input)[static_cast<size_t>(k)]);
      }
    }
  }
  context.set_output(0, dtype, out);
  if (auto dims = dims_value(context, 0); dims && out.size() <= 1) {
    context.set_output_dims_value(0, *dims);
  }
}

void infer_unsqueeze(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  IntListOperand axes_operand = int_list_operand(context, "axes", 1, 13);
  if (!axes_operand.present) {
    context.fail(context.node().opset() < 13 ? "attribute 'axes' is required"
                                             : "input 1 'axes' is required");
  }
  const Shape* input = shape_if_known(context, 0);
  if (!input) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(input->size());
  auto axes = known_values(axes_operand.dims);
  if (!axes) {
    auto count = vector_length(context, 1);
    set_output_rank_only(context, dtype, count ? std::optional(rank + *count) : std::nullopt);
    return;
  }
  int64_t out_rank = rank + static_cast<int64_t>(axes->size());
  std::vector<int64_t> inserted = normalize_axes(context, *axes, out_rank, "'axes'");
  Shape out;
  size_t next = 0;
  for (int64_t k = 0; k < out_rank; ++k) {
    bool is_new = std::find(inserted.begin(), inserted.end(), k) != inserted.end();
    out.push_back(is_new ? Dim(1) : (*input)[next++]);
  }
  context.set_output(0, dtype, out);
  if (auto dims = dims_value(context, 0); dims && out.size() <= 1) {
    context.set_output_dims_value(0, *dims);
  }
}

void infer_reshape(InferenceContext& context) {
  const Node& node = context.node();
  DType dtype = context.input_type(0).dtype;
  if (context.input_type(1).dtype != DType::kInt64) {
    context.fail(
        cat("input 1 'shape' must be int64, got ", dtype_onnx_name(context.input_type(1).dtype)));
  }
  if (node.opset() < 14 && node.has_attr("allowzero")) {
    context.fail("attribute 'allowzero' exists from opset 14");
  }
  bool allow_zero = node.attr_int("allowzero", 0) != 0;
  auto requested = dims_value(context, 1);
  if (!requested) {
    set_output_rank_only(context, dtype, vector_length(context, 1));
    return;
  }
  const Shape* input = shape_if_known(context, 0);
  std::string target = shape_to_string(*requested);
  Shape out(requested->size());
  std::optional<size_t> inferred;  // the -1 entry
  bool has_zero = false;
  for (size_t i = 0; i < requested->size(); ++i) {
    const Dim& entry = (*requested)[i];
    if (!entry.is_known()) {
      // A dim from a Shape chain is a size (>= 1 by assumption): it is the output dim as is.
      out[i] = provably_nonnegative(entry) ? entry : Dim::unknown();
      continue;
    }
    int64_t value = entry.value();
    if (value < -1) {
      context.fail(cat("input 1 'shape' ", target, " has ", value, " at position ", i,
                       " (entries must be >= -1)"));
    }
    if (value == -1) {
      if (inferred) context.fail(cat("input 1 'shape' ", target, " has more than one -1"));
      inferred = i;
    } else if (value == 0 && !allow_zero) {  // 0 copies the input's dim
      if (input && i >= input->size()) {
        context.fail(cat("input 1 'shape' ", target, " copies dim ", i, " (0) but input 0 ",
                         shape_to_string(*input), " has rank ", input->size()));
      }
      out[i] = input ? (*input)[i] : Dim::unknown();
    } else {
      has_zero = has_zero || value == 0;
      out[i] = value;
    }
  }
  if (allow_zero && has_zero && inferred) {
    context.fail(
        cat("input 1 'shape' ", target, " has both 0 and -1, which allowzero = 1 forbids"));
  }
  Dim total = input ? product(*input) : Dim::unknown();
  auto mismatch = [&] {
    context.fail(cat("cannot reshape ", shape_to_string(*input), " (", total.value(),
                     " elements) to ", target));
  };
  if (inferred) {
    out[*inferred] = 1;
    Dim rest = product(out);
    if (total.is_known() && rest.is_known()) {
      if (rest.value() == 0 || total.value() % rest.value() != 0) mismatch();
      out[*inferred] = total.value() / rest.value();
    } else {
      out[*inferred] = total.exact_div(rest);
    }
  } else if (total.is_known() && product(out).is_known() && total != product(out)) {
    mismatch();
  }
  context.set_output(0, dtype, out);
  if (auto dims = dims_value(context, 0); dims && out.size() <= 1) {
    context.set_output_dims_value(0, *dims);
  }
}

void infer_transpose(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  const Shape* input = shape_if_known(context, 0);
  if (!input) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(input->size());
  std::vector<int64_t> perm;
  for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
  perm = context.node().attr_ints("perm", perm);
  if (perm.size() != input->size()) {
    context.fail(cat("attribute 'perm' = ", shape_text(perm), " has ", perm.size(),
                     " entries for input ", shape_to_string(*input)));
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t k = 0; k < rank; ++k) {
    if (sorted[static_cast<size_t>(k)] != k) {
      context.fail(cat("attribute 'perm' = ", shape_text(perm),
                       " is not a permutation of the axes of ", shape_to_string(*input)));
    }
  }
  Shape out;
  for (int64_t axis : perm) out.push_back((*input)[static_cast<size_t>(axis)]);
  context.set_output(0, dtype, out);
}

void infer_flatten(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  const Shape* input = shape_if_known(context, 0);
  if (!input) {
    context.set_output(0, dtype, {Dim::unknown(), Dim::unknown()});
    return;
  }
  // Unlike most axes, Flatten's may equal the rank (everything goes to the first dim).
  int64_t rank = static_cast<int64_t>(input->size());
  int64_t axis = context.node().attr_int("axis", 1);
  if (axis < -rank || axis > rank) {
    context.fail(cat("attribute 'axis' = ", axis, " is out of range for rank ", rank, " (valid: [",
                     -rank, ", ", rank, "])"));
  }
  size_t split = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  context.set_output(0, dtype, {product(*input, 0, split), product(*input, split)});
}

void infer_expand(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  if (context.input_type(1).dtype != DType::kInt64) {
    context.fail(
        cat("input 1 'shape' must be int64, got ", dtype_onnx_name(context.input_type(1).dtype)));
  }
  const Shape* input = shape_if_known(context, 0);
  auto requested = dims_value(context, 1);
  if (!requested) {
    // Unknown entries still broadcast: a dim > 1 of the input stays, a 1 becomes unknown.
    auto length = vector_length(context, 1);
    if (!length) {
      context.set_output_unknown_rank(0, dtype);
      return;
    }
    requested = std::vector<Dim>(static_cast<size_t>(*length), Dim::unknown());
  }
  Shape target = shape_from_dims_value(context, *requested, "input 1 'shape'");
  if (!input) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  context.set_output(0, dtype, broadcast_shapes(*input, target, context));
}

void infer_tile(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  if (context.input_type(1).dtype != DType::kInt64) {
    context.fail(
        cat("input 1 'repeats' must be int64, got ", dtype_onnx_name(context.input_type(1).dtype)));
  }
  const Shape* input = shape_if_known(context, 0);
  if (!input) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  auto repeats = dims_value(context, 1);
  if (!repeats) {
    context.set_output(0, dtype, Shape(input->size(), Dim::unknown()));
    return;
  }
  if (repeats->size() != input->size()) {
    context.fail(cat("input 1 'repeats' ", shape_to_string(*repeats), " has ", repeats->size(),
                     " entries for input 0 ", shape_to_string(*input), " of rank ", input->size()));
  }
  Shape out;
  for (size_t k = 0; k < input->size(); ++k) {
    const Dim& times = (*repeats)[k];
    if (times.is_known() && times.value() < 0) {
      context.fail(cat("input 1 'repeats' ", shape_to_string(*repeats), " has a negative entry"));
    }
    out.push_back((*input)[k] * times);
  }
  context.set_output(0, dtype, out);
}

void infer_pad(InferenceContext& context) {
  const Node& node = context.node();
  DType dtype = context.input_type(0).dtype;
  std::string mode = node.attr_string("mode", "constant");
  bool known_mode = mode == "constant" || mode == "reflect" || mode == "edge" ||
                    (mode == "wrap" && node.opset() >= 19);
  if (!known_mode) {
    context.fail(cat("attribute 'mode' = '", mode, "' is not one of constant, reflect, edge",
                     node.opset() >= 19 ? ", wrap" : ""));
  }
  IntListOperand pads = int_list_operand(context, "pads", 1, 11);
  if (!pads.present) {
    context.fail(node.opset() < 11 ? "attribute 'pads' is required" : "input 1 'pads' is required");
  }
  if (node.opset() >= 11 && context.has_input(2) && context.input_type(2).dtype != dtype) {
    context.fail(cat("input 2 'constant_value' is ", dtype_onnx_name(context.input_type(2).dtype),
                     ", expected ", dtype_onnx_name(dtype), " like input 0 'data'"));
  }
  IntListOperand axes_operand;
  if (node.opset() >= 18)
    axes_operand = int_list_operand(context, "axes", 3, 18);
  else if (context.has_input(3))
    context.fail("input 3 'axes' exists from opset 18");
  const Shape* input = shape_if_known(context, 0);
  if (!input) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(input->size());
  std::optional<std::vector<int64_t>> axes;
  if (axes_operand.present) {
    axes = known_values(axes_operand.dims);
    if (axes) axes = normalize_axes(context, *axes, rank, "'axes'");
  } else {
    axes = std::vector<int64_t>();
    for (int64_t k = 0; k < rank; ++k) axes->push_back(k);
  }
  if (!axes || !pads.dims) {
    context.set_output(0, dtype, Shape(input->size(), Dim::unknown()));
    return;
  }
  const std::vector<Dim>& amounts = *pads.dims;
  if (amounts.size() != 2 * axes->size()) {
    context.fail(cat("'pads' ", shape_to_string(amounts), " has ", amounts.size(),
                     " entries, expected 2 * ", axes->size(), " (begin and end per axis)"));
  }
  Shape out = *input;
  for (size_t i = 0; i < axes->size(); ++i) {
    size_t axis = static_cast<size_t>((*axes)[i]);
    const Dim& begin = amounts[i];
    const Dim& end = amounts[i + axes->size()];
    Dim padded = (*input)[axis] + begin + end;
    if (padded.is_known() && padded.value() < 0) {
      context.fail(cat("'pads' ", shape_to_string(amounts), " makes dim ", axis, " of ",
                       shape_to_string(*input), " negative (", padded.value(), ")"));
    }
    bool pads_axis =
        !(begin.is_known() && begin.value() <= 0 && end.is_known() && end.value() <= 0);
    const Dim& d = (*input)[axis];
    if (mode != "constant" && pads_axis && d.is_known() && d.value() == 0) {
      context.fail(cat("mode '", mode, "' cannot pad axis ", axis, " of ", shape_to_string(*input),
                       ": it has no elements to repeat"));
    }
    out[axis] = padded;
  }
  context.set_output(0, dtype, out);
}

void infer_range(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  static const DType kAllowed[] = {DType::kFloat32, DType::kFloat64, DType::kInt16, DType::kInt32,
                                   DType::kInt64};
  if (std::find(std::begin(kAllowed), std::end(kAllowed), dtype) == std::end(kAllowed)) {
    context.fail(cat("input 0 'start' is ", dtype_onnx_name(dtype),
                     "; Range takes float, double, int16, int32 or int64"));
  }
  static const char* const kNames[] = {"start", "limit", "delta"};
  for (size_t i = 0; i < 3; ++i) {
    const TensorType& type = context.input_type(i);
    if (type.dtype != dtype) {
      context.fail(cat("input ", i, " '", kNames[i], "' is ", dtype_onnx_name(type.dtype),
                       ", expected ", dtype_onnx_name(dtype), " like input 0 'start'"));
    }
    if (type.shape && !type.shape->empty()) {
      context.fail(cat("input ", i, " '", kNames[i], "' must be a scalar, got shape ",
                       shape_to_string(*type.shape)));
    }
  }
  const Tensor* start = context.input_constant(0);
  const Tensor* limit = context.input_constant(1);
  const Tensor* delta = context.input_constant(2);
  if (delta && delta->numel() == 1 && delta->get_double(0) == 0) {
    context.fail("input 2 'delta' is 0");
  }
  Dim count = Dim::unknown();
  if (start && limit && delta && is_floating(dtype)) {
    // The kernel computes the count the same way, in double.
    double elements =
        std::ceil((limit->get_double(0) - start->get_double(0)) / delta->get_double(0));
    count = std::max<int64_t>(0, static_cast<int64_t>(elements));
  } else if (!is_floating(dtype)) {
    // Exact from constants; symbolic for Range(0, seq, 1) and its reverse.
    auto first = start ? std::vector<Dim>{start->get_int64(0)} : dims_value(context, 0);
    auto last = limit ? std::vector<Dim>{limit->get_int64(0)} : dims_value(context, 1);
    auto step =
        delta ? std::vector<int64_t>{delta->get_int64(0)} : known_values(dims_value(context, 2));
    if (first && last && step && first->size() == 1 && last->size() == 1) {
      int64_t s = (*step)[0];
      const Dim& high = s > 0 ? (*last)[0] : (*first)[0];
      const Dim& low = s > 0 ? (*first)[0] : (*last)[0];
      int64_t distance = 0;
      if (!high.is_known() || !low.is_known()) {
        count = dim_step_count(high - low, s);
      } else if (!__builtin_sub_overflow(high.value(), low.value(), &distance)) {
        count = step_count(distance, s);
      }
    }
  }
  context.set_output(0, dtype, {count});
}

void infer_trilu(InferenceContext& context) {
  DType dtype = context.input_type(0).dtype;
  if (context.has_input(1)) {
    const TensorType& k = context.input_type(1);
    if (k.dtype != DType::kInt64) {
      context.fail(cat("input 1 'k' must be int64, got ", dtype_onnx_name(k.dtype)));
    }
    if (k.shape && !(k.shape->empty() || (k.shape->size() == 1 && (*k.shape)[0].is_known() &&
                                          (*k.shape)[0].value() == 1))) {
      context.fail(cat("input 1 'k' has shape ", shape_to_string(*k.shape), ", expected a scalar"));
    }
  }
  int64_t upper = context.node().attr_int("upper", 1);
  if (upper != 0 && upper != 1)
    context.fail(cat("attribute 'upper' = ", upper, ", must be 0 or 1"));
  const Shape* input = shape_if_known(context, 0);
  if (!input) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  if (input->size() < 2) {
    context.fail(
        cat("input 0 'input' has shape ", shape_to_string(*input), ", expected rank >= 2"));
  }
  context.set_output(0, dtype, *input);
}

void infer_eye_like(InferenceContext& context) {
  const Node& node = context.node();
  DType dtype = context.input_type(0).dtype;
  static const std::set<DType> kTypes = {DType::kFloat16, DType::kFloat32, DType::kFloat64,
                                         DType::kInt8,    DType::kInt16,   DType::kInt32,
                                         DType::kInt64,   DType::kUInt8,   DType::kUInt16,
                                         DType::kUInt32,  DType::kUInt64,  DType::kBool};
  if (!kTypes.count(dtype)) {
    context.fail(cat("input 0 'input' has element type ", dtype_onnx_name(dtype),
                     ", expected a numeric type or bool (not bfloat16 or string)"));
  }
  if (node.has_attr("dtype")) {
    int64_t code = node.attr_int("dtype", 0);
    std::optional<DType> given = dtype_from_onnx(static_cast<int32_t>(code));
    if (!given || !kTypes.count(*given)) {
      context.fail(cat("attribute 'dtype' = ", code,
                       " is not a numeric type or bool (not bfloat16 or string)"));
    }
    dtype = *given;
  }
  const Shape* input = shape_if_known(context, 0);
  if (input && input->size() != 2) {
    context.fail(cat("input 0 'input' has shape ", shape_to_string(*input), ", expected rank 2"));
  }
  context.set_output(0, dtype, input ? *input : Shape{Dim::unknown(), Dim::unknown()});
}

// OneHot: indices (any numeric type) with depth (numeric, one element) inserted at `axis`;
// the output has the type of values ([off, on]).
void infer_one_hot(InferenceContext& context) {
  for (size_t i = 0; i < 2; ++i) {
    DType dtype = context.input_type(i).dtype;
    if (!is_floating(dtype) && !is_integer(dtype)) {
      context.fail(cat("input ", i, i == 0 ? " 'indices'" : " 'depth'", " has element type ",
                       dtype_onnx_name(dtype), ", expected a numeric type"));
    }
  }
  DType dtype = context.input_type(2).dtype;
  if (const Shape* values = shape_if_known(context, 2)) {
    if (values->size() != 1 || ((*values)[0].is_known() && (*values)[0].value() != 2)) {
      context.fail(cat("input 2 'values' has shape ", shape_to_string(*values),
                       ", expected [2] (off_value, on_value)"));
    }
  }
  const Shape* indices = shape_if_known(context, 0);
  if (!indices) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  if (indices->empty()) context.fail("input 0 'indices' must have rank >= 1, got a scalar");
  int64_t rank = static_cast<int64_t>(indices->size()) + 1;
  size_t axis = static_cast<size_t>(
      context.normalize_axis(context.node().attr_int("axis", -1), rank, "attribute 'axis'"));
  Dim depth = Dim::unknown();
  if (const Tensor* constant = context.input_constant(1); constant && constant->numel() == 1) {
    double value = std::trunc(constant->get_double(0));
    if (!(value >= 1)) context.fail(cat("input 1 'depth' = ", value, ", must be >= 1"));
    if (value < 0x1p62) depth = Dim(static_cast<int64_t>(value));
  }
  Shape out = *indices;
  out.insert(out.begin() + static_cast<int64_t>(axis), depth);
  context.set_output(0, dtype, out);
}

void infer_compress(InferenceContext& context) {
  const Node& node = context.node();
  DType dtype = context.input_type(0).dtype;
  context.require_input_type(1, "1 'condition'", {DType::kBool});
  if (const Shape* condition = shape_if_known(context, 1); condition && condition->size() != 1) {
    context.fail(
        cat("input 1 'condition' has shape ", shape_to_string(*condition), ", expected rank 1"));
  }
  const Shape* input = shape_if_known(context, 0);
  if (!node.has_attr("axis")) {
    context.set_output(0, dtype, {Dim::unknown()});
    return;
  }
  if (!input) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  int64_t rank = static_cast<int64_t>(input->size());
  int64_t axis = node.attr_int("axis", 0);
  if (axis < 0 && node.opset() < 11) {
    context.fail(cat("attribute 'axis' = ", axis, " is negative, which needs opset 11 or later"));
  }
  Shape out = *input;
  out[static_cast<size_t>(context.normalize_axis(axis, rank, "attribute 'axis'"))] = Dim::unknown();
  context.set_output(0, dtype, out);
}

void infer_reverse_sequence(InferenceContext& context) {
  const Node& node = context.node();
  DType dtype = context.input_type(0).dtype;
  context.require_input_type(1, "1 'sequence_lens'", {DType::kInt64});
  int64_t batch_axis = node.attr_int("batch_axis", 1), time_axis = node.attr_int("time_axis", 0);
  for (int64_t axis : {batch_axis, time_axis}) {
    if (axis != 0 && axis != 1) {
      context.fail(cat("attributes 'batch_axis' = ", batch_axis, " and 'time_axis' = ", time_axis,
                       " must be 0 and 1 in some order"));
    }
  }
  if (batch_axis == time_axis) {
    context.fail(cat("attributes 'batch_axis' and 'time_axis' are both ", batch_axis));
  }
  const Shape* input = shape_if_known(context, 0);
  if (!input) {
    context.set_output_unknown_rank(0, dtype);
    return;
  }
  if (input->size() < 2) {
    context.fail(
        cat("input 0 'input' has shape ", shape_to_string(*input), ", expected rank >= 2"));
  }
  if (const Shape* lengths = shape_if_known(context, 1)) {
    const Dim& batch = (*input)[static_cast<size_t>(batch_axis)];
    if (lengths->size() != 1 || dims_conflict((*lengths)[0], batch)) {
      context.fail(cat("input 1 'sequence_lens' has shape ", shape_to_string(*lengths),
                       ", expected [", batch.to_string(), "] (one length per batch entry)"));
    }
  }
  context.set_output(0, dtype, *input);
}

// Unique: Y has the input's rank with the axis unknown (1-D without axis); indices and counts are
// [?], inverse_indices as long as the axis (or the flattened input).
void infer_unique(InferenceContext& context) {
  const Node& node = context.node();
  DType dtype = context.input_type(0).dtype;
  int64_t sorted = node.attr_int("sorted", 1);
  if (sorted != 0 && sorted != 1)
    context.fail(cat("attribute 'sorted' = ", sorted, ", must be 0 or 1"));
  const Shape* input = shape_if_known(context, 0);
  Dim length = Dim::unknown();
  if (!node.has_attr("axis")) {
    if (input) length = product(*input);
    context.set_output(0, dtype, {Dim::unknown()});
  } else if (input) {
    size_t axis = static_cast<size_t>(context.normalize_axis(
        node.attr_int("axis", 0), static_cast<int64_t>(input->size()), "attribute 'axis'"));
    length = (*input)[axis];
    Shape out = *input;
    out[axis] = Dim::unknown();
    context.set_output(0, dtype, out);
  } else {
    context.set_output_unknown_rank(0, dtype);
  }
  context.set_output(1, DType::kInt64, {Dim::unknown()});
  context.set_output(2, DType::kInt64, {length});
  context.set_output(3, DType::kInt64, {Dim::unknown()});
}

void infer_non_zero(InferenceContext& context) {
  const Shape* input = shape_if_known(context, 0);
  // A scalar counts as a 1-element vector (numpy); the count of nonzeros depends on the data.
  Dim rank =
      input ? Dim(std::max<int64_t>(1, static_cast<int64_t>(input->size()))) : Dim::unknown();
  context.set_output(0, DType::kInt64, {rank, Dim::unknown()});
}

}  // namespace

void register_tensor_schemas(std::vector<OpSchema>& registry) {
  // op type, since opset, inputs min..max (-1: variadic), outputs min..max, inference.
  const OpSchema schemas[] = {
      {"Cast", 1, 1, 1, 1, 1, infer_cast},
      {"CastLike", 15, 2, 2, 1, 1, infer_cast_like},
      {"Compress", 9, 2, 2, 1, 1, infer_compress},
      {"Concat", 1, 1, -1, 1, 1, infer_concat},
      {"Constant", 1, 0, 0, 1, 1, infer_constant},
      {"ConstantOfShape", 9, 1, 1, 1, 1, infer_constant_of_shape},
      {"DepthToSpace", 1, 1, 1, 1, 1, infer_depth_to_space},
      {"EyeLike", 9, 1, 1, 1, 1, infer_eye_like},
      {"Expand", 8, 2, 2, 1, 1, infer_expand},
      {"Flatten", 1, 1, 1, 1, 1, infer_flatten},
      {"Gather", 1, 2, 2, 1, 1, infer_gather},
      {"GatherElements", 11, 2, 2, 1, 1, infer_gather_elements},
      {"GatherND", 11, 2, 2, 1, 1, infer_gather_nd},
      {"Identity", 1, 1, 1, 1, 1, infer_identity, /*any_value_kind=*/true},
      {"NonZero", 9, 1, 1, 1, 1, infer_non_zero},
      {"OneHot", 9, 3, 3, 1, 1, infer_one_hot},
      {"Pad", 1, 1, 4, 1, 1, infer_pad},
      {"Range", 11, 3, 3, 1, 1, infer_range},
      {"Reshape", 5, 2, 2, 1, 1, infer_reshape},
      {"ReverseSequence", 10, 2, 2, 1, 1, infer_reverse_sequence},
      {"Scatter", 9, 3, 3, 1, 1, infer_scatter_elements},
      {"ScatterElements", 11, 3, 3, 1, 1, infer_scatter_elements},
      {"ScatterND", 11, 3, 3, 1, 1, infer_scatter_nd},
      {"Shape", 1, 1, 1, 1, 1, infer_shape},
      {"Size", 1, 1, 1, 1, 1, infer_size},
      {"Slice", 1, 1, 5, 1, 1, infer_slice},
      {"SpaceToDepth", 1, 1, 1, 1, 1, infer_space_to_depth},
      {"Split", 1, 1, 2, 1, -1, infer_split},
      {"Squeeze", 1, 1, 2, 1, 1, infer_squeeze},
      {"Tile", 6, 2, 2, 1, 1, infer_tile},
      {"Transpose", 1, 1, 1, 1, 1, infer_transpose},
      {"Trilu", 14, 1, 2, 1, 1, infer_trilu},
      {"Unique", 11, 1, 1, 1, 4, infer_unique},
      {"Unsqueeze", 1, 1, 2, 1, 1, infer_unsqueeze},
  };
  registry.insert(registry.end(), std::begin(schemas), std::end(schemas));
}

}  // namespace rnnc
