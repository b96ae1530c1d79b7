// ONNX export: rnnc::Model -> ModelProto bytes, so an optimized (or later quantized) model can be
// loaded by any ONNX runtime. Symbolic dims are written as dim_param (an expression such as
// "batch*seq" becomes that string), intermediate value types as value_info, initializers as
// raw_data. import(export(m)) prints the same IR text as m.
#pragma once

#include <string>

#include "ir/graph.h"

namespace rnnc {

std::string export_onnx_bytes(const Model& model);
void export_onnx_file(const Model& model, const std::string& path);

}  // namespace rnnc
