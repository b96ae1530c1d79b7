// Elementwise and dense math ops: type/shape inference with symbolic dims, its error messages,
// symbolic value propagation through shape arithmetic, and the reference kernels on the cases the
// official ONNX node tests do not cover (opset-dependent semantics, broadcasting corners, integer
// rounding, NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"
#include "ir/reference/kernel.h"

namespace rnnc {
namespace {

Dim sym(const char* name) { return Dim::symbol(name); }

TensorType tensor_type(DType dtype, Shape shape) {
  TensorType type;
  type.dtype = dtype;
  type.shape = std::move(shape);
  return type;
}

// A one-graph model built by hand: inputs, constants, nodes whose output is named after the node
// and becomes a graph output; infer() runs shape inference, run() the reference evaluator.
class TestGraph {
 public:
  Value* input(const std::string& name, DType dtype, Shape shape) {
    return graph_.add_input(name, tensor_type(dtype, std::move(shape)));
  }
  Value* constant(const std::string& name, Tensor data) {
    return graph_.add_initializer(name, std::move(data));
  }
  Value* node(const std::string& op_type, const std::string& name,
              const std::vector<Value*>& inputs, int opset,
              const std::map<std::string, Attribute>& attributes = {}) {
    Node* node = graph_.add_node(op_type, name, inputs, {name}, opset);
    for (const auto& [attr_name, attribute] : attributes) node->set_attr(attr_name, attribute);
    graph_.add_output(node->output(0));
    return node->output(0);
  }
  void infer() { infer_graph(graph_); }
  // Infers, then evaluates; returns the last node's output.
  Tensor run(const std::map<std::string, Tensor>& inputs = {}) {
    infer();
    return evaluate(graph_, inputs).back();
  }

 private:
  Graph graph_;
};

// The message of the rnnc::Error `action` raises, checking its kind.
std::string error_of(const std::function<void()>& action, ErrorKind kind) {
  try {
    action();
  } catch (const Error& e) {
    EXPECT_EQ(error_kind_name(e.kind()), std::string(error_kind_name(kind))) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error raised";
  return "";
}

std::string type_text(const Value* value) { return value->type.to_string(); }

template <typename T>
std::vector<T> values_of(const Tensor& tensor) {
  const T* data = tensor.data<T>();
  return std::vector<T>(data, data + tensor.numel());
}

std::string dims_text(const Value* value) {
  if (!value->symbolic_value) return "none";
  return shape_to_string(*value->symbolic_value);
}

Tensor f32(std::vector<int64_t> shape, std::vector<float> values) {
  return Tensor::from_vector<float>(std::move(shape), values);
}

Tensor i64(std::vector<int64_t> shape, std::vector<int64_t> values) {
  return Tensor::from_vector<int64_t>(std::move(shape), values);
}

void expect_near_all(const Tensor& actual, const std::vector<float>& expected, float tolerance) {
  ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual.get_double(static_cast<int64_t>(i)), expected[i], tolerance) << "at " << i;
  }
}

// ---- shape inference ---------------------------------------------------------------------------

TEST(ElementwiseInference, MatMulKeepsSymbolicBatchDims) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), sym("batch"), 40});
  Value* w = g.input("w", DType::kFloat32, {40, 512});
  Value* y = g.node("MatMul", "mm", {x, w}, 13);
  g.infer();
  EXPECT_EQ(type_text(y), "f32[seq, batch, 512]");
}

TEST(ElementwiseInference, MatMulDropsTheAxisAddedToVectors) {
  TestGraph g;
  Value* v = g.input("v", DType::kFloat32, {40});
  Value* batched = g.input("batched", DType::kFloat32, {sym("seq"), 40, 8});
  Value* row_times = g.node("MatMul", "row", {v, batched}, 13);
  Value* times_column =
      g.node("MatMul", "column", {batched, g.input("c", DType::kFloat32, {8})}, 13);
  Value* dot = g.node("MatMul", "dot", {v, v}, 13);
  g.infer();
  EXPECT_EQ(type_text(row_times), "f32[seq, 8]");
  EXPECT_EQ(type_text(times_column), "f32[seq, 40]");
  EXPECT_EQ(type_text(dot), "f32[]");
}

TEST(ElementwiseInference, MatMulBroadcastsBatchDims) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {2, 1, sym("seq"), 4});
  Value* b = g.input("b", DType::kFloat32, {3, 4, 5});
  Value* y = g.node("MatMul", "mm", {a, b}, 13);
  g.infer();
  EXPECT_EQ(type_text(y), "f32[2, 3, seq, 5]");
}

TEST(ElementwiseInference, MatMulInnerDimensionMismatchNamesBothShapes) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {sym("seq"), 40});
  Value* b = g.input("b", DType::kFloat32, {64, 8});
  g.node("MatMul", "mm", {a, b}, 13);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "MatMul 'mm' (opset 13): inner dimensions differ: A is [seq, 40], B is [64, 8]");
}

