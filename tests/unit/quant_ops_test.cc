// Shape inference, error messages and reference-kernel numbers for the ONNX quantization ops
// (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
// ConvInteger, QLinearConv; docs/ops/quant.md): per-tensor and per-axis parameters, signed and
// unsigned types, saturation, round-half-to-even, broadcasting, and every error path by its
// message. Expected numbers are worked out by hand from the ONNX formulas (float32 quotients that
// are not exact were printed by a throwaway C++ program doing the same float32 division).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"
#include "tests/support/error_message.h"

namespace rnnc {
namespace {

Attribute integer(int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInt;
  attribute.i = value;
  return attribute;
}

Attribute ints(std::vector<int64_t> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInts;
  attribute.ints = std::move(values);
  return attribute;
}

Dim sym(const std::string& name) { return Dim::symbol(name); }

// A graph holding one node under test: its inputs are graph inputs or initializers, its outputs
// are the graph outputs. build() runs shape inference as import would.
class OneNodeGraph {
 public:
  Value* input(const std::string& name, DType dtype, Shape shape) {
    TensorType type;
    type.dtype = dtype;
    type.shape = std::move(shape);
    return graph_.add_input(name, type);
  }
  Value* constant(const std::string& name, Tensor data) {
    return graph_.add_initializer(name, std::move(data));
  }
  Node* node(const std::string& op_type, const std::string& name, int opset,
             const std::vector<Value*>& inputs, const std::map<std::string, Attribute>& attributes,
             std::vector<std::string> outputs = {"y"}) {
    node_ = graph_.add_node(op_type, name, inputs, outputs, opset);
    for (const auto& [key, attribute] : attributes) node_->set_attr(key, attribute);
    for (size_t i = 0; i < outputs.size(); ++i) graph_.add_output(node_->output(i));
    return node_;
  }
  void build() { infer_graph(graph_); }
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs = {}) {
    return evaluate(graph_, inputs);
  }
  const TensorType& output_type(size_t i) const { return node_->output(i)->type; }

 private:
  Graph graph_;
  Node* node_ = nullptr;
};

using testing::error_message;

std::vector<double> values(const Tensor& tensor) {
  std::vector<double> out;
  for (int64_t i = 0; i < tensor.numel(); ++i) out.push_back(tensor.get_double(i));
  return out;
}

template <typename T>
Tensor vec(std::vector<T> data) {
  int64_t n = static_cast<int64_t>(data.size());
  return Tensor::from_vector<T>({n}, data);
}

template <typename T>
Tensor scalar(T value) {
  return Tensor::scalar<T>(value);
}

Tensor half_scalar(double value) {
  Tensor tensor(DType::kFloat16, {});
  tensor.set_double(0, value);
  return tensor;
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Runs a one-node graph whose inputs are all constants, given in order.
std::vector<Tensor> run_constants(const std::string& op_type, int opset,
                                  const std::vector<Tensor>& inputs,
                                  const std::map<std::string, Attribute>& attributes = {},
                                  std::vector<std::string> outputs = {"y"}) {
  OneNodeGraph g;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(g.constant(cat("in", i), inputs[i]));
  }
  g.node(op_type, "q", opset, values, attributes, std::move(outputs));
  g.build();
  return g.run();
}

// ---- QuantizeLinear ----------------------------------------------------------------------------

TEST(QuantizeLinear, RoundsHalfToEvenBeforeAddingTheZeroPoint) {
  // x / 1 = 0.5, 1.5, 2.5, 3.5, -0.5, 254.5 round to 0, 2, 2, 4, -0, 254; a zero point of 1 is
  // added after rounding (0.5 -> 0 + 1, not round(1.5) = 2).
  Tensor x = vec<float>({0.5f, 1.5f, 2.5f, 3.5f, -0.5f, 254.5f});
  std::vector<Tensor> y =
      run_constants("QuantizeLinear", 13, {x, scalar(1.0f), scalar<uint8_t>(0)});
  EXPECT_EQ(y[0].dtype(), DType::kUInt8);
  EXPECT_EQ(values(y[0]), (std::vector<double>{0, 2, 2, 4, 0, 254}));
  y = run_constants("QuantizeLinear", 13, {x, scalar(1.0f), scalar<uint8_t>(1)});
  EXPECT_EQ(values(y[0]), (std::vector<double>{1, 3, 3, 5, 1, 255}));
}

TEST(QuantizeLinear, DividesByTheScaleFirst) {
  // 1 / 2 = 0.5 -> 0, 3 / 2 = 1.5 -> 2, -5 / 2 = -2.5 -> -2.
  std::vector<Tensor> y = run_constants("QuantizeLinear", 10,
                                        {vec<float>({1, 3, -5}), scalar(2.0f), scalar<int8_t>(0)});
  EXPECT_EQ(y[0].dtype(), DType::kInt8);
  EXPECT_EQ(values(y[0]), (std::vector<double>{0, 2, -2}));
}

TEST(QuantizeLinear, SaturatesUnsignedAndSigned) {
  Tensor x = vec<float>({300, -7, 127.5f, -128.5f, -200});
  std::vector<Tensor> u8 =
      run_constants("QuantizeLinear", 13, {x, scalar(1.0f), scalar<uint8_t>(0)});
  EXPECT_EQ(values(u8[0]), (std::vector<double>{255, 0, 128, 0, 0}));
  // int8 with zero point -3: 300 -> 297 -> 127; 127.5 -> 128 - 3 = 125; -128.5 -> -128 - 3 -> -128.
  std::vector<Tensor> i8 =
      run_constants("QuantizeLinear", 13, {x, scalar(1.0f), scalar<int8_t>(-3)});
  EXPECT_EQ(values(i8[0]), (std::vector<double>{127, -10, 125, -128, -128}));
}

TEST(QuantizeLinear, InfinitiesSaturateAndNaNGivesTheZeroPoint) {
  std::vector<Tensor> y = run_constants(
      "QuantizeLinear", 13, {vec<float>({kInf, -kInf, kNaN}), scalar(0.5f), scalar<uint8_t>(7)});
  EXPECT_EQ(values(y[0]), (std::vector<double>{255, 0, 7}));
}

TEST(QuantizeLinear, WithoutAZeroPointTheOutputIsUint8AtZero) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("n")});
  Value* scale = g.constant("scale", scalar(0.5f));
  g.node("QuantizeLinear", "q", 13, {x, scale}, {});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "u8[n]");
  std::vector<Tensor> y = g.run({{"x", vec<float>({-1, 0.75f, 100})}});
  EXPECT_EQ(values(y[0]), (std::vector<double>{0, 2, 200}));
}

