// Models the runtime tests build in memory: stacked recurrent layers as a PyTorch export lays
// them out (each layer's Y [seq, 1, batch, H] squeezed to the next layer's X), with seeded
// weights, as ONNX bytes for CompiledModel::load_bytes.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/onnx_export.h"
#include "rnnc/rnnc.h"
#include "tests/support/random.h"

namespace rnnc::testing {

// x: f32[seq, batch, input] -> y: f32[seq, batch, hidden] through `layers` forward layers of
// `op` (LSTM, GRU or RNN) with no initial state given (zeros), as exported models have it.
inline std::string stacked_recurrent_onnx(const std::string& op, int layers, int64_t hidden,
                                          int64_t input, uint32_t seed = 1) {
  Model model;
  model.opsets[""] = 14;
  model.graph = std::make_unique<Graph>("stack");
  Graph& g = *model.graph;
  std::mt19937 rng(seed);
  const int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  x_type.shape = Shape{Dim::symbol("seq"), Dim::symbol("batch"), Dim(input)};
  Value* x = g.add_input("x", x_type);
  Value* axes = g.add_initializer("squeeze_axes", Tensor::from_vector<int64_t>({1}, {1}));
  const float scale = 1.0f / std::sqrt(static_cast<float>(hidden));
  for (int l = 0; l < layers; ++l) {
    const int64_t in = l == 0 ? input : hidden;
    const std::string p = "l" + std::to_string(l);
    Value* w =
        g.add_initializer(p + ".W", random_tensor({1, gates * hidden, in}, rng, -scale, scale));
    Value* r =
        g.add_initializer(p + ".R", random_tensor({1, gates * hidden, hidden}, rng, -scale, scale));
    Value* b =
        g.add_initializer(p + ".B", random_tensor({1, 2 * gates * hidden}, rng, -scale, scale));
    Node* node = g.add_node(op, p + ".rnn", {x, w, r, b}, {p + ".Y"}, 14);
    node->set_attr("hidden_size", Attribute::of_int(hidden));
    if (op == "GRU") node->set_attr("linear_before_reset", Attribute::of_int(1));
    const std::string out = l + 1 == layers ? "y" : p + ".out";
    Node* squeeze = g.add_node("Squeeze", p + ".squeeze", {node->output(0), axes}, {out}, 14);
    x = squeeze->output(0);
  }
  g.add_output(x);
  return export_onnx_bytes(model);
}

// x: f32[seq, xb, input] -> y, y_h through one forward LSTM whose initial state is the graph
// input h: f32[1, hb, hidden], its batch dim named apart from x's ('hb', not 'xb') as some
// exporters write state inputs. Nothing in the names ties hb to xb; Y_h's type takes xb.
inline std::string own_state_dim_lstm_onnx(int64_t hidden, int64_t input, uint32_t seed = 1) {
  Model model;
  model.opsets[""] = 14;
  model.graph = std::make_unique<Graph>("lstm");
  Graph& g = *model.graph;
  std::mt19937 rng(seed);
  TensorType x_type, h_type;
  x_type.dtype = h_type.dtype = DType::kFloat32;
  x_type.shape = Shape{Dim::symbol("seq"), Dim::symbol("xb"), Dim(input)};
  h_type.shape = Shape{Dim(1), Dim::symbol("hb"), Dim(hidden)};
  Value* x = g.add_input("x", x_type);
  Value* h = g.add_input("h", h_type);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hidden));
  Value* w = g.add_initializer("W", random_tensor({1, 4 * hidden, input}, rng, -scale, scale));
  Value* r = g.add_initializer("R", random_tensor({1, 4 * hidden, hidden}, rng, -scale, scale));
  Node* lstm = g.add_node("LSTM", "rnn", {x, w, r, nullptr, nullptr, h}, {"y", "y_h"}, 14);
  lstm->set_attr("hidden_size", Attribute::of_int(hidden));
  g.add_output(lstm->output(0));
  g.add_output(lstm->output(1));
  return export_onnx_bytes(model);
}

inline std::shared_ptr<const CompiledModel> load_stack(const std::string& op, int layers,
                                                       int64_t hidden, int64_t input,
                                                       ModelOptions options = {}) {
  const std::string bytes = stacked_recurrent_onnx(op, layers, hidden, input);
  if (options.cache_dir.empty()) options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  return CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
}

inline std::vector<float> random_vector(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace rnnc::testing
