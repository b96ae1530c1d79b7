// Reference kernels for the data-movement ops (Concat, Split, Slice, Gather, Reshape, Pad, Cast,
// ...). Each is one plain function that follows the spec text. Most work out, for each output
// element, which input element it copies (its "source offset"); one dtype-generic copy, strings
// included, then moves the data. Only Cast, Range and the scatters' reductions look at values.
//
// Errors in attributes are the model's (context.fail); errors in values read from input tensors
// (indices out of range, a shape that does not fit) are data-dependent (context.fail_input).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "ir/reference/kernel.h"
#include "ir/slice_bounds.h"

namespace rnnc {

namespace {


// ---- dtype-generic element movement --------------------------------------------------------

// Copies `count` consecutive elements between tensors of the same dtype.
void copy_elements(const Tensor& from, int64_t from_offset, Tensor& to, int64_t to_offset,
                   int64_t count) {
  if (count <= 0) return;
  if (from.dtype() == DType::kString) {
    std::copy_n(from.strings().begin() + from_offset, count, to.strings().begin() + to_offset);
    return;
  }
  size_t size = dtype_size(from.dtype());
  std::memcpy(
      static_cast<uint8_t*>(to.raw_data()) + static_cast<size_t>(to_offset) * size,
      static_cast<const uint8_t*>(from.raw_data()) + static_cast<size_t>(from_offset) * size,
      static_cast<size_t>(count) * size);
}

template <typename Word>
void copy_words(const Tensor& source, const std::vector<int64_t>& offsets, Tensor& out) {
  const Word* in = static_cast<const Word*>(source.raw_data());
  Word* to = static_cast<Word*>(out.raw_data());
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] >= 0) to[i] = in[offsets[i]];
  }
}

// out[i] = source[offsets[i]], leaving out[i] as it is where offsets[i] < 0 (Pad's constant).
void copy_from_offsets(const Tensor& source, const std::vector<int64_t>& offsets, Tensor& out) {
  switch (source.dtype() == DType::kString ? 0 : dtype_size(source.dtype())) {
    case 1:
      copy_words<uint8_t>(source, offsets, out);
      return;
    case 2:
      copy_words<uint16_t>(source, offsets, out);
      return;
    case 4:
      copy_words<uint32_t>(source, offsets, out);
      return;
    case 8:
      copy_words<uint64_t>(source, offsets, out);
      return;
    default:
      for (size_t i = 0; i < offsets.size(); ++i) {
        if (offsets[i] >= 0) copy_elements(source, offsets[i], out, static_cast<int64_t>(i), 1);
      }
  }
}

// Sets every element of `out` to the single element of `value`.
void fill(Tensor& out, const Tensor& value) {
  for (int64_t i = 0; i < out.numel(); ++i) copy_elements(value, 0, out, i, 1);
}

// Calls fn(index) for every multi-index of `shape`, in row-major order.
template <typename Fn>
void for_each_index(const std::vector<int64_t>& shape, Fn&& fn) {
  if (shape_numel(shape) == 0) return;
  std::vector<int64_t> index(shape.size(), 0);
  for (;;) {
    fn(static_cast<const std::vector<int64_t>&>(index));
    size_t k = shape.size();
    for (; k > 0; --k) {
      if (++index[k - 1] < shape[k - 1]) break;
      index[k - 1] = 0;
    }
    if (k == 0) return;
  }
}

// The source offset of every output element of `out_shape`, from a per-element function. Callers
// create the output tensor first, so a shape too large to allocate fails there with a clean error
// rather than here, at 8 bytes per element.
template <typename Fn>
std::vector<int64_t> offsets_for(const std::vector<int64_t>& out_shape, Fn&& source_offset) {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(shape_numel(out_shape)));
  for_each_index(out_shape, [&](const std::vector<int64_t>& index) {
    offsets.push_back(source_offset(index));
  });
  return offsets;
}

// ---- operands ------------------------------------------------------------------------------

int64_t normalize_axis(const KernelContext& context, int64_t axis, int64_t rank,
                       const std::string& what) {
  if (axis < -rank || axis >= rank) {
    context.fail(cat(what, " = ", axis, " is out of range for rank ", rank, " (valid: [", -rank,
                     ", ", rank - 1, "])"));
  }
  return axis < 0 ? axis + rank : axis;
}

// An int list that is attribute `name` before opset `input_since` and input `index` from it.
std::optional<std::vector<int64_t>> int_list(const KernelContext& context, const std::string& name,
                                             size_t index, int input_since) {
  if (context.node.opset() < input_since) {
    if (!context.node.has_attr(name)) return std::nullopt;
    return context.node.attr_ints(name);
  }
  if (!context.has_input(index)) return std::nullopt;
  return tensor_to_int64s(context.input(index));
}

// Axes read from an input: out-of-range and repeated ones are data errors.
std::vector<int64_t> normalize_axes(const KernelContext& context, const std::vector<int64_t>& given,
                                    int64_t rank, const std::string& what) {
  std::vector<int64_t> axes = given;
  std::set<int64_t> seen;
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) {
      context.fail_input(
          cat(what, " ", shape_text(given), " has ", axis, ", out of range for rank ", rank));
    }
    if (axis < 0) axis += rank;
    if (!seen.insert(axis).second) {
      context.fail_input(cat(what, " names axis ", axis, " twice"));
    }
  }
  return axes;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t total = 1;
  for (size_t k = begin; k < end; ++k) total *= dims[k];
  return total;
}

// ---- shape-only ops ------------------------------------------------------------------------

void identity_kernel(KernelContext& context) { context.outputs[0] = context.input(0); }

void shape_kernel(KernelContext& context) {
  const std::vector<int64_t>& dims = context.input(0).shape();
  int64_t rank = static_cast<int64_t>(dims.size());
  // start/end (opset 15) count negatives from the end and clamp into [0, rank].
  auto clamp_axis = [rank](int64_t axis) {
    return std::clamp<int64_t>(axis < 0 ? axis + rank : axis, 0, rank);
  };
  int64_t start = 0, end = rank;
  if (context.node.opset() >= 15) {
    start = clamp_axis(context.node.attr_int("start", 0));
    end = clamp_axis(context.node.attr_int("end", rank));
  }
  std::vector<int64_t> selected(dims.begin() + start, dims.begin() + std::max(start, end));
  context.outputs[0] =
      Tensor::from_vector<int64_t>({static_cast<int64_t>(selected.size())}, selected);
}

void size_kernel(KernelContext& context) {
  context.outputs[0] = Tensor::scalar<int64_t>(context.input(0).numel());
}

void reshape_kernel(KernelContext& context) {
  const Tensor& data = context.input(0);
  std::vector<int64_t> requested = tensor_to_int64s(context.input(1));
  bool allow_zero = context.node.opset() >= 14 && context.node.attr_int("allowzero", 0) != 0;
  std::vector<int64_t> shape = requested;
  int64_t inferred = -1;
  bool has_zero = false;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t value = requested[i];
    if (value < -1) {
      context.fail_input(cat("input 1 'shape' ", shape_text(requested), " has ", value,
                             " at position ", i, " (entries must be >= -1)"));
    }
    if (value == -1) {
      if (inferred >= 0) {
        context.fail_input(cat("input 1 'shape' ", shape_text(requested), " has more than one -1"));
      }
      inferred = static_cast<int64_t>(i);
    } else if (value == 0 && !allow_zero) {  // 0 copies the input's dim
      if (static_cast<int64_t>(i) >= data.rank()) {
        context.fail_input(cat("input 1 'shape' ", shape_text(requested), " copies dim ", i,
                               " (0) but input 0 has shape ", shape_text(data.shape())));
      }
      shape[i] = data.dim(static_cast<int64_t>(i));
    } else {
      has_zero = has_zero || value == 0;
    }
  }
  if (allow_zero && has_zero && inferred >= 0) {
    context.fail_input(cat("input 1 'shape' ", shape_text(requested),
                           " has both 0 and -1, which allowzero = 1 forbids"));
  }
  auto mismatch = [&] {
    context.fail_input(cat("cannot reshape ", shape_text(data.shape()), " (", data.numel(),
                           " elements) to ", shape_text(requested)));
  };
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (static_cast<int64_t>(i) == inferred) continue;
    if (shape[i] != 0 && known > std::numeric_limits<int64_t>::max() / shape[i]) mismatch();
    known *= shape[i];
  }
  if (inferred >= 0) {
    if (known == 0 || data.numel() % known != 0) mismatch();
    shape[static_cast<size_t>(inferred)] = data.numel() / known;
  } else if (known != data.numel()) {
    mismatch();
  }
  context.outputs[0] = data.reshaped(shape);
}