TEST(ElementwiseInference, MatMulBatchMismatchNamesBothShapes) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {2, 3, 4});
  Value* b = g.input("b", DType::kFloat32, {5, 4, 6});
  g.node("MatMul", "mm", {a, b}, 9);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "MatMul 'mm' (opset 9): batch dimensions cannot be broadcast: A is [2, 3, 4], B is "
            "[5, 4, 6]");
}

TEST(ElementwiseInference, GemmTransposesAndBroadcastsC) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {sym("batch"), 40});
  Value* b = g.input("b", DType::kFloat32, {512, 40});
  Value* c = g.input("c", DType::kFloat32, {512});
  Value* y = g.node("Gemm", "fc", {a, b, c}, 13, {{"transB", Attribute::of_int(1)}});
  Value* at = g.input("at", DType::kFloat32, {40, sym("batch")});
  Value* y_no_c =
      g.node("Gemm", "fc2", {at, b}, 11, {{"transA", Attribute::of_int(1)}, {"transB", Attribute::of_int(1)}});
  g.infer();
  EXPECT_EQ(type_text(y), "f32[batch, 512]");
  EXPECT_EQ(type_text(y_no_c), "f32[batch, 512]");
}

TEST(ElementwiseInference, GemmRejectsCThatDoesNotBroadcastToTheResult) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {sym("batch"), 40});
  Value* b = g.input("b", DType::kFloat32, {40, 512});
  Value* c = g.input("c", DType::kFloat32, {3});
  g.node("Gemm", "fc", {a, b, c}, 13);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Gemm 'fc' (opset 13): input 2 'C' [3] cannot be broadcast to the result [batch, 512]");
}

TEST(ElementwiseInference, GemmInnerDimensionMismatchShowsTransposeFlags) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {4, 3});
  Value* b = g.input("b", DType::kFloat32, {4, 5});
  g.node("Gemm", "fc", {a, b}, 13, {{"transA", Attribute::of_int(0)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Gemm 'fc' (opset 13): inner dimensions differ: A is [4, 3] (transA = 0), B is [4, 5] "
            "(transB = 0)");
}

TEST(ElementwiseInference, GemmRequiresCBeforeOpset11) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {2, 3});
  Value* b = g.input("b", DType::kFloat32, {3, 4});
  g.node("Gemm", "fc", {a, b}, 9);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Gemm 'fc' (opset 9): input 2 'C' is required before opset 11");
}

TEST(ElementwiseInference, BroadcastKeepsSymbolicDims) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {sym("seq"), 1, 512});
  Value* b = g.input("b", DType::kFloat32, {sym("batch"), 512});
  Value* bias = g.input("bias", DType::kFloat32, {512});
  Value* sum = g.node("Add", "add", {a, b}, 14);
  Value* total = g.node("Sum", "sum", {a, b, bias}, 13);
  Value* less = g.node("Less", "less", {a, bias}, 13);
  g.infer();
  EXPECT_EQ(type_text(sum), "f32[seq, batch, 512]");
  EXPECT_EQ(type_text(total), "f32[seq, batch, 512]");
  EXPECT_EQ(type_text(less), "bool[seq, 1, 512]");
}

TEST(ElementwiseInference, BroadcastConflictNamesTheInputs) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {sym("seq"), 3});
  Value* b = g.input("b", DType::kFloat32, {4});
  g.node("Mul", "scale", {a, b}, 14);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Mul 'scale' (opset 14): input 1 'b' [4] cannot be broadcast with input 0 'a' [seq, 3] "
            "(output axis 1)");
}

TEST(ElementwiseInference, VariadicConflictNamesTheLateInput) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {4, 1});
  Value* b = g.input("b", DType::kFloat32, {3});
  Value* c = g.input("c", DType::kFloat32, {2, 1});
  g.node("Max", "max", {a, b, c}, 13);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Max 'max' (opset 13): input 2 'c' [2, 1] cannot be broadcast with the broadcast of "
            "inputs 0..1 [4, 3] (output axis 0)");
}

TEST(ElementwiseInference, MismatchedElementTypesNameBothTypes) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {3});
  Value* b = g.input("b", DType::kInt64, {3});
  g.node("Add", "add", {a, b}, 14);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Add 'add' (opset 14): input 1 'b' is int64 but input 0 'a' is float; they must have "
            "the same element type");
}

TEST(ElementwiseInference, TypeConstraintListsTheAllowedTypes) {
  TestGraph g;
  Value* x = g.input("x", DType::kInt64, {3});
  g.node("Sqrt", "root", {x}, 13);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Sqrt 'root' (opset 13): input 0 'x' has element type int64, expected one of: float, "
            "float16, double, bfloat16");
}

