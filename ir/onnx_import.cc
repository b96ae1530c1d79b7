#include "ir/onnx_import.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx-data_pb.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "ir/contrib_ops.h"
#include "ir/error.h"
#include "ir/legacy_opsets.h"
#include "ir/onnx_proto.h"
#include "ir/op_schema.h"
#include "ir/quantization.h"

namespace rnnc {

namespace {

std::string read_file_bytes(const std::string& path, const std::string& what) {
  std::error_code error;
  const bool regular = std::filesystem::is_regular_file(path, error);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!regular || !in) raise(ErrorKind::kIo, cat("cannot open ", what, " '", path, "'"));
  const std::streamoff size = in.tellg();
  if (size < 0) raise(ErrorKind::kIo, cat("cannot read ", what, " '", path, "'"));
  // Sized once: the bytes are held a single time while they are parsed.
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!in) raise(ErrorKind::kIo, cat("cannot read ", what, " '", path, "'"));
  return bytes;
}

template <typename Message>
void parse_coded(Message& message, google::protobuf::io::CodedInputStream& stream, size_t size,
                 const std::string& what) {
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    raise_unsupported(cat(what, " is larger than 2 GiB; store its weights as external data"));
  }
  stream.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (!message.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage()) {
    raise_invalid_model(cat(what, " is not a valid ONNX protobuf (truncated or corrupt, ", size,
                            " bytes)"));
  }
}

template <typename Message>
void parse_message(Message& message, const void* data, size_t size, const std::string& what) {
  google::protobuf::io::CodedInputStream stream(
      static_cast<const uint8_t*>(data),
      static_cast<int>(std::min<size_t>(size, std::numeric_limits<int>::max())));
  parse_coded(message, stream, size, what);
}

// A model file opened for parsing straight from it, so the model's bytes are never held beside
// the parsed message.
struct ModelFile {
  explicit ModelFile(const std::string& path) : path(path) {
    std::error_code error;
    size = static_cast<size_t>(std::filesystem::file_size(path, error));  // fails for directories
    if (!error) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (error || fd < 0) raise(ErrorKind::kIo, cat("cannot open model file '", path, "'"));
  }
  ~ModelFile() {
    if (fd >= 0) ::close(fd);
  }
  void parse(onnx::ModelProto& message) {
    google::protobuf::io::FileInputStream file(fd);
    google::protobuf::io::CodedInputStream stream(&file);
    try {
      parse_coded(message, stream, size, "model");
    } catch (const Error&) {
      if (file.GetErrno() != 0) raise(ErrorKind::kIo, cat("cannot read model file '", path, "'"));
      throw;
    }
  }
  std::string path;
  size_t size = 0;
  int fd = -1;
};

// ---- tensors -----------------------------------------------------------------------------------

// Copies `count` little-endian elements of `element_size` bytes (this host is little-endian x64).
void copy_raw(const std::string& raw, Tensor& tensor, const std::string& what) {
  if (raw.size() != tensor.nbytes()) {
    raise_invalid_model(cat(what, ": raw_data has ", raw.size(), " bytes, expected ",
                            tensor.nbytes(), " for ", tensor.numel(), " elements of ",
                            dtype_onnx_name(tensor.dtype())));
  }
  if (!raw.empty()) std::memcpy(tensor.raw_data(), raw.data(), raw.size());
}