void flatten_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  int64_t rank = input.rank();
  int64_t axis = context.node.attr_int("axis", 1);
  if (axis < -rank || axis > rank) {  // may equal the rank: everything goes to the first dim
    context.fail(cat("attribute 'axis' = ", axis, " is out of range for rank ", rank, " (valid: [",
                     -rank, ", ", rank, "])"));
  }
  size_t split = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  const std::vector<int64_t>& dims = input.shape();
  context.outputs[0] = input.reshaped({product(dims, 0, split), product(dims, split, dims.size())});
}

void squeeze_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  std::optional<std::vector<int64_t>> axes = int_list(context, "axes", 1, 13);
  std::vector<int64_t> shape;
  if (!axes) {
    for (int64_t dim : input.shape()) {
      if (dim != 1) shape.push_back(dim);
    }
  } else {
    std::vector<int64_t> squeezed = normalize_axes(context, *axes, input.rank(), "'axes'");
    for (int64_t k = 0; k < input.rank(); ++k) {
      bool drop = std::find(squeezed.begin(), squeezed.end(), k) != squeezed.end();
      if (drop && input.dim(k) != 1) {
        context.fail_input(cat("'axes' names axis ", k, " of input 0 ", shape_text(input.shape()),
                               ", which has size ", input.dim(k),
                               " (only size-1 dims can be squeezed)"));
      }
      if (!drop) shape.push_back(input.dim(k));
    }
  }
  context.outputs[0] = input.reshaped(shape);
}

void unsqueeze_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  std::optional<std::vector<int64_t>> axes = int_list(context, "axes", 1, 13);
  if (!axes) context.fail("'axes' is required");
  int64_t out_rank = input.rank() + static_cast<int64_t>(axes->size());
  std::vector<int64_t> inserted = normalize_axes(context, *axes, out_rank, "'axes'");
  std::vector<int64_t> shape;
  size_t next = 0;
  for (int64_t k = 0; k < out_rank; ++k) {
    bool is_new = std::find(inserted.begin(), inserted.end(), k) != inserted.end();
    shape.push_back(is_new ? 1 : input.shape()[next++]);
  }
  context.outputs[0] = input.reshaped(shape);
}

// ---- constants -----------------------------------------------------------------------------

void constant_kernel(KernelContext& context) {
  const Node& node = context.node;
  if (const Tensor* value = node.attr_tensor("value")) {
    context.outputs[0] = *value;
  } else if (node.has_attr("value_float")) {
    context.outputs[0] = Tensor::scalar<float>(node.attr_float("value_float", 0));
  } else if (node.has_attr("value_int")) {
    context.outputs[0] = Tensor::scalar<int64_t>(node.attr_int("value_int", 0));
  } else if (node.has_attr("value_floats")) {
    std::vector<float> values = node.attr_floats("value_floats");
    context.outputs[0] = Tensor::from_vector<float>({static_cast<int64_t>(values.size())}, values);
  } else if (node.has_attr("value_ints")) {
    std::vector<int64_t> values = node.attr_ints("value_ints");
    context.outputs[0] =
        Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
  } else if (node.has_attr("value_string") || node.has_attr("value_strings")) {
    bool scalar = node.has_attr("value_string");
    std::vector<std::string> strings = scalar ? std::vector{node.attr_string("value_string", "")}
                                              : node.attr_strings("value_strings");
    Tensor tensor(DType::kString, scalar
                                      ? std::vector<int64_t>{}
                                      : std::vector<int64_t>{static_cast<int64_t>(strings.size())});
    tensor.strings() = strings;
    context.outputs[0] = tensor;
  } else if (node.has_attr("sparse_value")) {
    raise_unsupported(cat(node.describe(), ": attribute 'sparse_value' (sparse tensors)"));
  } else {
    context.fail("has no value attribute");
  }
}

void constant_of_shape_kernel(KernelContext& context) {
  std::vector<int64_t> shape = tensor_to_int64s(context.input(0));
  for (int64_t dim : shape) {
    if (dim < 0) {
      context.fail_input(cat("input 0 'input' ", shape_text(shape), " has a negative size"));
    }
  }
  const Tensor* value = context.node.attr_tensor("value");
  Tensor zero(DType::kFloat32, {1});
  if (value && value->numel() != 1) context.fail("attribute 'value' must hold one element");
  Tensor out(value ? value->dtype() : DType::kFloat32, shape);
  fill(out, value ? *value : zero);
  context.outputs[0] = out;
}

// ---- Concat and Split ----------------------------------------------------------------------

void concat_kernel(KernelContext& context) {
  const Tensor& first = context.input(0);
  if (first.rank() == 0) context.fail_input("cannot concatenate scalars");
  if (!context.node.has_attr("axis")) context.fail("attribute 'axis' is required");
  size_t axis = static_cast<size_t>(
      normalize_axis(context, context.node.attr_int("axis", 0), first.rank(), "attribute 'axis'"));
  context.outputs[0] = concat_tensors(context, context.inputs, axis);
}

void split_kernel(KernelContext& context) {
  const Node& node = context.node;
  const Tensor& input = context.input(0);
  size_t axis = static_cast<size_t>(
      normalize_axis(context, node.attr_int("axis", 0), input.rank(), "attribute 'axis'"));
  int64_t d = input.dim(static_cast<int64_t>(axis));
  int64_t n = static_cast<int64_t>(node.num_outputs());
  std::vector<int64_t> sizes;
  if (auto split = int_list(context, "split", 1, 13)) {
    int64_t total = 0;
    for (int64_t size : *split) {
      if (size < 0) context.fail_input(cat("'split' ", shape_text(*split), " has a negative size"));
      total += size;
    }
    if (static_cast<int64_t>(split->size()) != n || total != d) {
      context.fail_input(cat("'split' ", shape_text(*split), " does not cut dim ", axis, " of ",
                             shape_text(input.shape()), " into ", n, " outputs"));
    }
    sizes = *split;
  } else if (node.opset() >= 18 && node.has_attr("num_outputs")) {
    // ceil(d / n) per output; the last takes the rest, possibly fewer.
    int64_t chunk = (d + n - 1) / n;
    int64_t last = d - chunk * (n - 1);
    if (last < 0) {
      context.fail_input(cat("attribute 'num_outputs' = ", n, " cannot split dim ", axis, " of ",
                             shape_text(input.shape()), ": chunks of ", chunk, " leave ", last,
                             " for the last output"));
    }
    sizes.assign(static_cast<size_t>(n), chunk);
    sizes.back() = last;
  } else {
    if (d % n != 0) {
      context.fail_input(cat("dim ", axis, " of ", shape_text(input.shape()),
                             " does not split evenly into ", n, " outputs"));
    }
    sizes.assign(static_cast<size_t>(n), d / n);
  }
  std::vector<Tensor> pieces = split_tensor(input, axis, sizes);
  for (size_t i = 0; i < pieces.size(); ++i) context.outputs[i] = std::move(pieces[i]);
}

// ---- index-mapping ops ---------------------------------------------------------------------

void transpose_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  std::vector<int64_t> perm;
  for (int64_t k = input.rank() - 1; k >= 0; --k) perm.push_back(k);
  perm = context.node.attr_ints("perm", perm);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k <= sorted.size(); ++k) {
    bool complete = k == sorted.size() ? sorted.size() == input.shape().size()
                                       : sorted[k] == static_cast<int64_t>(k);
    if (!complete) {
      context.fail(cat("attribute 'perm' = ", shape_text(perm),
                       " is not a permutation of the axes of ", shape_text(input.shape())));
    }
  }
  std::vector<int64_t> strides = row_major_strides(input.shape());
  std::vector<int64_t> shape;
  for (int64_t axis : perm) shape.push_back(input.dim(axis));
  // Output axis k walks input axis perm[k].
  Tensor out(input.dtype(), shape);
  std::vector<int64_t> offsets = offsets_for(shape, [&](const auto& index) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) offset += index[k] * strides[perm[k]];
    return offset;
  });
  copy_from_offsets(input, offsets, out);
  context.outputs[0] = out;
}

