// Shape inference, error messages and reference-kernel numbers for the nn op group (Conv, pools,
// normalizations, reductions, ArgMax/ArgMin, Dropout): the cases the official ONNX backend tests
// miss. Expected numbers are worked out by hand or, where noted, computed with numpy (float64
// from the spec formulas, written independently of rnnc) and pasted as literals.
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

Attribute ints(std::vector<int64_t> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInts;
  attribute.ints = std::move(values);
  return attribute;
}

Attribute integer(int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInt;
  attribute.i = value;
  return attribute;
}

Attribute real(float value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kFloat;
  attribute.f = value;
  return attribute;
}

Attribute text(std::string value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kString;
  attribute.s = std::move(value);
  return attribute;
}

Dim sym(const std::string& name) { return Dim::symbol(name); }

// A graph holding one node under test: its inputs are graph inputs or initializers, its outputs
// ("<name>_out0", ...) are the graph outputs. build() runs shape inference as import would.
class OneNodeGraph {
 public:
  Value* input(const std::string& name, DType dtype, Shape shape) {
    TensorType type;
    type.dtype = dtype;
    type.shape = std::move(shape);
    return graph_.add_input(name, type);
  }
  Value* input_unknown_rank(const std::string& name, DType dtype) {
    TensorType type;
    type.dtype = dtype;
    return graph_.add_input(name, type);
  }
  Value* constant(const std::string& name, Tensor data) {
    return graph_.add_initializer(name, std::move(data));
  }
  // `outputs` names which outputs exist: "" leaves that output out.
  Node* node(const std::string& op_type, const std::string& name, int opset,
             const std::vector<Value*>& inputs, const std::map<std::string, Attribute>& attributes,
             std::vector<std::string> outputs = {"y"}) {
    node_ = graph_.add_node(op_type, name, inputs, outputs, opset);
    for (const auto& [key, attribute] : attributes) node_->set_attr(key, attribute);
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (node_->output(i)) graph_.add_output(node_->output(i));
    }
    return node_;
  }
  void build() { infer_graph(graph_); }
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) {
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

void expect_near_all(const Tensor& actual, const std::vector<double>& expected, double tolerance) {
  ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual.get_double(static_cast<int64_t>(i)), expected[i], tolerance)
        << "element " << i;
  }
}

std::vector<float> arange(int64_t count, float scale = 1.0f, float offset = 0.0f) {
  std::vector<float> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(static_cast<float>(i) * scale + offset);
  return out;
}

// ---- shape inference with symbolic dims --------------------------------------------------------

TEST(NnConvShape, StrideOneKeepsSymbolicTimeArithmetic) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("batch"), 4, sym("time")});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {8, 4, 3}));
  g.node("Conv", "conv", 11, {x, w}, {{"pads", ints({2, 1})}, {"dilations", ints({2})}});
  g.build();
  // time + 2 + 1 - ((3 - 1) * 2 + 1) + 1 = time - 1.
  EXPECT_EQ(shape_to_string(*g.output_type(0).shape), "[batch, 8, time - 1]");
}

TEST(NnConvShape, SameKeepsTimeAtStrideOneAndLosesItWhenStrided) {
  OneNodeGraph same;
  Value* x = same.input("x", DType::kFloat32, {1, 2, sym("time")});
  Value* w = same.constant("w", Tensor(DType::kFloat32, {3, 2, 4}));
  same.node("Conv", "conv", 11, {x, w}, {{"auto_pad", text("SAME_UPPER")}});
  same.build();
  EXPECT_EQ(shape_to_string(*same.output_type(0).shape), "[1, 3, time]");

  OneNodeGraph strided;
  x = strided.input("x", DType::kFloat32, {1, 2, sym("time")});
  w = strided.constant("w", Tensor(DType::kFloat32, {3, 2, 4}));
  strided.node("Conv", "conv", 11, {x, w},
               {{"auto_pad", text("SAME_LOWER")}, {"strides", ints({2})}});
  strided.build();
  EXPECT_EQ(shape_to_string(*strided.output_type(0).shape), "[1, 3, ?]");
}

TEST(NnConvShape, KnownDimsFollowTheFloorFormula) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat64, {2, 6, 7, 5});
  Value* w = g.constant("w", Tensor(DType::kFloat64, {4, 3, 3, 2}));
  g.node("Conv", "conv", 11, {x, w},
         {{"group", integer(2)}, {"strides", ints({2, 2})}, {"pads", ints({1, 0, 0, 1})}});
  g.build();
  // H: floor((7 + 1 + 0 - 3) / 2) + 1 = 3; W: floor((5 + 0 + 1 - 2) / 2) + 1 = 3.
  EXPECT_EQ(g.output_type(0).to_string(), "f64[2, 4, 3, 3]");
}

TEST(NnPoolShape, CeilModeDropsAWindowStartingInTheEndPadding) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 1, 5});
  g.node("MaxPool", "pool", 12, {x},
         {{"kernel_shape", ints({2})},
          {"strides", ints({2})},
          {"pads", ints({0, 1})},
          {"ceil_mode", integer(1)}},
         {"y", "indices"});
  g.build();
  // ceil((5 + 1 - 2) / 2) + 1 = 3, and the third window starts at 4 < 5: kept. See the next case.
  EXPECT_EQ(g.output_type(0).to_string(), "f32[1, 1, 3]");
  EXPECT_EQ(g.output_type(1).to_string(), "i64[1, 1, 3]");

  OneNodeGraph h;
  x = h.input("x", DType::kFloat32, {1, 1, 4});
  h.node("AveragePool", "pool", 11, {x},
         {{"kernel_shape", ints({2})},
          {"strides", ints({2})},
          {"pads", ints({0, 1})},
          {"ceil_mode", integer(1)}});
  h.build();
  // ceil((4 + 1 - 2) / 2) + 1 = 3, but the third window would start at 4, in the end padding.
  EXPECT_EQ(h.output_type(0).to_string(), "f32[1, 1, 2]");
}

TEST(NnPoolShape, GlobalPoolKeepsBatchAndChannels) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("batch"), 16, sym("time"), 3});
  g.node("GlobalAveragePool", "gap", 11, {x}, {});
  g.build();
  EXPECT_EQ(shape_to_string(*g.output_type(0).shape), "[batch, 16, 1, 1]");
}

TEST(NnReduceShape, NegativeAxesWithoutKeepdimsDropThoseDims) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("batch"), sym("time"), 80});
  g.node("ReduceMean", "r", 13, {x}, {{"axes", ints({-1, -3})}, {"keepdims", integer(0)}});
  g.build();
  EXPECT_EQ(shape_to_string(*g.output_type(0).shape), "[time]");
}

TEST(NnReduceShape, RunTimeAxesGiveUnknownDimsOrUnknownRank) {
  OneNodeGraph keep;
  Value* x = keep.input("x", DType::kFloat32, {sym("batch"), 1, 80});
  Value* axes = keep.input("axes", DType::kInt64, {sym("n")});
  keep.node("ReduceMax", "r", 18, {x, axes}, {});
  keep.build();
  EXPECT_EQ(shape_to_string(*keep.output_type(0).shape), "[?, 1, ?]");

  OneNodeGraph drop;
  x = drop.input("x", DType::kFloat32, {sym("batch"), 1, 80});
  axes = drop.input("axes", DType::kInt64, {sym("n")});
  drop.node("ReduceSum", "r", 13, {x, axes}, {{"keepdims", integer(0)}});
  drop.build();
  EXPECT_FALSE(drop.output_type(0).shape.has_value());
}

