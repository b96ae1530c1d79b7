// Copy blocks for Slice, Pad and ScatterND (lowering/lower_copy.h) against the reference evaluator:
// each test builds a graph of one node whose operands are constants or run-time inputs, runs the
// reference evaluator and the lowered block on the same inputs, and compares bitwise (the blocks
// only move data, so there is no tolerance). Errors compare kind and message. One behaviour per
// test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <limits>
#include <random>

#include "compiler/compile.h"
#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"
#include "lowering/lower_copy.h"
#include "lowering/program.h"
#include "tests/support/random.h"

namespace rnnc {
namespace {

using testing::random_tensor;

using ::testing::HasSubstr;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

Tensor i64(std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::from_vector<int64_t>({n}, values);
}

Tensor i32(const std::vector<int64_t>& values) {
  std::vector<int32_t> narrow(values.begin(), values.end());
  return Tensor::from_vector<int32_t>({static_cast<int64_t>(values.size())}, narrow);
}

Tensor f32(std::vector<int64_t> shape, std::vector<float> values) {
  return Tensor::from_vector<float>(std::move(shape), values);
}

Tensor iota_f32(std::vector<int64_t> shape) {
  Tensor tensor(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = static_cast<float>(i);
  return tensor;
}

std::vector<float> values_of(const Tensor& tensor) {
  std::vector<float> values;
  for (int64_t i = 0; i < tensor.numel(); ++i)
    values.push_back(static_cast<float>(tensor.get_double(i)));
  return values;
}

// Uniform integers in [low, high] from `rng`.
struct Uniform {
  std::mt19937& rng;
  int64_t operator()(int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  }
};

// "label 2 3 4", for a failure message.
std::string ints_text(const std::string& label, const std::vector<int64_t>& values) {
  std::string text = label;
  for (int64_t value : values) text += " " + std::to_string(value);
  return text;
}

// What running something produced: a tensor, or an error's kind and message.
struct Outcome {
  Tensor tensor;
  bool failed = false;
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
};

template <typename Fn>
Outcome outcome_of(Fn&& fn) {
  Outcome outcome;
  try {
    outcome.tensor = fn();
  } catch (const Error& e) {
    outcome.failed = true;
    outcome.kind = e.kind();
    outcome.message = e.what();
  }
  return outcome;
}

// A graph of one Slice, Pad, ScatterND, Transpose or Expand node. Operands are added in input
// order, each a constant (initializer) or a run-time graph input; omit() leaves an optional input
// out.
class OneNode {
 public:
  OneNode(std::string op_type, int opset) : op_type_(std::move(op_type)), opset_(opset) {}

  OneNode& constant(Tensor data) {
    operands_.push_back(graph_.add_initializer(name(), std::move(data)));
    return *this;
  }
  OneNode& runtime(Tensor data) {
    TensorType type;
    type.dtype = data.dtype();
    type.shape = Shape(data.shape().size(), Dim::unknown());  // any size at run time
    Value* input = graph_.add_input(name(), type);
    inputs_[input->name()] = std::move(data);
    operands_.push_back(input);
    return *this;
  }
  OneNode& operand(Tensor data, bool at_run_time) {
    return at_run_time ? runtime(std::move(data)) : constant(std::move(data));
  }
  OneNode& omit() {
    operands_.push_back(nullptr);
    return *this;
  }
  OneNode& attr(const std::string& name, const std::string& value) {
    Attribute attribute;
    attribute.kind = Attribute::Kind::kString;
    attribute.s = value;
    attributes_[name] = attribute;
    return *this;
  }

  OneNode& attr_ints(const std::string& name, std::vector<int64_t> values) {
    attributes_[name] = Attribute::of_ints(std::move(values));
    return *this;
  }

  ExecutionBlock& block() {
    if (!block_) {
      std::string node_name = op_type_ == "ScatterND" ? "scatter" : op_type_;
      std::transform(node_name.begin(), node_name.end(), node_name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      node_ = graph_.add_node(op_type_, node_name, operands_, {"out"}, opset_);
      for (const auto& [name, attribute] : attributes_) node_->set_attr(name, attribute);
      graph_.add_output(node_->output(0));
      infer_graph(graph_);
      block_ = lower_copy({node_});
      for (const Value* value : graph_.inputs()) block_->inputs.push_back(value);
    }
    return *block_;
  }
  // The graph's run-time inputs, which the test may replace between runs.
  std::map<std::string, Tensor>& inputs() { return inputs_; }

  Outcome reference() {
    block();
    return outcome_of([&] { return evaluate(graph_, inputs_).at(0); });
  }
  // Runs the block with `io`, whose outputs and workspace carry over between calls.
  Outcome lowered(BlockIO& io) {
    ExecutionBlock& lowered_block = block();
    io.inputs.clear();
    for (const Value* value : lowered_block.inputs) io.inputs.push_back(&inputs_.at(value->name()));
    return outcome_of([&] {
      lowered_block.run(io);
      EXPECT_EQ(io.outputs.size(), 1u);
      return io.outputs.at(0);
    });
  }
  Outcome lowered() {
    BlockIO io;
    return lowered(io);
  }

  // Both ways on the current inputs: the same tensor bit for bit, or the same error. A result
  // must come from the copy itself, not its fallback to the reference kernel: a second run
  // rewrites the first run's output in place.
  void expect_matches(const std::string& what) {
    Outcome expected = reference();
    BlockIO io;
    Outcome actual = lowered(io);
    ASSERT_EQ(actual.failed, expected.failed)
        << what << ": " << (actual.failed ? actual.message : expected.message);
    if (expected.failed) {
      EXPECT_EQ(error_kind_name(actual.kind), std::string(error_kind_name(expected.kind))) << what;
      EXPECT_EQ(actual.message, expected.message) << what;
      return;
    }
    EXPECT_TRUE(actual.tensor.bitwise_equal(expected.tensor))
        << what << "\n  copy block: " << tensor_summary(actual.tensor, 64)
        << "\n  reference:  " << tensor_summary(expected.tensor, 64);
    const void* storage = io.outputs.at(0).raw_data();
    actual = Outcome();  // drops the test's share of the output
    Outcome again = lowered(io);
    EXPECT_EQ(io.outputs.at(0).raw_data(), storage) << what << ": ran on the reference kernel";
    EXPECT_TRUE(again.tensor.bitwise_equal(expected.tensor)) << what << ": second run";
  }

  // The block's error, which must be kInvalidInput and the reference's message.
  std::string input_error() {
    Outcome expected = reference();
    Outcome actual = lowered();
    EXPECT_TRUE(expected.failed && actual.failed);
    EXPECT_EQ(error_kind_name(actual.kind), std::string(error_kind_name(ErrorKind::kInvalidInput)));
    EXPECT_EQ(actual.message, expected.message);
    return actual.message;
  }

 private:
  std::string name() { return "operand" + std::to_string(operands_.size()); }

  std::string op_type_;
  int opset_;
  Graph graph_;
  std::vector<Value*> operands_;
  std::map<std::string, Attribute> attributes_;
  std::map<std::string, Tensor> inputs_;
  Node* node_ = nullptr;
  std::unique_ptr<ExecutionBlock> block_;
};

const DType kDtypes[] = {DType::kFloat32, DType::kInt64, DType::kBool,
                         DType::kFloat16, DType::kInt8,  DType::kFloat64};

// ---- Slice --------------------------------------------------------------------------------------

TEST(LoweringCopySlice, ClampsLikeTheSpec) {
  // docs/ops/tensor.md's examples on [0..9], including the backward start before the first
  // element, which the spec clamps to 0 (numpy would take nothing).
  struct Example {
    int64_t start, end, step;
    std::vector<float> expected;
  };
  const Example examples[] = {
      {20, -100, -3, {9, 6, 3, 0}},
      {-1, kInt64Min, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {5, 5, -1, {}},
      {-2, -20, -4, {8, 4, 0}},
      {-12, -20, -1, {0}},
      {2, kInt64Max, 3, {2, 5, 8}},
      {-3, 100, 1, {7, 8, 9}},
      {9, -100, kInt64Min, {9}},
  };
  for (const Example& e : examples) {
    OneNode slice("Slice", 13);
    slice.runtime(iota_f32({10}))
        .runtime(i64({e.start}))
        .runtime(i64({e.end}))
        .omit()
        .runtime(i64({e.step}));
    Outcome actual = slice.lowered();
    ASSERT_FALSE(actual.failed) << actual.message;
    EXPECT_EQ(values_of(actual.tensor), e.expected) << e.start << ":" << e.end << ":" << e.step;
    slice.expect_matches("example");
  }
}

TEST(LoweringCopySlice, MatchesReferenceOnRandomCases) {
  std::mt19937 rng(11);
  Uniform uniform{rng};
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t rank = uniform(1, 4);
    std::vector<int64_t> shape;
    for (int64_t k = 0; k < rank; ++k) shape.push_back(uniform(0, 7) == 0 ? 0 : uniform(1, 6));
    std::vector<int64_t> axes(static_cast<size_t>(rank));
    for (int64_t k = 0; k < rank; ++k) axes[k] = k;
    std::shuffle(axes.begin(), axes.end(), rng);
    axes.resize(static_cast<size_t>(uniform(0, rank)));
    const bool int32_operands = uniform(0, 1);
    const int64_t low = int32_operands ? std::numeric_limits<int32_t>::min() : kInt64Min;
    const int64_t high = int32_operands ? std::numeric_limits<int32_t>::max() : kInt64Max;
    std::vector<int64_t> starts, ends, steps;
    for (int64_t& axis : axes) {
      const int64_t d = shape[axis];
      auto bound = [&] {
        switch (uniform(0, 9)) {
          case 0:
            return low;
          case 1:
            return high;
          default:
            return uniform(-d - 3, d + 3);
        }
      };
      starts.push_back(bound());
      ends.push_back(bound());
      int64_t step = uniform(-3, 3);
      if (step == 0) step = uniform(0, 1) ? high : low;
      steps.push_back(step);
      if (uniform(0, 1)) axis -= rank;  // the negative form of the same axis
    }
    bool in_order = true;
    for (size_t i = 0; i < axes.size(); ++i)
      in_order = in_order && axes[i] == static_cast<int64_t>(i);
    const bool omit_axes = in_order && uniform(0, 1);
    const bool omit_steps = uniform(0, 3) == 0;
    if (omit_steps) std::fill(steps.begin(), steps.end(), 1);
    auto ints = [&](const std::vector<int64_t>& values) {
      return int32_operands ? i32(values) : i64(values);
    };

    const DType dtype = kDtypes[uniform(0, std::size(kDtypes) - 1)];
    OneNode slice("Slice", uniform(0, 1) ? 13 : 10);
    slice.operand(random_tensor(dtype, shape, rng), uniform(0, 4) != 0)
        .operand(ints(starts), uniform(0, 1))
        .operand(ints(ends), uniform(0, 1));
    if (omit_axes) {
      if (!omit_steps) slice.omit();
    } else {
      slice.operand(ints(axes), uniform(0, 1));
    }
    if (!omit_steps) slice.operand(ints(steps), uniform(0, 1));
    slice.expect_matches(cat("trial ", trial, ": ", dtype_name(dtype), shape_text(shape), " starts ",
                             shape_text(starts), " ends ", shape_text(ends), " axes ",
                             shape_text(axes), " steps ", shape_text(steps)));
  }
}

TEST(LoweringCopySlice, ReversesTheInnermostAxisWithInt32Operands) {
  OneNode slice("Slice", 13);
  slice.runtime(iota_f32({2, 3}))
      .runtime(i32({-1}))
      .runtime(i32({-100}))
      .runtime(i32({1}))
      .runtime(i32({-1}));
  Outcome actual = slice.lowered();
  ASSERT_FALSE(actual.failed) << actual.message;
  EXPECT_EQ(actual.tensor.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of(actual.tensor), (std::vector<float>{2, 1, 0, 5, 4, 3}));
}

TEST(LoweringCopySlice, ScalarWithNoAxesIsACopy) {
  OneNode slice("Slice", 13);
  slice.runtime(Tensor::scalar<float>(4.5f)).runtime(i64({})).runtime(i64({}));
  slice.expect_matches("scalar");
}

TEST(LoweringCopySlice, ZeroStepIsTheReferenceError) {
  OneNode slice("Slice", 13);
  slice.runtime(iota_f32({2, 3}))
      .runtime(i64({0, 0}))
      .runtime(i64({2, 3}))
      .omit()
      .runtime(i64({1, 0}));
  EXPECT_EQ(slice.input_error(), "Slice 'slice' (opset 13): 'steps' [1, 0] has a 0");
}

TEST(LoweringCopySlice, OperandLengthsThatDifferAreTheReferenceError) {
  OneNode slice("Slice", 13);
  slice.runtime(iota_f32({2, 3})).runtime(i64({0})).runtime(i64({2, 3}));
  EXPECT_THAT(slice.input_error(),
              HasSubstr("Slice 'slice' (opset 13): 'starts' [0], 'ends' [2, 3], 'axes' [0] and "
                        "'steps' [1] differ in length"));
}

TEST(LoweringCopySlice, RepeatedOrOutOfRangeAxesAreTheReferenceError) {
  OneNode repeated("Slice", 13);
  repeated.runtime(iota_f32({2, 3}))
      .runtime(i64({0, 0}))
      .runtime(i64({1, 1}))
      .runtime(i64({1, -1}));
  EXPECT_EQ(repeated.input_error(), "Slice 'slice' (opset 13): 'axes' names axis 1 twice");
  OneNode out_of_range("Slice", 13);
  out_of_range.runtime(iota_f32({2, 3})).runtime(i64({0})).runtime(i64({1})).runtime(i64({2}));
  EXPECT_EQ(out_of_range.input_error(),
            "Slice 'slice' (opset 13): 'axes' [2] has 2, out of range for rank 2");
}

// ---- Transpose and Expand ----------------------------------------------------------------------

TEST(LoweringCopyTranspose, MatchesReferenceOnRandomCases) {
  std::mt19937 rng(17);
  Uniform uniform{rng};
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t rank = uniform(1, 5);
    std::vector<int64_t> shape, perm;
    for (int64_t k = 0; k < rank; ++k) {
      shape.push_back(uniform(0, 9) == 0 ? 0 : uniform(1, 5));
      perm.push_back(k);
    }
    std::shuffle(perm.begin(), perm.end(), rng);
    const bool given = uniform(0, 3) != 0;  // else no perm: the axes reversed
    OneNode transpose("Transpose", 13);
    transpose.runtime(uniform(0, 1) ? iota_f32(shape) : random_tensor(shape, 3));
    if (given) transpose.attr_ints("perm", perm);
    transpose.expect_matches(ints_text("shape", shape) + (given ? ints_text(", perm", perm) : ""));
  }
}

TEST(LoweringCopyExpand, MatchesReferenceOnRandomCases) {
  std::mt19937 rng(19);
  Uniform uniform{rng};
  for (int trial = 0; trial < 300; ++trial) {
    // An output shape, the input a broadcastable cut of it, the target shape another one.
    const int64_t rank = uniform(1, 5);
    std::vector<int64_t> out;
    for (int64_t k = 0; k < rank; ++k) out.push_back(uniform(0, 9) == 0 ? 0 : uniform(1, 4));
    auto cut = [&](bool keep_rank) {
      const int64_t drop = keep_rank ? 0 : uniform(0, rank - 1);
      std::vector<int64_t> shape(out.begin() + drop, out.end());
      for (int64_t& d : shape) {
        if (uniform(0, 2) == 0) d = 1;
      }
      return shape;
    };
    const bool input_full = uniform(0, 1);
    const std::vector<int64_t> input = cut(input_full);
    const std::vector<int64_t> target = cut(!input_full);
    OneNode expand("Expand", 13);
    expand.runtime(iota_f32(input)).operand(i64(target), uniform(0, 1));
    expand.expect_matches(ints_text("input", input) + ints_text(", shape", target));
  }
}

TEST(LoweringCopyExpand, AShapeThatDoesNotBroadcastIsTheReferenceError) {
  OneNode expand("Expand", 13);
  expand.runtime(iota_f32({2, 3})).runtime(i64({4, 3}));
  EXPECT_THAT(expand.input_error(), HasSubstr("Expand 'expand' (opset 13)"));
}

// ---- Pad ----------------------------------------------------------------------------------------

TEST(LoweringCopyPad, ModesOnTheDocumentedExample) {
  // docs/ops/tensor.md: [1, 2, 3, 4] with pads [2, 3], fill 9.
  const std::pair<const char*, std::vector<float>> modes[] = {
      {"constant", {9, 9, 1, 2, 3, 4, 9, 9, 9}},
      {"edge", {1, 1, 1, 2, 3, 4, 4, 4, 4}},
      {"reflect", {3, 2, 1, 2, 3, 4, 3, 2, 1}},
      {"wrap", {3, 4, 1, 2, 3, 4, 1, 2, 3}},
  };
  for (const auto& [mode, expected] : modes) {
    OneNode pad("Pad", 19);
    pad.runtime(f32({4}, {1, 2, 3, 4}))
        .runtime(i64({2, 3}))
        .runtime(f32({}, {9}))
        .attr("mode", mode);
    Outcome actual = pad.lowered();
    ASSERT_FALSE(actual.failed) << actual.message;
    EXPECT_EQ(values_of(actual.tensor), expected) << mode;
    pad.expect_matches(mode);
  }
}

TEST(LoweringCopyPad, NegativePadsCropRelativeToTheUncroppedInput) {
  // Reflect [1, 2, 3, 4] by pads [-1, 2]: drop the 1, then mirror at the 4: 2 3 4 3 2.
  OneNode pad("Pad", 13);
  pad.runtime(f32({4}, {1, 2, 3, 4})).constant(i64({-1, 2})).attr("mode", "reflect");
  Outcome actual = pad.lowered();
  ASSERT_FALSE(actual.failed) << actual.message;
  EXPECT_EQ(values_of(actual.tensor), (std::vector<float>{2, 3, 4, 3, 2}));
  pad.expect_matches("crop");
}

TEST(LoweringCopyPad, FillIsZeroWithoutConstantValue) {
  std::mt19937 rng(3);
  OneNode pad("Pad", 13);
  pad.runtime(random_tensor(DType::kFloat16, {2, 2}, rng)).constant(i64({1, 0, 0, 1}));
  pad.expect_matches("f16 default fill");
  Outcome actual = pad.lowered();
  ASSERT_FALSE(actual.failed) << actual.message;
  EXPECT_EQ(actual.tensor.shape(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(values_of(actual.tensor)[0], 0.0f);
}

TEST(LoweringCopyPad, MatchesReferenceOnRandomCases) {
  std::mt19937 rng(5);
  Uniform uniform{rng};
  const char* const kModes[] = {"constant", "edge", "reflect", "wrap"};
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t rank = uniform(0, 4);
    const std::string mode = kModes[uniform(0, 3)];
    std::vector<int64_t> shape;
    for (int64_t k = 0; k < rank; ++k) shape.push_back(uniform(0, 7) == 0 ? 0 : uniform(1, 5));
    const int opset =
        mode == "wrap" ? 19 : static_cast<int>(std::array{11, 13, 18, 19}[uniform(0, 3)]);
    std::vector<int64_t> axes(static_cast<size_t>(rank));
    for (int64_t k = 0; k < rank; ++k) axes[k] = k;
    const bool given_axes = opset >= 18 && uniform(0, 1);
    if (given_axes) {
      std::shuffle(axes.begin(), axes.end(), rng);
      axes.resize(static_cast<size_t>(uniform(0, rank)));
    }
    std::vector<int64_t> begins, ends;
    for (int64_t axis : axes) {
      const int64_t d = shape[axis];
      int64_t begin = uniform(-d, 4), end = uniform(-d, 4);
      if (d == 0)
        begin = mode == "constant" ? uniform(0, 3) : 0,
        end = mode == "constant" ? uniform(0, 3) : 0;
      if (d + begin + end < 0) end = -d - begin;  // crop everything at most
      begins.push_back(begin);
      ends.push_back(end);
    }
    std::vector<int64_t> pads = begins;
    pads.insert(pads.end(), ends.begin(), ends.end());
    const DType dtype = kDtypes[uniform(0, std::size(kDtypes) - 1)];

    OneNode pad("Pad", opset);
    pad.attr("mode", mode)
        .operand(random_tensor(dtype, shape, rng), uniform(0, 4) != 0)
        .operand(i64(pads), uniform(0, 1));
    const bool given_value = uniform(0, 1);
    if (given_value) {
      pad.operand(random_tensor(dtype, {}, rng), uniform(0, 1));
    } else if (given_axes) {
      pad.omit();
    }
    if (given_axes) {
      std::vector<int64_t> named = axes;
      for (int64_t& axis : named) axis -= uniform(0, 1) * rank;
      pad.operand(i64(named), uniform(0, 1));
    }
    pad.expect_matches(cat("trial ", trial, ": ", mode, " ", dtype_name(dtype), shape_text(shape),
                           " pads ", shape_text(pads), " axes ",
                           given_axes ? shape_text(axes) : "all"));
  }
}

TEST(LoweringCopyPad, PadCountThatDoesNotFitIsTheReferenceError) {
  OneNode pad("Pad", 13);
  pad.runtime(iota_f32({2, 3})).runtime(i64({0, 1, 0}));
  EXPECT_EQ(pad.input_error(),
            "Pad 'pad' (opset 13): 'pads' [0, 1, 0] has 3 entries, expected 4 (begin and end per "
            "axis)");
}

TEST(LoweringCopyPad, NegativeDimIsTheReferenceError) {
  OneNode pad("Pad", 13);
  pad.runtime(iota_f32({2})).runtime(i64({-3, 0}));
  EXPECT_EQ(pad.input_error(),
            "Pad 'pad' (opset 13): 'pads' [-3, 0] makes dim 0 of [2] negative (-1)");
}

TEST(LoweringCopyPad, ReflectOnAnEmptyAxisIsTheReferenceError) {
  OneNode pad("Pad", 13);
  pad.runtime(Tensor(DType::kFloat32, {2, 0})).runtime(i64({0, 1, 0, 0})).attr("mode", "reflect");
  EXPECT_EQ(pad.input_error(),
            "Pad 'pad' (opset 13): mode 'reflect' cannot pad axis 1 of [2, 0]: it has no elements "
            "to repeat");
}

TEST(LoweringCopyPad, ConstantValueOfTwoElementsIsTheReferenceError) {
  OneNode pad("Pad", 13);
  pad.runtime(iota_f32({2})).runtime(i64({1, 1})).runtime(f32({2}, {7, 8}));
  EXPECT_THAT(pad.input_error(),
              HasSubstr("Pad 'pad' (opset 13): input 2 'constant_value' must be one float, got "));
}

TEST(LoweringCopyPad, RepeatedAxesAreTheReferenceError) {
  OneNode pad("Pad", 18);
  pad.runtime(iota_f32({2, 3})).runtime(i64({1, 1, 1, 1})).omit().runtime(i64({1, -1}));
  EXPECT_EQ(pad.input_error(), "Pad 'pad' (opset 18): input 3 'axes' names axis 1 twice");
}

// ---- both ---------------------------------------------------------------------------------------

// ---- ScatterND ---------------------------------------------------------------------------------

// `tuples` index tuples of k entries into `shape`, row-major over `box` starting at `start` (a
// block of the data, as a cache update writes), or at random (maybe repeated, maybe negative).
Tensor scatter_indices(const std::vector<int64_t>& shape, int64_t k, bool block, std::mt19937& rng,
                       std::vector<int64_t>& index_shape) {
  Uniform uniform{rng};
  std::vector<int64_t> values;
  if (block) {
    std::vector<int64_t> start, box;
    for (int64_t j = 0; j < k; ++j) {
      box.push_back(uniform(1, shape[j]));
      start.push_back(uniform(0, shape[j] - box.back()));
    }
    index_shape = box;
    std::vector<int64_t> at(static_cast<size_t>(k), 0);
    for (bool more = true; more;) {
      for (int64_t j = 0; j < k; ++j) values.push_back(start[j] + at[j]);
      more = false;
      for (int64_t j = k - 1; j >= 0 && !more; --j) {
        more = ++at[j] < box[j];
        if (!more) at[j] = 0;
      }
    }
  } else {
    const int64_t tuples = uniform(1, 5);
    index_shape = {tuples};
    for (int64_t t = 0; t < tuples * k; ++t) {
      const int64_t d = shape[t % k];
      values.push_back(uniform(-d, d - 1));
    }
  }
  index_shape.push_back(k);
  return Tensor::from_vector<int64_t>(index_shape, values);
}

TEST(LoweringCopyScatterND, MatchesReferenceOnRandomCases) {
  std::mt19937 rng(26);
  Uniform uniform{rng};
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t rank = uniform(1, 4);
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d) shape.push_back(uniform(1, 5));
    const int64_t k = uniform(1, rank);
    std::vector<int64_t> index_shape;
    const bool block = uniform(0, 1);
    Tensor indices = scatter_indices(shape, k, block, rng, index_shape);
    std::vector<int64_t> update_shape(index_shape.begin(), index_shape.end() - 1);
    update_shape.insert(update_shape.end(), shape.begin() + k, shape.end());
    const DType dtype = kDtypes[uniform(0, std::size(kDtypes) - 1)];
    OneNode scatter("ScatterND", uniform(0, 1) ? 11 : 18);
    scatter.operand(random_tensor(dtype, shape, rng), uniform(0, 4) != 0)
        .operand(std::move(indices), uniform(0, 1))
        .operand(random_tensor(dtype, update_shape, rng), uniform(0, 4) != 0);
    scatter.expect_matches(cat("trial ", trial, ": ", dtype_name(dtype), shape_text(shape),
                               block ? " block " : " tuples ", shape_text(index_shape)));
  }
}

TEST(LoweringCopyScatterND, IndexOutOfRangeIsTheReferenceError) {
  OneNode scatter("ScatterND", 11);
  scatter.runtime(iota_f32({2, 3}))
      .runtime(Tensor::from_vector<int64_t>({1, 1}, {2}))
      .runtime(iota_f32({1, 3}));
  EXPECT_THAT(scatter.input_error(), HasSubstr("out of range for axis 0 of size 2"));
}

TEST(LoweringCopyScatterND, UpdatesOfTheWrongShapeAreTheReferenceError) {
  OneNode scatter("ScatterND", 11);
  scatter.runtime(iota_f32({2, 3}))
      .runtime(Tensor::from_vector<int64_t>({1, 1}, {1}))
      .runtime(iota_f32({1, 2}));
  EXPECT_FALSE(scatter.input_error().empty());
}

TEST(LoweringCopyScatterND, GivenTheDataBufferItWritesOnlyTheSlices) {
  // The executor's in-place hand-over (ExecutionBlock::in_place_input): the data is io.outputs[0]
  // and io.inputs[data] points at it. A frame written into a cache of 4 frames x 3 bins.
  Graph graph;
  TensorType cache_type;
  cache_type.dtype = DType::kFloat32;
  cache_type.shape = shape_from_values({4, 3});
  Value* cache = graph.add_input("cache", cache_type);
  TensorType frame_type = cache_type;
  frame_type.shape = shape_from_values({1, 3});
  Value* frame = graph.add_input("frame", frame_type);
  Node* node = graph.add_node(
      "ScatterND", "write",
      {cache, graph.add_initializer("at", Tensor::from_vector<int64_t>({1, 1}, {2})), frame},
      {"out"}, 11);
  graph.add_output(node->output(0));
  infer_graph(graph);
  auto block = lower_copy({node});
  block->inputs = {cache, frame};
  EXPECT_EQ(block->in_place_input(), 0);

  const Tensor frame_values = f32({1, 3}, {-1, -2, -3});
  const Tensor expected =
      evaluate(graph, {{"cache", iota_f32({4, 3})}, {"frame", frame_values}}).at(0);
  BlockIO io;
  io.outputs.push_back(iota_f32({4, 3}));
  const void* storage = io.outputs[0].raw_data();
  io.inputs = {&io.outputs[0], &frame_values};
  block->run(io);
  ASSERT_EQ(io.outputs.size(), 1u);
  EXPECT_EQ(io.outputs[0].raw_data(), storage);
  EXPECT_TRUE(io.outputs[0].bitwise_equal(expected)) << tensor_summary(io.outputs[0], 12);
}

TEST(LoweringCopyScatterND, DataReadAsAnUpdateIsNotTakenOver) {
  // ScatterND(x, i, x) (k = 0 is invalid, so a rank-2 x over its first row): writing into x's
  // buffer would change the updates it reads.
  Graph graph;
  TensorType type;
  type.dtype = DType::kFloat32;
  type.shape = shape_from_values({1, 3});
  Value* x = graph.add_input("x", type);
  Node* node = graph.add_node(
      "ScatterND", "write",
      {x, graph.add_initializer("at", Tensor::from_vector<int64_t>({1, 1}, {0})), x}, {"out"}, 11);
  graph.add_output(node->output(0));
  infer_graph(graph);
  auto block = lower_copy({node});
  block->inputs = {x};
  EXPECT_EQ(block->in_place_input(), -1);
}

TEST(LoweringCopy, OutputStorageIsReusedForTheSameShape) {
  OneNode slice("Slice", 13);
  slice.runtime(iota_f32({4, 6})).runtime(i64({1})).runtime(i64({-1})).runtime(i64({1}));
  OneNode pad("Pad", 13);
  pad.runtime(iota_f32({4, 6})).runtime(i64({0, 2, 0, 2})).attr("mode", "reflect");
  for (OneNode* node : {&slice, &pad}) {
    Workspace workspace;
    BlockIO io;
    io.workspace = &workspace;
    Outcome first = node->lowered(io);
    ASSERT_FALSE(first.failed) << first.message;
    const void* storage = io.outputs.at(0).raw_data();
    first = Outcome();  // the test's copy would keep the storage shared
    const size_t capacity = workspace.capacity();
    for (int run = 0; run < 3; ++run) {
      Outcome again = node->lowered(io);
      ASSERT_FALSE(again.failed) << again.message;
      EXPECT_EQ(io.outputs.at(0).raw_data(), storage) << "run " << run;
      EXPECT_EQ(workspace.capacity(), capacity) << "run " << run;
    }
    node->expect_matches("after reuse");
  }
}

TEST(LoweringCopy, ADifferentShapeGetsAFreshOutputOfThatShape) {
  OneNode slice("Slice", 13);
  slice.runtime(iota_f32({4, 6})).runtime(i64({1})).runtime(i64({-1})).runtime(i64({1}));
  OneNode pad("Pad", 13);
  pad.runtime(iota_f32({4, 6})).runtime(i64({0, 2, 0, 2})).attr("mode", "edge");
  const std::vector<int64_t> expected_shapes[] = {{3, 4}, {3, 10}};
  int index = 0;
  for (OneNode* node : {&slice, &pad}) {
    BlockIO io;
    ASSERT_FALSE(node->lowered(io).failed);
    node->inputs().at("operand0") = iota_f32({3, 6});
    Outcome second = node->lowered(io);
    ASSERT_FALSE(second.failed) << second.message;
    EXPECT_EQ(second.tensor.shape(), expected_shapes[index++]);
    EXPECT_TRUE(second.tensor.bitwise_equal(node->reference().tensor));
  }
}

// A session's block keeps its last copy plan (CopyBlock::PlanMemo) while the data input's shape
// and the plan's integer operands repeat: one BlockIO through runs that change each of
// them in turn, and back, equals the reference at every run; a run whose operands are invalid is
// the reference's error, and the runs after it are right again.
TEST(LoweringCopy, KeptPlansFollowEveryChangeOfShapeAndOperands) {
  struct Step {
    std::string what;
    std::map<std::string, Tensor> inputs;  // replaced before the run
  };
  OneNode slice("Slice", 13);
  slice.runtime(iota_f32({4, 6})).runtime(i64({1})).runtime(i64({-1})).runtime(i64({1}));
  const std::vector<Step> slice_steps = {
      {"first", {}},
      {"same again", {}},
      {"other starts", {{"operand1", i64({2})}}},
      {"other ends", {{"operand2", i64({4})}}},
      {"other axes", {{"operand3", i64({0})}}},
      {"other data shape", {{"operand0", iota_f32({5, 7})}}},
      {"a repeated axis: the reference's error",
       {{"operand1", i64({0, 0})}, {"operand2", i64({1, 1})}, {"operand3", i64({0, 0})}}},
      {"back to the first",
       {{"operand0", iota_f32({4, 6})},
        {"operand1", i64({1})},
        {"operand2", i64({-1})},
        {"operand3", i64({1})}}},
  };
  OneNode pad("Pad", 18);
  pad.runtime(iota_f32({3, 5})).runtime(i64({0, 2, 0, 1})).omit().runtime(i64({0, 1}));
  pad.attr("mode", "reflect");
  const std::vector<Step> pad_steps = {
      {"first", {}},
      {"same again", {}},
      {"other pads", {{"operand1", i64({1, 3, 0, 2})}}},
      {"other axes", {{"operand3", i64({1, 0})}}},
      {"other data shape", {{"operand0", iota_f32({4, 4})}}},
      {"pads wider than reflect allows: the reference's error", {{"operand1", i64({0, 9, 0, 1})}}},
      {"back to the first",
       {{"operand0", iota_f32({3, 5})},
        {"operand1", i64({0, 2, 0, 1})},
        {"operand3", i64({0, 1})}}},
  };
  for (auto [node, steps] :
       {std::make_pair(&slice, &slice_steps), std::make_pair(&pad, &pad_steps)}) {
    BlockIO io;
    for (const Step& step : *steps) {
      for (const auto& [name, value] : step.inputs) node->inputs()[name] = value.clone();
      const Outcome expected = node->reference();
      const Outcome actual = node->lowered(io);
      ASSERT_EQ(actual.failed, expected.failed)
          << step.what << ": " << (actual.failed ? actual.message : expected.message);
      if (expected.failed) {
        EXPECT_EQ(actual.message, expected.message) << step.what;
        io = BlockIO();  // as a session after a failed run: its blocks' outputs start over
        continue;
      }
      EXPECT_TRUE(actual.tensor.bitwise_equal(expected.tensor))
          << step.what << "\n  copy block: " << tensor_summary(actual.tensor, 64)
          << "\n  reference:  " << tensor_summary(expected.tensor, 64);
    }
  }
}

TEST(LoweringCopy, LeavesStringsAndAttributeFormsToTheReference) {
  Graph graph;
  TensorType strings;
  strings.dtype = DType::kString;
  strings.shape = shape_from_values({3});
  Value* text = graph.add_input("text", strings);
  Value* bounds = graph.add_initializer("bounds", i64({1}));
  Node* string_slice = graph.add_node("Slice", "s", {text, bounds, bounds}, {"y"}, 13);
  Node* old_pad = graph.add_node("Pad", "p", {graph.add_initializer("x", iota_f32({2}))}, {"z"}, 2);
  for (const Node* node : {string_slice, old_pad}) {
    try {
      lower_copy({node});
      ADD_FAILURE() << node->describe() << " was lowered";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
    }
  }
}

TEST(LoweringCopy, CompiledModelRunsPadAndSliceAsCopyBlocks) {
  // x -> Pad(reflect, 2 each side of the last axis) -> Slice(run-time starts, every other column).
  auto model = std::make_unique<Model>();
  model->opsets[""] = 13;
  model->graph = std::make_unique<Graph>();
  Graph& graph = *model->graph;
  TensorType x_type;
  x_type.dtype = DType::kFloat32;
  x_type.shape = Shape{Dim::symbol("batch"), Dim(16)};
  TensorType start_type;
  start_type.dtype = DType::kInt64;
  start_type.shape = shape_from_values({1});
  Value* x = graph.add_input("x", x_type);
  Value* start = graph.add_input("start", start_type);
  Node* pad = graph.add_node("Pad", "pad", {x, graph.add_initializer("pads", i64({0, 2, 0, 2}))},
                             {"padded"}, 13);
  Attribute reflect;
  reflect.kind = Attribute::Kind::kString;
  reflect.s = "reflect";
  pad->set_attr("mode", reflect);
  Node* slice = graph.add_node(
      "Slice", "slice",
      {pad->output(0), start, graph.add_initializer("end", i64({kInt64Max})),
       graph.add_initializer("axis", i64({1})), graph.add_initializer("step", i64({2}))},
      {"y"}, 13);
  graph.add_output(slice->output(0));
  infer_graph(graph);
  std::map<std::string, Tensor> inputs{{"x", iota_f32({3, 16})}, {"start", i64({1})}};
  const Tensor expected = evaluate(graph, inputs).at(0);

  ProgramOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  auto program = compile_program(std::move(model), options);
  EXPECT_THAT(program->describe(), HasSubstr("copy Pad"));
  EXPECT_THAT(program->describe(), HasSubstr("copy Slice"));
  EXPECT_TRUE(program->run(inputs).at(0).bitwise_equal(expected));
}

}  // namespace
}  // namespace rnnc
