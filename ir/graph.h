// The high-level dataflow graph: Model -> Graph -> Node / Value.
//
// A Value is a tensor edge with one producer (a node output, a graph input or an initializer) and
// any number of uses. Its TensorType carries what later stages plan with: the element type, a shape
// whose dims may be symbolic (dynamic axes), and quantization parameters set by quant/. A Graph
// owns its nodes (kept in topological order) and values. Nested graphs (If/Loop/Scan bodies) are
// owned by their node's attribute; a node inside them may use a Value of an enclosing graph
// directly (an outer-scope reference), exactly as ONNX scoping says.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/dim.h"
#include "ir/dtype.h"
#include "ir/tensor.h"

namespace rnnc {

class Graph;
class Node;

// Linear quantization of a tensor: real = scale * (q - zero_point).
struct QuantParams {
  enum class Granularity { kTensor, kAxis };  // kAxis: one (scale, zero point) per index of axis
  Granularity granularity = Granularity::kTensor;
  int axis = -1;
  int bits = 8;              // quantized width, 2..16; stored in the narrowest of 8/16 bits
  bool is_signed = true;
  bool symmetric = true;     // zero_point == 0 when symmetric
  bool dynamic = false;      // coefficients computed per run from the tensor itself
  std::vector<float> scales;         // empty when dynamic
  std::vector<int32_t> zero_points;  // empty when dynamic or symmetric

  std::string to_string() const;
};

// What kind of value an edge carries. Sequences and optionals (ONNX SequenceProto /
// OptionalProto) hold tensors of the type's dtype; the shape, when known, is the one every element
// has (ONNX sequence element types may leave it unknown). Passes and lowering handle tensors only:
// a node that reads or writes another kind stays a reference block.
enum class ValueKind : uint8_t {
  kTensor,
  kSequence,          // a list of tensors, possibly empty
  kOptionalTensor,    // a tensor or none
  kOptionalSequence,  // a sequence or none
};

struct TensorType {
  DType dtype = DType::kUndefined;  // of the tensor, or of each element of a sequence
  std::optional<Shape> shape;  // nullopt: rank unknown
  std::shared_ptr<const QuantParams> quant;
  ValueKind kind = ValueKind::kTensor;  // last, so {dtype, shape, quant} still builds a tensor

  int64_t rank() const { return shape ? static_cast<int64_t>(shape->size()) : -1; }
  bool is_tensor() const { return kind == ValueKind::kTensor; }
  // "f32[seq, batch, 128]", "i64[?rank]", with a quant suffix; "seq<f32[?rank]>",
  // "opt<f32[3]>", "opt<seq<i64[]>>" for the other kinds.
  std::string to_string() const;
  // The same type with kind kTensor: a sequence's or an optional's element type.
  TensorType element() const {
    TensorType out = *this;
    out.kind = ValueKind::kTensor;
    return out;
  }
};

struct Use {
  Node* node;
  int input_index;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  Graph* owner() const { return owner_; }
  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }

  bool is_graph_input() const { return is_graph_input_; }
  // Initializers and values folded to a constant carry their data here.
  bool is_constant() const { return constant_ != nullptr; }
  const std::shared_ptr<const Tensor>& constant() const { return constant_; }
  void set_constant(std::shared_ptr<const Tensor> data) { constant_ = std::move(data); }

  TensorType type;
  // For small int64 tensors (rank <= 1) whose elements are known as dims but not as numbers, e.g.
  // Shape(x) = [seq, batch, 40]: shape inference propagates them the way ONNX data propagation
  // does, so a ConstantOfShape/Reshape fed by a Shape->Gather->Concat chain gets a symbolic shape.
  std::optional<std::vector<Dim>> symbolic_value;

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  Graph* owner_ = nullptr;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  std::vector<Use> uses_;
  bool is_graph_input_ = false;
  std::shared_ptr<const Tensor> constant_;
};

