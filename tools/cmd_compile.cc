// rnnc compile: ahead-of-time export of a model into a standalone C library (aot/export.h,
// docs/aot.md): <name>.h, lib<name>.a, <name>.weights and a README in the output directory.
#include <chrono>
#include <iomanip>
#include <iostream>

#include "aot/export.h"
#include "compiler/quantize.h"
#include "ir/error.h"
#include "lowering/cache_location.h"
#include "tools/commands.h"

namespace rnnc::cli {

namespace {

int run_compile(const Parsed& args) {
  if (args.positional.size() != 1) raise_invalid_input("expects one MODEL argument");
  if (!args.has("o")) raise_invalid_input("give the output directory with -o DIR");
  const auto start = std::chrono::steady_clock::now();
  const std::string& path = args.positional[0];

  aot::ExportOptions options;
  options.name = args.get("name", "model");
  options.output_dir = args.get("o");
  options.compile.program.target = args.get("target");
  options.compile.program.cache_dir = args.get("cache-dir");
  options.compile.specialization = [&](const Graph& graph) {
    return parse_specialization(args, graph);
  };
  options.source = path.substr(path.find_last_of('/') + 1);
  // As the runtime does by default (ModelOptions::expose_recurrent_state): the state of forward
  // recurrent nodes becomes state the context carries between step calls.
  options.compile.expose_recurrent_state = !args.has("no-state");
  // Quantized as `rnnc run --quantize` quantizes at load, guard included: the library runs the
  // int8 kernels the runtime would.
  QuantizationOptions& quantize = options.compile.quantize;
  quantize.config = args.get("quantize");
  if (quantize.config.empty() && (args.has("no-guard") || args.has("max-error"))) {
    raise_invalid_input("--no-guard and --max-error go with --quantize CONFIG");
  }
  quantize.guard = !args.has("no-guard");
  quantize.max_error = parse_max_error(args);
  quantize.generated_dims = parse_dims(args);
  quantize.decision_cache_dir = kernel_cache_directory(args.get("cache-dir"));
  options.progress = [](const std::string& line) { std::cerr << line << std::endl; };

  const aot::ExportResult result = aot::export_model(ModelSource::file(path), options);
  if (!result.quantization.empty())
    std::cerr << "rnnc compile: quantized: " << result.quantization << "\n";
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "compiled " << options.source << " in " << std::fixed << std::setprecision(1)
            << seconds << " s: " << result.blocks << " blocks, " << result.kernels
            << " Halide kernels (target " << result.target << ")\n";
  for (const std::string& file : result.files) std::cout << "  " << file << "\n";
  return 0;
}

}  // namespace

const Command kCompileCommand{
    "compile",
    "rnnc compile MODEL -o DIR [--name NAME] [--fix NAME=VALUE]... [--dim NAME=N]... "
    "[--target T] [--cache-dir DIR] [--no-state] [--quantize CONFIG [--max-error F] [--no-guard]]",
    "Compile a model ahead of time into a standalone C library: DIR/NAME.h, DIR/libNAME.a\n"
    "(Halide kernels, Halide runtime, generated driver; links with -lm -lpthread -ldl only),\n"
    "DIR/NAME.weights and DIR/README.md. See docs/aot.md.",
    {
        {"o", "DIR", "output directory (created if missing)"},
        {"name", "NAME", "C prefix and file stem (default model)"},
        {"fix", "NAME=VALUE",
         "fix an input: a number for an input of shape [] (or all 1s), or @FILE.npy / @FILE.pb "
         "(repeatable)"},
        {"dim", "NAME=N", "fix a symbolic dim to a size, e.g. --dim batch=1 (repeatable)"},
        {"target", "T",
         "as rnnc run (host by default: the fastest code for this CPU; x86-64-v3 for any AVX2 "
         "machine, x86-64 for any x86-64); a context refuses to start on a CPU that lacks a "
         "feature (RNNC_AOT_ERROR_CPU)"},
        {"cache-dir", "DIR",
         "compiled kernel cache (default $RNNC_CACHE_DIR, else ~/.cache/rnnc; docs/install.md)"},
        {"no-state", "",
         "do not carry recurrent state between step calls (keep initial states as the model has "
         "them)"},
        {"quantize", "CONFIG",
         "quantize as rnnc run --quantize does ('default' or a JSON config, docs/quant.md; the "
         "guard keeps nodes that break the error budget wider); the library runs the int8 kernels"},
        {"max-error", "F", "with --quantize: the error budget (as rnnc run; default 0.02)"},
        {"no-guard", "", "with --quantize: quantize as configured without measuring the error"},
    },
    run_compile,
};

}  // namespace rnnc::cli
