#include "quant/quantize_model.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>

#include "ir/error.h"
#include "ir/op_schema.h"
#include "ir/quantization.h"
#include "ir/reference/evaluator.h"
#include "quant/weights.h"

namespace rnnc::quant {

namespace {

bool is_recurrent(const Node& node) {
  const std::string& op = node.op_type();
  return node.domain().empty() && (op == "LSTM" || op == "GRU" || op == "RNN");
}

bool is_product(const Node& node) {
  return node.domain().empty() && (node.op_type() == "MatMul" || node.op_type() == "Gemm");
}

bool is_float_initializer(const Value* value) {
  return value && value->is_constant() && !value->is_graph_input() && !value->producer() &&
         value->constant()->dtype() == DType::kFloat32;
}

// The weight scheme a MatMul/Gemm's B [K, N] (Gemm transB: [N, K]) gets. Granularities name the
// stored matrix's axes; scales along K (the reduction axis) cannot be factored out of an integer
// dot product, so a row/column granularity that falls on K becomes per output channel (N) and
// `note` says so for the report.
WeightScheme product_weight_scheme(const Node& node, WeightScheme scheme, std::string& note) {
  const bool trans_b = node.op_type() == "Gemm" && node.attr_int("transB", 0) != 0;
  const WeightShape shape = matrix_weight_shape(trans_b);
  const int reduction_axis = trans_b ? 1 : 0;
  const int axis = scheme.granularity == Granularity::kRow      ? shape.row_axis
                   : scheme.granularity == Granularity::kColumn ? shape.column_axis
                                                                : -1;
  if (axis == reduction_axis) {
    note = cat(" (B's ", granularity_name(scheme.granularity), "s run along K: per output channel)");
    scheme.granularity = Granularity::kChannel;
  }
  return scheme;
}

// Observed activation ranges of one node over the calibration samples (state: recurrent only).
struct Ranges {
  std::vector<float> input, state;
};

// Runs the float model on every sample and keeps, per node that needs static coefficients, the
// values its X (A of MatMul/Gemm) and its hidden states took.
std::map<const Node*, Ranges> calibrate(const Model& model, const std::set<const Node*>& nodes,
                                        const std::vector<Sample>& samples,
                                        const Progress& progress) {
  std::map<const Node*, Ranges> ranges;
  const Graph& graph = *model.graph;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (progress) progress("calibrating", i, samples.size());
    std::map<const Value*, Tensor> seen;
    for (const Value* input : graph.inputs()) {
      if (auto it = samples[i].find(input->name()); it != samples[i].end()) seen[input] = it->second;
    }
    evaluate(graph, samples[i], [&](const Node& node, const std::vector<Tensor>& outputs) {
      for (size_t k = 0; k < outputs.size(); ++k) {
        if (node.output(k)) seen[node.output(k)] = outputs[k];
      }
    });
    auto append = [&](const Value* value, std::vector<float>& into) {
      if (!value) return;
      const Tensor* tensor = nullptr;
      if (auto it = seen.find(value); it != seen.end()) tensor = &it->second;
      else if (value->is_constant()) tensor = value->constant().get();
      if (!tensor || tensor->dtype() != DType::kFloat32) return;
      into.insert(into.end(), tensor->data<float>(), tensor->data<float>() + tensor->numel());
    };
    for (const Node* node : nodes) {
      Ranges& r = ranges[node];
      append(node->input(0), r.input);  // X; A of MatMul/Gemm
      if (!is_recurrent(*node)) continue;
      append(node->input(5), r.state);  // initial_h
      append(node->output(0) ? node->output(0) : node->output(1), r.state);  // Y, else Y_h
    }
  }
  if (progress) progress("calibrating", samples.size(), samples.size());
  return ranges;
}

// Static coefficients for one operand's observed values.
void static_coefficients(const std::vector<float>& values, const ActivationScheme& scheme,
                         const ActivationQuant& quant, float& scale, int32_t& zero_point) {
  float lo = 0, hi = 0;
  choose_range(values, scheme.method, scheme.percentile, scheme.bits, scheme.symmetric, lo, hi);
  const RowQuant row = range_row_quant(lo, hi, quant);
  scale = row.scale;
  zero_point = row.zero_point;
}

// Replaces initializer input `index` of `node` by DequantizeLinear of its quantized form.
int64_t quantize_input(Graph& graph, Node& node, size_t index, const WeightScheme& scheme,
                       const WeightShape& shape, int opset) {
  Value* weight = node.input(index);
  QuantizedWeight q = quantize_weight(*weight->constant(), scheme, shape);
  const std::string base = weight->name();
  std::vector<Value*> inputs = {graph.add_initializer(graph.unique_name(base + "_quantized"), q.q),
                                graph.add_initializer(graph.unique_name(base + "_scale"), q.scale)};
  if (q.zero_point.defined()) {
    inputs.push_back(graph.add_initializer(graph.unique_name(base + "_zero_point"), q.zero_point));
  }
  Node* dequantize = graph.add_node("DequantizeLinear", graph.unique_name(base + "_dequantize"),
                                    inputs, {graph.unique_name(base + "_dequantized")}, opset);
  if (q.axis >= 0) {
    Attribute axis;
    axis.kind = Attribute::Kind::kInt;
    axis.i = q.axis;
    dequantize->set_attr("axis", axis);
  }
  dequantize->output(0)->type = weight->type;
  node.set_input(index, dequantize->output(0));
  if (weight->uses().empty()) graph.remove_initializer(weight);
  int64_t bytes = static_cast<int64_t>(q.q.nbytes() + q.scale.nbytes());
  if (q.zero_point.defined()) bytes += static_cast<int64_t>(q.zero_point.nbytes());
  return bytes;
}

// What a user fixes to decide a condition: the main-graph inputs `value` depends on, as
// `--fix NAME=VALUE` when their data matters and `--dim AXIS=N` when only their shape does.
void condition_inputs(const Value* value, std::set<const Value*>& seen,
                      std::set<std::string>& fixes, std::set<std::string>& dims) {
  if (!value || !seen.insert(value).second) return;
  if (value->is_graph_input()) {
    if (!value->owner()->parent()) fixes.insert(value->name());  // an input with a default too
    return;
  }
  const Node* producer = value->producer();
  if (!producer) return;
  if (producer->op_type() == "Shape" || producer->op_type() == "Size") {
    const Value* shaped = producer->input(0);
    if (shaped && shaped->type.shape) {
      for (const Dim& dim : *shaped->type.shape) {
        for (const std::string& axis : dim.symbols()) dims.insert(axis);
      }
    }
    return;
  }
  for (const Value* input : producer->inputs()) condition_inputs(input, seen, fixes, dims);
  for (const Graph* sub : producer->subgraphs()) {
    for (const Value* captured : captured_values(*sub)) {
      condition_inputs(captured, seen, fixes, dims);
    }
  }
}

// One step of the path from the main graph down to a nested node: the node holding the body and
// the attribute naming it ("then_branch", "body").
struct Enclosing {
  const Node* node;
  std::string attribute;
};

// Why a recurrent node inside a subgraph stays float, and what the user can do about it.
std::string nested_reason(const std::vector<Enclosing>& path) {
  std::string where;
  bool only_ifs = true;
  std::set<const Value*> seen;
  std::set<std::string> fixes, dims;
  for (const Enclosing& step : path) {
    where += cat(where.empty() ? "" : " > ", step.node->op_type(), " '", step.node->name(), "' ",
                 step.attribute);
    if (step.node->op_type() != "If") {
      only_ifs = false;
    } else {
      condition_inputs(step.node->input(0), seen, fixes, dims);
    }
  }
  if (!only_ifs) {
    return cat("float (inside ", where, ": only recurrent nodes outside Loop/Scan bodies are "
               "quantized)");
  }
  std::string options;
  for (const std::string& name : fixes) {
    options += cat(options.empty() ? "" : " ", "--fix ", name, "=VALUE");
  }
  for (const std::string& axis : dims) {
    options += cat(options.empty() ? "" : " ", "--dim ", axis, "=N");
  }
  const char* its = path.size() == 1 ? "its condition depends" : "their conditions depend";
  if (options.empty()) {
    return cat("float (inside ", where, ": ", its, " on no model input; graph_opt inlines the "
               "branch once the condition folds to a constant)");
  }
  return cat("float (inside ", where, ": fix the inputs ", its, " on (", options,
             ") so the branch is inlined)");
}

// Recurrent nodes in the bodies of `graph`'s nodes, at any depth, each with the path to it.
void find_nested_recurrent(const Graph& graph, std::vector<Enclosing>& path,
                           std::vector<std::pair<const Node*, std::string>>& found) {
  for (const auto& node : graph.nodes()) {
    if (!path.empty() && is_recurrent(*node)) found.emplace_back(node.get(), nested_reason(path));
    for (const auto& [name, attribute] : node->attributes()) {
      std::vector<const Graph*> bodies;
      if (attribute.kind == Attribute::Kind::kGraph) bodies.push_back(attribute.g.get());
      if (attribute.kind == Attribute::Kind::kGraphs) {
        for (const auto& body : attribute.graphs) bodies.push_back(body.get());
      }
      for (const Graph* body : bodies) {
        path.push_back({node.get(), name});
        find_nested_recurrent(*body, path, found);
        path.pop_back();
      }
    }
  }
}

// The integer products' widths (ir/quantization.h ProductWidths) for the report: W . x over the
// input size and R . h over the hidden size (MatMul/Gemm: A . B over K), and whether they stay within the scheme's declared
// accumulation width (rnnc's kernels compute beyond it exactly, in int64 chunks when needed).
std::string products_text(const ActivationQuant& quant, const NodeScheme& scheme, bool recurrent,
                          int64_t first, int64_t second) {
  const int bits = scheme.weights.bits;
  const bool asymmetric = !scheme.weights.symmetric;
  const bool wide = quant.wide() || bits > 8;
  std::string text;
  std::vector<std::pair<const char*, int64_t>> products = {{"A.B", first}};
  if (recurrent) products = {{"W.x", first}, {"R.h", second}};
  for (const auto& [name, terms] : products) {
    // The operand types and bounds; how many products a lane sums is the kernels' target's.
    const ProductWidths widths = product_widths(quant, bits, asymmetric, terms, wide, 4);
    text += cat(text.empty() ? "" : "; ", name, " ", widths.to_string());
    if (widths.sum_bits > scheme.activations.accumulation_bits) {
      text += cat(", above accumulation_bits ", scheme.activations.accumulation_bits);
    }
  }
  return text;
}

}  // namespace

