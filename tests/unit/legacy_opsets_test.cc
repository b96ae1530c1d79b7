// Legacy default-domain opsets (1 to 6) at import: each rewrite into the opset-7 form, shown on
// the printed IR and checked numerically on the reference evaluator, each invalid field's error
// message, and an imported legacy model exported as opset 7 that loads again with equal outputs.
#include "ir/legacy_opsets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/printer.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "tests/support/backend_cases.h"

namespace rnnc {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;

std::unique_ptr<Model> parse(const std::string& text) { return parse_model_text(text, "l.ir"); }

std::vector<float> values(const Tensor& tensor) {
  const float* data = tensor.data<float>();
  return std::vector<float>(data, data + tensor.numel());
}

std::vector<float> iota(int64_t count, float start = 0) {
  std::vector<float> out;
  for (int64_t k = 0; k < count; ++k) out.push_back(start + static_cast<float>(k));
  return out;
}

// Runs the model's graph on float inputs; returns output 0's values.
std::vector<float> run(const Model& model, const std::map<std::string, Tensor>& inputs) {
  return values(evaluate(*model.graph, inputs)[0]);
}

void expect_error(const std::string& text, const std::string& message,
                  ErrorKind kind = ErrorKind::kInvalidModel) {
  try {
    parse(text);
    ADD_FAILURE() << "parsed, expected the error: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(std::string(e.what()), message);
  }
}

// ---- binary ops: broadcast / axis ----------------------------------------------------------

const char* kAddWithAxis = R"(model opset=6
graph g(%a: f32[2, 3, 2], %b: f32[3]) {
  %y = Add 'add' (%a, %b) {axis=1, broadcast=1}
  return %y
}
)";

TEST(LegacyOpsets, BroadcastWithAxisUnsqueezesBToNumpyForm) {
  auto model = parse(kAddWithAxis);
  const std::string text = to_text(*model);
  EXPECT_THAT(text, HasSubstr("model ir_version=8 opset=7\n"));
  EXPECT_THAT(text, HasSubstr("%b_unsqueezed_0: f32[3, 1] = Unsqueeze 'b_unsqueezed_0' (%b) "
                              "{axes=[1]}\n"));
  EXPECT_THAT(text, HasSubstr("%y: f32[2, 3, 2] = Add 'add' (%a, %b_unsqueezed_0)\n"));
  EXPECT_THAT(text, Not(HasSubstr("broadcast")));
  std::vector<float> expected;
  for (int64_t i = 0; i < 12; ++i)
    expected.push_back(static_cast<float>(i) + 10.0f * (1 + i / 2 % 3));
  EXPECT_THAT(run(*model, {{"a", Tensor::from_vector<float>({2, 3, 2}, iota(12))},
                           {"b", Tensor::from_vector<float>({3}, {10, 20, 30})}}),
              ElementsAreArray(expected));
}