std::string read_external(const onnx::TensorProto& proto, const std::string& base_dir,
                          const std::string& what, size_t expected_bytes) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& entry : proto.external_data()) {
    try {
      if (entry.key() == "location") location = entry.value();
      else if (entry.key() == "offset") offset = std::stoll(entry.value());
      else if (entry.key() == "length") length = std::stoll(entry.value());
    } catch (const std::exception&) {
      raise_invalid_model(cat(what, ": external_data '", entry.key(), "' = '", entry.value(),
                              "' is not an integer"));
    }
  }
  if (location.empty()) raise_invalid_model(cat(what, ": external data without a 'location'"));
  if (base_dir.empty()) {
    raise_invalid_model(cat(what, ": uses external data '", location,
                            "' but the model was loaded from bytes without a base directory"));
  }
  std::filesystem::path relative(location);
  if (relative.is_absolute() || location.find("..") != std::string::npos) {
    raise_invalid_model(cat(what, ": external data location '", location,
                            "' must be a relative path inside the model's folder"));
  }
  std::string path = (std::filesystem::path(base_dir) / relative).string();
  std::ifstream in(path, std::ios::binary);
  if (!in) raise(ErrorKind::kIo, cat(what, ": cannot open external data file '", path, "'"));
  in.seekg(0, std::ios::end);
  int64_t file_size = in.tellg();
  if (length < 0) length = file_size - offset;
  if (offset < 0 || offset > file_size || length > file_size - offset) {
    raise_invalid_model(cat(what, ": external data range offset=", offset, " length=", length,
                            " exceeds file '", path, "' of ", file_size, " bytes"));
  }
  if (static_cast<size_t>(length) != expected_bytes) {
    raise_invalid_model(cat(what, ": external data has ", length, " bytes, expected ",
                            expected_bytes));
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) raise(ErrorKind::kIo, cat(what, ": short read from '", path, "'"));
  return bytes;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir,
                         const std::string& what) {
  auto dtype = dtype_from_onnx(proto.data_type());
  if (const char* name = unrepresented_onnx_type_name(proto.data_type())) {
    raise_unsupported(cat(what, ": element type ", name, " (data_type ", proto.data_type(), ")"));
  }
  if (!dtype || *dtype == DType::kUndefined) {
    raise_invalid_model(cat(what, ": data_type ", proto.data_type(), " is not a valid ONNX type"));
  }
  if (*dtype == DType::kComplex64 || *dtype == DType::kComplex128) {
    raise_unsupported(cat(what, ": element type ", dtype_onnx_name(*dtype)));
  }
  if (proto.has_segment()) raise_unsupported(cat(what, ": segmented tensors"));
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  for (int64_t d : shape) {
    if (d < 0) raise_invalid_model(cat(what, ": negative dim ", d));
  }
  // Check the payload against the dims before allocating, so a corrupt dim cannot ask for
  // terabytes.
  int64_t numel = 0;
  try {
    numel = shape_numel(shape);
  } catch (const Error& e) {
    raise_invalid_model(cat(what, ": ", e.what()));
  }
  auto expect_count = [&](int64_t count, const char* field) {
    if (count != numel) {
      raise_invalid_model(cat(what, ": ", field, " has ", count, " values, expected ", numel,
                              " for its dims"));
    }
  };
  size_t element = dtype_size(*dtype);
  bool external = proto.data_location() == onnx::TensorProto_DataLocation_EXTERNAL;
  if (*dtype == DType::kString) {
    if (external || proto.has_raw_data()) {
      raise_invalid_model(cat(what, ": string tensors must use string_data"));
    }
    expect_count(proto.string_data_size(), "string_data");
  } else if (proto.has_raw_data() && !external) {
    if (static_cast<uint64_t>(numel) > proto.raw_data().size() / element ||
        proto.raw_data().size() != static_cast<size_t>(numel) * element) {
      raise_invalid_model(cat(what, ": raw_data has ", proto.raw_data().size(),
                              " bytes, expected ", numel, " elements of ",
                              dtype_onnx_name(*dtype), " (", element, " bytes each)"));
    }
  } else if (!external) {
    switch (*dtype) {
      case DType::kFloat32: expect_count(proto.float_data_size(), "float_data"); break;
      case DType::kFloat64: expect_count(proto.double_data_size(), "double_data"); break;
      case DType::kInt64: expect_count(proto.int64_data_size(), "int64_data"); break;
      case DType::kUInt32:
      case DType::kUInt64: expect_count(proto.uint64_data_size(), "uint64_data"); break;
      default: expect_count(proto.int32_data_size(), "int32_data"); break;
    }
  }
  std::string external_bytes;
  if (external) {
    if (static_cast<uint64_t>(numel) > (uint64_t{1} << 40) / element) {
      raise_invalid_model(cat(what, ": ", numel, " elements is too large"));
    }
    external_bytes = read_external(proto, base_dir, what, static_cast<size_t>(numel) * element);
  }
  Tensor tensor(*dtype, shape);
  if (external) {
    copy_raw(external_bytes, tensor, what);
    return tensor;
  }
  if (proto.has_raw_data()) {
    copy_raw(proto.raw_data(), tensor, what);
    return tensor;
  }
  int64_t n = tensor.numel();
  switch (*dtype) {
    case DType::kFloat32:
      std::copy(proto.float_data().begin(), proto.float_data().end(), tensor.data<float>());
      break;
    case DType::kFloat64:
      std::copy(proto.double_data().begin(), proto.double_data().end(), tensor.data<double>());
      break;
    case DType::kInt64:
      std::copy(proto.int64_data().begin(), proto.int64_data().end(), tensor.data<int64_t>());
      break;
    case DType::kUInt32:
    case DType::kUInt64:
      for (int64_t i = 0; i < n; ++i) {
        if (*dtype == DType::kUInt32) {
          tensor.data<uint32_t>()[i] = static_cast<uint32_t>(proto.uint64_data(static_cast<int>(i)));
        } else {
          tensor.data<uint64_t>()[i] = proto.uint64_data(static_cast<int>(i));
        }
      }
      break;
    case DType::kString:
      for (int64_t i = 0; i < n; ++i) {
        tensor.strings()[static_cast<size_t>(i)] = proto.string_data(static_cast<int>(i));
      }
      break;
    default: {
      // int32_data carries int32, int16, int8, uint16, uint8, bool, float16 and bfloat16 (the
      // 16-bit floats as their bit patterns).
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = proto.int32_data(static_cast<int>(i));
        switch (*dtype) {
          case DType::kInt32: tensor.data<int32_t>()[i] = v; break;
          case DType::kInt16: tensor.data<int16_t>()[i] = static_cast<int16_t>(v); break;
          case DType::kInt8: tensor.data<int8_t>()[i] = static_cast<int8_t>(v); break;
          case DType::kUInt16:
          case DType::kFloat16:
          case DType::kBFloat16: tensor.data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
          case DType::kUInt8: tensor.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
          case DType::kBool: tensor.data<bool>()[i] = v != 0; break;
          default: RNNC_CHECK(false, "unhandled dtype ", dtype_name(*dtype));
        }
      }
    }
  }
  return tensor;
}

void tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  RNNC_CHECK(tensor.is_tensor(), "tensor_to_proto of a sequence or an empty optional ('", name, "')");
  proto->Clear();
  proto->set_name(name);
  proto->set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  if (tensor.dtype() == DType::kString) {
    for (const auto& s : tensor.strings()) proto->add_string_data(s);
  } else {
    proto->set_raw_data(tensor.raw_data(), tensor.nbytes());
  }
}

Tensor parse_tensor_pb(const void* data, size_t size, const std::string& what) {
  return parse_value_pb(data, size, TensorType{}, what);
}

Tensor read_tensor_pb(const std::string& path, std::string* name) {
  return read_value_pb(path, TensorType{}, name);
}

namespace {

Tensor sequence_from_proto(const onnx::SequenceProto& proto, DType declared,
                           const std::string& base_dir, const std::string& what) {
  if (proto.elem_type() != onnx::SequenceProto::TENSOR &&
      proto.elem_type() != onnx::SequenceProto::UNDEFINED) {
    raise_unsupported(cat(what, ": a sequence of element kind ", proto.elem_type(),
                          " (only sequences of tensors are supported)"));
  }
  std::vector<Tensor> elements;
  for (int i = 0; i < proto.tensor_values_size(); ++i) {
    elements.push_back(tensor_from_proto(proto.tensor_values(i), base_dir, cat(what, " element ", i)));
    if (elements.back().dtype() != elements[0].dtype()) {
      raise_invalid_input(cat(what, ": element ", i, " is ", dtype_onnx_name(elements.back().dtype()),
                              " but element 0 is ", dtype_onnx_name(elements[0].dtype())));
    }
  }
  DType dtype = elements.empty() ? declared : elements[0].dtype();
  return Tensor::sequence(dtype, std::move(elements));
}

}  // namespace

// parse_message with the error a user sees for a bad value file.
void parse_value_message(google::protobuf::Message& proto, const void* data, size_t size,
                         const std::string& what, const char* type_name) {
  try {
    parse_message(proto, data, size, what);
  } catch (const Error&) {
    raise_invalid_input(cat(what, " is not a valid ONNX ", type_name, " (truncated or corrupt)"));
  }
}

