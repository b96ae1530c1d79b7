// One conformance test while it is being generated: the chosen opset, element types, attributes,
// operand shapes and values. The generic generator fills it from the op's spec; the op's special
// case (special_cases_*.cc) then fixes what the spec cannot express, and the generator builds the
// ONNX model and computes the expected outputs from it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tests/conformance/spec.h"

namespace rnnc::conformance {

enum class Profile { kSmoke, kFull };
const char* profile_name(Profile profile);

// A small, portable PRNG front end (the standard distributions differ between library
// implementations; these do not, so a seed gives the same suite everywhere).
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  int64_t uniform_int(int64_t lo, int64_t hi);  // inclusive
  double uniform(double lo, double hi);         // [lo, hi)
  double normal();
  bool chance(double p);
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<size_t>(uniform_int(0, static_cast<int64_t>(items.size()) - 1))];
  }
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) {
      std::swap(items[i - 1],
                items[static_cast<size_t>(uniform_int(0, static_cast<int64_t>(i) - 1))]);
    }
  }

 private:
  uint64_t state_[4];
};

// The boundary classes the generator forces and the coverage report counts.
enum class Boundary {
  kDim1,      // some dim is 1 (broadcasting, degenerate axes)
  kDim0,      // some dim is 0 (empty tensors), where the op allows it
  kDimLarge,  // some dim is >= kLargeDim
  kRangeLo,   // an element equals the low end of its value range
  kRangeHi,   // ... the high end
  kZero,
  kNegZero,
  kHuge,  // floats: near the largest finite value; integers: the type's extremes
  kTiny,  // floats: subnormal or smallest normal; integers: +-1
  kNaN,
  kInf,
};
constexpr int kBoundaryCount = 11;
const char* boundary_name(Boundary boundary);
constexpr int64_t kLargeDim = 32;

struct OperandDraft {
  const OperandSpec* spec = nullptr;
  bool present = true;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> shape;
  Tensor data;                  // defined once filled
  bool constant = false;        // an initializer rather than a graph input
  bool constant_fixed = false;  // the special case decided `constant`; keep it
  bool values_fixed = false;    // the special case chose the values (set_data): no boundary forcing
  std::string name;             // the value name in the model
};

class Draft {
 public:
  Draft(const OpSpec& spec, Profile profile, uint64_t operand_seed, uint64_t attribute_seed);

  const OpSpec& spec;
  const Profile profile;
  int opset = 0;
  std::map<std::string, DType> types;  // type variable -> element type
  std::map<std::string, Attribute> attrs;
  std::vector<OperandDraft> inputs;   // one per input position (variadic expanded)
  std::vector<OperandDraft> outputs;  // one per output position; only `present` and name matter
  std::set<std::string> tags;         // features of this test ("direction=reverse", ...)
  std::optional<Boundary> forced;     // the boundary class this test must try to hit
  // The primary operand's rank chosen by the coverage planner and its drawn shape (with the forced
  // dim boundary applied); special cases that build shapes themselves start from these.
  int primary_rank = 0;
  std::vector<int64_t> primary_shape;
  // Operand randomness (shapes, values, optional operands) and attribute randomness. In the smoke
  // profile attr_rng restarts from one seed per op for every test, so attribute choices are one
  // fixed instance (a function of the shapes at most); in the full profile they vary per test.
  Rng rng;
  Rng attr_rng;
  // Called with the node after it is created and before inference: If/Loop build their bodies;
  // the sequence ops add the nodes that build a sequence or optional input from graph inputs and,
  // by adding graph outputs themselves, turn a sequence or optional result into tensors (when it
  // adds none, the node's outputs are the graph outputs).
  std::function<void(Graph& graph, Node& node)> finish_node;

  // Attributes.
  bool has_attr(const std::string& name) const { return attrs.count(name) != 0; }
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  void set_int(const std::string& name, int64_t value);
  void set_float(const std::string& name, float value);
  void set_string(const std::string& name, const std::string& value);
  void set_ints(const std::string& name, std::vector<int64_t> values);
  void set_floats(const std::string& name, std::vector<float> values);
  void set_strings(const std::string& name, std::vector<std::string> values);
  void set_tensor(const std::string& name, Tensor value);
  void erase_attr(const std::string& name) { attrs.erase(name); }
  // Whether the spec's attribute exists at this test's opset.
  bool attr_exists(const std::string& name) const;

  // Operands by ONNX name ("W"); the first of a variadic group. nullptr when not at this opset.
  OperandDraft* input(const std::string& name);
  OperandDraft* output(const std::string& name);
  bool input_present(const std::string& name);
  // (Re)fills an input from its spec's distribution for its current shape and dtype, drawing
  // from `with` (default: the operand randomness, rng).
  void fill(OperandDraft& operand, Rng* with = nullptr);
  // Sets an input's data (and shape, dtype) explicitly.
  void set_data(OperandDraft& operand, Tensor data);

  // Random dims for a shape of `rank`, each in [lo, hi].
  std::vector<int64_t> random_dims(int64_t rank, int64_t lo = 1, int64_t hi = 4);
  // A boundary dim class forced on this test, if it is one of the dim classes.
  bool forced_is(Boundary boundary) const { return forced && *forced == boundary; }
};

// Tensors of a given type from doubles / int64s (converted with Tensor::set_double).
Tensor make_tensor(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values);
Tensor make_int64s(const std::vector<int64_t>& values, bool as_scalar = false);
Tensor make_int32s(const std::vector<int64_t>& values);

// Special cases: the named constraints the spec table cannot express. Each runs after the generic
// shapes are drawn and before values are filled; it may change anything in the draft.
using SpecialCase = void (*)(Draft& draft);
// nullptr if unknown (a spec naming an unknown special case is an internal error).
SpecialCase find_special_case(const std::string& name);
std::vector<std::string> special_case_names();

// Registration of the special cases by group (special_cases_<group>.cc).
void add_recurrent_special_cases(std::map<std::string, SpecialCase>& table);
void add_elementwise_special_cases(std::map<std::string, SpecialCase>& table);
void add_nn_special_cases(std::map<std::string, SpecialCase>& table);
void add_tensor_special_cases(std::map<std::string, SpecialCase>& table);
void add_control_flow_special_cases(std::map<std::string, SpecialCase>& table);
void add_quant_special_cases(std::map<std::string, SpecialCase>& table);
void add_sequence_special_cases(std::map<std::string, SpecialCase>& table);

}  // namespace rnnc::conformance