TEST(LegacyOpsets, BroadcastAlignedToTheEndDropsTheAttributes) {
  auto model = parse(R"(model opset=6
graph g(%a: f32[2, 3], %b: f32[3]) {
  %y = Mul 'mul' (%a, %b) {broadcast=1}
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("%y: f32[2, 3] = Mul 'mul' (%a, %b)\n"));
  EXPECT_THAT(run(*model, {{"a", Tensor::from_vector<float>({2, 3}, iota(6))},
                           {"b", Tensor::from_vector<float>({3}, {1, 2, 3})}}),
              ElementsAreArray(std::vector<float>{0, 2, 6, 3, 8, 15}));
}

// B's dims may be 1 where A's are not (PyTorch's exports rely on it).
TEST(LegacyOpsets, BroadcastWithAxisStretchesSizeOneDimsOfB) {
  auto model = parse(R"(model opset=6
graph g(%a: f32[2, 3], %b: f32[2, 1]) {
  %y = Sub 'sub' (%a, %b) {axis=0, broadcast=1}
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("%y: f32[2, 3] = Sub 'sub' (%a, %b)\n"));
  EXPECT_THAT(run(*model, {{"a", Tensor::from_vector<float>({2, 3}, iota(6))},
                           {"b", Tensor::from_vector<float>({2, 1}, {1, 10})}}),
              ElementsAreArray(std::vector<float>{-1, 0, 1, -7, -6, -5}));
}

TEST(LegacyOpsets, BroadcastErrorsNameTheField) {
  const std::string header = "model opset=6\ngraph g(%a: f32[2, 3], %b: f32[";
  auto model_with = [&](const std::string& b_dims, const std::string& attributes) {
    return header + b_dims + "]) {\n  %y = Add 'add' (%a, %b) {" + attributes +
           "}\n  return %y\n}\n";
  };
  expect_error(model_with("3", "axis=5, broadcast=1"),
               "l.ir:3:3: Add 'add' (opset 6): attribute 'axis' = 5 is out of range for A of rank "
               "2 and B of rank 1 (valid: [0, 1])");
  expect_error(model_with("3", "axis=-1, broadcast=1"),
               "l.ir:3:3: Add 'add' (opset 6): attribute 'axis' = -1 is out of range for A of "
               "rank 2 and B of rank 1 (valid: [0, 1])");
  expect_error(
      model_with("3", "axis=0, broadcast=1"),
      "l.ir:3:3: Add 'add' (opset 6): input B [3] does not match A [2, 3] at axis 0: B dim "
      "0 is 3, A dim 0 is 2");
  expect_error(model_with("1, 2, 3", "broadcast=1"),
               "l.ir:3:3: Add 'add' (opset 6): input B [1, 2, 3] has a higher rank than A [2, 3]; "
               "legacy broadcasting stretches B over A");
  expect_error(model_with("3", "broadcast=2"),
               "l.ir:3:3: Add 'add' (opset 6): attribute 'broadcast' = 2 must be 0 or 1");
  expect_error(model_with("3", "axis=1"),
               "l.ir:3:3: Add 'add' (opset 6): inputs A [2, 3] and B [3] differ in shape; without "
               "attribute 'broadcast' = 1 they must be equal");
}

// An operand of unknown rank: without `axis` nothing depends on it; with `axis` the rewrite cannot
// be made at import.
TEST(LegacyOpsets, BroadcastWithAnOperandOfUnknownRank) {
  auto model = parse(R"(model opset=6
graph g(%a: f32[2, 3], %b: f32[?rank]) {
  %y = Add 'add' (%a, %b)
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("= Add 'add' (%a, %b)\n"));
  expect_error(R"(model opset=6
graph g(%a: f32[2, 3], %b: f32[?rank]) {
  %y = Add 'add' (%a, %b) {axis=0, broadcast=1}
  return %y
}
)",
               "l.ir:3:3: Add 'add' (opset 6): attribute 'axis' = 0 with an input of unknown rank "
               "(the legacy broadcast needs both ranks at import)",
               ErrorKind::kUnsupported);
}

// ---- one rewrite per op ------------------------------------------------------------------------

TEST(LegacyOpsets, GemmBroadcastIsDropped) {
  auto model = parse(R"(model opset=6
graph g(%a: f32[2, 2], %b: f32[2, 2], %c: f32[2]) {
  %y = Gemm 'gemm' (%a, %b, %c) {broadcast=1}
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("%y: f32[2, 2] = Gemm 'gemm' (%a, %b, %c)\n"));
  EXPECT_THAT(run(*model, {{"a", Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})},
                           {"b", Tensor::from_vector<float>({2, 2}, {1, 0, 0, 1})},
                           {"c", Tensor::from_vector<float>({2}, {10, 20})}}),
              ElementsAreArray(std::vector<float>{11, 22, 13, 24}));
  expect_error(R"(model opset=6
graph g(%a: f32[2, 2], %b: f32[2, 2], %c: f32[2]) {
  %y = Gemm 'gemm' (%a, %b, %c) {broadcast=0}
  return %y
}
)",
               "l.ir:3:3: Gemm 'gemm' (opset 6): input C [2] must be an M x N matrix without "
               "attribute 'broadcast' = 1");
}

