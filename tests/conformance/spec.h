// Operator specs for the generated conformance suite: what a valid test of one op looks like,
// described as data properties only (element types, ranks, value distributions, attribute ranges,
// broadcasting, nonzero divisors). One place per op, in tests/conformance/specs/<group>.cc:
//
//   Op("Asin", 9)
//       .types("T", kFloatTypes)
//       .in("input", "T").rank(0, 5).range(-1, 1).specials()
//       .out("output", "T");
//
// reads "Asin at opset 9 takes one input of any float type, rank 0 to 5, values in [-1, 1] (NaN,
// Inf and the other boundary values are defined for it), and returns the same type". What a table
// cannot say (MatMul's inner dims, Concat's equal-except-axis shapes, in-range Gather indices,
// Reshape targets, recurrent weight shapes...) is a named special case (`.special("matmul")`),
// implemented in special_cases_*.cc; the spec then still lists the operands and attributes so the
// table stays the op's complete description.
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"

namespace rnnc::conformance {

// A closed interval of attribute or element values.
struct Interval {
  double lo;
  double hi;
};

enum class AttrKind { kInt, kFloat, kString, kInts, kFloats, kStrings, kGraph, kType };

struct AttrSpec {
  std::string name;
  AttrKind kind = AttrKind::kInt;
  std::string onnx_default;  // the ONNX default, as the operator doc states it ("" if required)
  bool required = false;
  // Allowed values: numeric kinds pick an interval, then a value in it (integers for int kinds);
  // string kinds pick one of `choices`. List kinds draw `min_length..max_length` elements.
  std::vector<Interval> ranges;
  std::vector<std::string> choices;
  int min_length = 1;
  int max_length = 1;
  // The value depends on shapes (axes, perm, pads, activations...): the op's special case sets it.
  bool by_special_case = false;
  int since_opset = 0;  // the attribute exists from this opset ...
  int until_opset = 0;  // ... up to this one (0: no limit)
};

// How an operand's element values are drawn.
enum class Distribution {
  kNormal,         // mean + stddev * N(0, 1) for floats; integers: uniform over [-16, 16] (clipped)
  kUniform,        // uniform over `ranges` (floats) or integers in them
  kBySpecialCase,  // the special case fills it (indices, shape tensors, ...)
};

enum class NonZero {
  kNo,
  kIntegerTypes,  // integer zero is an error (integer Div/Mod); float zero is defined (inf/NaN)
  kAll,
};

struct OperandSpec {
  std::string name;       // the ONNX operator doc's name: "X", "sequence_lens", "inputs"
  int index = 0;          // position among the node's inputs (outputs)
  bool variadic = false;  // this and any further positions, min_count..max_count of them
  int min_count = 1;
  int max_count = 1;
  bool optional = false;
  std::string type_var;  // operands naming one type variable share the element type
  int min_rank = 0;
  int max_rank = 4;
  bool rank_exceeds_axis = false;  // rank > `axis` (axis >= 0) or rank >= -axis (axis < 0)
  bool zero_dims = true;           // a dim may be 0 (an empty tensor is legal here)
  Distribution distribution = Distribution::kNormal;
  double mean = 0;
  double stddev = 1;
  std::vector<Interval> ranges;
  NonZero nonzero = NonZero::kNo;
  // The op defines its result for NaN, +-Inf, huge, tiny and -0 inputs here, so the generator
  // forces those boundary values into this operand.
  bool special_values = false;
  // The generator may pass this operand as an initializer (constant) instead of a graph input,
  // which the optimized path treats differently (constant folding, weight marshaling).
  bool may_be_constant = false;
  // Not a node input: a graph input the op's nested graphs use from the outer scope (If/Loop), or
  // an element of a sequence or optional input the special case builds in the model.
  bool captured = false;
  int since_opset = 0;
  int until_opset = 0;
};

struct TypeVar {
  std::string name;
  std::vector<DType> types;
  // Types the op gained at a later opset than some of those tested: type -> first opset.
  std::vector<std::pair<DType, int>> since;
};

enum class Broadcast {
  kNone,
  kMultidirectional,  // numpy: every input broadcasts to the common shape
  kUnidirectional,    // input 1 (and later) broadcast to input 0's shape, which is the result's
};

struct OpSpec {
  std::string op_type;
  std::vector<int> opsets;  // opsets to test at: smoke uses the first, full picks among them
  std::vector<TypeVar> type_vars;
  std::vector<AttrSpec> attributes;
  std::vector<OperandSpec> inputs;
  std::vector<OperandSpec> outputs;
  Broadcast broadcast = Broadcast::kNone;
  std::string special_case;  // name of the generator's special case ("" for none)
  // A tolerance multiplier for cross-engine comparisons (ops whose float results legitimately
  // differ more between correct implementations, e.g. long recurrences).
  double tolerance_scale = 1;
  std::string note;  // why the spec looks the way it does, where it is not obvious

