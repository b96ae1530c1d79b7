// Shape inference (symbolic dims and dims values), error messages and reference-kernel numbers for
// the data-movement ops: the cases the official ONNX backend tests miss. Expected numbers are
// worked out by hand from the spec (docs/ops/tensor.md says what rnnc does where the spec is
// vague); where numpy agrees it is noted.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"

namespace rnnc {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kIntMax = 2147483647;

Dim sym(const std::string& name) { return Dim::symbol(name); }

Attribute tensor_attr(Tensor value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kTensor;
  attribute.t = std::move(value);
  return attribute;
}

Tensor i64(std::vector<int64_t> shape, std::vector<int64_t> values) {
  return Tensor::from_vector<int64_t>(std::move(shape), values);
}

Tensor i64s(std::vector<int64_t> values) {
  int64_t n = static_cast<int64_t>(values.size());
  return i64({n}, std::move(values));
}

Tensor f32(std::vector<int64_t> shape, std::vector<float> values) {
  return Tensor::from_vector<float>(std::move(shape), values);
}

template <typename T>
std::vector<T> values_of(const Tensor& tensor) {
  return std::vector<T>(tensor.data<T>(), tensor.data<T>() + tensor.numel());
}

// A hand-built graph: inputs (possibly symbolic), constant operands as initializers, nodes in
// order. infer() runs shape inference as import would; run() evaluates the last node's outputs.
class TestGraph {
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
             const std::vector<Value*>& inputs,
             const std::map<std::string, Attribute>& attributes = {}, int outputs = 1) {
    std::vector<std::string> names;
    for (int i = 0; i < outputs; ++i) names.push_back(cat(name, "_out", i));
    last_ = graph_.add_node(op_type, name, inputs, names, opset);
    for (const auto& [key, attribute] : attributes) last_->set_attr(key, attribute);
    return last_;
  }
  void infer() { infer_graph(graph_); }
  // Type of the last node's output i, as text: "f32[batch*seq, 512]".
  std::string type(size_t i = 0) {
    infer();
    return last_->output(i)->type.to_string();
  }
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs = {}) {
    infer();
    graph_.set_outputs(last_->outputs());
    return evaluate(graph_, inputs);
  }
  Graph& graph() { return graph_; }

 private:
  Graph graph_;
  Node* last_ = nullptr;
};

// The message of the rnnc::Error `fn` raises, after checking its kind.
template <typename Fn>
std::string error_of(Fn&& fn, ErrorKind kind) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error was raised";
  return "";
}

// ---- symbolic shape inference ----------------------------------------------------------------

TEST(TensorReshapeShape, MinusOneAbsorbsSymbolicDims) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), sym("batch"), 512});
  g.node("Reshape", "r", 14, {x, g.constant("shape", i64s({-1, 512}))});
  EXPECT_EQ(g.type(), "f32[batch*seq, 512]");
}

TEST(TensorReshapeShape, ZeroCopiesAnInputDimUnlessAllowZero) {
  TestGraph copy;
  Value* x = copy.input("x", DType::kFloat32, {sym("seq"), sym("batch"), 4, 128});
  copy.node("Reshape", "r", 14, {x, copy.constant("shape", i64s({0, 0, -1}))});
  EXPECT_EQ(copy.type(), "f32[seq, batch, 512]");

  TestGraph keep;
  Value* empty = keep.input("x", DType::kFloat32, {0, 3});
  keep.node("Reshape", "r", 14, {empty, keep.constant("shape", i64s({3, 0}))},
            {{"allowzero", Attribute::of_int(1)}});
  EXPECT_EQ(keep.type(), "f32[3, 0]");
}

TEST(TensorReshapeShape, ShapeFromAShapeChainKeepsItsDims) {
  // Reshape(y, Concat(Shape(x)[0:2], [-1])): the exporter's way to merge trailing dims.
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), sym("batch"), 4, 128});
  Value* shape = g.node("Shape", "shape", 13, {x})->output(0);
  Value* leading = g.node("Slice", "leading", 13,
                          {shape, g.constant("starts", i64s({0})), g.constant("ends", i64s({2}))})
                       ->output(0);
  Value* target = g.node("Concat", "target", 13, {leading, g.constant("rest", i64s({-1}))},
                         {{"axis", Attribute::of_int(0)}})
                      ->output(0);
  g.node("Reshape", "r", 14, {x, target});
  EXPECT_EQ(g.type(), "f32[seq, batch, 512]");
}

TEST(TensorConcatShape, SymbolicAxisDimsAdd) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {sym("seq"), 4});
  Value* b = g.input("b", DType::kFloat32, {sym("seq"), 4});
  Value* c = g.input("c", DType::kFloat32, {3, 4});
  g.node("Concat", "c", 13, {a, b, c}, {{"axis", Attribute::of_int(0)}});
  EXPECT_EQ(g.type(), "f32[2*seq + 3, 4]");
}

TEST(TensorConcatShape, KnownDimFillsASymbolicOneOffTheAxis) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {sym("n"), 2});
  Value* b = g.input("b", DType::kFloat32, {5, 3});
  g.node("Concat", "c", 13, {a, b}, {{"axis", Attribute::of_int(-1)}});
  EXPECT_EQ(g.type(), "f32[5, 5]");
}

// One Slice on axis 0 of x: [seq], with constant starts/ends/steps.
std::string slice_of_seq(int64_t start, int64_t end, int64_t step = 1) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq")});
  g.node("Slice", "s", 13,
         {x, g.constant("starts", i64s({start})), g.constant("ends", i64s({end})),
          g.constant("axes", i64s({0})), g.constant("steps", i64s({step}))});
  return g.type();
}

TEST(TensorSliceShape, SymbolicDimGivesArithmeticWhereTheClampIsDecidable) {
  EXPECT_EQ(slice_of_seq(1, kInt64Max), "f32[seq - 1]");
  EXPECT_EQ(slice_of_seq(0, kIntMax), "f32[seq]");
  EXPECT_EQ(slice_of_seq(-1, kInt64Max), "f32[1]");
  EXPECT_EQ(slice_of_seq(0, -1), "f32[seq - 1]");
  EXPECT_EQ(slice_of_seq(0, 1), "f32[1]");
  EXPECT_EQ(slice_of_seq(-1, kInt64Min, -1), "f32[seq]");  // x[::-1]
}

TEST(TensorSliceShape, SymbolicDimIsUnknownWhenTheClampIsNot) {
  EXPECT_EQ(slice_of_seq(2, kInt64Max), "f32[?]");     // seq - 2 would be negative for seq = 1
  EXPECT_EQ(slice_of_seq(0, 5), "f32[?]");             // min(5, seq)
  EXPECT_EQ(slice_of_seq(0, kInt64Max, 2), "f32[?]");  // ceil(seq / 2)
}

