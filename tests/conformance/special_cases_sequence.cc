// Special cases of the sequence and optional ops (specs/sequence.cc). A test's graph inputs are
// tensors, so each special case chooses how many elements a sequence input has and their shapes
// (one shape, one rank, or any ranks), and once the node exists (Draft::finish_node) joins them
// with SequenceConstruct (SequenceEmpty for none) or wraps a tensor in Optional, and wires the
// result into the node. A sequence or optional result leaves the graph as tensors: SequenceLength
// and SequenceAt of every element, OptionalHasElement and OptionalGetElement.
#include <algorithm>
#include <cstddef>
#include <memory>

#include "ir/error.h"
#include "tests/conformance/draft.h"

namespace rnnc::conformance {

namespace {

// ---- the draft: elements of sequence inputs ---------------------------------------------------

// The operands of the variadic `name`, made `count` present ones named name_0, name_1, ... (copies
// of its first operand are added as needed, the rest left out). Returns their indices in
// draft.inputs; a variadic group is contiguous there.
std::vector<size_t> resize_elements(Draft& draft, const std::string& name, size_t count) {
  std::vector<size_t> at;
  for (size_t i = 0; i < draft.inputs.size(); ++i) {
    if (draft.inputs[i].spec->name == name) at.push_back(i);
  }
  RNNC_CHECK(!at.empty(), draft.spec.op_type, ": no operand ", name);
  while (at.size() < count) {
    OperandDraft copy = draft.inputs[at.back()];
    draft.inputs.insert(draft.inputs.begin() + static_cast<std::ptrdiff_t>(at.back() + 1), copy);
    at.push_back(at.back() + 1);
  }
  for (size_t k = 0; k < at.size(); ++k) {
    draft.inputs[at[k]].present = k < count;
    draft.inputs[at[k]].name = cat(name, "_", k);
  }
  at.resize(count);
  return at;
}

enum class ElementShapes { kOneShape, kOneRank, kAnyRank };

ElementShapes draw_element_shapes(Draft& draft) {
  return draft.rng.pick(std::vector<ElementShapes>{
      ElementShapes::kOneShape, ElementShapes::kOneRank, ElementShapes::kAnyRank});
}

// Shapes the elements at `at`: the first is `first` (the primary shape, where the forced dim class
// lands), the others that shape, random dims of its rank, or random dims of any rank the operand
// allows. Returns the elements' value names.
std::vector<std::string> shape_elements(Draft& draft, const std::vector<size_t>& at,
                                        ElementShapes how, const std::vector<int64_t>& first) {
  std::vector<std::string> names;
  for (size_t k = 0; k < at.size(); ++k) {
    OperandDraft& element = draft.inputs[at[k]];
    if (k == 0 || how == ElementShapes::kOneShape) {
      element.shape = first;
    } else if (how == ElementShapes::kOneRank) {
      element.shape = draft.random_dims(static_cast<int64_t>(first.size()));
    } else {
      element.shape =
          draft.random_dims(draft.rng.uniform_int(element.spec->min_rank, element.spec->max_rank));
    }
    names.push_back(element.name);
  }
  if (at.size() > 1) {
    draft.tags.insert(how == ElementShapes::kOneShape  ? "elements=one_shape"
                      : how == ElementShapes::kOneRank ? "elements=one_rank"
                                                       : "elements=any_rank");
  }
  draft.tags.insert(cat("length=", at.size()));
  return names;
}

// Elements of `name`, `count` of them, shaped as shape_elements does from the primary shape.
std::vector<std::string> sequence_elements(Draft& draft, const std::string& name, size_t count) {
  std::vector<size_t> at = resize_elements(draft, name, count);
  return shape_elements(draft, at, draw_element_shapes(draft), draft.primary_shape);
}

// A position of type `dtype`: a scalar, or of shape [1] (as exporters write it) one time in four.
void set_position(Draft& draft, OperandDraft& position, int64_t value) {
  bool vector = draft.rng.chance(0.25);
  draft.set_data(position, make_tensor(position.dtype,
                                       vector ? std::vector<int64_t>{1} : std::vector<int64_t>{},
                                       {static_cast<double>(value)}));
  draft.tags.insert(value < 0 ? "position<0" : "position>=0");
  if (vector) draft.tags.insert("position_shape=[1]");
}

// ---- the model: building sequence and optional values, and taking them apart -----------------

// Makes `inputs` the node's inputs (nullptr for an omitted optional one).
void set_inputs(Node& node, const std::vector<Value*>& inputs) {
  RNNC_CHECK(inputs.size() >= node.num_inputs(), node.op_type(), ": fewer inputs than it has");
  node.grow_inputs(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) node.set_input(i, inputs[i]);
  node.trim_omitted_inputs();
}

// SequenceConstruct of the graph inputs `elements`, or SequenceEmpty {dtype} when there are none.
Value* build_sequence(Graph& graph, const std::vector<std::string>& elements, DType dtype,
                      const std::string& name, int opset) {
  if (elements.empty()) {
    Node* empty = graph.add_node("SequenceEmpty", name + "_empty", {}, {name}, opset);
    empty->set_attr("dtype", Attribute::of_int(static_cast<int64_t>(dtype)));
    return empty->output(0);
  }
  std::vector<Value*> values;
  for (const std::string& element : elements) values.push_back(graph.find_value(element));
  return graph.add_node("SequenceConstruct", name + "_construct", values, {name}, opset)->output(0);
}

// Graph outputs for `sequence` of `count` elements: name_length, and name_k for each element k.
void output_sequence(Graph& graph, Value* sequence, size_t count, const std::string& name,
                     int opset) {
  Node* length =
      graph.add_node("SequenceLength", name + "_length", {sequence}, {name + "_length"}, opset);
  graph.add_output(length->output(0));
  for (size_t k = 0; k < count; ++k) {
    Value* position = graph.add_initializer(cat(name, "_position_", k),
                                            Tensor::scalar<int64_t>(static_cast<int64_t>(k)));
    Node* at = graph.add_node("SequenceAt", cat(name, "_at_", k), {sequence, position},
                              {cat(name, "_", k)}, opset);
    graph.add_output(at->output(0));
  }
}

// ---- the sequence ops -------------------------------------------------------------------------

// SequenceConstruct(inputs...): the node's inputs are the graph inputs; the result is taken apart.
void sequence_construct(Draft& draft) {
  std::vector<size_t> at;
  for (size_t i = 0; i < draft.inputs.size(); ++i) at.push_back(i);
  shape_elements(draft, at, draw_element_shapes(draft), draft.primary_shape);
  const size_t count = at.size();
  const std::string output = draft.outputs[0].name;
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    output_sequence(graph, node.output(0), count, output, opset);
  };
}

// SequenceEmpty {dtype}: its length, and the type of what SequenceInsert(output, x) holds.
void sequence_empty(Draft& draft) {
  const DType dtype = draft.types.at("T");
  if (dtype != DType::kFloat32 || draft.attr_rng.chance(0.5)) {
    draft.set_int("dtype", static_cast<int64_t>(dtype));
  }
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    output_sequence(graph, node.output(0), 0, "output", opset);
    Node* insert = graph.add_node("SequenceInsert", "insert_x",
                                  {node.output(0), graph.find_value("x")}, {"with_x"}, opset);
    output_sequence(graph, insert->output(0), 1, "with_x", opset);
  };
}

