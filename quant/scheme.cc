#include "quant/scheme.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/graph.h"

namespace rnnc::quant {

namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const char* kGranularityNames[] = {"tensor", "row", "column", "channel"};
const char* kMethodNames[] = {"minmax", "percentile", "mse"};

[[noreturn]] void fail(const std::string& source, const std::string& message) {
  raise_invalid_input(cat(source, ": ", message));
}

Struct parse_json(const std::string& json, const std::string& source) {
  Struct parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
  if (!status.ok()) fail(source, cat("not a JSON object: ", status.ToString()));
  return parsed;
}

std::string to_json(const Struct& object) {
  std::string text;
  (void)google::protobuf::util::MessageToJsonString(object, &text);
  return text;
}

// Field readers: `path` is the dotted position in the file, for messages.
int read_int(const Value& value, const std::string& path, const std::string& source, int lo,
             int hi) {
  if (value.kind_case() != Value::kNumberValue || value.number_value() != std::floor(value.number_value())) {
    fail(source, cat(path, " must be an integer"));
  }
  const double number = value.number_value();
  if (number < lo || number > hi) fail(source, cat(path, " = ", number, ", must be in ", lo, "..", hi));
  return static_cast<int>(number);
}

bool read_bool(const Value& value, const std::string& path, const std::string& source) {
  if (value.kind_case() != Value::kBoolValue) fail(source, cat(path, " must be true or false"));
  return value.bool_value();
}

template <typename Enum, size_t N>
Enum read_enum(const Value& value, const char* const (&names)[N], const std::string& path,
               const std::string& source) {
  std::string known;
  for (size_t i = 0; i < N; ++i) {
    if (value.kind_case() == Value::kStringValue && value.string_value() == names[i]) {
      return static_cast<Enum>(i);
    }
    known += (i ? ", " : "") + std::string(names[i]);
  }
  fail(source, cat(path, " must be one of ", known));
}

double read_percentile(const Value& value, const std::string& path, const std::string& source) {
  if (value.kind_case() != Value::kNumberValue || !(value.number_value() > 50) ||
      !(value.number_value() <= 100)) {
    fail(source, cat(path, " must be a number in (50, 100]"));
  }
  return value.number_value();
}

void apply_weights(const Struct& object, const std::string& path, const std::string& source,
                   WeightScheme& scheme) {
  for (const auto& [name, value] : object.fields()) {
    const std::string field = path + "." + name;
    if (name == "bits") {
      scheme.bits = read_int(value, field, source, 2, 16);
    } else if (name == "symmetric") {
      scheme.symmetric = read_bool(value, field, source);
    } else if (name == "granularity") {
      scheme.granularity = read_enum<Granularity>(value, kGranularityNames, field, source);
    } else if (name == "method") {
      scheme.method = read_enum<RangeMethod>(value, kMethodNames, field, source);
    } else if (name == "percentile") {
      scheme.percentile = read_percentile(value, field, source);
    } else {
      fail(source, cat("unknown field ", field,
                       " (weights take bits, symmetric, granularity, method, percentile)"));
    }
  }
  if (scheme.bits > 8 && !scheme.symmetric) {
    fail(source, cat(path, ": weights wider than 8 bits must be symmetric (stored as int32 with "
                           "zero point 0, as DequantizeLinear allows)"));
  }
}

void apply_activations(const Struct& object, const std::string& path, const std::string& source,
                       ActivationScheme& scheme) {
  for (const auto& [name, value] : object.fields()) {
    const std::string field = path + "." + name;
    if (name == "bits") {
      scheme.bits = read_int(value, field, source, 2, 16);
    } else if (name == "symmetric") {
      scheme.symmetric = read_bool(value, field, source);
    } else if (name == "dynamic") {
      scheme.dynamic = read_bool(value, field, source);
    } else if (name == "method") {
      scheme.method = read_enum<RangeMethod>(value, kMethodNames, field, source);
    } else if (name == "percentile") {
      scheme.percentile = read_percentile(value, field, source);
    } else if (name == "accumulation_bits") {
      scheme.accumulation_bits = read_int(value, field, source, 8, 32);
    } else {
      fail(source, cat("unknown field ", field,
                       " (activations take bits, symmetric, dynamic, method, percentile, "
                       "accumulation_bits)"));
    }
  }
  if (scheme.bits > 8 && !scheme.symmetric) {
    fail(source, cat(path, ": activations wider than 8 bits must be symmetric (int16 storage)"));
  }
}

void apply_scheme(const Struct& object, const std::string& path, const std::string& source,
                  NodeScheme& scheme) {
  for (const auto& [name, value] : object.fields()) {
    const std::string field = path + "." + name;
    if (name == "float") {
      scheme.keep_float = read_bool(value, field, source);
    } else if (name == "weights" || name == "activations") {
      if (value.kind_case() != Value::kStructValue) fail(source, cat(field, " must be an object"));
      if (name == "weights") {
        apply_weights(value.struct_value(), field, source, scheme.weights);
      } else {
        apply_activations(value.struct_value(), field, source, scheme.activations);
      }
    } else {
      fail(source, cat("unknown field ", field, " (a scheme takes float, weights, activations)"));
    }
  }
}

void apply_guard(const Struct& object, const std::string& path, const std::string& source,
                 GuardOptions& guard) {
  for (const auto& [name, value] : object.fields()) {
    const std::string field = path + "." + name;
    if (name == "enabled") {
      guard.enabled = read_bool(value, field, source);
    } else if (name == "max_error" || name == "time_limit_seconds") {
      const double number = value.number_value();
      if (value.kind_case() != Value::kNumberValue || !(number > 0) ||
          (name == "max_error" && number > 1)) {
        fail(source, cat(field, name == "max_error" ? " must be a number in (0, 1] (a fraction of "
                                                      "each output's range)"
                                                    : " must be a number > 0"));
      }
      (name == "max_error" ? guard.max_error : guard.time_limit_seconds) = number;
    } else {
      fail(source, cat("unknown field ", field, " (guard takes enabled, max_error, "
                       "time_limit_seconds)"));
    }
  }
}

}  // namespace