TEST(LegacyOpsets, PReluSlopePerChannelIsUnsqueezed) {
  auto model = parse(R"(model opset=6
graph g(%x: f32[1, 2, 2], %slope: f32[2]) {
  %y = PRelu 'prelu' (%x, %slope)
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("= Unsqueeze 'slope_unsqueezed_0' (%slope) {axes=[1]}"));
  EXPECT_THAT(run(*model, {{"x", Tensor::from_vector<float>({1, 2, 2}, {-1, -2, -3, 4})},
                           {"slope", Tensor::from_vector<float>({2}, {0.5, 2})}}),
              ElementsAreArray(std::vector<float>{-0.5, -1, -6, 4}));
  expect_error(R"(model opset=6
graph g(%x: f32[1, 2, 2], %slope: f32[3]) {
  %y = PRelu 'prelu' (%x, %slope)
  return %y
}
)",
               "l.ir:3:3: PRelu 'prelu' (opset 6): input 'slope' [3] has neither 1 value nor one "
               "per channel of X [1, 2, 2]");
}

const char* kBatchNorm = R"(model opset=6
graph g(%x: f32[1, 2, 2], %scale: f32[2], %bias: f32[2], %mean: f32[2], %var: f32[2]) {
  %y = BatchNormalization 'bn' (%x, %scale, %bias, %mean, %var) {consumed_inputs=[0, 0, 0, 1, 1], epsilon=0.0, is_test=1}
  return %y
}
)";

TEST(LegacyOpsets, BatchNormalizationIsTestAndConsumedInputsAreDropped) {
  auto model = parse(kBatchNorm);
  EXPECT_THAT(to_text(*model), HasSubstr("%y: f32[1, 2, 2] = BatchNormalization 'bn' (%x, %scale, "
                                         "%bias, %mean, %var) {epsilon=0.0}\n"));
  EXPECT_THAT(run(*model, {{"x", Tensor::from_vector<float>({1, 2, 2}, {1, 2, 3, 4})},
                           {"scale", Tensor::from_vector<float>({2}, {1, 2})},
                           {"bias", Tensor::from_vector<float>({2}, {0, 1})},
                           {"mean", Tensor::from_vector<float>({2}, {1, 3})},
                           {"var", Tensor::from_vector<float>({2}, {1, 4})}}),
              ElementsAreArray(std::vector<float>{0, 1, 1, 2}));
  expect_error(R"(model opset=6
graph g(%x: f32[1, 2, 2], %scale: f32[2], %bias: f32[2], %mean: f32[2], %var: f32[2]) {
  %y, %m, %v = BatchNormalization 'bn' (%x, %scale, %bias, %mean, %var) {is_test=1}
  return %y
}
)",
               "l.ir:3:3: BatchNormalization 'bn' (opset 6): attribute 'is_test' = 1 but the node "
               "has 3 outputs (test mode has one, Y)");
}