// SequenceAt(S, position): position in [-n, n - 1].
void sequence_at(Draft& draft) {
  size_t count = static_cast<size_t>(draft.rng.uniform_int(1, 4));
  std::vector<std::string> elements = sequence_elements(draft, "input_sequence", count);
  const int64_t n = static_cast<int64_t>(count);
  set_position(draft, *draft.input("position"), draft.rng.uniform_int(-n, n - 1));
  const DType dtype = draft.types.at("T");
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    Value* sequence = build_sequence(graph, elements, dtype, "input_sequence", opset);
    set_inputs(node, {sequence, graph.find_value("position")});
  };
}

// SequenceInsert(S, tensor, position?): 0 to 4 elements; position in [-n, n] or left out.
void sequence_insert(Draft& draft) {
  size_t count = draft.rng.chance(0.2) ? 0 : static_cast<size_t>(draft.rng.uniform_int(1, 4));
  std::vector<std::string> elements = sequence_elements(draft, "input_sequence", count);
  OperandDraft& tensor = *draft.input("tensor");
  if (count == 0 || draft.rng.chance(0.5)) tensor.shape = draft.primary_shape;
  OperandDraft& position = *draft.input("position");
  const int64_t n = static_cast<int64_t>(count);
  if (position.present) {
    int64_t value = draft.rng.uniform_int(-n, n);
    set_position(draft, position, value);
    if (value == n) draft.tags.insert("position=end");
  }
  const bool has_position = position.present;
  const DType dtype = draft.types.at("T");
  const std::string output = draft.outputs[0].name;
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    Value* sequence = build_sequence(graph, elements, dtype, "input_sequence", opset);
    set_inputs(node, {sequence, graph.find_value("tensor"),
                      has_position ? graph.find_value("position") : nullptr});
    output_sequence(graph, node.output(0), count + 1, output, opset);
  };
}