// Node attributes whose names start with this are rnnc compiler annotations (analysis results such
// as fusion groups): printed and parsed with the IR text, never semantic, dropped by ONNX export.
constexpr const char* kAnnotationPrefix = "rnnc.";
// The annotations graph_opt writes for lowering (graph_opt/fusion_groups.h,
// graph_opt/eliminate_layout_ops.h say what they mean).
constexpr const char* kFusionGroupAnnotation = "rnnc.fusion_group";
constexpr const char* kFusionRootAnnotation = "rnnc.fusion_root";
constexpr const char* kLayoutOfAnnotation = "rnnc.layout_of";
// An elementwise node whose result lowering computes by IEEE rules, neither contracted nor
// reassociated with its neighbours (graph_opt/expand_quantization.cc: quantization written out
// must round as the operators do). Part of the kernel's cache key.
constexpr const char* kIeeeAnnotation = "rnnc.ieee";
// The layout a recurrent node reads or writes one of its tensors in ("x", "y", "y_h", ...):
// rnnc.<slot>_layout.
inline std::string slot_layout_annotation(const std::string& slot) {
  return std::string(kAnnotationPrefix) + slot + "_layout";
}

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kTensors,
                    kGraphs, kType };
  Kind kind = Kind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  TensorType tp;  // kType: a value type (ONNX TYPE_PROTO, e.g. Optional's 'type')

  static const char* kind_name(Kind kind);  // the ONNX spelling: FLOAT, INT, STRING, ...

  // An attribute of one kind holding `value`.
  static Attribute of_int(int64_t value);
  static Attribute of_float(float value);
  static Attribute of_string(std::string value);
  static Attribute of_ints(std::vector<int64_t> values);
  static Attribute of_floats(std::vector<float> values);
  static Attribute of_strings(std::vector<std::string> values);
  static Attribute of_graph(std::shared_ptr<Graph> graph);
  static Attribute of_type(TensorType type);
};

class Node {
 public:
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  // The opset version of this node's domain in the model (semantics differ across versions).
  int opset() const { return opset_; }
  // Re-declares the node at another opset of its domain: import normalizing a legacy form into
  // the form it has there (ir/legacy_opsets.h).
  void set_opset(int opset) { opset_ = opset; }
  Graph* owner() const { return owner_; }

  // Inputs and outputs; nullptr marks an omitted optional one (ONNX empty name).
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  void set_input(size_t i, Value* value);  // keeps use lists right
  void grow_inputs(size_t count) {          // omitted (nullptr) inputs up to `count`
    if (inputs_.size() < count) inputs_.resize(count, nullptr);
  }
  void trim_omitted_inputs() {              // drops trailing omitted inputs
    while (!inputs_.empty() && inputs_.back() == nullptr) inputs_.pop_back();
  }

  // Attributes, in name order.
  const std::map<std::string, Attribute>& attributes() const { return attributes_; }
  bool has_attr(const std::string& name) const { return attributes_.count(name) != 0; }
  const Attribute* find_attr(const std::string& name) const;
  void set_attr(const std::string& name, Attribute attribute);
  void remove_attr(const std::string& name) { attributes_.erase(name); }
  // Typed getters: the default when absent; kInvalidModel naming the node when the attribute has
  // another type.
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> fallback = {}) const;
  std::vector<std::string> attr_strings(const std::string& name,
                                        std::vector<std::string> fallback = {}) const;
  const Tensor* attr_tensor(const std::string& name) const;
  Graph* attr_graph(const std::string& name) const;
  // Nested graphs of this node (If branches, Loop/Scan bodies), in attribute name order.
  std::vector<Graph*> subgraphs() const;

  // "LSTM 'lstm_1' (opset 14)": how every error about this node starts.
  std::string describe() const;

 private:
  friend class Graph;
  std::string op_type_;
  std::string domain_;
  std::string name_;
  int opset_ = 0;
  Graph* owner_ = nullptr;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::map<std::string, Attribute> attributes_;
  const Attribute& typed_attr(const std::string& name, Attribute::Kind kind) const;
};

