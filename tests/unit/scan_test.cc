// Scan's reference kernel and shape inference: reversed scan inputs along a non-leading axis,
// prepended scan outputs on another axis, opset 8's batch axis with sequence_lens (scan outputs
// zero past an entry's length), and the errors. Expected numbers are worked out by hand.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "tests/support/error_message.h"

namespace rnnc {
namespace {

using testing::error_message;

std::vector<float> values_of(const Tensor& tensor) {
  return std::vector<float>(tensor.data<float>(), tensor.data<float>() + tensor.numel());
}

// acc += x over the columns of xs, last column first; each step's acc prepended along axis 1.
constexpr const char* kReversedColumns = R"(model opset=11
graph g(%init: f32[2], %xs: f32[2, 3]) {
  %sum: f32[2], %steps = Scan 's' (%init, %xs) {num_scan_inputs=1, scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[-1], scan_output_directions=[1]}
    body = graph body(%acc: f32[2], %x: f32[2]) {
      %next: f32[2] = Add 'add' (%acc, %x)
      return %next: f32[2], %next: f32[2]
    }
  return %sum, %steps
}
)";

TEST(Scan, ReadsReversedAlongAnAxisAndPrependsAlongAnother) {
  auto model = parse_model_text(kReversedColumns, "scan.ir");
  EXPECT_EQ(model->graph->outputs()[1]->type.to_string(), "f32[2, 3]");
  std::vector<Tensor> out = evaluate(
      *model->graph, {{"init", Tensor::from_vector<float>({2}, {0, 0})},
                      {"xs", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 10, 20, 30})}});
  EXPECT_EQ(values_of(out[0]), (std::vector<float>{6, 60}));
  // Steps in order: [3, 30], [5, 50], [6, 60]; prepended, the last comes first.
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of(out[1]), (std::vector<float>{6, 5, 3, 60, 50, 30}));
}

constexpr const char* kBatchedWithLengths = R"(model opset=8
graph g(%lens: i64[2], %init: f32[2, 1], %xs: f32[2, 3, 1]) {
  %sum: f32[2, 1], %steps = Scan 's' (%lens, %init, %xs) {num_scan_inputs=1}
    body = graph body(%acc: f32[1], %x: f32[1]) {
      %next: f32[1] = Add 'add' (%acc, %x)
      return %next: f32[1], %next: f32[1]
    }
  return %sum, %steps
}
)";

TEST(Scan, Opset8RunsEachBatchEntryForItsLengthAndZeroesTheRest) {
  auto model = parse_model_text(kBatchedWithLengths, "scan8.ir");
  EXPECT_EQ(model->graph->outputs()[1]->type.to_string(), "f32[2, 3, 1]");
  std::vector<Tensor> out = evaluate(
      *model->graph, {{"lens", Tensor::from_vector<int64_t>({2}, {3, 1})},
                      {"init", Tensor::from_vector<float>({2, 1}, {0, 0})},
                      {"xs", Tensor::from_vector<float>({2, 3, 1}, {1, 2, 3, 10, 20, 30})}});
  EXPECT_EQ(values_of(out[0]), (std::vector<float>{6, 10}));
  EXPECT_EQ(values_of(out[1]), (std::vector<float>{1, 3, 6, 10, 0, 0}));
}

TEST(ScanErrors, SequenceLengthBeyondTheScanAxis) {
  auto model = parse_model_text(kBatchedWithLengths, "scan8.ir");
  EXPECT_EQ(error_message(
                [&] {
                  evaluate(*model->graph,
                           {{"lens", Tensor::from_vector<int64_t>({2}, {3, 4})},
                            {"init", Tensor::from_vector<float>({2, 1}, {0, 0})},
                            {"xs", Tensor::from_vector<float>({2, 3, 1}, {1, 2, 3, 4, 5, 6})}});
                },
                ErrorKind::kInvalidInput),
            "Scan 's' (opset 8): sequence_lens[1] = 4 is outside [0, 3]");
}

TEST(ScanErrors, AttributesThatDoNotFitTheInputs) {
  std::string text = kReversedColumns;
  std::string bad_axis = text;
  bad_axis.replace(bad_axis.find("scan_input_axes=[1]"), 19, "scan_input_axes=[2]");
  EXPECT_EQ(error_message([&] { parse_model_text(bad_axis, "scan.ir"); },
                          ErrorKind::kInvalidModel),
            "scan.ir:3:3: Scan 's' (opset 11): scan_input_axes[0] = 2 is out of range for rank 2 (valid: [-2, 1])");
  std::string bad_direction = text;
  bad_direction.replace(bad_direction.find("scan_input_directions=[1]"), 25,
                        "scan_input_directions=[2]");
  EXPECT_EQ(error_message([&] { parse_model_text(bad_direction, "scan.ir"); },
                          ErrorKind::kInvalidModel),
            "scan.ir:3:3: Scan 's' (opset 11): attribute 'scan_input_directions' holds 2, must be 0 or 1");
  std::string no_count = text;
  no_count.replace(no_count.find("num_scan_inputs=1, "), 19, "");
  EXPECT_EQ(error_message([&] { parse_model_text(no_count, "scan.ir"); },
                          ErrorKind::kInvalidModel),
            "scan.ir:3:3: Scan 's' (opset 11): attribute 'num_scan_inputs' must be given and >= 1");
}

}  // namespace
}  // namespace rnnc