// spatial=0 with per-activation parameters (C x D1 ...) keeps its opset-7 meaning; with per-channel
// parameters (the legacy spec's C values) it is the per-channel computation and is dropped.
TEST(LegacyOpsets, BatchNormalizationSpatialZeroIsHonored) {
  auto per_channel = parse(R"(model opset=6
graph g(%x: f32[1, 2, 2], %scale: f32[2], %bias: f32[2], %mean: f32[2], %var: f32[2]) {
  %y = BatchNormalization 'bn' (%x, %scale, %bias, %mean, %var) {epsilon=0.0, spatial=0}
  return %y
}
)");
  EXPECT_THAT(to_text(*per_channel), HasSubstr("%var) {epsilon=0.0}\n"));
  EXPECT_THAT(run(*per_channel, {{"x", Tensor::from_vector<float>({1, 2, 2}, {1, 2, 3, 4})},
                                 {"scale", Tensor::from_vector<float>({2}, {1, 2})},
                                 {"bias", Tensor::from_vector<float>({2}, {0, 1})},
                                 {"mean", Tensor::from_vector<float>({2}, {1, 3})},
                                 {"var", Tensor::from_vector<float>({2}, {1, 4})}}),
              ElementsAreArray(std::vector<float>{0, 1, 1, 2}));

  auto model = parse(R"(model opset=6
graph g(%x: f32[1, 2, 2], %scale: f32[2, 2], %bias: f32[2, 2], %mean: f32[2, 2], %var: f32[2, 2]) {
  %y = BatchNormalization 'bn' (%x, %scale, %bias, %mean, %var) {epsilon=0.0, is_test=1, spatial=0}
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("{epsilon=0.0, spatial=0}"));
  EXPECT_THAT(run(*model, {{"x", Tensor::from_vector<float>({1, 2, 2}, {1, 2, 3, 4})},
                           {"scale", Tensor::from_vector<float>({2, 2}, {1, 1, 2, 2})},
                           {"bias", Tensor::from_vector<float>({2, 2}, {0, 0, 0, 1})},
                           {"mean", Tensor::from_vector<float>({2, 2}, {1, 0, 0, 0})},
                           {"var", Tensor::from_vector<float>({2, 2}, {1, 1, 1, 4})}}),
              ElementsAreArray(std::vector<float>{0, 2, 6, 5}));
}

TEST(LegacyOpsets, DropoutIsTestIsDropped) {
  auto model = parse(R"(model opset=6
graph g(%x: f32[2]) {
  %y = Dropout 'drop' (%x) {is_test=1, ratio=0.5}
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("%y: f32[2] = Dropout 'drop' (%x) {ratio=0.5}\n"));
  EXPECT_THAT(run(*model, {{"x", Tensor::from_vector<float>({2}, {1, 2})}}),
              ElementsAreArray(std::vector<float>{1, 2}));
}

TEST(LegacyOpsets, ConcatDefaultAxisIsWrittenOut) {
  auto model = parse(R"(model opset=3
graph g(%a: f32[1, 2], %b: f32[1, 1]) {
  %y = Concat 'concat' (%a, %b)
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("%y: f32[1, 3] = Concat 'concat' (%a, %b) {axis=1}\n"));
  EXPECT_THAT(run(*model, {{"a", Tensor::from_vector<float>({1, 2}, {1, 2})},
                           {"b", Tensor::from_vector<float>({1, 1}, {3})}}),
              ElementsAreArray(std::vector<float>{1, 2, 3}));
}

TEST(LegacyOpsets, ReshapeShapeAttributeBecomesAnInput) {
  auto model = parse(R"(model opset=4
graph g(%x: f32[2, 3]) {
  %y = Reshape 'reshape' (%x) {consumed_inputs=[1], shape=[3, -1]}
  return %y
}
)");
  const std::string text = to_text(*model);
  EXPECT_THAT(text, HasSubstr("const %reshape_shape_0: i64[2] = {3, -1}"));
  EXPECT_THAT(text, HasSubstr("%y: f32[3, 2] = Reshape 'reshape' (%x, %reshape_shape_0)\n"));
  EXPECT_THAT(run(*model, {{"x", Tensor::from_vector<float>({2, 3}, iota(6))}}),
              ElementsAreArray(iota(6)));
  expect_error(R"(model opset=4
graph g(%x: f32[2, 3]) {
  %y = Reshape 'reshape' (%x)
  return %y
}
)",
               "l.ir:3:3: Reshape 'reshape' (opset 4): attribute 'shape' is required");
}

TEST(LegacyOpsets, PadPaddingsBecomePads) {
  auto model = parse(R"(model opset=1
graph g(%x: f32[1, 2]) {
  %y = Pad 'pad' (%x) {mode="constant", paddings=[0, 1, 0, 2], value=9.0}
  return %y
}
)");
  EXPECT_THAT(to_text(*model),
              HasSubstr("= Pad 'pad' (%x) {mode=\"constant\", pads=[0, 1, 0, 2], value=9.0}\n"));
  EXPECT_THAT(run(*model, {{"x", Tensor::from_vector<float>({1, 2}, {1, 2})}}),
              ElementsAreArray(std::vector<float>{9, 1, 2, 9, 9}));
  expect_error(R"(model opset=1
graph g(%x: f32[1, 2]) {
  %y = Pad 'pad' (%x) {pads=[0, 1, 0, 2]}
  return %y
}
)",
               "l.ir:3:3: Pad 'pad' (opset 1): attribute 'paddings' is required");
}

TEST(LegacyOpsets, SplitSizesInputBecomesTheAttribute) {
  auto model = parse(R"(model opset=1
graph g(%x: f32[3]) {
  const %sizes: i64[2] = {2, 1}
  %y, %z = Split 'split' (%x, %sizes) {axis=0}
  return %y, %z
}
)");
  EXPECT_THAT(to_text(*model),
              HasSubstr("%y: f32[2], %z: f32[1] = Split 'split' (%x) {axis=0, split=[2, 1]}\n"));
  auto outputs = evaluate(*model->graph, {{"x", Tensor::from_vector<float>({3}, {1, 2, 3})}});
  EXPECT_THAT(values(outputs[0]), ElementsAreArray(std::vector<float>{1, 2}));
  EXPECT_THAT(values(outputs[1]), ElementsAreArray(std::vector<float>{3}));
  expect_error(R"(model opset=1
graph g(%x: f32[3], %sizes: i64[2]) {
  %y, %z = Split 'split' (%x, %sizes) {axis=0}
  return %y, %z
}
)",
               "l.ir:3:3: Split 'split' (opset 1): input 'split' ('sizes') is not a constant (the "
               "normalized form holds the sizes as attribute 'split')",
               ErrorKind::kUnsupported);
}