class Graph {
 public:
  explicit Graph(std::string name = "main", Graph* parent = nullptr)
      : name_(std::move(name)), parent_(parent) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  // The enclosing graph for a nested body; nullptr for the main graph.
  Graph* parent() const { return parent_; }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::list<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  // Constant values that are neither produced by a node nor graph inputs (inputs with an
  // initializer default are inputs: a caller may override them).
  std::vector<Value*> initializers() const;

  // Creates a value owned by this graph. Names must be unique within the graph (kInvalidModel).
  Value* add_value(const std::string& name, TensorType type = {});
  Value* add_input(const std::string& name, TensorType type);
  Value* add_initializer(const std::string& name, Tensor data);
  void add_output(Value* value);
  void set_outputs(std::vector<Value*> outputs) { outputs_ = std::move(outputs); }
  // Appends a node at the end (the caller keeps topological order); outputs are fresh values.
  Node* add_node(const std::string& op_type, const std::string& name,
                 const std::vector<Value*>& inputs, const std::vector<std::string>& output_names,
                 int opset, const std::string& domain = "");
  // Removes a node whose outputs are unused; its input uses (and those of nodes in its nested
  // graphs, which may point at outer values) are dropped.
  void remove_node(Node* node);
  // Removes an unused constant value that no node produces (an initializer).
  void remove_initializer(Value* value);
  // Drops output i of a node (it must be unused): the output becomes omitted (nullptr).
  void remove_node_output(Node* node, size_t i);
  // Gives an omitted output i of `node` a new value `name` (the node's output list grows as needed).
  Value* add_node_output(Node* node, size_t i, const std::string& name, TensorType type = {});
  // Turns a graph input into an initializer holding `data` (specialization of a fixed input).
  void convert_input_to_constant(Value* input, Tensor data);
  // Moves a node of a nested graph `from` (and its output values) into this graph, in front of
  // `before` (nullptr: at the end). Outputs whose names clash here are renamed. Used to inline
  // If branches; the node's inputs keep pointing where they did.
  Node* adopt_node(Graph& from, Node* node, Node* before);
  // Moves an initializer of `from` into this graph (renamed on a clash).
  Value* adopt_initializer(Graph& from, Value* value);
  // Rewires every use of `from` (here and in nested graphs), this graph's outputs and the
  // outputs of nested graphs that return `from` directly, to `to`.
  void replace_all_uses(Value* from, Value* to);

  // Renames a value of this graph (kInternal if the name is taken in scope).
  void rename_value(Value* value, const std::string& name);

  // Looks a name up in this graph, then in enclosing graphs (ONNX lexical scoping).
  Value* find_value(const std::string& name) const;
  Value* find_local_value(const std::string& name) const;

  // A fresh value name with the given prefix, unique in this graph.
  std::string unique_name(const std::string& prefix);

  // Passes that add nodes append them and then restore order with this.
  // Reorders nodes so every value is produced before it is used (a node that holds a nested
  // graph depends on the values its body captures). kInvalidModel naming a node on a cycle.
  void sort_topologically();

 private:
  std::string name_;
  Graph* parent_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> by_name_;
  int64_t name_counter_ = 0;
};

// Values a nested graph (and graphs nested in it) uses but does not define: its outer-scope
// references, in first-use order.
std::vector<Value*> captured_values(const Graph& graph);

struct Model {
  int64_t ir_version = 8;
  std::map<std::string, int64_t> opsets;  // domain ("" for ai.onnx) -> version
  std::string producer_name;
  std::string producer_version;
  std::string doc_string;
  std::map<std::string, std::string> metadata;  // ModelProto.metadata_props
  std::unique_ptr<Graph> graph;

  int64_t default_opset() const;
};

}  // namespace rnnc