TEST(ElementwiseInference, WhereBroadcastsAllThreeInputs) {
  TestGraph g;
  Value* condition = g.input("condition", DType::kBool, {sym("seq"), 1});
  Value* x = g.input("x", DType::kInt64, {sym("batch")});
  Value* y = g.input("y", DType::kInt64, {});
  Value* out = g.node("Where", "where", {condition, x, y}, 16);
  g.infer();
  EXPECT_EQ(type_text(out), "i64[seq, batch]");
}

TEST(ElementwiseInference, UnknownRankPassesThrough) {
  TestGraph g;
  TensorType unranked;
  unranked.dtype = DType::kFloat32;
  Value* x = g.input("x", DType::kFloat32, {3});
  Value* free = g.input("free", DType::kFloat32, {});
  free->type = unranked;
  Value* y = g.node("Add", "add", {x, free}, 14);
  Value* z = g.node("Equal", "eq", {free, free}, 13);
  g.infer();
  EXPECT_EQ(y->type.dtype, DType::kFloat32);
  EXPECT_FALSE(y->type.shape.has_value());
  EXPECT_EQ(z->type.dtype, DType::kBool);
}

TEST(ElementwiseInference, SoftmaxAxisMustExist) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), 10});
  g.node("Softmax", "softmax", {x}, 13, {{"axis", Attribute::of_int(2)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Softmax 'softmax' (opset 13): attribute 'axis' = 2 is out of range for rank 2 "
            "(valid: [-2, 1])");
}

TEST(ElementwiseInference, ClipBoundsAreAttributesBeforeOpset11) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {3});
  Value* lo = g.constant("lo", Tensor::scalar<float>(0));
  g.node("Clip", "clip", {x, lo}, 10);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Clip 'clip' (opset 10): has 2 inputs, but before opset 11 Clip takes one input and "
            "its bounds as attributes 'min' and 'max'");
}

TEST(ElementwiseInference, ClipBoundsMustBeScalars) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {3});
  Value* hi = g.constant("hi", f32({2}, {1, 2}));
  g.node("Clip", "clip", {x, nullptr, hi}, 13);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Clip 'clip' (opset 13): input 2 'hi' has shape [2], must be a scalar");
}

TEST(ElementwiseInference, FloatModNeedsFmod) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {3});
  g.node("Mod", "mod", {a, a}, 13);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Mod 'mod' (opset 13): attribute 'fmod' = 0 (integer mod) with element type float: "
            "floating-point Mod requires fmod = 1");
}

TEST(ElementwiseInference, PowExponentTypeIsFreeFromOpset12) {
  TestGraph g;
  Value* base = g.input("base", DType::kFloat32, {sym("seq")});
  Value* exponent = g.input("exponent", DType::kInt64, {1});
  Value* y = g.node("Pow", "pow", {base, exponent}, 12);
  g.infer();
  EXPECT_EQ(type_text(y), "f32[seq]");

  TestGraph old;
  base = old.input("base", DType::kFloat32, {3});
  exponent = old.input("exponent", DType::kFloat64, {1});
  old.node("Pow", "pow", {base, exponent}, 11);
  EXPECT_EQ(error_of([&] { old.infer(); }, ErrorKind::kInvalidModel),
            "Pow 'pow' (opset 11): input 1 'exponent' is double but input 0 'base' is float; "
            "they must have the same element type");
}

TEST(ElementwiseInference, PReluSlopeBroadcastsOneWay) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("batch"), 3, 4});
  Value* slope = g.input("slope", DType::kFloat32, {3});
  g.node("PRelu", "prelu", {x, slope}, 16);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "PRelu 'prelu' (opset 16): input 1 'slope' [3] cannot be broadcast to X [batch, 3, 4] "
            "(slope broadcasts one way, to X's shape)");
}

TEST(ElementwiseInference, OpsDoNotExistBeforeTheirFirstOpset) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {3});
  g.node("HardSwish", "hs", {x}, 13);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "HardSwish 'hs' (opset 13): HardSwish does not exist before opset 14");
}

// ---- symbolic values of shape tensors ----------------------------------------------------------

// A stand-in for Shape(x) = [seq, batch, 40]: an int64 value whose elements are known as dims.
Value* shape_of_input(TestGraph& g) {
  Value* shape = g.input("shape", DType::kInt64, {3});
  shape->symbolic_value = std::vector<Dim>{sym("seq"), sym("batch"), 40};
  return shape;
}