const char* granularity_name(Granularity granularity) {
  return kGranularityNames[static_cast<int>(granularity)];
}

const char* range_method_name(RangeMethod method) { return kMethodNames[static_cast<int>(method)]; }

std::string NodeScheme::to_string() const {
  if (keep_float) return "float";
  std::ostringstream out;
  out << "weights " << (weights.symmetric ? "symmetric " : "asymmetric ") << weights.bits
      << "-bit per " << granularity_name(weights.granularity) << " ("
      << range_method_name(weights.method) << "), activations "
      << (activations.dynamic ? "dynamic " : "static ")
      << (activations.symmetric ? "symmetric " : "asymmetric ") << activations.bits << "-bit";
  if (!activations.dynamic) out << " (" << range_method_name(activations.method) << ")";
  return out.str();
}

NodeScheme Config::scheme_for(const Node& node) const {
  NodeScheme scheme = default_scheme;
  if (auto it = op_overrides.find(node.op_type()); it != op_overrides.end()) {
    apply_scheme(parse_json(it->second, "ops"), "ops." + node.op_type(), "quantization config",
                 scheme);
  }
  if (auto it = node_overrides.find(node.name()); it != node_overrides.end()) {
    apply_scheme(parse_json(it->second, "nodes"), "nodes." + node.name(), "quantization config",
                 scheme);
  }
  if (auto it = decided.find(node.name()); it != decided.end()) scheme = it->second;
  return scheme;
}

Config parse_config(const std::string& json, const std::string& source) {
  const Struct root = parse_json(json, source);
  Config config;
  for (const auto& [name, value] : root.fields()) {
    if (value.kind_case() != Value::kStructValue) fail(source, cat(name, " must be an object"));
    if (name == "default") {
      apply_scheme(value.struct_value(), name, source, config.default_scheme);
    } else if (name == "ops" || name == "nodes") {
      for (const auto& [key, entry] : value.struct_value().fields()) {
        const std::string path = name + "." + key;
        if (entry.kind_case() != Value::kStructValue) fail(source, cat(path, " must be an object"));
        // Validated now (on a scratch scheme), applied per node later.
        NodeScheme scratch;
        apply_scheme(entry.struct_value(), path, source, scratch);
        (name == "ops" ? config.op_overrides : config.node_overrides)[key] =
            to_json(entry.struct_value());
      }
    } else if (name == "guard") {
      apply_guard(value.struct_value(), name, source, config.guard);
    } else {
      fail(source, cat("unknown field ", name, " (the top level takes default, ops, nodes, guard)"));
    }
  }
  return config;
}

Config read_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) raise(ErrorKind::kIo, cat("cannot read quantization config '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

}  // namespace rnnc::quant