TEST(LegacyOpsets, CastTypeNameBecomesItsNumber) {
  auto model = parse(R"(model opset=5
graph g(%x: f32[2]) {
  %y = Cast 'cast' (%x) {to="INT32"}
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("%y: i32[2] = Cast 'cast' (%x) {to=6}\n"));
  expect_error(R"(model opset=5
graph g(%x: f32[2]) {
  %y = Cast 'cast' (%x) {to="REAL"}
  return %y
}
)",
               "l.ir:3:3: Cast 'cast' (opset 5): attribute 'to' = \"REAL\" is not an ONNX element "
               "type name");
}

TEST(LegacyOpsets, UpsampleHeightAndWidthScalesBecomeScales) {
  auto model = parse(R"(model opset=6
graph g(%x: f32[1, 1, 1, 2]) {
  %y = Upsample 'up' (%x) {height_scale=2.0, width_scale=2.0}
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("%y: f32[1, 1, 2, 4] = Upsample 'up' (%x) "
                                         "{mode=\"nearest\", scales=[1.0, 1.0, 2.0, 2.0]}\n"));
  EXPECT_THAT(run(*model, {{"x", Tensor::from_vector<float>({1, 1, 1, 2}, {1, 2})}}),
              ElementsAreArray(std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}));
  expect_error(R"(model opset=6
graph g(%x: f32[1, 1, 1, 2]) {
  %y = Upsample 'up' (%x) {height_scale=2.0, mode="cubic", width_scale=2.0}
  return %y
}
)",
               "l.ir:3:3: Upsample 'up' (opset 6): attribute 'mode' = \"cubic\" must be "
               "\"nearest\" or \"bilinear\"");
}