TEST(ElementwiseDimsValue, MulAndExactDivOfAShape) {
  TestGraph g;
  Value* shape = shape_of_input(g);
  Value* doubled = g.node("Mul", "mul", {shape, g.constant("two", i64({}, {2}))}, 14);
  Value* halved = g.node("Div", "div", {doubled, g.constant("two_1d", i64({1}, {2}))}, 14);
  Value* quartered = g.node("Div", "div4", {shape, g.constant("four", i64({}, {4}))}, 14);
  g.infer();
  EXPECT_EQ(dims_text(doubled), "[2*seq, 2*batch, 80]");
  EXPECT_EQ(dims_text(halved), "[seq, batch, 40]");
  // seq / 4 is not exact: unknown; 40 / 4 is.
  EXPECT_EQ(dims_text(quartered), "[?, ?, 10]");
}

TEST(ElementwiseDimsValue, AddSubElementwiseAndFromConstants) {
  TestGraph g;
  Value* shape = shape_of_input(g);
  Value* plus = g.node("Add", "add", {shape, g.constant("offsets", i64({3}, {1, 0, -40}))}, 14);
  Value* minus = g.node("Sub", "sub", {plus, g.constant("one", i64({}, {1}))}, 14);
  Value* known = g.node("Div", "div",
                        {g.constant("a", i64({2}, {-7, 9})), g.constant("b", i64({1}, {2}))}, 14);
  Value* largest = g.node("Max", "max", {shape, g.constant("floor", i64({3}, {1, 1, 64}))}, 13);
  g.infer();
  EXPECT_EQ(dims_text(plus), "[seq + 1, batch, 0]");
  EXPECT_EQ(dims_text(minus), "[seq, batch - 1, -1]");
  EXPECT_EQ(dims_text(known), "[-3, 4]");  // truncating, as the Div kernel
  EXPECT_EQ(dims_text(largest), "[?, ?, 64]");
}

TEST(ElementwiseDimsValue, OnlyInt64ShapeTensorsPropagate) {
  TestGraph g;
  Value* shape = shape_of_input(g);
  Value* unknown = g.input("unknown", DType::kInt64, {3});
  Value* floats = g.node(
      "Mul", "fmul", {g.constant("a", f32({2}, {1, 2})), g.constant("b", f32({2}, {3, 4}))}, 14);
  Value* mixed = g.node("Mul", "mul", {shape, unknown}, 14);
  g.infer();
  EXPECT_EQ(dims_text(floats), "none");
  EXPECT_EQ(dims_text(mixed), "none");
}

// ---- kernels -----------------------------------------------------------------------------------