TEST(QuantizeLinear, Int32InputDividesExactly) {
  // 7 / 2 = 3.5 -> 4, -7 / 2 -> -4, 5 / 2 = 2.5 -> 2.
  std::vector<Tensor> y = run_constants(
      "QuantizeLinear", 13, {vec<int32_t>({7, -7, 5}), scalar(2.0f), scalar<int8_t>(0)});
  EXPECT_EQ(values(y[0]), (std::vector<double>{4, -4, 2}));
}

TEST(QuantizeLinear, PerAxisAlongTheDefaultAxisOne) {
  // x [2, 3], scales and zero points per column: 2 / 2 = 1 + 10; 3 / 4 = 0.75 -> 1 - 10;
  // 5 / 2 = 2.5 -> 2 + 10; 6 / 4 = 1.5 -> 2 - 10.
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> y =
      run_constants("QuantizeLinear", 13, {x, vec<float>({1, 2, 4}), vec<int8_t>({0, 10, -10})});
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(y[0]), (std::vector<double>{1, 11, -9, 4, 12, -8}));
}

TEST(QuantizeLinear, PerAxisAlongANegativeAxis) {
  // axis -2 of [2, 3] is the rows: row 1 divides by 2 (2.5 -> 2) and adds 100.
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> y =
      run_constants("QuantizeLinear", 13, {x, vec<float>({1, 2}), vec<uint8_t>({0, 100})},
                    {{"axis", integer(-2)}});
  EXPECT_EQ(values(y[0]), (std::vector<double>{1, 2, 3, 102, 102, 103}));
}

TEST(QuantizeLinear, OneElementVectorIsPerTensor) {
  // A [1] scale with axis 1 of size 3 is one scale for the whole tensor (as ONNX Runtime reads it).
  Tensor x = Tensor::from_vector<float>({1, 3}, {2, 4, 6});
  std::vector<Tensor> y =
      run_constants("QuantizeLinear", 10, {x, vec<float>({2}), vec<uint8_t>({1})});
  EXPECT_EQ(values(y[0]), (std::vector<double>{2, 3, 4}));
}

TEST(QuantizeLinear, Opset21OutputDtypeNamesTheTypeWithoutAZeroPoint) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {3});
  Value* scale = g.constant("scale", scalar(1.0f));
  g.node("QuantizeLinear", "q", 21, {x, scale},
         {{"output_dtype", integer(static_cast<int64_t>(DType::kInt16))}});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "i16[3]");
  std::vector<Tensor> y = g.run({{"x", vec<float>({40000, -2.5f, -40000})}});
  EXPECT_EQ(values(y[0]), (std::vector<double>{32767, -2, -32768}));
}

TEST(QuantizeLinear, Opset19Float16InputAndScale) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat16, {2});
  Value* scale = g.constant("scale", half_scalar(0.5));
  g.node("QuantizeLinear", "q", 19, {x, scale}, {});
  g.build();
  Tensor input(DType::kFloat16, {2});
  input.set_double(0, 1.25);  // 2.5 -> 2
  input.set_double(1, -3.0);  // -6 -> 0 (uint8)
  std::vector<Tensor> y = g.run({{"x", input}});
  EXPECT_EQ(values(y[0]), (std::vector<double>{2, 0}));
}

// ---- DequantizeLinear --------------------------------------------------------------------------

TEST(DequantizeLinear, PerTensorUint8) {
  std::vector<Tensor> y = run_constants(
      "DequantizeLinear", 10, {vec<uint8_t>({0, 128, 255}), scalar(0.5f), scalar<uint8_t>(128)});
  EXPECT_EQ(y[0].dtype(), DType::kFloat32);
  EXPECT_EQ(values(y[0]), (std::vector<double>{-64, 0, 63.5}));
}

TEST(DequantizeLinear, PerAxisInt8AlongAxisZero) {
  Tensor x = Tensor::from_vector<int8_t>({2, 2}, {-128, 127, 0, 5});
  std::vector<Tensor> y =
      run_constants("DequantizeLinear", 13, {x, vec<float>({2, 0.25f}), vec<int8_t>({0, 1})},
                    {{"axis", integer(0)}});
  EXPECT_EQ(values(y[0]), (std::vector<double>{-256, 254, -0.25, 1}));
}

