// Quantization at load (ModelOptions::quantization_config): reads the configuration, decides
// each node's precision with the quantization guard (quant/guard.h) or takes the decision an
// earlier load cached, and rewrites the model.
//
// The guard's decision is cached in the kernel cache directory, as
// <cache dir>/quant_decisions/<key hash>.txt, keyed by the model's bytes, the specialization
// (fixed inputs and dims), the configuration's text, the budget, the generated-input recipe and
// the rnnc build: a model loads with the search once per machine, and every load after that (and
// every process sharing the cache) applies the same decision without measuring again. Written to
// a temporary name and renamed into place, so concurrent loads never read half a file.
#pragma once

#include <string>

#include "ir/graph.h"
#include "rnnc/rnnc.h"

namespace rnnc {

struct LoadQuantization {
  std::string summary;  // GuardResult::summary, plus where the decision came from
  std::string report;   // the guard's report section and quantize_model's table (markdown)
};

// `model` is the specialized, optimized float model; `model_bytes_hash` identifies the file or
// bytes it was loaded from.
LoadQuantization quantize_at_load(Model& model, const ModelOptions& options,
                                  const std::string& model_bytes_hash);

}  // namespace rnnc
