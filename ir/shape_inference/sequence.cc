// Type and shape inference for the sequence ops (SequenceConstruct, SequenceEmpty, SequenceAt,
// SequenceInsert, SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence,
// SequenceMap) and the optional ops (Optional, OptionalHasElement, OptionalGetElement);
// docs/ops/sequence.md. A sequence's type is its elements' common type: the dtype every element
// has, and the dims every element agrees on (unknown where they may differ).
#include "ir/op_schema.h"

namespace rnnc {

namespace {

bool is_sequence(ValueKind kind) {
  return kind == ValueKind::kSequence || kind == ValueKind::kOptionalSequence;
}

const char* kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::kTensor: return "tensor";
    case ValueKind::kSequence: return "sequence";
    case ValueKind::kOptionalTensor: return "optional tensor";
    case ValueKind::kOptionalSequence: return "optional sequence";
  }
  return "?";
}

// Input i's type, which must be of one of the `allowed` kinds (named in the error as the ONNX
// operator doc names the input).
const TensorType& input_of_kind(const InferenceContext& context, size_t i, const std::string& name,
                                std::initializer_list<ValueKind> allowed) {
  const TensorType& type = context.input_type(i);
  std::string list;
  for (ValueKind kind : allowed) {
    if (type.kind == kind) return type;
    list += cat(list.empty() ? "" : " or ", kind_name(kind));
  }
  context.fail(cat("input '", name, "' is ", type.to_string(), ", expected a ", list));
}

const TensorType& sequence_input(const InferenceContext& context, size_t i,
                                 const std::string& name) {
  return input_of_kind(context, i, name, {ValueKind::kSequence});
}

const TensorType& tensor_input(const InferenceContext& context, size_t i,
                               const std::string& name) {
  return input_of_kind(context, i, name, {ValueKind::kTensor});
}

TensorType sequence_of(TensorType element) {
  element.kind = ValueKind::kSequence;
  element.quant = nullptr;
  return element;
}

// A 'position' input: an int32 or int64 tensor of one element (the spec says a scalar; exporters
// and ONNX's own test data also write shape [1]).
void check_position(const InferenceContext& context, size_t i) {
  if (!context.has_input(i)) return;
  tensor_input(context, i, "position");
  context.require_input_type(static_cast<int>(i), "position", {DType::kInt32, DType::kInt64});
}

// SequenceConstruct(inputs...) -> the sequence of the inputs, which share one element type.
void infer_sequence_construct(InferenceContext& context) {
  TensorType element = tensor_input(context, 0, "inputs");
  for (size_t i = 1; i < context.num_inputs(); ++i) {
    const TensorType& next = tensor_input(context, i, "inputs");
    if (next.dtype != element.dtype) {
      context.fail(cat("input ", i, " is ", dtype_onnx_name(next.dtype), " but input 0 is ",
                       dtype_onnx_name(element.dtype), " (a sequence has one element type)"));
    }
    element = join_types(element, next);
  }
  context.set_output_type(0, sequence_of(element));
}

// SequenceEmpty {dtype = float} -> an empty sequence of that element type.
void infer_sequence_empty(InferenceContext& context) {
  int64_t code = context.node().attr_int("dtype", static_cast<int64_t>(DType::kFloat32));
  std::optional<DType> dtype = dtype_from_onnx(code);
  if (!dtype) context.fail(cat("attribute 'dtype' = ", code, " is not a tensor element type"));
  TensorType element;
  element.dtype = *dtype;
  context.set_output_type(0, sequence_of(element));
}

// SequenceAt(input_sequence, position) -> the element at position (negative counts from the end).
void infer_sequence_at(InferenceContext& context) {
  TensorType element = sequence_input(context, 0, "input_sequence").element();
  check_position(context, 1);
  context.set_output_type(0, element);
}

// SequenceInsert(input_sequence, tensor, position = end) -> the sequence with tensor inserted.
void infer_sequence_insert(InferenceContext& context) {
  const TensorType& sequence = sequence_input(context, 0, "input_sequence");
  const TensorType& tensor = tensor_input(context, 1, "tensor");
  if (tensor.dtype != sequence.dtype) {
    context.fail(cat("input 'tensor' is ", dtype_onnx_name(tensor.dtype), " but the sequence holds ",
                     dtype_onnx_name(sequence.dtype)));
  }
  check_position(context, 2);
  context.set_output_type(0, sequence_of(join_types(sequence.element(), tensor)));
}