  const TypeVar* find_type_var(const std::string& name) const;
  const AttrSpec* find_attr(const std::string& name) const;
  // The number of element type combinations: the product of the type variables' type counts.
  size_t type_combinations() const;
};

// Common type sets (the names rnnc's op registry uses).
extern const std::vector<DType> kFloatTypes;     // f16, bf16, f32, f64
extern const std::vector<DType> kSignedTypes;    // i8, i16, i32, i64
extern const std::vector<DType> kUnsignedTypes;  // u8, u16, u32, u64
extern const std::vector<DType> kNumericTypes;   // the three above
extern const std::vector<DType> kAllTypes;       // numeric, bool, string
extern const std::vector<DType> kAllButBFloat16;  // what ops removed before opset 13 took
extern const std::vector<DType> kMatrixTypes;    // floats, i32, i64, u32, u64
std::vector<DType> operator+(std::vector<DType> a, const std::vector<DType>& b);

// ---- building a spec --------------------------------------------------------------------------

// A fluent builder; the operand and attribute modifiers apply to the one added last.
class Op {
 public:
  Op(std::string op_type, int opset);
  Op& also_opsets(std::vector<int> opsets);  // more opsets for the full profile
  Op& types(const std::string& var, std::vector<DType> types);
  // `type` is in the op's type list only from `opset` on (the generator tests it there).
  Op& type_since(const std::string& var, DType type, int opset);
  Op& type_since(const std::string& var, const std::vector<DType>& types, int opset);

  // Attributes.
  Op& attr_int(const std::string& name, const std::string& onnx_default,
               std::vector<Interval> ranges);
  Op& attr_float(const std::string& name, const std::string& onnx_default,
                 std::vector<Interval> ranges);
  Op& attr_string(const std::string& name, const std::string& onnx_default,
                  std::vector<std::string> choices);
  // A list or shape-dependent attribute the special case sets.
  Op& attr_by_special(const std::string& name, AttrKind kind, const std::string& onnx_default);
  Op& required();
  Op& attr_since(int opset);
  Op& attr_until(int opset);

  // Operands.
  Op& in(const std::string& name, const std::string& type_var);
  Op& out(const std::string& name, const std::string& type_var);
  Op& optional();
  Op& variadic(int min_count, int max_count);
  Op& rank(int min_rank, int max_rank);
  Op& rank_exceeds_axis();
  Op& no_zero_dims();
  Op& normal(double mean, double stddev);
  Op& range(double lo, double hi);           // uniform over [lo, hi]
  Op& ranges(std::vector<Interval> ranges);  // uniform over the union
  Op& by_special();                          // values from the special case
  Op& nonzero(NonZero which = NonZero::kAll);
  Op& specials();
  Op& may_be_constant();
  Op& captured();
  Op& since(int opset);
  Op& until(int opset);

  // Whole-op properties.
  Op& broadcast(Broadcast kind);
  Op& special(const std::string& name);
  Op& tolerance_scale(double scale);
  Op& note(const std::string& text);

  operator OpSpec() const { return spec_; }  // NOLINT: the tables read better without a call

 private:
  OperandSpec& operand();
  AttrSpec& attribute();
  OpSpec spec_;
  enum class Last { kNone, kAttr, kInput, kOutput } last_ = Last::kNone;
};

// Every spec, in op name order. Each group file adds its ops.
const std::vector<OpSpec>& all_specs();
const OpSpec* find_spec(const std::string& op_type);

void add_recurrent_specs(std::vector<OpSpec>& specs);
void add_elementwise_specs(std::vector<OpSpec>& specs);
void add_nn_specs(std::vector<OpSpec>& specs);
void add_tensor_specs(std::vector<OpSpec>& specs);
void add_control_flow_specs(std::vector<OpSpec>& specs);
void add_quant_specs(std::vector<OpSpec>& specs);
void add_sequence_specs(std::vector<OpSpec>& specs);

}  // namespace rnnc::conformance
