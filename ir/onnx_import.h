// ONNX import: ModelProto -> rnnc::Model, with types and shapes inferred for every node.
//
// Accepts opsets kMinImportOpset..kMaxOpset of the default domain, the legacy ones (below
// kMinOpset) rewritten into opset-kMinOpset forms (ir/legacy_opsets.h); initializers in every
// encoding (typed fields and little-endian raw_data), external data files next to the model,
// Constant nodes in every value_* form, graph inputs that are also initializers (they become
// inputs with a default value), and nested graphs (If/Loop/Scan bodies) with outer-scope
// references.
// Everything wrong with the bytes or the model is an rnnc::Error naming the node and field.
#pragma once

#include <memory>
#include <string>

#include "ir/graph.h"

namespace rnnc {

// base_dir: where external data files are looked up (the model's folder); "" forbids them.
std::unique_ptr<Model> import_onnx_bytes(const void* data, size_t size,
                                         const std::string& base_dir = "");
std::unique_ptr<Model> import_onnx_file(const std::string& path);

// A serialized onnx.TensorProto (the backend test data's input_*.pb / output_*.pb).
Tensor read_tensor_pb(const std::string& path, std::string* name = nullptr);
Tensor parse_tensor_pb(const void* data, size_t size, const std::string& what);
void write_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name);
// A value of type `declared` from the bytes of its proto (`what` names it in errors; base_dir as
// for import: where external data is looked up, "" forbids it).
Tensor parse_value_pb(const void* data, size_t size, const TensorType& declared,
                      const std::string& what, const std::string& base_dir = "",
                      std::string* name = nullptr);
// A value of type `declared` from its file: an onnx.TensorProto for a tensor, a SequenceProto
// for a sequence (Tensor::sequence), an OptionalProto for an optional (its value, or
// Tensor::none). An empty sequence or optional takes its element type from `declared`.
Tensor read_value_pb(const std::string& path, const TensorType& declared,
                     std::string* name = nullptr);
// Writes `value` of type `declared` as read_value_pb reads it.
void write_value_pb(const std::string& path, const Tensor& value, const TensorType& declared,
                    const std::string& name);

}  // namespace rnnc
