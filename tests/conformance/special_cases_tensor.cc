// Special cases of the shape and data-movement ops: the integer operands (shapes, axes, indices,
// bounds, pads, repeats) whose legal values depend on the data's shape, and Cast's target type.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ir/error.h"
#include "tests/conformance/draft.h"

namespace rnnc::conformance {

namespace {

// An int32 or int64 tensor holding exactly these values (no trip through double).
Tensor index_tensor(DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  Tensor tensor(dtype, std::move(shape));
  RNNC_CHECK(static_cast<int64_t>(values.size()) == tensor.numel(), "index_tensor: ", values.size(),
             " values for ", tensor.numel(), " elements");
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kInt32)
      tensor.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    else
      tensor.data<int64_t>()[i] = values[i];
  }
  return tensor;
}

Tensor index_vector(DType dtype, const std::vector<int64_t>& values) {
  return index_tensor(dtype, {static_cast<int64_t>(values.size())}, values);
}

int64_t index_max(DType dtype) {
  return dtype == DType::kInt32 ? std::numeric_limits<int32_t>::max()
                                : std::numeric_limits<int64_t>::max();
}

int64_t index_min(DType dtype) {
  return dtype == DType::kInt32 ? std::numeric_limits<int32_t>::min()
                                : std::numeric_limits<int64_t>::min();
}

int64_t normalized_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// `axis` written negative (counting from the end) about a third of the time.
int64_t maybe_negative(int64_t axis, int64_t rank, Rng& rng) {
  return rng.chance(0.3) ? axis - rank : axis;
}

// Distinct axes out of [0, rank), in random order.
std::vector<int64_t> random_axes(int64_t rank, int64_t count, Rng& rng) {
  std::vector<int64_t> all(static_cast<size_t>(rank));
  std::iota(all.begin(), all.end(), 0);
  rng.shuffle(all);
  all.resize(static_cast<size_t>(count));
  return all;
}

// ---- Cast, CastLike --------------------------------------------------------------------------

// Strings the spec defines a cast to float types for: plain and scientific notation, and the
// special literals in any case.
const std::vector<std::string> kFloatStrings = {
    "0",  "1",   "-3",    "+7",   "42",  "300",  "3.14", "-0.5", "2.5", "1e-5", "1E8", "2.5e3",
    "-0", "0.1", "65504", "1e40", "INF", "-INF", "+INF", "NaN",  "inf", "nan",  "-Inf"};
// Integer strings every integer target holds (a fractional string to an integer type is
// undefined behaviour in the spec).
const std::vector<std::string> kSignedStrings = {"0", "1", "-3", "+7", "42", "-0", "127", "-128"};
const std::vector<std::string> kUnsignedStrings = {"0", "1", "7", "+7", "42", "127", "255"};

void cast(Draft& draft) {
  DType from = draft.types.at("T1");
  DType to = draft.types.at("T2");
  if (draft.spec.op_type == "Cast") draft.set_int("to", static_cast<int64_t>(to));
  if (from == DType::kString) draft.tags.insert("from_string");
  if (to == DType::kString) draft.tags.insert("to_string");
  if (is_floating(from) && is_integer(to)) draft.tags.insert("float_to_int");
  OperandDraft& input = *draft.input("input");
  if (from == DType::kString && to != DType::kString) {
    const std::vector<std::string>& choices = is_floating(to)         ? kFloatStrings
                                              : is_signed_integer(to) ? kSignedStrings
                                              : to == DType::kBool
                                                  ? std::vector<std::string>{"0", "1"}
                                                  : kUnsignedStrings;
    Tensor data(DType::kString, input.shape);
    for (auto& s : data.strings()) s = draft.rng.pick(choices);
    draft.set_data(input, data);
  } else if (is_floating(from) && is_integer(to)) {
    // Values the target holds (out of range is undefined in the spec), so truncation toward zero
    // is what is tested; huge, Inf and NaN still come from the boundary classes.
    draft.fill(input);
    Tensor data = input.data.clone();
    for (int64_t i = 0; i < data.numel(); ++i) {
      double x = data.get_double(i) * 20;
      data.set_double(i, is_signed_integer(to) ? std::max(-100.0, std::min(100.0, x))
                                               : std::min(200.0, std::fabs(x)));
    }
    input.data = data;
  }
}

// ---- Concat ----------------------------------------------------------------------------------

void concat(Draft& draft) {
  std::vector<int64_t> base = draft.primary_shape;
  int64_t rank = static_cast<int64_t>(base.size());
  int64_t axis = normalized_axis(draft.attr_int("axis", 0), rank);
  for (auto& operand : draft.inputs) {
    operand.shape = base;
    operand.shape[static_cast<size_t>(axis)] =
        draft.rng.chance(0.1) ? 0 : draft.rng.uniform_int(1, 4);
  }
}

