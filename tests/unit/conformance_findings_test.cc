// Bugs the conformance suite found in the reference kernels, one test each.
//
// Clip's absent bounds are the input type's own limits: for float16, computed widened to float32,
// +-Inf clips to +-65504 (found by the conformance suite's ONNX Runtime cross-check).
#include <gtest/gtest.h>

#include <cmath>

#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"

namespace rnnc {
namespace {

TEST(ElementwiseClip, AbsentBoundsAreTheFloat16Range) {
  auto model = parse_model_text(R"(
model opset=13
graph main(%x: f16[3]) {
  %y: f16[3] = Clip 'clip' (%x)
  return %y
}
)", "clip.ir");
  Tensor x(DType::kFloat16, {3});
  x.set_double(0, -INFINITY);
  x.set_double(1, 1.5);
  x.set_double(2, INFINITY);
  Tensor y = evaluate(*model->graph, {{"x", x}})[0];
  EXPECT_EQ(y.get_double(0), -65504.0);
  EXPECT_EQ(y.get_double(1), 1.5);
  EXPECT_EQ(y.get_double(2), 65504.0);
}

}  // namespace
}  // namespace rnnc

namespace rnnc {
namespace {

// noop_with_empty_axes = 1 with no axes skips the reduction, not the elementwise part
// (found by the conformance suite's ONNX Runtime cross-check).
TEST(ReduceNoop, SkipsTheReductionButNotTheSquare) {
  auto model = parse_model_text(R"(
model opset=18
graph main(%x: f32[3]) {
  const %axes: i64[0] = {}
  %y: f32[3] = ReduceSumSquare 'r' (%x, %axes) {keepdims=1, noop_with_empty_axes=1}
  return %y
}
)", "reduce.ir");
  Tensor y = evaluate(*model->graph, {{"x", Tensor::from_vector<float>({3}, {-2, 3, 0.5f})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(y.get_double(0), 4.0);
  EXPECT_EQ(y.get_double(1), 9.0);
  EXPECT_EQ(y.get_double(2), 0.25);
}

}  // namespace
}  // namespace rnnc
