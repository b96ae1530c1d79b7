// quant_ort_check: `rnnc quantize`'s output is a standard ONNX model that ONNX Runtime loads and
// runs with matching results (issue 7). For each given float model (one input x [seq, batch,
// input] as models/make_workloads.py writes them):
//   1. optimize it (graph_opt's default pipeline), quantize it with the default scheme and write
//      it (as rnnc quantize does);
//   2. ONNX Runtime runs the written file: DequantizeLinear weights, float LSTM/GRU/MatMul (basic
//      graph optimizations: at ORT_ENABLE_ALL, ONNX Runtime 1.30 fuses DequantizeLinear +
//      MatMul into an integer product that quantizes A at run time, ~5e-3 from weights-only; that
//      difference is printed too);
//   3. rnnc's reference evaluator runs the same file with the activation annotations dropped
//      (weights-only: what ONNX Runtime computes): must agree within 1e-4 (float32 summation
//      order, as the float harness's bound);
//   4. rnnc's compiled int8 path runs the file as reloaded (activations quantized too): must stay
//      within 0.05 of ONNX Runtime (activation quantization, measured ~1e-2 on these models).
// Besides the given models, a built-in projection head (x [seq, batch, 64] -> MatMul 64x48 +
// bias -> Relu -> MatMul 48x10, written to the scratch dir) checks quantized MatMul the same way.
// Exit 0 when every model passes; prints each measured difference.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "benchmarks/ort_engine.h"
#include "benchmarks/rnnc_engine.h"
#include "graph_opt/pipeline.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/op_schema.h"
#include "ir/quantization.h"
#include "ir/reference/evaluator.h"
#include "quant/quantize_model.h"

namespace rnnc::bench {
namespace {

double max_diff(const TensorMap& a, const TensorMap& b) {
  double worst = 0;
  for (const auto& [name, tensor] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.numel() != tensor.numel()) return INFINITY;
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(tensor.data<float>()[i]) -
                                       it->second.data<float>()[i]));
    }
  }
  return worst;
}

Tensor uniform_weight(std::vector<int64_t> shape, float bound, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-bound, bound);
  Tensor tensor(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = uniform(random);
  return tensor;
}

// The projection head above, as torch.nn.Linear layers export (weights U(-1/sqrt(k), 1/sqrt(k))).
std::string write_projection_head(const std::string& scratch) {
  Model model;
  model.opsets[""] = 14;
  model.graph = std::make_unique<Graph>();
  Graph& g = *model.graph;
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  x_type.shape = Shape{Dim::symbol("seq"), Dim::symbol("batch"), Dim(64)};
  Value* x = g.add_input("x", x_type);
  Value* w1 = g.add_initializer("w1", uniform_weight({64, 48}, 0.125f, 1));
  Value* b1 = g.add_initializer("b1", uniform_weight({48}, 0.125f, 2));
  Value* w2 = g.add_initializer("w2", uniform_weight({48, 10}, 0.144f, 3));
  Node* project = g.add_node("MatMul", "project", {x, w1}, {"projected"}, 14);
  Node* bias = g.add_node("Add", "add_bias", {project->output(0), b1}, {"biased"}, 14);
  Node* relu = g.add_node("Relu", "relu", {bias->output(0)}, {"hidden"}, 14);
  Node* head = g.add_node("MatMul", "head", {relu->output(0), w2}, {"y"}, 14);
  g.add_output(head->output(0));
  infer_graph(g);
  const std::string path = scratch + "/projection_head.onnx";
  export_onnx_file(model, path);
  return path;
}

bool check(const std::string& path, const std::string& scratch) {
  std::unique_ptr<Model> model = import_onnx_file(path);
  optimize(*model, OptimizeOptions{});
  quant::quantize_model(*model, quant::Config{}, {});
  const std::string quantized = scratch + "/quantized.onnx";
  export_onnx_file(*model, quantized);

  const Value* x = model->graph->inputs().at(0);
  const int64_t input_size = x->type.shape->back().value();
  Tensor input(DType::kFloat32, {17, 2, input_size});
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < input.numel(); ++i) input.data<float>()[i] = normal(random);
  const TensorMap inputs = {{x->name(), input}};

  EngineOptions basic;
  basic.ort_extended_optimizations = false;
  OrtEngine ort;
  ort.load(quantized, basic);
  const TensorMap ort_out = ort.run(inputs);
  OrtEngine ort_fused;
  ort_fused.load(quantized, EngineOptions{});
  const double fused_diff = max_diff(ort_fused.run(inputs), ort_out);

  std::unique_ptr<Model> weights_only = import_onnx_file(quantized);
  for (const auto& node : weights_only->graph->nodes()) clear_activation_quant(*node);
  const std::vector<Tensor> reference = evaluate(*weights_only->graph, inputs);
  TensorMap reference_out;
  for (size_t i = 0; i < reference.size(); ++i) {
    reference_out[weights_only->graph->outputs()[i]->name()] = reference[i];
  }

  RnncEngine rnnc;
  rnnc.load(quantized, EngineOptions{});
  const TensorMap rnnc_out = rnnc.run(inputs);

  const double weights_diff = max_diff(reference_out, ort_out);
  const double int8_diff = max_diff(rnnc_out, ort_out);
  const bool ok = weights_diff <= 1e-4 && int8_diff <= 0.05;
  std::printf("%s %s: max|rnnc reference (weights-only) - ort| = %.3g (<= 1e-4), "
              "max|rnnc int8 - ort| = %.3g (<= 0.05); max|ort all optimizations - ort| = %.3g\n",
              ok ? "ok  " : "FAIL", path.c_str(), weights_diff, int8_diff, fused_diff);
  return ok;
}

}  // namespace
}  // namespace rnnc::bench

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: quant_ort_check SCRATCH_DIR MODEL.onnx...\n");
    return 2;
  }
  bool ok = true;
  std::vector<std::string> paths(argv + 2, argv + argc);
  try {
    paths.push_back(rnnc::bench::write_projection_head(argv[1]));
  } catch (const std::exception& error) {
    std::printf("FAIL projection head: %s\n", error.what());
    ok = false;
  }
  for (const std::string& path : paths) {
    try {
      ok = rnnc::bench::check(path, argv[1]) && ok;
    } catch (const std::exception& error) {
      std::printf("FAIL %s: %s\n", path.c_str(), error.what());
      ok = false;
    }
  }
  return ok ? 0 : 1;
}