// SequenceErase(S, position?): 1 to 4 elements; position in [-n, n - 1] or left out (the last).
void sequence_erase(Draft& draft) {
  size_t count = static_cast<size_t>(draft.rng.uniform_int(1, 4));
  std::vector<std::string> elements = sequence_elements(draft, "input_sequence", count);
  OperandDraft& position = *draft.input("position");
  const int64_t n = static_cast<int64_t>(count);
  if (position.present) set_position(draft, position, draft.rng.uniform_int(-n, n - 1));
  const bool has_position = position.present;
  const DType dtype = draft.types.at("T");
  const std::string output = draft.outputs[0].name;
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    Value* sequence = build_sequence(graph, elements, dtype, "input_sequence", opset);
    set_inputs(node, {sequence, has_position ? graph.find_value("position") : nullptr});
    output_sequence(graph, node.output(0), count - 1, output, opset);
  };
}

// SequenceLength(S): 0 to 4 elements.
void sequence_length(Draft& draft) {
  size_t count = draft.rng.chance(0.2) ? 0 : static_cast<size_t>(draft.rng.uniform_int(1, 4));
  std::vector<std::string> elements = sequence_elements(draft, "input_sequence", count);
  const DType dtype = draft.types.at("T");
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    set_inputs(node, {build_sequence(graph, elements, dtype, "input_sequence", opset)});
  };
}

// SplitToSequence(input, split?) {axis, keepdims}: axis in [-r, r - 1] (left out: 0); split a
// scalar in [1, d + 1] or 1 to 4 lengths summing to d: positive ones, as the operator text asks
// ("only positive numbers"), or one time in four (and always when d = 0) cut anywhere, so that
// lengths of 0 occur, as in ONNX's own test_sequence_model8 ([0, 0, 0] on an empty tensor).
void split_to_sequence(Draft& draft) {
  OperandDraft& input = *draft.input("input");
  const int64_t rank = static_cast<int64_t>(input.shape.size());
  int64_t axis = draft.attr_rng.uniform_int(-rank, rank - 1);
  if (draft.attr_rng.chance(0.25)) {
    axis = 0;
  } else {
    draft.set_int("axis", axis);
  }
  const int64_t d = input.shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
  OperandDraft& split = *draft.input("split");
  size_t pieces = static_cast<size_t>(d);
  if (split.present && draft.rng.chance(0.5)) {
    int64_t chunk = draft.rng.uniform_int(1, d + 1);
    draft.set_data(split, make_tensor(split.dtype, {}, {static_cast<double>(chunk)}));
    pieces = static_cast<size_t>((d + chunk - 1) / chunk);
    draft.tags.insert(d % chunk == 0 ? "split=scalar" : "split=scalar_remainder");
  } else if (split.present) {
    const bool anywhere = d == 0 || draft.rng.chance(0.25);
    int64_t parts = draft.rng.uniform_int(1, anywhere ? 4 : std::min<int64_t>(4, d));
    std::vector<int64_t> cuts = {0, d};
    if (anywhere) {
      for (int64_t k = 1; k < parts; ++k) cuts.push_back(draft.rng.uniform_int(0, d));
    } else {
      // parts - 1 distinct cuts inside (0, d).
      std::vector<int64_t> inside;
      for (int64_t k = 1; k < d; ++k) inside.push_back(k);
      draft.rng.shuffle(inside);
      cuts.insert(cuts.end(), inside.begin(), inside.begin() + (parts - 1));
    }
    std::sort(cuts.begin(), cuts.end());
    std::vector<double> lengths;
    for (size_t k = 1; k < cuts.size(); ++k) {
      lengths.push_back(static_cast<double>(cuts[k] - cuts[k - 1]));
      if (lengths.back() == 0) draft.tags.insert("split_zero_length");
    }
    draft.set_data(split, make_tensor(split.dtype, {parts}, lengths));
    pieces = static_cast<size_t>(parts);
    draft.tags.insert("split=list");
  }
  const std::string output = draft.outputs[0].name;
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    output_sequence(graph, node.output(0), pieces, output, opset);
  };
}

