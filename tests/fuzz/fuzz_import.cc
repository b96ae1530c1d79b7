// libFuzzer target for the parsers that read untrusted bytes: ONNX models (import + inference +
// text form), TensorProto, SequenceProto and OptionalProto .pb files, .npy files, the IR text form
// (a model file ending in .ir) and quantization configs (JSON). The first byte picks the parser.
// Any rnnc::Error is an acceptable outcome; a crash, hang, leak or sanitizer report is a bug.
//
// Built by scripts/fuzz.sh with clang (-fsanitize=fuzzer,address,undefined); the same entry point
// is replayed on deterministic mutations in the regular test suite
// (tests/unit/fuzz_replay_test.cc).
#include <cstddef>
#include <cstdint>

#include "ir/error.h"
#include "ir/npy.h"
#include "ir/onnx_import.h"
#include "ir/printer.h"
#include "ir/text_parser.h"
#include "quant/scheme.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  try {
    rnnc::TensorType sequence{rnnc::DType::kFloat32, std::nullopt, nullptr,
                              rnnc::ValueKind::kSequence};
    rnnc::TensorType optional_sequence = sequence;
    optional_sequence.kind = rnnc::ValueKind::kOptionalSequence;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    switch (data[0] % 7) {
      case 0: {
        auto model = rnnc::import_onnx_bytes(data + 1, size - 1);
        (void)rnnc::to_text(*model);
        break;
      }
      case 1: (void)rnnc::parse_tensor_pb(data + 1, size - 1, "fuzz tensor"); break;
      case 2: (void)rnnc::parse_npy(data + 1, size - 1, "fuzz npy"); break;
      case 3: (void)rnnc::parse_value_pb(data + 1, size - 1, sequence, "fuzz sequence"); break;
      case 4:
        (void)rnnc::parse_value_pb(data + 1, size - 1, optional_sequence, "fuzz optional");
        break;
      case 5: {
        auto model = rnnc::parse_model_text(text, "fuzz.ir");
        (void)rnnc::to_text(*model);
        break;
      }
      case 6:
        (void)rnnc::quant::parse_config(text, "fuzz.json");
        break;
    }
  } catch (const rnnc::Error&) {
  }
  return 0;
}