TEST(NnReduceShape, EmptyAxesInputReducesAllOrNothing) {
  OneNodeGraph all;
  Value* x = all.input("x", DType::kInt64, {sym("batch"), 3});
  Value* axes = all.constant("axes", Tensor(DType::kInt64, {0}));
  all.node("ReduceSum", "r", 13, {x, axes}, {{"keepdims", integer(0)}});
  all.build();
  EXPECT_EQ(all.output_type(0).to_string(), "i64[]");

  OneNodeGraph noop;
  x = noop.input("x", DType::kInt64, {sym("batch"), 3});
  axes = noop.constant("axes", Tensor(DType::kInt64, {0}));
  noop.node("ReduceSum", "r", 13, {x, axes},
            {{"keepdims", integer(0)}, {"noop_with_empty_axes", integer(1)}});
  noop.build();
  EXPECT_EQ(noop.output_type(0).to_string(), "i64[batch, 3]");
}

TEST(NnNormShape, LayerNormStatsKeepLeadingDimsInStashType) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat16, {sym("batch"), sym("time"), 4, 5});
  Value* scale = g.input("scale", DType::kFloat16, {4, 5});
  g.node("LayerNormalization", "ln", 17, {x, scale}, {{"axis", integer(-2)}},
         {"y", "mean", "inv_std"});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f16[batch, time, 4, 5]");
  EXPECT_EQ(g.output_type(1).to_string(), "f32[batch, time, 1, 1]");
  EXPECT_EQ(g.output_type(2).to_string(), "f32[batch, time, 1, 1]");
}

TEST(NnDropoutShape, MaskIsBoolFromOpset10AndDataTypedBefore) {
  OneNodeGraph g10;
  Value* x = g10.input("x", DType::kFloat64, {sym("time"), 3});
  g10.node("Dropout", "d", 10, {x}, {}, {"y", "mask"});
  g10.build();
  EXPECT_EQ(g10.output_type(1).to_string(), "bool[time, 3]");

  OneNodeGraph g7;
  x = g7.input("x", DType::kFloat64, {sym("time"), 3});
  g7.node("Dropout", "d", 7, {x}, {}, {"y", "mask"});
  g7.build();
  EXPECT_EQ(g7.output_type(1).to_string(), "f64[time, 3]");
}

TEST(NnArgShape, UnknownRankInputGivesUnknownRankOutput) {
  OneNodeGraph g;
  Value* x = g.input_unknown_rank("x", DType::kFloat32);
  g.node("ArgMax", "a", 13, {x}, {{"axis", integer(-1)}});
  g.build();
  EXPECT_EQ(g.output_type(0).dtype, DType::kInt64);
  EXPECT_FALSE(g.output_type(0).shape.has_value());
}

// ---- error messages ----------------------------------------------------------------------------

TEST(NnErrors, ConvChannelsMustMatchWeightTimesGroup) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 3, 10});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {2, 4, 3}));
  g.node("Conv", "conv1", 11, {x, w}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "Conv 'conv1' (opset 11): input channels 3 != weight channels 4 * group 1");
}

TEST(NnErrors, ConvPadsTogetherWithAutoPad) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 2, 10});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {2, 2, 3}));
  g.node("Conv", "c", 11, {x, w}, {{"auto_pad", text("SAME_UPPER")}, {"pads", ints({1, 1})}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "Conv 'c' (opset 11): attribute 'pads' cannot be used together with auto_pad = "
            "SAME_UPPER");
}

TEST(NnErrors, ConvStridesNeedOnePerSpatialAxis) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 2, 10, 10});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {2, 2, 3, 3}));
  g.node("Conv", "c", 11, {x, w}, {{"strides", ints({2})}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "Conv 'c' (opset 11): attribute 'strides' has 1 values, expected 2 (one per spatial "
            "axis)");
}

TEST(NnErrors, ConvRejectsIntegerInput) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kInt32, {1, 2, 10});
  Value* w = g.input("w", DType::kInt32, {2, 2, 3});
  g.node("Conv", "c", 11, {x, w}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "Conv 'c' (opset 11): input X has element type int32, expected one of float16, "
            "float, double");
}

TEST(NnErrors, WindowLargerThanPaddedInput) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 1, 2});
  g.node("MaxPool", "p", 12, {x}, {{"kernel_shape", ints({3})}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "MaxPool 'p' (opset 12): spatial axis 0: input size 2 + pads 0 + 0 is smaller than "
            "the dilated kernel size 3");
}

TEST(NnErrors, AveragePoolDilationsNeedOpset19) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 1, 8});
  g.node("AveragePool", "p", 18, {x}, {{"kernel_shape", ints({2})}, {"dilations", ints({2})}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "AveragePool 'p' (opset 18): attribute 'dilations' needs opset 19 or later");
}

TEST(NnErrors, ReduceAxisOutOfRange) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3, 4});
  g.node("ReduceMean", "r", 13, {x}, {{"axes", ints({0, 5})}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "ReduceMean 'r' (opset 13): axes[1] = 5 is out of range for rank 3");
}

TEST(NnErrors, ReduceRepeatedAxis) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3, 4});
  Value* axes = g.constant("axes", Tensor::from_vector<int64_t>({2}, {2, -1}));
  g.node("ReduceMax", "r", 18, {x, axes}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "ReduceMax 'r' (opset 18): axes[1] = -1 repeats axis 2");
}

TEST(NnErrors, ReduceSumAxesAttributeAfterOpset13) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("ReduceSum", "r", 13, {x}, {{"axes", ints({1})}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "ReduceSum 'r' (opset 13): attribute 'axes' was replaced by input axes in opset 13");
}

TEST(NnErrors, ReduceMeanAxesInputBeforeOpset18) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  Value* axes = g.constant("axes", Tensor::from_vector<int64_t>({1}, {1}));
  g.node("ReduceMean", "r", 17, {x, axes}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "ReduceMean 'r' (opset 17): input axes needs opset 18 or later (use attribute "
            "'axes')");
}

TEST(NnErrors, ReduceAxesOutOfRangeAtRunTime) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  Value* axes = g.input("axes", DType::kInt64, {1});
  g.node("ReduceSum", "r", 13, {x, axes}, {});
  g.build();
  std::map<std::string, Tensor> inputs = {{"x", Tensor(DType::kFloat32, {2, 3})},
                                          {"axes", Tensor::from_vector<int64_t>({1}, {-3})}};
  EXPECT_EQ(error_message([&] { g.run(inputs); }, ErrorKind::kInvalidInput),
            "ReduceSum 'r' (opset 13): axes[0] = -3 is out of range for rank 2");
}

TEST(NnErrors, BatchNormTrainingModeIsUnsupported) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3, 4});
  std::vector<Value*> inputs = {x};
  for (const char* name : {"scale", "b", "mean", "var"}) {
    inputs.push_back(g.constant(name, Tensor(DType::kFloat32, {3})));
  }
  g.node("BatchNormalization", "bn", 15, inputs, {{"training_mode", integer(1)}},
         {"y", "running_mean", "running_var"});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kUnsupported),
            "BatchNormalization 'bn' (opset 15): training_mode = 1 (batch statistics and running "
            "mean/var updates) is not supported; rnnc runs inference only");
}

TEST(NnErrors, BatchNormInferenceWithRunningStatsOutputs) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3, 4});
  std::vector<Value*> inputs = {x};
  for (const char* name : {"scale", "b", "mean", "var"}) {
    inputs.push_back(g.constant(name, Tensor(DType::kFloat32, {3})));
  }
  g.node("BatchNormalization", "bn", 14, inputs, {}, {"y", "running_mean", "running_var"});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "BatchNormalization 'bn' (opset 14): outputs running_mean and running_var are only "
            "valid with training_mode = 1");
}

TEST(NnErrors, BatchNormParameterShape) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3, 4});
  Value* scale = g.constant("scale", Tensor(DType::kFloat32, {4}));
  std::vector<Value*> inputs = {x, scale};
  for (const char* name : {"b", "mean", "var"}) {
    inputs.push_back(g.constant(name, Tensor(DType::kFloat32, {3})));
  }
  g.node("BatchNormalization", "bn", 9, inputs, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "BatchNormalization 'bn' (opset 9): input scale has shape [4], expected [3]");
}