TEST(DequantizeLinear, Int32WithoutAZeroPoint) {
  std::vector<Tensor> y =
      run_constants("DequantizeLinear", 13, {vec<int32_t>({1000000, -3}), scalar(0.5f)});
  EXPECT_EQ(values(y[0]), (std::vector<double>{500000, -1.5}));
}

TEST(DequantizeLinear, Opset19Float16ScaleGivesFloat16) {
  std::vector<Tensor> y = run_constants(
      "DequantizeLinear", 19, {vec<int8_t>({4, -3}), half_scalar(0.5), scalar<int8_t>(0)});
  EXPECT_EQ(y[0].dtype(), DType::kFloat16);
  EXPECT_EQ(values(y[0]), (std::vector<double>{2, -1.5}));
}

TEST(DequantizeLinear, RoundTripsQuantizeLinearPerAxis) {
  // Quantize then dequantize with the same per-axis parameters: within half a step.
  Tensor x = Tensor::from_vector<float>({2, 2}, {0.3f, -1.2f, 7.9f, -0.05f});
  Tensor scale = vec<float>({0.1f, 0.5f});
  Tensor zero = vec<int8_t>({3, -4});
  std::vector<Tensor> q = run_constants("QuantizeLinear", 13, {x, scale, zero});
  std::vector<Tensor> back = run_constants("DequantizeLinear", 13, {q[0], scale, zero});
  std::vector<double> steps = {0.1, 0.5, 0.1, 0.5};
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(back[0].get_double(i), x.get_double(i), steps[static_cast<size_t>(i)] / 2 + 1e-6);
  }
}

// ---- DynamicQuantizeLinear ---------------------------------------------------------------------

std::vector<Tensor> dynamic_quantize(Tensor x) {
  return run_constants("DynamicQuantizeLinear", 11, {std::move(x)}, {},
                       {"y", "y_scale", "y_zero_point"});
}

TEST(DynamicQuantizeLinear, PositiveInputsRangeFromZero) {
  // Range [0, 3]: scale 3 / 255, zero point 0; 1 / scale = 85, 2 / scale = 170.
  std::vector<Tensor> out = dynamic_quantize(vec<float>({1, 2, 3}));
  EXPECT_EQ(out[1].data<float>()[0], 3.0f / 255.0f);
  EXPECT_EQ(out[2].get_double(0), 0);
  EXPECT_EQ(values(out[0]), (std::vector<double>{85, 170, 255}));
}

TEST(DynamicQuantizeLinear, NegativeInputsRangeToZero) {
  // Range [-4, 0]: scale 4 / 255; zero point round(254.99998) = 255; -1 / scale = -63.75 -> -64,
  // -3 / scale = -191.25 -> -191.
  std::vector<Tensor> out = dynamic_quantize(vec<float>({-1, -4, -3}));
  EXPECT_EQ(out[1].data<float>()[0], 4.0f / 255.0f);
  EXPECT_EQ(out[2].get_double(0), 255);
  EXPECT_EQ(values(out[0]), (std::vector<double>{191, 0, 64}));
}

TEST(DynamicQuantizeLinear, AllZerosTakeScaleOne) {
  std::vector<Tensor> out = dynamic_quantize(vec<float>({0, 0}));
  EXPECT_EQ(out[1].get_double(0), 1.0);
  EXPECT_EQ(out[2].get_double(0), 0);
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 0}));
}

TEST(DynamicQuantizeLinear, NaNIsLeftOutOfTheRange) {
  std::vector<Tensor> out = dynamic_quantize(vec<float>({kNaN, 3, 1}));
  EXPECT_EQ(out[1].data<float>()[0], 3.0f / 255.0f);
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 255, 85}));
}

TEST(DynamicQuantizeLinear, ShapesAndTypes) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("batch"), 4});
  g.node("DynamicQuantizeLinear", "d", 11, {x}, {}, {"y", "y_scale", "y_zero_point"});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "u8[batch, 4]");
  EXPECT_EQ(g.output_type(1).to_string(), "f32[]");
  EXPECT_EQ(g.output_type(2).to_string(), "u8[]");
}

// ---- MatMulInteger -----------------------------------------------------------------------------

TEST(MatMulInteger, PerRowAndPerColumnZeroPoints) {
  // A - [1, 4] per row = [[0, 1, 2], [0, 1, 2]]; B - [0, -1] per column = [[1, 0], [2, -1],
  // [3, -2]]; each row gives [0 + 2 + 6, 0 - 1 - 4].
  Tensor a = Tensor::from_vector<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<int8_t>({3, 2}, {1, -1, 2, -2, 3, -3});
  std::vector<Tensor> vectors =
      run_constants("MatMulInteger", 10, {a, b, vec<uint8_t>({1, 4}), vec<int8_t>({0, -1})});
  EXPECT_EQ(vectors[0].dtype(), DType::kInt32);
  EXPECT_EQ(values(vectors[0]), (std::vector<double>{8, -5, 8, -5}));
  // The same zero points as [M, 1] and [1, N] tensors.
  std::vector<Tensor> matrices = run_constants("MatMulInteger", 10,
                                               {a, b, Tensor::from_vector<uint8_t>({2, 1}, {1, 4}),
                                                Tensor::from_vector<int8_t>({1, 2}, {0, -1})});
  EXPECT_EQ(values(matrices[0]), (std::vector<double>{8, -5, 8, -5}));
}