// Softmax over [2, 2, 3] with axis = 1: before opset 13 each [2*3] block of a batch item is one
// distribution; from opset 13 each pair along axis 1 is.
TEST(ElementwiseKernel, SoftmaxCoercesTo2DBeforeOpset13AndUsesOneAxisFrom13) {
  std::vector<float> x(12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  std::map<std::string, Tensor> inputs = {{"x", f32({2, 2, 3}, x)}};
  for (int opset : {11, 13}) {
    TestGraph g;
    Value* in = g.input("x", DType::kFloat32, {2, 2, 3});
    g.node("Softmax", "softmax", {in}, opset, {{"axis", Attribute::of_int(1)}});
    Tensor y = g.run(inputs);
    std::vector<float> expected(12);
    for (int b = 0; b < 2; ++b) {
      for (int j = 0; j < 6; ++j) {
        int i = b * 6 + j;
        if (opset == 11) {
          double sum = 0;
          for (int k = 0; k < 6; ++k) sum += std::exp(static_cast<double>(k));
          expected[i] = static_cast<float>(std::exp(static_cast<double>(j)) / sum);
        } else {
          // The pair (x, x + 3) along axis 1: sigmoid(-3) and sigmoid(3).
          expected[i] = static_cast<float>(1 / (1 + std::exp(j < 3 ? 3.0 : -3.0)));
        }
      }
    }
    SCOPED_TRACE(opset);
    expect_near_all(y, expected, 1e-6f);
  }
}

TEST(ElementwiseKernel, LogSoftmaxDefaultAxisChangesAtOpset13) {
  // x = [[[0, 1], [2, 2]]]. Opset 11, default axis 1: one distribution over all four elements.
  // Opset 13, default axis -1: the rows [0, 1] and [2, 2].
  std::map<std::string, Tensor> inputs = {{"x", f32({1, 2, 2}, {0, 1, 2, 2})}};
  TestGraph old;
  old.node("LogSoftmax", "ls", {old.input("x", DType::kFloat32, {1, 2, 2})}, 11);
  TestGraph now;
  now.node("LogSoftmax", "ls", {now.input("x", DType::kFloat32, {1, 2, 2})}, 13);
  float all = static_cast<float>(std::log(1 + std::exp(1.0) + 2 * std::exp(2.0)));
  float row = static_cast<float>(std::log(1 + std::exp(1.0)));
  float log2 = std::log(2.0f);
  expect_near_all(old.run(inputs), {-all, 1 - all, 2 - all, 2 - all}, 1e-6f);
  expect_near_all(now.run(inputs), {-row, 1 - row, -log2, -log2}, 1e-6f);
}

TEST(ElementwiseKernel, SoftmaxOfAllMinusInfinityIsNaN) {
  float inf = std::numeric_limits<float>::infinity();
  TestGraph g;
  g.node("Softmax", "softmax", {g.input("x", DType::kFloat32, {2})}, 13);
  Tensor y = g.run({{"x", f32({2}, {-inf, -inf})}});
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
}

TEST(ElementwiseKernel, GemmBroadcastsCFromAVectorAndAScalar) {
  // A = [[1, 2, 3], [4, 5, 6]], B = [[1, 0], [0, 1], [1, 1]]: A * B = [[4, 5], [10, 11]].
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  std::map<std::string, Attribute> scaled = {{"alpha", Attribute::of_float(2)}, {"beta", Attribute::of_float(0.5f)}};
  TestGraph vector_c;
  vector_c.node("Gemm", "fc",
                {vector_c.constant("a", a), vector_c.constant("b", b),
                 vector_c.constant("c", f32({2}, {10, 20}))},
                13, scaled);
  expect_near_all(vector_c.run(), {8 + 5, 10 + 10, 20 + 5, 22 + 10}, 0);
  TestGraph scalar_c;
  scalar_c.node("Gemm", "fc",
                {scalar_c.constant("a", a), scalar_c.constant("b", b),
                 scalar_c.constant("c", f32({}, {100}))},
                13, scaled);
  expect_near_all(scalar_c.run(), {58, 60, 70, 72}, 0);
  TestGraph column_c;
  column_c.node("Gemm", "fc",
                {column_c.constant("a", a), column_c.constant("b", b),
                 column_c.constant("c", f32({2, 1}, {1, 2}))},
                13);
  expect_near_all(column_c.run(), {5, 6, 12, 13}, 0);
}

TEST(ElementwiseKernel, GemmTransposesBothOperands) {
  // A' = [[1, 2], [3, 4]] given as its transpose; B' = [[1, 1], [0, 1]] given as its transpose.
  TestGraph g;
  g.node("Gemm", "fc",
         {g.constant("a", f32({2, 2}, {1, 3, 2, 4})), g.constant("b", f32({2, 2}, {1, 0, 1, 1}))},
         13, {{"transA", Attribute::of_int(1)}, {"transB", Attribute::of_int(1)}});
  expect_near_all(g.run(), {1, 3, 3, 7}, 0);
}

TEST(ElementwiseKernel, MatMulWithVectorOperands) {
  Tensor m = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  TestGraph row;
  Value* y =
      row.node("MatMul", "mm", {row.constant("v", f32({3}, {1, 1, 1})), row.constant("m", m)}, 13);
  Tensor out = row.run();
  EXPECT_EQ(out.shape(), std::vector<int64_t>({2}));
  EXPECT_EQ(type_text(y), "f32[2]");
  expect_near_all(out, {9, 12}, 0);
  TestGraph column;
  column.node("MatMul", "mm", {column.constant("m", m), column.constant("v", f32({2}, {1, -1}))},
              13);
  out = column.run();
  EXPECT_EQ(out.shape(), std::vector<int64_t>({3}));
  expect_near_all(out, {-1, -1, -1}, 0);
}

TEST(ElementwiseKernel, MatMulBroadcastsBatchDims) {
  // A: [2, 1, 1, 2] = two row vectors; B: [3, 2, 1] = three column vectors -> [2, 3, 1, 1].
  TestGraph g;
  g.node("MatMul", "mm",
         {g.constant("a", f32({2, 1, 1, 2}, {1, 0, 0, 1})),
          g.constant("b", f32({3, 2, 1}, {1, 2, 3, 4, 5, 6}))},
         13);
  Tensor y = g.run();
  EXPECT_EQ(y.shape(), std::vector<int64_t>({2, 3, 1, 1}));
  expect_near_all(y, {1, 3, 5, 2, 4, 6}, 0);
}

TEST(ElementwiseKernel, MatMulAccumulatesFloat32InDouble) {
  // 1e8 + 1 - 1e8 is 0 in float32 arithmetic but 1 with a double accumulator.
  TestGraph g;
  g.node("MatMul", "mm",
         {g.constant("a", f32({1, 3}, {1e8f, 1, -1e8f})), g.constant("b", f32({3, 1}, {1, 1, 1}))},
         13);
  expect_near_all(g.run(), {1}, 0);
}

TEST(ElementwiseKernel, IntegerDivisionTruncatesTowardZero) {
  TestGraph g;
  g.node("Div", "div",
         {g.constant("a", i64({4}, {-7, 7, -7, 7})), g.constant("b", i64({4}, {2, -2, -2, 2}))},
         14);
  EXPECT_EQ(values_of<int64_t>(g.run()), std::vector<int64_t>({-3, -3, 3, 3}));
}

TEST(ElementwiseKernel, IntegerDivisionByZeroIsAnInputError) {
  TestGraph g;
  Value* a = g.input("a", DType::kInt32, {2});
  g.node("Div", "div", {a, g.constant("b", Tensor::from_vector<int32_t>({2}, {1, 0}))}, 14);
  EXPECT_EQ(error_of(
                [&] {
                  g.run({{"a", Tensor::from_vector<int32_t>({2}, {4, 4})}});
                },
                ErrorKind::kInvalidInput),
            "Div 'div' (opset 14): integer division by zero (input 1 'B' has a 0 element)");
}

TEST(ElementwiseKernel, ModSignFollowsDivisorOrDividendWithFmod) {
  Tensor a = i64({4}, {-7, 7, -7, 7});
  Tensor b = i64({4}, {2, -2, -2, 2});
  TestGraph mod;
  mod.node("Mod", "mod", {mod.constant("a", a), mod.constant("b", b)}, 13);
  EXPECT_EQ(values_of<int64_t>(mod.run()), std::vector<int64_t>({1, -1, -1, 1}));
  TestGraph fmod;
  fmod.node("Mod", "mod", {fmod.constant("a", a), fmod.constant("b", b)}, 13,
            {{"fmod", Attribute::of_int(1)}});
  EXPECT_EQ(values_of<int64_t>(fmod.run()), std::vector<int64_t>({-1, 1, -1, 1}));
}

TEST(ElementwiseKernel, ClipAttributesBeforeOpset11MatchInputsFrom11) {
  Tensor x = f32({5}, {-2, -0.5f, 0, 0.5f, 2});
  TestGraph old;
  old.node("Clip", "clip", {old.constant("x", x)}, 6 + 1,
           {{"min", Attribute::of_float(-1)}, {"max", Attribute::of_float(1)}});
  TestGraph now;
  now.node(
      "Clip", "clip",
      {now.constant("x", x), now.constant("lo", f32({}, {-1})), now.constant("hi", f32({}, {1}))},
      11);
  std::vector<float> expected = {-1, -0.5f, 0, 0.5f, 1};
  expect_near_all(old.run(), expected, 0);
  expect_near_all(now.run(), expected, 0);
  TestGraph only_max;  // min omitted: unbounded below
  only_max.node("Clip", "clip",
                {only_max.constant("x", x), nullptr, only_max.constant("hi", f32({}, {0}))}, 13);
  expect_near_all(only_max.run(), {-2, -0.5f, 0, 0, 0}, 0);
}

TEST(ElementwiseKernel, ClipWithMinAboveMaxGivesMax) {
  TestGraph g;
  g.node("Clip", "clip",
         {g.constant("x", f32({3}, {-5, 0, 5})), g.constant("lo", f32({}, {2})),
          g.constant("hi", f32({}, {1}))},
         13);
  expect_near_all(g.run(), {1, 1, 1}, 0);
}

TEST(ElementwiseKernel, ClipOnIntegersFromOpset12) {
  TestGraph g;
  g.node("Clip", "clip",
         {g.constant("x", Tensor::from_vector<int8_t>({3}, {-128, 0, 127})),
          g.constant("lo", Tensor::scalar<int8_t>(-10))},
         13);
  EXPECT_EQ(values_of<int8_t>(g.run()), std::vector<int8_t>({-10, 0, 127}));
}

TEST(ElementwiseKernel, NaNPropagatesThroughReluMaxAndClip) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = f32({2}, {nan, -1});
  TestGraph relu;
  relu.node("Relu", "relu", {relu.constant("x", x)}, 14);
  Tensor y = relu.run();
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_EQ(y.data<float>()[1], 0);
  TestGraph max;
  max.node("Max", "max", {max.constant("x", x), max.constant("one", f32({}, {1}))}, 13);
  y = max.run();
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_EQ(y.data<float>()[1], 1);
  TestGraph clip;
  clip.node("Clip", "clip", {clip.constant("x", x), clip.constant("lo", f32({}, {0}))}, 13);
  y = clip.run();
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_EQ(y.data<float>()[1], 0);
}