TEST(NnErrors, LayerNormalizationDoesNotExistBeforeOpset17) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 4});
  Value* scale = g.constant("scale", Tensor(DType::kFloat32, {4}));
  g.node("LayerNormalization", "ln", 16, {x, scale}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "LayerNormalization 'ln' (opset 16): LayerNormalization does not exist before "
            "opset 17");
}

TEST(NnErrors, LayerNormAxisRangeIncludesRank) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 4});
  Value* scale = g.constant("scale", Tensor(DType::kFloat32, {4}));
  g.node("LayerNormalization", "ln", 17, {x, scale}, {{"axis", integer(3)}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "LayerNormalization 'ln' (opset 17): attribute 'axis' = 3 is out of range for rank 2 "
            "(valid: [-2, 2])");
}

TEST(NnErrors, LayerNormScaleMustBroadcastToX) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 4});
  Value* scale = g.constant("scale", Tensor(DType::kFloat32, {3}));
  g.node("LayerNormalization", "ln", 17, {x, scale}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "LayerNormalization 'ln' (opset 17): input Scale with shape [3] cannot be broadcast "
            "to X's shape [2, 4]");
}

TEST(NnErrors, ArgMaxOverAnEmptyAxis) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {3, 0});
  g.node("ArgMax", "a", 13, {x}, {{"axis", integer(1)}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "ArgMax 'a' (opset 13): axis 1 has size 0: ArgMax of an empty set is undefined");
}

TEST(NnErrors, DropoutTrainingWithRatioIsUnsupportedAtRunTime) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {4});
  Value* ratio = g.input("ratio", DType::kFloat32, {});
  Value* training = g.input("training", DType::kBool, {});
  g.node("Dropout", "d", 13, {x, ratio, training}, {});
  g.build();
  std::map<std::string, Tensor> inputs = {{"x", Tensor(DType::kFloat32, {4})},
                                          {"ratio", Tensor::scalar<float>(0.25f)},
                                          {"training", Tensor::scalar<bool>(true)}};
  EXPECT_EQ(error_message([&] { g.run(inputs); }, ErrorKind::kUnsupported),
            "Dropout 'd' (opset 13): training_mode = true with ratio 0.25 (random dropout) is not "
            "supported; rnnc runs inference only");
}

TEST(NnErrors, ConvSymbolicChannelsCheckedAtRunTime) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, sym("c"), 5});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {2, 3, 3}));
  g.node("Conv", "c", 11, {x, w}, {});
  g.build();
  std::map<std::string, Tensor> inputs = {{"x", Tensor(DType::kFloat32, {1, 2, 5})}};
  EXPECT_EQ(error_message([&] { g.run(inputs); }, ErrorKind::kInvalidInput),
            "Conv 'c' (opset 11): input channels 2 != weight channels 3 * group 1");
}

// ---- numbers -----------------------------------------------------------------------------------

// x = arange(24) as [1, 4, 6]; group 2 (channels {0, 1} -> output 0, {2, 3} -> output 1), kernel 2
// with dilation 2 (extent 3), stride 2: output ceil(6 / 2) = 3 and a total pad of
// (3 - 1) * 2 + 3 - 6 = 1. SAME_LOWER puts that odd pad at the beginning, SAME_UPPER at the end.
// Expected values: numpy, padding explicitly with np.pad and summing dilated slices per group.
class NnConv1d : public ::testing::Test {
 protected:
  std::vector<Tensor> run_with(const std::string& auto_pad) {
    OneNodeGraph g;
    Value* x = g.input("x", DType::kFloat32, {1, 4, sym("time")});
    Value* w = g.constant("w", Tensor::from_vector<float>({2, 2, 2}, {1, -1, 2, 0.5f,  // out 0
                                                                      -2, 1, 0.25f, 3}));
    Value* b = g.constant("b", Tensor::from_vector<float>({2}, {0.5f, -1.0f}));
    g.node("Conv", "conv", 11, {x, w, b},
           {{"group", integer(2)},
            {"dilations", ints({2})},
            {"strides", ints({2})},
            {"auto_pad", text(auto_pad)}});
    g.build();
    return g.run({{"x", Tensor::from_vector<float>({1, 4, 6}, arange(24))}});
  }
};

TEST_F(NnConv1d, GroupsDilationSameLowerPutsOddPadFirst) {
  std::vector<Tensor> y = run_with("SAME_LOWER");
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{1, 2, 3}));
  // By hand for y[0, 0, 0]: taps at -1 (pad) and 1: 1 * -1 + 7 * 0.5 + bias 0.5 = 3.
  expect_near_all(y[0], {3.0, 17.0, 22.0, 69.0, 55.75, 60.25}, 1e-5);
}

TEST_F(NnConv1d, GroupsDilationSameUpperPutsOddPadLast) {
  std::vector<Tensor> y = run_with("SAME_UPPER");
  expect_near_all(y[0], {14.5, 19.5, 24.5, 53.5, 58.0, -27.5}, 1e-5);
}

TEST(NnConv, Float16IsComputedInFloat32AndRoundedBack) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat16, {1, 1, 3});
  Value* w =
      g.constant("w", Tensor::from_vector<float>({1, 1, 2}, {0.5f, 0.25f}).cast(DType::kFloat16));
  g.node("Conv", "conv", 11, {x, w}, {});
  g.build();
  std::vector<Tensor> y =
      g.run({{"x", Tensor::from_vector<float>({1, 1, 3}, {2, 4, 8}).cast(DType::kFloat16)}});
  ASSERT_EQ(y[0].dtype(), DType::kFloat16);
  // [2 * 0.5 + 4 * 0.25, 4 * 0.5 + 8 * 0.25], exact in half precision.
  expect_near_all(y[0], {2.0, 4.0}, 0.0);
}

// x = [1, 2, 3, 4], kernel 3, pads [1, 1]: the edge windows hold one pad each.
TEST(NnPool, AveragePoolCountIncludePad) {
  for (int64_t include : {0, 1}) {
    OneNodeGraph g;
    Value* x = g.input("x", DType::kFloat64, {1, 1, 4});
    g.node("AveragePool", "p", 11, {x},
           {{"kernel_shape", ints({3})},
            {"pads", ints({1, 1})},
            {"count_include_pad", integer(include)}});
    g.build();
    std::vector<Tensor> y = g.run({{"x", Tensor::from_vector<double>({1, 1, 4}, {1, 2, 3, 4})}});
    if (include) {
      expect_near_all(y[0], {3.0 / 3, 6.0 / 3, 9.0 / 3, 7.0 / 3}, 1e-12);
    } else {
      expect_near_all(y[0], {3.0 / 2, 6.0 / 3, 9.0 / 3, 7.0 / 2}, 1e-12);
    }
  }
}

TEST(NnPool, MaxPoolPaddingNeverWinsAndIndicesSkipIt) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 1, 3});
  g.node("MaxPool", "p", 12, {x}, {{"kernel_shape", ints({2})}, {"pads", ints({1, 1})}},
         {"y", "indices"});
  g.build();
  std::vector<Tensor> y = g.run({{"x", Tensor::from_vector<float>({1, 1, 3}, {-5, -7, -6})}});
  expect_near_all(y[0], {-5, -5, -6, -6}, 0.0);
  expect_near_all(y[1], {0, 0, 2, 2}, 0.0);
}

// d = arange(24) * 0.5 - 3 as [2, 3, 4]. Expected: numpy mean / max over the same axes.
TEST(NnReduce, NegativeAxesWithoutKeepdims) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3, 4});
  g.node("ReduceMean", "r", 13, {x}, {{"axes", ints({-1, -3})}, {"keepdims", integer(0)}});
  g.build();
  std::vector<Tensor> y =
      g.run({{"x", Tensor::from_vector<float>({2, 3, 4}, arange(24, 0.5f, -3))}});
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{3}));
  expect_near_all(y[0], {0.75, 2.75, 4.75}, 1e-6);
}