// ---- Constant, ConstantOfShape ----------------------------------------------------------------

void constant(Draft& draft) {
  DType type = draft.types.at("T");
  OperandDraft value;
  value.spec = &draft.spec.outputs[0];
  value.dtype = type;
  value.shape = draft.primary_shape;
  draft.fill(value);
  int64_t rank = static_cast<int64_t>(value.shape.size());
  bool scalar_form = rank == 0 && draft.rng.chance(0.5);
  bool list_form = rank == 1 && draft.rng.chance(0.5);
  const Tensor& t = value.data;
  if (type == DType::kFloat32 && (scalar_form || list_form)) {
    std::vector<float> floats(t.data<float>(), t.data<float>() + t.numel());
    if (scalar_form)
      draft.set_float("value_float", floats[0]);
    else
      draft.set_floats("value_floats", floats);
  } else if (type == DType::kInt64 && (scalar_form || list_form)) {
    std::vector<int64_t> ints(t.data<int64_t>(), t.data<int64_t>() + t.numel());
    if (scalar_form)
      draft.set_int("value_int", ints[0]);
    else
      draft.set_ints("value_ints", ints);
  } else if (type == DType::kString && (scalar_form || list_form)) {
    if (scalar_form)
      draft.set_string("value_string", t.strings()[0]);
    else
      draft.set_strings("value_strings", t.strings());
  } else {
    draft.set_tensor("value", t);
    return;
  }
  draft.tags.insert(scalar_form ? "scalar_form" : "list_form");
}

void constant_of_shape(Draft& draft) {
  int64_t rank = draft.rng.uniform_int(0, 4);
  std::vector<int64_t> dims = draft.random_dims(rank, 1, 4);
  if (rank > 0 && draft.forced_is(Boundary::kDim0)) dims[0] = 0;
  if (rank > 0 && draft.forced_is(Boundary::kDimLarge)) dims[0] = kLargeDim;
  draft.set_data(*draft.input("input"), make_int64s(dims));
  DType type = draft.types.at("T2");
  if (type == DType::kFloat32 && draft.attr_rng.chance(0.3)) return;  // default: float 0
  OperandDraft value;
  value.spec = &draft.spec.outputs[0];
  value.dtype = type;
  value.shape = {1};
  draft.fill(value, &draft.attr_rng);
  draft.set_tensor("value", value.data);
}

// ---- Expand, Flatten, Tile, Transpose ---------------------------------------------------------

void expand(Draft& draft) {
  const std::vector<int64_t>& input = draft.input("input")->shape;
  int64_t rank = static_cast<int64_t>(input.size());
  int64_t target_rank = draft.rng.uniform_int(std::max<int64_t>(0, rank - 2), rank + 2);
  std::vector<int64_t> target(static_cast<size_t>(target_rank));
  for (int64_t k = 0; k < target_rank; ++k) {
    int64_t from_end = target_rank - k;  // 1 = last
    if (from_end <= rank) {
      int64_t d = input[static_cast<size_t>(rank - from_end)];
      target[static_cast<size_t>(k)] =
          d == 1 ? draft.rng.uniform_int(1, 3) : (draft.rng.chance(0.3) ? 1 : d);
    } else {
      target[static_cast<size_t>(k)] = draft.rng.uniform_int(1, 3);
    }
  }
  draft.set_data(*draft.input("shape"), make_int64s(target));
}

void flatten(Draft& draft) {
  int64_t rank = static_cast<int64_t>(draft.input("input")->shape.size());
  int64_t axis = draft.attr_int("axis", 1);
  if (axis < -rank || axis > rank) draft.set_int("axis", draft.attr_rng.uniform_int(-rank, rank));
}

void tile(Draft& draft) {
  int64_t rank = static_cast<int64_t>(draft.input("input")->shape.size());
  std::vector<int64_t> repeats;
  for (int64_t k = 0; k < rank; ++k) {
    repeats.push_back(draft.rng.chance(0.1) ? 0 : draft.rng.uniform_int(1, 3));
  }
  draft.set_data(*draft.input("repeats"), make_int64s(repeats));
}

void transpose(Draft& draft) {
  int64_t rank = static_cast<int64_t>(draft.input("data")->shape.size());
  if (draft.attr_rng.chance(0.2)) return;  // default: reversed
  draft.set_ints("perm", random_axes(rank, rank, draft.attr_rng));
}

