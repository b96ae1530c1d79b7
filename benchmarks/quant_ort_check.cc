// quant_ort_check: `rnnc quantize`'s output is a standard ONNX model that ONNX Runtime loads and
// runs with matching results (issue 7). For each given float model (one input x [seq, batch,
// input] as models/make_workloads.py writes them):
//   1. optimize it (graph_opt's default pipeline), quantize it with the default scheme and write
//      it (as rnnc quantize does);
//   2. ONNX Runtime runs the written file: DequantizeLinear weights, float LSTM/GRU;
//   3. rnnc's reference evaluator runs the same file with the activation annotations dropped
//      (weights-only: what ONNX Runtime computes): must agree within 1e-4 (float32 summation
//      order, as the float harness's bound);
//   4. rnnc's compiled int8 path runs the file as reloaded (activations quantized too): must stay
//      within 0.05 of ONNX Runtime (activation quantization, measured ~1e-2 on these models).
// Exit 0 when every model passes; prints each measured difference.
#include <cmath>
#include <cstdio>
#include <random>

#include "benchmarks/ort_engine.h"
#include "benchmarks/rnnc_engine.h"
#include "graph_opt/pipeline.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
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

  OrtEngine ort;
  ort.load(quantized, EngineOptions{});
  const TensorMap ort_out = ort.run(inputs);

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
              "max|rnnc int8 - ort| = %.3g (<= 0.05)\n",
              ok ? "ok  " : "FAIL", path.c_str(), weights_diff, int8_diff);
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
  for (int i = 2; i < argc; ++i) {
    try {
      ok = rnnc::bench::check(argv[i], argv[1]) && ok;
    } catch (const std::exception& error) {
      std::printf("FAIL %s: %s\n", argv[i], error.what());
      ok = false;
    }
  }
  return ok ? 0 : 1;
}
