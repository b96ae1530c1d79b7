#include "ir/contrib_ops.h"

#include <cstring>

#include "ir/quantization.h"

namespace rnnc {

namespace {

constexpr const char* kMicrosoftDomain = "com.microsoft";

// DynamicQuantizeLSTM's inputs.
enum Input : size_t {
  kX = 0,
  kW,
  kR,
  kB,
  kSequenceLens,
  kInitialH,
  kInitialC,
  kP,
  kWScale,
  kWZeroPoint,
  kRScale,
  kRZeroPoint,
};

// One quantized weight of the node (W or R), read from its initializers.
struct QuantizedInput {
  const char* name = nullptr;     // "W" or "R"
  const Tensor* q = nullptr;      // [dirs, k, 4H]
  const Tensor* scale = nullptr;  // [dirs] or [dirs, 4H] elements
  const Tensor* zero_point = nullptr;
  bool per_channel = false;
};

class DynamicQuantizeLstm {
 public:
  DynamicQuantizeLstm(Node& node, int default_opset)
      : node_(node), graph_(*node.owner()), opset_(default_opset) {}

  void expand() {
    const std::string direction = node_.attr_string("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
      fail(cat("attribute 'direction' = '", direction,
               "' must be forward, reverse or bidirectional"));
    }
    dirs_ = direction == "bidirectional" ? 2 : 1;
    QuantizedInput w = quantized_input(kW, kWScale, kWZeroPoint, "W");
    QuantizedInput r = quantized_input(kR, kRScale, kRZeroPoint, "R");
    const int64_t gates = w.q->shape()[2];
    if (gates % 4 != 0) fail(cat("W's last dim ", gates, " is not 4 * hidden_size"));
    const int64_t hidden = gates / 4;
    if (node_.has_attr("hidden_size") && node_.attr_int("hidden_size", 0) != hidden) {
      fail(cat("attribute 'hidden_size' = ", node_.attr_int("hidden_size", 0), " but W holds ",
               gates, " = 4 * ", hidden, " gate rows"));
    }
    if (r.q->shape()[1] != hidden || r.q->shape()[2] != gates) {
      fail(cat("R's shape ", shape_text(r.q->shape()), " is not [", dirs_, ", ", hidden, ", ",
               gates, "]"));
    }
    if (opset_ < 10) {
      unsupported(
          cat("its weights become DequantizeLinear, which needs default-domain opset 10 "
              "(the model imports ",
              opset_, ")"));
    }
    for (const QuantizedInput* input : {&w, &r}) {
      if (input->per_channel && opset_ < 13) {
        unsupported(cat(input->name,
                        "'s per-channel scales need DequantizeLinear's axis "
                        "(default-domain opset 13; the model imports ",
                        opset_, ")"));
      }
    }
    if (dirs_ == 2 && (node_.has_attr("activation_alpha") || node_.has_attr("activation_beta"))) {
      unsupported(
          "activation_alpha / activation_beta on a bidirectional node (rnnc splits it "
          "into two directions, and which values each takes depends on its activations)");
    }

    const std::string name = node_.name();
    std::vector<Node*> lstms;
    for (int64_t d = 0; d < dirs_; ++d) {
      const std::string lstm_name = dirs_ == 1 ? name : name + (d == 0 ? ".forward" : ".reverse");
      std::vector<Value*> inputs(8, nullptr);
      inputs[kX] = node_.input(kX);
      inputs[kW] = dequantized(w, d, lstm_name);
      inputs[kR] = dequantized(r, d, lstm_name);
      inputs[kSequenceLens] = node_.input(kSequenceLens);
      for (size_t i : {kB, kInitialH, kInitialC, kP}) inputs[i] = direction_of(i, d, lstm_name);
      std::vector<std::string> outputs;
      for (size_t i = 0; i < node_.num_outputs(); ++i) {
        outputs.push_back(node_.output(i) ? graph_.unique_name(lstm_name + ".out") : "");
      }
      Node* lstm = graph_.add_node("LSTM", lstm_name, inputs, outputs, opset_);
      lstm->trim_omitted_inputs();
      copy_attributes(*lstm, d);
      if (!lstm->has_attr("hidden_size")) lstm->set_attr("hidden_size", Attribute::of_int(hidden));
      set_activation_quant(*lstm, ActivationQuant{});
      lstms.push_back(lstm);
    }

    // The node's outputs: the one LSTM's, or both directions' concatenated (Y on axis 1,
    // Y_h and Y_c on axis 0).
    std::vector<std::pair<std::string, Value*>> renamed;  // (the node's output, its new producer)
    for (size_t i = 0; i < node_.num_outputs(); ++i) {
      Value* old = node_.output(i);
      if (!old) continue;
      Value* value = lstms[0]->output(i);
      if (dirs_ == 2) {
        const std::string concat_name = graph_.unique_name(cat(name, ".concat", i));
        Node* concat =
            graph_.add_node("Concat", concat_name, {lstms[0]->output(i), lstms[1]->output(i)},
                            {graph_.unique_name(concat_name + ".out")}, opset_);
        concat->set_attr("axis", Attribute::of_int(i == 0 ? 1 : 0));
        value = concat->output(0);
      }
      graph_.replace_all_uses(old, value);
      renamed.emplace_back(old->name(), value);
    }
    graph_.remove_node(&node_);
    for (const auto& [old_name, value] : renamed) graph_.rename_value(value, old_name);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    raise_invalid_model(cat(node_.describe(), ": ", message));
  }
  [[noreturn]] void unsupported(const std::string& message) const {
    raise_unsupported(cat(node_.describe(), ": ", message));
  }