TEST(MatMulInteger, BatchDimsBroadcast) {
  // [2, 1, 1, 2] x [3, 2, 1] -> [2, 3, 1, 1]: every A row against every B column.
  Tensor a = Tensor::from_vector<uint8_t>({2, 1, 1, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::from_vector<uint8_t>({3, 2, 1}, {1, 1, 2, 0, 0, 3});
  std::vector<Tensor> y = run_constants("MatMulInteger", 10, {a, b});
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{2, 3, 1, 1}));
  EXPECT_EQ(values(y[0]), (std::vector<double>{3, 2, 6, 7, 6, 12}));
}

TEST(MatMulInteger, OneDimensionalOperandsGiveAScalar) {
  std::vector<Tensor> y = run_constants(
      "MatMulInteger", 10, {vec<uint8_t>({1, 2, 3}), vec<uint8_t>({4, 5, 6}), scalar<uint8_t>(1)});
  EXPECT_EQ(y[0].rank(), 0);
  EXPECT_EQ(y[0].get_double(0), 17);  // (0, 1, 2) . (4, 5, 6)
}

TEST(MatMulInteger, AccumulationWrapsInInt32) {
  // 255 * 255 * 33100 = 2152327500 > 2^31 - 1 wraps to 2152327500 - 2^32.
  constexpr int64_t k = 33100;
  Tensor a(DType::kUInt8, {1, k});
  Tensor b(DType::kUInt8, {k, 1});
  for (int64_t i = 0; i < k; ++i) {
    a.data<uint8_t>()[i] = 255;
    b.data<uint8_t>()[i] = 255;
  }
  std::vector<Tensor> y = run_constants("MatMulInteger", 10, {a, b});
  EXPECT_EQ(y[0].data<int32_t>()[0], -2142639796);
}

TEST(MatMulInteger, SymbolicShapesInfer) {
  OneNodeGraph g;
  Value* a = g.input("a", DType::kUInt8, {sym("seq"), 1, 40});
  Value* b = g.constant("b", Tensor(DType::kInt8, {40, 512}));
  Value* a_zero = g.input("a_zero", DType::kUInt8, {});
  Value* b_zero = g.constant("b_zero", Tensor(DType::kInt8, {512}));
  g.node("MatMulInteger", "mm", 10, {a, b, a_zero, b_zero}, {});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "i32[seq, 1, 512]");
}

// ---- QLinearMatMul -----------------------------------------------------------------------------

TEST(QLinearMatMul, PerColumnScalesRoundHalfToEven) {
  // a - 1 = [1, 3, 5] (a column), b = [1, 3]: products [[1, 3], [3, 9], [5, 15]]; column
  // multipliers 0.5 and 1 give [[0.5, 3], [1.5, 9], [2.5, 15]] -> [[0, 3], [2, 9], [2, 15]];
  // y_zero_point -2.
  Tensor a = Tensor::from_vector<uint8_t>({3, 1}, {2, 4, 6});
  Tensor b = Tensor::from_vector<uint8_t>({1, 2}, {1, 3});
  std::vector<Tensor> y =
      run_constants("QLinearMatMul", 10,
                    {a, scalar(1.0f), scalar<uint8_t>(1), b, vec<float>({0.5f, 1}),
                     vec<uint8_t>({0, 0}), scalar(1.0f), scalar<int8_t>(-2)});
  EXPECT_EQ(y[0].dtype(), DType::kInt8);
  EXPECT_EQ(values(y[0]), (std::vector<double>{-2, 1, 0, 7, 0, 13}));
}

TEST(QLinearMatMul, PerRowScalesAndSaturation) {
  // Products as above with b_scale 1; a_scale per row [1, 2, 4] gives [[1, 3], [6, 18],
  // [20, 60]]; y_scale 0.25 multiplies by 4, and with y_zero_point 20 uint8 saturates at 255.
  Tensor a = Tensor::from_vector<uint8_t>({3, 1}, {2, 4, 6});
  Tensor b = Tensor::from_vector<uint8_t>({1, 2}, {1, 3});
  std::vector<Tensor> y =
      run_constants("QLinearMatMul", 10,
                    {a, vec<float>({1, 2, 4}), vec<uint8_t>({1, 1, 1}), b, scalar(1.0f),
                     scalar<uint8_t>(0), scalar(0.25f), scalar<uint8_t>(0)});
  EXPECT_EQ(values(y[0]), (std::vector<double>{4, 12, 24, 72, 80, 240}));
  y = run_constants("QLinearMatMul", 10,
                    {a, vec<float>({1, 2, 4}), vec<uint8_t>({1, 1, 1}), b, scalar(1.0f),
                     scalar<uint8_t>(0), scalar(0.25f), scalar<uint8_t>(20)});
  EXPECT_EQ(values(y[0]), (std::vector<double>{24, 32, 44, 92, 100, 255}));
}

TEST(QLinearMatMul, Opset21Float16Scales) {
  // a - 1 = [1, 3], b = [1, 1]^T: product 4; multiplier 0.5 * 0.25 / 0.125 = 1 -> 4 + 0.
  Tensor a = Tensor::from_vector<uint8_t>({1, 2}, {2, 4});
  Tensor b = Tensor::from_vector<uint8_t>({2, 1}, {1, 1});
  std::vector<Tensor> y =
      run_constants("QLinearMatMul", 21,
                    {a, half_scalar(0.5), scalar<uint8_t>(1), b, half_scalar(0.25),
                     scalar<uint8_t>(0), half_scalar(0.125), scalar<uint8_t>(0)});
  EXPECT_EQ(values(y[0]), (std::vector<double>{4}));
}