TEST(TensorSliceShape, ClampsKnownDimsAsTheSpecSays) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {10, 6});
  g.node("Slice", "s", 13,
         {x, g.constant("starts", i64s({20, -100})), g.constant("ends", i64s({-100, 100})),
          g.constant("axes", i64s({0, 1})), g.constant("steps", i64s({-3, 4}))});
  EXPECT_EQ(g.type(), "f32[4, 2]");  // rows 9, 6, 3, 0; columns 0, 4
}

TEST(TensorSliceShape, AttributeFormBeforeOpset10) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), 8});
  g.node("Slice", "s", 9, {x},
         {{"starts", Attribute::of_ints({1, 2})}, {"ends", Attribute::of_ints({kInt64Max, 6})}});
  EXPECT_EQ(g.type(), "f32[seq - 1, 4]");
}

TEST(TensorTransposeShape, PermutesSymbolicDims) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), sym("batch"), 40});
  g.node("Transpose", "t", 13, {x}, {{"perm", Attribute::of_ints({1, 0, 2})}});
  EXPECT_EQ(g.type(), "f32[batch, seq, 40]");
  TestGraph reversed;
  Value* y = reversed.input("y", DType::kFloat32, {sym("seq"), sym("batch"), 40});
  reversed.node("Transpose", "t", 13, {y});
  EXPECT_EQ(reversed.type(), "f32[40, batch, seq]");
}

TEST(TensorSqueezeShape, AxesInputFromOpset13AttributeBefore) {
  TestGraph input_form;
  Value* x = input_form.input("x", DType::kFloat32, {sym("seq"), 1, 40});
  input_form.node("Squeeze", "s", 13, {x, input_form.constant("axes", i64s({-2}))});
  EXPECT_EQ(input_form.type(), "f32[seq, 40]");
  TestGraph attribute_form;
  Value* y = attribute_form.input("y", DType::kFloat32, {sym("seq"), 1, 40});
  attribute_form.node("Squeeze", "s", 11, {y}, {{"axes", Attribute::of_ints({1})}});
  EXPECT_EQ(attribute_form.type(), "f32[seq, 40]");
}

TEST(TensorSqueezeShape, WithoutAxesASymbolicDimLeavesTheRankUnknown) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, sym("batch"), 40});
  g.node("Squeeze", "s", 13, {x});
  EXPECT_EQ(g.type(), "f32[?rank]");  // batch may be 1 at run time
  TestGraph known;
  Value* y = known.input("y", DType::kFloat32, {1, 5, 1});
  known.node("Squeeze", "s", 13, {y});
  EXPECT_EQ(known.type(), "f32[5]");
}

TEST(TensorUnsqueezeShape, InsertsOnesAtOutputPositions) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), 40});
  g.node("Unsqueeze", "u", 13, {x, g.constant("axes", i64s({-1, 0}))});
  EXPECT_EQ(g.type(), "f32[1, seq, 40, 1]");
}

TEST(TensorFlattenShape, MultipliesSymbolicDims) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), sym("batch"), 4, 8});
  g.node("Flatten", "f", 13, {x}, {{"axis", Attribute::of_int(2)}});
  EXPECT_EQ(g.type(), "f32[batch*seq, 32]");
  TestGraph whole;
  Value* y = whole.input("y", DType::kFloat32, {sym("seq"), 3});
  whole.node("Flatten", "f", 13, {y}, {{"axis", Attribute::of_int(2)}});
  EXPECT_EQ(whole.type(), "f32[3*seq, 1]");
}

TEST(TensorExpandShape, BroadcastsAgainstAShapeFromShapeOf) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 40});
  Value* y = g.input("y", DType::kFloat32, {sym("seq"), sym("batch"), 40});
  Value* shape = g.node("Shape", "shape", 13, {y})->output(0);
  g.node("Expand", "e", 13, {x, shape});
  EXPECT_EQ(g.type(), "f32[seq, batch, 40]");
}

TEST(TensorTileShape, MultipliesDims) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), 2});
  g.node("Tile", "t", 13, {x, g.constant("repeats", i64s({2, 3}))});
  EXPECT_EQ(g.type(), "f32[2*seq, 6]");
}

TEST(TensorPadShape, AddsPadsToSymbolicDims) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), 3});
  g.node("Pad", "p", 13, {x, g.constant("pads", i64s({2, 0, 1, -1}))});
  EXPECT_EQ(g.type(), "f32[seq + 3, 2]");
}

TEST(TensorSplitShape, EvenSplitOfASymbolicMultiple) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {4, sym("seq")});
  Value* doubled = g.node("Concat", "c", 13, {x, x}, {{"axis", Attribute::of_int(1)}})->output(0);
  g.node("Split", "s", 13, {doubled}, {{"axis", Attribute::of_int(1)}}, 2);
  EXPECT_EQ(g.type(0), "f32[4, seq]");
  EXPECT_EQ(g.type(1), "f32[4, seq]");
}

TEST(TensorSplitShape, NumOutputsLeavesTheLastChunkSmaller) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {7, sym("batch")});
  g.node("Split", "s", 18, {x}, {{"num_outputs", Attribute::of_int(3)}}, 3);
  EXPECT_EQ(g.type(0), "f32[3, batch]");
  EXPECT_EQ(g.type(2), "f32[1, batch]");
}

TEST(TensorGatherShape, IndicesReplaceTheAxis) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), sym("batch"), 40});
  Value* indices = g.input("i", DType::kInt64, {5, 2});
  g.node("Gather", "g", 13, {x, indices}, {{"axis", Attribute::of_int(1)}});
  EXPECT_EQ(g.type(), "f32[seq, 5, 2, 40]");
}

TEST(TensorRangeShape, ZeroToASymbolicLimit) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), 40});
  Value* shape = g.node("Shape", "shape", 15, {x}, {{"end", Attribute::of_int(1)}})->output(0);
  Value* length =
      g.node("Squeeze", "length", 13, {shape, g.constant("axes", i64s({0}))})->output(0);
  g.node("Range", "r", 13,
         {g.constant("start", Tensor::scalar<int64_t>(0)), length,
          g.constant("delta", Tensor::scalar<int64_t>(1))});
  EXPECT_EQ(g.type(), "i64[seq]");
}

TEST(TensorShapeShape, StartAndEndSliceTheDimsValue) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), sym("batch"), 40});
  Node* shape = g.node("Shape", "shape", 15, {x}, {{"start", Attribute::of_int(-2)}});
  EXPECT_EQ(g.type(), "i64[2]");
  EXPECT_EQ(shape_to_string(*shape->output(0)->symbolic_value), "[batch, 40]");
}