TEST(ElementwiseKernel, IntegerPowIsExact) {
  TestGraph g;
  g.node("Pow", "pow",
         {g.constant("base", i64({5}, {2, 3, 2, -1, 7})),
          g.constant("exponent", i64({5}, {62, 39, -1, -3, 0}))},
         15);
  int64_t three_39 = 1;
  for (int i = 0; i < 39; ++i) three_39 *= 3;
  EXPECT_EQ(values_of<int64_t>(g.run()),
            std::vector<int64_t>({int64_t{1} << 62, three_39, 0, -1, 1}));
}

TEST(ElementwiseKernel, IntegerBaseWithFloatExponentTruncates) {
  TestGraph g;
  g.node("Pow", "pow",
         {g.constant("base", Tensor::from_vector<int32_t>({3}, {2, 10, -8})),
          g.constant("exponent", f32({3}, {0.5f, -1, 1.0f / 3}))},
         15);
  // sqrt(2) = 1.41 -> 1; 10^-1 -> 0; (-8)^(1/3) is NaN in real pow -> 0.
  EXPECT_EQ(values_of<int32_t>(g.run()), std::vector<int32_t>({1, 0, 0}));
}

TEST(ElementwiseKernel, IntegerArithmeticWrapsAround) {
  TestGraph g;
  Value* a = g.constant("a", Tensor::from_vector<int8_t>({3}, {127, -128, 100}));
  Value* sum = g.node("Add", "add", {a, g.constant("one", Tensor::scalar<int8_t>(1))}, 14);
  g.node("Mul", "mul", {sum, g.constant("two", Tensor::scalar<int8_t>(2))}, 14);
  // 127 + 1 = -128, * 2 = 0; -127 * 2 = -254 = 2; 101 * 2 = 202 = -54.
  EXPECT_EQ(values_of<int8_t>(g.run()), std::vector<int8_t>({0, 2, -54}));
}

