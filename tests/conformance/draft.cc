#include "tests/conformance/draft.h"

#include <cmath>
#include <limits>

#include "ir/error.h"

namespace rnnc::conformance {

const char* profile_name(Profile profile) { return profile == Profile::kSmoke ? "smoke" : "full"; }

const char* boundary_name(Boundary boundary) {
  switch (boundary) {
    case Boundary::kDim1:
      return "dim1";
    case Boundary::kDim0:
      return "dim0";
    case Boundary::kDimLarge:
      return "dim_large";
    case Boundary::kRangeLo:
      return "range_lo";
    case Boundary::kRangeHi:
      return "range_hi";
    case Boundary::kZero:
      return "zero";
    case Boundary::kNegZero:
      return "neg_zero";
    case Boundary::kHuge:
      return "huge";
    case Boundary::kTiny:
      return "tiny";
    case Boundary::kNaN:
      return "nan";
    case Boundary::kInf:
      return "inf";
  }
  return "?";
}

// ---- Rng: xoshiro256** seeded through splitmix64 ----------------------------------------------

Rng::Rng(uint64_t seed) {
  for (uint64_t& word : state_) {
    seed += 0x9e3779b97f4a7c15ULL;
    uint64_t z = seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    word = z ^ (z >> 31);
  }
}

uint64_t Rng::next() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  uint64_t result = rotl(state_[1] * 5, 7) * 9;
  uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  RNNC_CHECK(lo <= hi, "uniform_int(", lo, ", ", hi, ")");
  uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (span == 0) return static_cast<int64_t>(next());  // the whole int64 range
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + next() % span);
}

double Rng::uniform(double lo, double hi) {
  double unit = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
  return lo + (hi - lo) * unit;
}

double Rng::normal() {
  double u1 = uniform(0, 1);
  double u2 = uniform(0, 1);
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

bool Rng::chance(double p) { return uniform(0, 1) < p; }

// ---- Draft ------------------------------------------------------------------------------------

Draft::Draft(const OpSpec& op_spec, Profile test_profile, uint64_t operand_seed,
             uint64_t attribute_seed)
    : spec(op_spec), profile(test_profile), rng(operand_seed), attr_rng(attribute_seed) {}

int64_t Draft::attr_int(const std::string& name, int64_t fallback) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : it->second.i;
}

float Draft::attr_float(const std::string& name, float fallback) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : it->second.f;
}

std::string Draft::attr_string(const std::string& name, const std::string& fallback) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : it->second.s;
}

std::vector<int64_t> Draft::attr_ints(const std::string& name) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? std::vector<int64_t>{} : it->second.ints;
}

void Draft::set_int(const std::string& name, int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInt;
  attribute.i = value;
  attrs[name] = attribute;
}

void Draft::set_float(const std::string& name, float value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kFloat;
  attribute.f = value;
  attrs[name] = attribute;
}

void Draft::set_string(const std::string& name, const std::string& value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kString;
  attribute.s = value;
  attrs[name] = attribute;
}

void Draft::set_ints(const std::string& name, std::vector<int64_t> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInts;
  attribute.ints = std::move(values);
  attrs[name] = attribute;
}

void Draft::set_floats(const std::string& name, std::vector<float> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kFloats;
  attribute.floats = std::move(values);
  attrs[name] = attribute;
}

void Draft::set_strings(const std::string& name, std::vector<std::string> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kStrings;
  attribute.strings = std::move(values);
  attrs[name] = attribute;
}

void Draft::set_tensor(const std::string& name, Tensor value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kTensor;
  attribute.t = std::move(value);
  attrs[name] = attribute;
}

bool Draft::attr_exists(const std::string& name) const {
  const AttrSpec* attr = spec.find_attr(name);
  if (!attr) return false;
  return (attr->since_opset == 0 || opset >= attr->since_opset) &&
         (attr->until_opset == 0 || opset <= attr->until_opset);
}

OperandDraft* Draft::input(const std::string& name) {
  for (auto& operand : inputs) {
    if (operand.spec && operand.spec->name == name) return &operand;
  }
  return nullptr;
}

OperandDraft* Draft::output(const std::string& name) {
  for (auto& operand : outputs) {
    if (operand.spec && operand.spec->name == name) return &operand;
  }
  return nullptr;
}

bool Draft::input_present(const std::string& name) {
  OperandDraft* operand = input(name);
  return operand && operand->present;
}

namespace {

// The integer range a value of `dtype` can hold, as doubles (exact for the ends we use).
std::pair<double, double> integer_limits(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
      return {-128, 127};
    case DType::kInt16:
      return {-32768, 32767};
    case DType::kInt32:
      return {-2147483648.0, 2147483647.0};
    case DType::kInt64:
      return {-9223372036854775808.0, 9223372036854775807.0};
    case DType::kUInt8:
      return {0, 255};
    case DType::kUInt16:
      return {0, 65535};
    case DType::kUInt32:
      return {0, 4294967295.0};
    case DType::kUInt64:
      return {0, 18446744073709551615.0};
    case DType::kBool:
      return {0, 1};
    default:
      return {-1e308, 1e308};
  }
}