void slice_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  int64_t rank = input.rank();
  auto starts = int_list(context, "starts", 1, 10);
  auto ends = int_list(context, "ends", 2, 10);
  if (!starts || !ends) context.fail("'starts' and 'ends' are required");
  auto axes = int_list(context, "axes", 3, 10);
  std::optional<std::vector<int64_t>> steps;
  if (context.node.opset() >= 10 && context.has_input(4))
    steps = tensor_to_int64s(context.input(4));
  if (!axes) {
    axes.emplace();
    for (int64_t k = 0; k < static_cast<int64_t>(starts->size()); ++k) axes->push_back(k);
  }
  if (!steps) steps = std::vector<int64_t>(starts->size(), 1);
  if (ends->size() != starts->size() || axes->size() != starts->size() ||
      steps->size() != starts->size()) {
    context.fail_input(cat("'starts' ", shape_text(*starts), ", 'ends' ", shape_text(*ends),
                           ", 'axes' ", shape_text(*axes), " and 'steps' ", shape_text(*steps),
                           " differ in length"));
  }
  *axes = normalize_axes(context, *axes, rank, "'axes'");
  // Output position p on axis k reads input position first + p * step.
  struct AxisWalk {
    int64_t first = 0;
    int64_t step = 1;
  };
  std::vector<AxisWalk> walks(input.shape().size());
  std::vector<int64_t> shape = input.shape();
  for (size_t i = 0; i < axes->size(); ++i) {
    size_t axis = static_cast<size_t>((*axes)[i]);
    if ((*steps)[i] == 0) context.fail_input(cat("'steps' ", shape_text(*steps), " has a 0"));
    SliceRange range = resolve_slice(shape[axis], (*starts)[i], (*ends)[i], (*steps)[i]);
    walks[axis] = {range.start, (*steps)[i]};
    shape[axis] = range.count;
  }
  std::vector<int64_t> strides = row_major_strides(input.shape());
  Tensor out(input.dtype(), shape);
  std::vector<int64_t> offsets = offsets_for(shape, [&](const auto& index) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) {
      offset += (walks[k].first + index[k] * walks[k].step) * strides[k];
    }
    return offset;
  });
  copy_from_offsets(input, offsets, out);
  context.outputs[0] = out;
}

// Index values of an int32/int64 input, with negative ones counted from the end of an axis of
// size `d`; out-of-range ones are data errors naming the input.
std::vector<int64_t> checked_indices(const KernelContext& context, size_t input,
                                     const std::string& name, int64_t d, size_t axis) {
  const Tensor& tensor = context.input(input);
  if (tensor.dtype() != DType::kInt32 && tensor.dtype() != DType::kInt64) {
    context.fail(cat("input ", input, " '", name, "' must be int32 or int64, got ",
                     dtype_onnx_name(tensor.dtype())));
  }
  std::vector<int64_t> values = tensor_to_int64s(tensor);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < -d || values[i] >= d) {
      context.fail_input(cat("input ", input, " '", name, "' element ", i, " = ", values[i],
                             " is out of range for axis ", axis, " of size ", d, " (valid: [", -d,
                             ", ", d - 1, "])"));
    }
    if (values[i] < 0) values[i] += d;
  }
  return values;
}

void gather_kernel(KernelContext& context) {
  const Tensor& data = context.input(0);
  if (data.rank() == 0) context.fail_input("input 0 'data' must have rank >= 1, got a scalar");
  size_t axis = static_cast<size_t>(
      normalize_axis(context, context.node.attr_int("axis", 0), data.rank(), "attribute 'axis'"));
  int64_t d = data.shape()[axis];
  std::vector<int64_t> indices = checked_indices(context, 1, "indices", d, axis);
  const std::vector<int64_t>& index_shape = context.input(1).shape();
  std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + axis);
  shape.insert(shape.end(), index_shape.begin(), index_shape.end());
  shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  // out[o, j, i] = data[o, indices[j], i] over the dims before, at and after the axis.
  Tensor out(data.dtype(), shape);
  int64_t outer = product(data.shape(), 0, axis);
  int64_t inner = product(data.shape(), axis + 1, data.shape().size());
  int64_t n = static_cast<int64_t>(indices.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      copy_elements(data, (o * d + indices[static_cast<size_t>(j)]) * inner, out,
                    (o * n + j) * inner, inner);
    }
  }
  context.outputs[0] = out;
}

// GatherElements and ScatterElements pair each element of `indices` with the data element at the
// same position except along `axis`, where the index value says where. Returns those offsets.
std::vector<int64_t> element_offsets(const KernelContext& context, const Tensor& data,
                                     size_t axis) {
  const Tensor& indices_tensor = context.input(1);
  if (indices_tensor.rank() != data.rank()) {
    context.fail_input(cat("input 1 'indices' ", shape_text(indices_tensor.shape()),
                           " must have the rank of input 0 'data' ", shape_text(data.shape())));
  }
  for (size_t k = 0; k < data.shape().size(); ++k) {
    if (k != axis && indices_tensor.shape()[k] > data.shape()[k]) {
      context.fail_input(cat("input 1 'indices' ", shape_text(indices_tensor.shape()),
                             " exceeds input 0 'data' ", shape_text(data.shape()), " at axis ", k));
    }
  }
  std::vector<int64_t> indices = checked_indices(context, 1, "indices", data.shape()[axis], axis);
  std::vector<int64_t> strides = row_major_strides(data.shape());
  size_t i = 0;
  return offsets_for(indices_tensor.shape(), [&](const auto& index) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) {
      offset += (k == axis ? indices[i] : index[k]) * strides[k];
    }
    ++i;
    return offset;
  });
}

void gather_elements_kernel(KernelContext& context) {
  const Tensor& data = context.input(0);
  size_t axis = static_cast<size_t>(
      normalize_axis(context, context.node.attr_int("axis", 0), data.rank(), "attribute 'axis'"));
  Tensor out(data.dtype(), context.input(1).shape());
  copy_from_offsets(data, element_offsets(context, data, axis), out);
  context.outputs[0] = out;
}

// target = target (reduction) update, in the element's own type; integers wrap like C++ unsigned
// arithmetic, bools add as "or" and multiply as "and".
template <typename T>
T reduce(T target, T update, const std::string& reduction) {
  if constexpr (std::is_same_v<T, bool>) {
    return reduction == "add" || reduction == "max" ? (target || update) : (target && update);
  } else {
    if (reduction == "max") return std::max(target, update);
    if (reduction == "min") return std::min(target, update);
    if constexpr (std::is_integral_v<T>) {
      uint64_t a = static_cast<uint64_t>(target), b = static_cast<uint64_t>(update);
      return static_cast<T>(reduction == "add" ? a + b : a * b);
    } else {
      return reduction == "add" ? target + update : target * update;
    }
  }
}

const std::set<std::string>& scatter_reductions() {
  static const std::set<std::string> reductions = {"none", "add", "mul", "max", "min"};
  return reductions;
}

std::string scatter_reduction(const KernelContext& context) {
  std::string reduction = context.node.attr_string("reduction", "none");
  if (!scatter_reductions().count(reduction)) {
    context.fail(
        cat("attribute 'reduction' = '", reduction, "' is not none, add, mul, max or min"));
  }
  return reduction;
}

// out[target] = out[target] (reduction) updates[source]; 'none' replaces. 16-bit floats reduce in
// float32 and round once.
void scatter_one(const KernelContext& context, const Tensor& updates, int64_t source, Tensor& out,
                 int64_t target, const std::string& reduction) {
  if (reduction == "none") {
    copy_elements(updates, source, out, target, 1);
  } else if (out.dtype() == DType::kFloat16 || out.dtype() == DType::kBFloat16) {
    float value = reduce(static_cast<float>(out.get_double(target)),
                         static_cast<float>(updates.get_double(source)), reduction);
    out.set_double(target, value);
  } else {
    dispatch_numeric(out.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      T& slot = out.data<T>()[target];
      slot = reduce<T>(slot, updates.data<T>()[source], reduction);
    });
  }
}

void scatter_elements_kernel(KernelContext& context) {
  const Tensor& data = context.input(0);
  const Tensor& updates = context.input(2);
  size_t axis = static_cast<size_t>(
      normalize_axis(context, context.node.attr_int("axis", 0), data.rank(), "attribute 'axis'"));
  if (updates.shape() != context.input(1).shape() || updates.dtype() != data.dtype()) {
    context.fail_input(cat("input 2 'updates' ", shape_text(updates.shape()),
                           " must match input 1 'indices' ", shape_text(context.input(1).shape()),
                           " in shape and input 0 in type"));
  }
  std::vector<int64_t> targets = element_offsets(context, data, axis);
  std::string reduction = scatter_reduction(context);
  Tensor out = data.clone();
  // Updates apply in index order, so with reduction 'none' a repeated index keeps the last one.
  for (size_t i = 0; i < targets.size(); ++i) {
    scatter_one(context, updates, static_cast<int64_t>(i), out, targets[i], reduction);
  }
  context.outputs[0] = out;
}