TEST(ElementwiseKernel, BitShiftByTheWidthOrMoreGivesZero) {
  TestGraph g;
  g.node("BitShift", "shift",
         {g.constant("x", Tensor::from_vector<uint8_t>({3}, {1, 1, 255})),
          g.constant("s", Tensor::from_vector<uint8_t>({3}, {7, 8, 200}))},
         11, {{"direction", Attribute::of_string("LEFT")}});
  EXPECT_EQ(values_of<uint8_t>(g.run()), std::vector<uint8_t>({128, 0, 0}));
}

TEST(ElementwiseKernel, Float16IsComputedInFloat32AndRoundedOnce) {
  // 2049 is not a float16 (spacing 2 above 2048): 2048 + 1 rounds to even, back to 2048.
  Tensor a(DType::kFloat16, {2});
  a.set_double(0, 2048);
  a.set_double(1, 0.5);
  Tensor b(DType::kFloat16, {2});
  b.set_double(0, 1);
  b.set_double(1, 0.25);
  TestGraph g;
  Value* y = g.node("Add", "add", {g.constant("a", a), g.constant("b", b)}, 14);
  Tensor out = g.run();
  EXPECT_EQ(out.dtype(), DType::kFloat16);
  EXPECT_EQ(type_text(y), "f16[2]");
  EXPECT_EQ(out.get_double(0), 2048);
  EXPECT_EQ(out.get_double(1), 0.75);
}

TEST(ElementwiseKernel, MeanOfBroadcastInputs) {
  TestGraph g;
  g.node("Mean", "mean",
         {g.constant("a", f32({2, 1}, {1, 2})), g.constant("b", f32({3}, {0, 3, 6})),
          g.constant("c", f32({}, {3}))},
         13);
  Tensor y = g.run();
  EXPECT_EQ(y.shape(), std::vector<int64_t>({2, 3}));
  expect_near_all(y, {4.f / 3, 7.f / 3, 10.f / 3, 5.f / 3, 8.f / 3, 11.f / 3}, 1e-6f);
}

TEST(ElementwiseKernel, RoundHalvesToEven) {
  TestGraph g;
  g.node("Round", "round", {g.constant("x", f32({5}, {0.5f, 1.5f, 2.5f, -2.5f, -0.4f}))}, 11);
  expect_near_all(g.run(), {0, 2, 2, -2, 0}, 0);
}

TEST(ElementwiseKernel, WhereSelectsStrings) {
  Tensor x(DType::kString, {2});
  x.strings() = {"a", "b"};
  Tensor y(DType::kString, {});
  y.strings() = {"-"};
  TestGraph g;
  g.node("Where", "where",
         {g.constant("c", Tensor::from_vector<bool>({2}, {true, false})), g.constant("x", x),
          g.constant("y", y)},
         16);
  Tensor out = g.run();
  EXPECT_EQ(out.strings(), std::vector<std::string>({"a", "-"}));
}

TEST(ElementwiseKernel, ActivationAttributesOverrideDefaults) {
  Tensor x = f32({3}, {-2, 0.5f, 3});
  TestGraph leaky;
  leaky.node("LeakyRelu", "leaky", {leaky.constant("x", x)}, 16, {{"alpha", Attribute::of_float(0.5f)}});
  expect_near_all(leaky.run(), {-1, 0.5f, 3}, 0);
  TestGraph hard;
  hard.node("HardSigmoid", "hard", {hard.constant("x", x)}, 6 + 1,
            {{"alpha", Attribute::of_float(0.25f)}, {"beta", Attribute::of_float(0.25f)}});
  expect_near_all(hard.run(), {0, 0.375f, 1}, 0);
  TestGraph thresholded;
  thresholded.node("ThresholdedRelu", "t", {thresholded.constant("x", x)}, 10,
                   {{"alpha", Attribute::of_float(0.5f)}});
  expect_near_all(thresholded.run(), {0, 0, 3}, 0);
}