TEST(LegacyOpsets, ConsumedInputsIsDropped) {
  auto model = parse(R"(model opset=5
graph g(%x: f32[2]) {
  %y = Relu 'relu' (%x) {consumed_inputs=[1]}
  return %y
}
)");
  EXPECT_THAT(to_text(*model), HasSubstr("%y: f32[2] = Relu 'relu' (%x)\n"));
}

TEST(LegacyOpsets, RefusesWhatHasNoOpset7Form) {
  expect_error(R"(model opset=5
graph g(%x: f32[2], %tiles: i64[], %axis: i64[]) {
  %y = Tile 'tile' (%x, %tiles, %axis)
  return %y
}
)",
               "l.ir:3:3: Tile 'tile' (opset 5): the Tile-1 form (inputs 'tiles' and 'axis'); "
               "Tile-6 and later take 'repeats'",
               ErrorKind::kUnsupported);
  expect_error(R"(model opset=6
graph g(%x: f32[2]) {
  %y = Acos 'acos' (%x)
  return %y
}
)",
               "l.ir:3:3: Acos 'acos' (opset 6): Acos does not exist before opset 7");
}

// Inference runs on the opset-7 form; its errors name the node at the opset the model declares.
TEST(LegacyOpsets, InferenceErrorsNameTheDeclaredOpset) {
  expect_error(R"(model opset=3
graph g(%a: f32[1, 2], %b: f32[2, 2]) {
  %y = Concat 'concat' (%a, %b)
  return %y
}
)",
               "l.ir:3:3: Concat 'concat' (opset 3): input 1 has shape [2, 2], expected [1, ?] "
               "(all dims but axis 1 equal)");
}

// A nested graph is rewritten too, with the types its operands declare (here outer inputs).
TEST(LegacyOpsets, NestedGraphsAreNormalized) {
  auto model = parse(R"(model opset=6
graph g(%cond: bool[], %a: f32[2, 3, 2], %b: f32[3]) {
  %y: f32[2, 3, 2] = If 'if' (%cond)
    else_branch = graph else_body() {
      return %a: f32[2, 3, 2]
    }
    then_branch = graph then_body() {
      %sum: f32[2, 3, 2] = Add 'add' (%a, %b) {axis=1, broadcast=1}
      return %sum: f32[2, 3, 2]
    }
  return %y
}
)");
  const std::string text = to_text(*model);
  EXPECT_THAT(text, HasSubstr("= Unsqueeze 'b_unsqueezed_0' (%b) {axes=[1]}"));
  EXPECT_THAT(text, HasSubstr("%sum: f32[2, 3, 2] = Add 'add' (%a, %b_unsqueezed_0)\n"));
  Tensor cond = Tensor::scalar<bool>(true);
  std::vector<float> expected;
  for (int64_t i = 0; i < 12; ++i) {
    expected.push_back(static_cast<float>(i) + 10.0f * static_cast<float>(1 + i / 2 % 3));
  }
  EXPECT_THAT(run(*model, {{"cond", cond},
                           {"a", Tensor::from_vector<float>({2, 3, 2}, iota(12))},
                           {"b", Tensor::from_vector<float>({3}, {10, 20, 30})}}),
              ElementsAreArray(expected));
}

// ---- import and export ---------------------------------------------------------------------