const std::vector<std::string> kStrings = {"", "a", "b", "ab", "onnx", "rnnc", "x y", "Z", "0"};

}  // namespace

void Draft::fill(OperandDraft& operand, Rng* with) {
  Rng& rng = with ? *with : this->rng;
  const OperandSpec& op = *operand.spec;
  Tensor data(operand.dtype, operand.shape);
  bool integer = is_integer(operand.dtype);
  auto [type_lo, type_hi] = integer_limits(operand.dtype);
  bool must_be_nonzero =
      op.nonzero == NonZero::kAll || (op.nonzero == NonZero::kIntegerTypes && integer);
  for (int64_t i = 0; i < data.numel(); ++i) {
    if (operand.dtype == DType::kString) {
      data.strings()[static_cast<size_t>(i)] = rng.pick(kStrings);
      continue;
    }
    if (operand.dtype == DType::kBool) {
      data.set_double(i, rng.chance(0.5) ? 1 : 0);
      continue;
    }
    for (int attempt = 0;; ++attempt) {
      double value;
      if (op.distribution == Distribution::kUniform && !op.ranges.empty()) {
        const Interval& interval = rng.pick(op.ranges);
        if (integer) {
          double lo = std::max(std::ceil(interval.lo), type_lo);
          double hi = std::min(std::floor(interval.hi), type_hi);
          RNNC_CHECK(lo <= hi, spec.op_type, ": operand ", op.name, " has no ",
                     dtype_onnx_name(operand.dtype), " value in its range");
          value = static_cast<double>(
              rng.uniform_int(static_cast<int64_t>(lo), static_cast<int64_t>(hi)));
        } else {
          value = rng.uniform(interval.lo, interval.hi);
        }
      } else if (integer) {
        value = static_cast<double>(rng.uniform_int(static_cast<int64_t>(std::max(-16.0, type_lo)),
                                                    static_cast<int64_t>(std::min(16.0, type_hi))));
      } else {
        value = op.mean + op.stddev * rng.normal();
      }
      if (!(must_be_nonzero && value == 0)) {
        data.set_double(i, value);
        break;
      }
      RNNC_CHECK(attempt < 1000, spec.op_type, ": cannot draw a nonzero value for ", op.name);
    }
  }
  operand.data = data;
}

void Draft::set_data(OperandDraft& operand, Tensor data) {
  operand.dtype = data.dtype();
  operand.shape = data.shape();
  operand.data = std::move(data);
  operand.values_fixed = true;
}

std::vector<int64_t> Draft::random_dims(int64_t rank, int64_t lo, int64_t hi) {
  std::vector<int64_t> dims;
  for (int64_t k = 0; k < rank; ++k) dims.push_back(rng.uniform_int(lo, hi));
  return dims;
}

Tensor make_tensor(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  Tensor tensor(dtype, std::move(shape));
  RNNC_CHECK(static_cast<int64_t>(values.size()) == tensor.numel(), "make_tensor: ", values.size(),
             " values for ", tensor.numel(), " elements");
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.set_double(i, values[static_cast<size_t>(i)]);
  return tensor;
}

Tensor make_int64s(const std::vector<int64_t>& values, bool as_scalar) {
  if (as_scalar) {
    RNNC_CHECK(values.size() == 1, "a scalar needs one value");
    return Tensor::scalar<int64_t>(values[0]);
  }
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

Tensor make_int32s(const std::vector<int64_t>& values) {
  std::vector<int32_t> narrow(values.begin(), values.end());
  return Tensor::from_vector<int32_t>({static_cast<int64_t>(values.size())}, narrow);
}

// ---- special case registry --------------------------------------------------------------------

namespace {

const std::map<std::string, SpecialCase>& special_cases() {
  static const std::map<std::string, SpecialCase> table = [] {
    std::map<std::string, SpecialCase> all;
    add_recurrent_special_cases(all);
    add_elementwise_special_cases(all);
    add_nn_special_cases(all);
    add_tensor_special_cases(all);
    add_control_flow_special_cases(all);
    add_quant_special_cases(all);
    add_sequence_special_cases(all);
    return all;
  }();
  return table;
}

}  // namespace

SpecialCase find_special_case(const std::string& name) {
  auto it = special_cases().find(name);
  return it == special_cases().end() ? nullptr : it->second;
}

std::vector<std::string> special_case_names() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : special_cases()) names.push_back(name);
  return names;
}

}  // namespace rnnc::conformance