Tensor parse_value_pb(const void* data, size_t size, const TensorType& declared,
                      const std::string& what, const std::string& base_dir, std::string* name) {
  if (declared.kind == ValueKind::kTensor) {
    onnx::TensorProto proto;
    parse_value_message(proto, data, size, what, "TensorProto");
    if (name) *name = proto.name();
    return tensor_from_proto(proto, base_dir, what);
  }
  if (declared.kind == ValueKind::kSequence) {
    onnx::SequenceProto proto;
    parse_value_message(proto, data, size, what, "SequenceProto");
    if (name) *name = proto.name();
    return sequence_from_proto(proto, declared.dtype, base_dir, what);
  }
  onnx::OptionalProto proto;
  parse_value_message(proto, data, size, what, "OptionalProto");
  if (name) *name = proto.name();
  if (proto.has_tensor_value()) {
    if (declared.kind != ValueKind::kOptionalTensor) {
      raise_invalid_input(cat(what, " holds a tensor, but the value is ", declared.to_string()));
    }
    return tensor_from_proto(proto.tensor_value(), base_dir, what);
  }
  if (proto.has_sequence_value()) {
    if (declared.kind != ValueKind::kOptionalSequence) {
      raise_invalid_input(cat(what, " holds a sequence, but the value is ", declared.to_string()));
    }
    return sequence_from_proto(proto.sequence_value(), declared.dtype, base_dir, what);
  }
  if (proto.has_sparse_tensor_value() || proto.has_map_value() || proto.has_optional_value()) {
    raise_unsupported(cat(what, ": optionals of sparse tensors, maps and optionals are not "
                          "supported"));
  }
  return Tensor::none(declared.dtype);
}

Tensor read_value_pb(const std::string& path, const TensorType& declared, std::string* name) {
  const char* kind = declared.kind == ValueKind::kTensor     ? "tensor"
                     : declared.kind == ValueKind::kSequence ? "sequence"
                                                             : "optional";
  std::string bytes = read_file_bytes(path, cat(kind, " file"));
  return parse_value_pb(bytes.data(), bytes.size(), declared, cat(kind, " file '", path, "'"),
                        std::filesystem::path(path).parent_path().string(), name);
}

namespace {

void write_message(const std::string& path, const google::protobuf::Message& proto,
                   const char* what) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !proto.SerializeToOstream(&out)) {
    raise(ErrorKind::kIo, cat("cannot write ", what, " file '", path, "'"));
  }
}

void sequence_to_proto(const Tensor& value, const std::string& name, onnx::SequenceProto* proto) {
  proto->set_name(name);
  proto->set_elem_type(onnx::SequenceProto::TENSOR);
  for (const Tensor& element : value.elements()) {
    tensor_to_proto(element, "", proto->add_tensor_values());
  }
}

}  // namespace

void write_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  tensor_to_proto(tensor, name, &proto);
  write_message(path, proto, "tensor");
}

void write_value_pb(const std::string& path, const Tensor& value, const TensorType& declared,
                    const std::string& name) {
  switch (declared.kind) {
    case ValueKind::kTensor:
      write_tensor_pb(path, value, name);
      return;
    case ValueKind::kSequence: {
      onnx::SequenceProto proto;
      sequence_to_proto(value, name, &proto);
      write_message(path, proto, "sequence");
      return;
    }
    case ValueKind::kOptionalTensor:
    case ValueKind::kOptionalSequence: {
      onnx::OptionalProto proto;
      proto.set_name(name);
      bool sequence = declared.kind == ValueKind::kOptionalSequence;
      proto.set_elem_type(sequence ? onnx::OptionalProto::SEQUENCE : onnx::OptionalProto::TENSOR);
      if (value.is_sequence()) {
        sequence_to_proto(value, "", proto.mutable_sequence_value());
      } else if (value.is_tensor()) {
        tensor_to_proto(value, "", proto.mutable_tensor_value());
      }
      write_message(path, proto, "optional");
      return;
    }
  }
}

// ---- graphs ------------------------------------------------------------------------------------

namespace {

// Imports a parsed model it owns: each main-graph initializer's data is dropped from the message
// once it is a tensor, so a model's weights are held about once, not twice, during import.
class Importer {
 public:
  Importer(onnx::ModelProto& proto, std::string base_dir)
      : proto_(proto), base_dir_(std::move(base_dir)) {}

