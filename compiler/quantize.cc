#include "compiler/quantize.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/error.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "lowering/cache_location.h"
#include "lowering/halide_cache.h"

namespace rnnc {

namespace fs = std::filesystem;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) raise(ErrorKind::kIo, cat("cannot read quantization config '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string exact(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

// Everything the decision depends on, as text; its hash names the cache file.
std::string decision_key(const Model& model, const PassContext& specialization,
                         const std::string& config_text, const quant::Config& config,
                         const quant::InputRecipe& recipe, const std::string& model_bytes_hash) {
  std::string key = cat("rnnc quantization decision\nbuild ", build_identity(), "\nmodel ",
                        model_bytes_hash, "\nfixed dims");
  for (const auto& [name, size] : specialization.fixed_dims) key += cat(" ", name, "=", size);
  key += "\nfixed inputs";
  for (const auto& [name, value] : specialization.fixed_inputs) {
    key += cat(" ", name, "=", dtype_onnx_name(value.dtype()), ":");
    for (int64_t i = 0; i < value.numel(); ++i) key += cat(exact(value.get_double(i)), ",");
  }
  key +=
      cat("\nconfig ", config_text, "\nmax_error ", exact(config.guard.max_error), "\ntime limit ",
          exact(config.guard.time_limit_seconds), "\ninputs ", recipe.describe(*model.graph), "\n");
  return key;
}

std::optional<quant::GuardResult> read_decision(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return quant::GuardResult::parse(text.str(), path);
  } catch (const Error&) {
    return std::nullopt;  // not a complete decision: decide again and replace it
  }
}

// Best effort: a cache that cannot be written costs the next load a search, nothing else.
bool write_decision(const std::string& path, const quant::GuardResult& result) {
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  if (error) return false;
  std::random_device random;
  const std::string temporary = cat(path, ".tmp-", random());
  {
    std::ofstream out(temporary, std::ios::binary);
    if (!out) return false;
    out << result.serialize();
    if (!out) return false;
  }
  fs::rename(temporary, path, error);
  if (error) fs::remove(temporary, error);
  return !error;
}

}  // namespace

Quantization quantize(Model& model, const QuantizationOptions& options,
                      const PassContext& specialization, const std::string& model_bytes_hash) {
  const bool builtin = options.config == "default";
  const std::string config_text = builtin ? "default" : read_text(options.config);
  quant::Config config =
      builtin ? quant::Config{} : quant::parse_config(config_text, options.config);
  if (!options.guard) config.guard.enabled = false;
  if (options.max_error != 0) {
    if (!(options.max_error > 0 && options.max_error <= 1)) {
      raise_invalid_input(cat("quantization max error = ", options.max_error,
                              ", must be in (0, 1] (a fraction of each output's range)"));
    }
    config.guard.max_error = options.max_error;
  }
  quant::InputRecipe recipe;
  recipe.dims = options.generated_dims;

  Quantization result;
  if (options.calibration) result.samples = options.calibration(*model.graph);
  if (options.keep_float_model) {
    const std::string bytes = export_onnx_bytes(model);
    result.float_model = import_onnx_bytes(bytes.data(), bytes.size());
  }
  quant::name_quantizable_nodes(model);
  const bool cached =
      config.guard.enabled && result.samples.empty() && !options.decision_cache_dir.empty();
  if (!cached) {
    // Without the guard this lists the nodes and measures nothing.
    result.guard = quant::guard_search(model, config, result.samples, recipe);
    result.summary = result.guard.summary();
  } else {
    const std::string key =
        decision_key(model, specialization, config_text, config, recipe, model_bytes_hash);
    const std::string path =
        cat(options.decision_cache_dir, "/quant_decisions/", hash_hex(key), ".txt");
    if (std::optional<quant::GuardResult> decision = read_decision(path)) {
      result.guard = *decision;
      result.summary = result.guard.summary() + "; decision read from the cache";
    } else {
      result.guard = quant::guard_search(model, config, {}, recipe);
      const bool written = write_decision(path, result.guard);
      result.summary =
          result.guard.summary() + (written ? "" : "; the decision could not be cached");
    }
  }
  result.nodes =
      quant::quantize_model(model, quant::apply_decisions(model, config, result.guard.precisions()),
                            result.samples, options.progress);
  result.report = result.guard.to_markdown() + "\n" + result.nodes.to_markdown();
  return result;
}

}  // namespace rnnc
