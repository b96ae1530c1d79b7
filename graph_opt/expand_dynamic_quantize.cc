// expand_dynamic_quantize: a DynamicQuantizeLinear whose quantized values and zero point are read
// only through Casts to float32 (as conv_integer_to_float leaves ONNX Runtime's quantized Convs)
// becomes the float32 arithmetic that defines it, which lowering compiles (two reductions and
// elementwise loops) instead of running it on a reference kernel.
//
//   %q, %s, %z = DynamicQuantizeLinear(%x)       %lo = Min(ReduceMin(%x), 0)
//   %qf = Cast(%q) {to = FLOAT}                  %hi = Max(ReduceMax(%x), 0)
//   %zf = Cast(%z) {to = FLOAT}            ->    %s = Where(%hi - %lo == 0, 1, (%hi - %lo) / 255)
//                                                %zf = Clip(Round(0 - %lo / %s), 0, 255)
//                                                %qf = Clip(Round(%x / %s) + %zf, 0, 255)
//
// Bit for bit what the operator computes (ir/reference/kernels_quant.cc): the same float32
// operations in the same order, Round rounding halfway cases to even as the operator does, and
// an all-zero x (the range 0: %lo = %hi = 0) taking scale 1 and zero point 0, as the reference
// and ONNX Runtime do. The integers it yields are small (0..255), so the float values are the
// casts of the uint8 ones. One difference: the reference leaves NaN elements out of the range,
// the reductions here do not guarantee to.
//
// Matched: a default-domain DynamicQuantizeLinear whose %q and %z are not graph outputs and are
// read only by Casts to float32 (each replaced by the float value); %s may be read by anything.
// Lowering pipeline only, after conv_integer_to_float.
#include <string>
#include <vector>

#include "graph_opt/pass.h"
#include "ir/op_schema.h"

namespace rnnc {

namespace {

bool is_graph_output(const Graph& graph, const Value* value) {
  for (const Value* output : graph.outputs()) {
    if (output == value) return true;
  }
  return false;
}

// `value` is read only by Casts to float32 (or not at all) and is not a graph output.
bool read_only_as_float(const Graph& graph, const Value* value) {
  if (!value) return true;
  if (is_graph_output(graph, value)) return false;
  for (const Use& use : value->uses()) {
    if (!is_op(use.node, "Cast") ||
        use.node->attr_int("to", 0) != static_cast<int64_t>(DType::kFloat32)) {
      return false;
    }
  }
  return true;
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

void expand(Graph& graph, Node* quantize, int opset) {
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

bool expand_in_graph(Graph& graph, int opset, PassStats& stats) {
  std::vector<Node*> matched;
  for (const auto& node : graph.nodes()) {
    Node* quantize = node.get();
    if (!is_op(quantize, "DynamicQuantizeLinear")) continue;
    const Value* x = quantize->input(0);
    if (!x || x->type.dtype != DType::kFloat32 || !read_only_as_float(graph, quantize->output(0)) ||
        !read_only_as_float(graph, quantize->output(2))) {
      continue;
    }
    matched.push_back(quantize);
  }
  for (Node* quantize : matched) {
    expand(graph, quantize, opset);
    ++stats["dynamic quantizations expanded"];
  }
  if (!matched.empty()) graph.sort_topologically();
  return !matched.empty();
}

}  // namespace

bool expand_dynamic_quantize(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  const int opset = static_cast<int>(model.default_opset());
  bool changed = false;
  for_each_graph(model,
                 [&](Graph& graph) { changed = expand_in_graph(graph, opset, stats) || changed; });
  return changed;
}

}  // namespace rnnc