// ConcatFromSequence(S) {axis, new_axis}: elements agreeing except along axis in [-r, r - 1], or of
// one shape with new_axis = 1 and axis in [-r - 1, r]. Scalars only stack (new_axis = 1).
void concat_from_sequence(Draft& draft) {
  const std::vector<int64_t> first = draft.primary_shape;
  const int64_t rank = static_cast<int64_t>(first.size());
  bool new_axis = draft.attr_int("new_axis", 0) != 0;
  if (rank == 0 && !new_axis) {
    draft.set_int("new_axis", 1);
    new_axis = true;
  }
  int64_t axis = new_axis ? draft.attr_rng.uniform_int(-rank - 1, rank)
                          : draft.attr_rng.uniform_int(-rank, rank - 1);
  draft.set_int("axis", axis);
  size_t count = static_cast<size_t>(draft.rng.uniform_int(1, 4));
  std::vector<size_t> at = resize_elements(draft, "input_sequence", count);
  shape_elements(draft, at, ElementShapes::kOneShape, first);
  if (!new_axis) {
    size_t along = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    for (size_t k = 1; k < at.size(); ++k) {
      draft.inputs[at[k]].shape[along] = draft.rng.uniform_int(0, 4);
    }
    if (at.size() > 1) draft.tags.insert("elements=differ_along_axis");
  }
  const DType dtype = draft.types.at("T");
  std::vector<std::string> elements;
  for (size_t i : at) elements.push_back(draft.inputs[i].name);
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    set_inputs(node, {build_sequence(graph, elements, dtype, "input_sequence", opset)});
  };
}

// SequenceMap(S, additional_inputs...) {body}: 0 to 4 elements; an additional sequence of as many
// elements (each of its partner's shape), a tensor broadcasting to every element, both in either
// order, or none. Body: y = op(op(x, a), b) over the additional inputs (op(x, x) without any),
// and a second output Shape(x).
void sequence_map(Draft& draft) {
  size_t count = draft.rng.chance(0.15) ? 0 : static_cast<size_t>(draft.rng.uniform_int(1, 4));
  std::vector<size_t> at = resize_elements(draft, "input_sequence", count);
  std::vector<std::string> elements =
      shape_elements(draft, at, draw_element_shapes(draft), draft.primary_shape);
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i : at) shapes.push_back(draft.inputs[i].shape);

  const bool extra_sequence = draft.rng.chance(0.5);
  std::vector<std::string> extra_elements;
  std::vector<size_t> extra_at =
      resize_elements(draft, "additional_sequence", extra_sequence ? count : 0);
  for (size_t k = 0; k < extra_at.size(); ++k) {
    draft.inputs[extra_at[k]].shape = shapes[k];
    extra_elements.push_back(draft.inputs[extra_at[k]].name);
  }
  OperandDraft& tensor = *draft.input("additional_tensor");
  const bool extra_tensor = tensor.present;
  if (extra_tensor) {
    // Trailing dims every element agrees on, some replaced by 1; at most the smallest rank.
    size_t min_rank = 3;
    for (const auto& shape : shapes) min_rank = std::min(min_rank, shape.size());
    size_t rank = static_cast<size_t>(draft.rng.uniform_int(0, static_cast<int64_t>(min_rank)));
    tensor.shape.assign(rank, 1);
    for (size_t j = 0; j < rank; ++j) {
      bool agree = !shapes.empty();
      int64_t dim = shapes.empty() ? 1 : shapes[0][shapes[0].size() - rank + j];
      for (const auto& shape : shapes) agree = agree && shape[shape.size() - rank + j] == dim;
      if (agree && draft.rng.chance(0.75)) tensor.shape[j] = dim;
    }
  }
  const bool tensor_first = extra_sequence && extra_tensor && draft.rng.chance(0.5);
  if (extra_sequence) draft.tags.insert("additional=sequence");
  if (extra_tensor) draft.tags.insert("additional=tensor");
  if (tensor_first) draft.tags.insert("additional=tensor_first");

  const std::string op = draft.attr_rng.pick(std::vector<std::string>{"Add", "Mul", "Max"});
  const size_t outputs = static_cast<size_t>(draft.attr_rng.uniform_int(1, 2));
  draft.tags.insert("body=" + op);
  draft.tags.insert(cat("body_outputs=", outputs));
  draft.outputs.resize(outputs, draft.outputs[0]);
  for (size_t k = 0; k < outputs; ++k) {
    draft.outputs[k].present = true;
    draft.outputs[k].name = cat("out_sequence_", k);
  }
  const DType dtype = draft.types.at("T");
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    std::vector<Value*> inputs = {build_sequence(graph, elements, dtype, "input_sequence", opset)};
    Value* sequence =
        extra_sequence ? build_sequence(graph, extra_elements, dtype, "additional_sequence", opset)
                       : nullptr;
    Value* tensor_value = extra_tensor ? graph.find_value("additional_tensor") : nullptr;
    for (Value* extra : tensor_first ? std::vector<Value*>{tensor_value, sequence}
                                     : std::vector<Value*>{sequence, tensor_value}) {
      if (extra) inputs.push_back(extra);
    }
    set_inputs(node, inputs);

    auto body = std::make_shared<Graph>("body", &graph);
    const TensorType any_shape{dtype, std::nullopt, nullptr};
    Value* x = body->add_input("body_x", any_shape);
    Value* y = x;
    for (size_t k = 1; k < inputs.size(); ++k) {
      Value* extra = body->add_input(cat("body_extra_", k), any_shape);
      y = body->add_node(op, cat("body_", op, "_", k), {y, extra}, {cat("body_y_", k)}, opset)
              ->output(0);
    }
    if (inputs.size() == 1) {
      y = body->add_node(op, cat("body_", op), {x, x}, {"body_y"}, opset)->output(0);
    }
    body->add_output(y);
    if (outputs == 2) {
      body->add_output(
          body->add_node("Shape", "body_shape", {x}, {"body_shape"}, opset)->output(0));
    }
    node.set_attr("body", Attribute::of_graph(body));
    for (size_t k = 0; k < outputs; ++k) {
      output_sequence(graph, node.output(k), count, cat("out_sequence_", k), opset);
    }
  };
}

