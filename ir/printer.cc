#include "ir/printer.h"

#include <cstdlib>
#include <iomanip>
#include <sstream>

#include "ir/text_parser.h"

namespace rnnc {

namespace {

// A string in `delimiter`s; the delimiter, backslash and control characters are escaped.
std::string quote(const std::string& s, char delimiter = '"') {
  std::string out(1, delimiter);
  for (char c : s) {
    if (c == delimiter || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      std::ostringstream hex;
      hex << "\\x" << std::hex << std::setw(2) << std::setfill('0')
          << static_cast<int>(static_cast<unsigned char>(c));
      out += hex.str();
    } else {
      out += c;
    }
  }
  return out + delimiter;
}

// Value, graph and attribute names print bare when the parser reads them back as one name.
std::string name_text(const std::string& name) {
  return is_bare_ir_name(name) ? name : quote(name);
}

std::string format_float(double v) {
  std::ostringstream out;
  out << std::setprecision(9) << v;
  return out.str();
}

// The shortest of 9..17 significant digits that reads back as the same double.
std::string format_double(double v) {
  for (int precision = 9;; ++precision) {
    std::ostringstream out;
    out << std::setprecision(precision) << v;
    if (precision == 17 || std::strtod(out.str().c_str(), nullptr) == v || v != v) return out.str();
  }
}

// A float attribute always looks like one ("1.0", not "1"), so it does not read back as an int.
std::string format_float_attribute(float v) {
  std::string text = format_float(v);
  if (text.find_first_not_of("-0123456789") == std::string::npos) text += ".0";
  return text;
}

// A dim that is one axis name which is not an identifier prints quoted ("\"batch size\"").
std::string dim_text(const Dim& dim) {
  if (dim.is_symbolic()) {
    std::vector<std::string> symbols = dim.symbols();
    if (symbols.size() == 1 && dim == Dim::symbol(symbols[0]) && !is_bare_dim_symbol(symbols[0])) {
      return quote(symbols[0]);
    }
  }
  return dim.to_string();
}

// TensorType::to_string with dims through dim_text.
std::string type_text(const TensorType& type) {
  std::string out = dtype_name(type.dtype);
  if (type.shape) {
    out += "[";
    for (size_t i = 0; i < type.shape->size(); ++i) {
      out += (i ? ", " : "") + dim_text((*type.shape)[i]);
    }
    out += "]";
  } else {
    out += "[?rank]";
  }
  if (type.quant) out += " quant=<" + type.quant->to_string() + ">";
  switch (type.kind) {
    case ValueKind::kTensor: return out;
    case ValueKind::kSequence: return "seq<" + out + ">";
    case ValueKind::kOptionalTensor: return "opt<" + out + ">";
    case ValueKind::kOptionalSequence: return "opt<seq<" + out + ">>";
  }
  return out;
}

std::string value_text(const Value& value) { return "%" + name_text(value.name()); }

std::string constant_text(const Tensor& t) {
  std::ostringstream out;
  out << dtype_name(t.dtype()) << "[";
  for (size_t i = 0; i < t.shape().size(); ++i) out << (i ? ", " : "") << t.shape()[i];
  out << "] = {";
  int64_t shown = std::min<int64_t>(t.numel(), 4);
  for (int64_t i = 0; i < shown; ++i) {
    if (i) out << ", ";
    if (t.dtype() == DType::kString) out << quote(t.strings()[static_cast<size_t>(i)]);
    else if (t.dtype() == DType::kFloat64) out << format_double(t.data<double>()[i]);
    else if (is_floating(t.dtype())) out << format_float(t.get_double(i));
    else if (t.dtype() == DType::kUInt64) out << t.data<uint64_t>()[i];
    else out << t.get_int64(i);
  }
  if (t.numel() > shown) out << ", ...";
  out << "} #" << std::hex << std::setw(8) << std::setfill('0')
      << static_cast<uint32_t>(tensor_hash(t) ^ (tensor_hash(t) >> 32));
  return out.str();
}

class Printer {
 public:
  std::string print_graph(const Graph& graph, int indent) {
    std::ostringstream out;
    std::string pad(static_cast<size_t>(indent), ' ');
    out << "graph " << name_text(graph.name()) << "(";
    bool first = true;
    for (const Value* input : graph.inputs()) {
      out << (first ? "" : ", ") << value_text(*input) << ": " << type_text(input->type);
      if (input->is_constant()) out << " = default";
      first = false;
    }
    out << ") {\n";
    for (const Value* value : graph.inputs()) {
      if (value->is_constant()) {
        out << pad << "  default " << value_text(*value) << " = "
            << constant_text(*value->constant()) << "\n";
      }
    }
    for (const Value* value : graph.initializers()) {
      out << pad << "  const " << value_text(*value) << ": " << constant_text(*value->constant())
          << "\n";
    }
    for (const auto& node : graph.nodes()) out << print_node(*node, indent + 2);
    out << pad << "  return ";
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      const Value* v = graph.outputs()[i];
      out << (i ? ", " : "") << value_text(*v) << ": " << type_text(v->type);
    }
    out << "\n" << pad << "}";
    return out.str();
  }