Report quantize_model(Model& model, const Config& config, const std::vector<Sample>& calibration,
                      const Progress& progress) {
  Graph& graph = *model.graph;
  const int opset = static_cast<int>(model.default_opset());
  Report report;
  std::vector<std::pair<Node*, NodeScheme>> plan;
  std::set<const Node*> needs_calibration;
  for (const auto& node_ptr : graph.nodes()) {
    Node& node = *node_ptr;
    NodeScheme scheme = config.scheme_for(node);
    NodeReport entry;
    entry.node = node.name();
    entry.op_type = node.op_type();
    const bool recurrent = is_recurrent(node), product = is_product(node);
    if (!recurrent && !product && node.op_type() != "Conv") continue;  // no weights to quantize
    std::string note;
    if (product && !scheme.keep_float) {
      scheme.weights = product_weight_scheme(node, scheme.weights, note);
      if (scheme.weights.bits > 8 || scheme.activations.bits > 8) {
        note += " (wider than 8 bits: rnnc computes it on its reference kernels)";
      }
    }
    if (scheme.keep_float) {
      entry.scheme = config.decided.count(node.name())
                         ? "float (quantization guard: see the error budget)"
                         : "float (config)";
    } else if (!recurrent && !product) {
      entry.scheme = "float (integer kernels cover LSTM/GRU/RNN, MatMul and Gemm products only)";
    } else if (recurrent &&
               (!is_float_initializer(node.input(1)) || !is_float_initializer(node.input(2)))) {
      entry.scheme = "float (W and R are not float32 initializers)";
    } else if (product &&
               (!is_float_initializer(node.input(1)) || node.input(1)->constant()->rank() != 2)) {
      entry.scheme = "float (B is not a 2-D float32 initializer)";
    } else if (product && node.input(0)->type.dtype != DType::kFloat32) {
      entry.scheme = "float (A is not float32)";
    } else {
      if (opset < 13 && scheme.weights.granularity != Granularity::kTensor) {
        raise_unsupported(cat(node.describe(), ": per-", granularity_name(scheme.weights.granularity),
                              " weight scales need DequantizeLinear's axis (opset 13); the model "
                              "imports opset ", opset, " (use granularity \"tensor\")"));
      }
      if (opset < 10) {
        raise_unsupported(cat(node.describe(), ": DequantizeLinear needs opset 10; the model "
                              "imports opset ", opset));
      }
      if (node.name().empty()) node.set_name(graph.unique_name(node.op_type()));
      plan.emplace_back(&node, scheme);
      if (!scheme.activations.dynamic) needs_calibration.insert(&node);
      entry.quantized = true;
      entry.scheme = scheme.to_string() + note;
    }
    report.nodes.push_back(entry);
  }
  if (!needs_calibration.empty() && calibration.empty()) {
    raise_invalid_input(cat((*needs_calibration.begin())->describe(),
                            ": static activation quantization needs calibration data "
                            "(rnnc quantize --calibrate)"));
  }
  const std::map<const Node*, Ranges> ranges =
      needs_calibration.empty() ? std::map<const Node*, Ranges>{}
                                : calibrate(model, needs_calibration, calibration, progress);

  for (size_t i = 0; i < plan.size(); ++i) {
    auto& [node, scheme] = plan[i];
    if (progress) progress("quantizing", i, plan.size());
    const std::string& name = node->name();  // (C++17 lambdas cannot capture a binding)
    NodeReport& entry = *std::find_if(report.nodes.begin(), report.nodes.end(),
                                      [&](const NodeReport& r) { return r.node == name; });
    int64_t terms[2] = {0, 0};  // the products' K: W.x and R.h, or A.B
    if (is_recurrent(*node)) {
      const int64_t hidden = node->attr_int("hidden_size", node->input(2)->constant()->dim(2));
      terms[0] = node->input(1)->constant()->dim(2);
      terms[1] = hidden;
      for (size_t index : {size_t{1}, size_t{2}}) {
        entry.weight_bytes_before += static_cast<int64_t>(node->input(index)->constant()->nbytes());
        entry.weight_bytes_after += quantize_input(graph, *node, index, scheme.weights,
                                                   recurrent_weight_shape(hidden), opset);
      }
    } else {  // MatMul/Gemm: B
      const bool trans_b = node->op_type() == "Gemm" && node->attr_int("transB", 0) != 0;
      terms[0] = node->input(1)->constant()->dim(trans_b ? 1 : 0);
      entry.weight_bytes_before += static_cast<int64_t>(node->input(1)->constant()->nbytes());
      entry.weight_bytes_after +=
          quantize_input(graph, *node, 1, scheme.weights, matrix_weight_shape(trans_b), opset);
    }
    ActivationQuant quant;
    quant.bits = scheme.activations.bits;
    quant.symmetric = scheme.activations.symmetric;
    quant.dynamic = scheme.activations.dynamic;
    quant.accumulation_bits = scheme.activations.accumulation_bits;
    if (!quant.dynamic) {
      const Ranges& r = ranges.at(node);
      static_coefficients(r.input, scheme.activations, quant, quant.input_scale,
                          quant.input_zero_point);
      if (is_recurrent(*node)) {
        static_coefficients(r.state, scheme.activations, quant, quant.state_scale,
                            quant.state_zero_point);
      }
    }
    set_activation_quant(*node, quant);
    entry.arithmetic = products_text(quant, scheme, is_recurrent(*node), terms[0], terms[1]);
  }
  if (progress) progress("quantizing", plan.size(), plan.size());

  // Recurrent nodes inside subgraphs stay float: an If or Loop that graph_opt could not remove
  // runs on reference kernels as a whole. The report lists them with what gets them inlined.
  std::vector<Enclosing> path;
  std::vector<std::pair<const Node*, std::string>> nested;
  find_nested_recurrent(graph, path, nested);
  for (const auto& [node, reason] : nested) {
    NodeReport entry;
    entry.node = node->name();
    entry.op_type = node->op_type();
    entry.scheme = reason;
    report.nodes.push_back(entry);
  }
  graph.sort_topologically();
  infer_graph(graph);
  return report;
}