TEST(QLinearMatMul, BatchedOperandsBroadcast) {
  OneNodeGraph g;
  Value* a = g.input("a", DType::kInt8, {sym("batch"), 2, 3});
  Value* b = g.input("b", DType::kInt8, {3, 4});
  std::vector<Value*> inputs = {a,
                                g.constant("a_scale", scalar(1.0f)),
                                g.constant("a_zero", scalar<int8_t>(0)),
                                b,
                                g.constant("b_scale", scalar(1.0f)),
                                g.constant("b_zero", scalar<int8_t>(0)),
                                g.constant("y_scale", scalar(1.0f)),
                                g.constant("y_zero", scalar<uint8_t>(0))};
  g.node("QLinearMatMul", "mm", 10, inputs, {});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "u8[batch, 2, 4]");
  // Batch 2: every matrix of a against the one b; a row (1, 2, 3) . b columns of ones = 6.
  Tensor a_value = Tensor::from_vector<int8_t>({2, 2, 3}, {1, 2, 3, 0, 0, 1, -1, -2, -3, 4, 0, 0});
  Tensor b_value(DType::kInt8, {3, 4});
  for (int64_t i = 0; i < 12; ++i) b_value.data<int8_t>()[i] = 1;
  std::vector<Tensor> y = g.run({{"a", a_value}, {"b", b_value}});
  EXPECT_EQ(values(y[0]), (std::vector<double>{6, 6, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 4, 4, 4, 4}));
}

// ---- ConvInteger, QLinearConv ------------------------------------------------------------------

TEST(ConvInteger, PaddingActsAsTheZeroPoint) {
  // The ONNX operator doc's example: x = 2..10 with zero point 1, a 2x2 kernel of ones, pads 1.
  Tensor x = Tensor::from_vector<uint8_t>({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor w = Tensor::from_vector<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1});
  std::vector<Tensor> y =
      run_constants("ConvInteger", 10, {x, w, scalar<uint8_t>(1)}, {{"pads", ints({1, 1, 1, 1})}});
  EXPECT_EQ(y[0].dtype(), DType::kInt32);
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_EQ(values(y[0]),
            (std::vector<double>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
}

TEST(ConvInteger, PerOutputChannelWeightZeroPoints) {
  // x - (-1) = [0, 1, 3]; w - [0, 1] per channel = [[1, 2], [2, 2]].
  Tensor x = Tensor::from_vector<int8_t>({1, 1, 3}, {-1, 0, 2});
  Tensor w = Tensor::from_vector<int8_t>({2, 1, 2}, {1, 2, 3, 3});
  std::vector<Tensor> y =
      run_constants("ConvInteger", 10, {x, w, scalar<int8_t>(-1), vec<int8_t>({0, 1})});
  EXPECT_EQ(values(y[0]), (std::vector<double>{2, 7, 2, 8}));
}

TEST(QLinearConv, BiasAndPerChannelScales) {
  // x - 1 = [0, 1, 2]; kernel size 1 with w = 1 and -1; bias [1, 3]: sums [1, 2, 3] and
  // [3, 2, 1]; multipliers 0.5 * 1 and 0.5 * 0.5 give [0.5, 1, 1.5] -> [0, 1, 2] and
  // [0.75, 0.5, 0.25] -> [1, 0, 0]; y_zero_point 10.
  Tensor x = Tensor::from_vector<uint8_t>({1, 1, 3}, {1, 2, 3});
  Tensor w = Tensor::from_vector<int8_t>({2, 1, 1}, {1, -1});
  std::vector<Tensor> y =
      run_constants("QLinearConv", 10,
                    {x, scalar(0.5f), scalar<uint8_t>(1), w, vec<float>({1, 0.5f}),
                     vec<int8_t>({0, 0}), scalar(1.0f), scalar<uint8_t>(10), vec<int32_t>({1, 3})});
  EXPECT_EQ(y[0].dtype(), DType::kUInt8);
  EXPECT_EQ(values(y[0]), (std::vector<double>{10, 11, 12, 11, 10, 10}));
}

TEST(QLinearConv, ShapeFollowsTheConvFormulas) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kUInt8, {sym("batch"), 2, sym("time")});
  std::vector<Value*> inputs = {x,
                                g.constant("x_scale", scalar(1.0f)),
                                g.constant("x_zero", scalar<uint8_t>(0)),
                                g.constant("w", Tensor(DType::kInt8, {4, 2, 3})),
                                g.constant("w_scale", Tensor(DType::kFloat32, {4})),
                                g.constant("w_zero", Tensor(DType::kInt8, {4})),
                                g.constant("y_scale", scalar(1.0f)),
                                g.constant("y_zero", scalar<int8_t>(0))};
  g.node("QLinearConv", "conv", 10, inputs, {{"pads", ints({1, 1})}});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "i8[batch, 4, time]");
}

// ---- error messages ----------------------------------------------------------------------------