TEST(ElementwiseKernel, IsInfHonoursItsDirectionAttributes) {
  float inf = std::numeric_limits<float>::infinity();
  TestGraph g;
  g.node("IsInf", "isinf", {g.constant("x", f32({3}, {-inf, inf, 1}))}, 10,
         {{"detect_positive", Attribute::of_int(0)}});
  EXPECT_EQ(values_of<bool>(g.run()), std::vector<bool>({true, false, false}));
}

TEST(ElementwiseKernel, ShrinkSaturatesIntegerResults) {
  // uint8 1 - bias 2 is below the type: 0, not a wrapped 255; int8 -5 + 0.5 truncates to -4.
  TestGraph unsigned_graph;
  unsigned_graph.node("Shrink", "s",
                      {unsigned_graph.constant("x", Tensor::from_vector<uint8_t>({2}, {1, 0}))}, 9,
                      {{"bias", Attribute::of_float(2)}});
  EXPECT_EQ(values_of<uint8_t>(unsigned_graph.run()), (std::vector<uint8_t>{0, 0}));
  TestGraph signed_graph;
  signed_graph.node("Shrink", "s",
                    {signed_graph.constant("x", Tensor::from_vector<int8_t>({2}, {-5, 1}))}, 9,
                    {{"bias", Attribute::of_float(0.5f)}, {"lambd", Attribute::of_float(2)}});
  EXPECT_EQ(values_of<int8_t>(signed_graph.run()), (std::vector<int8_t>{-4, 0}));
}

TEST(ElementwiseKernel, HardmaxMarksTheFirstMaximumOrNaN) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  TestGraph g;
  g.node("Hardmax", "h", {g.constant("x", f32({2, 3}, {1, 3, 3, 2, nan, nan}))}, 13, {});
  EXPECT_EQ(values_of<float>(g.run()), (std::vector<float>{0, 1, 0, 0, 1, 0}));
}

TEST(ElementwiseKernel, EinsumBatchedDiagonalAndImplicitOutput) {
  // "...ii->...i" takes each batch entry's diagonal; "ji" without "->" is the transpose ("ij").
  TestGraph diagonal;
  diagonal.node("Einsum", "e", {diagonal.constant("x", f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}))},
                12, {{"equation", Attribute::of_string("...ii->...i")}});
  EXPECT_EQ(values_of<float>(diagonal.run()), (std::vector<float>{1, 4, 5, 8}));
  TestGraph implicit;
  implicit.node("Einsum", "e", {implicit.constant("x", f32({2, 3}, {1, 2, 3, 4, 5, 6}))}, 12,
                {{"equation", Attribute::of_string("ji")}});
  EXPECT_EQ(values_of<float>(implicit.run()), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(ElementwiseErrors, EinsumOutputLetterMustComeFromAnInput) {
  TestGraph g;
  g.node("Einsum", "e",
         {g.constant("a", f32({2, 2}, {1, 2, 3, 4})), g.constant("b", f32({2, 2}, {1, 2, 3, 4}))},
         12, {{"equation", Attribute::of_string("ij,jk->il")}});
  EXPECT_EQ(
      error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
      "Einsum 'e' (opset 12): attribute 'equation' = 'ij,jk->il' has output letter 'l', which "
      "no input has");
}

TEST(ElementwiseErrors, EinsumEllipsesMustCoverEquallyManyDims) {
  TestGraph g;
  g.node("Einsum", "e",
         {g.constant("a", f32({1, 2, 2}, {1, 2, 3, 4})),
          g.constant("b", f32({1, 1, 2, 2}, {1, 2, 3, 4}))},
         12, {{"equation", Attribute::of_string("...ij,...jk->...ik")}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Einsum 'e' (opset 12): attribute 'equation' = '...ij,...jk->...ik' has '...' covering "
            "1 dims in one input and 2 in input 1 (every '...' must cover the same number)");
}

TEST(ElementwiseKernel, EveryRegisteredOpHasAKernel) {
  std::vector<OpSchema> schemas;
  register_elementwise_schemas(schemas);
  EXPECT_EQ(schemas.size(), 66u);
  for (const OpSchema& schema : schemas) {
    EXPECT_NE(find_kernel(schema.op_type), nullptr) << schema.op_type;
  }
}

}  // namespace
}  // namespace rnnc