void measure_error(const Model& float_model, const Model& quantized_model,
                   const std::vector<Sample>& samples, Report& report, const Progress& progress) {
  std::map<std::string, NodeReport*> by_name;
  for (NodeReport& entry : report.nodes) {
    if (entry.quantized) by_name[entry.node] = &entry;
  }
  std::map<std::string, std::vector<Tensor>> float_outputs;
  std::map<std::string, double> sums;
  std::map<std::string, int64_t> counts;
  for (NodeReport& entry : report.nodes) entry.error_histogram.assign(5, 0);
  for (size_t i = 0; i < samples.size(); ++i) {
    if (progress) progress("measuring error", i, samples.size());
    float_outputs.clear();
    evaluate(*float_model.graph, samples[i], [&](const Node& node, const std::vector<Tensor>& out) {
      if (by_name.count(node.name())) float_outputs[node.name()] = out;
    });
    evaluate(*quantized_model.graph, samples[i],
             [&](const Node& node, const std::vector<Tensor>& out) {
               auto it = by_name.find(node.name());
               auto reference = float_outputs.find(node.name());
               if (it == by_name.end() || reference == float_outputs.end()) return;
               NodeReport& entry = *it->second;
               for (size_t k = 0; k < out.size() && k < reference->second.size(); ++k) {
                 const Tensor& a = out[k];
                 const Tensor& b = reference->second[k];
                 if (!a.defined() || !b.defined() || a.dtype() != DType::kFloat32 ||
                     a.numel() != b.numel()) {
                   continue;
                 }
                 for (int64_t e = 0; e < a.numel(); ++e) {
                   const double d = std::abs(static_cast<double>(a.data<float>()[e]) -
                                             b.data<float>()[e]);
                   entry.max_abs_error = std::max(entry.max_abs_error, d);
                   sums[entry.node] += d;
                   ++counts[entry.node];
                   const int bucket = d < 1e-4 ? 0 : d < 1e-3 ? 1 : d < 1e-2 ? 2 : d < 1e-1 ? 3 : 4;
                   ++entry.error_histogram[static_cast<size_t>(bucket)];
                 }
               }
             });
  }
  if (progress) progress("measuring error", samples.size(), samples.size());
  for (auto& [name, entry] : by_name) {
    if (counts[name] > 0) entry->mean_abs_error = sums[name] / static_cast<double>(counts[name]);
  }
}

std::string Report::to_markdown() const {
  std::ostringstream out;
  out << "| node | op | scheme | integer products | weight bytes | max abs error | "
         "mean abs error | errors <1e-4 / <1e-3 / <1e-2 / <1e-1 / more |\n";
  out << "|---|---|---|---|---|---|---|---|\n";
  for (const NodeReport& entry : nodes) {
    out << "| " << entry.node << " | " << entry.op_type << " | " << entry.scheme << " | "
        << (entry.arithmetic.empty() ? "-" : entry.arithmetic) << " | ";
    if (entry.quantized) {
      out << entry.weight_bytes_before << " -> " << entry.weight_bytes_after;
    } else {
      out << "-";
    }
    out << " | ";
    if (entry.max_abs_error >= 0) {
      out << std::setprecision(3) << entry.max_abs_error << " | " << entry.mean_abs_error << " | ";
      for (size_t b = 0; b < entry.error_histogram.size(); ++b) {
        out << (b ? " / " : "") << entry.error_histogram[b];
      }
    } else {
      out << "- | - | -";
    }
    out << " |\n";
  }
  return out.str();
}

}  // namespace rnnc::quant
