#include "lowering/lower_elementwise.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <map>

#include "ir/error.h"
#include "lowering/halide_block.h"
#include "lowering/schedule_table.h"

namespace rnnc {

namespace {

using Halide::Expr;

// Bump when the code a group compiles to changes, so stale cached kernels are not reused.
constexpr const char* kElementwiseKey = "rnnc elementwise";

const std::set<std::string> kRoots = {"MatMul", "Gemm", "Conv", "ConvTranspose"};
const std::set<std::string> kNormalizers = {"Softmax", "LogSoftmax"};
const std::set<std::string> kReductions = {"ReduceSum", "ReduceMean",      "ReduceMax",
                                           "ReduceMin", "ReduceSumSquare", "ReduceL1",
                                           "ReduceL2",  "ReduceLogSum"};

Expr f32(Expr x) { return x.type() == Halide::Float(32) ? x : Halide::cast<float>(x); }

// e^x - 1 without the cancellation of exp(x) - 1 near 0: its Taylor series below |x| = 0.5
// (truncation error < 2e-7 relative there).
Expr expm1(Expr x) {
  Expr series = 1.f + x / 7.f;
  for (float k : {6.f, 5.f, 4.f, 3.f, 2.f}) series = 1.f + x / k * series;
  series = x * series;
  return Halide::select(Halide::abs(x) < 0.5f, series, Halide::exp(x) - 1.f);
}

// Halide's tanh calls libm per lane; this vectorizes. |x| < 0.25: the odd series to x^9 (error
// below 2e-9 relative); otherwise (1 - e) / (1 + e) with e = exp(-2|x|), which saturates to +-1.
Expr tanh_expr(Expr x) {
  Expr x2 = x * x;
  Expr series =
      x * (1.f + x2 * (-1.f / 3 + x2 * (2.f / 15 + x2 * (-17.f / 315 + x2 * (62.f / 2835)))));
  Expr e = Halide::exp(-2.f * Halide::abs(x));
  Expr magnitude = (1.f - e) / (1.f + e);
  return Halide::select(Halide::abs(x) < 0.25f, series,
                        Halide::select(x < 0.f, -magnitude, magnitude));
}

// 1 / (1 + e^-x): exp overflows to inf for x < -88, giving 0 as it should.
// 1 / (1 + e^-x) through e = e^-|x|, which never overflows (Halide's exp does not saturate to inf
// for huge arguments: sigmoid(-3.4e38) came out 1).
Expr sigmoid_expr(Expr x) {
  Expr e = Halide::exp(-Halide::abs(x));
  return Halide::select(x >= 0.f, 1.f / (1.f + e), e / (1.f + e));
}

// log(1 + e^x) as the reference: x + log1p(e^-x) for x > 0, log1p(e^x) otherwise, with
// log1p(e) = log(u) * e / (u - 1), u = 1 + e (exact where 1 + e rounds).
Expr softplus_expr(Expr x) {
  Expr e = Halide::exp(-Halide::abs(x));
  Expr u = 1.f + e;
  Expr log1p = Halide::select(u == 1.f, e, Halide::log(u) * e / (u - 1.f));
  return Halide::select(x > 0.f, x + log1p, log1p);
}

// NaN-propagating max/min, as the reference's (numpy.maximum); see kIeeeOps.
Expr max_expr(Expr a, Expr b) {
  return Halide::select(a != a, a, Halide::select(b != b, b, Halide::select(a < b, b, a)));
}
Expr min_expr(Expr a, Expr b) {
  return Halide::select(a != a, a, Halide::select(b != b, b, Halide::select(b < a, b, a)));
}

// x clamped by the reference's two steps: x < lo -> lo, then x > hi -> hi (so lo > hi gives hi).
Expr clip_expr(Expr x, Expr lo, Expr hi) {
  if (lo.defined()) x = Halide::select(x < lo, lo, x);
  if (hi.defined()) x = Halide::select(x > hi, hi, x);
  return x;
}

// Pow with a compiled-in exponent becomes multiplications where that is exact enough (within an
// ulp or two of powf); other exponents use Halide's vectorized pow.
Expr pow_expr(Expr base, Expr exponent) {
  exponent = f32(exponent);
  if (const double* value = Halide::Internal::as_const_float(exponent)) {
    if (*value == 1.0) return base;
    if (*value == 2.0) return base * base;
    if (*value == 3.0) return base * base * base;
    if (*value == 0.5) return Halide::sqrt(base);
    if (*value == -1.0) return 1.f / base;
    if (*value == 0.0) return Halide::Internal::make_one(Halide::Float(32));
  }
  // Halide's pow is exp(e * log(b)), which gets b = 0 wrong: 0^e is inf for e < 0, 1 for e = 0.
  Expr zero_base = Halide::select(exponent < 0.f, std::numeric_limits<float>::infinity(),
                                  Halide::select(exponent == 0.f, 1.f, 0.f));
  return Halide::select(base == 0.f, zero_base, Halide::pow(base, exponent));
}

// e^x with IEEE overflow and underflow (Halide's exp does not saturate for huge arguments) and
// NaN kept.
Expr exp_expr(Expr x) {
  Expr inf = std::numeric_limits<float>::infinity();
  return Halide::select(Halide::is_nan(x), x, x > 88.73f, inf, x < -104.f, 0.f, Halide::exp(x));
}

// log(x) with the IEEE special cases (Halide's log returns finite values for x <= 0).
Expr log_expr(Expr x) {
  Expr inf = std::numeric_limits<float>::infinity();
  Expr nan = std::numeric_limits<float>::quiet_NaN();
  return Halide::select(Halide::is_nan(x) || x < 0.f, nan, x == 0.f, -inf, x == inf, inf,
                        Halide::log(x));
}

// Neither operand is NaN (always true for integers).
Expr ordered(const Expr& a, const Expr& b) {
  if (!a.type().is_float()) return Halide::Internal::const_true();
  return !Halide::is_nan(a) && !Halide::is_nan(b);
}

using OpExpr = std::function<Expr(const Node&, const std::vector<Expr>&)>;

Expr fold(const std::vector<Expr>& inputs, const std::function<Expr(Expr, Expr)>& op) {
  Expr result = inputs.at(0);
  for (size_t i = 1; i < inputs.size(); ++i) result = op(result, inputs[i]);
  return result;
}

// One row per op: the formula of its reference kernel (ir/reference/kernels_elementwise.cc).
const std::map<std::string, OpExpr>& op_table() {
  static const std::map<std::string, OpExpr> table = {
      {"Identity", [](const Node&, const auto& in) { return in[0]; }},
      // To float32 only (dtypes_supported): integers round to nearest, as static_cast does.
      {"Cast", [](const Node&, const auto& in) { return Halide::cast<float>(in[0]); }},
      {"Add", [](const Node&, const auto& in) { return in[0] + in[1]; }},
      {"Sub", [](const Node&, const auto& in) { return in[0] - in[1]; }},
      {"Mul", [](const Node&, const auto& in) { return in[0] * in[1]; }},
      {"Div", [](const Node&, const auto& in) { return in[0] / in[1]; }},
      {"Pow", [](const Node&, const auto& in) { return pow_expr(in[0], in[1]); }},
      {"Neg", [](const Node&, const auto& in) { return -in[0]; }},
      {"Abs", [](const Node&, const auto& in) { return Halide::abs(in[0]); }},
      {"Reciprocal", [](const Node&, const auto& in) { return 1.f / in[0]; }},
      {"Sqrt", [](const Node&, const auto& in) { return Halide::sqrt(in[0]); }},
      {"Exp", [](const Node&, const auto& in) { return exp_expr(in[0]); }},
      {"Log", [](const Node&, const auto& in) { return log_expr(in[0]); }},
      // erf(+-inf) would be NaN in Halide's approximation; erf is +-1 in float32 beyond 4.
      {"Erf",
       [](const Node&, const auto& in) { return Halide::erf(Halide::clamp(in[0], -10.f, 10.f)); }},
      {"Floor", [](const Node&, const auto& in) { return Halide::floor(in[0]); }},
      {"Ceil", [](const Node&, const auto& in) { return Halide::ceil(in[0]); }},
      {"Round", [](const Node&, const auto& in) { return Halide::round(in[0]); }},  // half even
      // -1, 0 or 1; anything else (NaN) passes through.
      {"Sign",
       [](const Node&, const auto& in) {
         Expr x = in[0];
         return Halide::select(x > 0.f, 1.f,
                               Halide::select(x < 0.f, -1.f, Halide::select(x == 0.f, 0.f, x)));
       }},
      {"Relu", [](const Node&, const auto& in) { return Halide::select(in[0] < 0.f, 0.f, in[0]); }},
      {"LeakyRelu",
       [](const Node& node, const auto& in) {
         float alpha = node.attr_float("alpha", 0.01f);
         return Halide::select(in[0] < 0.f, alpha * in[0], in[0]);
       }},
      {"PRelu", [](const Node&,
                   const auto& in) { return Halide::select(in[0] < 0.f, in[1] * in[0], in[0]); }},
      {"ThresholdedRelu",
       [](const Node& node, const auto& in) {
         float alpha = node.attr_float("alpha", 1.0f);
         return Halide::select(in[0] > alpha, in[0], 0.f);
       }},
      {"Elu",
       [](const Node& node, const auto& in) {
         float alpha = node.attr_float("alpha", 1.0f);
         return Halide::select(in[0] < 0.f, alpha * expm1(in[0]), in[0]);
       }},
      {"Celu",
       [](const Node& node, const auto& in) {
         float alpha = node.attr_float("alpha", 1.0f);
         return Halide::select(in[0] < 0.f, alpha * expm1(in[0] / alpha), in[0]);
       }},
      {"Selu",
       [](const Node& node, const auto& in) {
         float alpha = node.attr_float("alpha", 1.67326319217681884765625f);
         float gamma = node.attr_float("gamma", 1.05070102214813232421875f);
         return Halide::select(in[0] > 0.f, gamma * in[0], gamma * (alpha * expm1(in[0])));
       }},
      {"Sigmoid", [](const Node&, const auto& in) { return sigmoid_expr(in[0]); }},
      {"HardSigmoid",
       [](const Node& node, const auto& in) {
         float alpha = node.attr_float("alpha", 0.2f);
         float beta = node.attr_float("beta", 0.5f);
         return clip_expr(alpha * in[0] + beta, 0.f, 1.f);
       }},
      {"HardSwish",
       [](const Node&, const auto& in) {
         return in[0] * clip_expr(in[0] * (1.f / 6.f) + 0.5f, 0.f, 1.f);
       }},
      {"Tanh", [](const Node&, const auto& in) { return tanh_expr(in[0]); }},
      {"Softplus", [](const Node&, const auto& in) { return softplus_expr(in[0]); }},
      {"Softsign", [](const Node&, const auto& in) { return in[0] / (1.f + Halide::abs(in[0])); }},
      {"Clip",
       [](const Node& node, const auto& in) {
         if (node.opset() < 11) {
           Expr lo = node.has_attr("min") ? Expr(node.attr_float("min", 0)) : Expr();
           Expr hi = node.has_attr("max") ? Expr(node.attr_float("max", 0)) : Expr();
           return clip_expr(in[0], lo, hi);
         }
         return clip_expr(in[0], in.size() > 1 ? in[1] : Expr(), in.size() > 2 ? in[2] : Expr());
       }},
      {"Max", [](const Node&, const auto& in) { return fold(in, max_expr); }},
      {"Min", [](const Node&, const auto& in) { return fold(in, min_expr); }},
      {"Sum", [](const Node&, const auto& in) { return fold(in, std::plus<Expr>()); }},
      {"Mean",
       [](const Node&, const auto& in) {
         return fold(in, std::plus<Expr>()) / static_cast<float>(in.size());
       }},
      {"Where", [](const Node&, const auto& in) { return Halide::select(in[0], in[1], in[2]); }},
      {"Equal", [](const Node&, const auto& in) { return in[0] == in[1]; }},
      {"Less", [](const Node&, const auto& in) { return in[0] < in[1]; }},
      {"Greater", [](const Node&, const auto& in) { return in[0] > in[1]; }},
      // Halide's simplifier rewrites a <= b as !(b < a), which is true for NaN: say "ordered".
      {"LessOrEqual",
       [](const Node&, const auto& in) { return ordered(in[0], in[1]) && in[0] <= in[1]; }},
      {"GreaterOrEqual",
       [](const Node&, const auto& in) { return ordered(in[0], in[1]) && in[0] >= in[1]; }},
      {"Not", [](const Node&, const auto& in) { return !in[0]; }},
      {"And", [](const Node&, const auto& in) { return in[0] && in[1]; }},
      {"Or", [](const Node&, const auto& in) { return in[0] || in[1]; }},
      {"Xor", [](const Node&, const auto& in) { return in[0] != in[1]; }},
  };
  return table;
}

// Ops evaluated by IEEE rules (strict_float), besides nodes annotated rnnc.ieee: those whose
// formula selects on a comparison with a possibly-NaN input. Under Halide's default fast-math
// flags LLVM may rewrite select(x < 0, 0, x) into max(x, 0), dropping the NaN the reference keeps;
// strict_float evaluates these ops by IEEE rules (in a GEMM epilogue the accumulation keeps its
// FMAs, so it costs nothing there).
const std::set<std::string> kIeeeOps = {"Relu",      "LeakyRelu", "PRelu", "ThresholdedRelu",
                                        "Elu",       "Celu",      "Selu",  "HardSigmoid",
                                        "HardSwish", "Clip",      "Sign",  "Max",
                                        "Min"};

// Element types each op is lowered for: float32 data, bool conditions; Pow's exponent may be an
// integer (converted to float, as the reference does); Cast to float32 from float32, bool, int8,
// uint8 and int32 (quantized values, MatMulInteger's sums, masks), which every vector ISA converts
// rounding to nearest.
// Not int64: without AVX-512 DQ the conversion goes through double and can round twice.
bool dtypes_supported(const Node& node) {
  const std::string& op = node.op_type();
  if (op == "Cast") {
    const Value* in = node.input(0);
    const Value* out = node.output(0);
    const std::set<DType> from = {DType::kFloat32, DType::kBool, DType::kInt8, DType::kUInt8,
                                  DType::kInt32};
    return in && out && out->type.dtype == DType::kFloat32 && from.count(in->type.dtype);
  }
  bool bool_in = op == "Not" || op == "And" || op == "Or" || op == "Xor";
  bool bool_out = bool_in || op == "Equal" || op == "Less" || op == "Greater" ||
                  op == "LessOrEqual" || op == "GreaterOrEqual";
  const Value* out = node.output(0);
  if (!out || out->type.dtype != (bool_out ? DType::kBool : DType::kFloat32)) return false;
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    const Value* in = node.input(i);
    if (!in) continue;
    DType dtype = in->type.dtype;
    DType want = bool_in || (op == "Where" && i == 0) ? DType::kBool : DType::kFloat32;
    bool ok = dtype == want ||
              (op == "Pow" && i == 1 && (dtype == DType::kInt32 || dtype == DType::kInt64));
    if (!ok) return false;
  }
  return true;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string float_text(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::string attribute_text(const Attribute& attribute) {
  switch (attribute.kind) {
    case Attribute::Kind::kFloat:
      return float_text(attribute.f);
    case Attribute::Kind::kInt:
      return std::to_string(attribute.i);
    case Attribute::Kind::kString:
      return "'" + attribute.s + "'";
    case Attribute::Kind::kInts: {
      std::string text = "[";
      for (int64_t v : attribute.ints) text += std::to_string(v) + ",";
      return text + "]";
    }
    case Attribute::Kind::kFloats: {
      std::string text = "[";
      for (float v : attribute.floats) text += float_text(v) + ",";
      return text + "]";
    }
    default:
      break;
  }
  raise_unsupported(
      cat("attribute of kind ", Attribute::kind_name(attribute.kind), " in a lowered node"));
}

Expr inline_scalar_expr(const Tensor& tensor) {
  switch (tensor.dtype()) {
    case DType::kFloat32:
      return Expr(tensor.data<float>()[0]);
    case DType::kBool:
      return Halide::Internal::make_const(Halide::Bool(), tensor.data<bool>()[0]);
    case DType::kInt32:
      return Expr(tensor.data<int32_t>()[0]);
    case DType::kInt64:
      return Halide::Internal::make_const(Halide::Int(64), tensor.data<int64_t>()[0]);
    default:
      break;
  }
  raise_unsupported(cat("a ", dtype_onnx_name(tensor.dtype()), " scalar constant"));
}

std::string scalar_text(const Tensor& tensor) {
  return cat(dtype_name(tensor.dtype()), ":", float_text(tensor.get_double(0)));
}

}  // namespace

bool is_held_constant(const Value* value) {
  return value && value->is_constant() && !value->is_graph_input();
}

bool is_inline_scalar(const Value* value) {
  return is_held_constant(value) && value->constant()->numel() == 1 &&
         (value->constant()->dtype() == DType::kFloat32 ||
          value->constant()->dtype() == DType::kBool ||
          value->constant()->dtype() == DType::kInt32 ||
          value->constant()->dtype() == DType::kInt64);
}

bool is_lowerable_elementwise(const Node& node) {
  return node.domain().empty() && op_table().count(node.op_type()) && node.num_outputs() == 1 &&
         dtypes_supported(node);
}

Expr elementwise_op_expr(const Node& node, const std::vector<Expr>& inputs) {
  auto it = op_table().find(node.op_type());
  if (it == op_table().end() || !dtypes_supported(node)) {
    raise_unsupported(cat(node.describe(), ": not lowered to Halide"));
  }
  std::vector<Expr> args = inputs;
  if (node.op_type() == "Pow") args[1] = f32(args[1]);
  Expr result = it->second(node, args);
  const bool ieee = kIeeeOps.count(node.op_type()) || node.attr_int(kIeeeAnnotation, 0) != 0;
  return ieee ? Halide::strict_float(result) : result;
}

FusionGroup analyze_group(const std::vector<const Node*>& nodes) {
  if (nodes.empty()) raise_unsupported("an empty block");
  FusionGroup group;
  group.nodes = nodes;
  std::set<const Node*> members(nodes.begin(), nodes.end());
  std::set<const Value*> produced;
  for (const Node* node : nodes) {
    if (node->num_outputs() != 1 || !node->output(0) || !node->domain().empty()) {
      raise_unsupported(cat(node->describe(),
                            ": only single-output default-domain nodes are "
                            "lowered to Halide"));
    }
    produced.insert(node->output(0));
  }
  for (const Node* node : nodes) {
    bool read_inside = false;
    for (const Use& use : node->output(0)->uses())
      read_inside = read_inside || members.count(use.node);
    if (read_inside) continue;
    if (group.sink) {
      raise_unsupported(
          cat("a block with two results (", group.sink->describe(), ", ", node->describe(), ")"));
    }
    group.sink = node;
  }
  if (!group.sink) raise_unsupported("a block whose nodes form a cycle");
  for (const Node* node : nodes) {
    const std::string& op = node->op_type();
    if (kRoots.count(op)) {
      if (group.root) raise_unsupported(cat("a block with two roots: ", node->describe()));
      group.root = node;
      for (const Value* input : node->inputs()) {
        if (input && produced.count(input)) {
          raise_unsupported(cat(node->describe(), ": the root of a group reads a group member"));
        }
      }
    } else if (kNormalizers.count(op) || kReductions.count(op)) {
      if (node != group.sink) {
        raise_unsupported(cat(node->describe(), ": not lowered inside a fused group"));
      }
      (kNormalizers.count(op) ? group.normalizer : group.reduction) = node;
    } else if (is_lowerable_elementwise(*node)) {
      group.elementwise.insert(node);
    } else {
      raise_unsupported(cat(node->describe(), ": not lowered to Halide"));
    }
  }
  if (group.reduction && nodes.size() > 1) {
    raise_unsupported(cat(group.reduction->describe(), ": reductions are lowered alone"));
  }
  std::set<const Value*> seen;
  for (const Node* node : nodes) {
    for (const Value* input : node->inputs()) {
      if (!input || produced.count(input) || !seen.insert(input).second) continue;
      if (!input->type.shape) {
        raise_unsupported(cat(node->describe(), ": input '", input->name(), "' has unknown rank"));
      }
      if (is_inline_scalar(input)) continue;
      group.operands.push_back(input);
      if (!is_held_constant(input)) group.runtime_inputs.push_back(input);
    }
  }
  if (!group.sink->output(0)->type.shape) {
    raise_unsupported(cat(group.sink->describe(), ": the result has unknown rank"));
  }
  return group;
}

Expr group_expr(const FusionGroup& group, const Value* value,
                const std::function<Expr(const Value*)>& leaf) {
  const Node* producer = value->producer();
  if (producer && group.elementwise.count(producer)) {
    std::vector<Expr> inputs;
    for (const Value* input : producer->inputs()) {
      inputs.push_back(input ? group_expr(group, input, leaf) : Expr());
    }
    return elementwise_op_expr(*producer, inputs);
  }
  if (is_inline_scalar(value)) return inline_scalar_expr(*value->constant());
  return leaf(value);
}

std::string group_signature(const FusionGroup& group) {
  std::string text;
  std::map<const Value*, size_t> member_of;
  for (size_t i = 0; i < group.nodes.size(); ++i) member_of[group.nodes[i]->output(0)] = i;
  for (size_t i = 0; i < group.operands.size(); ++i) {
    const Value* operand = group.operands[i];
    text += cat("o", i, "=", dtype_name(operand->type.dtype), shape_to_string(*operand->type.shape),
                is_held_constant(operand) ? " held" : "", "\n");
  }
  for (size_t i = 0; i < group.nodes.size(); ++i) {
    const Node* node = group.nodes[i];
    text += cat("n", i, "=", node->op_type(), "@", node->opset(), "{");
    for (const auto& [name, attribute] : node->attributes()) {
      // Annotations do not change what a node computes; rnnc.ieee changes how it rounds.
      if (name.rfind(kAnnotationPrefix, 0) == 0 && name != kIeeeAnnotation) continue;
      text += name + "=" + attribute_text(attribute) + ";";
    }
    text += "}(";
    for (const Value* input : node->inputs()) {
      if (!input) {
        text += "_,";
      } else if (auto it = member_of.find(input); it != member_of.end()) {
        text += cat("n", it->second, ",");
      } else if (is_inline_scalar(input)) {
        text += cat("c", scalar_text(*input->constant()), ",");
      } else {
        size_t index =
            static_cast<size_t>(std::find(group.operands.begin(), group.operands.end(), input) -
                                group.operands.begin());
        text += cat("o", index, ",");
      }
    }
    text += cat(")->", dtype_name(node->output(0)->type.dtype),
                shape_to_string(*node->output(0)->type.shape), "\n");
  }
  return text;
}

std::string group_op_names(const FusionGroup& group) {
  std::string text;
  for (const Node* node : group.nodes) text += (text.empty() ? "" : "+") + lower(node->op_type());
  return text;
}

Halide::Var schedule_elementwise(Halide::Func func, const Halide::Var& v0, int lanes, int unroll,
                                 std::optional<int64_t> inner_extent) {
  // Every branch splits v0 into the same outer var, so producers can be computed at it.
  Halide::Var outer(v0.name() + "_vo"), inner(v0.name() + "_vi");
  const auto shift = Halide::TailStrategy::ShiftInwards;
  int step = lanes * unroll;
  auto by_vectors = [&](Halide::Stage stage, int vectors) {
    stage.split(v0, outer, inner, lanes * vectors, shift).vectorize(inner, lanes);
    if (vectors > 1) stage.unroll(inner);
  };
  auto scalar = [&](Halide::Stage stage) { stage.split(v0, outer, inner, 1); };
  if (inner_extent) {
    if (lanes > 1 && *inner_extent >= step) {
      by_vectors(func, unroll);
    } else if (lanes > 1 && *inner_extent >= lanes) {
      by_vectors(func, 1);
    } else {
      scalar(func);
    }
    return outer;
  }
  if (lanes > 1) {
    Expr extent = func.output_buffer().dim(0).extent();
    if (unroll > 1) by_vectors(func.specialize(extent >= step), unroll);
    by_vectors(func.specialize(extent >= lanes), 1);
  }
  scalar(func);
  return outer;
}

std::unique_ptr<ExecutionBlock> lower_elementwise_group(const FusionGroup& group,
                                                        HalideCache& cache) {
  RNNC_CHECK(!group.root && !group.normalizer && !group.reduction,
             "lower_elementwise_group on a group with a root");
  const Value* result = group.sink->output(0);
  const Shape& shape = *result->type.shape;
  int rank = static_cast<int>(shape.size());
  std::vector<std::vector<DimRead>> reads;
  for (const Value* operand : group.operands) {
    if (static_cast<int>(operand->type.shape->size()) > rank) {
      raise_unsupported(cat(group.sink->describe(), ": operand '", operand->name(),
                            "' has a higher rank than the result"));
    }
    reads.push_back(classify_operand(*operand->type.shape, shape));
  }
  std::vector<LoopDim> loops = merge_loop_dims(rank, reads, [](int) { return true; });

  auto block = std::make_unique<HalideBlock>();
  block->context_ = group.sink->describe();
  block->output_value_ = result;
  block->output_dtype_ = result->type.dtype;
  block->output_view_ = output_view(loops);
  for (size_t i = 0; i < group.operands.size(); ++i) {
    const Value* operand = group.operands[i];
    block->arguments_.push_back(argument_of(
        operand,
        operand_view(static_cast<int>(operand->type.shape->size()), rank, loops, reads[i])));
  }

  std::optional<int64_t> inner_extent = 1;
  for (int d = loops[0].first; d < loops[0].last; ++d) {
    const Dim& dim = shape[static_cast<size_t>(d)];
    inner_extent = inner_extent && dim.is_known()
                       ? std::optional<int64_t>(*inner_extent * dim.value())
                       : std::nullopt;
  }
  ElementwiseSchedule schedule =
      choose_elementwise_schedule(arch_table(cache.target()), DType::kFloat32, inner_extent);

  std::string key = cat(kElementwiseKey, "\n", group_signature(group));
  for (const HalideBlock::Argument& argument : block->arguments_) {
    key += view_to_string(argument.view) + "\n";
  }
  key += cat("out ", view_to_string(block->output_view_), "\n", schedule.to_string());

  const HalideBlock& spec = *block;
  block->compile(cache, key, [&]() {
    std::vector<Halide::Var> vars;
    for (size_t i = 0; i < loops.size(); ++i) vars.emplace_back(cat("loop", i));
    BuiltPipeline built;
    std::map<const Value*, Expr> reads_of = read_operands(group.operands, spec, vars, built);
    Halide::Func out("out");
    out(vars) = Halide::cast(
        halide_type_of(result->type.dtype),
        group_expr(group, result, [&](const Value* value) { return reads_of.at(value); }));
    schedule_elementwise(out, vars[0], schedule.lanes, schedule.unroll, inner_extent);
    pin_output_mins(out);
    built.output = out;
    return built;
  });

  block->output_shape_ = broadcast_output_shape(rank, block->context_);
  block->kind_ = cat("halide ", group_op_names(group), " ", shape_to_string(shape));
  block->nodes = group.nodes;
  block->inputs = group.runtime_inputs;
  block->outputs = {result};
  return block;
}

}  // namespace rnnc