// Builds a one-node graph over typed graph inputs and returns the inference error.
std::string inference_error(const std::string& op_type, int opset,
                            const std::vector<std::pair<DType, Shape>>& inputs,
                            const std::map<std::string, Attribute>& attributes = {},
                            ErrorKind kind = ErrorKind::kInvalidModel,
                            std::vector<std::string> outputs = {"y"}) {
  OneNodeGraph g;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(g.input(cat("in", i), inputs[i].first, inputs[i].second));
  }
  g.node(op_type, "n", opset, values, attributes, std::move(outputs));
  return error_message([&] { g.build(); }, kind);
}

TEST(QuantErrors, OpsDoNotExistBeforeTheirOpset) {
  EXPECT_EQ(inference_error("QuantizeLinear", 9, {{DType::kFloat32, {2}}, {DType::kFloat32, {}}}),
            "QuantizeLinear 'n' (opset 9): QuantizeLinear does not exist before opset 10");
  EXPECT_EQ(inference_error("DynamicQuantizeLinear", 10, {{DType::kFloat32, {2}}}, {},
                            ErrorKind::kInvalidModel, {"y", "s", "z"}),
            "DynamicQuantizeLinear 'n' (opset 10): DynamicQuantizeLinear does not exist before "
            "opset 11");
}

TEST(QuantErrors, QuantizeLinearAxisNeedsOpset13) {
  EXPECT_EQ(inference_error("QuantizeLinear", 10, {{DType::kFloat32, {2}}, {DType::kFloat32, {}}},
                            {{"axis", integer(0)}}),
            "QuantizeLinear 'n' (opset 10): attribute 'axis' needs opset 13 or later");
}

TEST(QuantErrors, PerAxisScaleNeedsOpset13) {
  EXPECT_EQ(
      inference_error("DequantizeLinear", 10, {{DType::kUInt8, {2, 3}}, {DType::kFloat32, {3}}}),
      "DequantizeLinear 'n' (opset 10): input x_scale has shape [3], expected a scalar "
      "(per-axis quantization needs opset 13 or later)");
}

TEST(QuantErrors, PerAxisScaleLengthMustMatchTheAxis) {
  EXPECT_EQ(
      inference_error("QuantizeLinear", 13,
                      {{DType::kFloat32, {2, 3}}, {DType::kFloat32, {2}}, {DType::kInt8, {2}}}),
      "QuantizeLinear 'n' (opset 13): input y_scale has 2 elements but x has 3 along axis 1 "
      "(x shape [2, 3])");
}

TEST(QuantErrors, AxisOutOfRange) {
  EXPECT_EQ(
      inference_error("DequantizeLinear", 13, {{DType::kInt8, {2, 3}}, {DType::kFloat32, {3}}},
                      {{"axis", integer(2)}}),
      "DequantizeLinear 'n' (opset 13): attribute 'axis' = 2 is out of range for rank 2 "
      "(valid: [-2, 1])");
}

TEST(QuantErrors, ScaleOfRankTwo) {
  EXPECT_EQ(
      inference_error("QuantizeLinear", 13, {{DType::kFloat32, {2, 3}}, {DType::kFloat32, {2, 3}}}),
      "QuantizeLinear 'n' (opset 13): input y_scale has shape [2, 3], expected a scalar "
      "(per-tensor) or a 1-D tensor (per-axis)");
}

TEST(QuantErrors, ZeroPointShapeMustMatchTheScale) {
  EXPECT_EQ(
      inference_error("QuantizeLinear", 13,
                      {{DType::kFloat32, {2, 3}}, {DType::kFloat32, {3}}, {DType::kUInt8, {}}}),
      "QuantizeLinear 'n' (opset 13): input y_zero_point has shape [] but y_scale has "
      "shape [3] (they must have the same shape)");
}

TEST(QuantErrors, ElementTypes) {
  EXPECT_EQ(inference_error("QuantizeLinear", 13, {{DType::kInt8, {2}}, {DType::kFloat32, {}}}),
            "QuantizeLinear 'n' (opset 13): input x has element type int8, expected one of "
            "float, int32");
  EXPECT_EQ(inference_error("QuantizeLinear", 13,
                            {{DType::kFloat32, {2}}, {DType::kFloat32, {}}, {DType::kInt32, {}}}),
            "QuantizeLinear 'n' (opset 13): input y_zero_point has element type int32, expected "
            "one of int8, uint8");
  EXPECT_EQ(inference_error("QuantizeLinear", 13, {{DType::kFloat32, {2}}, {DType::kFloat16, {}}}),
            "QuantizeLinear 'n' (opset 13): input y_scale has element type float16, expected "
            "float");
  EXPECT_EQ(inference_error("DequantizeLinear", 13,
                            {{DType::kInt8, {2}}, {DType::kFloat32, {}}, {DType::kUInt8, {}}}),
            "DequantizeLinear 'n' (opset 13): input x_zero_point is uint8 but x is int8 (they "
            "must match)");
  EXPECT_EQ(inference_error("DynamicQuantizeLinear", 11, {{DType::kFloat64, {2}}}, {},
                            ErrorKind::kInvalidModel, {"y", "s", "z"}),
            "DynamicQuantizeLinear 'n' (opset 11): input x has element type double, expected "
            "float");
}

TEST(QuantErrors, BlockedQuantizationIsUnsupported) {
  EXPECT_EQ(
      inference_error("QuantizeLinear", 21, {{DType::kFloat32, {2, 4}}, {DType::kFloat32, {2, 2}}},
                      {{"block_size", integer(2)}}, ErrorKind::kUnsupported),
      "QuantizeLinear 'n' (opset 21): attribute 'block_size' = 2 (blocked quantization) is "
      "not supported");
}