// An opset-6 ONNX model with legacy broadcasting, exported after import: the file declares opset
// 7, holds no legacy attribute, loads again and computes the same.
TEST(LegacyOpsets, ImportedLegacyModelExportsAsOpset7) {
  auto legacy = parse(kAddWithAxis);
  onnx::ModelProto proto;
  proto.set_ir_version(3);
  auto* opset = proto.add_opset_import();
  opset->set_version(6);
  auto* graph = proto.mutable_graph();
  graph->set_name("g");
  for (const auto& [name, dims] :
       std::vector<std::pair<std::string, std::vector<int64_t>>>{{"a", {2, 3, 2}}, {"b", {3}}}) {
    auto* input = graph->add_input();
    input->set_name(name);
    auto* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
  }
  auto* node = graph->add_node();
  node->set_op_type("Add");
  node->set_name("add");
  node->add_input("a");
  node->add_input("b");
  node->add_output("y");
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, int64_t>>{{"broadcast", 1}, {"axis", 1}}) {
    auto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::INT);
    attribute->set_i(value);
  }
  graph->add_output()->set_name("y");
  const std::string bytes = proto.SerializeAsString();
  auto imported = import_onnx_bytes(bytes.data(), bytes.size());
  // The same IR as the text form gives, but for the ir_version the file declares.
  const std::string legacy_text = to_text(*legacy);
  EXPECT_EQ(to_text(*imported),
            "model ir_version=3 opset=7\n" + legacy_text.substr(legacy_text.find('\n') + 1));

  const std::string exported = export_onnx_bytes(*imported);
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(exported));
  ASSERT_EQ(written.opset_import_size(), 1);
  EXPECT_EQ(written.opset_import(0).version(), 7);
  for (const auto& written_node : written.graph().node()) {
    for (const auto& attribute : written_node.attribute()) {
      EXPECT_NE(attribute.name(), "broadcast") << written_node.name();
    }
  }
  auto reloaded = import_onnx_bytes(exported.data(), exported.size());
  EXPECT_EQ(to_text(*reloaded), to_text(*imported));
  const std::map<std::string, Tensor> inputs = {
      {"a", Tensor::from_vector<float>({2, 3, 2}, iota(12))},
      {"b", Tensor::from_vector<float>({3}, {10, 20, 30})}};
  EXPECT_EQ(run(*reloaded, inputs), run(*imported, inputs));
}

// Every backend test model below opset 7 (libonnx-testdata: 138 of them), imported and exported:
// the file declares opset 7, loads again, and computes what the import computes on the stored
// inputs, bit for bit.
TEST(LegacyOpsets, EveryLegacyBackendModelExportsAsOpset7AndComputesTheSame) {
  const std::filesystem::path root = "/usr/share/libonnx-testdata/data";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << root << " is not installed";
  int round_tripped = 0;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    for (const auto& entry : std::filesystem::directory_iterator(root / suite)) {
      const std::string path = (entry.path() / "model.onnx").string();
      std::ifstream file(path, std::ios::binary);
      onnx::ModelProto original;
      if (!original.ParseFromIstream(&file)) continue;
      bool legacy = false;
      for (const auto& opset : original.opset_import()) {
        legacy = legacy ||
                 ((opset.domain().empty() || opset.domain() == "ai.onnx") && opset.version() < 7);
      }
      if (!legacy) continue;
      SCOPED_TRACE(path);
      auto imported = import_onnx_file(path);
      const std::string exported = export_onnx_bytes(*imported);
      onnx::ModelProto written;
      ASSERT_TRUE(written.ParseFromString(exported));
      ASSERT_EQ(written.opset_import_size(), 1);
      EXPECT_EQ(written.opset_import(0).version(), 7);
      auto reloaded = import_onnx_bytes(exported.data(), exported.size());
      EXPECT_EQ(to_text(*reloaded), to_text(*imported));
      const Graph& graph = *imported->graph;
      std::map<std::string, Tensor> inputs =
          rnnc::testing::read_backend_inputs((entry.path() / "test_data_set_0").string(), graph);
      const std::vector<Tensor> expected = evaluate(graph, inputs);
      const std::vector<Tensor> actual = evaluate(*reloaded->graph, inputs);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t k = 0; k < actual.size(); ++k) {
        EXPECT_TRUE(actual[k].bitwise_equal(expected[k])) << "output " << k;
      }
      ++round_tripped;
    }
  }
  EXPECT_EQ(round_tripped, 138);
}

}  // namespace
}  // namespace rnnc