// GatherND and ScatterND read input 1 'indices' (int64, shape [..., k]) as k-tuples, each naming
// a slice of `data`: the first `batch_dims` dims are shared by data and indices, the tuple indexes
// the next k dims of data, and the slice is data.shape[batch_dims + k:].
struct NdSlices {
  std::vector<int64_t> offsets;  // per tuple, the data offset of its slice
  int64_t slice_size = 1;
  int64_t k = 0;
};

NdSlices nd_slices(const KernelContext& context, const Tensor& data, int64_t batch_dims,
                   int64_t min_k) {
  const Tensor& indices = context.input(1);
  if (indices.dtype() != DType::kInt64) {
    context.fail(cat("input 1 'indices' must be int64, got ", dtype_onnx_name(indices.dtype())));
  }
  int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1) {
    context.fail_input(cat("input 0 'data' ", shape_text(data.shape()), " and input 1 'indices' ",
                           shape_text(indices.shape()), " must both have rank >= 1"));
  }
  if (batch_dims >= std::min(r, q)) {
    context.fail_input(cat("attribute 'batch_dims' = ", batch_dims, " must be below the ranks of ",
                           "input 0 'data' ", shape_text(data.shape()), " and input 1 'indices' ",
                           shape_text(indices.shape())));
  }
  for (int64_t b = 0; b < batch_dims; ++b) {
    if (data.dim(b) != indices.dim(b)) {
      context.fail_input(cat("input 1 'indices' ", shape_text(indices.shape()),
                             " and input 0 'data' ", shape_text(data.shape()),
                             " differ in batch dim ", b));
    }
  }
  NdSlices slices;
  slices.k = indices.dim(q - 1);
  if (slices.k < min_k || slices.k > r - batch_dims) {
    context.fail_input(cat("input 1 'indices' ", shape_text(indices.shape()), " has tuples of ",
                           slices.k, " indices, expected ", min_k, " to ", r - batch_dims,
                           " for input 0 'data' ", shape_text(data.shape())));
  }
  const std::vector<int64_t>& dims = data.shape();
  std::vector<int64_t> strides = row_major_strides(dims);
  size_t first = static_cast<size_t>(batch_dims);
  slices.slice_size = product(dims, first + static_cast<size_t>(slices.k), dims.size());
  int64_t batch_size = product(dims, first, dims.size());
  int64_t tuples = product(indices.shape(), 0, static_cast<size_t>(q - 1));
  int64_t tuples_per_batch =
      tuples == 0 ? 1 : tuples / product(dims, 0, first);  // batch dims are shared
  slices.offsets.reserve(static_cast<size_t>(tuples));
  const int64_t* values = indices.data<int64_t>();
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = t / tuples_per_batch * batch_size;
    for (int64_t j = 0; j < slices.k; ++j) {
      int64_t d = dims[first + static_cast<size_t>(j)];
      int64_t index = values[t * slices.k + j];
      if (index < -d || index >= d) {
        context.fail_input(cat("input 1 'indices' element ", t * slices.k + j, " = ", index,
                               " is out of range for axis ", batch_dims + j, " of size ", d,
                               " (valid: [", -d, ", ", d - 1, "])"));
      }
      offset += (index < 0 ? index + d : index) * strides[first + static_cast<size_t>(j)];
    }
    slices.offsets.push_back(offset);
  }
  return slices;
}

void gather_nd_kernel(KernelContext& context) {
  const Tensor& data = context.input(0);
  int64_t batch_dims = context.node.attr_int("batch_dims", 0);
  NdSlices slices = nd_slices(context, data, batch_dims, 1);
  const std::vector<int64_t>& index_shape = context.input(1).shape();
  std::vector<int64_t> shape(index_shape.begin(), index_shape.end() - 1);
  shape.insert(shape.end(), data.shape().begin() + batch_dims + slices.k, data.shape().end());
  Tensor out(data.dtype(), shape);
  for (size_t t = 0; t < slices.offsets.size(); ++t) {
    copy_elements(data, slices.offsets[t], out, static_cast<int64_t>(t) * slices.slice_size,
                  slices.slice_size);
  }
  context.outputs[0] = out;
}

void scatter_nd_kernel(KernelContext& context) {
  const Tensor& data = context.input(0);
  const Tensor& updates = context.input(2);
  NdSlices slices = nd_slices(context, data, 0, 0);
  const std::vector<int64_t>& index_shape = context.input(1).shape();
  std::vector<int64_t> expected(index_shape.begin(), index_shape.end() - 1);
  expected.insert(expected.end(), data.shape().begin() + slices.k, data.shape().end());
  if (updates.shape() != expected || updates.dtype() != data.dtype()) {
    context.fail_input(cat("input 2 'updates' ", shape_text(updates.shape()), " must have shape ",
                           shape_text(expected),
                           " (indices.shape[:-1] + data.shape[k:]) and the type of input 0"));
  }
  std::string reduction = scatter_reduction(context);
  Tensor out = data.clone();
  // Tuples apply in order: with reduction 'none' a repeated tuple keeps the last slice.
  for (size_t t = 0; t < slices.offsets.size(); ++t) {
    int64_t source = static_cast<int64_t>(t) * slices.slice_size;
    if (reduction == "none") {
      copy_elements(updates, source, out, slices.offsets[t], slices.slice_size);
      continue;
    }
    for (int64_t s = 0; s < slices.slice_size; ++s) {
      scatter_one(context, updates, source + s, out, slices.offsets[t] + s, reduction);
    }
  }
  context.outputs[0] = out;
}

// DepthToSpace and SpaceToDepth move elements between the channel dim and blocksize x blocksize
// blocks of the two spatial dims of an N x C x H x W tensor.
int64_t blocksize(const KernelContext& context) {
  if (!context.node.has_attr("blocksize")) context.fail("attribute 'blocksize' is required");
  int64_t b = context.node.attr_int("blocksize", 0);
  if (b < 1) context.fail(cat("attribute 'blocksize' = ", b, ", must be > 0"));
  if (context.input(0).rank() != 4) {
    context.fail_input(cat("input 0 'input' has shape ", shape_text(context.input(0).shape()),
                           ", expected rank 4 (N x C x H x W)"));
  }
  return b;
}

void depth_to_space_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  int64_t b = blocksize(context);
  std::string mode = context.node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") {
    context.fail(cat("attribute 'mode' = '", mode, "', expected DCR or CRD"));
  }
  int64_t n = input.dim(0), c = input.dim(1), h = input.dim(2), w = input.dim(3);
  if (c % (b * b) != 0) {
    context.fail_input(cat("input 0 'input' has ", c, " channels, not a multiple of blocksize^2 = ",
                           b * b));
  }
  int64_t channels = c / (b * b);
  std::vector<int64_t> shape = {n, channels, h * b, w * b};
  Tensor out(input.dtype(), shape);
  // Output (n, c, y*b + i, x*b + j) reads input channel (i*b + j)*channels + c (DCR: depth is the
  // outer split) or c*b*b + i*b + j (CRD: column-row-depth, depth inner).
  std::vector<int64_t> offsets = offsets_for(shape, [&](const auto& index) {
    int64_t i = index[2] % b, j = index[3] % b;
    int64_t channel = mode == "DCR" ? (i * b + j) * channels + index[1]
                                    : index[1] * b * b + i * b + j;
    return ((index[0] * c + channel) * h + index[2] / b) * w + index[3] / b;
  });
  copy_from_offsets(input, offsets, out);
  context.outputs[0] = out;
}

void space_to_depth_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  int64_t b = blocksize(context);
  int64_t n = input.dim(0), c = input.dim(1), h = input.dim(2), w = input.dim(3);
  if (h % b != 0 || w % b != 0) {
    context.fail_input(cat("input 0 'input' ", shape_text(input.shape()),
                           ": H and W must be multiples of blocksize ", b));
  }
  std::vector<int64_t> shape = {n, c * b * b, h / b, w / b};
  Tensor out(input.dtype(), shape);
  // Output channel (i*b + j)*C + c holds input (n, c, y*b + i, x*b + j).
  std::vector<int64_t> offsets = offsets_for(shape, [&](const auto& index) {
    int64_t block = index[1] / c, channel = index[1] % c;
    int64_t i = block / b, j = block % b;
    return ((index[0] * c + channel) * h + index[2] * b + i) * w + index[3] * b + j;
  });
  copy_from_offsets(input, offsets, out);
  context.outputs[0] = out;
}

