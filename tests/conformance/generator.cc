#include "tests/conformance/generator.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "ir/error.h"
#include "ir/onnx_export.h"
#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"
#include "ir/verifier.h"

namespace fs = std::filesystem;

namespace rnnc::conformance {

namespace {

constexpr int kMaxAttempts = 8;
constexpr double kOptionalPresent = 0.6;  // chance an optional operand is given
constexpr double kAttrOmitted = 0.25;     // chance an optional attribute is left at its default
constexpr double kAttrAtRangeEnd = 0.2;   // chance a numeric attribute takes a range end

// ---- seeds ------------------------------------------------------------------------------------

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

uint64_t mix(uint64_t h, const std::string& text) {
  for (unsigned char c : text) h = mix(h, c);
  return mix(h, text.size());
}

// ---- the plan: which type combination, rank and boundary class each test gets -----------------

std::vector<std::map<std::string, DType>> type_combinations(const OpSpec& spec) {
  std::vector<std::map<std::string, DType>> combos = {{}};
  for (const TypeVar& var : spec.type_vars) {
    std::vector<std::map<std::string, DType>> next;
    for (const auto& combo : combos) {
      for (DType type : var.types) {
        auto extended = combo;
        extended[var.name] = type;
        next.push_back(extended);
      }
    }
    combos = next;
  }
  return combos;
}

// `count` entries cycling through 0..n-1, each block of n shuffled: every item gets count/n or
// count/n + 1 turns, and two schedules of different lengths do not lock together.
std::vector<size_t> block_schedule(size_t n, int count, Rng& rng) {
  std::vector<size_t> out;
  while (static_cast<int>(out.size()) < count) {
    std::vector<size_t> block(n);
    for (size_t i = 0; i < n; ++i) block[i] = i;
    rng.shuffle(block);
    out.insert(out.end(), block.begin(), block.end());
  }
  out.resize(static_cast<size_t>(count));
  return out;
}

// Even rank coverage: a rank is used until it reached its share.
class RankPlanner {
 public:
  RankPlanner(int min_rank, int max_rank, int count)
      : min_rank_(min_rank),
        share_((count + (max_rank - min_rank)) / std::max(1, max_rank - min_rank + 1)) {}

  int choose(const std::vector<int>& feasible, Rng& rng) const {
    RNNC_CHECK(!feasible.empty(), "no feasible rank");
    std::vector<int> below;
    for (int r : feasible) {
      if (used(r) < share_) below.push_back(r);
    }
    if (!below.empty()) return rng.pick(below);
    int least = feasible[0];
    for (int r : feasible) {
      if (used(r) < used(least)) least = r;
    }
    return least;
  }
  void commit(int rank) { ++counts_[rank]; }

 private:
  int used(int rank) const {
    auto it = counts_.find(rank);
    return it == counts_.end() ? 0 : it->second;
  }
  int min_rank_;
  int share_;
  std::map<int, int> counts_;
};

// ---- value boundaries -------------------------------------------------------------------------

double max_finite(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 65504.0;
    case DType::kBFloat16:
      return 3.3895313892515355e38;
    case DType::kFloat32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

double min_normal(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 6.103515625e-05;
    case DType::kBFloat16:
      return 1.1754943508222875e-38;
    case DType::kFloat32:
      return std::numeric_limits<float>::min();
    default:
      return std::numeric_limits<double>::min();
  }
}

double denorm_min(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 5.960464477539063e-08;
    case DType::kBFloat16:
      return 9.183549615799121e-41;
    case DType::kFloat32:
      return std::numeric_limits<float>::denorm_min();
    default:
      return std::numeric_limits<double>::denorm_min();
  }
}

std::pair<double, double> integer_range(DType dtype) {
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
    default:
      return {0, 0};
  }
}

bool zero_allowed(const OperandSpec& op, bool floating) {
  if (op.nonzero == NonZero::kAll || (op.nonzero == NonZero::kIntegerTypes && !floating)) {
    return false;
  }
  if (op.special_values || op.ranges.empty()) return true;
  for (const Interval& range : op.ranges) {
    if (range.lo <= 0 && 0 <= range.hi) return true;
  }
  return false;
}