// SequenceErase(input_sequence, position = end - 1) -> the sequence without that element.
void infer_sequence_erase(InferenceContext& context) {
  const TensorType& sequence = sequence_input(context, 0, "input_sequence");
  check_position(context, 1);
  context.set_output_type(0, sequence);
}

// SequenceLength(input_sequence) -> its number of elements, an int64 scalar.
void infer_sequence_length(InferenceContext& context) {
  sequence_input(context, 0, "input_sequence");
  context.set_output(0, DType::kInt64, Shape{});
}

// SplitToSequence(input, split?) {axis = 0, keepdims = 1} -> the pieces of input along axis:
// by the 1-D split lengths, into chunks of a scalar split (the last may be shorter), or into
// pieces of 1 (squeezed when keepdims = 0) when split is absent.
void infer_split_to_sequence(InferenceContext& context) {
  const TensorType& input = tensor_input(context, 0, "input");
  TensorType element = input;
  element.quant = nullptr;
  if (context.has_input(1)) {
    tensor_input(context, 1, "split");
    context.require_input_type(1, "split", {DType::kInt32, DType::kInt64});
  }
  if (input.shape) {
    int64_t rank = static_cast<int64_t>(input.shape->size());
    int64_t axis = context.normalize_axis(context.node().attr_int("axis", 0), rank, "axis");
    Shape shape = *input.shape;
    if (!context.has_input(1)) {
      if (context.node().attr_int("keepdims", 1) == 0) {
        shape.erase(shape.begin() + axis);
      } else {
        shape[static_cast<size_t>(axis)] = Dim(1);
      }
    } else {
      const Tensor* split = context.input_constant(1);
      std::optional<int64_t> common;  // the length every piece has, when one does
      if (split && split->rank() == 1 && split->numel() > 0) {
        const int64_t first = split->get_int64(0);
        bool equal = true;
        for (int64_t k = 1; k < split->numel(); ++k) equal = equal && split->get_int64(k) == first;
        if (equal) common = first;
      }
      shape[static_cast<size_t>(axis)] = common ? Dim(*common) : Dim::unknown();
    }
    element.shape = shape;
  }
  context.set_output_type(0, sequence_of(element));
}

// ConcatFromSequence(input_sequence) {axis, new_axis = 0} -> the elements joined along axis
// (new_axis = 0) or stacked along a new axis (new_axis = 1).
void infer_concat_from_sequence(InferenceContext& context) {
  TensorType element = sequence_input(context, 0, "input_sequence").element();
  const Attribute* axis_attr = context.node().find_attr("axis");
  if (!axis_attr) context.fail("attribute 'axis' is required");
  bool new_axis = context.node().attr_int("new_axis", 0) != 0;
  if (element.shape) {
    Shape shape = *element.shape;
    int64_t rank = static_cast<int64_t>(shape.size()) + (new_axis ? 1 : 0);
    int64_t axis = context.normalize_axis(context.node().attr_int("axis", 0), rank, "axis");
    if (new_axis) {
      shape.insert(shape.begin() + axis, Dim::unknown());
    } else {
      shape[static_cast<size_t>(axis)] = Dim::unknown();
    }
    element.shape = shape;
  }
  context.set_output_type(0, element);
}

// SequenceMap(input_sequence, additional_inputs...) {body} -> sequences: body runs once per
// element of input_sequence; each additional input that is a sequence gives the body its element
// at the same position, a tensor is passed whole every time. Output k collects body output k.
void infer_sequence_map(InferenceContext& context) {
  Graph* body = context.node().attr_graph("body");
  if (!body) context.fail("attribute 'body' (a graph) is missing");
  sequence_input(context, 0, "input_sequence");
  if (body->inputs().size() != context.num_inputs()) {
    context.fail(cat("body has ", body->inputs().size(), " inputs, expected ",
                     context.num_inputs(), " (one per input of the node)"));
  }
  for (size_t i = 0; i < context.num_inputs(); ++i) {
    const TensorType& type = input_of_kind(context, i, i == 0 ? "input_sequence"
                                                              : "additional_inputs",
                                           {ValueKind::kSequence, ValueKind::kTensor});
    Value* body_input = body->inputs()[i];
    if (body_input->type.dtype == DType::kUndefined) {
      body_input->type = type.element();
    } else if (body_input->type.dtype != type.dtype || !body_input->type.is_tensor()) {
      context.fail(cat("body input ", i, " is ", body_input->type.to_string(),
                       " but the node gives it ", type.element().to_string()));
    }
    if (!body_input->type.shape) body_input->type.shape = type.shape;
  }
  infer_graph(*body);
  if (body->outputs().size() != context.node().num_outputs()) {
    context.fail(cat("has ", context.node().num_outputs(), " outputs but its body returns ",
                     body->outputs().size()));
  }
  for (size_t k = 0; k < body->outputs().size(); ++k) {
    const TensorType& out = body->outputs()[k]->type;
    if (!out.is_tensor()) {
      context.fail(cat("body output ", k, " is ", out.to_string(), ", expected a tensor"));
    }
    context.set_output_type(k, sequence_of(out));
  }
}

