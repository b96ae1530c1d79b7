// Behaviour of the sequence ops beyond the ONNX backend cases (docs/ops/sequence.md):
// SplitToSequence's 1-D `split` at run time, and the element shape inference gives it.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "tests/support/error_message.h"

namespace rnnc {
namespace {

using testing::error_message;

// SplitToSequence of a [4] tensor by the lengths given at run time; the graph returns the number
// of pieces and the second piece.
std::unique_ptr<Model> split_by_lengths() {
  return parse_model_text(R"(model ir_version=8 opset=11
graph split_test(%x: f32[4], %split: i64[?]) {
  %pieces: seq<f32[?]> = SplitToSequence 'split_x' (%x, %split)
  %count: i64[] = SequenceLength 'count' (%pieces)
  %one: i64[] = Constant 'one' () {value=i64[] = {1}}
  %second: f32[?] = SequenceAt 'second' (%pieces, %one)
  return %count: i64[], %second: f32[?]
}
)",
                          "split_test.ir");
}

// The operator text asks for positive lengths, but ONNX's own test_sequence_model8 splits an empty
// tensor by [0, 0, 0] into three pieces (and ONNX Runtime agrees): a length of 0 is an empty piece.
TEST(SequenceOps, SplitToSequenceZeroLengthIsAnEmptyPiece) {
  auto model = split_by_lengths();
  std::vector<Tensor> outputs =
      evaluate(*model->graph, {{"x", Tensor::from_vector<float>({4}, {1, 2, 3, 4})},
                               {"split", Tensor::from_vector<int64_t>({3}, {2, 0, 2})}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].get_int64(0), 3);
  EXPECT_EQ(outputs[1].shape(), std::vector<int64_t>{0});
}

TEST(SequenceOps, SplitToSequenceNegativeLengthIsAnInputError) {
  auto model = split_by_lengths();
  std::map<std::string, Tensor> inputs = {{"x", Tensor::from_vector<float>({4}, {1, 2, 3, 4})},
                                          {"split", Tensor::from_vector<int64_t>({2}, {5, -1})}};
  EXPECT_EQ(error_message([&] { evaluate(*model->graph, inputs); }, ErrorKind::kInvalidInput),
            "SplitToSequence 'split_x' (opset 11): 'split' [5, -1] has a negative length");
}

// A constant `split` whose lengths all agree gives the elements that length along the axis; one
// that differs anywhere (here the middle, then the last) leaves the axis unknown.
TEST(SequenceOps, SplitToSequenceElementTypeFromAConstantSplit) {
  for (const auto& [lengths, element] : std::vector<std::pair<std::string, std::string>>{
           {"{2, 2, 2}", "seq<f32[2, 3]>"}, {"{2, 3, 1}", "seq<f32[?, 3]>"},
           {"{2, 2, 1, 1}", "seq<f32[?, 3]>"}}) {
    const size_t count = std::count(lengths.begin(), lengths.end(), ',') + 1;
    auto model = parse_model_text(cat(R"(model ir_version=8 opset=11
graph split_test(%x: f32[6, 3]) {
  %split: i64[)", count, "] = Constant 'split' () {value=i64[", count, "] = ", lengths, R"(}
  %pieces = SplitToSequence 'split_x' (%x, %split)
  %count: i64[] = SequenceLength 'count' (%pieces)
  return %count: i64[]
}
)"),
                                  "split_test.ir");
    const Node& split = **std::next(model->graph->nodes().begin());
    EXPECT_EQ(split.output(0)->type.to_string(), element) << lengths;
  }
}

}  // namespace
}  // namespace rnnc