void expand_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  std::vector<int64_t> requested = tensor_to_int64s(context.input(1));
  for (int64_t dim : requested) {
    if (dim < 0) {
      context.fail_input(cat("input 1 'shape' ", shape_text(requested), " has a negative size"));
    }
  }
  std::vector<int64_t> shape = broadcast_shapes(input.shape(), requested, context);
  std::vector<int64_t> strides = broadcast_strides(input.shape(), shape);
  Tensor out(input.dtype(), shape);
  std::vector<int64_t> offsets = offsets_for(shape, [&](const auto& index) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) offset += index[k] * strides[k];
    return offset;
  });
  copy_from_offsets(input, offsets, out);
  context.outputs[0] = out;
}

void tile_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  std::vector<int64_t> repeats = tensor_to_int64s(context.input(1));
  if (static_cast<int64_t>(repeats.size()) != input.rank()) {
    context.fail_input(cat("input 1 'repeats' ", shape_text(repeats), " has ", repeats.size(),
                           " entries for input 0 of shape ", shape_text(input.shape())));
  }
  std::vector<int64_t> shape = input.shape();
  for (size_t k = 0; k < shape.size(); ++k) {
    if (repeats[k] < 0) {
      context.fail_input(cat("input 1 'repeats' ", shape_text(repeats), " has a negative entry"));
    }
    shape[k] *= repeats[k];
  }
  std::vector<int64_t> strides = row_major_strides(input.shape());
  Tensor out(input.dtype(), shape);
  std::vector<int64_t> offsets = offsets_for(shape, [&](const auto& index) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) offset += index[k] % input.dim(k) * strides[k];
    return offset;
  });
  copy_from_offsets(input, offsets, out);
  context.outputs[0] = out;
}

// Where a position j outside [0, d) reads from, per Pad mode; -1 for the constant.
int64_t pad_source(int64_t j, int64_t d, const std::string& mode) {
  if (j >= 0 && j < d) return j;
  if (mode == "edge") return j < 0 ? 0 : d - 1;
  if (mode == "wrap") return (j % d + d) % d;
  if (mode == "reflect") {
    if (d == 1) return 0;
    int64_t period = 2 * (d - 1);  // d-1 steps away from the first element and back
    int64_t m = (j % period + period) % period;
    return m < d ? m : period - m;
  }
  return -1;
}

void pad_kernel(KernelContext& context) {
  const Node& node = context.node;
  const Tensor& input = context.input(0);
  int64_t rank = input.rank();
  std::string mode = node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    context.fail(cat("attribute 'mode' = '", mode, "' is not a Pad mode"));
  }
  auto pads = int_list(context, "pads", 1, 11);
  if (!pads) context.fail("'pads' is required");
  // The fill: attribute 'value' before opset 11, else input 2, else 0 / "" / false.
  Tensor pad_value(input.dtype(), {1});
  if (node.opset() < 11) {
    if (input.dtype() == DType::kString) context.fail("string data needs opset 11");
    pad_value.set_double(0, node.attr_float("value", 0));
  } else if (context.has_input(2)) {
    const Tensor& value = context.input(2);
    if (value.numel() != 1 || value.dtype() != input.dtype()) {
      context.fail_input(cat("input 2 'constant_value' must be one ",
                             dtype_onnx_name(input.dtype()), ", got ", tensor_summary(value)));
    }
    copy_elements(value, 0, pad_value, 0, 1);
  }
  std::vector<int64_t> axes;
  if (node.opset() >= 18 && context.has_input(3)) {
    axes = normalize_axes(context, tensor_to_int64s(context.input(3)), rank, "input 3 'axes'");
  } else {
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  if (pads->size() != 2 * axes.size()) {
    context.fail_input(cat("'pads' ", shape_text(*pads), " has ", pads->size(),
                           " entries, expected ", 2 * axes.size(), " (begin and end per axis)"));
  }
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0);
  std::vector<int64_t> shape = input.shape();
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t axis = static_cast<size_t>(axes[i]);
    begin[axis] = (*pads)[i];
    shape[axis] += (*pads)[i] + (*pads)[i + axes.size()];
    if (shape[axis] < 0) {
      context.fail_input(cat("'pads' ", shape_text(*pads), " makes dim ", axis, " of ",
                             shape_text(input.shape()), " negative (", shape[axis], ")"));
    }
    if (mode != "constant" && input.shape()[axis] == 0 && shape[axis] > 0) {
      context.fail_input(cat("mode '", mode, "' cannot pad axis ", axis, " of ",
                             shape_text(input.shape()), ": it has no elements to repeat"));
    }
  }
  // Output position p on an axis reads input position p - begin, mapped back inside by the mode.
  std::vector<int64_t> strides = row_major_strides(input.shape());
  Tensor out(input.dtype(), shape);
  std::vector<int64_t> offsets = offsets_for(shape, [&](const auto& index) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) {
      int64_t source = pad_source(index[k] - begin[k], input.shape()[k], mode);
      if (source < 0) return int64_t{-1};
      offset += source * strides[k];
    }
    return offset;
  });
  fill(out, pad_value);
  copy_from_offsets(input, offsets, out);
  context.outputs[0] = out;
}

// ---- Trilu, EyeLike ------------------------------------------------------------------------

// Trilu keeps the elements of each trailing N x M matrix on and above (upper = 1) or on and below
// (upper = 0) diagonal k, counted as j - i; the rest become zero ("" for strings).
void trilu_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  if (input.rank() < 2) {
    context.fail_input(cat("input 0 'input' has shape ", shape_text(input.shape()),
                           ", expected rank >= 2"));
  }
  int64_t k = 0;
  if (context.has_input(1)) {
    const Tensor& k_input = context.input(1);
    if (k_input.numel() != 1) {
      context.fail_input(cat("input 1 'k' has shape ", shape_text(k_input.shape()),
                             ", expected a scalar"));
    }
    k = k_input.get_int64(0);
  }
  bool upper = context.node.attr_int("upper", 1) == 1;
  int64_t rows = input.dim(input.rank() - 2), columns = input.dim(input.rank() - 1);
  Tensor out(input.dtype(), input.shape());
  for (int64_t flat = 0; flat < input.numel(); ++flat) {
    int64_t j = flat % columns, i = flat / columns % rows;
    // j - i compared in 128 bits: k may be any int64.
    __int128 offset = static_cast<__int128>(j) - i;
    if (upper ? offset >= k : offset <= k) copy_elements(input, flat, out, flat, 1);
  }
  context.outputs[0] = out;
}

// EyeLike: ones on diagonal k (column = row + k) of a 2-D tensor shaped like the input, zeros
// elsewhere, in `dtype` (default: the input's type).
void eye_like_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  if (input.rank() != 2) {
    context.fail_input(
        cat("input 0 'input' has shape ", shape_text(input.shape()), ", expected rank 2"));
  }
  DType dtype = input.dtype();
  if (context.node.has_attr("dtype")) {
    std::optional<DType> given =
        dtype_from_onnx(static_cast<int32_t>(context.node.attr_int("dtype", 0)));
    if (!given) context.fail("attribute 'dtype' is not an ONNX data type");
    dtype = *given;
  }
  int64_t k = context.node.attr_int("k", 0);
  Tensor out(dtype, input.shape());
  for (int64_t i = 0; i < input.dim(0); ++i) {
    __int128 j = static_cast<__int128>(i) + k;
    if (j >= 0 && j < input.dim(1)) out.set_double(i * input.dim(1) + static_cast<int64_t>(j), 1);
  }
  context.outputs[0] = out;
}

// ---- OneHot, Compress ----------------------------------------------------------------------

