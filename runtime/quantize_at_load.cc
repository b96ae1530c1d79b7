#include "runtime/quantize_at_load.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/error.h"
#include "lowering/cache_location.h"
#include "lowering/halide_cache.h"
#include "quant/guard.h"
#include "quant/quantize_model.h"

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
std::string decision_key(const Model& model, const ModelOptions& options,
                         const std::string& config_text, const quant::Config& config,
                         const quant::InputRecipe& recipe, const std::string& model_bytes_hash) {
  std::string key = cat("rnnc quantization decision\nbuild ", build_identity(), "\nmodel ",
                        model_bytes_hash, "\nfixed dims");
  for (const auto& [name, size] : options.fixed_dims) key += cat(" ", name, "=", size);
  key += "\nfixed inputs";
  for (const auto& [name, values] : options.fixed_inputs) {
    key += cat(" ", name, "=");
    for (int64_t v : values) key += cat(v, ",");
  }
  key += cat("\nconfig ", config_text, "\nmax_error ", exact(config.guard.max_error),
             "\ntime limit ", exact(config.guard.time_limit_seconds), "\ninputs ",
             recipe.describe(*model.graph), "\n");
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

LoadQuantization quantize_at_load(Model& model, const ModelOptions& options,
                                  const std::string& model_bytes_hash) {
  // "default": the built-in scheme (quant/scheme.h); otherwise a JSON config file. Static
  // activations need calibration, which only the offline quantizer (rnnc quantize) takes.
  const bool builtin = options.quantization_config == "default";
  const std::string config_text = builtin ? "default" : read_text(options.quantization_config);
  quant::Config config = builtin ? quant::Config{}
                                 : quant::parse_config(config_text, options.quantization_config);
  if (!options.quantization_guard) config.guard.enabled = false;
  if (options.quantization_max_error != 0) {
    if (!(options.quantization_max_error > 0 && options.quantization_max_error <= 1)) {
      raise_invalid_input(cat("ModelOptions::quantization_max_error = ",
                              options.quantization_max_error,
                              ", must be in (0, 1] (a fraction of each output's range)"));
    }
    config.guard.max_error = options.quantization_max_error;
  }
  quant::InputRecipe recipe;
  recipe.dims = options.quantization_dims;

  quant::name_quantizable_nodes(model);
  LoadQuantization result;
  quant::GuardResult guard;
  if (!config.guard.enabled) {
    guard = quant::guard_search(model, config, {}, recipe);  // lists the nodes, measures nothing
    result.summary = guard.summary();
  } else {
    const std::string key =
        decision_key(model, options, config_text, config, recipe, model_bytes_hash);
    const std::string path = cat(kernel_cache_directory(options.cache_dir), "/quant_decisions/",
                                 hash_hex(key), ".txt");
    if (std::optional<quant::GuardResult> cached = read_decision(path)) {
      guard = *cached;
      result.summary = guard.summary() + "; decision read from the cache";
    } else {
      guard = quant::guard_search(model, config, {}, recipe);
      const bool written = write_decision(path, guard);
      result.summary = guard.summary() + (written ? "" : "; the decision could not be cached");
    }
  }
  const quant::Report report =
      quant::quantize_model(model, quant::apply_decisions(model, config, guard.precisions()), {});
  result.report = guard.to_markdown() + "\n" + report.to_markdown();
  return result;
}

}  // namespace rnnc