TEST(NnReduce, AxesInputNegativeWithoutKeepdims) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3, 4});
  Value* axes = g.input("axes", DType::kInt64, {1});
  g.node("ReduceMax", "r", 18, {x, axes}, {{"keepdims", integer(0)}});
  g.build();
  std::vector<Tensor> y = g.run({{"x", Tensor::from_vector<float>({2, 3, 4}, arange(24, 0.5f, -3))},
                                 {"axes", Tensor::from_vector<int64_t>({1}, {-2})}});
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{2, 4}));
  expect_near_all(y[0], {1.0, 1.5, 2.0, 2.5, 7.0, 7.5, 8.0, 8.5}, 0.0);
}

TEST(NnReduce, SumWithEmptyAxesInputReducesEverythingUnlessNoop) {
  Tensor data = Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  for (int64_t noop : {0, 1}) {
    OneNodeGraph g;
    Value* x = g.input("x", DType::kFloat32, {3, 2});
    Value* axes = g.input("axes", DType::kInt64, {sym("n")});
    g.node("ReduceSum", "r", 13, {x, axes}, {{"noop_with_empty_axes", integer(noop)}});
    g.build();
    std::vector<Tensor> y = g.run({{"x", data}, {"axes", Tensor(DType::kInt64, {0})}});
    if (noop) {
      EXPECT_TRUE(y[0].bitwise_equal(data));
    } else {
      EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{1, 1}));
      expect_near_all(y[0], {21.0}, 0.0);
    }
  }
}

// Over an empty set: Sum 0, Prod 1, Max -inf (lowest for integers), Min +inf, Mean NaN.
TEST(NnReduce, EmptySetValues) {
  struct Case {
    const char* op;
    DType dtype;
    double expected;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (const Case& c :
       {Case{"ReduceSum", DType::kFloat32, 0.0}, Case{"ReduceProd", DType::kFloat32, 1.0},
        Case{"ReduceMax", DType::kFloat32, -inf}, Case{"ReduceMin", DType::kFloat64, inf},
        Case{"ReduceMax", DType::kInt32,
             static_cast<double>(std::numeric_limits<int32_t>::lowest())},
        Case{"ReduceLogSumExp", DType::kFloat32, -inf}}) {
    OneNodeGraph g;
    Value* x = g.input("x", c.dtype, {2, 0});
    g.node(c.op, "r", 13, {x}, {{"keepdims", integer(0)}});  // all axes
    g.build();
    std::vector<Tensor> y = g.run({{"x", Tensor(c.dtype, {2, 0})}});
    SCOPED_TRACE(c.op);
    EXPECT_EQ(values(y[0]), (std::vector<double>{c.expected}));
  }
}

TEST(NnReduce, MeanOfAnEmptySetIsNaN) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {0, 3});
  g.node("ReduceMean", "r", 13, {x}, {{"axes", ints({0})}});
  g.build();
  std::vector<Tensor> y = g.run({{"x", Tensor(DType::kFloat32, {0, 3})}});
  ASSERT_EQ(y[0].shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(std::isnan(y[0].get_double(0)));
}

TEST(NnReduce, IntegerMeanTruncatesTowardZero) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kInt32, {2, 2});
  g.node("ReduceMean", "r", 13, {x}, {{"axes", ints({1})}, {"keepdims", integer(0)}});
  g.build();
  std::vector<Tensor> y = g.run({{"x", Tensor::from_vector<int32_t>({2, 2}, {-3, -4, 3, 4})}});
  EXPECT_EQ(values(y[0]), (std::vector<double>{-3, 3}));  // -3.5 -> -3, 3.5 -> 3
}

TEST(NnReduce, LogSumExpDoesNotOverflow) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2});
  g.node("ReduceLogSumExp", "r", 13, {x}, {});
  g.build();
  std::vector<Tensor> y = g.run({{"x", Tensor::from_vector<float>({2}, {1000, 1000})}});
  expect_near_all(y[0], {1000.0 + std::log(2.0)}, 1e-3);  // exp(1000) overflows even double
}

// Opset 20 admits bool: max is "any", min is "all".
TEST(NnReduce, BoolMaxAndMinFromOpset20) {
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    OneNodeGraph g;
    Value* x = g.input("x", DType::kBool, {2, 2});
    Value* axes = g.constant("axes", Tensor::from_vector<int64_t>({1}, {1}));
    g.node(op, "r", 20, {x, axes}, {{"keepdims", integer(0)}});
    g.build();
    std::vector<Tensor> y =
        g.run({{"x", Tensor::from_vector<bool>({2, 2}, {true, false, true, true})}});
    bool is_max = std::string(op) == "ReduceMax";
    EXPECT_TRUE(y[0].bitwise_equal(Tensor::from_vector<bool>({2}, {is_max, true}))) << op;
  }
}

TEST(NnArg, SelectLastIndexOnTiesWithNegativeAxis) {
  for (int64_t last : {0, 1}) {
    OneNodeGraph g;
    Value* x = g.input("x", DType::kInt64, {2, 4});
    g.node("ArgMin", "a", 13, {x},
           {{"axis", integer(-1)}, {"keepdims", integer(0)}, {"select_last_index", integer(last)}});
    g.build();
    std::vector<Tensor> y =
        g.run({{"x", Tensor::from_vector<int64_t>({2, 4}, {3, 1, 5, 1, 2, 2, 2, 2})}});
    EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{2}));
    EXPECT_EQ(values(y[0]), last ? (std::vector<double>{3, 3}) : (std::vector<double>{1, 0}));
  }
}

// X [2, 2, 3] normalized over its last two axes; Scale [2, 3] and B [3] broadcast to X.
// Expected: numpy in float64 (mean, population variance, 1 / sqrt(var + 1e-5)).
TEST(NnNorm, LayerNormOverLastTwoAxes) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 2, 3});
  Value* scale = g.constant("scale", Tensor::from_vector<float>({2, 3}, {1, 2, 0.5f, -1, 1, 3}));
  Value* b = g.constant("b", Tensor::from_vector<float>({3}, {0.1f, -0.2f, 0.3f}));
  g.node("LayerNormalization", "ln", 17, {x, scale, b}, {{"axis", integer(-2)}},
         {"y", "mean", "inv_std"});
  g.build();
  std::vector<Tensor> out = g.run(
      {{"x", Tensor::from_vector<float>({2, 2, 3}, {1, 2, 4, 0, -1, 3, 0.5f, 0.5f, 2, 8, -2, 1})}});
  expect_near_all(
      out[0],
      {-0.19276951253414154, 0.3855390250682831, 1.031923770904541, 0.9783085584640503,
       -1.66384756565094, 2.9349257946014404, -0.27907106280326843, -0.958142101764679,
       0.35415300726890564, -1.957814335823059, -1.3913661241531372, -0.3498360812664032},
      1e-6);
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{2, 1, 1}));
  expect_near_all(out[1], {1.5, 1.6666666269302368}, 1e-7);
  expect_near_all(out[2], {0.5855390429496765, 0.3249180316925049}, 1e-7);
}

TEST(NnNorm, LayerNormAxisEqualRankNormalizesSingleElements) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2});
  Value* scale = g.constant("scale", Tensor::from_vector<float>({1}, {3}));
  Value* b = g.constant("b", Tensor::from_vector<float>({2}, {0.5f, -0.5f}));
  g.node("LayerNormalization", "ln", 17, {x, scale, b}, {{"axis", integer(1)}},
         {"y", "mean", "inv_std"});
  g.build();
  std::vector<Tensor> out = g.run({{"x", Tensor::from_vector<float>({2}, {7, -9})}});
  expect_near_all(out[0], {0.5, -0.5}, 0.0);  // x - mean = 0, so Y = B
  expect_near_all(out[1], {7, -9}, 0.0);
  EXPECT_EQ(out[2].shape(), (std::vector<int64_t>{2}));
}