TEST(TensorSizeShape, DimsValueIsTheSymbolicProduct) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), 40});
  Node* size = g.node("Size", "n", 13, {x});
  EXPECT_EQ(g.type(), "i64[]");
  EXPECT_EQ(shape_to_string(*size->output(0)->symbolic_value), "[40*seq]");
}

TEST(TensorConstantShape, AttachesItsDataForDownstreamInference) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), 8});
  Value* shape =
      g.node("Constant", "k", 13, {}, {{"value", tensor_attr(i64s({-1, 2, 4}))}})->output(0);
  g.node("Reshape", "r", 13, {x, shape});
  EXPECT_EQ(g.type(), "f32[seq, 2, 4]");
  ASSERT_TRUE(shape->is_constant());
  EXPECT_EQ(values_of<int64_t>(*shape->constant()), (std::vector<int64_t>{-1, 2, 4}));
}

TEST(TensorCastShape, Int32RoundTripKeepsTheDimsValue) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), 40});
  Value* shape = g.node("Shape", "shape", 13, {x})->output(0);
  Value* narrow = g.node("Cast", "narrow", 13, {shape}, {{"to", Attribute::of_int(6)}})->output(0);
  Value* wide = g.node("Cast", "wide", 13, {narrow}, {{"to", Attribute::of_int(7)}})->output(0);
  g.node("ConstantOfShape", "zeros", 13, {wide});
  EXPECT_EQ(g.type(), "f32[seq, 40]");
}

// PyTorch's export of `torch.zeros(1, x.size(1), 128)`: the chain the brief names, at both the
// attribute (opset 11) and input (opset 13) forms of Unsqueeze's axes.
TEST(TensorDimsValue, PyTorchShapeGatherUnsqueezeConcatConstantOfShape) {
  for (int opset : {11, 13}) {
    TestGraph g;
    Value* x = g.input("x", DType::kFloat32, {sym("seq"), sym("batch"), 40});
    Value* shape = g.node("Shape", "shape", opset, {x})->output(0);
    Value* batch =
        g.node("Gather", "batch", opset, {shape, g.constant("one", Tensor::scalar<int64_t>(1))})
            ->output(0);
    Value* batch_1d =
        opset >= 13
            ? g.node("Unsqueeze", "unsqueeze", opset, {batch, g.constant("axes", i64s({0}))})
                  ->output(0)
            : g.node("Unsqueeze", "unsqueeze", opset, {batch}, {{"axes", Attribute::of_ints({0})}})
                  ->output(0);
    Value* dims =
        g.node("Concat", "dims", opset,
               {g.constant("first", i64s({1})), batch_1d, g.constant("last", i64s({128}))},
               {{"axis", Attribute::of_int(0)}})
            ->output(0);
    g.node("ConstantOfShape", "zeros", opset, {dims}, {{"value", tensor_attr(f32({1}, {0.0f}))}});
    EXPECT_EQ(g.type(), "f32[1, batch, 128]") << "opset " << opset;
    EXPECT_EQ(shape_to_string(*batch->symbolic_value), "[batch]");

    Tensor out = g.run({{"x", Tensor(DType::kFloat32, {3, 2, 40})}})[0];
    EXPECT_EQ(out.shape(), (std::vector<int64_t>{1, 2, 128}));
  }
}

// ---- inference errors ------------------------------------------------------------------------

TEST(TensorInferenceErrors, ReshapeElementCountMismatch) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("Reshape", "r", 14, {x, g.constant("shape", i64s({4, -1}))});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Reshape 'r' (opset 14): cannot reshape [2, 3] (6 elements) to [4, -1]");
}

TEST(TensorInferenceErrors, ReshapeTwoMinusOnes) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("Reshape", "r", 14, {x, g.constant("shape", i64s({-1, -1}))});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Reshape 'r' (opset 14): input 1 'shape' [-1, -1] has more than one -1");
}

TEST(TensorInferenceErrors, ConcatOffAxisDimMismatch) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {2, 3});
  Value* b = g.input("b", DType::kFloat32, {3, 5});
  g.node("Concat", "c", 13, {a, b}, {{"axis", Attribute::of_int(1)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Concat 'c' (opset 13): input 1 has shape [3, 5], expected [2, ?] (all dims but axis "
            "1 equal)");
}

TEST(TensorInferenceErrors, ConcatAxisOutOfRange) {
  TestGraph g;
  Value* a = g.input("a", DType::kFloat32, {2, 3});
  g.node("Concat", "c", 13, {a, a}, {{"axis", Attribute::of_int(2)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Concat 'c' (opset 13): attribute 'axis' = 2 is out of range for rank 2 (valid: [-2, "
            "1])");
}

TEST(TensorInferenceErrors, SliceZeroStep) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {4});
  g.node("Slice", "s", 13,
         {x, g.constant("starts", i64s({0})), g.constant("ends", i64s({4})),
          g.constant("axes", i64s({0})), g.constant("steps", i64s({0}))});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Slice 's' (opset 13): 'steps' has 0 for axis 0");
}

TEST(TensorInferenceErrors, SqueezeOfANonUnitDim) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("seq"), 3});
  g.node("Squeeze", "s", 13, {x, g.constant("axes", i64s({1}))});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Squeeze 's' (opset 13): 'axes' names axis 1 of [seq, 3], which has size 3 (only "
            "size-1 dims can be squeezed)");
}

TEST(TensorInferenceErrors, SqueezeAxesAttributeAfterOpset13) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 3});
  g.node("Squeeze", "s", 13, {x}, {{"axes", Attribute::of_ints({0})}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Squeeze 's' (opset 13): attribute 'axes' became input 1 in opset 13");
}

TEST(TensorInferenceErrors, UnsqueezeRepeatedAxis) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {3});
  g.node("Unsqueeze", "u", 13, {x, g.constant("axes", i64s({0, -3}))});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Unsqueeze 'u' (opset 13): 'axes' names axis 0 twice");
}

TEST(TensorInferenceErrors, TransposePermIsNotAPermutation) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3, 4});
  g.node("Transpose", "t", 13, {x}, {{"perm", Attribute::of_ints({0, 2, 2})}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Transpose 't' (opset 13): attribute 'perm' = [0, 2, 2] is not a permutation of the "
            "axes of [2, 3, 4]");
}

