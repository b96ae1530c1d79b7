#include "tests/support/ort_quantized_models.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "ir/graph.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "tests/support/random.h"

namespace rnnc::testing {

namespace {

// Integers of `dtype` in [lo, hi] into `tensor`.
void fill_integers(Tensor& tensor, int lo, int hi, std::mt19937& rng) {
  std::uniform_int_distribution<int> value(lo, hi);
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    if (tensor.dtype() == DType::kInt8) {
      tensor.data<int8_t>()[i] = static_cast<int8_t>(value(rng));
    } else {
      tensor.data<uint8_t>()[i] = static_cast<uint8_t>(value(rng));
    }
  }
}

}  // namespace

std::string integer_matmul_model(const IntegerMatMulCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Model model;
  model.opsets[""] = c.opset;
  using Form = IntegerMatMulCase::Form;
  if (c.form != Form::kChain) model.opsets["com.microsoft"] = 1;
  model.graph = std::make_unique<Graph>("g");
  Graph& g = *model.graph;
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  Shape shape;
  for (const std::string& row : c.rows) shape.push_back(Dim::symbol(row));
  shape.push_back(Dim(c.k));
  x_type.shape = shape;
  Value* x = g.add_input("x", x_type);
  Node* quantize = c.form == Form::kDynamicQuantizeMatMul
                       ? nullptr
                       : g.add_node("DynamicQuantizeLinear", "x_quantize", {x},
                                    {"x_quantized", "x_scale", "x_zero_point"}, c.opset);

  const bool int8 = c.dtype == DType::kInt8;
  const int bound = c.reduce_range ? 63 : 127;
  const int center = int8 ? 0 : bound + 1;
  const std::vector<int64_t> params =
      c.per_column ? std::vector<int64_t>{c.n} : std::vector<int64_t>{};
  for (int p = 0; p < c.products; ++p) {
    const std::string name = cat("matmul", p), y = cat("y", p);
    Tensor w(c.dtype, {c.k, c.n});
    fill_integers(w, center - bound, center + bound, rng);
    Tensor zero_point(c.dtype, params);
    fill_integers(zero_point, c.zero_points ? center - 4 : center,
                  c.zero_points ? center + 4 : center, rng);
    Value* w_q = g.add_initializer(name + "_w_q", w);
    Value* w_zero_point =
        c.no_zero_point ? nullptr : g.add_initializer(name + "_w_zero_point", zero_point);
    Value* w_scale =
        g.add_initializer(name + "_w_scale", random_tensor(params, rng, 0.002f, 0.02f));
    Value* bias = c.bias ? g.add_initializer(name + "_bias", random_tensor({c.n}, rng, -0.5f, 0.5f))
                         : nullptr;
    if (c.form != Form::kChain) {
      const bool dynamic = c.form == Form::kDynamicQuantizeMatMul;
      std::vector<Value*> inputs =
          dynamic ? std::vector<Value*>{x, w_q, w_scale, w_zero_point, bias}
                  : std::vector<Value*>{
                        quantize->output(0), w_q, quantize->output(1), w_scale, quantize->output(2),
                        w_zero_point,        bias};
      Node* fused = g.add_node(dynamic ? "DynamicQuantizeMatMul" : "MatMulIntegerToFloat", name,
                               inputs, {y}, 1, "com.microsoft");
      fused->trim_omitted_inputs();
      g.add_output(fused->output(0));
      continue;
    }
    std::vector<Value*> inputs = {quantize->output(0), w_q, quantize->output(2)};
    if (w_zero_point) inputs.push_back(w_zero_point);
    Node* product =
        g.add_node("MatMulInteger", name + "_quant", inputs, {name + "_output_quantized"}, c.opset);
    Node* cast =
        g.add_node("Cast", name + "_cast", {product->output(0)}, {name + "_cast_output"}, c.opset);
    cast->set_attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat32)));
    std::vector<Value*> scale_inputs = {quantize->output(1), w_scale};
    if (c.scales_first) std::swap(scale_inputs[0], scale_inputs[1]);
    Node* scales =
        g.add_node("Mul", name + "_scales_mul", scale_inputs, {name + "_scales"}, c.opset);
    std::vector<Value*> mul_inputs = {cast->output(0), scales->output(0)};
    if (c.scales_first) std::swap(mul_inputs[0], mul_inputs[1]);
    Node* mul = g.add_node("Mul", name + "_output_scale_mul", mul_inputs,
                           {c.bias ? name + "_product" : y}, c.opset);
    Value* out = mul->output(0);
    if (bias) out = g.add_node("Add", name + "_bias_add", {out, bias}, {y}, c.opset)->output(0);
    g.add_output(out);
  }
  return export_onnx_bytes(model);
}