  std::unique_ptr<Model> run() {
    auto model = std::make_unique<Model>();
    model->ir_version = proto_.ir_version();
    model->producer_name = proto_.producer_name();
    model->producer_version = proto_.producer_version();
    model->doc_string = proto_.doc_string();
    for (const auto& entry : proto_.metadata_props()) model->metadata[entry.key()] = entry.value();
    for (const auto& opset : proto_.opset_import()) {
      std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
      model->opsets[domain] = opset.version();
    }
    if (proto_.opset_import_size() == 0) {
      raise_invalid_model("model: opset_import is empty (the model declares no operator set)");
    }
    auto it = model->opsets.find("");
    if (it == model->opsets.end()) {
      raise_unsupported("model: does not import the default ONNX domain (ai.onnx)");
    }
    if (it->second < kMinImportOpset || it->second > kMaxOpset) {
      raise_unsupported(cat("model: default-domain opset ", it->second, " is not supported (rnnc ",
                            "supports opsets ", kMinImportOpset, " to ", kMaxOpset, ")"));
    }
    opsets_ = &model->opsets;
    if (!proto_.has_graph()) raise_invalid_model("model: has no graph");
    model->graph = std::make_unique<Graph>(proto_.graph().name().empty() ? "main"
                                                                         : proto_.graph().name());
    main_graph_ = proto_.mutable_graph();
    collect_dim_params(proto_.graph());
    import_graph(proto_.graph(), *model->graph);
    normalize_legacy_opsets(*model);
    expand_contrib_ops(*model);
    // Activation quantization written by rnnc quantize travels as metadata (ir/quantization.h).
    if (auto entry = model->metadata.find(kActivationQuantMetadata);
        entry != model->metadata.end()) {
      apply_activation_quant_metadata(*model->graph, entry->second);
    }
    infer_graph(*model->graph);
    return model;
  }

 private:
  static void release_data(onnx::TensorProto& tensor) {
    std::string().swap(*tensor.mutable_raw_data());
    tensor.clear_raw_data();
    tensor.clear_float_data();
    tensor.clear_double_data();
    tensor.clear_int32_data();
    tensor.clear_int64_data();
    tensor.clear_uint64_data();
  }

  // A value's type: a tensor, a sequence of tensors, or an optional of either. Maps and
  // sequences of non-tensors are Unsupported.
  TensorType import_type(const onnx::TypeProto& type, const std::string& what) {
    if (type.has_sequence_type()) {
      const auto& element = type.sequence_type().elem_type();
      if (!element.has_tensor_type()) {
        raise_unsupported(cat(what, ": a sequence of ", type_case_name(element),
                              " (only sequences of tensors are supported)"));
      }
      TensorType out = import_tensor_type(element.tensor_type(), what);
      out.kind = ValueKind::kSequence;
      return out;
    }
    if (type.has_optional_type()) {
      const auto& element = type.optional_type().elem_type();
      if (!element.has_tensor_type() && !element.has_sequence_type()) {
        raise_unsupported(cat(what, ": an optional of ", type_case_name(element),
                              " (only optional tensors and sequences are supported)"));
      }
      TensorType out = import_type(element, what);
      out.kind = out.kind == ValueKind::kSequence ? ValueKind::kOptionalSequence
                                                  : ValueKind::kOptionalTensor;
      return out;
    }
    if (!type.has_tensor_type()) {
      raise_unsupported(cat(what, ": type ", type_case_name(type),
                            " is not supported (only tensors, sequences and optionals)"));
    }
    return import_tensor_type(type.tensor_type(), what);
  }

  static const char* type_case_name(const onnx::TypeProto& type) {
    if (type.has_tensor_type()) return "tensor";
    if (type.has_sequence_type()) return "sequence";
    if (type.has_map_type()) return "map";
    if (type.has_optional_type()) return "optional";
    if (type.has_sparse_tensor_type()) return "sparse tensor";
    return "(none)";
  }

  TensorType import_tensor_type(const onnx::TypeProto::Tensor& tensor_type,
                                const std::string& what) {
    TensorType out;
    auto dtype = dtype_from_onnx(tensor_type.elem_type());
    if (const char* name = unrepresented_onnx_type_name(tensor_type.elem_type())) {
      raise_unsupported(
          cat(what, ": element type ", name, " (elem_type ", tensor_type.elem_type(), ")"));
    }
    if (!dtype) {
      raise_invalid_model(cat(what, ": elem_type ", tensor_type.elem_type(), " is not valid"));
    }
    out.dtype = *dtype;
    if (tensor_type.has_shape()) {
      Shape shape;
      for (const auto& dim : tensor_type.shape().dim()) {
        if (dim.has_dim_value()) {
          if (dim.dim_value() < 0) {
            raise_invalid_model(cat(what, ": dim_value ", dim.dim_value(), " is negative"));
          }
          shape.emplace_back(dim.dim_value());
        } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
          shape.push_back(Dim::symbol(dim.dim_param()));
        } else {
          shape.push_back(Dim::unknown());
        }
      }
      out.shape = std::move(shape);
    }
    return out;
  }

