#include "ir/onnx_export.h"

#include <fstream>

#include "ir/error.h"
#include "ir/quantization.h"
#include "ir/onnx_proto.h"

namespace rnnc {

namespace {

void export_type(const TensorType& type, onnx::TypeProto* proto) {
  switch (type.kind) {
    case ValueKind::kTensor: break;
    case ValueKind::kSequence:
      export_type(type.element(), proto->mutable_sequence_type()->mutable_elem_type());
      return;
    case ValueKind::kOptionalTensor:
      export_type(type.element(), proto->mutable_optional_type()->mutable_elem_type());
      return;
    case ValueKind::kOptionalSequence: {
      TensorType sequence = type;
      sequence.kind = ValueKind::kSequence;
      export_type(sequence, proto->mutable_optional_type()->mutable_elem_type());
      return;
    }
  }
  auto* tensor_type = proto->mutable_tensor_type();
  tensor_type->set_elem_type(static_cast<int32_t>(type.dtype));
  if (!type.shape) return;
  auto* shape = tensor_type->mutable_shape();
  for (const Dim& dim : *type.shape) {
    auto* out = shape->add_dim();
    if (dim.is_known()) out->set_dim_value(dim.value());
    else if (dim.is_symbolic()) out->set_dim_param(dim.to_string());
  }
}

void export_value_info(const Value& value, onnx::ValueInfoProto* proto) {
  proto->set_name(value.name());
  if (value.type.dtype != DType::kUndefined) export_type(value.type, proto->mutable_type());
}

void export_graph(const Graph& graph, onnx::GraphProto* proto);

void export_attribute(const std::string& name, const Attribute& a, onnx::AttributeProto* proto) {
  proto->set_name(name);
  using AP = onnx::AttributeProto;
  switch (a.kind) {
    case Attribute::Kind::kFloat: proto->set_type(AP::FLOAT); proto->set_f(a.f); break;
    case Attribute::Kind::kType:
      proto->set_type(AP::TYPE_PROTO);
      export_type(a.tp, proto->mutable_tp());
      break;
    case Attribute::Kind::kInt: proto->set_type(AP::INT); proto->set_i(a.i); break;
    case Attribute::Kind::kString: proto->set_type(AP::STRING); proto->set_s(a.s); break;
    case Attribute::Kind::kTensor:
      proto->set_type(AP::TENSOR);
      tensor_to_proto(a.t, "", proto->mutable_t());
      break;
    case Attribute::Kind::kGraph:
      proto->set_type(AP::GRAPH);
      export_graph(*a.g, proto->mutable_g());
      break;
    case Attribute::Kind::kFloats:
      proto->set_type(AP::FLOATS);
      for (float v : a.floats) proto->add_floats(v);
      break;
    case Attribute::Kind::kInts:
      proto->set_type(AP::INTS);
      for (int64_t v : a.ints) proto->add_ints(v);
      break;
    case Attribute::Kind::kStrings:
      proto->set_type(AP::STRINGS);
      for (const auto& v : a.strings) proto->add_strings(v);
      break;
    case Attribute::Kind::kTensors:
      proto->set_type(AP::TENSORS);
      for (const auto& t : a.tensors) tensor_to_proto(t, "", proto->add_tensors());
      break;
    case Attribute::Kind::kGraphs:
      proto->set_type(AP::GRAPHS);
      for (const auto& g : a.graphs) export_graph(*g, proto->add_graphs());
      break;
  }
}

void export_graph(const Graph& graph, onnx::GraphProto* proto) {
  proto->set_name(graph.name());
  for (const Value* input : graph.inputs()) {
    export_value_info(*input, proto->add_input());
    if (input->is_constant()) tensor_to_proto(*input->constant(), input->name(), proto->add_initializer());
  }
  for (const Value* value : graph.initializers()) {
    tensor_to_proto(*value->constant(), value->name(), proto->add_initializer());
  }
  for (const auto& node : graph.nodes()) {
    auto* out = proto->add_node();
    out->set_op_type(node->op_type());
    out->set_name(node->name());
    if (!node->domain().empty()) out->set_domain(node->domain());
    for (const Value* input : node->inputs()) out->add_input(input ? input->name() : "");
    for (const Value* output : node->outputs()) {
      out->add_output(output ? output->name() : "");
      bool is_graph_output = false;
      for (const Value* g : graph.outputs()) is_graph_output = is_graph_output || g == output;
      if (output && !is_graph_output && output->type.dtype != DType::kUndefined) {
        export_value_info(*output, proto->add_value_info());
      }
    }
    for (const auto& [name, attribute] : node->attributes()) {
      // "rnnc."-prefixed attributes are compiler annotations (e.g. fusion groups) that carry no
      // semantics; other runtimes would reject them as unknown attributes.
      if (name.rfind(kAnnotationPrefix, 0) == 0) continue;
      export_attribute(name, attribute, out->add_attribute());
    }
  }
  for (const Value* output : graph.outputs()) export_value_info(*output, proto->add_output());
}

}  // namespace

std::string export_onnx_bytes(const Model& model) {
  onnx::ModelProto proto;
  proto.set_ir_version(model.ir_version);
  proto.set_producer_name(model.producer_name);
  proto.set_producer_version(model.producer_version);
  if (!model.doc_string.empty()) proto.set_doc_string(model.doc_string);
  std::map<std::string, std::string> metadata = model.metadata;
  // The activation quantization annotations are dropped from the nodes below (other runtimes
  // reject unknown attributes); the metadata carries them back to rnnc.
  metadata.erase(kActivationQuantMetadata);
  const std::string quantization = activation_quant_metadata(*model.graph);
  if (!quantization.empty()) metadata[kActivationQuantMetadata] = quantization;
  for (const auto& [key, value] : metadata) {
    auto* entry = proto.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  for (const auto& [domain, version] : model.opsets) {
    auto* opset = proto.add_opset_import();
    opset->set_domain(domain);
    opset->set_version(version);
  }
  export_graph(*model.graph, proto.mutable_graph());
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    raise_unsupported("model is larger than protobuf's 2 GiB limit; external data is not written");
  }
  return bytes;
}

void export_onnx_file(const Model& model, const std::string& path) {
  std::string bytes = export_onnx_bytes(model);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) raise(ErrorKind::kIo, cat("cannot write model file '", path, "'"));
}

}  // namespace rnnc