  const Tensor& constant_input(size_t i, const char* name) const {
    const Value* value = node_.input(i);
    if (!value) fail(cat("required input ", i, " (", name, ") is missing"));
    if (!value->is_constant()) {
      unsupported(cat("input ", i, " (", name, ", '", value->name(),
                      "') is computed at run time; rnnc needs it as an initializer"));
    }
    return *value->constant();
  }

  QuantizedInput quantized_input(size_t q_index, size_t scale_index, size_t zero_index,
                                 const char* name) const {
    QuantizedInput input;
    input.name = name;
    input.q = &constant_input(q_index, name);
    const std::string scale_name = cat(name, "_scale"), zero_name = cat(name, "_zero_point");
    input.scale = &constant_input(scale_index, scale_name.c_str());
    input.zero_point = &constant_input(zero_index, zero_name.c_str());
    const DType dtype = input.q->dtype();
    if (dtype != DType::kInt8 && dtype != DType::kUInt8) {
      fail(cat(name, " is ", dtype_name(dtype), ", expected int8 or uint8"));
    }
    if (input.q->shape().size() != 3 || input.q->shape()[0] != dirs_) {
      fail(cat(name, "'s shape ", shape_text(input.q->shape()), " is not [", dirs_,
               ", k, 4 * hidden_size]"));
    }
    if (input.zero_point->dtype() != dtype) {
      fail(cat(zero_name, " is ", dtype_name(input.zero_point->dtype()), ", expected ",
               dtype_name(dtype), " as ", name));
    }
    if (input.scale->dtype() != DType::kFloat32) {
      fail(cat(scale_name, " is ", dtype_name(input.scale->dtype()), ", expected f32"));
    }
    const int64_t rows = input.q->shape()[2];
    const int64_t count = input.scale->numel();
    if (count != dirs_ && count != dirs_ * rows) {
      fail(cat(scale_name, " has ", count, " elements: expected ", dirs_, " (per tensor) or ",
               dirs_ * rows, " (per channel)"));
    }
    if (input.zero_point->numel() != count) {
      fail(cat(zero_name, " has ", input.zero_point->numel(), " elements, ", scale_name, " ",
               count));
    }
    input.per_channel = count != dirs_;
    return input;
  }

