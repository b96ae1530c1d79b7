// rnnc quantize: the offline quantizer. Reads a float ONNX model, quantizes it as a config says
// (quant/scheme.h; default: recurrent nodes and MatMul/Gemm with constant weights, int8 weights
// per row (per output channel for B), dynamic u8 activations), calibrates static activation
// coefficients on sample inputs, and writes a standard ONNX model (DequantizeLinear weights, which
// ONNX Runtime loads) that rnnc reloads with its integer kernels. The quantization guard
// (quant/guard.h) decides first which nodes stay wider, so the written model meets the budget.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "compiler/compile.h"
#include "ir/npy.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "quant/guard.h"
#include "quant/quantize_model.h"
#include "tools/commands.h"

namespace rnnc::cli {

namespace {

// One calibration sample: a directory of <input name>.npy / .pb files, or, for a model with one
// input, a single .npy / .pb file.
quant::Sample read_sample(const std::string& path, const Graph& graph) {
  namespace fs = std::filesystem;
  quant::Sample sample;
  if (!fs::exists(path)) raise(ErrorKind::kIo, cat("--calibrate: '", path, "' does not exist"));
  if (!fs::is_directory(path)) {
    if (graph.inputs().size() != 1) {
      raise_invalid_input(cat("--calibrate: '", path, "' is a file, but the model has ",
                              graph.inputs().size(),
                              " inputs; give a directory with one <input name>.npy per input"));
    }
    sample[graph.inputs()[0]->name()] = read_tensor_file(path);
    return sample;
  }
  for (const Value* input : graph.inputs()) {
    for (const char* extension : {".npy", ".pb"}) {
      const fs::path file = fs::path(path) / (input->name() + extension);
      if (fs::exists(file)) sample[input->name()] = read_tensor_file(file.string());
    }
  }
  if (sample.empty()) {
    raise_invalid_input(cat("--calibrate: directory '", path, "' holds no <input name>.npy or .pb "
                            "file for the model's inputs"));
  }
  return sample;
}

int run_quantize(const Parsed& args) {
  if (args.positional.size() != 1) raise_invalid_input("expects one MODEL argument");
  const std::string output = args.get("o");
  if (output.empty()) raise_invalid_input("give -o OUT.onnx");
  const std::string& input = args.positional[0];
  // The compiler's stages through quantize (compiler/compile.h): specialized and optimized first,
  // so an If that graph_opt decides (with --fix/--dim, or on known shapes, as Silero's LSTM's If)
  // is inlined and computed weights are folded to initializers the quantizer rewrites.
  CompileOptions options;
  options.stop_after = Stage::kQuantize;
  options.specialization = [&](const Graph& graph) { return parse_specialization(args, graph); };
  QuantizationOptions& quantize = options.quantize;
  quantize.config = args.has("config") ? args.get("config") : "default";
  quantize.guard = !args.has("no-guard");
  quantize.max_error = parse_max_error(args);
  // Samples are read against the optimized graph (inputs --fix removed are gone). The guard
  // decides each node's precision on them, else on generated inputs (--dim sizes are compiled
  // into the model by now; other dims take the default); its summary line says which, and that
  // real data is better.
  quantize.calibration = [&](const Graph& graph) {
    std::vector<quant::Sample> samples;
    for (const std::string& path : args.all("calibrate")) {
      samples.push_back(read_sample(path, graph));
    }
    return samples;
  };
  quantize.keep_float_model = args.has("report") && args.has("calibrate");
  quantize.progress = [](const std::string& stage, size_t done, size_t total) {
    std::cerr << "\rrnnc quantize: " << stage << " " << done << "/" << total
              << (done == total ? "\n" : "") << std::flush;
  };

  const auto start = std::chrono::steady_clock::now();
  Compiled compiled = compile(ModelSource::file(input), options);
  export_onnx_file(*compiled.model, output);
  Quantization& quantization = *compiled.quantization;
  const quant::GuardResult& guard = quantization.guard;
  quant::Report& report = quantization.nodes;
  const std::vector<quant::Sample>& samples = quantization.samples;

  size_t quantized = 0;
  int64_t before = 0, after = 0;
  for (const quant::NodeReport& entry : report.nodes) {
    if (!entry.quantized) continue;
    ++quantized;
    before += entry.weight_bytes_before;
    after += entry.weight_bytes_after;
  }
  std::cerr << "rnnc quantize: " << guard.summary() << "\n";
  std::cerr << "rnnc quantize: " << quantized << " of " << report.nodes.size()
            << " nodes with weights quantized, their weights " << before << " -> " << after
            << " bytes; wrote " << output << " ("
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s)\n";

