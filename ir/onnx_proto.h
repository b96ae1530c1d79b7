// Conversions between rnnc types and the ONNX protobuf types (onnx/onnx_pb.h from libonnx-dev).
// Kept out of the public headers so only import/export code pulls in protobuf.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "ir/graph.h"

namespace rnnc {

// `what` names the tensor in errors ("initializer 'W'", "Constant 'c' attribute 'value'").
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir,
                         const std::string& what);
// `tensor` must be a tensor (Holds::kTensor); sequences and optionals go through write_value_pb.
void tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

}  // namespace rnnc