  // DequantizeLinear of direction d of `input`, transposed into LSTM's [1, 4H, k] layout.
  Value* dequantized(const QuantizedInput& input, int64_t d, const std::string& prefix) {
    const Tensor& q = *input.q;
    const int64_t k = q.shape()[1], rows = q.shape()[2];
    const size_t element = dtype_size(q.dtype());
    Tensor transposed(q.dtype(), {1, rows, k});
    const auto* from = static_cast<const uint8_t*>(q.raw_data()) + d * k * rows * element;
    auto* to = static_cast<uint8_t*>(transposed.raw_data());
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = 0; j < rows; ++j) {
        std::memcpy(to + (j * k + i) * element, from + (i * rows + j) * element, element);
      }
    }
    const int64_t per_direction = input.per_channel ? rows : 1;
    std::vector<int64_t> shape =
        input.per_channel ? std::vector<int64_t>{rows} : std::vector<int64_t>{};
    Tensor scale(DType::kFloat32, shape), zero_point(q.dtype(), shape);
    std::memcpy(scale.raw_data(), input.scale->data<float>() + d * per_direction,
                static_cast<size_t>(per_direction) * sizeof(float));
    std::memcpy(zero_point.raw_data(),
                static_cast<const uint8_t*>(input.zero_point->raw_data()) + d * per_direction,
                static_cast<size_t>(per_direction) * element);

    const std::string base = cat(prefix, ".", input.name);
    Value* q_value =
        graph_.add_initializer(graph_.unique_name(base + "_quantized"), std::move(transposed));
    Value* scale_value =
        graph_.add_initializer(graph_.unique_name(base + "_scale"), std::move(scale));
    Value* zero_value =
        graph_.add_initializer(graph_.unique_name(base + "_zero_point"), std::move(zero_point));
    const std::string dq_name = graph_.unique_name(base + "_dequantize");
    Node* dequantize =
        graph_.add_node("DequantizeLinear", dq_name, {q_value, scale_value, zero_value},
                        {graph_.unique_name(base)}, opset_);
    if (input.per_channel) dequantize->set_attr("axis", Attribute::of_int(1));
    return dequantize->output(0);
  }

  // Input i (B, initial_h, initial_c, P) of direction d: the input itself for one direction,
  // else Gather of index [d] along the direction axis.
  Value* direction_of(size_t i, int64_t d, const std::string& prefix) {
    Value* value = node_.input(i);
    if (!value || dirs_ == 1) return value;
    Value* index = graph_.add_initializer(graph_.unique_name(cat(prefix, ".direction")),
                                          Tensor::from_vector<int64_t>({1}, {d}));
    const std::string gather_name = graph_.unique_name(cat(prefix, ".", value->name()));
    Node* gather = graph_.add_node("Gather", gather_name, {value, index}, {gather_name}, opset_);
    gather->set_attr("axis", Attribute::of_int(0));
    return gather->output(0);
  }

  // The node's attributes for direction d's LSTM: `direction` per LSTM, and of a bidirectional
  // node's activations (3 per direction) direction d's.
  void copy_attributes(Node& lstm, int64_t d) const {
    for (const auto& [key, attribute] : node_.attributes()) lstm.set_attr(key, attribute);
    if (dirs_ == 1) return;
    lstm.set_attr("direction", Attribute::of_string(d == 0 ? "forward" : "reverse"));
    if (node_.has_attr("activations")) {
      const std::vector<std::string> all = node_.attr_strings("activations");
      if (all.size() != 6) {
        fail(cat("attribute 'activations' has ", all.size(),
                 " functions; a bidirectional LSTM takes 6"));
      }
      lstm.set_attr("activations", Attribute::of_strings(std::vector<std::string>(
                                       all.begin() + 3 * d, all.begin() + 3 * d + 3)));
    }
  }

  Node& node_;
  Graph& graph_;
  int opset_;
  int64_t dirs_ = 1;
};