  Attribute import_attribute(const onnx::AttributeProto& proto, Graph& graph,
                             const std::string& node_what) {
    Attribute a;
    std::string what = cat(node_what, ": attribute '", proto.name(), "'");
    using AP = onnx::AttributeProto;
    int type = proto.type();
    if (type == AP::UNDEFINED) {  // very old exporters omit the type: infer it from the payload
      if (proto.has_f()) type = AP::FLOAT;
      else if (proto.has_i()) type = AP::INT;
      else if (proto.has_s()) type = AP::STRING;
      else if (proto.has_t()) type = AP::TENSOR;
      else if (proto.has_g()) type = AP::GRAPH;
      else if (proto.floats_size()) type = AP::FLOATS;
      else if (proto.ints_size()) type = AP::INTS;
      else if (proto.strings_size()) type = AP::STRINGS;
      else if (proto.tensors_size()) type = AP::TENSORS;
      else if (proto.graphs_size()) type = AP::GRAPHS;
      else raise_invalid_model(cat(what, " has no type and no value"));
    }
    switch (type) {
      case AP::FLOAT: a.kind = Attribute::Kind::kFloat; a.f = proto.f(); break;
      case AP::INT: a.kind = Attribute::Kind::kInt; a.i = proto.i(); break;
      case AP::STRING: a.kind = Attribute::Kind::kString; a.s = proto.s(); break;
      case AP::TENSOR:
        a.kind = Attribute::Kind::kTensor;
        a.t = tensor_from_proto(proto.t(), base_dir_, what);
        break;
      case AP::GRAPH:
        a.kind = Attribute::Kind::kGraph;
        a.g = import_subgraph(proto.g(), graph, what);
        break;
      case AP::FLOATS:
        a.kind = Attribute::Kind::kFloats;
        a.floats.assign(proto.floats().begin(), proto.floats().end());
        break;
      case AP::INTS:
        a.kind = Attribute::Kind::kInts;
        a.ints.assign(proto.ints().begin(), proto.ints().end());
        break;
      case AP::STRINGS:
        a.kind = Attribute::Kind::kStrings;
        a.strings.assign(proto.strings().begin(), proto.strings().end());
        break;
      case AP::TENSORS:
        a.kind = Attribute::Kind::kTensors;
        for (const auto& t : proto.tensors()) a.tensors.push_back(tensor_from_proto(t, base_dir_, what));
        break;
      case AP::GRAPHS:
        a.kind = Attribute::Kind::kGraphs;
        for (const auto& g : proto.graphs()) a.graphs.push_back(import_subgraph(g, graph, what));
        break;
      case AP::TYPE_PROTO:
        a.kind = Attribute::Kind::kType;
        a.tp = import_type(proto.tp(), what);
        break;
      default:
        raise_unsupported(cat(what, " has attribute type ", type,
                              " (sparse tensors and lists of type protos are not supported)"));
    }
    return a;
  }

  // Every dim_param of the model, nested graphs included: the names name_unknown_dims must avoid.
  void collect_dim_params(const onnx::GraphProto& graph) {
    auto add = [&](const onnx::TypeProto& type) {
      const onnx::TypeProto* t = &type;
      while (t->has_sequence_type() || t->has_optional_type()) {
        t = t->has_sequence_type() ? &t->sequence_type().elem_type()
                                   : &t->optional_type().elem_type();
      }
      if (!t->has_tensor_type()) return;
      for (const auto& dim : t->tensor_type().shape().dim()) {
        if (dim.has_dim_param()) dim_names_.insert(dim.dim_param());
      }
    };
    for (const auto& info : graph.input()) add(info.type());
    for (const auto& info : graph.output()) add(info.type());
    for (const auto& info : graph.value_info()) add(info.type());
    for (const auto& node : graph.node()) {
      for (const auto& attribute : node.attribute()) {
        if (attribute.has_g()) collect_dim_params(attribute.g());
        for (const auto& g : attribute.graphs()) collect_dim_params(g);
      }
    }
  }

