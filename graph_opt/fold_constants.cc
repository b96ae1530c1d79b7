// fold_constants: evaluates nodes whose inputs are all constants, once, at compile time.
//
// A node of the default domain with no nested graph whose every input is an initializer (or was
// folded earlier in this run) is run through its reference kernel (the same code the evaluator
// runs, so the result is bitwise what inference would compute); each output becomes an
// initializer of the same name and the node goes. Nodes are visited in order, so chains fold in
// one run: Constant nodes, and the Slice/Concat/Transpose/Gather/Unsqueeze that PyTorch applies
// to LSTM weights at export.
//
//   const %w: f32[1, 8, 2] = {...}                           const %w: f32[1, 8, 2] = {...}
//   %w0: f32[1, 4, 2] = Slice (%w, %start, %end, %axes)  ->  const %w0: f32[1, 4, 2] = {...}
//   %y, ... = LSTM 'lstm' (%x, %w0, ...)                     %y, ... = LSTM 'lstm' (%x, %w0, ...)
//
// A value that is a graph output folds too: the output then names the initializer. Types are
// re-inferred afterwards, since shape inputs that became constants can sharpen downstream shapes.
//
// Not folded (the kNotFolded table and the growth rule below):
//  - nodes with nested graphs (If/Loop/Scan: inlining is control flow's business), ops outside
//    the default domain, ops without a reference kernel;
//  - nodes with a sequence or optional output (SequenceConstruct, Optional, ...): initializers
//    are tensors, so such a value stays computed at run time (the nodes reading it then do too);
//  - nondeterministic ops (Random*, Bernoulli, Multinomial) and Dropout in training mode;
//  - DequantizeLinear of a constant integer tensor: a quantized weight stays quantized, so the
//    model keeps its integer size and quant/, lowering and other runtimes see the standard form;
//  - nodes whose kernel reports an error on these inputs (an out-of-range Gather index, say): the
//    node stays, and the error appears when the model runs, where the user can see it;
//  - growth: a node whose outputs would take more than 1 MiB AND more than twice the bytes of its
//    inputs (ConstantOfShape, Expand, Tile, Range on small shape inputs) stays, so folding never
//    blows up the model file; computing it at run time is cheap. Constant nodes are exempt: their
//    data is already in the model.
#include <limits>
#include <optional>
#include <set>

#include "graph_opt/constant_value.h"
#include "graph_opt/pass.h"
#include "ir/op_schema.h"
#include "ir/reference/kernel.h"