// DynamicQuantizeMatMul (A float, B, b_scale, b_zero_point, bias) and MatMulIntegerToFloat
// (A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias: ONNX Runtime's fusions of what
// quantize_dynamic writes for a MatMul) as that chain: DynamicQuantizeLinear of A (the first only),
// MatMulInteger, Cast to float, Mul by a_scale * b_scale, Add of the bias.
void expand_quantized_matmul(Node& node, int opset) {
  const bool dynamic = node.op_type() == "DynamicQuantizeMatMul";
  const size_t least = dynamic ? 3 : 4, most = dynamic ? 5 : 7;
  if (node.num_inputs() < least || node.num_inputs() > most) {
    raise_invalid_model(
        cat(node.describe(), ": ", node.num_inputs(), " inputs, expected ", least, " to ", most));
  }
  for (size_t i = 0; i < least; ++i) {
    if (!node.input(i))
      raise_invalid_model(cat(node.describe(), ": required input ", i, " is missing"));
  }
  if (opset < 10) {
    raise_unsupported(cat(node.describe(),
                          ": it becomes DynamicQuantizeLinear and MatMulInteger, "
                          "which need default-domain opset 10 (the model imports ",
                          opset, ")"));
  }
  Graph& graph = *node.owner();
  const std::string name = node.name().empty() ? graph.unique_name("matmul") : node.name();
  auto value = [&](const char* suffix) { return graph.unique_name(name + suffix); };
  Value* a = node.input(0);
  Value* a_scale = nullptr;
  Value* a_zero_point = nullptr;
  Value* b_scale = node.input(2);
  Value* b_zero_point = node.input(3);
  Value* bias = node.input(4);
  if (dynamic) {
    Node* quantize =
        graph.add_node("DynamicQuantizeLinear", name + ".quantize", {a},
                       {value(".a_quantized"), value(".a_scale"), value(".a_zero_point")}, opset);
    a = quantize->output(0);
    a_scale = quantize->output(1);
    a_zero_point = quantize->output(2);
  } else {
    a_scale = node.input(2);
    b_scale = node.input(3);
    a_zero_point = node.input(4);
    b_zero_point = node.input(5);
    bias = node.input(6);
  }
  Node* product =
      graph.add_node("MatMulInteger", name + ".product",
                     {a, node.input(1), a_zero_point, b_zero_point}, {value(".product")}, opset);
  product->trim_omitted_inputs();
  Node* cast =
      graph.add_node("Cast", name + ".cast", {product->output(0)}, {value(".cast")}, opset);
  cast->set_attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat32)));
  Node* scales =
      graph.add_node("Mul", name + ".scales", {a_scale, b_scale}, {value(".scales")}, opset);
  Node* result = graph.add_node("Mul", name + ".scale", {cast->output(0), scales->output(0)},
                                {value(".scaled")}, opset);
  if (bias) {
    result =
        graph.add_node("Add", name + ".bias", {result->output(0), bias}, {value(".biased")}, opset);
  }
  Value* old = node.output(0);
  const std::string old_name = old->name();
  graph.replace_all_uses(old, result->output(0));
  graph.remove_node(&node);
  graph.rename_value(result->output(0), old_name);
}

int expand_in_graph(Graph& graph, int default_opset) {
  int count = 0;
  std::vector<Node*> order;
  for (const auto& node : graph.nodes()) order.push_back(node.get());
  for (Node* node : order) {
    for (Graph* sub : node->subgraphs()) count += expand_in_graph(*sub, default_opset);
    if (node->domain() != kMicrosoftDomain) continue;
    if (node->op_type() == "DynamicQuantizeLSTM") {
      DynamicQuantizeLstm(*node, default_opset).expand();
      ++count;
    } else if (node->op_type() == "DynamicQuantizeMatMul" ||
               node->op_type() == "MatMulIntegerToFloat") {
      expand_quantized_matmul(*node, default_opset);
      ++count;
    }
  }
  if (count > 0) graph.sort_topologically();
  return count;
}

}  // namespace

int expand_contrib_ops(Model& model) {
  auto opset = model.opsets.find("");
  if (opset == model.opsets.end() || !model.graph) return 0;
  return expand_in_graph(*model.graph, static_cast<int>(opset->second));
}

}  // namespace rnnc