TEST(TensorInferenceErrors, GatherConstantIndexOutOfRange) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {3, 4});
  g.node("Gather", "g", 13, {x, g.constant("i", i64s({-4, -5}))}, {{"axis", Attribute::of_int(1)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Gather 'g' (opset 13): input 1 'indices' element 1 = -5 is out of range for axis 1 of "
            "size 4 (valid: [-4, 3])");
}

TEST(TensorInferenceErrors, SplitSizesThatDoNotSum) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("n"), 6});
  g.node("Split", "s", 13, {x, g.constant("split", i64s({2, 3}))}, {{"axis", Attribute::of_int(1)}}, 2);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Split 's' (opset 13): 'split' [2, 3] sums to 5 but dim 1 of [n, 6] is 6");
}

TEST(TensorInferenceErrors, SplitUnevenWithoutSizes) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {5});
  g.node("Split", "s", 13, {x}, {}, 2);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Split 's' (opset 13): dim 0 of [5] (5) does not split evenly into 2 outputs");
}

TEST(TensorInferenceErrors, SplitNumOutputsThatLeavesANegativeChunk) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {5});
  g.node("Split", "s", 18, {x}, {{"num_outputs", Attribute::of_int(4)}}, 4);
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Split 's' (opset 18): attribute 'num_outputs' = 4 cannot split dim 0 of size 5: "
            "chunks of 2 leave -1 for the last output");
}

TEST(TensorInferenceErrors, PadThatMakesADimNegative) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("Pad", "p", 13, {x, g.constant("pads", i64s({0, -2, 0, -2}))});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Pad 'p' (opset 13): 'pads' [0, -2, 0, -2] makes dim 1 of [2, 3] negative (-1)");
}

TEST(TensorInferenceErrors, FlattenAxisBeyondTheRank) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("Flatten", "f", 13, {x}, {{"axis", Attribute::of_int(3)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Flatten 'f' (opset 13): attribute 'axis' = 3 is out of range for rank 2 (valid: [-2, "
            "2])");
}

TEST(TensorInferenceErrors, CastToANonType) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2});
  g.node("Cast", "c", 13, {x}, {{"to", Attribute::of_int(42)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Cast 'c' (opset 13): attribute 'to' = 42 is not an ONNX data type");
}

TEST(TensorInferenceErrors, CastToFloat8IsUnsupportedNotInvalid) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2});
  g.node("Cast", "c", 19, {x}, {{"to", Attribute::of_int(17)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kUnsupported),
            "Cast 'c' (opset 19): attribute 'to' = 17 (float8, int4, uint4 or float4) is not "
            "supported");
}

TEST(TensorInferenceErrors, ConstantWithTwoValues) {
  TestGraph g;
  Attribute one;
  one.kind = Attribute::Kind::kFloat;
  one.f = 1;
  g.node("Constant", "k", 13, {}, {{"value_float", one}, {"value_int", Attribute::of_int(1)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Constant 'k' (opset 13): needs exactly one value attribute, got 2 ('value_float', "
            "'value_int')");
}

TEST(TensorInferenceErrors, SparseConstantIsUnsupported) {
  TestGraph g;
  g.node("Constant", "k", 13, {}, {{"sparse_value", tensor_attr(f32({1}, {1}))}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kUnsupported),
            "Constant 'k' (opset 13): attribute 'sparse_value' (sparse tensors)");
}

// ---- kernel errors (data-dependent) ----------------------------------------------------------

TEST(TensorKernelErrors, GatherIndexOutOfRangeNamesTheValue) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {3});
  Value* i = g.input("i", DType::kInt64, {2});
  g.node("Gather", "g", 13, {x, i});
  std::map<std::string, Tensor> inputs = {{"x", f32({3}, {1, 2, 3})}, {"i", i64s({2, 3})}};
  EXPECT_EQ(error_of([&] { g.run(inputs); }, ErrorKind::kInvalidInput),
            "Gather 'g' (opset 13): input 1 'indices' element 1 = 3 is out of range for axis 0 of "
            "size 3 (valid: [-3, 2])");
}

TEST(TensorKernelErrors, ReshapeMismatchAtRunTime) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("n"), 3});
  g.node("Reshape", "r", 14, {x, g.constant("shape", i64s({4, -1}))});
  std::map<std::string, Tensor> inputs = {{"x", Tensor(DType::kFloat32, {2, 3})}};
  EXPECT_EQ(error_of([&] { g.run(inputs); }, ErrorKind::kInvalidInput),
            "Reshape 'r' (opset 14): cannot reshape [2, 3] (6 elements) to [4, -1]");
}

TEST(TensorKernelErrors, ConstantOfShapeNegativeDim) {
  TestGraph g;
  Value* shape = g.input("shape", DType::kInt64, {2});
  g.node("ConstantOfShape", "z", 13, {shape});
  std::map<std::string, Tensor> inputs = {{"shape", i64s({2, -1})}};
  EXPECT_EQ(error_of([&] { g.run(inputs); }, ErrorKind::kInvalidInput),
            "ConstantOfShape 'z' (opset 13): input 0 'input' [2, -1] has a negative size");
}

TEST(TensorKernelErrors, CastOfANonNumericString) {
  TestGraph g;
  Value* x = g.input("x", DType::kString, {2});
  g.node("Cast", "c", 13, {x}, {{"to", Attribute::of_int(1)}});
  Tensor text(DType::kString, {2});
  text.strings() = {"1.5", "abc"};
  EXPECT_EQ(error_of(
                [&] {
                  g.run({{"x", text}});
                },
                ErrorKind::kInvalidInput),
            "Cast 'c' (opset 13): input 0 element 1 is \"abc\", which is not a number");
}

// ---- numbers the official cases miss ---------------------------------------------------------

std::vector<float> slice_values(int64_t start, int64_t end, int64_t step) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {10});
  g.node("Slice", "s", 13,
         {x, g.constant("starts", i64s({start})), g.constant("ends", i64s({end})),
          g.constant("axes", i64s({0})), g.constant("steps", i64s({step}))});
  return values_of<float>(g.run({{"x", f32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})}})[0]);
}