// ---- Gather, GatherElements, Scatter, ScatterElements -----------------------------------------

void gather(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  OperandDraft& indices = *draft.input("indices");
  int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t d = data.shape[static_cast<size_t>(normalized_axis(draft.attr_int("axis", 0), rank))];
  std::vector<int64_t> shape =
      draft.random_dims(draft.rng.uniform_int(0, 3), draft.rng.chance(0.1) ? 0 : 1, 3);
  if (d == 0) shape = {0};
  std::vector<int64_t> values;
  int64_t count =
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  for (int64_t i = 0; i < count; ++i) values.push_back(draft.rng.uniform_int(-d, d - 1));
  draft.set_data(indices, index_tensor(indices.dtype, shape, values));
}

void gather_elements(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  OperandDraft& indices = *draft.input("indices");
  int64_t rank = static_cast<int64_t>(data.shape.size());
  size_t axis = static_cast<size_t>(normalized_axis(draft.attr_int("axis", 0), rank));
  std::vector<int64_t> shape;
  for (size_t k = 0; k < data.shape.size(); ++k) {
    int64_t d = data.shape[k];
    shape.push_back(k == axis ? (d == 0 ? 0 : draft.rng.uniform_int(1, 4))
                              : (d == 0 ? 0 : draft.rng.uniform_int(1, d)));
  }
  int64_t d = data.shape[axis];
  int64_t count =
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  std::vector<int64_t> values;
  for (int64_t i = 0; i < count; ++i) values.push_back(draft.rng.uniform_int(-d, d - 1));
  draft.set_data(indices, index_tensor(indices.dtype, shape, values));
}

// The scatters' reduction as drawn, made valid: none for strings, max/min only from opset 18.
std::string valid_reduction(Draft& draft, DType dtype) {
  std::string reduction = draft.attr_string("reduction", "none");
  if (dtype == DType::kString && reduction != "none") reduction = "none";
  if (draft.opset < 18 && (reduction == "max" || reduction == "min")) reduction = "add";
  if (draft.has_attr("reduction")) draft.set_string("reduction", reduction);
  return reduction;
}

// Scatter/ScatterElements: indices no larger than data off the axis; without a reduction each
// lane along the axis gets distinct indices (a repeated index would make the order matter, which
// the spec leaves open); with one, repeats are welcome.
void scatter(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  OperandDraft& indices = *draft.input("indices");
  OperandDraft& updates = *draft.input("updates");
  std::string reduction = valid_reduction(draft, data.dtype);
  int64_t rank = static_cast<int64_t>(data.shape.size());
  size_t axis = static_cast<size_t>(normalized_axis(draft.attr_int("axis", 0), rank));
  int64_t d = data.shape[axis];
  std::vector<int64_t> shape;
  for (size_t k = 0; k < data.shape.size(); ++k) {
    int64_t limit = data.shape[k];
    if (k == axis && reduction != "none") limit = d == 0 ? 0 : 4;
    shape.push_back(limit == 0 ? 0 : draft.rng.uniform_int(1, limit));
  }
  // Lanes: every index position with the axis coordinate dropped.
  int64_t along = shape[axis];
  int64_t count =
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  int64_t inner = std::accumulate(shape.begin() + static_cast<int64_t>(axis) + 1, shape.end(),
                                  int64_t{1}, std::multiplies<int64_t>());
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (int64_t lane = 0; along > 0 && lane < count / along; ++lane) {
    int64_t outer = lane / inner, in = lane % inner;
    std::vector<int64_t> picks;
    if (reduction == "none") {
      picks = random_axes(d, along, draft.rng);
    } else {
      for (int64_t j = 0; j < along; ++j) picks.push_back(draft.rng.uniform_int(0, d - 1));
    }
    for (int64_t j = 0; j < along; ++j) {
      int64_t value = picks[static_cast<size_t>(j)];
      values[static_cast<size_t>((outer * along + j) * inner + in)] =
          draft.rng.chance(0.3) ? value - d : value;
    }
  }
  draft.set_data(indices, index_tensor(indices.dtype, shape, values));
  updates.shape = shape;
  updates.dtype = data.dtype;
  draft.fill(updates);
}

// ---- GatherND, ScatterND -----------------------------------------------------------------------

int64_t product_of(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  return std::accumulate(dims.begin() + static_cast<int64_t>(begin),
                         dims.begin() + static_cast<int64_t>(end), int64_t{1},
                         std::multiplies<int64_t>());
}