  if (args.has("report")) {
    if (quantization.float_model && !samples.empty()) {
      // Both models through the reference evaluator: the quantized one computes with its
      // activations fake-quantized exactly as the integer kernels do.
      std::unique_ptr<Model> reloaded = import_onnx_file(output);
      quant::measure_error(*quantization.float_model, *reloaded, samples, report,
                           quantize.progress);
    }
    std::ofstream out(args.get("report"));
    if (!out) raise(ErrorKind::kIo, cat("cannot write report '", args.get("report"), "'"));
    out << "# rnnc quantize report\n\nModel: `" << input << "` -> `" << output << "`\n\n";
    out << guard.to_markdown() << "\n## Nodes\n\n";
    out << (samples.empty() ? "Per-node errors need calibration samples (--calibrate); the error "
                              "budget above was measured end to end on generated inputs.\n\n"
                            : cat("Errors: each node's outputs in the quantized model against the "
                                  "float model, over ", samples.size(),
                                  " calibration sample(s).\n\n"));
    out << report.to_markdown();
    std::cerr << "rnnc quantize: report " << args.get("report") << "\n";
  }
  return 0;
}

}  // namespace

const Command kQuantizeCommand{
    "quantize",
    "rnnc quantize MODEL -o OUT.onnx [--fix NAME=VALUE]... [--dim NAME=N]... [--config Q.json] "
    "[--calibrate DIR_OR_FILE]... [--report REPORT.md]",
    "Quantize a float model (docs/quant.md) and write it as standard ONNX: weights as\n"
    "DequantizeLinear of int8 tensors (ONNX Runtime loads it), activation schemes in the model's\n"
    "metadata (rnnc reloads it with its integer kernels). The model is first specialized (--fix,\n"
    "--dim) and optimized as `rnnc optimize` does, so recurrent nodes in an If branch that the\n"
    "fixed inputs or known shapes decide are inlined and quantized; the report lists those left\n"
    "inside a subgraph, with the inputs to fix. The quantization guard measures the quantized\n"
    "model against the float one (on --calibrate samples, else generated inputs) and keeps the\n"
    "most sensitive nodes wider until each output's error is within the budget (--max-error).",
    {
        {"o", "OUT.onnx", "where to write the quantized model"},
        {"fix", "NAME=VALUE",
         "fix an input before quantizing: a number for an input of shape [] (or all 1s), or "
         "@FILE.npy / @FILE.pb (repeatable); the written model no longer has that input"},
        {"dim", "NAME=N", "fix a symbolic dim to a size, e.g. --dim batch=1 (repeatable)"},
        {"config", "Q.json", "per-node schemes (default: recurrent nodes and MatMul/Gemm, int8 "
                             "weights per row or output channel, dynamic u8 activations)"},
        {"calibrate", "DIR_OR_FILE",
         "one calibration sample: a directory of <input>.npy/.pb files, or one .npy/.pb file for "
         "a one-input model (repeatable); needed for static activations and for --report errors"},
        {"report", "REPORT.md",
         "write the error budget (per output, before and after the guard) and per node the "
         "scheme, why (sensitivity, budget), weight bytes and error against float"},
        {"max-error", "F",
         "the error budget: each float output's max error as a fraction of its range over the "
         "measured inputs (default 0.02)"},
        {"no-guard", "", "quantize as configured without measuring the error (experiments)"},
    },
    run_quantize,
};

}  // namespace rnnc::cli
