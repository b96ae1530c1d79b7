// The reference engine: the test's model.onnx imported again and run through rnnc's reference
// evaluator. The generator computed the expected outputs from the in-memory model, so any
// difference here is a round-trip bug (export, import, TensorProto writing or reading).
#include <map>

#include "ir/error.h"
#include "ir/onnx_import.h"
#include "ir/reference/evaluator.h"
#include "ir/verifier.h"
#include "tests/conformance/engine.h"

namespace rnnc::conformance {

const char* status_name(EngineResult::Status status) {
  switch (status) {
    case EngineResult::Status::kOk:
      return "ok";
    case EngineResult::Status::kError:
      return "error";
    case EngineResult::Status::kUnsupported:
      return "unsupported";
    case EngineResult::Status::kCrash:
      return "crash";
  }
  return "?";
}

namespace {

class ReferenceEngine final : public Engine {
 public:
  std::string name() const override { return "reference"; }

  EngineResult run(const TestFiles& test) override {
    EngineResult result;
    try {
      auto model = import_onnx_file(test.model_path);
      verify_model(*model);
      std::map<std::string, Tensor> inputs;
      for (const auto& [name, tensor] : test.inputs) inputs[name] = tensor;
      result.outputs = evaluate(*model->graph, inputs);
    } catch (const Error& e) {
      result.status = e.kind() == ErrorKind::kUnsupported ? EngineResult::Status::kUnsupported
                                                          : EngineResult::Status::kError;
      result.message = cat(error_kind_name(e.kind()), ": ", e.what());
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<Engine> make_reference_engine() { return std::make_unique<ReferenceEngine>(); }

}  // namespace rnnc::conformance