bool boundary_applies(const OperandSpec& op, DType dtype, Boundary boundary) {
  if (op.distribution == Distribution::kBySpecialCase) return false;
  if (!is_floating(dtype) && !is_integer(dtype)) return false;
  bool floating = is_floating(dtype);
  switch (boundary) {
    case Boundary::kRangeLo:
    case Boundary::kRangeHi:
      return !op.ranges.empty();
    case Boundary::kZero:
      return zero_allowed(op, floating);
    case Boundary::kNegZero:
      return floating && zero_allowed(op, floating);
    case Boundary::kHuge:
    case Boundary::kTiny:
      return op.special_values;
    case Boundary::kNaN:
    case Boundary::kInf:
      return floating && op.special_values;
    default:
      return false;
  }
}

// The value of `dtype` nearest to x (what storing x in the tensor gives).
double stored_value(DType dtype, double x) {
  Tensor t(dtype, {});
  t.set_double(0, x);
  return t.get_double(0);
}

double boundary_value(const OperandSpec& op, DType dtype, Boundary boundary, Rng& rng) {
  double sign = rng.chance(0.5) ? 1 : -1;
  bool floating = is_floating(dtype);
  switch (boundary) {
    case Boundary::kRangeLo:
      return rng.pick(op.ranges).lo;
    case Boundary::kRangeHi:
      return rng.pick(op.ranges).hi;
    case Boundary::kZero:
      return 0.0;
    case Boundary::kNegZero:
      return -0.0;
    case Boundary::kHuge:
      if (floating) return sign * max_finite(dtype);
      // Unsigned types have only the upper extreme (their lowest value is 0, not huge).
      return sign > 0 || !is_signed_integer(dtype) ? integer_range(dtype).second
                                                   : integer_range(dtype).first;
    case Boundary::kTiny:
      if (floating) return sign * (rng.chance(0.5) ? denorm_min(dtype) : min_normal(dtype));
      return is_signed_integer(dtype) ? sign : 1.0;
    case Boundary::kNaN:
      return std::numeric_limits<double>::quiet_NaN();
    case Boundary::kInf:
      return sign * std::numeric_limits<double>::infinity();
    default:
      return 0;
  }
}

bool hits(const OperandSpec& op, const Tensor& data, Boundary boundary) {
  DType dtype = data.dtype();
  if (!boundary_applies(op, dtype, boundary)) return false;
  bool floating = is_floating(dtype);
  for (int64_t i = 0; i < data.numel(); ++i) {
    double x = data.get_double(i);
    bool hit = false;
    switch (boundary) {
      case Boundary::kRangeLo:
      case Boundary::kRangeHi:
        for (const Interval& range : op.ranges) {
          double end = boundary == Boundary::kRangeLo ? range.lo : range.hi;
          hit = hit || x == stored_value(dtype, end);
        }
        break;
      case Boundary::kZero:
        hit = x == 0 && !std::signbit(x);
        break;
      case Boundary::kNegZero:
        hit = x == 0 && std::signbit(x);
        break;
      case Boundary::kHuge:
        if (floating) {
          hit = std::isfinite(x) && std::fabs(x) >= max_finite(dtype) / 2;
        } else {
          auto [lo, hi] = integer_range(dtype);
          hit = x >= hi / 2 || (lo < 0 && x <= lo / 2);
        }
        break;
      case Boundary::kTiny:
        hit = floating ? (x != 0 && std::fabs(x) <= min_normal(dtype)) : std::fabs(x) == 1;
        break;
      case Boundary::kNaN:
        hit = std::isnan(x);
        break;
      case Boundary::kInf:
        hit = std::isinf(x);
        break;
      default:
        break;
    }
    if (hit) return true;
  }
  return false;
}

const std::vector<Boundary> kValueBoundaries = {
    Boundary::kRangeLo, Boundary::kRangeHi, Boundary::kZero, Boundary::kNegZero,
    Boundary::kHuge,    Boundary::kTiny,    Boundary::kNaN,  Boundary::kInf};

bool is_dim_boundary(Boundary boundary) {
  return boundary == Boundary::kDim1 || boundary == Boundary::kDim0 ||
         boundary == Boundary::kDimLarge;
}

