// The quantize stage (docs/quant.md): the quantization guard (quant/guard.h) decides each node's
// precision, then quantize_model (quant/quantize_model.h) rewrites the model. It runs on the
// specialized, optimized float graph, so recurrent nodes in an If that graph_opt decided are
// inlined and computed weights are folded to the initializers the rewrite needs.
//
// Without calibration samples the guard measures on generated inputs, and its decision can be
// cached (QuantizeOptions::decision_cache_dir) as <dir>/quant_decisions/<key hash>.txt, keyed by
// the model's bytes, the specialization (fixed inputs and dims), the configuration's text, the
// budget, the generated-input recipe and the rnnc build: a model loads with the search once per
// machine, and every load after that (and every process sharing the cache) applies the same
// decision without measuring again. Written to a temporary name and renamed into place, so
// concurrent loads never read half a file. A decision made on calibration samples is not cached.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph_opt/pass.h"
#include "ir/graph.h"
#include "quant/guard.h"
#include "quant/quantize_model.h"

namespace rnnc {

struct QuantizationOptions {
  // "" nothing is quantized; "default": the built-in scheme (quant/scheme.h); else the path of a
  // JSON config.
  std::string config;
  bool guard = true;     // false: quantize as configured, unmeasured
  double max_error = 0;  // the guard's budget; 0: the config's guard.max_error
  std::map<std::string, int64_t> generated_dims;  // sizes of symbolic dims in generated inputs
  // Calibration samples, read against the graph the quantizer sees (inputs fixed by the
  // specialization are gone from it); null or empty: the guard measures on generated inputs.
  std::function<std::vector<quant::Sample>(const Graph&)> calibration;
  std::string decision_cache_dir;  // "" : the guard's decision is not cached
  // Keep a copy of the float model as the quantizer got it (Quantization::float_model), to
  // measure the quantized model's error against (quant::measure_error).
  bool keep_float_model = false;
  quant::Progress progress;
};

struct Quantization {
  std::string summary;  // GuardResult::summary, plus where the decision came from
  std::string report;   // the guard's report section and quantize_model's table (markdown)
  quant::GuardResult guard;
  quant::Report nodes;
  std::vector<quant::Sample> samples;  // the calibration samples used
  std::unique_ptr<Model> float_model;  // QuantizationOptions::keep_float_model
};

// `model_bytes_hash` identifies the file or bytes the model was imported from (the cache key).
Quantization quantize(Model& model, const QuantizationOptions& options,
                      const PassContext& specialization, const std::string& model_bytes_hash);

}  // namespace rnnc
