#include "ir/quantization.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "ir/error.h"
#include "ir/graph.h"

namespace rnnc {

namespace {

// LSTM, GRU and RNN quantize their state h too; MatMul and Gemm have only the input operand.
bool has_recurrent_state(const Node& node) {
  const std::string& op = node.op_type();
  return node.domain().empty() && (op == "LSTM" || op == "GRU" || op == "RNN");
}

// The one annotation attribute: ActivationQuant::to_string's text.
constexpr const char* kAttribute = "rnnc.quant_activations";

std::string exact(float value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%a", static_cast<double>(value));
  return text;
}

}  // namespace

int32_t ActivationQuant::qmin() const {
  if (wide()) return -((1 << (bits - 1)) - 1);  // symmetric int16 storage: -qmax .. qmax
  return symmetric ? 1 : 0;  // symmetric unsigned: zero point 2^(bits-1), q - zp in +-(2^(bits-1)-1)
}

int32_t ActivationQuant::qmax() const {
  if (wide()) return (1 << (bits - 1)) - 1;
  return (1 << bits) - 1;
}

std::string ActivationQuant::to_string() const {
  std::string text = cat(dynamic ? "dynamic" : "static", symmetric ? " symmetric" : " asymmetric",
                         " bits=", bits);
  if (!dynamic) {
    text += cat(" x=", exact(input_scale), ",", input_zero_point, " h=", exact(state_scale), ",",
                state_zero_point);
  }
  if (per_tensor) text += " per_tensor";
  if (accumulation_bits != 32) text += cat(" accumulation=", accumulation_bits);
  return text;
}

std::string ProductWidths::to_string() const {
  const char* operands = storage_bits == 8 ? "u8 x s8" : "s16 x s16";
  if (!int64_sum) return cat(operands, " -> s32 (sums need ", sum_bits, " bits)");
  return cat(operands, " -> s32 in chunks of ", chunk_terms, " -> s64 (sums need ", sum_bits,
             " bits)");
}

ProductWidths product_widths(const ActivationQuant& activations, int weight_bits,
                             bool weight_asymmetric, int64_t terms, bool wide_operands,
                             int u8_lane) {
  RNNC_CHECK(u8_lane == 4 || u8_lane == 2, "u8 x s8 products per lane ", u8_lane, ", not 4 or 2");
  ProductWidths widths;
  const bool wide = wide_operands || activations.wide() || weight_bits > 8;
  widths.storage_bits = wide ? 16 : 8;
  widths.lane = wide ? 2 : u8_lane;
  widths.activation_max = std::max(std::abs(activations.qmin()), std::abs(activations.qmax()));
  // A signed b-bit weight may be -2^(b-1) (int8's -128 in a model rnnc did not quantize).
  widths.weight_max = weight_asymmetric ? 128 : int64_t{1} << (weight_bits - 1);
  widths.terms = terms;
  const int64_t product = widths.activation_max * widths.weight_max;
  const double bound = static_cast<double>(product) * static_cast<double>(terms);
  widths.sum_bits = static_cast<int>(std::ceil(std::log2(bound + 1))) + 1;
  // The dot product and the two zero-point terms are each bounded by K * max|a| * max|w|; their
  // combination by three times that.
  constexpr int64_t kInt32Max = 2147483647;
  const int64_t padded_terms = (terms + widths.lane - 1) / widths.lane * widths.lane;
  widths.chunk_terms = padded_terms;
  if (bound * 3 > static_cast<double>(kInt32Max)) {
    // Chunks of whole lanes; a lane's own sum always fits (at most 2 * 32767^2 or 4 * 255 * 128).
    widths.int64_sum = true;
    widths.chunk_terms = std::min(
        padded_terms, std::max<int64_t>(kInt32Max / product / widths.lane, 1) * widths.lane);
  }
  return widths;
}

void validate(const ActivationQuant& quant, const std::string& where, bool has_state) {
  if (quant.bits < 2 || quant.bits > 16) {
    raise_invalid_model(cat(where, ": activation bit width ", quant.bits, ", must be in 2..16"));
  }
  if (quant.accumulation_bits < 8 || quant.accumulation_bits > 32) {
    raise_invalid_model(cat(where, ": accumulation bit width ", quant.accumulation_bits,
                            ", must be in 8..32"));
  }
  if (quant.wide() && !quant.symmetric) {
    raise_invalid_model(cat(where, ": activation bit width ", quant.bits,
                            " needs symmetric quantization (widths above 8 are stored as int16 "
                            "with zero point 0)"));
  }
  if (quant.per_tensor && (!quant.dynamic || quant.symmetric || quant.bits != 8 || has_state)) {
    raise_invalid_model(cat(where,
                            ": per-tensor activation coefficients (DynamicQuantizeLinear's) need "
                            "dynamic asymmetric 8-bit quantization of a MatMul or Gemm operand"));
  }
  if (!quant.dynamic) {
    std::vector<std::pair<float, int32_t>> coefficients = {
        {quant.input_scale, quant.input_zero_point}};
    if (has_state) coefficients.emplace_back(quant.state_scale, quant.state_zero_point);
    for (const auto& [scale, zero_point] : coefficients) {
      if (!(scale > 0) || !std::isfinite(scale)) {
        raise_invalid_model(
            cat(where, ": static activation scale ", scale, " must be finite and > 0"));
      }
      if (zero_point < quant.qmin() || zero_point > quant.qmax()) {
        raise_invalid_model(cat(where, ": static activation zero point ", zero_point,
                                " outside [", quant.qmin(), ", ", quant.qmax(), "]"));
      }
    }
  }
}

RowQuant static_row_quant(float scale, int32_t zero_point) {
  return RowQuant{scale, 1.0f / scale, zero_point};
}

RowQuant range_row_quant(float lo, float hi, const ActivationQuant& quant) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  RowQuant row;
  if (quant.symmetric) {
    const float bound = std::max(-lo, hi);
    const int32_t half = (1 << (quant.bits - 1)) - 1;
    row.scale = bound / static_cast<float>(half);
    row.zero_point = quant.wide() ? 0 : half + 1;
  } else {
    row.scale = (hi - lo) / static_cast<float>(quant.qmax());
    if (row.scale > 0) {
      const float zero = std::nearbyint(-lo / row.scale);
      row.zero_point = static_cast<int32_t>(std::clamp(zero, 0.0f, float(quant.qmax())));
    }
  }
  if (!(row.scale > 0)) row.scale = 1;  // an all-zero row: any scale represents it exactly
  row.inv_scale = 1.0f / row.scale;
  return row;
}