// ---- building one test ------------------------------------------------------------------------

bool at_opset(int opset, int since, int until) {
  return (since == 0 || opset >= since) && (until == 0 || opset <= until);
}

void draw_attributes(Draft& draft) {
  Rng& rng = draft.attr_rng;
  for (const AttrSpec& attr : draft.spec.attributes) {
    if (attr.by_special_case || !at_opset(draft.opset, attr.since_opset, attr.until_opset)) {
      continue;
    }
    if (!attr.required && rng.chance(kAttrOmitted)) continue;
    auto draw_number = [&](bool integer) {
      const Interval& range = rng.pick(attr.ranges);
      if (rng.chance(kAttrAtRangeEnd)) return rng.chance(0.5) ? range.lo : range.hi;
      if (integer) {
        return static_cast<double>(rng.uniform_int(static_cast<int64_t>(std::ceil(range.lo)),
                                                   static_cast<int64_t>(std::floor(range.hi))));
      }
      return rng.uniform(range.lo, range.hi);
    };
    switch (attr.kind) {
      case AttrKind::kInt:
        draft.set_int(attr.name, static_cast<int64_t>(draw_number(true)));
        break;
      case AttrKind::kFloat:
        draft.set_float(attr.name, static_cast<float>(draw_number(false)));
        break;
      case AttrKind::kString:
        draft.set_string(attr.name, rng.pick(attr.choices));
        break;
      case AttrKind::kInts: {
        std::vector<int64_t> values;
        int64_t n = rng.uniform_int(attr.min_length, attr.max_length);
        for (int64_t k = 0; k < n; ++k) values.push_back(static_cast<int64_t>(draw_number(true)));
        draft.set_ints(attr.name, values);
        break;
      }
      case AttrKind::kFloats: {
        std::vector<float> values;
        int64_t n = rng.uniform_int(attr.min_length, attr.max_length);
        for (int64_t k = 0; k < n; ++k) values.push_back(static_cast<float>(draw_number(false)));
        draft.set_floats(attr.name, values);
        break;
      }
      case AttrKind::kGraph:
      case AttrKind::kType:
        break;  // bodies and value types are set by the special case
      case AttrKind::kStrings: {
        std::vector<std::string> values;
        int64_t n = rng.uniform_int(attr.min_length, attr.max_length);
        for (int64_t k = 0; k < n; ++k) values.push_back(rng.pick(attr.choices));
        draft.set_strings(attr.name, values);
        break;
      }
    }
  }
}

void create_operands(Draft& draft) {
  for (const OperandSpec& op : draft.spec.inputs) {
    if (!at_opset(draft.opset, op.since_opset, op.until_opset)) continue;
    int count =
        op.variadic ? static_cast<int>(draft.rng.uniform_int(op.min_count, op.max_count)) : 1;
    for (int k = 0; k < count; ++k) {
      OperandDraft operand;
      operand.spec = &op;
      operand.present = !op.optional || draft.rng.chance(kOptionalPresent);
      operand.dtype = op.type_var.empty() ? DType::kUndefined : draft.types.at(op.type_var);
      operand.name = op.variadic ? cat(op.name, "_", k) : op.name;
      draft.inputs.push_back(operand);
    }
  }
  for (const OperandSpec& op : draft.spec.outputs) {
    if (!at_opset(draft.opset, op.since_opset, op.until_opset)) continue;
    int count =
        op.variadic ? static_cast<int>(draft.rng.uniform_int(op.min_count, op.max_count)) : 1;
    for (int k = 0; k < count; ++k) {
      OperandDraft operand;
      operand.spec = &op;
      operand.present = !op.optional || draft.rng.chance(kOptionalPresent);
      operand.dtype = op.type_var.empty() ? DType::kUndefined : draft.types.at(op.type_var);
      operand.name = op.variadic ? cat(op.name, "_", k) : op.name;
      draft.outputs.push_back(operand);
    }
  }
}