  // A model input's dims that have neither a size nor a name (exporters leave dynamic axes so)
  // become symbols of their own, "<input>_dim<axis>": a run binds them as it binds a named axis,
  // so shape specialization can fix them and `rnnc run --dim` can set them. Each is distinct
  // from every other dim, as an unknown dim is. Characters outside [A-Za-z0-9_.] become '_', so
  // the name reads as one symbol in dim texts; a name the model already uses gets a suffix.
  void name_unknown_dims(const std::string& input, TensorType& type) {
    if (!type.is_tensor() || !type.shape) return;
    std::string base;
    for (char c : input)
      base += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ? c : '_';
    if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "input_" + base;
    for (size_t axis = 0; axis < type.shape->size(); ++axis) {
      Dim& dim = (*type.shape)[axis];
      if (!dim.is_unknown()) continue;
      std::string name = cat(base, "_dim", axis);
      for (int suffix = 2; dim_names_.count(name); ++suffix)
        name = cat(base, "_dim", axis, "_", suffix);
      dim_names_.insert(name);
      dim = Dim::symbol(name);
    }
  }

  std::shared_ptr<Graph> import_subgraph(const onnx::GraphProto& proto, Graph& parent,
                                         const std::string& what) {
    if (++depth_ > kMaxDepth) {
      raise_invalid_model(cat(what, ": nested graphs deeper than ", kMaxDepth));
    }
    auto graph = std::make_shared<Graph>(proto.name().empty() ? "body" : proto.name(), &parent);
    import_graph(proto, *graph);
    --depth_;
    return graph;
  }