// A numeric value read as an int64 the way OneHot converts non-integer indices and depth (toward
// zero), or nullopt for NaN and values beyond int64.
std::optional<int64_t> as_int64(const Tensor& tensor, int64_t i) {
  if (!is_floating(tensor.dtype())) {
    if (tensor.dtype() == DType::kUInt64 &&
        tensor.data<uint64_t>()[i] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    return tensor.get_int64(i);
  }
  double value = std::trunc(tensor.get_double(i));
  if (!(value >= -0x1p63 && value < 0x1p63)) return std::nullopt;
  return static_cast<int64_t>(value);
}

// output[..., j at axis, ...] = values[1] where j is the index at that position, else values[0].
// Indices outside [-depth, depth - 1] (opset 11; [0, depth - 1] before) give a row of off values.
void one_hot_kernel(KernelContext& context) {
  const Tensor& indices = context.input(0);
  const Tensor& depth_input = context.input(1);
  const Tensor& values = context.input(2);
  if (depth_input.numel() != 1) {
    context.fail_input(cat("input 1 'depth' has shape ", shape_text(depth_input.shape()),
                           ", expected one element"));
  }
  std::optional<int64_t> depth = as_int64(depth_input, 0);
  if (!depth || *depth < 1) {
    context.fail_input(cat("input 1 'depth' = ", depth_input.get_double(0), ", must be >= 1"));
  }
  if (values.numel() != 2) {
    context.fail_input(cat("input 2 'values' has shape ", shape_text(values.shape()),
                           ", expected [off_value, on_value]"));
  }
  if (indices.rank() == 0) context.fail_input("input 0 'indices' must have rank >= 1, got a scalar");
  int64_t rank = indices.rank() + 1;
  size_t axis = static_cast<size_t>(
      normalize_axis(context, context.node.attr_int("axis", -1), rank, "attribute 'axis'"));
  std::vector<int64_t> shape = indices.shape();
  shape.insert(shape.begin() + static_cast<int64_t>(axis), *depth);
  Tensor out(values.dtype(), shape);
  fill(out, values);  // the off value, element 0
  int64_t inner = product(indices.shape(), axis, indices.shape().size());
  bool negative_allowed = context.node.opset() >= 11;
  for (int64_t i = 0; i < indices.numel(); ++i) {
    std::optional<int64_t> index = as_int64(indices, i);
    if (!index || *index >= *depth || *index < (negative_allowed ? -*depth : 0)) continue;
    int64_t j = *index < 0 ? *index + *depth : *index;
    int64_t outer = i / inner, rest = i % inner;
    copy_elements(values, 1, out, (outer * *depth + j) * inner + rest, 1);
  }
  context.outputs[0] = out;
}

// Compress and Unique work on slices along attribute `axis`, or on the elements of the flattened
// input when it is absent: the dims they walk, and the axis among them.
size_t slicing_axis(const KernelContext& context, const Tensor& input, std::vector<int64_t>& dims) {
  if (!context.node.has_attr("axis")) {
    dims = {input.numel()};
    return 0;
  }
  dims = input.shape();
  return static_cast<size_t>(normalize_axis(context, context.node.attr_int("axis", 0),
                                            input.rank(), "attribute 'axis'"));
}

// The slices along `axis` (of the flattened input when absent) whose condition is true; a
// condition shorter than the axis leaves the remaining slices out.
void compress_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  const Tensor& condition = context.input(1);
  std::vector<int64_t> dims;
  size_t axis = slicing_axis(context, input, dims);
  int64_t d = dims[axis];
  if (condition.numel() > d) {
    context.fail_input(cat("input 1 'condition' has ", condition.numel(),
                           " entries, more than the ", d, " slices along axis ", axis));
  }
  std::vector<int64_t> kept;
  for (int64_t j = 0; j < condition.numel(); ++j) {
    if (condition.data<bool>()[j]) kept.push_back(j);
  }
  std::vector<int64_t> shape = dims;
  shape[axis] = static_cast<int64_t>(kept.size());
  Tensor out(input.dtype(), shape);
  int64_t outer = product(dims, 0, axis), inner = product(dims, axis + 1, dims.size());
  int64_t written = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j : kept) {
      copy_elements(input, (o * d + j) * inner, out, written, inner);
      written += inner;
    }
  }
  context.outputs[0] = out;
}

// ---- ReverseSequence, Unique ---------------------------------------------------------------

// For each batch entry b, the first sequence_lens[b] steps along time_axis in reverse order, the
// rest as they are.
void reverse_sequence_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  const Node& node = context.node;
  int64_t batch_axis = node.attr_int("batch_axis", 1), time_axis = node.attr_int("time_axis", 0);
  if (input.rank() < 2) {
    context.fail_input(
        cat("input 0 'input' has shape ", shape_text(input.shape()), ", expected rank >= 2"));
  }
  std::vector<int64_t> lengths = tensor_to_int64s(context.input(1));
  int64_t batch = input.dim(batch_axis), steps = input.dim(time_axis);
  if (static_cast<int64_t>(lengths.size()) != batch) {
    context.fail_input(cat("input 1 'sequence_lens' has ", lengths.size(), " entries for ", batch,
                           " batch entries"));
  }
  for (size_t b = 0; b < lengths.size(); ++b) {
    if (lengths[b] < 0 || lengths[b] > steps) {
      context.fail_input(cat("input 1 'sequence_lens' element ", b, " = ", lengths[b],
                             " is outside [0, ", steps, "]"));
    }
  }
  std::vector<int64_t> strides = row_major_strides(input.shape());
  Tensor out(input.dtype(), input.shape());
  std::vector<int64_t> offsets = offsets_for(input.shape(), [&](const auto& index) {
    int64_t t = index[static_cast<size_t>(time_axis)];
    int64_t length = lengths[static_cast<size_t>(index[static_cast<size_t>(batch_axis)])];
    int64_t source = t < length ? length - 1 - t : t;
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) {
      offset += (static_cast<int64_t>(k) == time_axis ? source : index[k]) * strides[k];
    }
    return offset;
  });
  copy_from_offsets(input, offsets, out);
  context.outputs[0] = out;
}

// Three-way comparison of two elements of one tensor: numbers by value with NaN above everything
// (and NaNs equal to each other, as numpy.unique merges them), strings lexicographically.
int compare_elements(const Tensor& tensor, int64_t a, int64_t b) {
  if (tensor.dtype() == DType::kString) {
    return tensor.strings()[static_cast<size_t>(a)].compare(
        tensor.strings()[static_cast<size_t>(b)]);
  }
  if (is_floating(tensor.dtype())) {
    double x = tensor.get_double(a), y = tensor.get_double(b);
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) - std::isnan(y);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (tensor.dtype() == DType::kUInt64) {
    uint64_t x = tensor.data<uint64_t>()[a], y = tensor.data<uint64_t>()[b];
    return x < y ? -1 : x > y ? 1 : 0;
  }
  int64_t x = tensor.get_int64(a), y = tensor.get_int64(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

// The distinct slices along `axis` (elements of the flattened input without it): Y holds them
// sorted ascending (lexicographically for slices) or in order of first occurrence (sorted = 0);
// indices their first occurrence, inverse_indices each input slice's position in Y, counts how
// often each occurs.
void unique_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  std::vector<int64_t> dims;
  size_t axis = slicing_axis(context, input, dims);
  int64_t d = dims[axis];
  int64_t outer = product(dims, 0, axis), inner = product(dims, axis + 1, dims.size());
  auto compare_slices = [&](int64_t p, int64_t q) {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int c = compare_elements(input, (o * d + p) * inner + i, (o * d + q) * inner + i);
        if (c != 0) return c;
      }
    }
    return 0;
  };
  // Slices in first-occurrence order of their distinct values.
  std::vector<int64_t> first;  // per distinct slice: its first index
  std::vector<int64_t> inverse(static_cast<size_t>(d));
  std::vector<int64_t> counts;
  std::vector<int64_t> by_value;  // distinct slice ids, sorted by value
  for (int64_t j = 0; j < d; ++j) {
    auto it = std::lower_bound(by_value.begin(), by_value.end(), j, [&](int64_t id, int64_t slice) {
      return compare_slices(first[static_cast<size_t>(id)], slice) < 0;
    });
    if (it != by_value.end() && compare_slices(first[static_cast<size_t>(*it)], j) == 0) {
      inverse[static_cast<size_t>(j)] = *it;
      ++counts[static_cast<size_t>(*it)];
      continue;
    }
    int64_t id = static_cast<int64_t>(first.size());
    first.push_back(j);
    counts.push_back(1);
    by_value.insert(it, id);
    inverse[static_cast<size_t>(j)] = id;
  }
  bool sorted = context.node.attr_int("sorted", 1) == 1;
  int64_t n = static_cast<int64_t>(first.size());
  std::vector<int64_t> position(static_cast<size_t>(n));  // distinct id -> index in Y
  std::vector<int64_t> order(static_cast<size_t>(n));     // index in Y -> distinct id
  for (int64_t r = 0; r < n; ++r) {
    int64_t id = sorted ? by_value[static_cast<size_t>(r)] : r;
    order[static_cast<size_t>(r)] = id;
    position[static_cast<size_t>(id)] = r;
  }
  std::vector<int64_t> shape = dims;
  shape[axis] = n;
  Tensor y(input.dtype(), shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t r = 0; r < n; ++r) {
      int64_t j = first[static_cast<size_t>(order[static_cast<size_t>(r)])];
      copy_elements(input, (o * d + j) * inner, y, (o * n + r) * inner, inner);
    }
  }
  Tensor indices(DType::kInt64, {n}), inverse_indices(DType::kInt64, {d}),
      count(DType::kInt64, {n});
  for (int64_t r = 0; r < n; ++r) {
    int64_t id = order[static_cast<size_t>(r)];
    indices.data<int64_t>()[r] = first[static_cast<size_t>(id)];
    count.data<int64_t>()[r] = counts[static_cast<size_t>(id)];
  }
  for (int64_t j = 0; j < d; ++j) {
    inverse_indices.data<int64_t>()[j] =
        position[static_cast<size_t>(inverse[static_cast<size_t>(j)])];
  }
  context.outputs[0] = y;
  for (size_t k = 1; k < context.outputs.size(); ++k) {
    context.outputs[k] = k == 1 ? indices : k == 2 ? inverse_indices : count;
  }
}