// `count` k-tuples into dims [first, first + k) of `dims`, as flat int64 values, written negative
// (counting from the end) 3 times in 10. Distinct tuples when `distinct` (then count <= the
// number of tuples there are).
std::vector<int64_t> draw_tuples(Draft& draft, const std::vector<int64_t>& dims, size_t first,
                                 int64_t k, int64_t count, bool distinct) {
  std::vector<int64_t> extent(dims.begin() + static_cast<int64_t>(first),
                              dims.begin() + static_cast<int64_t>(first) + k);
  int64_t total = product_of(extent, 0, extent.size());
  std::vector<int64_t> flats = distinct ? random_axes(total, count, draft.rng)
                                        : std::vector<int64_t>(static_cast<size_t>(count));
  if (!distinct) {
    for (int64_t& flat : flats) flat = draft.rng.uniform_int(0, total - 1);
  }
  std::vector<int64_t> values;
  for (int64_t flat : flats) {
    std::vector<int64_t> tuple(static_cast<size_t>(k));
    for (int64_t j = k; j-- > 0;) {
      int64_t d = extent[static_cast<size_t>(j)];
      tuple[static_cast<size_t>(j)] = flat % d - (draft.rng.chance(0.3) ? d : 0);
      flat /= d;
    }
    values.insert(values.end(), tuple.begin(), tuple.end());
  }
  return values;
}

// Dims of rank 0..2 holding `count` tuples (rank 0 only for one tuple).
std::vector<int64_t> tuple_dims(Draft& draft, int64_t count) {
  if (count == 1 && draft.rng.chance(0.3)) return {};
  if (count % 2 == 0 && draft.rng.chance(0.4)) return {2, count / 2};
  return {count};
}

// ScatterND: k-tuples (k in [1, rank]) into data's first k dims; updates are
// indices.shape[:-1] + data.shape[k:]. Without a reduction no tuple repeats.
void scatter_nd(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  OperandDraft& indices = *draft.input("indices");
  OperandDraft& updates = *draft.input("updates");
  std::string reduction = valid_reduction(draft, data.dtype);
  int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t k = draft.rng.uniform_int(1, rank);
  int64_t tuples = product_of(data.shape, 0, static_cast<size_t>(k));
  bool distinct = reduction == "none";
  int64_t count =
      tuples == 0 ? 0 : draft.rng.uniform_int(1, distinct ? std::min<int64_t>(tuples, 6) : 6);
  std::vector<int64_t> leading = count == 0 ? std::vector<int64_t>{0} : tuple_dims(draft, count);
  std::vector<int64_t> shape = leading;
  shape.push_back(k);
  draft.set_data(indices, index_tensor(DType::kInt64, shape,
                                       draw_tuples(draft, data.shape, 0, k, count, distinct)));
  updates.shape = leading;
  updates.shape.insert(updates.shape.end(), data.shape.begin() + k, data.shape.end());
  updates.dtype = data.dtype;
  draft.fill(updates);
  if (k < rank) draft.tags.insert("slices");
}

// GatherND: batch_dims below the rank; indices are data's batch dims, tuple dims, then k in
// [1, rank - batch_dims], with tuples drawn per batch entry.
void gather_nd(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  OperandDraft& indices = *draft.input("indices");
  int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t batch_dims = std::min<int64_t>(draft.attr_int("batch_dims", 0), rank - 1);
  if (draft.has_attr("batch_dims")) draft.set_int("batch_dims", batch_dims);
  size_t first = static_cast<size_t>(batch_dims);
  int64_t k = draft.rng.uniform_int(1, rank - batch_dims);
  int64_t tuples = product_of(data.shape, first, first + static_cast<size_t>(k));
  int64_t count = tuples == 0 ? 0 : draft.rng.uniform_int(1, 4);
  std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + batch_dims);
  std::vector<int64_t> leading = count == 0 ? std::vector<int64_t>{0} : tuple_dims(draft, count);
  shape.insert(shape.end(), leading.begin(), leading.end());
  shape.push_back(k);
  std::vector<int64_t> values;
  for (int64_t b = 0; b < product_of(data.shape, 0, first); ++b) {
    std::vector<int64_t> batch = draw_tuples(draft, data.shape, first, k, count, false);
    values.insert(values.end(), batch.begin(), batch.end());
  }
  draft.set_data(indices, index_tensor(DType::kInt64, shape, values));
  if (batch_dims > 0) draft.tags.insert("batch_dims");
}

// ---- DepthToSpace, SpaceToDepth ---------------------------------------------------------------

// N x C x H x W with C a multiple of blocksize^2.
void depth_to_space(Draft& draft) {
  OperandDraft& input = draft.inputs[0];
  int64_t b = draft.attr_int("blocksize", 1);
  input.shape[1] = b * b * std::max<int64_t>(1, std::min<int64_t>(input.shape[1], 3));
}