std::string integer_conv_model(const IntegerConvCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Model model;
  model.opsets[""] = c.opset;
  model.graph = std::make_unique<Graph>("g");
  Graph& g = *model.graph;
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  Shape x_shape = {Dim::symbol("batch"), Dim(c.channels), Dim::symbol("time")};
  if (c.kernel.size() == 2) x_shape.push_back(Dim::symbol("width"));
  x_type.shape = x_shape;
  Value* x = g.add_input("x", x_type);
  Node* quantize = g.add_node("DynamicQuantizeLinear", "x_quantize", {x},
                              {"x_quantized", "x_scale", "x_zero_point"}, c.opset);

  const bool int8 = c.dtype == DType::kInt8;
  const int center = int8 ? 0 : 128;
  std::vector<int64_t> w_shape = {c.out_channels, c.channels / c.group};
  w_shape.insert(w_shape.end(), c.kernel.begin(), c.kernel.end());
  Tensor w(c.dtype, w_shape);
  fill_integers(w, c.one_sided ? center : std::max(center - c.weight_bound, int8 ? -128 : 0),
                std::min(center + c.weight_bound, int8 ? 127 : 255), rng);
  Value* w_q = g.add_initializer("conv_w_q", w);
  std::vector<Value*> inputs = {quantize->output(0), w_q};
  if (c.zero_points) {
    Tensor zero_point(
        c.dtype, c.per_channel ? std::vector<int64_t>{c.out_channels} : std::vector<int64_t>{});
    fill_integers(zero_point, center - 4, center + 4, rng);
    inputs.push_back(quantize->output(2));
    inputs.push_back(g.add_initializer("conv_w_zero_point", zero_point));
  }
  Node* conv = g.add_node("ConvInteger", "conv_quant", inputs, {"conv_output_quantized"}, c.opset);
  if (!c.strides.empty()) conv->set_attr("strides", Attribute::of_ints(c.strides));
  if (!c.pads.empty()) conv->set_attr("pads", Attribute::of_ints(c.pads));
  if (!c.dilations.empty()) conv->set_attr("dilations", Attribute::of_ints(c.dilations));
  if (c.group != 1) conv->set_attr("group", Attribute::of_int(c.group));
  Node* cast = g.add_node("Cast", "conv_cast", {conv->output(0)}, {"sums"}, c.opset);
  cast->set_attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat32)));
  Value* w_scale = g.add_initializer("conv_w_scale", random_tensor({}, rng, 0.002f, 0.02f));
  Node* scales = g.add_node("Mul", "conv_scales_mul", {quantize->output(1), w_scale},
                            {"conv_scales"}, c.opset);
  Node* mul = g.add_node("Mul", "conv_output_scale_mul", {cast->output(0), scales->output(0)},
                         {"conv_product"}, c.opset);
  // The bias per output channel, broadcast over the spatial dims as quantize_dynamic reshapes it.
  std::vector<int64_t> bias_shape = {1, c.out_channels};
  bias_shape.resize(2 + c.kernel.size(), 1);
  Value* bias = g.add_initializer("conv_bias", random_tensor(bias_shape, rng, -0.5f, 0.5f));
  Node* add = g.add_node("Add", "conv_bias_add", {mul->output(0), bias}, {"y"}, c.opset);
  g.add_output(add->output(0));
  g.add_output(cast->output(0));
  return export_onnx_bytes(model);
}

std::string dynamically_quantized_convs(const std::string& onnx_bytes) {
  std::unique_ptr<Model> model = import_onnx_bytes(onnx_bytes.data(), onnx_bytes.size());
  Graph& g = *model->graph;
  const int opset = static_cast<int>(model->default_opset());
  std::vector<Node*> convs;
  for (const auto& node : g.nodes()) {
    if (node->op_type() == "Conv" && node->input(1) && node->input(1)->is_constant() &&
        (node->num_inputs() < 3 || !node->input(2) || node->input(2)->is_constant())) {
      convs.push_back(node.get());
    }
  }
  for (Node* conv : convs) {
    const std::string base = conv->name();
    const Tensor& w = *conv->input(1)->constant();
    float bound = 0;
    for (int64_t i = 0; i < w.numel(); ++i) bound = std::max(bound, std::abs(w.data<float>()[i]));
    const float scale = bound > 0 ? bound / 127.0f : 1.0f;
    Tensor q(DType::kInt8, w.shape());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const float level = std::nearbyint(w.data<float>()[i] / scale);
      q.data<int8_t>()[i] = static_cast<int8_t>(std::clamp(level, -127.0f, 127.0f));
    }
    Value* x = conv->input(0);
    Node* quantize =
        g.add_node("DynamicQuantizeLinear", base + "_x_quantize", {x},
                   {base + "_x_quantized", base + "_x_scale", base + "_x_zero_point"}, opset);
    Node* product = g.add_node(
        "ConvInteger", base + "_quant",
        {quantize->output(0), g.add_initializer(base + "_W_quantized", q), quantize->output(2),
         g.add_initializer(base + "_W_zero_point", Tensor::scalar<int8_t>(0))},
        {base + "_output_quantized"}, opset);
    for (const auto& [name, attribute] : conv->attributes()) product->set_attr(name, attribute);
    Node* cast =
        g.add_node("Cast", base + "_cast", {product->output(0)}, {base + "_cast_output"}, opset);
    cast->set_attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat32)));
    Node* scales = g.add_node(
        "Mul", base + "_scales_mul",
        {quantize->output(1), g.add_initializer(base + "_W_scale", Tensor::scalar<float>(scale))},
        {base + "_scales"}, opset);
    Value* out = g.add_node("Mul", base + "_output_scale_mul", {cast->output(0), scales->output(0)},
                            {base + "_output_scaled"}, opset)
                     ->output(0);
    if (conv->num_inputs() > 2 && conv->input(2)) {
      const Tensor& b = *conv->input(2)->constant();
      std::vector<int64_t> shape(static_cast<size_t>(w.rank()), 1);
      shape[1] = b.numel();
      const Tensor bias = b.reshaped(shape);
      out = g.add_node("Add", base + "_bias_add", {out, g.add_initializer(base + "_bias", bias)},
                       {base + "_output_biased"}, opset)
                ->output(0);
    }
    g.replace_all_uses(conv->output(0), out);
    std::vector<Value*> float_parameters = {conv->input(1)};
    if (conv->num_inputs() > 2 && conv->input(2)) float_parameters.push_back(conv->input(2));
    g.remove_node(conv);
    for (Value* parameter : float_parameters) {
      if (parameter->uses().empty()) g.remove_initializer(parameter);
    }
  }
  g.sort_topologically();
  return export_onnx_bytes(*model);
}