TEST(TensorSliceKernel, NegativeStepsClampBothEnds) {
  // numpy agrees: a[20:-100:-3], a[-1::-1], a[5:5:-1], a[-2:-20:-4].
  EXPECT_EQ(slice_values(20, -100, -3), (std::vector<float>{9, 6, 3, 0}));
  EXPECT_EQ(slice_values(-1, kInt64Min, -1), (std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(slice_values(5, 5, -1), (std::vector<float>{}));
  EXPECT_EQ(slice_values(-2, -20, -4), (std::vector<float>{8, 4, 0}));
  EXPECT_EQ(slice_values(kInt64Min, kInt64Max, kInt64Max), (std::vector<float>{0}));
}

TEST(TensorSliceKernel, BackwardStartBeforeTheFirstElementClampsToIt) {
  // The spec clamps a backward start into [0, d - 1], so -12 on 10 elements starts at index 0 and
  // takes it; ONNX's own shape inference and ONNX Runtime agree. numpy (a[-12:-20:-1]) is empty.
  EXPECT_EQ(slice_values(-12, -20, -1), (std::vector<float>{0}));
}

TEST(TensorReshapeKernel, AllowZeroKeepsAZeroDim) {
  TestGraph zero;
  Value* x = zero.input("x", DType::kFloat32, {0, 3});
  zero.node("Reshape", "r", 14, {x, zero.constant("shape", i64s({3, 0}))},
            {{"allowzero", Attribute::of_int(1)}});
  EXPECT_EQ(zero.run({{"x", Tensor(DType::kFloat32, {0, 3})}})[0].shape(),
            (std::vector<int64_t>{3, 0}));

  TestGraph copy;  // the same shape without allowzero copies dim 1 (3) and fails the count
  Value* y = copy.input("y", DType::kFloat32, {sym("n"), 3});
  copy.node("Reshape", "r", 14, {y, copy.constant("shape", i64s({3, 0}))});
  EXPECT_EQ(error_of(
                [&] {
                  copy.run({{"y", Tensor(DType::kFloat32, {0, 3})}});
                },
                ErrorKind::kInvalidInput),
            "Reshape 'r' (opset 14): cannot reshape [0, 3] (0 elements) to [3, 0]");
}

std::vector<float> pad_1d(std::vector<float> data, std::vector<int64_t> pads, const char* mode) {
  TestGraph g;
  int64_t n = static_cast<int64_t>(data.size());
  Value* x = g.input("x", DType::kFloat32, {n});
  g.node("Pad", "p", 13,
         {x, g.constant("pads", i64s(pads)), g.constant("value", Tensor::scalar<float>(-1))},
         {{"mode", Attribute::of_string(mode)}});
  return values_of<float>(g.run({{"x", f32({n}, data)}})[0]);
}

TEST(TensorPadKernel, OneDimensionalModesAtTheEdges) {
  // numpy.pad agrees for reflect (including pads longer than the data) and edge.
  EXPECT_EQ(pad_1d({1, 2, 3, 4}, {2, 3}, "reflect"),
            (std::vector<float>{3, 2, 1, 2, 3, 4, 3, 2, 1}));
  EXPECT_EQ(pad_1d({1, 2, 3}, {4, 0}, "reflect"), (std::vector<float>{1, 2, 3, 2, 1, 2, 3}));
  EXPECT_EQ(pad_1d({7}, {2, 1}, "reflect"), (std::vector<float>{7, 7, 7, 7}));
  EXPECT_EQ(pad_1d({1, 2, 3}, {2, 1}, "edge"), (std::vector<float>{1, 1, 1, 2, 3, 3}));
  EXPECT_EQ(pad_1d({1, 2, 3}, {1, 1}, "constant"), (std::vector<float>{-1, 1, 2, 3, -1}));
  // Negative pads crop; the reflection stays relative to the uncropped input.
  EXPECT_EQ(pad_1d({1, 2, 3, 4}, {-1, 2}, "reflect"), (std::vector<float>{2, 3, 4, 3, 2}));
}

TEST(TensorGatherKernel, NegativeIndicesCountFromTheEnd) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("Gather", "g", 13, {x, g.constant("i", i64({2, 2}, {-1, 0, -3, 2}))},
         {{"axis", Attribute::of_int(1)}});
  Tensor out = g.run({{"x", f32({2, 3}, {10, 20, 30, 40, 50, 60})}})[0];
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{30, 10, 10, 30, 60, 40, 40, 60}));
}

TEST(TensorSplitKernel, UnevenNumOutputsGivesTheRestToTheLast) {
  TestGraph g;
  Value* x = g.input("x", DType::kInt64, {7});
  g.node("Split", "s", 18, {x}, {{"num_outputs", Attribute::of_int(3)}}, 3);
  std::vector<Tensor> parts = g.run({{"x", i64s({1, 2, 3, 4, 5, 6, 7})}});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(values_of<int64_t>(parts[0]), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(values_of<int64_t>(parts[1]), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(values_of<int64_t>(parts[2]), (std::vector<int64_t>{7}));
}

Tensor cast(const Tensor& input, DType to, int opset = 13) {
  TestGraph g;
  Value* x = g.input("x", input.dtype(), shape_from_values(input.shape()));
  g.node("Cast", "c", opset, {x}, {{"to", Attribute::of_int(static_cast<int64_t>(to))}});
  return g.run({{"x", input}})[0];
}

TEST(TensorCastKernel, FloatToInt8TruncatesAndSaturatesNaNIsZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor out =
      cast(f32({9}, {300.7f, -300.2f, nan, 127.9f, -128.9f, 1.5f, -1.5f, inf, -inf}), DType::kInt8);
  // numpy wraps (300.7 -> 44) and maps inf to 0; rnnc saturates instead (docs/ops/tensor.md).
  EXPECT_EQ(values_of<int8_t>(out),
            (std::vector<int8_t>{127, -128, 0, 127, -128, 1, -1, 127, -128}));
}

TEST(TensorCastKernel, IntToIntKeepsTheLowBits) {
  Tensor out = cast(i64s({300, -129, 255, kInt64Min}), DType::kInt8);
  EXPECT_EQ(values_of<int8_t>(out), (std::vector<int8_t>{44, 127, -1, 0}));
}

uint16_t half_bits(const Tensor& tensor, int64_t i) { return tensor.data<uint16_t>()[i]; }

TEST(TensorCastKernel, FloatToFloat16RoundsToNearestEven) {
  Tensor out = cast(
      f32({6}, {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65519.0f, 65520.0f, 0x1p-25f, 0x1.8p-24f}),
      DType::kFloat16);
  EXPECT_EQ(half_bits(out, 0), 0x3c00);  // tie -> even (1.0)
  EXPECT_EQ(half_bits(out, 1), 0x3c02);  // tie -> even (1 + 2^-9)
  EXPECT_EQ(half_bits(out, 2), 0x7bff);  // 65504, the largest half
  EXPECT_EQ(half_bits(out, 3), 0x7c00);  // rounds past the largest half: inf
  EXPECT_EQ(half_bits(out, 4), 0x0000);  // half of the smallest subnormal: tie -> 0
  EXPECT_EQ(half_bits(out, 5), 0x0002);  // 1.5 subnormal steps: tie -> 2 steps
}

TEST(TensorCastKernel, DoubleToFloat16RoundsOnceNotTwice) {
  // 1 + 2^-11 + 2^-40 lies just above the half-way point between two halves. Rounding through
  // float first lands exactly on the tie and then rounds down to 1.0; one rounding gives 1 + 2^-10
  // (numpy agrees).
  Tensor out = cast(Tensor::from_vector<double>({1}, {1.0 + 0x1p-11 + 0x1p-40}), DType::kFloat16);
  EXPECT_EQ(half_bits(out, 0), 0x3c01);
}

TEST(TensorCastKernel, StringsRoundTripShortestPlainNumbers) {
  Tensor text = cast(f32({5}, {0.1f, -2.5f, 1e-5f, std::numeric_limits<float>::quiet_NaN(),
                               -std::numeric_limits<float>::infinity()}),
                     DType::kString);
  EXPECT_EQ(text.strings(), (std::vector<std::string>{"0.1", "-2.5", "0.00001", "NaN", "-INF"}));
  Tensor half = cast(cast(f32({1}, {0.1f}), DType::kFloat16), DType::kString);
  EXPECT_EQ(half.strings()[0], "0.1");  // shortest for the half value, not its float expansion

  Tensor numbers(DType::kString, {4});
  numbers.strings() = {"2.7", "-2.7", "300", "+INF"};
  EXPECT_EQ(values_of<int8_t>(cast(numbers, DType::kInt8)), (std::vector<int8_t>{2, -2, 44, 127}));
  Tensor big(DType::kString, {1});
  big.strings() = {"9007199254740993"};  // 2^53 + 1: exact as int64, not as a double
  EXPECT_EQ(values_of<int64_t>(cast(big, DType::kInt64)), (std::vector<int64_t>{9007199254740993}));
}

TEST(TensorRangeKernel, NegativeAndEmptyRanges) {
  TestGraph g;
  Value* start = g.input("start", DType::kInt32, {});
  Value* limit = g.input("limit", DType::kInt32, {});
  Value* delta = g.input("delta", DType::kInt32, {});
  g.node("Range", "r", 11, {start, limit, delta});
  auto range = [&](int32_t a, int32_t b, int32_t d) {
    return values_of<int32_t>(g.run({{"start", Tensor::scalar<int32_t>(a)},
                                     {"limit", Tensor::scalar<int32_t>(b)},
                                     {"delta", Tensor::scalar<int32_t>(d)}})[0]);
  };
  EXPECT_EQ(range(10, 4, -3), (std::vector<int32_t>{10, 7}));
  EXPECT_EQ(range(4, 10, -3), (std::vector<int32_t>{}));
  EXPECT_EQ(error_of([&] { range(0, 1, 0); }, ErrorKind::kInvalidInput),
            "Range 'r' (opset 11): input 2 'delta' is 0");
}

TEST(TensorNonZeroKernel, CoordinatesInRowMajorOrder) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("NonZero", "nz", 13, {x});
  EXPECT_EQ(g.type(), "i64[2, ?]");
  Tensor out = g.run({{"x", f32({2, 3}, {0, 1, 0, 2, 0, std::nanf("")})}})[0];
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));
}