// Opset 7, spatial = 0: per-activation parameters of shape (C x D1). Expected: numpy float64
// with epsilon = float32(1e-5), the attribute's default as stored.
TEST(NnNorm, BatchNormOpset7NonSpatial) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat64, {2, 2, 2});
  Value* scale = g.constant("scale", Tensor::from_vector<double>({2, 2}, {1, 2, 0.5, -1}));
  Value* b = g.constant("b", Tensor::from_vector<double>({2, 2}, {0, 1, -1, 0.5}));
  Value* mean = g.constant("mean", Tensor::from_vector<double>({2, 2}, {1, 1, 2, 2}));
  Value* var = g.constant("var", Tensor::from_vector<double>({2, 2}, {1, 4, 0.25, 1}));
  g.node("BatchNormalization", "bn", 7, {x, scale, b, mean, var}, {{"spatial", integer(0)}});
  g.build();
  std::vector<Tensor> y =
      g.run({{"x", Tensor::from_vector<double>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}});
  expect_near_all(y[0],
                  {0.0, 1.9999987500023753, -1.9999399514802896e-05, -1.4999900000752522,
                   3.9999800001505044, 5.9999937500118765, 3.999900003002426, -5.4999700002257566},
                  1e-12);
}

// Opset 15 lets X, scale/B and mean/var have three different float types.
TEST(NnNorm, BatchNormOpset15MixedTypes) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat64, {1, 2});
  Value* scale = g.constant("scale", Tensor::from_vector<float>({2}, {2, 3}));
  Value* b = g.constant("b", Tensor::from_vector<float>({2}, {1, -1}));
  Value* mean = g.constant("mean", Tensor::from_vector<float>({2}, {1, 1}).cast(DType::kFloat16));
  Value* var = g.constant("var", Tensor::from_vector<float>({2}, {4, 1}).cast(DType::kFloat16));
  g.node("BatchNormalization", "bn", 15, {x, scale, b, mean, var}, {{"epsilon", real(0.0f)}});
  g.build();
  std::vector<Tensor> y = g.run({{"x", Tensor::from_vector<double>({1, 2}, {5, 3})}});
  ASSERT_EQ(y[0].dtype(), DType::kFloat64);
  expect_near_all(y[0], {(5.0 - 1) / 2 * 2 + 1, (3.0 - 1) / 1 * 3 - 1}, 1e-12);
}

TEST(NnNorm, InstanceNormPerInstanceAndChannel) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 2, 2});
  Value* scale = g.constant("scale", Tensor::from_vector<float>({2}, {1, 2}));
  Value* b = g.constant("b", Tensor::from_vector<float>({2}, {0, 10}));
  g.node("InstanceNormalization", "in", 7, {x, scale, b}, {{"epsilon", real(0.0f)}});
  g.build();
  std::vector<Tensor> y = g.run({{"x", Tensor::from_vector<float>({1, 2, 2}, {1, 3, 10, 20})}});
  // Channel 0: mean 2, std 1 -> [-1, 1]; channel 1: mean 15, std 5 -> 2 * [-1, 1] + 10.
  expect_near_all(y[0], {-1, 1, 8, 12}, 1e-6);
}

TEST(NnDropout, InferenceCopiesAndMasksAllTrue) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {3});
  Value* ratio = g.constant("ratio", Tensor::scalar<float>(0.5f));
  g.node("Dropout", "d", 13, {x, ratio}, {}, {"y", "mask"});
  g.build();
  Tensor data = Tensor::from_vector<float>({3}, {1, -2, 3});
  std::vector<Tensor> y = g.run({{"x", data}});
  EXPECT_TRUE(y[0].bitwise_equal(data));
  EXPECT_TRUE(y[1].bitwise_equal(Tensor::from_vector<bool>({3}, {true, true, true})));
}

TEST(NnDropout, Opset7MaskHasTheDataType) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat64, {2});
  g.node("Dropout", "d", 7, {x}, {{"ratio", real(0.3f)}}, {"y", "mask"});
  g.build();
  std::vector<Tensor> y = g.run({{"x", Tensor::from_vector<double>({2}, {4, 5})}});
  EXPECT_TRUE(y[1].bitwise_equal(Tensor::from_vector<double>({2}, {1, 1})));
}

// ---- ConvTranspose -------------------------------------------------------------------------------

TEST(NnConvTransposeShape, StrideTwoDoublesSymbolicTime) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("batch"), 4, sym("time")});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {4, 3, 3}));
  g.node("ConvTranspose", "up", 11, {x, w}, {{"strides", ints({2})}, {"pads", ints({1, 0})}});
  g.build();
  // 2 * (time - 1) + 3 - 1
  EXPECT_EQ(g.output_type(0).to_string(), "f32[batch, 3, 2*time]");
}

TEST(NnConvTransposeShape, GroupMultipliesOutputChannelsAndOutputShapeWins) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 4, 5, 6});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {4, 3, 3, 3}));
  g.node("ConvTranspose", "up", 11, {x, w},
         {{"group", integer(2)}, {"strides", ints({2, 2})}, {"output_shape", ints({10, 12})}});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f32[1, 6, 10, 12]");
}

TEST(NnErrors, ConvTransposeWeightMustStartWithInputChannels) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 4, 5});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {3, 2, 3}));
  g.node("ConvTranspose", "up", 11, {x, w}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "ConvTranspose 'up' (opset 11): input W has shape [3, 2, 3], expected W.shape[0] = 4 "
            "(the channels of X)");
}

TEST(NnErrors, ConvTransposeOutputShapeNeedsOneSizePerSpatialAxis) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 4, 5, 5});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {4, 2, 3, 3}));
  g.node("ConvTranspose", "up", 11, {x, w}, {{"output_shape", ints({10, 10, 10})}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "ConvTranspose 'up' (opset 11): attribute 'output_shape' = [10, 10, 10] has 3 values, "
            "expected 2 (one per spatial axis)");
}

TEST(NnErrors, ConvTransposeKernelShapeMustMatchWeight) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 4, 5});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {4, 2, 3}));
  g.node("ConvTranspose", "up", 11, {x, w}, {{"kernel_shape", ints({2})}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "ConvTranspose 'up' (opset 11): attribute 'kernel_shape' = [2] does not match W's "
            "spatial dims [4, 2, 3]");
}

TEST(NnErrors, ConvTransposeGroupMustDivideChannels) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 3, 5});
  Value* w = g.constant("w", Tensor(DType::kFloat32, {3, 2, 3}));
  g.node("ConvTranspose", "up", 11, {x, w}, {{"group", integer(2)}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "ConvTranspose 'up' (opset 11): input X has 3 channels, not a multiple of group 2");
}

// X = [[1, 2, 3], [4, 5, 6]], W = [[[1, 10]], [[100, 1000]]], group 2, stride 2: the full outputs
// are [1, 10, 2, 20, 3, 30] and [400, 4000, 500, 5000, 600, 6000] (plus the bias). output_shape 5
// leaves a total padding of 1, at the beginning (NOTSET, SAME_LOWER) or at the end (SAME_UPPER).
class NnConvTranspose1d : public ::testing::Test {
 protected:
  std::vector<double> run(const std::string& auto_pad) {
    OneNodeGraph g;
    Value* x = g.input("x", DType::kFloat32, {1, 2, 3});
    Value* w = g.constant("w", Tensor::from_vector<float>({2, 1, 2}, {1, 10, 100, 1000}));
    Value* b = g.constant("b", Tensor::from_vector<float>({2}, {0.5f, -1}));
    std::map<std::string, Attribute> attributes = {
        {"group", integer(2)}, {"strides", ints({2})}, {"output_shape", ints({5})}};
    if (!auto_pad.empty()) attributes["auto_pad"] = text(auto_pad);
    g.node("ConvTranspose", "up", 11, {x, w, b}, attributes);
    g.build();
    return values(g.run({{"x", Tensor::from_vector<float>({1, 2, 3}, {1, 2, 3, 4, 5, 6})}})[0]);
  }
};

TEST_F(NnConvTranspose1d, OutputShapePadsTheBeginningByDefault) {
  EXPECT_EQ(run(""), (std::vector<double>{10.5, 2.5, 20.5, 3.5, 30.5,  //
                                          3999, 499, 4999, 599, 5999}));
}