std::string qdq_conv_model(const QdqConvCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Model model;
  model.opsets[""] = 13;
  model.graph = std::make_unique<Graph>("g");
  Graph& g = *model.graph;
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  x_type.shape = Shape{Dim::symbol("batch"), Dim(c.channels), Dim::symbol("time")};
  Value* x = g.add_input("x", x_type);
  auto zero_point = [&](const std::string& name, int value) {
    return c.activations == DType::kInt8
               ? g.add_initializer(name, Tensor::scalar<int8_t>(static_cast<int8_t>(value)))
               : g.add_initializer(name, Tensor::scalar<uint8_t>(static_cast<uint8_t>(value)));
  };
  // A quantize-dequantize pair on `in`, as quantize_static's QDQ format writes one.
  auto pair = [&](Value* in, const std::string& name, float scale, int zero) {
    Value* s = g.add_initializer(name + "_scale", Tensor::scalar<float>(scale));
    Value* z = zero_point(name + "_zero_point", zero);
    Node* q = g.add_node("QuantizeLinear", name + "_QuantizeLinear", {in, s, z},
                         {name + "_quantized"}, 13);
    return g
        .add_node("DequantizeLinear", name + "_DequantizeLinear", {q->output(0), s, z},
                  {name + "_dq"}, 13)
        ->output(0);
  };
  const int offset = c.activations == DType::kInt8 ? 0 : 128;
  Value* x_dq = pair(x, "x", c.x_scale, c.x_zero_point + offset);

  Tensor w(DType::kInt8, {c.out_channels, c.channels, c.kernel});
  fill_integers(w, -127, 127, rng);
  Tensor w_scale = random_tensor({c.out_channels}, rng, 0.002f, 0.01f);
  Tensor bias(DType::kInt32, {c.out_channels});
  std::uniform_int_distribution<int> bias_value(-2000, 2000);
  Tensor bias_scale(DType::kFloat32, {c.out_channels});
  for (int64_t m = 0; m < c.out_channels; ++m) {
    bias.data<int32_t>()[m] = bias_value(rng);
    bias_scale.data<float>()[m] = c.x_scale * w_scale.data<float>()[m];
  }
  Node* w_dq =
      g.add_node("DequantizeLinear", "w_DequantizeLinear",
                 {g.add_initializer("w_quantized", w), g.add_initializer("w_scale", w_scale),
                  g.add_initializer("w_zero_point", Tensor(DType::kInt8, {c.out_channels}))},
                 {"w_dq"}, 13);
  w_dq->set_attr("axis", Attribute::of_int(0));
  Node* b_dq =
      g.add_node("DequantizeLinear", "b_DequantizeLinear",
                 {g.add_initializer("b_quantized", bias), g.add_initializer("b_scale", bias_scale),
                  g.add_initializer("b_zero_point", Tensor(DType::kInt32, {c.out_channels}))},
                 {"b_dq"}, 13);
  b_dq->set_attr("axis", Attribute::of_int(0));
  Node* conv =
      g.add_node("Conv", "conv", {x_dq, w_dq->output(0), b_dq->output(0)}, {"conv_out"}, 13);
  conv->set_attr("pads", Attribute::of_ints({1, 1}));
  Value* y_dq = pair(conv->output(0), "conv_out", c.y_scale, c.y_zero_point + offset);
  g.add_node("Relu", "relu", {y_dq}, {"y"}, 13);
  g.add_output(g.find_value("y"));
  g.add_output(x_dq);
  return export_onnx_bytes(model);
}

}  // namespace rnnc::testing
