// The seam between the conformance runner and the engines it checks. An engine runs one test's
// model on its inputs and returns the outputs; the runner compares them with the expected ones.
//
// Engines today:
//   reference    rnnc's reference evaluator on the model reloaded from disk (self-consistency:
//                catches ONNX export/import and TensorProto round-trip bugs, and checks that the
//                reloaded model still passes the IR verifier);
//   onnxruntime  ONNX Runtime, in a separate worker process (rnnc_conform_ort) so that an ORT
//                abort (it aborts on layout=1 recurrent nodes) ends one test, not the run.
// The optimized (Halide) path of issue 4 plugs in as one more Engine: implement run() by
// compiling and executing the model, add it to make_engine(), and `rnnc_conform run --engine=`
// checks it against the same suite.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "tests/conformance/suite.h"

namespace rnnc::conformance {

struct EngineResult {
  enum class Status {
    kOk,
    kError,        // the engine rejected the model or failed to run it
    kUnsupported,  // the engine says it does not implement this (op, type, attribute)
    kCrash,        // the engine's process died or hung
  };
  Status status = Status::kOk;
  std::string message;
  std::vector<Tensor> outputs;  // graph output order
};

const char* status_name(EngineResult::Status status);

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  virtual EngineResult run(const TestFiles& test) = 0;
};

std::unique_ptr<Engine> make_reference_engine();
// rnnc's compiled (optimized) path; `cache_dir` "" = the Halide cache's default.
std::unique_ptr<Engine> make_compiled_engine(const std::string& cache_dir);
// `worker` is the rnnc_conform_ort executable; `scratch_dir` holds its output files.
std::unique_ptr<Engine> make_ort_engine(const std::string& worker, const std::string& scratch_dir);

// The ORT worker built with this rnnc ("" when configured without RNNC_ONNXRUNTIME_DIR).
std::string default_ort_worker();

}  // namespace rnnc::conformance
