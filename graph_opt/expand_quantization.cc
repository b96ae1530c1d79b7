// expand_quantization: quantization ops that only feed float arithmetic become the float32
// arithmetic that defines them, which lowering compiles (reductions and elementwise loops that fuse
// with their neighbours) instead of running them on reference kernels. Two forms, both from ONNX
// Runtime's quantizer:
//
// A DynamicQuantizeLinear whose quantized values and zero point are read only through Casts to
// float32 (as conv_integer_to_float leaves quantize_dynamic's Convs):
//
//   %q, %s, %z = DynamicQuantizeLinear(%x)       %lo = Min(ReduceMin(%x), 0)
//   %qf = Cast(%q) {to = FLOAT}                  %hi = Max(ReduceMax(%x), 0)
//   %zf = Cast(%z) {to = FLOAT}            ->    %s = Where(%hi - %lo == 0, 1, (%hi - %lo) / 255)
//                                                %zf = Clip(Round(0 - %lo / %s), 0, 255)
//                                                %qf = Clip(Round(%x / %s) + %zf, 0, 255)
//
// A QuantizeLinear read only by DequantizeLinears of the same per-tensor scale and zero point (the
// pairs quantize_static's QDQ format puts on activations):
//
//   %q = QuantizeLinear(%x, %s, %z)        ->    %y = (Clip(Round(%x / %s) + %z, lo, hi) - %z) * %s
//   %y = DequantizeLinear(%q, %s, %z)             (%z as float32; lo, hi the range of %z's type)
//
// Bit for bit what the operators compute (ir/reference/kernels_quant.cc): the same float32
// operations in the same order, each annotated rnnc.ieee so that lowering neither contracts nor
// reassociates them, nor turns a divide by a constant into a multiply by its reciprocal; Round
// rounds halfway cases to even as the operators do; an all-zero x in DynamicQuantizeLinear (the
// range 0: %lo = %hi = 0) takes scale 1 and zero point 0, as the reference and ONNX Runtime do.
// The integers involved are at most 16 bits, exact in float32, so the float values are the casts
// of the integer ones. NaN elements differ: the reference quantizes them as the zero point and
// leaves them out of DynamicQuantizeLinear's range; here they stay NaN, and the reductions do not
// guarantee to leave them out.
//
// Matched: default-domain ops on float32 x. DynamicQuantizeLinear: %q and %z not graph outputs
// (or nested graphs' returns) and read only by Casts to float32 (each replaced by the float
// value); %s may be read by anything. QuantizeLinear: a constant float32 scale of one element, a
// constant 8- or 16-bit zero point of one element (or none: uint8, zero point 0), no attribute
// but axis; %q not a graph output (or a nested graph's return) and read only by
// DequantizeLinears whose scale and zero point are the same values or equal constants. Per-axis
// pairs (ONNX Runtime quantizes activations per tensor) stay as written.
// Opset 11 and later (Round and Clip's bound inputs). Lowering pipeline only, after
// conv_integer_to_float.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "graph_opt/constant_value.h"
#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"
#include "ir/op_schema.h"

namespace rnnc {

namespace {

// `value` is absent, or read only by Casts to float32 (or not at all).
bool read_only_as_float(const Graph& graph, const Value* value) {
  return !value || read_only_by(graph, value, is_float_cast);
}

// Adds nodes named after one prefix, each with one output, shapes inferred.
class Builder {
 public:
  Builder(Graph& graph, std::string prefix, int opset)
      : graph_(graph), prefix_(std::move(prefix)), opset_(opset) {}

  Value* op(const std::string& op_type, const std::vector<Value*>& inputs,
            const std::string& what) {
    const std::string name = graph_.unique_name(prefix_ + "_" + what);
    Node* node = graph_.add_node(op_type, name, inputs, {name}, opset_);
    if (op_type == "ReduceMin" || op_type == "ReduceMax") {
      node->set_attr("keepdims", Attribute::of_int(0));
    } else {
      node->set_attr(kIeeeAnnotation, Attribute::of_int(1));  // no contraction, no reciprocal
    }
    infer_node(*node);
    return node->output(0);
  }