TEST(QuantErrors, OutputDtypeMustAgreeWithTheZeroPoint) {
  EXPECT_EQ(inference_error("QuantizeLinear", 21,
                            {{DType::kFloat32, {2}}, {DType::kFloat32, {}}, {DType::kInt8, {}}},
                            {{"output_dtype", integer(static_cast<int64_t>(DType::kUInt8))}}),
            "QuantizeLinear 'n' (opset 21): attribute 'output_dtype' = 2 (uint8) but input "
            "y_zero_point is int8 (they must match)");
  EXPECT_EQ(inference_error("QuantizeLinear", 21, {{DType::kFloat32, {2}}, {DType::kFloat32, {}}},
                            {{"output_dtype", integer(17)}}, ErrorKind::kUnsupported),
            "QuantizeLinear 'n' (opset 21): attribute 'output_dtype' = 17 (float8e4m3fn) is not "
            "supported");
}

TEST(QuantErrors, Int32DequantizationHasNoZeroPoint) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kInt32, {2});
  Value* scale = g.constant("scale", scalar(1.0f));
  Value* zero = g.constant("zero", scalar<int32_t>(5));
  g.node("DequantizeLinear", "dq", 13, {x, scale, zero}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "DequantizeLinear 'dq' (opset 13): input x_zero_point[0] = 5, but int32 x has no zero "
            "point (it must be 0)");

  OneNodeGraph at_run_time;
  x = at_run_time.input("x", DType::kInt32, {2});
  scale = at_run_time.constant("scale", scalar(1.0f));
  zero = at_run_time.input("zero", DType::kInt32, {});
  at_run_time.node("DequantizeLinear", "dq", 13, {x, scale, zero}, {});
  at_run_time.build();
  std::map<std::string, Tensor> inputs = {{"x", vec<int32_t>({1, 2})},
                                          {"zero", scalar<int32_t>(-1)}};
  EXPECT_EQ(error_message([&] { at_run_time.run(inputs); }, ErrorKind::kInvalidInput),
            "DequantizeLinear 'dq' (opset 13): input x_zero_point[0] = -1, but int32 x has no "
            "zero point (it must be 0)");
}

TEST(QuantErrors, PerAxisLengthCheckedAtRunTimeForSymbolicDims) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, sym("c")});
  Value* scale = g.input("scale", DType::kFloat32, {sym("n")});
  g.node("QuantizeLinear", "q", 13, {x, scale}, {});
  g.build();
  std::map<std::string, Tensor> inputs = {{"x", Tensor(DType::kFloat32, {2, 3})},
                                          {"scale", vec<float>({1, 1})}};
  EXPECT_EQ(error_message([&] { g.run(inputs); }, ErrorKind::kInvalidInput),
            "QuantizeLinear 'q' (opset 13): input y_scale has 2 elements but x has 3 along axis 1 "
            "(x shape [2, 3])");
}

TEST(QuantErrors, MatMulIntegerZeroPointShapes) {
  EXPECT_EQ(
      inference_error("MatMulInteger", 10,
                      {{DType::kUInt8, {2, 3}}, {DType::kUInt8, {3, 4}}, {DType::kUInt8, {3}}}),
      "MatMulInteger 'n' (opset 10): input a_zero_point has shape [3], expected a scalar, 2 "
      "per row, or a shape broadcasting to [..., M, 1] (A is [2, 3])");
  EXPECT_EQ(inference_error("MatMulInteger", 10,
                            {{DType::kUInt8, {2, 3}},
                             {DType::kInt8, {3, 4}},
                             {DType::kUInt8, {}},
                             {DType::kInt8, {3, 4}}}),
            "MatMulInteger 'n' (opset 10): input b_zero_point has shape [3, 4], expected a "
            "scalar, 4 per column, or a shape broadcasting to [..., 1, N] (B is [3, 4])");
  EXPECT_EQ(inference_error("MatMulInteger", 10,
                            {{DType::kUInt8, {3}}, {DType::kInt8, {3, 4}}, {DType::kUInt8, {3}}}),
            "MatMulInteger 'n' (opset 10): input a_zero_point has shape [3] but A is 1-D [3]: "
            "per-row quantization needs a matrix");
}

TEST(QuantErrors, MatMulIntegerOperands) {
  EXPECT_EQ(
      inference_error("MatMulInteger", 10, {{DType::kUInt8, {2, 3}}, {DType::kUInt8, {4, 5}}}),
      "MatMulInteger 'n' (opset 10): inner dimensions differ: A is [2, 3], B is [4, 5]");
  EXPECT_EQ(inference_error("MatMulInteger", 10, {{DType::kFloat32, {2, 3}}, {DType::kUInt8, {3}}}),
            "MatMulInteger 'n' (opset 10): input A has element type float, expected one of int8, "
            "uint8");
  EXPECT_EQ(inference_error("MatMulInteger", 10,
                            {{DType::kUInt8, {2, 2, 3}}, {DType::kUInt8, {3, 3, 1}}}),
            "MatMulInteger 'n' (opset 10): batch dimensions cannot be broadcast: A is [2, 2, 3], "
            "B is [3, 3, 1]");
}