TEST(TensorScatterElementsKernel, ReductionsApplyInIndexOrder) {
  TestGraph g;
  Value* data = g.input("data", DType::kFloat32, {4});
  Value* indices = g.input("indices", DType::kInt64, {3});
  Value* updates = g.input("updates", DType::kFloat32, {3});
  g.node("ScatterElements", "s", 18, {data, indices, updates}, {{"reduction", Attribute::of_string("max")}});
  Tensor out = g.run({{"data", f32({4}, {1, 5, 1, 1})},
                      {"indices", i64s({1, 1, -1})},
                      {"updates", f32({3}, {7, 3, 9})}})[0];
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{1, 7, 1, 9}));
}

TEST(TensorTransposeKernel, StringsMoveLikeNumbers) {
  TestGraph g;
  Value* x = g.input("x", DType::kString, {2, 2});
  g.node("Transpose", "t", 13, {x});
  Tensor text(DType::kString, {2, 2});
  text.strings() = {"a", "b", "c", "d"};
  EXPECT_EQ(g.run({{"x", text}})[0].strings(), (std::vector<std::string>{"a", "c", "b", "d"}));
}

// ---- ScatterND, GatherND -------------------------------------------------------------------------

TEST(TensorScatterNDKernel, SliceUpdatesWithNegativeTuples) {
  TestGraph g;
  Value* data = g.input("data", DType::kFloat32, {3, 2});
  g.node("ScatterND", "s", 13,
         {data, g.constant("indices", i64({2, 1}, {-1, 0})),
          g.constant("updates", f32({2, 2}, {7, 8, 9, 10}))});
  EXPECT_EQ(g.type(), "f32[3, 2]");
  Tensor out = g.run({{"data", f32({3, 2}, {1, 2, 3, 4, 5, 6})}})[0];
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{9, 10, 3, 4, 7, 8}));
}

TEST(TensorScatterNDKernel, ReductionsCombineRepeatedTuplesInOrder) {
  TestGraph g;
  Value* data = g.input("data", DType::kInt64, {2, 2});
  g.node("ScatterND", "s", 18,
         {data, g.constant("indices", i64({3, 2}, {0, 1, 0, 1, 1, 0})),
          g.constant("updates", i64({3}, {-5, 9, 4}))},
         {{"reduction", Attribute::of_string("min")}});
  Tensor out = g.run({{"data", i64({2, 2}, {1, 2, 3, 4})}})[0];
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{1, -5, 3, 4}));
}

TEST(TensorScatterNDErrors, ReductionNeedsItsOpset) {
  TestGraph g;
  Value* data = g.input("data", DType::kFloat32, {4});
  g.node("ScatterND", "s", 13,
         {data, g.constant("indices", i64({1, 1}, {0})), g.constant("updates", f32({1}, {1}))},
         {{"reduction", Attribute::of_string("mul")}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "ScatterND 's' (opset 13): attribute 'reduction' = 'mul' is not valid at this opset "
            "(none; add, mul from 16; max, min from 18)");
}

TEST(TensorScatterNDErrors, UpdatesMustBeIndicesPrefixThenDataSuffix) {
  TestGraph g;
  Value* data = g.input("data", DType::kFloat32, {4, 5, 6});
  Value* indices = g.input("indices", DType::kInt64, {2, 3, 1});
  Value* updates = g.input("updates", DType::kFloat32, {2, 3, 6});
  g.node("ScatterND", "s", 16, {data, indices, updates});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "ScatterND 's' (opset 16): input 2 'updates' [2, 3, 6] must have shape [2, 3, 5, 6] "
            "(indices.shape[:-1] + data.shape[k:])");
}

