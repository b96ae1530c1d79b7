// DynamicQuantizeLSTM models for tests (ONNX Runtime's com.microsoft contrib op, ir/contrib_ops.h):
// seeded int8 or uint8 weights with a scale and zero point per direction or per gate row, and the
// same LSTM in the default domain on the dequantized float weights, annotated with rnnc's dynamic
// activation quantization.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace rnnc::testing {

struct DqlstmCase {
  int64_t dirs = 1, input = 5, hidden = 4;
  std::string direction = "forward";
  DType dtype = DType::kInt8;
  bool per_channel = true;
  // Nonzero zero points (ONNX Runtime's kernel takes them for uint8 weights only).
  bool zero_points = true;
  bool hidden_size_attribute = true;  // on the DynamicQuantizeLSTM (it is optional)
  bool initial_state = false;  // initial_h and initial_c ("h0", "c0") as graph inputs
  int default_opset = 14;
  std::vector<std::string> activations;
};

struct DqlstmModels {
  std::string contrib;  // ONNX bytes: x -> y, y_h, y_c through one DynamicQuantizeLSTM 'lstm'
  Model expected;       // the same LSTM in the default domain, float weights, annotated
};

DqlstmModels dqlstm_models(const DqlstmCase& c, uint32_t seed = 7);

}  // namespace rnnc::testing