  Value* constant(float value) {
    return graph_.add_initializer(graph_.unique_name(prefix_ + "_constant"),
                                  Tensor::scalar<float>(value));
  }

 private:
  Graph& graph_;
  std::string prefix_;
  int opset_;
};

// Each Cast of `integers` now reads `floats` instead.
void replace_casts(Graph& graph, Value* integers, Value* floats) {
  if (!integers) return;
  const std::vector<Use> casts = integers->uses();
  for (const Use& use : casts) {
    graph.replace_all_uses(use.node->output(0), floats);
    graph.remove_node(use.node);
  }
}

bool expandable_dynamic_quantize(const Graph& graph, const Node& quantize) {
  const Value* x = quantize.input(0);
  return x && x->type.dtype == DType::kFloat32 && read_only_as_float(graph, quantize.output(0)) &&
         read_only_as_float(graph, quantize.output(2));
}

void expand_dynamic_quantize(Graph& graph, Node* quantize, int opset) {
  Builder b(graph, quantize->name().empty() ? quantize->output(0)->name() : quantize->name(),
            opset);
  Value* x = quantize->input(0);
  Value* zero = b.constant(0.0f);
  Value* top = b.constant(255.0f);  // the highest uint8 level, and the number of steps
  Value* lo = b.op("Min", {b.op("ReduceMin", {x}, "min"), zero}, "lo");
  Value* hi = b.op("Max", {b.op("ReduceMax", {x}, "max"), zero}, "hi");
  Value* range = b.op("Sub", {hi, lo}, "range");
  Value* flat = b.op("Equal", {range, zero}, "flat");
  Value* scale =
      b.op("Where", {flat, b.constant(1.0f), b.op("Div", {range, top}, "step")}, "scale");
  Value* offset = b.op("Sub", {zero, b.op("Div", {lo, scale}, "lo_steps")}, "offset");
  Value* zero_point =
      b.op("Clip", {b.op("Round", {offset}, "offset_rounded"), zero, top}, "zero_point");
  Value* steps = b.op("Round", {b.op("Div", {x, scale}, "steps")}, "rounded");
  Value* quantized =
      b.op("Clip", {b.op("Add", {steps, zero_point}, "shifted"), zero, top}, "quantized");
  replace_casts(graph, quantize->output(0), quantized);
  replace_casts(graph, quantize->output(2), zero_point);
  graph.replace_all_uses(quantize->output(1), scale);
  graph.remove_node(quantize);
}

// The per-tensor parameters of a QuantizeLinear: its scale, its zero point as a float32 value
// (0 when absent) and the range of its integer type.
struct PairParameters {
  float scale = 0, zero_point = 0, lowest = 0, highest = 0;
};

bool single_constant(const Value* value, DType dtype) {
  const Tensor* tensor = known_constant(value);
  return tensor && tensor->dtype() == dtype && tensor->numel() == 1;
}

// `a` and `b` are the same value, or constants with equal contents.
bool same_parameter(const Value* a, const Value* b) {
  if (a == b) return true;
  const Tensor* x = known_constant(a);
  const Tensor* y = known_constant(b);
  return x && y && x->dtype() == y->dtype() && x->shape() == y->shape() &&
         std::memcmp(x->raw_data(), y->raw_data(), x->nbytes()) == 0;
}

// The QuantizeLinear's parameters, when it and every reader of its output form per-tensor pairs.
bool pair_parameters(const Graph& graph, const Node& quantize, PairParameters& out) {
  const Value* x = quantize.input(0);
  const Value* scale = quantize.input(1);
  const Value* zero_point = quantize.num_inputs() > 2 ? quantize.input(2) : nullptr;
  const Value* q = quantize.output(0);
  auto dequantizes = [](const Node& node) { return is_op(&node, "DequantizeLinear"); };
  if (!x || x->type.dtype != DType::kFloat32 || !single_constant(scale, DType::kFloat32) || !q ||
      q->uses().empty() || !read_only_by(graph, q, dequantizes)) {
    return false;
  }
  for (const auto& [name, attribute] : quantize.attributes()) {
    if (name != "axis") return false;
  }
  const DType integers = zero_point ? zero_point->type.dtype : DType::kUInt8;
  const std::optional<QuantizedRange> range = quantized_range(integers);
  if (!range) return false;
  out.lowest = static_cast<float>(range->lo);
  out.highest = static_cast<float>(range->hi);
  if (zero_point && !single_constant(zero_point, integers)) return false;
  out.scale = scale->constant()->data<float>()[0];
  out.zero_point = zero_point ? static_cast<float>(zero_point->constant()->get_int64(0)) : 0.0f;
  for (const Use& use : q->uses()) {
    const Node* dequantize = use.node;
    if (use.input_index != 0 || !same_parameter(dequantize->input(1), scale)) {
      return false;
    }
    const Value* dequantize_zero = dequantize->num_inputs() > 2 ? dequantize->input(2) : nullptr;
    if ((zero_point || dequantize_zero) && !same_parameter(dequantize_zero, zero_point)) {
      return false;
    }
    for (const auto& [name, attribute] : dequantize->attributes()) {
      if (name != "axis") return false;
    }
  }
  return true;
}

void expand_pair(Graph& graph, Node* quantize, const PairParameters& p, int opset) {
  Builder b(graph, quantize->name().empty() ? quantize->output(0)->name() : quantize->name(),
            opset);
  Value* scale = b.constant(p.scale);
  Value* zero_point = b.constant(p.zero_point);
  Value* steps = b.op("Round", {b.op("Div", {quantize->input(0), scale}, "steps")}, "rounded");
  Value* quantized = b.op(
      "Clip",
      {b.op("Add", {steps, zero_point}, "shifted"), b.constant(p.lowest), b.constant(p.highest)},
      "quantized");
  Value* dequantized =
      b.op("Mul", {b.op("Sub", {quantized, zero_point}, "levels"), scale}, "dequantized");
  const std::vector<Use> readers = quantize->output(0)->uses();
  for (const Use& use : readers) {
    graph.replace_all_uses(use.node->output(0), dequantized);
    graph.remove_node(use.node);
  }
  graph.remove_node(quantize);
}

bool expand_in_graph(Graph& graph, int opset, PassStats& stats) {
  std::vector<Node*> dynamic;
  std::vector<std::pair<Node*, PairParameters>> pairs;
  for (const auto& node : graph.nodes()) {
    Node* n = node.get();
    PairParameters p;
    if (is_op(n, "DynamicQuantizeLinear") && expandable_dynamic_quantize(graph, *n)) {
      dynamic.push_back(n);
    } else if (is_op(n, "QuantizeLinear") && pair_parameters(graph, *n, p)) {
      pairs.emplace_back(n, p);
    }
  }
  for (Node* quantize : dynamic) {
    expand_dynamic_quantize(graph, quantize, opset);
    ++stats["dynamic quantizations expanded"];
  }
  for (const auto& [quantize, p] : pairs) {
    expand_pair(graph, quantize, p, opset);
    ++stats["quantize-dequantize pairs expanded"];
  }
  const bool changed = !dynamic.empty() || !pairs.empty();
  if (changed) graph.sort_topologically();
  return changed;
}

}  // namespace

bool expand_quantization(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  // Round, and Clip's bounds as inputs, are opset 11 (QuantizeLinear is 10).
  const int opset = static_cast<int>(model.default_opset());
  if (opset < 11) return false;
  bool changed = false;
  for_each_graph(model,
                 [&](Graph& graph) { changed = expand_in_graph(graph, opset, stats) || changed; });
  return changed;
}

}  // namespace rnnc
