// Reference kernels for the sequence ops and the optional ops (docs/ops/sequence.md). A sequence
// is a Tensor holding elements (Tensor::sequence), an empty optional is Tensor::none, and a
// present optional is its value itself, so Optional(x) is x and OptionalGetElement passes its
// input on once it knows it holds something.
#include <limits>

#include "ir/reference/kernel.h"

namespace rnnc {

namespace {

const Tensor& sequence_operand(const KernelContext& context, size_t i, const std::string& name) {
  const Tensor& value = context.input(i);
  if (!value.is_sequence()) {
    context.fail_input(cat("input '", name, "' is not a sequence"));
  }
  return value;
}

// A 'position' input (an int32 or int64 scalar) as an index into a sequence of `length`
// elements: negative positions count from the end. Valid positions are [-length, length - 1], or
// up to length itself for an insertion.
size_t sequence_position(const KernelContext& context, size_t i, int64_t length,
                         bool one_past_end) {
  const Tensor& position = context.input(i);
  if (position.numel() != 1) {
    context.fail_input(cat("input 'position' must hold one element, got ",
                           shape_text(position.shape())));
  }
  int64_t at = position.get_int64(0);
  int64_t last = one_past_end ? length : length - 1;
  if (at < -length || at > last) {
    context.fail_input(cat("position ", at, " is out of range for a sequence of ", length,
                           " elements (valid: [", -length, ", ", last, "])"));
  }
  return static_cast<size_t>(at < 0 ? at + length : at);
}

void sequence_construct_kernel(KernelContext& context) {
  std::vector<Tensor> elements;
  for (size_t i = 0; i < context.inputs.size(); ++i) elements.push_back(context.input(i));
  DType dtype = elements[0].dtype();
  for (size_t i = 1; i < elements.size(); ++i) {
    if (elements[i].dtype() != dtype) {
      context.fail_input(cat("input ", i, " is ", dtype_onnx_name(elements[i].dtype()),
                             " but input 0 is ", dtype_onnx_name(dtype)));
    }
  }
  context.outputs[0] = Tensor::sequence(dtype, std::move(elements));
}

void sequence_empty_kernel(KernelContext& context) {
  context.outputs[0] = Tensor::sequence(context.node.output(0)->type.dtype, {});
}

void sequence_at_kernel(KernelContext& context) {
  const std::vector<Tensor>& elements = sequence_operand(context, 0, "input_sequence").elements();
  int64_t length = static_cast<int64_t>(elements.size());
  context.outputs[0] = elements[sequence_position(context, 1, length, /*one_past_end=*/false)];
}

void sequence_insert_kernel(KernelContext& context) {
  const Tensor& sequence = sequence_operand(context, 0, "input_sequence");
  const Tensor& tensor = context.input(1);
  if (!tensor.is_tensor() || tensor.dtype() != sequence.dtype()) {
    context.fail_input(cat("input 'tensor' is not a ", dtype_onnx_name(sequence.dtype()),
                           " tensor, the sequence's element type"));
  }
  std::vector<Tensor> elements = sequence.elements();
  int64_t length = static_cast<int64_t>(elements.size());
  size_t at = context.has_input(2) ? sequence_position(context, 2, length, /*one_past_end=*/true)
                                   : elements.size();
  elements.insert(elements.begin() + static_cast<std::ptrdiff_t>(at), tensor);
  context.outputs[0] = Tensor::sequence(sequence.dtype(), std::move(elements));
}

void sequence_erase_kernel(KernelContext& context) {
  const Tensor& sequence = sequence_operand(context, 0, "input_sequence");
  std::vector<Tensor> elements = sequence.elements();
  int64_t length = static_cast<int64_t>(elements.size());
  if (length == 0) context.fail_input("cannot erase from an empty sequence");
  size_t at = context.has_input(1) ? sequence_position(context, 1, length, /*one_past_end=*/false)
                                   : elements.size() - 1;
  elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(at));
  context.outputs[0] = Tensor::sequence(sequence.dtype(), std::move(elements));
}

void sequence_length_kernel(KernelContext& context) {
  const Tensor& sequence = sequence_operand(context, 0, "input_sequence");
  context.outputs[0] = Tensor::scalar<int64_t>(static_cast<int64_t>(sequence.elements().size()));
}

int64_t normalized_axis(const KernelContext& context, int64_t rank) {
  int64_t axis = context.node.attr_int("axis", 0);
  if (axis < -rank || axis >= rank) {
    context.fail(cat("attribute 'axis' = ", axis, " is out of range for rank ", rank,
                     " (valid: [", -rank, ", ", rank - 1, "])"));
  }
  return axis < 0 ? axis + rank : axis;
}

// SplitToSequence: the lengths of the pieces, from `split` (a scalar chunk length, the last chunk
// taking what is left; or a list summing to the axis's length), or pieces of 1 without it.
std::vector<int64_t> piece_lengths(const KernelContext& context, const Tensor& input,
                                   int64_t axis) {
  int64_t d = input.dim(axis);
  if (!context.has_input(1)) return std::vector<int64_t>(static_cast<size_t>(d), 1);
  const Tensor& split = context.input(1);
  std::vector<int64_t> given = tensor_to_int64s(split);
  if (split.rank() == 0) {
    int64_t chunk = given[0];
    if (chunk <= 0) context.fail_input(cat("scalar 'split' = ", chunk, " must be positive"));
    std::vector<int64_t> lengths(static_cast<size_t>(d / chunk), chunk);
    if (d % chunk != 0) lengths.push_back(d % chunk);
    return lengths;
  }
  if (split.rank() != 1) {
    context.fail_input(cat("'split' must be a scalar or 1-D, got ", shape_text(split.shape())));
  }
  int64_t total = 0;
  for (int64_t length : given) {
    if (length < 0) context.fail_input(cat("'split' ", shape_text(given), " has a negative length"));
    total += length;
  }
  if (total != d) {
    context.fail_input(cat("'split' ", shape_text(given), " sums to ", total, ", but dim ", axis,
                           " of ", shape_text(input.shape()), " is ", d));
  }
  return given;
}

void split_to_sequence_kernel(KernelContext& context) {
  const Tensor& input = context.input(0);
  if (input.rank() == 0) context.fail_input("cannot split a scalar");
  int64_t axis = normalized_axis(context, input.rank());
  std::vector<Tensor> pieces =
      split_tensor(input, static_cast<size_t>(axis), piece_lengths(context, input, axis));
  if (!context.has_input(1) && context.node.attr_int("keepdims", 1) == 0) {
    for (Tensor& piece : pieces) {
      std::vector<int64_t> shape = piece.shape();
      shape.erase(shape.begin() + axis);
      piece = piece.reshaped(shape);
    }
  }
  context.outputs[0] = Tensor::sequence(input.dtype(), std::move(pieces));
}

void concat_from_sequence_kernel(KernelContext& context) {
  if (!context.node.has_attr("axis")) context.fail("attribute 'axis' is required");
  const std::vector<Tensor>& elements = sequence_operand(context, 0, "input_sequence").elements();
  if (elements.empty()) context.fail_input("cannot concatenate an empty sequence");
  bool new_axis = context.node.attr_int("new_axis", 0) != 0;
  int64_t rank = elements[0].rank() + (new_axis ? 1 : 0);
  if (rank == 0) context.fail_input("cannot concatenate scalars without new_axis = 1");
  int64_t axis = normalized_axis(context, rank);
  std::vector<Tensor> parts;  // with new_axis, each element gains a dim of 1 at `axis`
  for (const Tensor& element : elements) {
    if (!new_axis) {
      parts.push_back(element);
      continue;
    }
    if (element.shape() != elements[0].shape()) {
      context.fail_input(cat("new_axis = 1 stacks elements of one shape, but ",
                             shape_text(element.shape()), " differs from ",
                             shape_text(elements[0].shape())));
    }
    std::vector<int64_t> shape = element.shape();
    shape.insert(shape.begin() + axis, 1);
    parts.push_back(element.reshaped(shape));
  }
  std::vector<const Tensor*> pointers;
  for (const Tensor& part : parts) pointers.push_back(&part);
  context.outputs[0] = concat_tensors(context, pointers, static_cast<size_t>(axis));
}

// SequenceMap: body(element i of input_sequence, the additional inputs: element i of each
// sequence, each tensor whole) for every i; output k is the sequence of the body's output k.
void sequence_map_kernel(KernelContext& context) {
  const Graph& body = *context.node.attr_graph("body");
  const Tensor& sequence = sequence_operand(context, 0, "input_sequence");
  size_t length = sequence.elements().size();
  for (size_t j = 1; j < context.inputs.size(); ++j) {
    const Tensor& extra = context.input(j);
    if (extra.is_sequence() && extra.elements().size() != length) {
      context.fail_input(cat("additional input ", j, " is a sequence of ", extra.elements().size(),
                             " elements, but input_sequence has ", length));
    }
  }
  std::vector<std::vector<Tensor>> collected(context.outputs.size());
  for (size_t i = 0; i < length; ++i) {
    std::vector<Tensor> body_inputs;
    for (size_t j = 0; j < context.inputs.size(); ++j) {
      const Tensor& value = context.input(j);
      body_inputs.push_back(value.is_sequence() ? value.elements()[i] : value);
    }
    std::vector<Tensor> out = context.run_subgraph(body, body_inputs);
    for (size_t k = 0; k < collected.size(); ++k) collected[k].push_back(std::move(out[k]));
  }
  for (size_t k = 0; k < collected.size(); ++k) {
    DType dtype = context.node.output(k) ? context.node.output(k)->type.dtype
                                         : body.outputs()[k]->type.dtype;
    context.outputs[k] = Tensor::sequence(dtype, std::move(collected[k]));
  }
}

void optional_kernel(KernelContext& context) {
  context.outputs[0] = context.has_input(0) ? context.input(0)
                                            : Tensor::none(context.node.output(0)->type.dtype);
}

void optional_has_element_kernel(KernelContext& context) {
  bool has = context.has_input(0) && !context.input(0).is_none();
  context.outputs[0] = Tensor::scalar<bool>(has);
}

void optional_get_element_kernel(KernelContext& context) {
  const Tensor& value = context.input(0);
  if (value.is_none()) context.fail_input("input 'input' is an empty optional");
  context.outputs[0] = value;
}

}  // namespace

void register_sequence_kernels(std::map<std::string, Kernel>& registry) {
  registry["SequenceConstruct"] = sequence_construct_kernel;
  registry["SequenceEmpty"] = sequence_empty_kernel;
  registry["SequenceAt"] = sequence_at_kernel;
  registry["SequenceInsert"] = sequence_insert_kernel;
  registry["SequenceErase"] = sequence_erase_kernel;
  registry["SequenceLength"] = sequence_length_kernel;
  registry["SplitToSequence"] = split_to_sequence_kernel;
  registry["ConcatFromSequence"] = concat_from_sequence_kernel;
  registry["SequenceMap"] = sequence_map_kernel;
  registry["Optional"] = optional_kernel;
  registry["OptionalHasElement"] = optional_has_element_kernel;
  registry["OptionalGetElement"] = optional_get_element_kernel;
}

}  // namespace rnnc
