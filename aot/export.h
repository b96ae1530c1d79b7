// Ahead-of-time export: a model -> a standalone C library (`rnnc compile`, docs/aot.md).
//
//   export_model(model) = compile (compiler/compile.h: import through lower; object files kept)
//                         -> each block writes its run as C (ExecutionBlock::write_aot)
//                         -> <name>.h, <name>_driver.c, <name>.weights
//                         -> cc driver + Halide standalone runtime + kernel objects -> lib<name>.a
//
// The library runs the blocks in order on the calling thread (the sequential plan; Halide's own
// runtime runs the recurrent input projection's parallel loop on its pthread pool). It needs
// libc, libm, libpthread and libdl only: no Halide, LLVM, oneTBB, protobuf or ONNX. The kernels
// are the ones the JIT path (runtime/) runs for the same target, so outputs are bitwise equal.
//
// Errors: kUnsupported naming the node for a block that has no C form (reference kernels), or a
// dim the driver cannot compute from its dim arguments; kIo when the C compiler or ar fails.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/compile.h"

namespace rnnc::aot {

struct ExportOptions {
  std::string name = "model";  // C prefix and file stem: <name>.h, lib<name>.a, <name>.weights
  std::string output_dir;
  // The compiler's options: specialization, target (ProgramOptions::target, a name
  // resolve_kernel_target accepts), kernel cache, exposed state. With expose_recurrent_state the
  // context carries each state output into its input from one step call to the next; neither is
  // an argument of the run functions, unless the model had the output before state was exposed.
  CompileOptions compile;
  std::string source;  // the model's file name, for the header's comment and the README
  std::function<void(const std::string&)> progress;  // one line per stage (the CLI prints them)
};

struct ExportResult {
  std::vector<std::string> files;  // written, in out/
  int blocks = 0;
  int kernels = 0;          // distinct Halide pipelines in the library
  int blocks_compiled = 0;  // blocks whose kernels were compiled now (not from the cache)
  uint64_t weight_bytes = 0;
  std::string target;  // the target the kernels were compiled for: its name and features
  std::string quantization;  // what the quantize stage did (its summary), when it ran
};

ExportResult export_model(ModelSource source, const ExportOptions& options);

// A C identifier for `name` ("/lstm/Y" -> "lstm_Y"): letters, digits and '_', not starting with
// a digit.
std::string c_identifier(const std::string& name);

}  // namespace rnnc::aot