TEST(TensorScatterNDErrors, TupleLongerThanTheRank) {
  TestGraph g;
  Value* data = g.input("data", DType::kFloat32, {4, 5});
  Value* indices = g.input("indices", DType::kInt64, {2, 3});
  Value* updates = g.input("updates", DType::kFloat32, {2});
  g.node("ScatterND", "s", 16, {data, indices, updates});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "ScatterND 's' (opset 16): input 1 'indices' [2, 3] has tuples of 3 indices, expected "
            "0 to 2 for input 0 'data' [4, 5]");
}

TEST(TensorScatterNDErrors, IndexOutOfRangeAtRunTime) {
  TestGraph g;
  Value* data = g.input("data", DType::kFloat32, {4});
  Value* indices = g.input("indices", DType::kInt64, {1, 1});
  g.node("ScatterND", "s", 16, {data, indices, g.constant("updates", f32({1}, {1}))});
  EXPECT_EQ(error_of(
                [&] {
                  g.run({{"data", f32({4}, {0, 0, 0, 0})}, {"indices", i64({1, 1}, {4})}});
                },
                ErrorKind::kInvalidInput),
            "ScatterND 's' (opset 16): input 1 'indices' element 0 = 4 is out of range for axis 0 "
            "of size 4 (valid: [-4, 3])");
}

TEST(TensorGatherNDKernel, BatchDimsPickPerBatchEntry) {
  TestGraph g;
  Value* data = g.input("data", DType::kInt32, {2, 2, 2});
  g.node("GatherND", "g", 12, {data, g.constant("indices", i64({2, 1, 2}, {0, 1, -1, 0}))},
         {{"batch_dims", Attribute::of_int(1)}});
  EXPECT_EQ(g.type(), "i32[2, 1]");
  Tensor out =
      g.run({{"data", Tensor::from_vector<int32_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7})}})[0];
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{1, 6}));
}

TEST(TensorGatherNDShape, SymbolicDimsCarryOver) {
  TestGraph g;
  Value* data = g.input("data", DType::kFloat32, {sym("batch"), 5, sym("feature")});
  Value* indices = g.input("indices", DType::kInt64, {sym("batch"), sym("n"), 1});
  g.node("GatherND", "g", 13, {data, indices}, {{"batch_dims", Attribute::of_int(1)}});
  EXPECT_EQ(g.type(), "f32[batch, n, feature]");
}

TEST(TensorGatherNDErrors, BatchDimsNeedOpset12) {
  TestGraph g;
  Value* data = g.input("data", DType::kFloat32, {2, 3});
  Value* indices = g.input("indices", DType::kInt64, {2, 1});
  g.node("GatherND", "g", 11, {data, indices}, {{"batch_dims", Attribute::of_int(1)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "GatherND 'g' (opset 11): attribute 'batch_dims' needs opset 12 or later");
}

TEST(TensorGatherNDErrors, IndicesMustBeInt64) {
  TestGraph g;
  Value* data = g.input("data", DType::kFloat32, {2, 3});
  Value* indices = g.input("indices", DType::kInt32, {2, 1});
  g.node("GatherND", "g", 13, {data, indices});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "GatherND 'g' (opset 13): input 1 'indices' must be int64, got int32");
}

// ---- DepthToSpace, SpaceToDepth
// ------------------------------------------------------------------

TEST(TensorDepthToSpaceShape, SpatialDimsGrowByTheBlock) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("batch"), 8, sym("h"), 3});
  g.node("DepthToSpace", "d", 13, {x}, {{"blocksize", Attribute::of_int(2)}});
  EXPECT_EQ(g.type(), "f32[batch, 2, 2*h, 6]");
}

TEST(TensorDepthToSpaceKernel, CrdTakesDepthInnermost) {
  // C = 8 = 2 x 2 x 2, H = W = 1: output (c, i, j) reads channel c*4 + i*2 + j in CRD and
  // (i*2 + j)*2 + c in DCR.
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 8, 1, 1});
  g.node("DepthToSpace", "d", 13, {x}, {{"blocksize", Attribute::of_int(2)}, {"mode", Attribute::of_string("CRD")}});
  Tensor out = g.run({{"x", f32({1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7})}})[0];
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{1, 2, 2, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  TestGraph dcr;
  Value* y = dcr.input("x", DType::kFloat32, {1, 8, 1, 1});
  dcr.node("DepthToSpace", "d", 13, {y}, {{"blocksize", Attribute::of_int(2)}});
  Tensor out_dcr = dcr.run({{"x", f32({1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7})}})[0];
  EXPECT_EQ(values_of<float>(out_dcr), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
}

TEST(TensorDepthToSpaceErrors, ModeNeedsOpset11AndAKnownValue) {
  TestGraph old;
  Value* x = old.input("x", DType::kFloat32, {1, 4, 2, 2});
  old.node("DepthToSpace", "d", 10, {x},
           {{"blocksize", Attribute::of_int(2)}, {"mode", Attribute::of_string("CRD")}});
  EXPECT_EQ(error_of([&] { old.infer(); }, ErrorKind::kInvalidModel),
            "DepthToSpace 'd' (opset 10): attribute 'mode' needs opset 11 or later");
  TestGraph bad;
  Value* y = bad.input("x", DType::kFloat32, {1, 4, 2, 2});
  bad.node("DepthToSpace", "d", 13, {y},
           {{"blocksize", Attribute::of_int(2)}, {"mode", Attribute::of_string("RCD")}});
  EXPECT_EQ(error_of([&] { bad.infer(); }, ErrorKind::kInvalidModel),
            "DepthToSpace 'd' (opset 13): attribute 'mode' = 'RCD', expected DCR or CRD");
}

TEST(TensorDepthToSpaceErrors, ChannelsMustBeAMultipleOfTheBlockArea) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 6, 2, 2});
  g.node("DepthToSpace", "d", 13, {x}, {{"blocksize", Attribute::of_int(2)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "DepthToSpace 'd' (opset 13): input 0 channels C (blocksize^2) 6 is not a multiple "
            "of 4");
}

TEST(TensorSpaceToDepthErrors, BlocksizeIsRequiredAndSpatialDimsMustDivide) {
  TestGraph missing;
  Value* x = missing.input("x", DType::kFloat32, {1, 1, 4, 4});
  missing.node("SpaceToDepth", "s", 13, {x});
  EXPECT_EQ(error_of([&] { missing.infer(); }, ErrorKind::kInvalidModel),
            "SpaceToDepth 's' (opset 13): attribute 'blocksize' is required");
  TestGraph uneven;
  Value* y = uneven.input("x", DType::kFloat32, {1, 1, 4, 5});
  uneven.node("SpaceToDepth", "s", 13, {y}, {{"blocksize", Attribute::of_int(2)}});
  EXPECT_EQ(error_of([&] { uneven.infer(); }, ErrorKind::kInvalidModel),
            "SpaceToDepth 's' (opset 13): input 0 width W 5 is not a multiple of 2");
}

// ---- Trilu, EyeLike -----------------------------------------------------------------------------

TEST(TensorTriluKernel, LowerWithNegativeKOnABatchOfMatrices) {
  TestGraph g;
  Value* x = g.input("x", DType::kInt32, {2, 2, 3});
  g.node("Trilu", "t", 14, {x, g.constant("k", Tensor::scalar<int64_t>(-1))},
         {{"upper", Attribute::of_int(0)}});
  EXPECT_EQ(g.type(), "i32[2, 2, 3]");
  Tensor out = g.run(
      {{"x", Tensor::from_vector<int32_t>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})}})[0];
  // Only j - i <= -1 survives: element (1, 0) of each matrix.
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{0, 0, 0, 4, 0, 0, 0, 0, 0, 10, 0, 0}));
}