RowQuant dynamic_row_quant(const float* x, int64_t n, const ActivationQuant& quant) {
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  return range_row_quant(lo, hi, quant);
}

int32_t quantize_value(float x, const RowQuant& row, const ActivationQuant& quant) {
  // nearbyint rounds half to even in the default rounding mode, as Halide's round does.
  // per_tensor divides, as DynamicQuantizeLinear does; the others multiply by the reciprocal.
  const float scaled = quant.per_tensor ? x / row.scale : x * row.inv_scale;
  const float q = std::nearbyint(scaled) + static_cast<float>(row.zero_point);
  return static_cast<int32_t>(
      std::clamp(q, static_cast<float>(quant.qmin()), static_cast<float>(quant.qmax())));
}

void fake_quantize_row(const float* x, int64_t n, const RowQuant& row, const ActivationQuant& quant,
                       float* out) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = row.scale * static_cast<float>(quantize_value(x[i], row, quant) - row.zero_point);
  }
}

bool has_activation_quant(const Node& node) { return node.has_attr(kAttribute); }

ActivationQuant activation_quant(const Node& node) {
  const std::string text = node.attr_string(kAttribute, "");
  auto malformed = [&]() {
    raise_invalid_model(cat(node.describe(), ": attribute '", kAttribute, "' = '", text,
                            "' is not a valid activation quantization"));
  };
  std::istringstream in(text);
  std::string kind, symmetry, bits;
  if (!(in >> kind >> symmetry >> bits)) malformed();
  ActivationQuant quant;
  if (kind != "dynamic" && kind != "static") malformed();
  if (symmetry != "symmetric" && symmetry != "asymmetric") malformed();
  if (bits.rfind("bits=", 0) != 0) malformed();
  quant.dynamic = kind == "dynamic";
  quant.symmetric = symmetry == "symmetric";
  char* end = nullptr;
  quant.bits = static_cast<int>(std::strtol(bits.c_str() + 5, &end, 10));
  if (*end != '\0') malformed();
  if (!quant.dynamic) {
    std::string x, h;
    if (!(in >> x >> h)) malformed();
    auto read_pair = [&](const std::string& field, const char* prefix, float& scale,
                         int32_t& zero_point) {
      if (field.rfind(prefix, 0) != 0) malformed();
      const char* start = field.c_str() + 2;
      scale = std::strtof(start, &end);
      if (*end != ',') malformed();
      zero_point = static_cast<int32_t>(std::strtol(end + 1, &end, 10));
      if (*end != '\0') malformed();
    };
    read_pair(x, "x=", quant.input_scale, quant.input_zero_point);
    read_pair(h, "h=", quant.state_scale, quant.state_zero_point);
  }
  std::string rest;
  if (in >> rest && rest == "per_tensor") {
    quant.per_tensor = true;
    if (!(in >> rest)) rest.clear();
  }
  if (!rest.empty()) {
    if (rest.rfind("accumulation=", 0) != 0) malformed();
    quant.accumulation_bits = static_cast<int>(std::strtol(rest.c_str() + 13, &end, 10));
    if (*end != '\0' || rest.size() == 13) malformed();
    if (in >> rest) malformed();
  }
  validate(quant, node.describe(), has_recurrent_state(node));
  return quant;
}

void set_activation_quant(Node& node, const ActivationQuant& quant) {
  validate(quant, node.describe(), has_recurrent_state(node));
  Attribute attribute;
  attribute.kind = Attribute::Kind::kString;
  attribute.s = quant.to_string();
  node.set_attr(kAttribute, std::move(attribute));
}

void clear_activation_quant(Node& node) { node.remove_attr(kAttribute); }

std::string activation_quant_metadata(const Graph& graph) {
  std::string text;
  for (const auto& node : graph.nodes()) {
    if (!has_activation_quant(*node)) continue;
    RNNC_CHECK(!node->name().empty() && node->name().find_first_of("\t\n") == std::string::npos,
               node->describe(), ": an annotated node needs a plain name to be written");
    text += node->name() + "\t" + node->attr_string(kAttribute, "") + "\n";
  }
  return text;
}

void apply_activation_quant_metadata(Graph& graph, const std::string& text) {
  std::map<std::string, Node*> by_name;
  for (const auto& node : graph.nodes()) {
    if (!node->name().empty()) by_name[node->name()] = node.get();
  }
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    const std::string name = line.substr(0, tab);
    auto it = by_name.find(name);
    if (tab == std::string::npos || it == by_name.end()) {
      raise_invalid_model(cat("model metadata '", kActivationQuantMetadata, "': entry '", line,
                              "' names no node of the graph"));
    }
    Attribute attribute;
    attribute.kind = Attribute::Kind::kString;
    attribute.s = line.substr(tab + 1);
    it->second->set_attr(kAttribute, attribute);
    activation_quant(*it->second);  // validates
  }
}

}  // namespace rnnc