TEST_F(NnConvTranspose1d, SameUpperPadsTheEnd) {
  EXPECT_EQ(run("SAME_UPPER"), (std::vector<double>{1.5, 10.5, 2.5, 20.5, 3.5,  //
                                                    399, 3999, 499, 4999, 599}));
}

TEST(NnConvTranspose, OutputBeyondTheFullSizeHoldsTheBias) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat64, {1, 1, 2});
  Value* w = g.constant("w", Tensor::from_vector<double>({1, 1, 1}, {2}));
  Value* b = g.constant("b", Tensor::from_vector<double>({1}, {7}));
  g.node("ConvTranspose", "up", 11, {x, w, b},
         {{"strides", ints({3})}, {"output_padding", ints({2})}});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f64[1, 1, 6]");
  // Positions 0 and 3 receive x * 2; the rest, output padding included, only the bias.
  EXPECT_EQ(values(g.run({{"x", Tensor::from_vector<double>({1, 1, 2}, {1, -4})}})[0]),
            (std::vector<double>{9, 7, 7, -1, 7, 7}));
}

// ---- CumSum
// --------------------------------------------------------------------------------------

TEST(NnCumSum, ExclusiveReverseAlongTheLastAxis) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("CumSum", "c", 14, {x, g.constant("axis", Tensor::scalar<int32_t>(-1))},
         {{"exclusive", integer(1)}, {"reverse", integer(1)}});
  g.build();
  EXPECT_EQ(values(g.run({{"x", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})}})[0]),
            (std::vector<double>{5, 3, 0, 11, 6, 0}));
}

TEST(NnCumSum, IntegersWrapAround) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kInt32, {3});
  g.node("CumSum", "c", 14, {x, g.constant("axis", Tensor::scalar<int64_t>(0))}, {});
  g.build();
  Tensor y = g.run({{"x", Tensor::from_vector<int32_t>({3}, {2147483647, 1, 5})}})[0];
  EXPECT_EQ(values(y), (std::vector<double>{2147483647, -2147483648.0, -2147483643.0}));
}

TEST(NnErrors, CumSumAxisOutOfRange) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("CumSum", "c", 14, {x, g.constant("axis", Tensor::scalar<int64_t>(2))}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "CumSum 'c' (opset 14): input axis = 2 is out of range for rank 2 (valid: [-2, 1])");
}

TEST(NnErrors, CumSumRejectsInt8AndHalfBeforeOpset14) {
  OneNodeGraph small;
  Value* x = small.input("x", DType::kInt8, {3});
  small.node("CumSum", "c", 14, {x, small.constant("axis", Tensor::scalar<int64_t>(0))}, {});
  EXPECT_EQ(error_message([&] { small.build(); }, ErrorKind::kInvalidModel),
            "CumSum 'c' (opset 14): input x has element type int8, expected one of uint32, "
            "uint64, int32, int64, float, double, float16, bfloat16");
  OneNodeGraph half;
  Value* h = half.input("x", DType::kFloat16, {3});
  half.node("CumSum", "c", 11, {h, half.constant("axis", Tensor::scalar<int64_t>(0))}, {});
  EXPECT_EQ(error_message([&] { half.build(); }, ErrorKind::kInvalidModel),
            "CumSum 'c' (opset 11): input x has element type float16, expected one of uint32, "
            "uint64, int32, int64, float, double");
}

TEST(NnErrors, CumSumAxisOutOfRangeAtRunTime) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  Value* axis = g.input("axis", DType::kInt64, {});
  g.node("CumSum", "c", 14, {x, axis}, {});
  g.build();
  EXPECT_EQ(
      error_message(
          [&] {
            g.run({{"x", Tensor(DType::kFloat32, {2, 3})}, {"axis", Tensor::scalar<int64_t>(-3)}});
          },
          ErrorKind::kInvalidInput),
      "CumSum 'c' (opset 14): input axis = -3 is out of range for rank 2 (valid: [-2, 1])");
}

// ---- Resize, Upsample ----------------------------------------------------------------------------

Attribute reals(std::vector<float> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kFloats;
  attribute.floats = std::move(values);
  return attribute;
}

Tensor f32s(std::vector<float> values) {
  return Tensor::from_vector<float>({static_cast<int64_t>(values.size())}, values);
}

Tensor i64s(std::vector<int64_t> values) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

TEST(NnResizeShape, IntegralScaleMultipliesSymbolicTime) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("batch"), 2, sym("time")});
  g.node("Resize", "r", 13, {x, nullptr, g.constant("scales", f32s({1, 1, 2}))}, {});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f32[batch, 2, 2*time]");
}

TEST(NnResizeShape, AxesLeaveTheOtherDimsAlone) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {sym("batch"), 2, 4});
  g.node("Resize", "r", 18, {x, nullptr, nullptr, g.constant("sizes", i64s({8}))},
         {{"axes", ints({-1})}});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f32[batch, 2, 8]");
}

TEST(NnResizeShape, NotLargerKeepsTheAspectRatio) {
  // sizes [3, 3] for H = 2, W = 4: ratios 1.5 and 0.75, the smaller one for both axes.
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 1, 2, 4});
  g.node("Resize", "r", 18, {x, nullptr, nullptr, g.constant("sizes", i64s({3, 3}))},
         {{"axes", ints({2, 3})}, {"keep_aspect_ratio_policy", text("not_larger")}});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f32[1, 1, 2, 3]");
}

TEST(NnErrors, ResizeScalesAndSizesTogether) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 4});
  g.node("Resize", "r", 13,
         {x, nullptr, g.constant("scales", f32s({1, 2})), g.constant("sizes", i64s({1, 8}))}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "Resize 'r' (opset 13): only one of input 'scales' and input 'sizes' may be given");
}

TEST(NnErrors, ResizeCoordinateModeOfAnotherOpset) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 4});
  g.node("Resize", "r", 13, {x, nullptr, g.constant("scales", f32s({1, 2}))},
         {{"coordinate_transformation_mode", text("tf_half_pixel_for_nn")}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "Resize 'r' (opset 13): attribute 'coordinate_transformation_mode' = "
            "'tf_half_pixel_for_nn' is not valid at this opset (half_pixel, pytorch_half_pixel, "
            "align_corners, asymmetric or tf_crop_and_resize)");
}

TEST(NnErrors, ResizeScalesNeedOnePerAxis) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 2, 4});
  g.node("Resize", "r", 13, {x, nullptr, g.constant("scales", f32s({1, 2}))}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "Resize 'r' (opset 13): input 'scales' has 2 values, expected one per axis of X "
            "(rank 3)");
}

TEST(NnErrors, ResizeAntialiasNeedsOpset18) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 4});
  g.node("Resize", "r", 13, {x, nullptr, g.constant("scales", f32s({1, 0.5f}))},
         {{"antialias", integer(1)}, {"mode", text("linear")}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "Resize 'r' (opset 13): attribute 'antialias' needs opset 18 or later");
}

TEST(NnErrors, ResizeNonPositiveScaleAtRunTime) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 4});
  Value* scales = g.input("scales", DType::kFloat32, {2});
  g.node("Resize", "r", 13, {x, nullptr, scales}, {});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f32[?, ?]");
  EXPECT_EQ(error_message(
                [&] {
                  g.run({{"x", Tensor(DType::kFloat32, {1, 4})}, {"scales", f32s({1, 0})}});
                },
                ErrorKind::kInvalidInput),
            "Resize 'r' (opset 13): input 'scales' element 1 = 0, must be > 0 and finite");
}

TEST(NnErrors, UpsampleWasRemovedInOpset10) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 4});
  g.node("Upsample", "u", 10, {x, g.constant("scales", f32s({1, 2}))}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "Upsample 'u' (opset 10): Upsample was removed in opset 10 (use Resize)");
}