// ---- the optional ops -------------------------------------------------------------------------

// The forms of an optional op's input.
enum class Form {
  kOptionalTensor,    // Optional(x)
  kOptionalSequence,  // Optional(SequenceConstruct(elements))
  kEmptyTensor,       // Optional {type = tensor type}
  kEmptySequence,     // Optional {type = sequence type}
  kTensor,            // x itself (opset 18)
  kSequence,          // a sequence itself (opset 18)
  kOmitted,           // no input (opset 18, OptionalHasElement)
};

const char* form_name(Form form) {
  switch (form) {
    case Form::kOptionalTensor:
      return "optional_tensor";
    case Form::kOptionalSequence:
      return "optional_sequence";
    case Form::kEmptyTensor:
      return "empty_tensor";
    case Form::kEmptySequence:
      return "empty_sequence";
    case Form::kTensor:
      return "tensor";
    case Form::kSequence:
      return "sequence";
    case Form::kOmitted:
      return "omitted";
  }
  return "?";
}

bool holds_sequence(Form form) {
  return form == Form::kOptionalSequence || form == Form::kSequence;
}

// The type an empty optional declares: the element type with the primary shape, or of unknown
// rank, as a tensor or a sequence.
TensorType empty_type(Draft& draft, bool sequence) {
  TensorType type{draft.types.at("T"), std::nullopt, nullptr,
                  sequence ? ValueKind::kSequence : ValueKind::kTensor};
  if (draft.rng.chance(0.5)) {
    Shape shape;
    for (int64_t d : draft.primary_shape) shape.push_back(Dim(d));
    type.shape = shape;
    draft.tags.insert("type_has_shape");
  }
  return type;
}

// Sets up the graph inputs of `form`: x (captured `tensor`), or 1 to 3 elements of
// input_sequence, or nothing. Returns the elements' names.
std::vector<std::string> form_inputs(Draft& draft, Form form, const std::string& tensor) {
  draft.tags.insert(cat("form=", form_name(form)));
  draft.input(tensor)->present = form == Form::kOptionalTensor || form == Form::kTensor;
  if (draft.input(tensor)->present) draft.input(tensor)->shape = draft.primary_shape;
  if (!holds_sequence(form)) {
    resize_elements(draft, "input_sequence", 0);
    return {};
  }
  return sequence_elements(draft, "input_sequence",
                           static_cast<size_t>(draft.rng.uniform_int(1, 3)));
}