// The `axis` attribute as the node will have it: written, or the ONNX default at this opset.
std::optional<int64_t> effective_axis(const Draft& draft) {
  if (draft.has_attr("axis")) return draft.attr_int("axis", 0);
  for (const AttrSpec& attr : draft.spec.attributes) {
    if (attr.name != "axis" || !at_opset(draft.opset, attr.since_opset, attr.until_opset)) continue;
    try {
      return std::stoll(attr.onnx_default);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::vector<int> feasible_ranks(const Draft& draft, const OperandSpec& op) {
  std::optional<int64_t> axis = op.rank_exceeds_axis ? effective_axis(draft) : std::nullopt;
  std::vector<int> ranks;
  for (int r = op.min_rank; r <= op.max_rank; ++r) {
    if (axis && (*axis >= 0 ? r <= *axis : r < -*axis)) continue;
    ranks.push_back(r);
  }
  return ranks;
}

// The common shape S of the primary operand, with the forced dim boundary applied.
std::vector<int64_t> primary_shape(Draft& draft, const OperandSpec& op, int rank) {
  int64_t hi = rank <= 3 ? 4 : 3;
  std::vector<int64_t> dims;
  for (int k = 0; k < rank; ++k) {
    dims.push_back(draft.rng.chance(0.2) ? 1 : draft.rng.uniform_int(1, hi));
  }
  if (rank == 0 || !draft.forced) return dims;
  size_t axis = static_cast<size_t>(draft.rng.uniform_int(0, rank - 1));
  switch (*draft.forced) {
    case Boundary::kDim1:
      dims[axis] = 1;
      break;
    case Boundary::kDim0:
      if (op.zero_dims) dims[axis] = 0;
      break;
    case Boundary::kDimLarge:
      for (auto& d : dims) d = std::min<int64_t>(d, 2);
      dims[axis] = draft.rng.uniform_int(kLargeDim, 2 * kLargeDim);
      break;
    default:
      break;
  }
  return dims;
}

// A shape that broadcasts to `target`: a suffix of it, some dims replaced by 1.
std::vector<int64_t> broadcastable_shape(Draft& draft, const std::vector<int64_t>& target,
                                         const OperandSpec& op, bool keep_rank) {
  int rank = static_cast<int>(target.size());
  int min_rank = std::max(0, std::min(op.min_rank, rank));
  int new_rank = keep_rank || !draft.rng.chance(0.3)
                     ? rank
                     : static_cast<int>(draft.rng.uniform_int(min_rank, rank));
  std::vector<int64_t> dims(target.end() - new_rank, target.end());
  for (auto& d : dims) {
    if (draft.rng.chance(0.25)) d = 1;
  }
  return dims;
}

void draw_shapes(Draft& draft, RankPlanner& ranks, int* chosen_rank) {
  const OperandSpec* primary = primary_operand(draft.spec);
  std::vector<OperandDraft*> present;
  for (auto& operand : draft.inputs) {
    if (operand.present) present.push_back(&operand);
  }
  int rank = 0;
  if (primary) {
    std::vector<int> feasible = feasible_ranks(draft, *primary);
    if (feasible.empty()) {
      raise_invalid_model(
          cat("spec: no rank of ", primary->name, " fits axis = ", draft.attr_int("axis", 0)));
    }
    rank = ranks.choose(feasible, draft.rng);
  }
  *chosen_rank = rank;
  std::vector<int64_t> target =
      primary ? primary_shape(draft, *primary, rank) : std::vector<int64_t>{};
  draft.primary_rank = rank;
  draft.primary_shape = target;
  bool same_shapes = draft.rng.chance(1.0 / 3);
  for (size_t i = 0; i < draft.inputs.size(); ++i) {
    OperandDraft& operand = draft.inputs[i];
    const OperandSpec& op = *operand.spec;
    if (i == 0) {
      operand.shape = target;
      if (draft.spec.broadcast == Broadcast::kMultidirectional && !same_shapes) {
        operand.shape = broadcastable_shape(draft, target, op, /*keep_rank=*/true);
      }
      continue;
    }
    if (draft.spec.broadcast != Broadcast::kNone) {
      operand.shape = same_shapes ? target : broadcastable_shape(draft, target, op, false);
      continue;
    }
    int r = static_cast<int>(draft.rng.uniform_int(op.min_rank, op.max_rank));
    operand.shape = draft.random_dims(r);
  }
}

void force_value_boundary(Draft& draft) {
  if (!draft.forced || is_dim_boundary(*draft.forced)) return;
  std::vector<OperandDraft*> candidates;
  for (auto& operand : draft.inputs) {
    if (operand.present && !operand.values_fixed && operand.data.defined() &&
        operand.data.numel() > 0 && boundary_applies(*operand.spec, operand.dtype, *draft.forced)) {
      candidates.push_back(&operand);
    }
  }
  if (candidates.empty()) return;
  OperandDraft& operand = *draft.rng.pick(candidates);
  Tensor data = operand.data.clone();
  int64_t n = draft.rng.uniform_int(1, std::min<int64_t>(3, data.numel()));
  for (int64_t k = 0; k < n; ++k) {
    int64_t i = draft.rng.uniform_int(0, data.numel() - 1);
    data.set_double(i, boundary_value(*operand.spec, operand.dtype, *draft.forced, draft.rng));
  }
  operand.data = data;
}

std::set<std::string> detect_boundaries(const Draft& draft) {
  std::set<std::string> hit;
  for (const auto& operand : draft.inputs) {
    if (!operand.present) continue;
    for (int64_t d : operand.data.shape()) {
      if (d == 1) hit.insert(boundary_name(Boundary::kDim1));
      if (d == 0) hit.insert(boundary_name(Boundary::kDim0));
      if (d >= kLargeDim) hit.insert(boundary_name(Boundary::kDimLarge));
    }
    if (operand.dtype == DType::kString) continue;
    for (Boundary boundary : kValueBoundaries) {
      if (hits(*operand.spec, operand.data, boundary)) hit.insert(boundary_name(boundary));
    }
  }
  return hit;
}

std::string attr_tag(const std::string& name, const Attribute& attr) {
  switch (attr.kind) {
    case Attribute::Kind::kInt:
      return cat(name, "=", attr.i);
    case Attribute::Kind::kString:
      return cat(name, "=", attr.s);
    default:
      return name;
  }
}


// Builds the model, runs inference and the reference evaluator.
GeneratedTest build(Draft& draft) {
  GeneratedTest test;
  auto model = std::make_unique<Model>();
  model->ir_version = ir_version_for_opset(draft.opset);
  model->opsets[""] = draft.opset;
  model->producer_name = "rnnc_conform";
  model->graph = std::make_unique<Graph>(draft.spec.op_type + "_test");
  Graph& graph = *model->graph;

  std::set<std::string> names;
  std::vector<Value*> node_inputs;
  std::map<std::string, Tensor> feeds;
  for (auto& operand : draft.inputs) {
    if (!operand.present) {
      if (!operand.spec->captured) node_inputs.push_back(nullptr);
      continue;
    }
    names.insert(operand.name);
    Value* value;
    if (operand.constant) {
      value = graph.add_initializer(operand.name, operand.data);
    } else {
      TensorType type;
      type.dtype = operand.data.dtype();
      Shape shape;
      for (int64_t d : operand.data.shape()) shape.push_back(Dim(d));
      type.shape = shape;
      value = graph.add_input(operand.name, type);
      test.inputs.emplace_back(operand.name, operand.data);
      feeds[operand.name] = operand.data;
    }
    if (!operand.spec->captured) node_inputs.push_back(value);
  }
  while (!node_inputs.empty() && node_inputs.back() == nullptr) node_inputs.pop_back();
  std::vector<std::string> output_names;
  for (auto& operand : draft.outputs) {
    if (!operand.present) {
      output_names.push_back("");
      continue;
    }
    std::string name = operand.name;
    while (names.count(name)) name += "_out";
    names.insert(name);
    output_names.push_back(name);
  }
  while (!output_names.empty() && output_names.back().empty()) output_names.pop_back();

  Node* node = graph.add_node(draft.spec.op_type, draft.spec.op_type, node_inputs, output_names,
                              draft.opset);
  for (const auto& [name, attr] : draft.attrs) node->set_attr(name, attr);
  if (draft.finish_node) {
    draft.finish_node(graph, *node);
    graph.sort_topologically();  // nodes it added may feed the op's node
  }
  infer_graph(graph);
  if (graph.outputs().empty()) {
    for (Value* output : node->outputs()) {
      if (output) graph.add_output(output);
    }
  }
  verify_model(*model);

  std::vector<Tensor> results = evaluate(graph, feeds);
  for (size_t i = 0; i < results.size(); ++i) {
    const Value* value = graph.outputs()[i];
    const Tensor& result = results[i];
    if (value->type.dtype != result.dtype()) {
      raise_invalid_model(cat("output '", value->name(), "': inference says ",
                              dtype_onnx_name(value->type.dtype), ", the evaluator returned ",
                              dtype_onnx_name(result.dtype())));
    }
    if (value->type.shape) {
      const Shape& shape = *value->type.shape;
      bool agrees = shape.size() == result.shape().size();
      for (size_t k = 0; agrees && k < shape.size(); ++k) {
        agrees = !shape[k].is_known() || shape[k].value() == result.shape()[k];
      }
      if (!agrees) {
        raise_invalid_model(cat("output '", value->name(), "': inference says ",
                                value->type.to_string(), ", the evaluator returned ",
                                shape_text(result.shape())));
      }
    }
    test.outputs.emplace_back(value->name(), result);
  }
  test.model = std::move(model);
  return test;
}

GeneratedTest generate_one(const OpSpec& spec, Draft& draft,
                           const std::map<std::string, DType>& types, RankPlanner& ranks,
                           int* chosen_rank) {
  draft.types = types;
  // The opsets whose type lists hold the chosen types.
  std::vector<int> opsets;
  for (int opset : spec.opsets) {
    bool fits = true;
    for (const TypeVar& var : spec.type_vars) {
      for (const auto& [type, since] : var.since) {
        fits = fits && !(types.at(var.name) == type && opset < since);
      }
    }
    if (fits) opsets.push_back(opset);
  }
  RNNC_CHECK(!opsets.empty(), spec.op_type, ": no opset of the spec has these types");
  draft.opset = draft.attr_rng.pick(opsets);
  draw_attributes(draft);
  create_operands(draft);
  draw_shapes(draft, ranks, chosen_rank);
  if (!spec.special_case.empty()) {
    SpecialCase special = find_special_case(spec.special_case);
    RNNC_CHECK(special, spec.op_type, ": unknown special case '", spec.special_case, "'");
    special(draft);
  }
  for (auto& operand : draft.inputs) {
    if (!operand.present || operand.data.defined()) continue;
    RNNC_CHECK(operand.spec->distribution != Distribution::kBySpecialCase, spec.op_type,
               ": special case left input ", operand.name, " without data");
    draft.fill(operand);
  }
  force_value_boundary(draft);
  for (auto& operand : draft.inputs) {
    if (operand.present && !operand.constant_fixed && operand.spec->may_be_constant) {
      operand.constant = draft.rng.chance(0.5);
    }
  }
  // Generic feature tags: attributes as written, optional operands given, constants.
  for (const auto& [name, attr] : draft.attrs) draft.tags.insert(attr_tag(name, attr));
  for (const auto& operand : draft.inputs) {
    if (operand.present && operand.spec->optional) draft.tags.insert("in:" + operand.spec->name);
    if (operand.present && operand.constant) draft.tags.insert("const:" + operand.spec->name);
  }
  for (const auto& operand : draft.outputs) {
    if (operand.present && operand.spec->optional) draft.tags.insert("out:" + operand.spec->name);
  }
  return build(draft);
}

}  // namespace

const OperandSpec* primary_operand(const OpSpec& spec) {
  if (!spec.inputs.empty()) return &spec.inputs[0];
  return spec.outputs.empty() ? nullptr : &spec.outputs[0];
}

std::vector<Boundary> applicable_boundaries(const OpSpec& spec) {
  std::vector<Boundary> out;
  const OperandSpec* primary = primary_operand(spec);
  // Dim classes describe data tensors: not a shape or index operand (ConstantOfShape's input is
  // as long as the output's rank).
  if (primary && primary->max_rank >= 1 && !spec.inputs.empty() &&
      primary->distribution != Distribution::kBySpecialCase) {
    out.push_back(Boundary::kDim1);
    if (primary->zero_dims) out.push_back(Boundary::kDim0);
    out.push_back(Boundary::kDimLarge);
  }
  for (Boundary boundary : kValueBoundaries) {
    bool any = false;
    for (const OperandSpec& op : spec.inputs) {
      const TypeVar* var = spec.find_type_var(op.type_var);
      if (!var) continue;
      for (DType type : var->types) any = any || boundary_applies(op, type, boundary);
    }
    if (any) out.push_back(boundary);
  }
  return out;
}

int64_t ir_version_for_opset(int opset) {
  if (opset <= 8) return 3;
  if (opset == 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  return 10;
}

std::string test_name(const std::string& op, Profile profile, int index) {
  char digits[16];
  std::snprintf(digits, sizeof(digits), "%04d", index);
  return op + "_" + profile_name(profile) + "_" + digits;
}

OpGenReport generate_op(const OpSpec& spec, const GenOptions& options,
                        std::vector<GeneratedTest>* keep) {
  OpGenReport report;
  report.op = spec.op_type;
  uint64_t op_seed = mix(mix(options.seed, spec.op_type), profile_name(options.profile));
  Rng plan_rng(mix(op_seed, "plan"));
  auto combos = type_combinations(spec);
  std::vector<size_t> type_plan = block_schedule(combos.size(), options.count, plan_rng);
  std::vector<Boundary> boundaries = applicable_boundaries(spec);
  std::vector<size_t> boundary_plan =
      boundaries.empty() ? std::vector<size_t>{}
                         : block_schedule(boundaries.size(), options.count, plan_rng);
  const OperandSpec* primary = primary_operand(spec);
  RankPlanner ranks(primary ? primary->min_rank : 0, primary ? primary->max_rank : 0,
                    options.count);
  uint64_t smoke_attr_seed = mix(op_seed, "attributes");

  for (int index = 0; index < options.count; ++index) {
    std::string name = test_name(spec.op_type, options.profile, index);
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
      uint64_t test_seed =
          mix(mix(op_seed, static_cast<uint64_t>(index)), static_cast<uint64_t>(attempt));
      uint64_t attr_seed =
          options.profile == Profile::kSmoke ? smoke_attr_seed : mix(test_seed, "attributes");
      Draft draft(spec, options.profile, test_seed, attr_seed);
      if (!boundaries.empty()) draft.forced = boundaries[boundary_plan[static_cast<size_t>(index)]];
      int rank = 0;
      GeneratedTest test;
      try {
        test =
            generate_one(spec, draft, combos[type_plan[static_cast<size_t>(index)]], ranks, &rank);
      } catch (const Error& e) {
        report.failures.push_back(
            cat(name, " (attempt ", attempt + 1, ", ", error_kind_name(e.kind()), "): ", e.what()));
        continue;
      }
      // The rank the test really has (a special case may have shaped the operand itself).
      if (!draft.inputs.empty() && draft.inputs[0].present) {
        rank = static_cast<int>(draft.inputs[0].data.rank());
      } else if (draft.inputs.empty() && !test.outputs.empty()) {
        rank = static_cast<int>(test.outputs[0].second.rank());
      }
      ranks.commit(rank);
      TestMeta& meta = test.meta;
      meta.name = name;
      meta.op = spec.op_type;
      meta.opset = draft.opset;
      meta.profile = profile_name(options.profile);
      meta.index = index;
      meta.seed = options.seed;
      for (const auto& [var, type] : draft.types) meta.types[var] = dtype_onnx_name(type);
      meta.rank = rank;
      meta.boundaries = detect_boundaries(draft);
      meta.tags = draft.tags;
      if (!options.out_dir.empty()) {
        fs::path dir = fs::path(options.out_dir) / name;
        fs::remove_all(dir);
        fs::create_directories(dir);
        export_onnx_file(*test.model, (dir / "model.onnx").string());
        write_test_data(dir.string(), test.inputs, test.outputs);
        write_meta((dir / "conform.txt").string(), meta);
      }
      report.coverage.add(meta);
      ++report.written;
      if (keep) keep->push_back(std::move(test));
      break;
    }
    if (options.progress) options.progress(spec.op_type, index + 1, options.count);
  }
  return report;
}

}  // namespace rnnc::conformance