// N x C x H x W with H and W multiples of blocksize.
void space_to_depth(Draft& draft) {
  OperandDraft& input = draft.inputs[0];
  int64_t b = draft.attr_int("blocksize", 1);
  for (size_t axis : {size_t{2}, size_t{3}}) {
    input.shape[axis] = b * std::min<int64_t>(input.shape[axis], 3);
  }
}

// ---- Trilu, EyeLike -----------------------------------------------------------------------------

// Trilu: a scalar k over every diagonal of the trailing N x M matrices and one past each corner.
void trilu(Draft& draft) {
  OperandDraft& input = *draft.input("input");
  OperandDraft* k = draft.input("k");
  if (!k || !k->present) return;
  int64_t rows = input.shape[input.shape.size() - 2], columns = input.shape.back();
  draft.set_data(*k, make_int64s({draft.rng.uniform_int(-(rows + 1), columns + 1)}, true));
}

// EyeLike: dtype names T2; when T2 is the input's type it is left out 1 time in 4 (the default).
void eye_like(Draft& draft) {
  DType out = draft.types.at("T2");
  if (out == draft.types.at("T1") && draft.rng.chance(0.25)) return;
  draft.set_int("dtype", static_cast<int64_t>(out));
}

// ---- OneHot, Compress
// ----------------------------------------------------------------------------

// OneHot: depth 1..5, whole-number indices around [-depth, depth - 1] (unsigned types: from 0),
// values [off, on] distinct; the axis clamped into the output rank.
void one_hot(Draft& draft) {
  OperandDraft& indices = *draft.input("indices");
  OperandDraft& depth = *draft.input("depth");
  OperandDraft& values = *draft.input("values");
  int64_t out_rank = static_cast<int64_t>(indices.shape.size()) + 1;
  if (draft.has_attr("axis")) {
    int64_t axis = draft.attr_int("axis", -1);
    draft.set_int("axis", std::clamp<int64_t>(axis, -out_rank, out_rank - 1));
  }
  int64_t d = draft.rng.uniform_int(1, 5);
  draft.set_data(depth, make_tensor(depth.dtype, {}, {static_cast<double>(d)}));
  bool is_unsigned = indices.dtype == DType::kUInt8 || indices.dtype == DType::kUInt16 ||
                     indices.dtype == DType::kUInt32 || indices.dtype == DType::kUInt64;
  int64_t lowest = is_unsigned || draft.opset < 11 ? 0 : -d - 2;
  int64_t count = std::accumulate(indices.shape.begin(), indices.shape.end(), int64_t{1},
                                  std::multiplies<int64_t>());
  std::vector<double> picks;
  for (int64_t i = 0; i < count; ++i) {
    picks.push_back(static_cast<double>(draft.rng.uniform_int(lowest, d + 1)));
  }
  draft.set_data(indices, make_tensor(indices.dtype, indices.shape, picks));
  values.shape = {2};
  draft.fill(values);
  if (values.dtype != DType::kString && values.data.get_double(0) == values.data.get_double(1)) {
    Tensor fixed = values.data.clone();
    fixed.set_double(0, 0);
    fixed.set_double(1, 1);
    draft.set_data(values, fixed);
  }
}

// Compress: a random condition along the axis (or the flattened input), sometimes shorter.
void compress(Draft& draft) {
  OperandDraft& input = *draft.input("input");
  OperandDraft& condition = *draft.input("condition");
  if (draft.opset < 11 && draft.attr_int("axis", 0) < 0) {
    draft.set_int("axis", draft.attr_int("axis", 0) + static_cast<int64_t>(input.shape.size()));
  }
  int64_t d = std::accumulate(input.shape.begin(), input.shape.end(), int64_t{1},
                              std::multiplies<int64_t>());
  if (draft.has_attr("axis")) {
    d = input.shape[static_cast<size_t>(
        normalized_axis(draft.attr_int("axis", 0), static_cast<int64_t>(input.shape.size())))];
  }
  int64_t length = d > 0 && draft.rng.chance(0.25) ? draft.rng.uniform_int(0, d - 1) : d;
  std::vector<double> picks;
  for (int64_t i = 0; i < length; ++i) picks.push_back(draft.rng.chance(0.5) ? 1 : 0);
  draft.set_data(condition, make_tensor(DType::kBool, {length}, picks));
  if (length < d) draft.tags.insert("short_condition");
}

// ---- ReverseSequence, Unique ----------------------------------------------------------------------