// The value of `form` in the model, from the graph inputs form_inputs set up; nullptr for kOmitted.
Value* build_form(Graph& graph, Form form, const std::string& tensor,
                  const std::vector<std::string>& elements, const TensorType& empty, DType dtype,
                  int opset) {
  switch (form) {
    case Form::kTensor:
      return graph.find_value(tensor);
    case Form::kSequence:
      return build_sequence(graph, elements, dtype, "input_sequence", opset);
    case Form::kOmitted:
      return nullptr;
    case Form::kOptionalTensor:
    case Form::kOptionalSequence: {
      Value* value = form == Form::kOptionalTensor
                         ? graph.find_value(tensor)
                         : build_sequence(graph, elements, dtype, "input_sequence", opset);
      return graph.add_node("Optional", "optional", {value}, {"optional"}, opset)->output(0);
    }
    case Form::kEmptyTensor:
    case Form::kEmptySequence: {
      Node* optional = graph.add_node("Optional", "optional", {}, {"optional"}, opset);
      optional->set_attr("type", Attribute::of_type(empty));
      return optional->output(0);
    }
  }
  return nullptr;
}

Form draw_form(Draft& draft, std::vector<Form> forms) {
  if (draft.opset >= 18) {
    forms.push_back(Form::kTensor);
    forms.push_back(Form::kSequence);
  }
  return draft.rng.pick(forms);
}

// Optional(input?) {type?}: a tensor or a sequence, or none with a tensor or sequence type;
// graph outputs OptionalHasElement and, when present, the value by OptionalGetElement.
void optional(Draft& draft) {
  Form form = draft.rng.pick(std::vector<Form>{Form::kOptionalTensor, Form::kOptionalSequence,
                                               Form::kEmptyTensor, Form::kEmptySequence});
  std::vector<std::string> elements = form_inputs(draft, form, "input");
  if (form == Form::kEmptyTensor || form == Form::kEmptySequence) {
    draft.attrs["type"] = Attribute::of_type(empty_type(draft, form == Form::kEmptySequence));
  }
  const DType dtype = draft.types.at("T");
  const size_t count = elements.size();
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    if (form == Form::kOptionalSequence) {
      set_inputs(node, {build_sequence(graph, elements, dtype, "input_sequence", opset)});
    }
    Node* has = graph.add_node("OptionalHasElement", "has_element", {node.output(0)},
                               {"output_has_element"}, opset);
    graph.add_output(has->output(0));
    if (form == Form::kEmptyTensor || form == Form::kEmptySequence) return;
    Node* get = graph.add_node("OptionalGetElement", "get_element", {node.output(0)},
                               {"output_element"}, opset);
    if (form == Form::kOptionalSequence) {
      output_sequence(graph, get->output(0), count, "output_element", opset);
    } else {
      graph.add_output(get->output(0));
    }
  };
}

// OptionalHasElement(input?): an optional holding a tensor or a sequence, an empty one of either
// type, and from opset 18 a tensor, a sequence or no input.
void optional_has_element(Draft& draft) {
  std::vector<Form> forms = {Form::kOptionalTensor, Form::kOptionalSequence, Form::kEmptyTensor,
                             Form::kEmptySequence};
  if (draft.opset >= 18) forms.push_back(Form::kOmitted);
  Form form = draw_form(draft, forms);
  std::vector<std::string> elements = form_inputs(draft, form, "x");
  TensorType empty = empty_type(draft, form == Form::kEmptySequence);
  const DType dtype = draft.types.at("T");
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    Value* input = build_form(graph, form, "x", elements, empty, dtype, opset);
    if (input) set_inputs(node, {input});
  };
}

// OptionalGetElement(input): an optional holding a tensor or a sequence, and from opset 18 a
// tensor or a sequence itself; a sequence result is taken apart.
void optional_get_element(Draft& draft) {
  Form form = draw_form(draft, {Form::kOptionalTensor, Form::kOptionalSequence});
  std::vector<std::string> elements = form_inputs(draft, form, "x");
  const DType dtype = draft.types.at("T");
  const size_t count = elements.size();
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    set_inputs(node, {build_form(graph, form, "x", elements, TensorType{}, dtype, opset)});
    if (holds_sequence(form)) output_sequence(graph, node.output(0), count, "output", opset);
  };
}

}  // namespace

void add_sequence_special_cases(std::map<std::string, SpecialCase>& table) {
  table["sequence_construct"] = sequence_construct;
  table["sequence_empty"] = sequence_empty;
  table["sequence_at"] = sequence_at;
  table["sequence_insert"] = sequence_insert;
  table["sequence_erase"] = sequence_erase;
  table["sequence_length"] = sequence_length;
  table["split_to_sequence"] = split_to_sequence;
  table["concat_from_sequence"] = concat_from_sequence;
  table["sequence_map"] = sequence_map;
  table["optional"] = optional;
  table["optional_has_element"] = optional_has_element;
  table["optional_get_element"] = optional_get_element;
}

}  // namespace rnnc::conformance