// [1, 2, 3, 4] halved with half_pixel: x_original = 2 * o + 0.5. Antialiasing stretches the tent
// to +-2 inputs: weights 0.25, 0.75, 0.75, 0.25 at -1..2 (normalized by 2), index -1 clamped to
// 0: 0.125 + 0.375 + 0.75 + 0.375 = 1.625; likewise 3.375 at 1..4. exclude_outside drops the tap
// at -1 and renormalizes: (0.375 + 0.75 + 0.375) / 0.875.
class NnResizeAntialias : public ::testing::Test {
 protected:
  std::vector<double> run(bool exclude_outside) {
    OneNodeGraph g;
    Value* x = g.input("x", DType::kFloat32, {4});
    g.node("Resize", "r", 18, {x, nullptr, g.constant("scales", f32s({0.5f}))},
           {{"mode", text("linear")},
            {"antialias", integer(1)},
            {"exclude_outside", integer(exclude_outside ? 1 : 0)}});
    g.build();
    return values(g.run({{"x", f32s({1, 2, 3, 4})}})[0]);
  }
};

TEST_F(NnResizeAntialias, LinearDownscaleAveragesFourInputs) {
  EXPECT_EQ(run(false), (std::vector<double>{1.625, 3.375}));
}

TEST_F(NnResizeAntialias, ExcludeOutsideRenormalizes) {
  std::vector<double> y = run(true);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], 1.5 / 0.875, 1e-6);
  EXPECT_NEAR(y[1], (0.25 * 2 + 0.75 * 3 + 0.75 * 4) / 1.75, 1e-6);
}

TEST(NnResize, CropAndResizeExtrapolatesOutsideTheInput) {
  // roi [-0.5, 1.5] over 4 elements, 3 outputs: x_original = -1.5 + 3 * o.
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {4});
  g.node("Resize", "r", 13,
         {x, g.constant("roi", f32s({-0.5f, 1.5f})), nullptr, g.constant("sizes", i64s({3}))},
         {{"mode", text("linear")},
          {"coordinate_transformation_mode", text("tf_crop_and_resize")},
          {"extrapolation_value", real(7)}});
  g.build();
  EXPECT_EQ(values(g.run({{"x", f32s({0, 10, 20, 30})}})[0]), (std::vector<double>{7, 15, 7}));
}

TEST(NnResize, Upsample7NearestRepeatsElements) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kInt32, {1, 2});
  g.node("Upsample", "u", 7, {x}, {{"scales", reals({1, 2})}});
  g.build();
  Tensor y = g.run({{"x", Tensor::from_vector<int32_t>({1, 2}, {5, -3})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(values(y), (std::vector<double>{5, 5, -3, -3}));
}

// ---- signal ops
// ----------------------------------------------------------------------------------

TEST(NnSignal, OnesidedDftOfARealSignalAlongAxisTwo) {
  // x = [1, 2, 3, 4] along axis 2: X[0] = 10, X[1] = -2 + 2i, X[2] = -2 (bins 0..2).
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat64, {1, 1, 4, 1});
  g.node("DFT", "d", 17, {x}, {{"axis", integer(2)}, {"onesided", integer(1)}});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f64[1, 1, 3, 2]");
  expect_near_all(g.run({{"x", Tensor::from_vector<double>({1, 1, 4, 1}, {1, 2, 3, 4})}})[0],
                  {10, 0, -2, 2, -2, 0}, 1e-12);
}

TEST(NnSignal, StftFramesFollowTheStep) {
  OneNodeGraph g;
  Value* signal = g.input("signal", DType::kFloat32, {2, 10, 1});
  g.node("STFT", "s", 17,
         {signal, g.constant("step", Tensor::scalar<int64_t>(3)), nullptr,
          g.constant("length", Tensor::scalar<int64_t>(4))},
         {});
  g.build();
  // floor((10 - 4) / 3) + 1 = 3 frames of 4 / 2 + 1 = 3 bins.
  EXPECT_EQ(g.output_type(0).to_string(), "f32[2, 3, 3, 2]");
}

TEST(NnSignal, SymmetricHannWindowEndsAtZero) {
  OneNodeGraph g;
  Value* size = g.constant("size", Tensor::scalar<int32_t>(5));
  g.node("HannWindow", "w", 17, {size},
         {{"periodic", integer(0)}, {"output_datatype", integer(11)}});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f64[5]");
  expect_near_all(g.run({})[0], {0, 0.5, 1, 0.5, 0}, 1e-15);
}

TEST(NnErrors, DftOnesidedNeedsARealInput) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 8, 2});
  g.node("DFT", "d", 17, {x}, {{"onesided", integer(1)}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "DFT 'd' (opset 17): attribute 'onesided' = 1 needs a real input (last dim 1)");
}

TEST(NnErrors, DftAxisBecameAnInputInOpset20) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 8, 1});
  g.node("DFT", "d", 20, {x}, {{"axis", integer(1)}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "DFT 'd' (opset 20): attribute 'axis' became input 2 in opset 20");
}

TEST(NnErrors, StftWindowMustMatchFrameLength) {
  OneNodeGraph g;
  Value* signal = g.input("signal", DType::kFloat32, {1, 16, 1});
  g.node("STFT", "s", 17,
         {signal, g.constant("step", Tensor::scalar<int64_t>(2)),
          g.constant("window", Tensor(DType::kFloat32, {8})),
          g.constant("length", Tensor::scalar<int64_t>(4))},
         {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "STFT 's' (opset 17): input 'window' has 8 elements but frame_length is 4");
}

TEST(NnErrors, WindowOutputDatatypeMustBeNumeric) {
  OneNodeGraph g;
  g.node("BlackmanWindow", "w", 17, {g.constant("size", Tensor::scalar<int64_t>(4))},
         {{"output_datatype", integer(8)}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "BlackmanWindow 'w' (opset 17): attribute 'output_datatype' = 8 is not a numeric data "
            "type");
}

// ---- TopK, LRN, MeanVarianceNormalization, Det
// ---------------------------------------------------

TEST(NnTopK, SmallestKeepsIndexOrderOnTiesAndPutsNaNLast) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {5});
  g.node("TopK", "t", 11, {x, g.constant("k", Tensor::from_vector<int64_t>({1}, {4}))},
         {{"largest", integer(0)}}, {"values", "indices"});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f32[4]");
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<Tensor> out = g.run({{"x", Tensor::from_vector<float>({5}, {2, nan, 1, 2, 5})}});
  EXPECT_EQ(values(out[0]), (std::vector<double>{1, 2, 2, 5}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{2, 0, 3, 4}));
}

TEST(NnErrors, TopKBeyondTheAxis) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("TopK", "t", 11, {x, g.constant("k", Tensor::from_vector<int64_t>({1}, {4}))}, {},
         {"values", "indices"});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "TopK 't' (opset 11): k = 4 exceeds the 3 elements along axis 1");
}

TEST(NnErrors, TopKAttributeKBecameAnInput) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("TopK", "t", 10, {x, g.constant("k", Tensor::from_vector<int64_t>({1}, {1}))},
         {{"k", integer(1)}}, {"values", "indices"});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "TopK 't' (opset 10): attribute 'k' became input K in opset 10");
}

TEST(NnLrn, EvenSizeWindowLeansForward) {
  // size 2: channel c sums c and c + 1. X = [1, 2, 3] over channels, alpha 2, beta 1, bias 1:
  // y_c = x_c / (1 + (2 / 2) * square_sum).
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat64, {1, 3, 1});
  g.node("LRN", "l", 13, {x}, {{"size", integer(2)}, {"alpha", real(2)}, {"beta", real(1)}});
  g.build();
  expect_near_all(g.run({{"x", Tensor::from_vector<double>({1, 3, 1}, {1, 2, 3})}})[0],
                  {1.0 / 6, 2.0 / 14, 3.0 / 10}, 1e-12);
}

TEST(NnErrors, LrnSizeIsRequired) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 3, 4, 4});
  g.node("LRN", "l", 13, {x}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "LRN 'l' (opset 13): attribute 'size' is required");
}