 private:
  std::string print_node(const Node& node, int indent) {
    std::ostringstream out;
    std::string pad(static_cast<size_t>(indent), ' ');
    out << pad;
    for (size_t i = 0; i < node.num_outputs(); ++i) {
      if (i) out << ", ";
      const Value* v = node.output(i);
      if (!v) out << "_";
      else out << value_text(*v) << ": " << type_text(v->type);
    }
    out << " = ";
    if (!node.domain().empty()) out << node.domain() << ".";
    out << node.op_type() << " " << quote(node.name(), '\'') << " (";
    for (size_t i = 0; i < node.num_inputs(); ++i) {
      if (i) out << ", ";
      const Value* v = node.input(i);
      out << (v ? value_text(*v) : "_");
    }
    out << ")";
    std::vector<std::pair<std::string, const Attribute*>> graphs;
    std::vector<std::string> plain;
    for (const auto& [name, a] : node.attributes()) {
      bool has_graphs = a.kind == Attribute::Kind::kGraph ||
                        (a.kind == Attribute::Kind::kGraphs && !a.graphs.empty());
      if (has_graphs) {
        // "_" at the start of a line would read as an omitted node output.
        graphs.emplace_back(name == "_" ? quote(name) : name_text(name), &a);
      } else {
        plain.push_back(name_text(name) + "=" + attribute_text(a));
      }
    }
    if (!plain.empty()) {
      out << " {";
      for (size_t i = 0; i < plain.size(); ++i) out << (i ? ", " : "") << plain[i];
      out << "}";
    }
    out << "\n";
    for (const auto& [name, a] : graphs) {
      if (a->kind == Attribute::Kind::kGraph) {
        out << pad << "  " << name << " = " << print_graph(*a->g, indent + 2) << "\n";
      } else {
        for (size_t i = 0; i < a->graphs.size(); ++i) {
          out << pad << "  " << name << "[" << i << "] = " << print_graph(*a->graphs[i], indent + 2)
              << "\n";
        }
      }
    }
    return out.str();
  }

  std::string attribute_text(const Attribute& a) {
    std::ostringstream out;
    // An empty list names its kind ("ints[]"): "[]" alone would not say which.
    auto list = [&](const auto& items, auto&& format) {
      if (items.empty()) {
        out << kind_prefix(a.kind) << "[]";
        return;
      }
      out << "[";
      for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << format(items[i]);
      out << "]";
    };
    switch (a.kind) {
      case Attribute::Kind::kFloat: out << format_float_attribute(a.f); break;
      case Attribute::Kind::kInt: out << a.i; break;
      case Attribute::Kind::kString: out << quote(a.s); break;
      case Attribute::Kind::kTensor: out << constant_text(a.t); break;
      case Attribute::Kind::kFloats: list(a.floats, format_float_attribute); break;
      case Attribute::Kind::kInts: list(a.ints, [](int64_t v) { return std::to_string(v); }); break;
      case Attribute::Kind::kStrings:
        list(a.strings, [](const std::string& v) { return quote(v); });
        break;
      case Attribute::Kind::kTensors: list(a.tensors, constant_text); break;
      case Attribute::Kind::kGraphs: out << "graphs[]"; break;  // only empty lists print here
      case Attribute::Kind::kGraph: break;
      case Attribute::Kind::kType: out << "type<" << type_text(a.tp) << ">"; break;
    }
    return out.str();
  }

  static const char* kind_prefix(Attribute::Kind kind) {
    switch (kind) {
      case Attribute::Kind::kFloats: return "floats";
      case Attribute::Kind::kInts: return "ints";
      case Attribute::Kind::kStrings: return "strings";
      case Attribute::Kind::kTensors: return "tensors";
      default: return "";
    }
  }
};

}  // namespace

uint64_t tensor_hash(const Tensor& tensor) {
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&](const void* data, size_t n) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) {
      hash ^= bytes[i];
      hash *= 1099511628211ull;
    }
  };
  int32_t dtype = static_cast<int32_t>(tensor.dtype());
  mix(&dtype, sizeof(dtype));
  for (int64_t d : tensor.shape()) mix(&d, sizeof(d));
  if (tensor.dtype() == DType::kString) {
    for (const auto& s : tensor.strings()) mix(s.data(), s.size() + 0), mix("\0", 1);
  } else {
    mix(tensor.raw_data(), tensor.nbytes());
  }
  return hash;
}

std::string to_text(const Graph& graph) { return Printer().print_graph(graph, 0) + "\n"; }

std::string to_text(const Model& model) {
  std::ostringstream out;
  out << "model ir_version=" << model.ir_version;
  for (const auto& [domain, version] : model.opsets) {
    out << " opset" << (domain.empty() ? "" : "(" + domain + ")") << "=" << version;
  }
  if (!model.producer_name.empty()) {
    out << " producer=" << quote(model.producer_name +
                                 (model.producer_version.empty() ? "" : " " + model.producer_version));
  }
  out << "\n" << to_text(*model.graph);
  return out.str();
}

}  // namespace rnnc