// ---- value-computing ops -------------------------------------------------------------------

void range_kernel(KernelContext& context) {
  const Tensor& start = context.input(0);
  const Tensor& limit = context.input(1);
  const Tensor& delta = context.input(2);
  DType dtype = start.dtype();
  for (const Tensor* scalar : {&start, &limit, &delta}) {
    if (scalar->numel() != 1 || scalar->dtype() != dtype) {
      context.fail_input(cat("start, limit and delta must be scalars of one type, got ",
                             tensor_summary(start), ", ", tensor_summary(limit), ", ",
                             tensor_summary(delta)));
    }
  }
  if (delta.get_double(0) == 0) context.fail_input("input 2 'delta' is 0");
  // number_of_elements = max(ceil((limit - start) / delta), 0); output[i] = start + i * delta,
  // each computed exactly (integers) or in double and rounded once (floats).
  if (is_floating(dtype)) {
    double first = start.get_double(0), step = delta.get_double(0);
    double count = std::max(0.0, std::ceil((limit.get_double(0) - first) / step));
    if (!(count < 0x1p40)) context.fail_input(cat("Range of ", count, " elements is too large"));
    Tensor out(dtype, {static_cast<int64_t>(count)});
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set_double(i, first + static_cast<double>(i) * step);
    context.outputs[0] = out;
    return;
  }
  int64_t first = start.get_int64(0), last = limit.get_int64(0), step = delta.get_int64(0);
  int64_t distance = 0;
  if (__builtin_sub_overflow(step > 0 ? last : first, step > 0 ? first : last, &distance)) {
    context.fail_input(cat("Range from ", first, " to ", last, " has more than 2^63 elements"));
  }
  int64_t count = step_count(distance, step);
  Tensor out(dtype, {count});
  dispatch_numeric(dtype, context, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < count; ++i) out.data<T>()[i] = static_cast<T>(first + i * step);
  });
  context.outputs[0] = out;
}

void non_zero_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  // A scalar counts as a 1-element vector, as numpy.nonzero treats it.
  std::vector<int64_t> shape = input.rank() == 0 ? std::vector<int64_t>{1} : input.shape();
  std::vector<std::vector<int64_t>> found;
  int64_t i = 0;
  for_each_index(shape, [&](const std::vector<int64_t>& index) {
    bool nonzero = input.dtype() == DType::kString
                       ? !input.strings()[static_cast<size_t>(i)].empty()
                   : is_floating(input.dtype())      ? input.get_double(i) != 0
                   : input.dtype() == DType::kUInt64 ? input.data<uint64_t>()[i] != 0
                                                     : input.get_int64(i) != 0;
    if (nonzero) found.push_back(index);
    ++i;
  });
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t n = static_cast<int64_t>(found.size());
  Tensor out(DType::kInt64, {rank, n});
  for (int64_t k = 0; k < rank; ++k) {
    for (int64_t j = 0; j < n; ++j) {
      out.data<int64_t>()[k * n + j] = found[static_cast<size_t>(j)][static_cast<size_t>(k)];
    }
  }
  context.outputs[0] = out;
}

// ---- Cast ----------------------------------------------------------------------------------
//
// Every value rnnc holds (64-bit integers, double, 16-bit floats) is exact in x87 extended
// precision, so numeric casts read the exact value and round once into the target:
//   float -> float  round to nearest even; beyond the target's range -> +-inf;
//   float -> int    truncate toward zero, saturate to the target's range, NaN -> 0;
//   int -> int      keep the low bits (two's complement wrap), as C++ and numpy do;
//   any -> bool     nonzero (NaN included) -> true.
static_assert(std::numeric_limits<long double>::digits >= 64,
              "Cast needs a long double that holds every int64 and double exactly");

long double exact_value(const Tensor& tensor, int64_t i, const KernelContext& context) {
  if (tensor.dtype() == DType::kFloat16) return half_to_float(tensor.data<uint16_t>()[i]);
  if (tensor.dtype() == DType::kBFloat16) return bfloat16_to_float(tensor.data<uint16_t>()[i]);
  long double value = 0;
  dispatch_numeric(tensor.dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    value = static_cast<long double>(tensor.data<T>()[i]);
  });
  return value;
}

// Rounds to float keeping a sticky last bit (round to odd), so a second rounding to a narrower
// float (half, bfloat16) gives the same result as one rounding from the exact value.
float round_to_odd_float(long double value) {
  float rounded = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &rounded, sizeof(bits));
  if (std::isfinite(rounded) && static_cast<long double>(rounded) != value && (bits & 1u) == 0) {
    rounded = std::nextafter(rounded, value > rounded ? INFINITY : -INFINITY);
  }
  return rounded;
}

template <typename T>
T saturate_integer(long double value) {
  if (std::isnan(value)) return 0;
  value = std::trunc(value);
  if (value <= static_cast<long double>(std::numeric_limits<T>::lowest())) {
    return std::numeric_limits<T>::lowest();
  }
  if (value >= static_cast<long double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  return static_cast<T>(value);
}

// Stores an exact value into element i of `out`, rounding once as described above. Integer
// sources pass `bits` (their value as int64 / uint64 bits) so int -> int keeps the low bits.
void store_value(Tensor& out, int64_t i, long double value, std::optional<uint64_t> bits,
                 const KernelContext& context) {
  switch (out.dtype()) {
    case DType::kFloat16:
      out.data<uint16_t>()[i] = float_to_half(round_to_odd_float(value));
      return;
    case DType::kBFloat16:
      out.data<uint16_t>()[i] = float_to_bfloat16(round_to_odd_float(value));
      return;
    default:
      break;
  }
  dispatch_numeric(out.dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    T& slot = out.data<T>()[i];
    if constexpr (std::is_same_v<T, bool>) {
      slot = value != 0;
    } else if constexpr (std::is_floating_point_v<T>) {
      slot = static_cast<T>(value);  // IEEE: out of range rounds to +-inf
    } else if (bits) {
      slot = static_cast<T>(*bits);
    } else {
      slot = saturate_integer<T>(value);
    }
  });
}

// Numbers in plain (not scientific) notation with the fewest digits that read back as the same
// value of the source type; the spec's literals for the special values.
std::string format_number(const Tensor& tensor, int64_t i) {
  DType dtype = tensor.dtype();
  if (dtype == DType::kBool) return tensor.data<bool>()[i] ? "1" : "0";
  if (dtype == DType::kUInt64) return std::to_string(tensor.data<uint64_t>()[i]);
  if (!is_floating(dtype)) return std::to_string(tensor.get_int64(i));
  double value = tensor.get_double(i);
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "INF" : "-INF";
  char buffer[512];
  std::to_chars_result written;
  if (dtype == DType::kFloat64) {
    written = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed);
  } else if (dtype == DType::kFloat32) {
    written = std::to_chars(buffer, buffer + sizeof(buffer), static_cast<float>(value),
                            std::chars_format::fixed);
  } else {
    // 16-bit floats: the shortest decimal that reads back to the same 16-bit value.
    uint16_t original = tensor.data<uint16_t>()[i];
    auto narrow = dtype == DType::kFloat16 ? float_to_half : float_to_bfloat16;
    float shortest = static_cast<float>(value);
    for (int digits = 1; digits <= 9; ++digits) {
      char scratch[64];
      auto end = std::to_chars(scratch, scratch + sizeof(scratch), static_cast<float>(value),
                               std::chars_format::scientific, digits - 1)
                     .ptr;
      float candidate = 0;
      std::from_chars(scratch, end, candidate);
      if (narrow(candidate) == original) {
        shortest = candidate;
        break;
      }
    }
    written = std::to_chars(buffer, buffer + sizeof(buffer), shortest, std::chars_format::fixed);
  }
  RNNC_CHECK(written.ec == std::errc(), "number does not fit the format buffer");
  return std::string(buffer, written.ptr);
}

bool equals_ignoring_case(const std::string& text, const char* word) {
  size_t n = std::strlen(word);
  if (text.size() != n) return false;
  for (size_t k = 0; k < n; ++k) {
    if (std::tolower(static_cast<unsigned char>(text[k])) != word[k]) return false;
  }
  return true;
}