TEST(QuantErrors, MatMulIntegerZeroPointCheckedAtRunTime) {
  OneNodeGraph g;
  Value* a = g.input("a", DType::kUInt8, {sym("m"), 2});
  Value* b = g.constant("b", Tensor(DType::kUInt8, {2, 2}));
  Value* a_zero = g.constant("a_zero", vec<uint8_t>({1, 2, 3}));
  g.node("MatMulInteger", "mm", 10, {a, b, a_zero}, {});
  g.build();
  std::map<std::string, Tensor> inputs = {{"a", Tensor(DType::kUInt8, {2, 2})}};
  EXPECT_EQ(error_message([&] { g.run(inputs); }, ErrorKind::kInvalidInput),
            "MatMulInteger 'mm' (opset 10): input a_zero_point has shape [3], expected a scalar, "
            "2 values (one per row), or a shape broadcasting to [2, 1] (A is [2, 2])");
}

std::vector<std::pair<DType, Shape>> qlinear_matmul_inputs(Shape y_scale, DType scale_type,
                                                           DType b_scale_type) {
  return {{DType::kUInt8, {2, 3}}, {scale_type, {}},        {DType::kUInt8, {}},
          {DType::kInt8, {3, 4}},  {b_scale_type, {4}},     {DType::kInt8, {4}},
          {scale_type, y_scale},   {DType::kUInt8, y_scale}};
}

TEST(QuantErrors, QLinearMatMulOutputIsPerTensor) {
  EXPECT_EQ(inference_error("QLinearMatMul", 10,
                            qlinear_matmul_inputs({2}, DType::kFloat32, DType::kFloat32)),
            "QLinearMatMul 'n' (opset 10): input y_scale has shape [2], expected a scalar (the "
            "output is quantized per tensor)");
}

TEST(QuantErrors, QLinearMatMulScaleTypes) {
  EXPECT_EQ(inference_error("QLinearMatMul", 10,
                            qlinear_matmul_inputs({}, DType::kFloat16, DType::kFloat16)),
            "QLinearMatMul 'n' (opset 10): input a_scale has element type float16, expected "
            "float");
  EXPECT_EQ(inference_error("QLinearMatMul", 21,
                            qlinear_matmul_inputs({}, DType::kFloat16, DType::kFloat32)),
            "QLinearMatMul 'n' (opset 21): input b_scale is float but a_scale is float16 (they "
            "must match)");
}

TEST(QuantErrors, ConvIntegerZeroPoints) {
  EXPECT_EQ(inference_error(
                "ConvInteger", 10,
                {{DType::kUInt8, {1, 2, 5}}, {DType::kUInt8, {3, 2, 2}}, {DType::kUInt8, {2}}}),
            "ConvInteger 'n' (opset 10): input x_zero_point has shape [2], expected a scalar (x "
            "is quantized per tensor)");
  EXPECT_EQ(inference_error("ConvInteger", 10,
                            {{DType::kUInt8, {1, 2, 5}},
                             {DType::kUInt8, {3, 2, 2}},
                             {DType::kUInt8, {}},
                             {DType::kUInt8, {2}}}),
            "ConvInteger 'n' (opset 10): input w_zero_point has 2 elements, expected 1 or 3 (per "
            "output channel)");
  EXPECT_EQ(
      inference_error("ConvInteger", 10, {{DType::kUInt8, {1, 3, 5}}, {DType::kUInt8, {3, 2, 2}}}),
      "ConvInteger 'n' (opset 10): input channels 3 != weight channels 2 * group 1");
}

TEST(QuantErrors, QLinearConvBiasAndScales) {
  auto inputs = [](Shape x_scale, DType bias_type, Shape bias) {
    return std::vector<std::pair<DType, Shape>>{
        {DType::kUInt8, {1, 2, 5}}, {DType::kFloat32, x_scale}, {DType::kUInt8, x_scale},
        {DType::kInt8, {3, 2, 2}},  {DType::kFloat32, {3}},     {DType::kInt8, {3}},
        {DType::kFloat32, {}},      {DType::kUInt8, {}},        {bias_type, bias}};
  };
  EXPECT_EQ(inference_error("QLinearConv", 10, inputs({}, DType::kFloat32, {3})),
            "QLinearConv 'n' (opset 10): input B has element type float, expected int32");
  EXPECT_EQ(inference_error("QLinearConv", 10, inputs({}, DType::kInt32, {2})),
            "QLinearConv 'n' (opset 10): input B has 2 elements but w has 3 output channels");
  EXPECT_EQ(inference_error("QLinearConv", 10, inputs({2}, DType::kInt32, {3})),
            "QLinearConv 'n' (opset 10): input x_scale has shape [2], expected a scalar (x is "
            "quantized per tensor)");
}

TEST(QuantErrors, ConvIntegerChannelsCheckedAtRunTime) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kUInt8, {1, sym("c"), 4});
  Value* w = g.constant("w", Tensor(DType::kUInt8, {2, 3, 2}));
  g.node("ConvInteger", "conv", 10, {x, w}, {});
  g.build();
  std::map<std::string, Tensor> inputs = {{"x", Tensor(DType::kUInt8, {1, 2, 4})}};
  EXPECT_EQ(error_message([&] { g.run(inputs); }, ErrorKind::kInvalidInput),
            "ConvInteger 'conv' (opset 10): input channels 2 != weight channels 3 * group 1");
}

}  // namespace
}  // namespace rnnc
