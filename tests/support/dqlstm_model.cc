#include "tests/support/dqlstm_model.h"

#include <random>

#include "ir/onnx_export.h"
#include "ir/op_schema.h"
#include "ir/quantization.h"
#include "tests/support/random.h"

namespace rnnc::testing {

namespace {

// A DynamicQuantizeLSTM's weights: q [dirs, k, 4H] with a scale and zero point per direction
// (per tensor) or per direction and gate row (per channel).
struct QuantizedWeight {
  Tensor q, scale, zero_point;
};

QuantizedWeight quantized_weight(const DqlstmCase& c, int64_t k, std::mt19937& rng) {
  const int64_t rows = 4 * c.hidden;
  QuantizedWeight w;
  w.q = Tensor(c.dtype, {c.dirs, k, rows});
  std::uniform_int_distribution<int> value(c.dtype == DType::kInt8 ? -127 : 0,
                                           c.dtype == DType::kInt8 ? 127 : 255);
  for (int64_t i = 0; i < w.q.numel(); ++i) {
    if (c.dtype == DType::kInt8) {
      w.q.data<int8_t>()[i] = static_cast<int8_t>(value(rng));
    } else {
      w.q.data<uint8_t>()[i] = static_cast<uint8_t>(value(rng));
    }
  }
  const std::vector<int64_t> shape =
      c.per_channel ? std::vector<int64_t>{c.dirs, rows} : std::vector<int64_t>{c.dirs};
  w.scale = random_tensor(shape, rng, 0.002f, 0.02f);
  w.zero_point = Tensor(c.dtype, shape);
  const int center = c.dtype == DType::kInt8 ? 0 : 128, spread = c.dtype == DType::kInt8 ? 3 : 8;
  std::uniform_int_distribution<int> zero(c.zero_points ? center - spread : center,
                                          c.zero_points ? center + spread : center);
  for (int64_t i = 0; i < w.zero_point.numel(); ++i) {
    if (c.dtype == DType::kInt8) {
      w.zero_point.data<int8_t>()[i] = static_cast<int8_t>(zero(rng));
    } else {
      w.zero_point.data<uint8_t>()[i] = static_cast<uint8_t>(zero(rng));
    }
  }
  return w;
}

// The float weight DequantizeLinear gives, in LSTM's layout [dirs, 4H, k].
Tensor dequantized(const QuantizedWeight& w) {
  const int64_t dirs = w.q.shape()[0], k = w.q.shape()[1], rows = w.q.shape()[2];
  const bool per_channel = w.scale.numel() != dirs;
  Tensor out(DType::kFloat32, {dirs, rows, k});
  for (int64_t d = 0; d < dirs; ++d) {
    for (int64_t j = 0; j < rows; ++j) {
      const int64_t p = per_channel ? d * rows + j : d;
      const float scale = w.scale.data<float>()[p];
      const int64_t zero = w.zero_point.get_int64(p);
      for (int64_t i = 0; i < k; ++i) {
        const int64_t q = w.q.get_int64((d * k + i) * rows + j);
        out.data<float>()[(d * rows + j) * k + i] = static_cast<float>(q - zero) * scale;
      }
    }
  }
  return out;
}

}  // namespace

DqlstmModels dqlstm_models(const DqlstmCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const QuantizedWeight w = quantized_weight(c, c.input, rng);
  const QuantizedWeight r = quantized_weight(c, c.hidden, rng);
  const Tensor b = random_tensor({c.dirs, 8 * c.hidden}, rng, -0.5f, 0.5f);

  auto build = [&](bool contrib, Model& model) {
    model.opsets[""] = c.default_opset;
    if (contrib) model.opsets["com.microsoft"] = 1;
    model.graph = std::make_unique<Graph>("g");
    Graph& g = *model.graph;
    TensorType x_type;
    x_type.dtype = DType::kFloat32;
    x_type.shape = Shape{Dim::symbol("seq"), Dim::symbol("batch"), Dim(c.input)};
    std::vector<Value*> inputs(8, nullptr);
    inputs[0] = g.add_input("x", x_type);
    if (contrib) {
      inputs[1] = g.add_initializer("w_q", w.q);
      inputs[2] = g.add_initializer("r_q", r.q);
    } else {
      inputs[1] = g.add_initializer("w", dequantized(w));
      inputs[2] = g.add_initializer("r", dequantized(r));
    }
    inputs[3] = g.add_initializer("b", b);
    if (c.initial_state) {
      TensorType state;
      state.dtype = DType::kFloat32;
      state.shape = Shape{Dim(c.dirs), Dim::symbol("batch"), Dim(c.hidden)};
      inputs[5] = g.add_input("h0", state);
      inputs[6] = g.add_input("c0", state);
    }
    if (contrib) {
      inputs.push_back(g.add_initializer("w_scale", w.scale));
      inputs.push_back(g.add_initializer("w_zero_point", w.zero_point));
      inputs.push_back(g.add_initializer("r_scale", r.scale));
      inputs.push_back(g.add_initializer("r_zero_point", r.zero_point));
    }
    Node* node =
        g.add_node(contrib ? "DynamicQuantizeLSTM" : "LSTM", "lstm", inputs, {"y", "y_h", "y_c"},
                   contrib ? 1 : c.default_opset, contrib ? "com.microsoft" : "");
    if (!contrib || c.hidden_size_attribute) {
      node->set_attr("hidden_size", Attribute::of_int(c.hidden));
    }
    node->set_attr("direction", Attribute::of_string(c.direction));
    if (!c.activations.empty()) node->set_attr("activations", Attribute::of_strings(c.activations));
    for (size_t i = 0; i < 3; ++i) g.add_output(node->output(i));
  };
  DqlstmModels models;
  Model contrib;
  build(true, contrib);
  models.contrib = export_onnx_bytes(contrib);
  build(false, models.expected);
  infer_graph(*models.expected.graph);
  for (const auto& node : models.expected.graph->nodes()) {
    if (node->op_type() == "LSTM") set_activation_quant(*node, ActivationQuant{});
  }
  return models;
}

}  // namespace rnnc::testing