void reverse_sequence(Draft& draft) {
  OperandDraft& input = *draft.input("input");
  int64_t batch_axis = draft.attr_rng.chance(0.5) ? 1 : 0;
  if (batch_axis != 1 || draft.attr_rng.chance(0.5)) {
    draft.set_int("batch_axis", batch_axis);
    draft.set_int("time_axis", 1 - batch_axis);
  }
  int64_t batch = input.shape[static_cast<size_t>(batch_axis)];
  int64_t steps = input.shape[static_cast<size_t>(1 - batch_axis)];
  std::vector<int64_t> lengths;
  for (int64_t b = 0; b < batch; ++b) lengths.push_back(draft.rng.uniform_int(0, steps));
  draft.set_data(*draft.input("sequence_lens"), make_int64s(lengths));
}

// Unique: elements drawn from a few values so that repeats occur (strings and bools included).
void unique(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  draft.fill(x);
  Tensor data = x.data.clone();
  for (int64_t i = 0; i < data.numel(); ++i) {
    int64_t pick = draft.rng.uniform_int(0, 2);
    if (data.dtype() == DType::kString) {
      data.strings()[static_cast<size_t>(i)] = std::string(1, static_cast<char>('a' + pick));
    } else if (draft.rng.chance(0.7)) {
      data.set_double(i, static_cast<double>(pick));
    }
  }
  draft.set_data(x, data);
}

// ---- NonZero ----------------------------------------------------------------------------------

void sparse(Draft& draft) {
  OperandDraft& x = draft.inputs[0];
  draft.fill(x);
  Tensor data = x.data.clone();
  for (int64_t i = 0; i < data.numel(); ++i) {
    if (draft.rng.chance(0.5)) data.set_double(i, 0);
  }
  x.data = data;
}

// ---- Pad --------------------------------------------------------------------------------------