TEST(TensorTriluErrors, InputNeedsTwoDims) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {4});
  g.node("Trilu", "t", 14, {x});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Trilu 't' (opset 14): input 0 'input' has shape [4], expected rank >= 2");
}

TEST(TensorEyeLikeKernel, DiagonalAboveTheMainOneInAnotherType) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("EyeLike", "e", 9, {x},
         {{"k", Attribute::of_int(1)}, {"dtype", Attribute::of_int(static_cast<int64_t>(DType::kInt64))}});
  EXPECT_EQ(g.type(), "i64[2, 3]");
  Tensor out = g.run({{"x", f32({2, 3}, {0, 0, 0, 0, 0, 0})}})[0];
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 1, 0, 0, 0, 1}));
}

TEST(TensorEyeLikeErrors, StringsAreNotAllowed) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 2});
  g.node("EyeLike", "e", 9, {x}, {{"dtype", Attribute::of_int(static_cast<int64_t>(DType::kString))}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "EyeLike 'e' (opset 9): attribute 'dtype' = 8 is not a numeric type or bool (not "
            "bfloat16 or string)");
}

// ---- OneHot, Compress ----------------------------------------------------------------------------

TEST(TensorOneHotKernel, NegativeAndOutOfRangeIndicesAlongAxisZero) {
  TestGraph g;
  Value* indices = g.input("indices", DType::kFloat32, {4});
  g.node("OneHot", "o", 11,
         {indices, g.constant("depth", Tensor::scalar<int64_t>(3)),
          g.constant("values", i64s({-1, 5}))},
         {{"axis", Attribute::of_int(0)}});
  EXPECT_EQ(g.type(), "i64[3, 4]");
  // 1.7 truncates to 1; -1 is the last row; 3 and -4 are outside [-3, 2]: all off.
  Tensor out = g.run({{"indices", f32({4}, {1.7f, -1, 3, -4})}})[0];
  EXPECT_EQ(values_of<int64_t>(out),
            (std::vector<int64_t>{-1, -1, -1, -1, 5, -1, -1, -1, -1, 5, -1, -1}));
}

TEST(TensorOneHotErrors, ValuesMustBeAPair) {
  TestGraph g;
  Value* indices = g.input("indices", DType::kInt64, {4});
  g.node("OneHot", "o", 11,
         {indices, g.constant("depth", Tensor::scalar<int64_t>(3)),
          g.constant("values", i64s({0, 1, 2}))});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "OneHot 'o' (opset 11): input 2 'values' has shape [3], expected [2] (off_value, "
            "on_value)");
}

TEST(TensorOneHotErrors, DepthMustBePositive) {
  TestGraph g;
  Value* indices = g.input("indices", DType::kInt64, {4});
  g.node("OneHot", "o", 11,
         {indices, g.constant("depth", Tensor::scalar<float>(0.5f)),
          g.constant("values", i64s({0, 1}))});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "OneHot 'o' (opset 11): input 1 'depth' = 0, must be >= 1");
}

TEST(TensorCompressKernel, ShortConditionDropsTheRest) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  Value* condition = g.input("condition", DType::kBool, {2});
  g.node("Compress", "c", 11, {x, condition}, {{"axis", Attribute::of_int(-1)}});
  EXPECT_EQ(g.type(), "f32[2, ?]");
  Tensor keep(DType::kBool, {2});
  keep.data<bool>()[0] = false;
  keep.data<bool>()[1] = true;
  Tensor out = g.run({{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"condition", keep}})[0];
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{2, 5}));
}

TEST(TensorCompressErrors, NegativeAxisNeedsOpset11) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  Value* condition = g.input("condition", DType::kBool, {2});
  g.node("Compress", "c", 9, {x, condition}, {{"axis", Attribute::of_int(-1)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "Compress 'c' (opset 9): attribute 'axis' = -1 is negative, which needs opset 11 or "
            "later");
}

// ---- ReverseSequence, Unique ----------------------------------------------------------------------

TEST(TensorReverseSequenceKernel, BatchFirstWithLengthsZeroToFull) {
  TestGraph g;
  Value* x = g.input("x", DType::kInt64, {3, 3});
  g.node("ReverseSequence", "r", 10, {x, g.constant("lens", i64s({0, 2, 3}))},
         {{"batch_axis", Attribute::of_int(0)}, {"time_axis", Attribute::of_int(1)}});
  Tensor out = g.run({{"x", i64({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}})[0];
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{1, 2, 3, 5, 4, 6, 9, 8, 7}));
}

TEST(TensorReverseSequenceErrors, AxesMustBeZeroAndOne) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {3, 3});
  g.node("ReverseSequence", "r", 10, {x, g.constant("lens", i64s({1, 1, 1}))},
         {{"batch_axis", Attribute::of_int(0)}, {"time_axis", Attribute::of_int(0)}});
  EXPECT_EQ(error_of([&] { g.infer(); }, ErrorKind::kInvalidModel),
            "ReverseSequence 'r' (opset 10): attributes 'batch_axis' and 'time_axis' are both 0");
}

TEST(TensorUniqueKernel, UnsortedKeepsFirstOccurrenceOrder) {
  TestGraph g;
  Value* x = g.input("x", DType::kFloat32, {6});
  g.node("Unique", "u", 11, {x}, {{"sorted", Attribute::of_int(0)}}, 4);
  EXPECT_EQ(g.type(2), "i64[6]");
  std::vector<Tensor> out = g.run({{"x", f32({6}, {2, 1, 1, 3, 4, 3})}});
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(out[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(values_of<int64_t>(out[3]), (std::vector<int64_t>{1, 2, 2, 1}));
}

}  // namespace
}  // namespace rnnc
