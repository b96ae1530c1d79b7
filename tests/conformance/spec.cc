#include "tests/conformance/spec.h"

#include <algorithm>
#include <map>

#include "ir/error.h"

namespace rnnc::conformance {

const std::vector<DType> kFloatTypes = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                        DType::kFloat64};
const std::vector<DType> kSignedTypes = {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64};
const std::vector<DType> kUnsignedTypes = {DType::kUInt8, DType::kUInt16, DType::kUInt32,
                                           DType::kUInt64};
const std::vector<DType> kNumericTypes = kFloatTypes + kSignedTypes + kUnsignedTypes;
const std::vector<DType> kAllTypes =
    kNumericTypes + std::vector<DType>{DType::kBool, DType::kString};
const std::vector<DType> kAllButBFloat16 = {
    DType::kFloat16, DType::kFloat32, DType::kFloat64, DType::kInt8,   DType::kInt16,
    DType::kInt32,   DType::kInt64,   DType::kUInt8,   DType::kUInt16, DType::kUInt32,
    DType::kUInt64,  DType::kBool,    DType::kString};
const std::vector<DType> kMatrixTypes =
    kFloatTypes + std::vector<DType>{DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64};

std::vector<DType> operator+(std::vector<DType> a, const std::vector<DType>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const TypeVar* OpSpec::find_type_var(const std::string& name) const {
  for (const auto& var : type_vars) {
    if (var.name == name) return &var;
  }
  return nullptr;
}

const AttrSpec* OpSpec::find_attr(const std::string& name) const {
  for (const auto& attr : attributes) {
    if (attr.name == name) return &attr;
  }
  return nullptr;
}

size_t OpSpec::type_combinations() const {
  size_t count = 1;
  for (const auto& var : type_vars) count *= var.types.size();
  return count;
}

// ---- builder ----------------------------------------------------------------------------------

namespace {

AttrSpec make_attr(const std::string& name, AttrKind kind, const std::string& onnx_default) {
  AttrSpec attr;
  attr.name = name;
  attr.kind = kind;
  attr.onnx_default = onnx_default;
  return attr;
}

}  // namespace

Op::Op(std::string op_type, int opset) {
  spec_.op_type = std::move(op_type);
  spec_.opsets = {opset};
}

Op& Op::also_opsets(std::vector<int> opsets) {
  spec_.opsets.insert(spec_.opsets.end(), opsets.begin(), opsets.end());
  return *this;
}

Op& Op::types(const std::string& var, std::vector<DType> types) {
  TypeVar type_var;
  type_var.name = var;
  type_var.types = std::move(types);
  spec_.type_vars.push_back(type_var);
  return *this;
}

Op& Op::type_since(const std::string& var, DType type, int opset) {
  for (TypeVar& type_var : spec_.type_vars) {
    if (type_var.name == var) {
      type_var.since.emplace_back(type, opset);
      return *this;
    }
  }
  RNNC_CHECK(false, spec_.op_type, ": type_since names unknown type variable ", var);
  return *this;
}

Op& Op::type_since(const std::string& var, const std::vector<DType>& types, int opset) {
  for (DType type : types) type_since(var, type, opset);
  return *this;
}

Op& Op::attr_int(const std::string& name, const std::string& onnx_default,
                 std::vector<Interval> ranges) {
  spec_.attributes.push_back(make_attr(name, AttrKind::kInt, onnx_default));
  spec_.attributes.back().ranges = std::move(ranges);
  last_ = Last::kAttr;
  return *this;
}

Op& Op::attr_float(const std::string& name, const std::string& onnx_default,
                   std::vector<Interval> ranges) {
  spec_.attributes.push_back(make_attr(name, AttrKind::kFloat, onnx_default));
  spec_.attributes.back().ranges = std::move(ranges);
  last_ = Last::kAttr;
  return *this;
}

Op& Op::attr_string(const std::string& name, const std::string& onnx_default,
                    std::vector<std::string> choices) {
  spec_.attributes.push_back(make_attr(name, AttrKind::kString, onnx_default));
  spec_.attributes.back().choices = std::move(choices);
  last_ = Last::kAttr;
  return *this;
}

Op& Op::attr_by_special(const std::string& name, AttrKind kind, const std::string& onnx_default) {
  spec_.attributes.push_back(make_attr(name, kind, onnx_default));
  spec_.attributes.back().by_special_case = true;
  last_ = Last::kAttr;
  return *this;
}

Op& Op::required() {
  attribute().required = true;
  return *this;
}

Op& Op::attr_since(int opset) {
  attribute().since_opset = opset;
  return *this;
}

Op& Op::attr_until(int opset) {
  attribute().until_opset = opset;
  return *this;
}

Op& Op::in(const std::string& name, const std::string& type_var) {
  OperandSpec operand;
  operand.name = name;
  operand.type_var = type_var;
  const auto& inputs = spec_.inputs;
  operand.index = inputs.empty() ? 0 : inputs.back().index + 1;
  spec_.inputs.push_back(operand);
  last_ = Last::kInput;
  return *this;
}

Op& Op::out(const std::string& name, const std::string& type_var) {
  OperandSpec operand;
  operand.name = name;
  operand.type_var = type_var;
  operand.index = static_cast<int>(spec_.outputs.size());
  spec_.outputs.push_back(operand);
  last_ = Last::kOutput;
  return *this;
}

Op& Op::optional() {
  operand().optional = true;
  return *this;
}

Op& Op::variadic(int min_count, int max_count) {
  operand().variadic = true;
  operand().min_count = min_count;
  operand().max_count = max_count;
  return *this;
}

Op& Op::rank(int min_rank, int max_rank) {
  operand().min_rank = min_rank;
  operand().max_rank = max_rank;
  return *this;
}

Op& Op::rank_exceeds_axis() {
  operand().rank_exceeds_axis = true;
  return *this;
}

Op& Op::no_zero_dims() {
  operand().zero_dims = false;
  return *this;
}

Op& Op::normal(double mean, double stddev) {
  operand().distribution = Distribution::kNormal;
  operand().mean = mean;
  operand().stddev = stddev;
  return *this;
}

Op& Op::range(double lo, double hi) { return ranges({{lo, hi}}); }

Op& Op::ranges(std::vector<Interval> ranges) {
  operand().distribution = Distribution::kUniform;
  operand().ranges = std::move(ranges);
  return *this;
}

Op& Op::by_special() {
  operand().distribution = Distribution::kBySpecialCase;
  return *this;
}

Op& Op::nonzero(NonZero which) {
  operand().nonzero = which;
  return *this;
}

Op& Op::specials() {
  operand().special_values = true;
  return *this;
}

Op& Op::may_be_constant() {
  operand().may_be_constant = true;
  return *this;
}

Op& Op::captured() {
  operand().captured = true;
  return *this;
}

Op& Op::since(int opset) {
  if (last_ == Last::kAttr) return attr_since(opset);
  operand().since_opset = opset;
  return *this;
}

Op& Op::until(int opset) {
  if (last_ == Last::kAttr) return attr_until(opset);
  operand().until_opset = opset;
  return *this;
}

Op& Op::broadcast(Broadcast kind) {
  spec_.broadcast = kind;
  return *this;
}

Op& Op::special(const std::string& name) {
  spec_.special_case = name;
  return *this;
}

Op& Op::tolerance_scale(double scale) {
  spec_.tolerance_scale = scale;
  return *this;
}

Op& Op::note(const std::string& text) {
  spec_.note = text;
  return *this;
}

OperandSpec& Op::operand() {
  RNNC_CHECK(last_ == Last::kInput || last_ == Last::kOutput, spec_.op_type,
             ": an operand modifier needs an in() or out() before it");
  return last_ == Last::kInput ? spec_.inputs.back() : spec_.outputs.back();
}

AttrSpec& Op::attribute() {
  RNNC_CHECK(last_ == Last::kAttr, spec_.op_type,
             ": an attribute modifier needs an attr_*() before it");
  return spec_.attributes.back();
}

// ---- registry ---------------------------------------------------------------------------------

const std::vector<OpSpec>& all_specs() {
  static const std::vector<OpSpec> specs = [] {
    std::vector<OpSpec> all;
    add_recurrent_specs(all);
    add_elementwise_specs(all);
    add_nn_specs(all);
    add_tensor_specs(all);
    add_control_flow_specs(all);
    add_quant_specs(all);
    add_sequence_specs(all);
    std::sort(all.begin(), all.end(),
              [](const OpSpec& a, const OpSpec& b) { return a.op_type < b.op_type; });
    for (size_t i = 1; i < all.size(); ++i) {
      RNNC_CHECK(all[i].op_type != all[i - 1].op_type, "spec for ", all[i].op_type, " twice");
    }
    for (const OpSpec& spec : all) {
      for (const auto* list : {&spec.inputs, &spec.outputs}) {
        for (const OperandSpec& operand : *list) {
          RNNC_CHECK(operand.type_var.empty() || spec.find_type_var(operand.type_var), spec.op_type,
                     ": operand ", operand.name, " names unknown type variable ", operand.type_var);
        }
      }
    }
    return all;
  }();
  return specs;
}

const OpSpec* find_spec(const std::string& op_type) {
  for (const OpSpec& spec : all_specs()) {
    if (spec.op_type == op_type) return &spec;
  }
  return nullptr;
}

}  // namespace rnnc::conformance
