// The operator registry: for every op rnnc supports, its arity, the first opset it exists in, and
// its type and shape inference function. Import rejects ops that are not here (kUnsupported), so
// every later stage can rely on each node having inferred output types.
//
// Shape inference functions live with their op group in ir/shape_inference/*.cc, each group
// registering itself from register_all_schemas() in op_schema.cc.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace rnnc {

class InferenceContext {
 public:
  explicit InferenceContext(Node& node) : node_(node) {}

  Node& node() const { return node_; }
  size_t num_inputs() const { return node_.num_inputs(); }
  bool has_input(size_t i) const { return node_.input(i) != nullptr; }
  // The input's type; kInvalidModel naming the node if the input is missing.
  const TensorType& input_type(size_t i) const;
  // The input's shape; kInvalidModel if missing or of unknown rank.
  const Shape& input_shape(size_t i) const;
  // The input's data when it is a constant (initializer or folded), else nullptr.
  const Tensor* input_constant(size_t i) const;
  // The input's elements as dims: from constant data or from symbolic propagation (Shape chains).
  std::optional<std::vector<Dim>> input_dims_value(size_t i) const;

  bool has_output(size_t i) const { return node_.output(i) != nullptr; }
  void set_output(size_t i, DType dtype, Shape shape) const;
  void set_output_unknown_rank(size_t i, DType dtype) const;
  void set_output_dims_value(size_t i, std::vector<Dim> value) const;
  // Sets output i to `type`, its kind included (a sequence, an optional), merging as set_output.
  void set_output_type(size_t i, const TensorType& type) const;

  // Reports an invalid model: "<node description>: <message>".
  [[noreturn]] void fail(const std::string& message) const;
  // Fails "input <name> has element type T, expected one of A, B" when input `i` (-1: none) is
  // given, of a known element type and not one of `allowed`. `name` is the input's name in the
  // ONNX operator doc (X, W, y_scale, ...), not the value's name.
  void require_input_type(int i, const std::string& name, const std::vector<DType>& allowed) const;
  // Normalizes a possibly negative axis against rank, failing with the attribute name if out of
  // range: normalize_axis(-1, 3, "axis") == 2.
  int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what) const;

 private:
  Node& node_;
};

// Multidirectional (numpy) broadcasting of symbolic shapes. A dim of 1 takes the other side's;
// equal dims stay; a known dim against a symbolic one is taken to be the known size (the symbolic
// side must be 1 or equal at run time, which the evaluator checks); two different symbolic dims
// give an unknown dim. Two known dims that differ and are not 1 fail naming the node.
Shape broadcast_shapes(const Shape& a, const Shape& b, const InferenceContext& context);

// The type two values agree on (an If's branches, a Loop's iterations, a sequence's elements):
// a's kind and dtype; dims that differ become unknown, ranks that differ make the rank unknown.
TensorType join_types(const TensorType& a, const TensorType& b);

using ShapeInferenceFn = void (*)(InferenceContext&);

struct OpSchema {
  std::string op_type;
  int since_opset;  // first default-domain opset that has this op
  int min_inputs;
  int max_inputs;   // -1: variadic
  int min_outputs;
  int max_outputs;
  ShapeInferenceFn infer;
  // The op takes sequence and optional values (Identity, If, Loop, the sequence and optional
  // ops); every other op's inputs must be tensors, which infer_node checks.
  bool any_value_kind = false;
};

// The default-domain opsets every stage after import reads. Import also accepts opsets
// kMinImportOpset to kMinOpset - 1, rewriting their legacy forms into opset-kMinOpset ones
// (ir/legacy_opsets.h).
constexpr int kMinImportOpset = 1;
constexpr int kMinOpset = 7;
constexpr int kMaxOpset = 21;

// nullptr if rnnc does not support the op in that domain.
const OpSchema* find_op_schema(const std::string& domain, const std::string& op_type);
std::vector<const OpSchema*> all_op_schemas();

// Checks arity and runs the op's inference, merging with types already declared on the outputs
// (a declared dim fills an unknown inferred one; two known dims that differ are kInvalidModel).
void infer_node(Node& node);
// Runs infer_node over a graph in order, recursing into nested graphs.
void infer_graph(Graph& graph);

// Registration hooks of the op groups (ir/shape_inference/*.cc).
void register_elementwise_schemas(std::vector<OpSchema>& registry);
void register_recurrent_schemas(std::vector<OpSchema>& registry);
void register_nn_schemas(std::vector<OpSchema>& registry);
void register_tensor_schemas(std::vector<OpSchema>& registry);
void register_control_flow_schemas(std::vector<OpSchema>& registry);
void register_quant_schemas(std::vector<OpSchema>& registry);
void register_resize_schemas(std::vector<OpSchema>& registry);
void register_signal_schemas(std::vector<OpSchema>& registry);
void register_sequence_schemas(std::vector<OpSchema>& registry);

}  // namespace rnnc