  void import_graph(const onnx::GraphProto& proto, Graph& graph) {
    std::string graph_what = cat("graph '", graph.name(), "'");
    // Initializers first: a graph input with the same name is an input with a default value.
    // In file order, so export(import(m)) keeps the order and the IR text round-trips.
    std::vector<std::pair<std::string, Tensor>> ordered;
    std::map<std::string, Tensor*> initializers;
    ordered.reserve(static_cast<size_t>(proto.initializer_size()));
    for (int i = 0; i < proto.initializer_size(); ++i) {
      const onnx::TensorProto& init = proto.initializer(i);
      std::string what = cat(graph_what, " initializer '", init.name(), "'");
      if (init.name().empty()) raise_invalid_model(cat(graph_what, ": an initializer has no name"));
      if (initializers.count(init.name())) {
        raise_invalid_model(cat(what, " is defined twice"));
      }
      ordered.emplace_back(init.name(), tensor_from_proto(init, base_dir_, what));
      initializers[init.name()] = &ordered.back().second;
      if (&proto == main_graph_) release_data(*main_graph_->mutable_initializer(i));
    }
    if (proto.sparse_initializer_size() > 0) {
      raise_unsupported(cat(graph_what, ": sparse initializers"));
    }
    for (const auto& input : proto.input()) {
      std::string what = cat(graph_what, " input '", input.name(), "'");
      // A body's inputs may leave their type to the node that runs the body (ONNX Loop/Scan).
      TensorType type;
      if (input.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) {
        type = import_type(input.type(), what);
      } else if (!graph.parent()) {
        raise_invalid_model(cat(what, " has no type"));
      }
      auto init = initializers.find(input.name());
      if (init != initializers.end()) {
        Value* value = graph.add_input(input.name(), type);
        Tensor& data = *init->second;
        if (!type.is_tensor()) {
          raise_invalid_model(cat(what, ": declared ", type.to_string(),
                                  " but has a tensor initializer"));
        }
        if (type.dtype != data.dtype()) {
          raise_invalid_model(cat(what, ": declared ", dtype_onnx_name(type.dtype),
                                  " but its initializer is ", dtype_onnx_name(data.dtype())));
        }
        value->type.shape = shape_from_values(data.shape());
        value->set_constant(std::make_shared<const Tensor>(std::move(data)));
        initializers.erase(init);
      } else {
        if (!graph.parent()) name_unknown_dims(input.name(), type);
        graph.add_input(input.name(), type);
      }
    }
    for (auto& [name, tensor] : ordered) {
      if (initializers.count(name)) graph.add_initializer(name, std::move(tensor));
    }

    // Pass 1: create every node with its outputs so later inputs can name them.
    std::vector<std::pair<const onnx::NodeProto*, Node*>> created;
    int index = 0;
    for (const auto& node_proto : proto.node()) {
      std::string name = node_proto.name().empty() ? cat(node_proto.op_type(), "_", index)
                                                   : node_proto.name();
      ++index;
      std::string domain = node_proto.domain() == "ai.onnx" ? "" : node_proto.domain();
      auto opset_it = opsets_->find(domain);
      int opset = opset_it == opsets_->end() ? 0 : static_cast<int>(opset_it->second);
      std::vector<std::string> outputs(node_proto.output().begin(), node_proto.output().end());
      std::vector<Value*> no_inputs(static_cast<size_t>(node_proto.input_size()), nullptr);
      Node* node = nullptr;
      try {
        node = graph.add_node(node_proto.op_type(), name, no_inputs, outputs, opset, domain);
      } catch (const Error& e) {
        raise_invalid_model(cat(node_proto.op_type(), " '", name, "': ", e.what()));
      }
      if (opset_it == opsets_->end()) {
        raise_invalid_model(cat(node->describe(), ": domain '", domain,
                                "' is not in the model's opset_import"));
      }
      created.emplace_back(&node_proto, node);
    }
    // Pass 2: wire inputs (here or in enclosing graphs) and import attributes, subgraphs included.
    for (auto& [node_proto, node] : created) {
      for (int i = 0; i < node_proto->input_size(); ++i) {
        const std::string& input_name = node_proto->input(i);
        if (input_name.empty()) continue;
        Value* value = graph.find_value(input_name);
        if (!value) {
          raise_invalid_model(cat(node->describe(), ": input ", i, " '", input_name,
                                  "' is not a graph input, initializer or output of any node"));
        }
        node->set_input(static_cast<size_t>(i), value);
      }
      for (const auto& attribute : node_proto->attribute()) {
        if (node->has_attr(attribute.name())) {
          raise_invalid_model(cat(node->describe(), ": attribute '", attribute.name(),
                                  "' is given twice"));
        }
        node->set_attr(attribute.name(), import_attribute(attribute, graph, node->describe()));
      }
    }
    graph.sort_topologically();

    // Declared types of intermediate values and outputs are hints merged into inference.
    for (const auto& info : proto.value_info()) {
      if (Value* value = graph.find_local_value(info.name())) {
        if (value->producer() && info.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) {
          value->type = import_type(info.type(), cat(graph_what, " value_info '", info.name(), "'"));
        }
      }
    }
    for (const auto& output : proto.output()) {
      std::string what = cat(graph_what, " output '", output.name(), "'");
      Value* value = graph.find_value(output.name());
      if (!value) {
        raise_invalid_model(cat(what, " is not produced by any node, input or initializer"));
      }
      if (value->producer() && output.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) {
        TensorType declared = import_type(output.type(), what);
        if (value->type.dtype == DType::kUndefined || !value->type.shape) value->type = declared;
      }
      graph.add_output(value);
    }
    // Inference runs once from the main graph (run()), after outer types are known; control-flow
    // ops infer their bodies themselves.
  }

  static constexpr int kMaxDepth = 64;
  onnx::ModelProto& proto_;
  onnx::GraphProto* main_graph_ = nullptr;  // its initializers' data is released
  std::string base_dir_;
  const std::map<std::string, int64_t>* opsets_ = nullptr;
  int depth_ = 0;
  std::set<std::string> dim_names_;  // dim_params of the model and names given to unknown dims
};

}  // namespace

std::unique_ptr<Model> import_onnx_bytes(const void* data, size_t size,
                                         const std::string& base_dir) {
  onnx::ModelProto proto;
  parse_message(proto, data, size, "model");
  return Importer(proto, base_dir).run();
}

std::unique_ptr<Model> import_onnx_file(const std::string& path) {
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  if (base_dir.empty()) base_dir = ".";
  ModelFile file(path);
  try {
    onnx::ModelProto proto;
    file.parse(proto);
    return Importer(proto, base_dir).run();
  } catch (const Error& e) {
    raise(e.kind(), cat(path, ": ", e.what()));
  }
}

}  // namespace rnnc