// Optional(input?) {type?} -> an optional holding input, or an empty optional of `type`.
void infer_optional(InferenceContext& context) {
  const Attribute* type_attr = context.node().find_attr("type");
  TensorType element;
  if (context.has_input(0)) {
    element = input_of_kind(context, 0, "input", {ValueKind::kTensor, ValueKind::kSequence});
    if (type_attr && type_attr->kind == Attribute::Kind::kType &&
        (type_attr->tp.kind != element.kind || type_attr->tp.dtype != element.dtype)) {
      context.fail(cat("attribute 'type' is ", type_attr->tp.to_string(), " but input 'input' is ",
                       element.to_string()));
    }
  } else {
    if (!type_attr || type_attr->kind != Attribute::Kind::kType) {
      context.fail("an Optional without an input needs attribute 'type' (a type)");
    }
    element = type_attr->tp;
    if (element.kind != ValueKind::kTensor && element.kind != ValueKind::kSequence) {
      context.fail(cat("attribute 'type' is ", element.to_string(),
                       ", expected a tensor or sequence type"));
    }
  }
  element.kind = element.kind == ValueKind::kSequence ? ValueKind::kOptionalSequence
                                                      : ValueKind::kOptionalTensor;
  context.set_output_type(0, element);
}

// OptionalHasElement(input?) -> whether input holds a value (opset 18 also takes a tensor or a
// sequence, which always do, and an omitted input, which does not).
void infer_optional_has_element(InferenceContext& context) {
  if (context.node().opset() < 18 || context.has_input(0)) {
    if (!context.has_input(0)) context.fail("required input 'input' is missing");
    if (context.node().opset() < 18) {
      input_of_kind(context, 0, "input",
                    {ValueKind::kOptionalTensor, ValueKind::kOptionalSequence});
    }
  }
  context.set_output(0, DType::kBool, Shape{});
}

// OptionalGetElement(input) -> the value an optional holds (opset 18: a tensor or sequence
// passes through).
void infer_optional_get_element(InferenceContext& context) {
  const TensorType& type =
      context.node().opset() < 18
          ? input_of_kind(context, 0, "input",
                          {ValueKind::kOptionalTensor, ValueKind::kOptionalSequence})
          : context.input_type(0);
  TensorType element = type;
  element.kind = is_sequence(type.kind) ? ValueKind::kSequence : ValueKind::kTensor;
  context.set_output_type(0, element);
}

}  // namespace

void register_sequence_schemas(std::vector<OpSchema>& registry) {
  constexpr bool kAnyKind = true;
  registry.push_back({"SequenceConstruct", 11, 1, -1, 1, 1, infer_sequence_construct, kAnyKind});
  registry.push_back({"SequenceEmpty", 11, 0, 0, 1, 1, infer_sequence_empty, kAnyKind});
  registry.push_back({"SequenceAt", 11, 2, 2, 1, 1, infer_sequence_at, kAnyKind});
  registry.push_back({"SequenceInsert", 11, 2, 3, 1, 1, infer_sequence_insert, kAnyKind});
  registry.push_back({"SequenceErase", 11, 1, 2, 1, 1, infer_sequence_erase, kAnyKind});
  registry.push_back({"SequenceLength", 11, 1, 1, 1, 1, infer_sequence_length, kAnyKind});
  registry.push_back({"SplitToSequence", 11, 1, 2, 1, 1, infer_split_to_sequence, kAnyKind});
  registry.push_back(
      {"ConcatFromSequence", 11, 1, 1, 1, 1, infer_concat_from_sequence, kAnyKind});
  registry.push_back({"SequenceMap", 17, 1, -1, 1, -1, infer_sequence_map, kAnyKind});
  registry.push_back({"Optional", 15, 0, 1, 1, 1, infer_optional, kAnyKind});
  registry.push_back({"OptionalHasElement", 15, 0, 1, 1, 1, infer_optional_has_element, kAnyKind});
  registry.push_back({"OptionalGetElement", 15, 1, 1, 1, 1, infer_optional_get_element, kAnyKind});
}

}  // namespace rnnc