// Parses a number the way Cast reads strings: "3.14", "1e-5", "1E8", "+INF", "INF", "-INF",
// "NaN" (any case). Strings that are whole integers are read exactly (as int64 or uint64 bits)
// so int64 values beyond 2^53 survive.
struct ParsedNumber {
  long double value = 0;
  std::optional<uint64_t> bits;  // set for integer strings
};

std::optional<ParsedNumber> parse_number(const std::string& text) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  const char* digits =
      begin != end && *begin == '+' ? begin + 1 : begin;  // from_chars takes no '+'
  ParsedNumber parsed;
  int64_t integer = 0;
  uint64_t unsigned_integer = 0;
  if (auto r = std::from_chars(digits, end, integer); r.ec == std::errc() && r.ptr == end) {
    parsed.value = static_cast<long double>(integer);
    parsed.bits = static_cast<uint64_t>(integer);
    return parsed;
  }
  if (auto r = std::from_chars(digits, end, unsigned_integer);
      r.ec == std::errc() && r.ptr == end) {
    parsed.value = static_cast<long double>(unsigned_integer);
    parsed.bits = unsigned_integer;
    return parsed;
  }
  auto r = std::from_chars(digits, end, parsed.value);
  if (r.ptr != end || digits == end) return std::nullopt;
  if (r.ec == std::errc::result_out_of_range) {  // beyond even long double: infinite or zero
    bool negative = *digits == '-';
    bool tiny = text.find("e-") != std::string::npos || text.find("E-") != std::string::npos;
    long double magnitude = tiny ? 0.0L : std::numeric_limits<long double>::infinity();
    parsed.value = negative ? -magnitude : magnitude;
  }
  return parsed;
}

void store_string(Tensor& out, int64_t i, const std::string& text, const KernelContext& context) {
  if (out.dtype() == DType::kBool &&
      (equals_ignoring_case(text, "true") || equals_ignoring_case(text, "false"))) {
    out.data<bool>()[i] = equals_ignoring_case(text, "true");
    return;
  }
  std::optional<ParsedNumber> parsed = parse_number(text);
  if (!parsed) {
    context.fail_input(cat("input 0 element ", i, " is \"", text, "\", which is not a number"));
  }
  // float and double read straight from the text: one rounding, not two through long double.
  auto read_direct = [&](auto& value) {
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    auto r = std::from_chars(begin, text.data() + text.size(), value);
    using T = std::remove_reference_t<decltype(value)>;
    if (r.ec == std::errc::result_out_of_range) value = static_cast<T>(parsed->value);
  };
  if (out.dtype() == DType::kFloat32) return read_direct(out.data<float>()[i]);
  if (out.dtype() == DType::kFloat64) return read_direct(out.data<double>()[i]);
  bool integral_target = is_integer(out.dtype());
  store_value(out, i, parsed->value, integral_target ? parsed->bits : std::nullopt, context);
}

Tensor cast_tensor(const Tensor& input, DType to, const KernelContext& context) {
  if (input.dtype() == to) return input;
  Tensor out(to, input.shape());
  if (to == DType::kString) {
    for (int64_t i = 0; i < input.numel(); ++i) {
      out.strings()[static_cast<size_t>(i)] = format_number(input, i);
    }
    return out;
  }
  if (input.dtype() == DType::kString) {
    for (int64_t i = 0; i < input.numel(); ++i) {
      store_string(out, i, input.strings()[static_cast<size_t>(i)], context);
    }
    return out;
  }
  bool integral_source = is_integer(input.dtype()) || input.dtype() == DType::kBool;
  bool integral_target = is_integer(to);
  for (int64_t i = 0; i < input.numel(); ++i) {
    std::optional<uint64_t> bits;
    if (integral_source && integral_target) {
      bits = input.dtype() == DType::kUInt64 ? input.data<uint64_t>()[i]
                                             : static_cast<uint64_t>(input.get_int64(i));
    }
    store_value(out, i, exact_value(input, i, context), bits, context);
  }
  return out;
}

DType cast_target(const KernelContext& context, int64_t to) {
  std::optional<DType> dtype = dtype_from_onnx(static_cast<int32_t>(to));
  if (!dtype || *dtype == DType::kUndefined || *dtype == DType::kComplex64 ||
      *dtype == DType::kComplex128) {
    raise_unsupported(
        cat(context.node.describe(), ": casts to data type ", to, " are not supported"));
  }
  return *dtype;
}

void cast_kernel(KernelContext& context) {
  if (!context.node.has_attr("to")) context.fail("attribute 'to' is required");
  DType to = cast_target(context, context.node.attr_int("to", 0));
  context.outputs[0] = cast_tensor(context.input(0), to, context);
}

void cast_like_kernel(KernelContext& context) {
  context.outputs[0] = cast_tensor(context.input(0), context.input(1).dtype(), context);
}

}  // namespace

Tensor concat_tensors(const KernelContext& context, const std::vector<const Tensor*>& inputs,
                      size_t axis) {
  const Tensor& first = *inputs.at(0);
  std::vector<int64_t> shape = first.shape();
  shape[axis] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = *inputs[i];
    bool fits = input.rank() == first.rank() && input.dtype() == first.dtype();
    for (size_t k = 0; fits && k < shape.size(); ++k) {
      fits = k == axis || input.shape()[k] == shape[k];
    }
    if (!fits) {
      context.fail_input(cat("input ", i, " has shape ", shape_text(input.shape()),
                             ", which does not concatenate with input 0 ", shape_text(first.shape()),
                             " along axis ", axis));
    }
    shape[axis] += input.shape()[axis];
  }
  Tensor out(first.dtype(), shape);
  // Row-major: each of the `outer` slabs of the output is the inputs' slabs one after another.
  int64_t outer = product(shape, 0, axis);
  int64_t inner = product(shape, axis + 1, shape.size());
  int64_t written = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* input : inputs) {
      int64_t slab = input->shape()[axis] * inner;
      copy_elements(*input, o * slab, out, written, slab);
      written += slab;
    }
  }
  return out;
}

std::vector<Tensor> split_tensor(const Tensor& input, size_t axis,
                                 const std::vector<int64_t>& sizes) {
  int64_t d = input.dim(static_cast<int64_t>(axis));
  std::vector<Tensor> pieces;
  int64_t outer = product(input.shape(), 0, axis);
  int64_t inner = product(input.shape(), axis + 1, input.shape().size());
  int64_t offset = 0;  // along the axis
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int64_t> shape = input.shape();
    shape[axis] = sizes[i];
    Tensor out(input.dtype(), shape);
    for (int64_t o = 0; o < outer; ++o) {
      copy_elements(input, (o * d + offset) * inner, out, o * sizes[i] * inner, sizes[i] * inner);
    }
    offset += sizes[i];
    pieces.push_back(std::move(out));
  }
  return pieces;
}

void register_tensor_kernels(std::map<std::string, Kernel>& registry) {
  const std::pair<const char*, Kernel> kernels[] = {
      {"Cast", cast_kernel},
      {"CastLike", cast_like_kernel},
      {"Compress", compress_kernel},
      {"Concat", concat_kernel},
      {"Constant", constant_kernel},
      {"ConstantOfShape", constant_of_shape_kernel},
      {"DepthToSpace", depth_to_space_kernel},
      {"EyeLike", eye_like_kernel},
      {"Expand", expand_kernel},
      {"Flatten", flatten_kernel},
      {"Gather", gather_kernel},
      {"GatherElements", gather_elements_kernel},
      {"GatherND", gather_nd_kernel},
      {"Identity", identity_kernel},
      {"NonZero", non_zero_kernel},
      {"OneHot", one_hot_kernel},
      {"Pad", pad_kernel},
      {"Range", range_kernel},
      {"Reshape", reshape_kernel},
      {"ReverseSequence", reverse_sequence_kernel},
      {"Scatter", scatter_elements_kernel},
      {"ScatterElements", scatter_elements_kernel},
      {"ScatterND", scatter_nd_kernel},
      {"Shape", shape_kernel},
      {"Size", size_kernel},
      {"Slice", slice_kernel},
      {"SpaceToDepth", space_to_depth_kernel},
      {"Split", split_kernel},
      {"Squeeze", squeeze_kernel},
      {"Tile", tile_kernel},
      {"Transpose", transpose_kernel},
      {"Trilu", trilu_kernel},
      {"Unique", unique_kernel},
      {"Unsqueeze", unsqueeze_kernel},
  };
  for (const auto& [op_type, kernel] : kernels) registry.emplace(op_type, kernel);
}

}  // namespace rnnc