namespace rnnc {

namespace {

constexpr size_t kMaxGrowthBytes = size_t{1} << 20;  // 1 MiB
constexpr size_t kMaxGrowthFactor = 2;

// Nodes that stay although every input is a constant: each rule, then why.
using NotFoldedRule = bool (*)(const Node& node);
const NotFoldedRule kNotFolded[] = {
    // Another domain: the reference kernels implement ai.onnx only.
    [](const Node& n) { return !n.domain().empty() && n.domain() != "ai.onnx"; },
    // If/Loop/Scan: inlining a constant If is control flow's business (inline_if).
    [](const Node& n) { return !n.subgraphs().empty(); },
    // A sequence or optional output: an initializer holds a tensor only.
    [](const Node& n) {
      for (const Value* out : n.outputs()) {
        if (out && !out->type.is_tensor()) return true;
      }
      return false;
    },
    // Random ops: a new draw on every run.
    [](const Node& n) {
      static const std::set<std::string> ops = {"RandomNormal",  "RandomNormalLike",
                                                "RandomUniform", "RandomUniformLike",
                                                "Bernoulli",     "Multinomial"};
      return ops.count(n.op_type()) != 0;
    },
    // Dropout(data, ratio, training_mode = true): random too.
    [](const Node& n) {
      const Value* mode = n.input(2);
      return n.op_type() == "Dropout" && mode && mode->constant()->numel() > 0 &&
             mode->constant()->get_double(0) != 0;
    },
    // DequantizeLinear(constant integer x, ...): a quantized weight stays quantized in the graph.
    [](const Node& n) {
      return n.op_type() == "DequantizeLinear" && is_integer(n.input(0)->constant()->dtype());
    },
};

size_t total_bytes(const std::vector<Tensor>& tensors) {
  size_t bytes = 0;
  for (const Tensor& t : tensors) bytes += t.nbytes();
  return bytes;
}

// The growth rule above; `output_bytes` is known before evaluation when the inferred output shapes
// are fully known, and checked again on the computed tensors otherwise.
bool grows_too_much(const Node& node, size_t input_bytes, size_t output_bytes) {
  if (node.op_type() == "Constant") return false;
  return output_bytes > kMaxGrowthBytes && output_bytes > kMaxGrowthFactor * input_bytes;
}

std::optional<size_t> inferred_output_bytes(const Node& node) {
  size_t bytes = 0;
  for (const Value* output : node.outputs()) {
    if (!output) continue;
    if (!output->type.shape || !shape_is_known(*output->type.shape)) return std::nullopt;
    int64_t numel = 1;
    for (int64_t d : shape_values(*output->type.shape)) {
      if (d > 0 && numel > (int64_t{1} << 40) / d) return std::numeric_limits<size_t>::max();
      numel *= d;
    }
    bytes += static_cast<size_t>(numel) * dtype_size(output->type.dtype);
  }
  return bytes;
}

// The node's outputs computed from its constant inputs, or nullopt when the node is not folded.
std::optional<std::vector<Tensor>> evaluate_constant_node(const Node& node, PassStats& stats) {
  for (const Value* input : node.inputs()) {
    if (input && !is_known_constant(input)) return std::nullopt;
  }
  for (NotFoldedRule applies : kNotFolded) {
    if (applies(node)) return std::nullopt;
  }
  Kernel kernel = find_kernel(node.op_type());
  if (!kernel) return std::nullopt;

  KernelContext context{node, {}, {}, {}};
  size_t input_bytes = 0;
  for (const Value* input : node.inputs()) {
    context.inputs.push_back(input ? input->constant().get() : nullptr);
    if (input) input_bytes += input->constant()->nbytes();
  }
  if (auto bytes = inferred_output_bytes(node);
      bytes && grows_too_much(node, input_bytes, *bytes)) {
    ++stats["nodes too large to fold"];
    return std::nullopt;
  }
  context.outputs.resize(node.num_outputs());
  try {
    kernel(context);
  } catch (const Error& error) {
    if (error.kind() == ErrorKind::kInternal) throw;
    ++stats["nodes whose kernel failed"];
    return std::nullopt;
  }
  if (grows_too_much(node, input_bytes, total_bytes(context.outputs))) {
    ++stats["nodes too large to fold"];
    return std::nullopt;
  }
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    const Value* output = node.output(i);
    if (!output) continue;
    RNNC_CHECK(context.outputs[i].defined(), node.describe(), " did not produce output ", i);
    RNNC_CHECK(
        output->type.dtype == DType::kUndefined || output->type.dtype == context.outputs[i].dtype(),
        node.describe(), " output ", i, " is ", dtype_name(context.outputs[i].dtype()),
        " but inferred as ", dtype_name(output->type.dtype));
  }
  return std::move(context.outputs);
}

// Folds in node order; a nested graph is folded before its node is looked at, with every outer
// value it can see already folded.
bool fold_in_graph(Graph& graph, PassStats& stats) {
  bool changed = false;
  std::vector<Node*> order;
  for (const auto& node : graph.nodes()) order.push_back(node.get());
  for (Node* node : order) {
    for (Graph* sub : node->subgraphs()) changed = fold_in_graph(*sub, stats) || changed;
    std::optional<std::vector<Tensor>> results = evaluate_constant_node(*node, stats);
    if (!results) continue;
    // The node is removed with its last output: take the outputs first.
    std::vector<Value*> outputs = node->outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i]) replace_with_constant(outputs[i], std::move((*results)[i]));
    }
    ++stats["nodes folded"];
    changed = true;
  }
  return changed;
}

}  // namespace

bool fold_constants(Model& model, const PassContext& context, PassStats& stats) {
  bool changed = fold_in_graph(*model.graph, stats);
  if (changed) infer_graph(*model.graph);
  return changed;
}

}  // namespace rnnc