void pad(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  std::string mode = draft.attr_string("mode", "constant");
  if (mode == "wrap" && draft.opset < 19) {
    mode = "constant";
    draft.set_string("mode", mode);
  }
  int64_t rank = static_cast<int64_t>(data.shape.size());
  std::vector<int64_t> axes;
  OperandDraft* axes_input = draft.input("axes");
  if (axes_input && axes_input->present) {
    axes = random_axes(rank, draft.rng.uniform_int(1, rank), draft.rng);
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  size_t n = axes.size();
  std::vector<int64_t> pads(2 * n);
  for (size_t i = 0; i < n; ++i) {
    int64_t d = data.shape[static_cast<size_t>(axes[i])];
    for (size_t side : {i, i + n}) {
      if (mode == "constant") {
        pads[side] = draft.rng.uniform_int(-std::min<int64_t>(d, 2), 3);
      } else if (d == 0) {
        pads[side] = 0;  // nothing to repeat
      } else {
        // reflect stays below the dim (ONNX Runtime's limit); edge and wrap may go beyond.
        int64_t high = mode == "reflect" ? d - 1 : 3;
        pads[side] = draft.rng.uniform_int(-std::min<int64_t>(d - 1, 1), high);
      }
    }
    while (d + pads[i] + pads[i + n] < 0) ++pads[i];
    if (pads[i] < 0 || pads[i + n] < 0) draft.tags.insert("crop");
  }
  if (draft.attr_exists("pads")) {
    draft.set_ints("pads", pads);
  } else {
    draft.set_data(*draft.input("pads"), make_int64s(pads));
  }
  if (axes_input && axes_input->present) {
    for (auto& a : axes) a = maybe_negative(a, rank, draft.rng);
    draft.set_data(*axes_input, index_vector(axes_input->dtype, axes));
  }
}

// ---- Range ------------------------------------------------------------------------------------

void range(Draft& draft) {
  DType type = draft.types.at("T");
  bool integer = is_integer(type);
  double start =
      integer ? static_cast<double>(draft.rng.uniform_int(-10, 10)) : draft.rng.uniform(-10, 10);
  double delta;
  if (integer) {
    delta = static_cast<double>(draft.rng.chance(0.5) ? draft.rng.uniform_int(1, 4)
                                                      : -draft.rng.uniform_int(1, 4));
  } else {
    delta = draft.rng.uniform(0.1, 3) * (draft.rng.chance(0.5) ? 1 : -1);
  }
  int64_t steps = draft.rng.uniform_int(-2, 30);
  double limit = start + delta * static_cast<double>(steps);
  limit += integer ? static_cast<double>(draft.rng.uniform_int(-1, 1))
                   : draft.rng.uniform(-0.5, 0.5) * std::fabs(delta);
  draft.set_data(*draft.input("start"), make_tensor(type, {}, {start}));
  draft.set_data(*draft.input("limit"), make_tensor(type, {}, {limit}));
  draft.set_data(*draft.input("delta"), make_tensor(type, {}, {delta}));
  if (steps <= 0) draft.tags.insert("empty_range");
}

// ---- Reshape ----------------------------------------------------------------------------------

void reshape(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  int64_t numel =
      std::accumulate(data.shape.begin(), data.shape.end(), int64_t{1}, std::multiplies<int64_t>());
  bool allowzero = draft.attr_int("allowzero", 0) != 0;
  std::vector<int64_t> target;
  if (numel == 0) {
    // Empty data: keep its dims, written as 0 (copy) or literally, or move the 0 elsewhere.
    target = data.shape;
    if (allowzero) {
      draft.rng.shuffle(target);
    } else {
      for (size_t k = 0; k < target.size(); ++k) {
        if (draft.rng.chance(0.5)) target[k] = 0;
      }
    }
  } else {
    // Split numel's prime factors over a random number of dims.
    std::vector<int64_t> primes;
    int64_t rest = numel;
    for (int64_t p = 2; p * p <= rest; ++p) {
      while (rest % p == 0) {
        primes.push_back(p);
        rest /= p;
      }
    }
    if (rest > 1) primes.push_back(rest);
    int64_t rank = draft.rng.uniform_int(numel == 1 ? 0 : 1, 4);
    target.assign(static_cast<size_t>(rank), 1);
    for (int64_t p : primes) {
      if (rank == 0) break;
      target[static_cast<size_t>(draft.rng.uniform_int(0, rank - 1))] *= p;
    }
    if (rank > 0 && draft.rng.chance(0.3)) {
      target[static_cast<size_t>(draft.rng.uniform_int(0, rank - 1))] = -1;
      draft.tags.insert("infer_dim");
    }
    if (!allowzero) {
      for (size_t k = 0; k < target.size() && k < data.shape.size(); ++k) {
        if (target[k] == data.shape[k] && draft.rng.chance(0.3)) {
          target[k] = 0;
          draft.tags.insert("copy_dim");
        }
      }
    }
  }
  draft.set_data(*draft.input("shape"), make_int64s(target));
}

// ---- Slice ------------------------------------------------------------------------------------

void slice(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  int64_t rank = static_cast<int64_t>(data.shape.size());
  bool inputs = !draft.attr_exists("starts");
  OperandDraft* axes_input = inputs ? draft.input("axes") : nullptr;
  OperandDraft* steps_input = inputs ? draft.input("steps") : nullptr;
  DType index = inputs ? draft.input("starts")->dtype : DType::kInt64;
  bool explicit_axes = inputs ? axes_input->present : draft.rng.chance(0.6);
  int64_t count = draft.rng.uniform_int(1, rank);
  std::vector<int64_t> axes =
      explicit_axes ? random_axes(rank, count, draft.rng) : random_axes(count, count, draft.rng);
  if (!explicit_axes) std::sort(axes.begin(), axes.end());
  std::vector<int64_t> starts, ends, steps;
  bool stepped = inputs && steps_input->present;
  for (int64_t a : axes) {
    int64_t d = data.shape[static_cast<size_t>(a)];
    int64_t step = 1;
    if (stepped) {
      step = draft.rng.uniform_int(1, 3) * (draft.rng.chance(0.4) ? -1 : 1);
    }
    auto bound = [&](bool is_end) {
      double u = draft.rng.uniform(0, 1);
      if (u < 0.08) {
        draft.tags.insert("bound_at_limit");
        bool high = (step > 0) == is_end;
        return high ? index_max(index) : index_min(index);
      }
      return draft.rng.uniform_int(-d - 2, d + 2);
    };
    starts.push_back(bound(false));
    ends.push_back(bound(true));
    steps.push_back(step);
    if (step < 0) draft.tags.insert("negative_step");
  }
  if (explicit_axes) {
    for (auto& a : axes) a = maybe_negative(a, rank, draft.rng);
  }
  if (!inputs) {
    draft.set_ints("starts", starts);
    draft.set_ints("ends", ends);
    if (explicit_axes) draft.set_ints("axes", axes);
    return;
  }
  draft.set_data(*draft.input("starts"), index_vector(index, starts));
  draft.set_data(*draft.input("ends"), index_vector(index, ends));
  if (axes_input->present) draft.set_data(*axes_input, index_vector(axes_input->dtype, axes));
  if (steps_input->present) draft.set_data(*steps_input, index_vector(steps_input->dtype, steps));
}

// ---- Split ------------------------------------------------------------------------------------

void split(Draft& draft) {
  OperandDraft& input = *draft.input("input");
  int64_t rank = static_cast<int64_t>(input.shape.size());
  size_t axis = static_cast<size_t>(normalized_axis(draft.attr_int("axis", 0), rank));
  int64_t parts = static_cast<int64_t>(draft.outputs.size());
  for (auto& output : draft.outputs) output.present = true;
  int64_t d = input.shape[axis];
  bool has_input = draft.input("split") != nullptr;
  bool explicit_sizes = has_input ? draft.input("split")->present : draft.attr_rng.chance(0.5);
  if (!explicit_sizes && draft.opset >= 18) {
    // num_outputs: chunks of ceil(d / n), the last one taking the rest (which may be short).
    if (d > 0 && (parts - 1) * ((d + parts - 1) / parts) <= d) {
      draft.set_int("num_outputs", parts);
      draft.tags.insert("num_outputs");
      return;
    }
    explicit_sizes = true;  // the chunks would overrun: give the sizes
    if (has_input) draft.input("split")->present = true;
  }
  if (!explicit_sizes) {
    input.shape[axis] = parts * draft.rng.uniform_int(d == 0 ? 0 : 1, 3);  // equal parts
    draft.tags.insert("equal_parts");
    return;
  }
  std::vector<int64_t> sizes(static_cast<size_t>(parts), 0);
  for (int64_t i = 0; i < d; ++i) ++sizes[static_cast<size_t>(draft.rng.uniform_int(0, parts - 1))];
  if (has_input) {
    draft.set_data(*draft.input("split"), make_int64s(sizes));
  } else {
    draft.set_ints("split", sizes);
  }
  draft.tags.insert("split_sizes");
}

// ---- Squeeze, Unsqueeze -----------------------------------------------------------------------

void squeeze(Draft& draft) {
  OperandDraft& data = *draft.input("data");
  int64_t rank = static_cast<int64_t>(data.shape.size());
  for (auto& d : data.shape) {
    if (draft.rng.chance(0.4)) d = 1;
  }
  std::vector<int64_t> ones;
  for (int64_t a = 0; a < rank; ++a) {
    if (data.shape[static_cast<size_t>(a)] == 1) ones.push_back(a);
  }
  draft.rng.shuffle(ones);
  OperandDraft* axes_input = draft.input("axes");
  bool given = axes_input ? axes_input->present : draft.rng.chance(0.7);
  if (ones.empty() || !given) {
    if (axes_input) axes_input->present = false;
    draft.tags.insert("all_ones");
    return;
  }
  ones.resize(static_cast<size_t>(draft.rng.uniform_int(1, static_cast<int64_t>(ones.size()))));
  for (auto& a : ones) a = maybe_negative(a, rank, draft.rng);
  if (axes_input)
    draft.set_data(*axes_input, make_int64s(ones));
  else
    draft.set_ints("axes", ones);
}

void unsqueeze(Draft& draft) {
  int64_t rank = static_cast<int64_t>(draft.input("data")->shape.size());
  int64_t added = draft.rng.uniform_int(1, 2);
  std::vector<int64_t> axes = random_axes(rank + added, added, draft.rng);
  for (auto& a : axes) a = maybe_negative(a, rank + added, draft.rng);
  OperandDraft* axes_input = draft.input("axes");
  if (axes_input)
    draft.set_data(*axes_input, make_int64s(axes));
  else
    draft.set_ints("axes", axes);
}

}  // namespace

void add_tensor_special_cases(std::map<std::string, SpecialCase>& table) {
  table["cast"] = cast;
  table["concat"] = concat;
  table["constant"] = constant;
  table["constant_of_shape"] = constant_of_shape;
  table["expand"] = expand;
  table["flatten"] = flatten;
  table["gather"] = gather;
  table["gather_elements"] = gather_elements;
  table["gather_nd"] = gather_nd;
  table["reverse_sequence"] = reverse_sequence;
  table["unique"] = unique;
  table["one_hot"] = one_hot;
  table["compress"] = compress;
  table["eye_like"] = eye_like;
  table["trilu"] = trilu;
  table["depth_to_space"] = depth_to_space;
  table["space_to_depth"] = space_to_depth;
  table["scatter"] = scatter;
  table["scatter_nd"] = scatter_nd;
  table["sparse"] = sparse;
  table["pad"] = pad;
  table["range"] = range;
  table["reshape"] = reshape;
  table["slice"] = slice;
  table["split"] = split;
  table["squeeze"] = squeeze;
  table["tile"] = tile;
  table["transpose"] = transpose;
  table["unsqueeze"] = unsqueeze;
}

}  // namespace rnnc::conformance
