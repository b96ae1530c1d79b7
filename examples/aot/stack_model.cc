// Writes a stacked LSTM as an ONNX file for the AOT examples, built with rnnc's IR (ir/graph.h):
// `layers` forward LSTMs with seeded uniform weights and no initial state, joined by Squeeze as
// PyTorch exports them.
//   aot_stack_model OUT.onnx [LAYERS INPUT HIDDEN]     (default 4 128 128)
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>

#include "ir/graph.h"
#include "ir/onnx_export.h"

namespace {

rnnc::Tensor uniform_weights(std::vector<int64_t> shape, float scale, std::mt19937& rng) {
  rnnc::Tensor t(rnnc::DType::kFloat32, std::move(shape));
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// x: f32[seq, batch, input] -> y: f32[seq, batch, hidden].
std::string stacked_lstm_onnx(int layers, int64_t input, int64_t hidden) {
  using namespace rnnc;
  Model model;
  model.opsets[""] = 14;
  model.graph = std::make_unique<Graph>("stack");
  Graph& g = *model.graph;
  std::mt19937 rng(1);
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  x_type.shape = Shape{Dim::symbol("seq"), Dim::symbol("batch"), Dim(input)};
  Value* x = g.add_input("x", x_type);
  Value* axes = g.add_initializer("squeeze_axes", Tensor::from_vector<int64_t>({1}, {1}));
  const float scale = 1.0f / std::sqrt(static_cast<float>(hidden));
  for (int l = 0; l < layers; ++l) {
    const int64_t in = l == 0 ? input : hidden;
    const std::string p = "l" + std::to_string(l);
    Value* w = g.add_initializer(p + ".W", uniform_weights({1, 4 * hidden, in}, scale, rng));
    Value* r = g.add_initializer(p + ".R", uniform_weights({1, 4 * hidden, hidden}, scale, rng));
    Value* b = g.add_initializer(p + ".B", uniform_weights({1, 8 * hidden}, scale, rng));
    Node* node = g.add_node("LSTM", p + ".rnn", {x, w, r, b}, {p + ".Y"}, 14);
    node->set_attr("hidden_size", Attribute::of_int(hidden));
    const std::string out = l + 1 == layers ? "y" : p + ".out";
    Node* squeeze = g.add_node("Squeeze", p + ".squeeze", {node->output(0), axes}, {out}, 14);
    x = squeeze->output(0);
  }
  g.add_output(x);
  return export_onnx_bytes(model);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) {
    std::cerr << "usage: aot_stack_model OUT.onnx [LAYERS INPUT HIDDEN]\n";
    return 2;
  }
  const int layers = argc == 5 ? std::atoi(argv[2]) : 4;
  const int input = argc == 5 ? std::atoi(argv[3]) : 128;
  const int hidden = argc == 5 ? std::atoi(argv[4]) : 128;
  const std::string bytes = stacked_lstm_onnx(layers, input, hidden);
  std::ofstream out(argv[1], std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out ? 0 : 1;
}