TEST(NnMeanVarianceNormalization, OneElementGroupsGiveZero) {
  // Over axis 1 of [2, 1]: each group is one element, variance 0, (x - x) / (0 + 1e-9) = 0.
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 1});
  g.node("MeanVarianceNormalization", "m", 13, {x}, {{"axes", ints({1})}});
  g.build();
  EXPECT_EQ(values(g.run({{"x", Tensor::from_vector<float>({2, 1}, {3, -7})}})[0]),
            (std::vector<double>{0, 0}));
}

TEST(NnErrors, MeanVarianceNormalizationDefaultAxesNeedRankFour) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("MeanVarianceNormalization", "m", 13, {x}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "MeanVarianceNormalization 'm' (opset 13): attribute 'axes' entry = 2 is out of range "
            "for rank 2 (valid: [-2, 1])");
}

TEST(NnDet, PivotingKeepsTheSign) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat64, {2, 2, 2});
  g.node("Det", "d", 11, {x}, {});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f64[2]");
  // [[0, 1], [1, 0]] needs a row swap: -1; [[2, 3], [4, 5]]: 10 - 12 = -2.
  expect_near_all(
      g.run({{"x", Tensor::from_vector<double>({2, 2, 2}, {0, 1, 1, 0, 2, 3, 4, 5})}})[0], {-1, -2},
      1e-12);
}

TEST(NnErrors, DetNeedsSquareMatrices) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {2, 3});
  g.node("Det", "d", 11, {x}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "Det 'd' (opset 11): input X has shape [2, 3]: the last two dims must be equal (square "
            "matrices)");
}

// ---- MaxUnpool
// -----------------------------------------------------------------------------------

TEST(NnMaxUnpool, IndicesOutsideThePooledTensorAreDataErrors) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 1, 2});
  Value* indices = g.input("i", DType::kInt64, {1, 1, 2});
  g.node("MaxUnpool", "u", 11, {x, indices}, {{"kernel_shape", ints({2})}, {"strides", ints({2})}});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f32[1, 1, 4]");
  EXPECT_EQ(values(g.run({{"x", Tensor::from_vector<float>({1, 1, 2}, {5, 6})},
                          {"i", Tensor::from_vector<int64_t>({1, 1, 2}, {1, 2})}})[0]),
            (std::vector<double>{0, 5, 6, 0}));
  EXPECT_EQ(error_message(
                [&] {
                  g.run({{"x", Tensor::from_vector<float>({1, 1, 2}, {5, 6})},
                         {"i", Tensor::from_vector<int64_t>({1, 1, 2}, {1, 4})}});
                },
                ErrorKind::kInvalidInput),
            "MaxUnpool 'u' (opset 11): input I element 1 = 4 is outside the pooled input [1, 1, 4] "
            "or the output [1, 1, 4]");
}

TEST(NnErrors, MaxUnpoolKernelShapeIsRequired) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 1, 2});
  Value* indices = g.input("i", DType::kInt64, {1, 1, 2});
  g.node("MaxUnpool", "u", 11, {x, indices}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "MaxUnpool 'u' (opset 11): attribute 'kernel_shape' is required");
}

// ---- NonMaxSuppression
// ---------------------------------------------------------------------------

TEST(NnNonMaxSuppression, OverlappingBoxIsSuppressedAndFlippedCornersCount) {
  // Boxes 0 and 1 are the same square (box 1's corners flipped): IoU 1 > 0.5, the lower score goes.
  OneNodeGraph g;
  Value* boxes = g.constant(
      "boxes", Tensor::from_vector<float>({1, 3, 4}, {0, 0, 2, 2, 2, 2, 0, 0, 5, 5, 6, 6}));
  Value* scores = g.constant("scores", Tensor::from_vector<float>({1, 1, 3}, {0.9f, 0.8f, 0.7f}));
  g.node("NonMaxSuppression", "n", 11,
         {boxes, scores, g.constant("max", Tensor::scalar<int64_t>(3)),
          g.constant("iou", Tensor::scalar<float>(0.5f))},
         {});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "i64[?, 3]");
  EXPECT_EQ(values(g.run({})[0]), (std::vector<double>{0, 0, 0, 0, 0, 2}));
}

TEST(NnErrors, NonMaxSuppressionBoxesNeedFourCoordinates) {
  OneNodeGraph g;
  Value* boxes = g.input("boxes", DType::kFloat32, {1, 3, 5});
  Value* scores = g.input("scores", DType::kFloat32, {1, 1, 3});
  g.node("NonMaxSuppression", "n", 11, {boxes, scores}, {});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "NonMaxSuppression 'n' (opset 11): input boxes has shape [1, 3, 5], expected "
            "[num_batches, spatial_dimension, 4]");
}

// ---- GridSample
// ----------------------------------------------------------------------------------

TEST(NnGridSample, BorderClampsAndZerosPadsOutside) {
  // X = [[1, 2]] (1 x 2), align_corners 1: grid x = 1.5 maps to pixel 1.25, past the last pixel.
  // border clamps it to 1 and reads 2; zeros keeps 1.25: 0.75 * X[1] + 0.25 * (outside: 0) = 1.5.
  for (const char* padding : {"border", "zeros"}) {
    OneNodeGraph g;
    Value* x = g.input("x", DType::kFloat32, {1, 1, 1, 2});
    Value* grid = g.input("grid", DType::kFloat32, {1, 1, 1, 2});
    g.node("GridSample", "s", 16, {x, grid},
           {{"padding_mode", text(padding)}, {"align_corners", integer(1)}});
    g.build();
    EXPECT_EQ(g.output_type(0).to_string(), "f32[1, 1, 1, 1]");
    std::vector<double> y =
        values(g.run({{"x", Tensor::from_vector<float>({1, 1, 1, 2}, {1, 2})},
                      {"grid", Tensor::from_vector<float>({1, 1, 1, 2}, {1.5f, 0})}})[0]);
    EXPECT_EQ(y, (std::vector<double>{std::string(padding) == "border" ? 2.0 : 1.5}));
  }
}

TEST(NnErrors, GridSampleModeNamesChangedInOpset20) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 1, 2, 2});
  Value* grid = g.input("grid", DType::kFloat32, {1, 1, 1, 2});
  g.node("GridSample", "s", 20, {x, grid}, {{"mode", text("bilinear")}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "GridSample 's' (opset 20): attribute 'mode' = 'bilinear' is not valid at this opset "
            "(linear, nearest or cubic)");
}

// ---- RoiAlign
// -------------------------------------------------------------------------------------

TEST(NnErrors, RoiAlignBatchIndexOutsideX) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 1, 4, 4});
  Value* rois = g.constant("rois", Tensor::from_vector<float>({1, 4}, {0, 0, 2, 2}));
  Value* batch = g.input("batch", DType::kInt64, {1});
  g.node("RoiAlign", "r", 16, {x, rois, batch}, {{"output_height", integer(2)}});
  g.build();
  EXPECT_EQ(g.output_type(0).to_string(), "f32[1, 1, 2, 1]");
  EXPECT_EQ(
      error_message(
          [&] {
            g.run({{"x", Tensor(DType::kFloat32, {1, 1, 4, 4})},
                   {"batch", Tensor::from_vector<int64_t>({1}, {1})}});
          },
          ErrorKind::kInvalidInput),
      "RoiAlign 'r' (opset 16): input batch_indices element 0 = 1 is outside the 1 images of X");
}

TEST(NnErrors, RoiAlignModeMustBeAvgOrMax) {
  OneNodeGraph g;
  Value* x = g.input("x", DType::kFloat32, {1, 1, 4, 4});
  Value* rois = g.input("rois", DType::kFloat32, {1, 4});
  Value* batch = g.input("batch", DType::kInt64, {1});
  g.node("RoiAlign", "r", 16, {x, rois, batch}, {{"mode", text("sum")}});
  EXPECT_EQ(error_message([&] { g.build(); }, ErrorKind::kInvalidModel),
            "RoiAlign 'r' (opset 16): attribute 'mode' = 'sum', expected avg or max");
}

}  // namespace
}  // namespace rnnc
