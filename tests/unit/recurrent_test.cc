// LSTM, GRU and RNN: shape inference with symbolic dims, every validation error with its message,
// and the reference kernels against outputs computed independently (NumPy, cross-checked with
// torch.nn where it can express the case) by tests/data/recurrent/make_recurrent_cases.py.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/onnx_import.h"
#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"
#include "tests/support/compare.h"
#include "tests/support/error_message.h"

namespace rnnc {
namespace {

// ---- building one recurrent node by hand -------------------------------------------------------

Dim sym(const char* name) { return Dim::symbol(name); }

TensorType typed(DType dtype, Shape shape) {
  TensorType type;
  type.dtype = dtype;
  type.shape = std::move(shape);
  return type;
}

// One recurrent node whose inputs are graph inputs of the given types (an empty Shape with
// kUndefined dtype marks an omitted input), named like the ONNX formal parameters.
struct RecurrentGraph {
  Graph graph;
  Node* node = nullptr;

  RecurrentGraph(const std::string& op, const std::vector<TensorType>& input_types,
                 std::map<std::string, Attribute> attributes, int opset = 14,
                 std::vector<std::string> outputs = {}) {
    static const char* kNames[] = {"X",         "W",         "R", "B", "sequence_lens",
                                   "initial_h", "initial_c", "P"};
    std::vector<Value*> inputs;
    for (size_t i = 0; i < input_types.size(); ++i) {
      inputs.push_back(input_types[i].dtype == DType::kUndefined
                           ? nullptr
                           : graph.add_input(kNames[i], input_types[i]));
    }
    if (outputs.empty()) {
      outputs = op == "LSTM" ? std::vector<std::string>{"Y", "Y_h", "Y_c"}
                             : std::vector<std::string>{"Y", "Y_h"};
    }
    std::string name = op == "LSTM" ? "lstm_1" : op == "GRU" ? "gru_1" : "rnn_1";
    node = graph.add_node(op, name, inputs, outputs, opset);
    for (auto& [name, attribute] : attributes) node->set_attr(name, attribute);
    for (Value* output : node->outputs()) {
      if (output) graph.add_output(output);
    }
  }

  std::string output_type(size_t i) const { return node->output(i)->type.to_string(); }
};

const TensorType kOmitted{};

TensorType f32(Shape shape) { return typed(DType::kFloat32, std::move(shape)); }

using testing::error_message;

std::string inference_error(RecurrentGraph& graph) {
  return error_message([&] { infer_graph(graph.graph); }, ErrorKind::kInvalidModel);
}

// ---- shape inference ---------------------------------------------------------------------------

TEST(RecurrentShapeInference, LstmKeepsSymbolicSeqAndBatch) {
  RecurrentGraph g("LSTM", {f32({sym("seq"), sym("batch"), 8}), f32({1, 64, 8}), f32({1, 64, 16})},
                   {{"hidden_size", Attribute::of_int(16)}});
  infer_graph(g.graph);
  EXPECT_EQ(g.output_type(0), "f32[seq, 1, batch, 16]");
  EXPECT_EQ(g.output_type(1), "f32[1, batch, 16]");
  EXPECT_EQ(g.output_type(2), "f32[1, batch, 16]");
}

TEST(RecurrentShapeInference, LstmBidirectionalLayout1PutsBatchFirst) {
  RecurrentGraph g("LSTM",
                   {f32({sym("batch"), sym("seq"), 8}), f32({2, 64, 8}), f32({2, 64, 16}),
                    f32({2, 128}), typed(DType::kInt32, {sym("batch")}), f32({sym("batch"), 2, 16}),
                    f32({sym("batch"), 2, 16}), f32({2, 48})},
                   {{"hidden_size", Attribute::of_int(16)},
                    {"direction", Attribute::of_string("bidirectional")},
                    {"layout", Attribute::of_int(1)}});
  infer_graph(g.graph);
  EXPECT_EQ(g.output_type(0), "f32[batch, seq, 2, 16]");
  EXPECT_EQ(g.output_type(1), "f32[batch, 2, 16]");
  EXPECT_EQ(g.output_type(2), "f32[batch, 2, 16]");
}

TEST(RecurrentShapeInference, GruHiddenSizeOmittedComesFromR) {
  RecurrentGraph g("GRU",
                   {typed(DType::kFloat64, {sym("seq"), sym("batch"), sym("features")}),
                    typed(DType::kFloat64, {1, sym("gate_rows"), sym("features")}),
                    typed(DType::kFloat64, {1, sym("gate_rows"), sym("hidden")})},
                   {});
  infer_graph(g.graph);
  EXPECT_EQ(g.output_type(0), "f64[seq, 1, batch, hidden]");
  EXPECT_EQ(g.output_type(1), "f64[1, batch, hidden]");
}

TEST(RecurrentShapeInference, RnnHiddenSizeOmittedWithKnownR) {
  RecurrentGraph g("RNN", {f32({sym("seq"), 3, 5}), f32({2, 7, 5}), f32({2, 7, 7})},
                   {{"direction", Attribute::of_string("bidirectional")}});
  infer_graph(g.graph);
  EXPECT_EQ(g.output_type(0), "f32[seq, 2, 3, 7]");
  EXPECT_EQ(g.output_type(1), "f32[2, 3, 7]");
}

TEST(RecurrentShapeInference, KnownBatchOfInitialStateRefinesSymbolicBatch) {
  RecurrentGraph g("GRU",
                   {f32({sym("seq"), sym("batch"), 8}), f32({1, 48, 8}), f32({1, 48, 16}), kOmitted,
                    kOmitted, f32({1, 4, 16})},
                   {{"hidden_size", Attribute::of_int(16)}});
  infer_graph(g.graph);
  EXPECT_EQ(g.output_type(0), "f32[seq, 1, 4, 16]");
}

TEST(RecurrentShapeInference, XOfUnknownRankStillGivesOutputRanks) {
  TensorType x;
  x.dtype = DType::kFloat32;  // no shape: rank unknown
  RecurrentGraph g("LSTM", {x, f32({1, 64, 8}), f32({1, 64, 16})}, {{"hidden_size", Attribute::of_int(16)}});
  infer_graph(g.graph);
  EXPECT_EQ(g.output_type(0), "f32[?, 1, ?, 16]");
  EXPECT_EQ(g.output_type(1), "f32[1, ?, 16]");
}

TEST(RecurrentShapeInference, OmittedOutputsAreLeftOut) {
  RecurrentGraph g("RNN", {f32({sym("seq"), sym("batch"), 8}), f32({1, 16, 8}), f32({1, 16, 16})},
                   {{"hidden_size", Attribute::of_int(16)}}, 14, {"", "Y_h"});
  infer_graph(g.graph);
  EXPECT_EQ(g.node->output(0), nullptr);
  EXPECT_EQ(g.output_type(1), "f32[1, batch, 16]");
}

TEST(RecurrentShapeInference, Float16AndOpset7) {
  RecurrentGraph g("LSTM",
                   {typed(DType::kFloat16, {5, 2, 3}), typed(DType::kFloat16, {1, 16, 3}),
                    typed(DType::kFloat16, {1, 16, 4})},
                   {{"hidden_size", Attribute::of_int(4)}}, 7);
  infer_graph(g.graph);
  EXPECT_EQ(g.output_type(0), "f16[5, 1, 2, 4]");
}

// ---- validation errors -------------------------------------------------------------------------

// A valid forward LSTM (hidden 16, input 8) with one input type or attribute replaced.
RecurrentGraph lstm_with(std::map<size_t, TensorType> replaced,
                         std::map<std::string, Attribute> attributes, int opset = 14) {
  std::vector<TensorType> types = {f32({sym("seq"), sym("batch"), 8}), f32({1, 64, 8}),
                                   f32({1, 64, 16})};
  for (auto& [index, type] : replaced) {
    if (types.size() <= index) types.resize(index + 1, kOmitted);
    types[index] = type;
  }
  if (!attributes.count("hidden_size")) attributes["hidden_size"] = Attribute::of_int(16);
  return RecurrentGraph("LSTM", types, attributes, opset);
}

TEST(RecurrentErrors, HiddenSizeMustBePositive) {
  RecurrentGraph g = lstm_with({}, {{"hidden_size", Attribute::of_int(0)}});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): attribute 'hidden_size' = 0, must be > 0");
}

TEST(RecurrentErrors, WeightShapeNamesEveryExpectedDim) {
  RecurrentGraph g =
      lstm_with({{1, f32({1, 40, 8})}, {2, f32({1, 512, 128})}}, {{"hidden_size", Attribute::of_int(128)}});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): input 'W' has shape [1, 40, 8], expected "
            "[num_directions=1, 4*hidden_size=512, input_size=8]");
}

TEST(RecurrentErrors, RecurrenceWeightShape) {
  RecurrentGraph g = lstm_with({{2, f32({1, 64, 15})}}, {});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): input 'R' has shape [1, 64, 15], expected "
            "[num_directions=1, 4*hidden_size=64, hidden_size=16]");
}

TEST(RecurrentErrors, WeightsMustMatchDirectionCount) {
  RecurrentGraph g = lstm_with({}, {{"direction", Attribute::of_string("bidirectional")}});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): input 'W' has shape [1, 64, 8], expected "
            "[num_directions=2, 4*hidden_size=64, input_size=8]");
}

TEST(RecurrentErrors, BiasShape) {
  RecurrentGraph g = lstm_with({{3, f32({1, 64})}}, {});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): input 'B' has shape [1, 64], expected "
            "[num_directions=1, 8*hidden_size=128]");
}

TEST(RecurrentErrors, PeepholeShape) {
  RecurrentGraph g = lstm_with({{7, f32({1, 64})}}, {});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): input 'P' has shape [1, 64], expected "
            "[num_directions=1, 3*hidden_size=48]");
}

TEST(RecurrentErrors, InitialStateBatchMustMatchX) {
  RecurrentGraph g = lstm_with({{0, f32({5, 2, 8})}, {5, f32({1, 3, 16})}}, {});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): input 'initial_h' has shape [1, 3, 16], expected "
            "[num_directions=1, batch_size=2, hidden_size=16]");
}

TEST(RecurrentErrors, InitialCellStateInLayout1) {
  RecurrentGraph g =
      lstm_with({{0, f32({2, 5, 8})}, {6, f32({1, 2, 16})}}, {{"layout", Attribute::of_int(1)}});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): input 'initial_c' has shape [1, 2, 16], expected "
            "[batch_size=2, num_directions=1, hidden_size=16]");
}

TEST(RecurrentErrors, SequenceLensShapeAndType) {
  RecurrentGraph shape = lstm_with({{0, f32({5, 2, 8})}, {4, typed(DType::kInt32, {3})}}, {});
  EXPECT_EQ(inference_error(shape),
            "LSTM 'lstm_1' (opset 14): input 'sequence_lens' has shape [3], expected "
            "[batch_size=2]");
  RecurrentGraph type = lstm_with({{4, typed(DType::kInt64, {sym("batch")})}}, {});
  EXPECT_EQ(inference_error(type),
            "LSTM 'lstm_1' (opset 14): input 'sequence_lens' has element type int64, expected "
            "int32");
}

TEST(RecurrentErrors, XMustBeRank3Float) {
  RecurrentGraph rank = lstm_with({{0, f32({5, 8})}}, {});
  EXPECT_EQ(inference_error(rank),
            "LSTM 'lstm_1' (opset 14): input 'X' has shape [5, 8], expected rank 3 "
            "[seq_length, batch_size, input_size]");
  RecurrentGraph dtype = lstm_with({{0, typed(DType::kInt64, {5, 2, 8})}}, {});
  EXPECT_EQ(inference_error(dtype),
            "LSTM 'lstm_1' (opset 14): input 'X' has element type int64, expected float16, "
            "float or double");
}

TEST(RecurrentErrors, WeightElementTypeMustMatchX) {
  RecurrentGraph g = lstm_with({{1, typed(DType::kFloat64, {1, 64, 8})}}, {});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): input 'W' has element type double, expected float (the "
            "element type of X)");
}

TEST(RecurrentErrors, UnknownDirection) {
  RecurrentGraph g = lstm_with({}, {{"direction", Attribute::of_string("backward")}});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): attribute 'direction' = 'backward', must be one of "
            "forward, reverse, bidirectional");
}

TEST(RecurrentErrors, LayoutValueAndOpset) {
  RecurrentGraph value = lstm_with({}, {{"layout", Attribute::of_int(2)}});
  EXPECT_EQ(inference_error(value),
            "LSTM 'lstm_1' (opset 14): attribute 'layout' = 2, must be 0 or 1");
  RecurrentGraph old = lstm_with({}, {{"layout", Attribute::of_int(1)}}, 13);
  EXPECT_EQ(inference_error(old),
            "LSTM 'lstm_1' (opset 13): attribute 'layout' exists only from opset 14");
}

TEST(RecurrentErrors, ClipAndInputForgetValues) {
  RecurrentGraph clip = lstm_with({}, {{"clip", Attribute::of_float(-1.0f)}});
  EXPECT_EQ(inference_error(clip), "LSTM 'lstm_1' (opset 14): attribute 'clip' = -1, must be > 0");
  RecurrentGraph input_forget = lstm_with({}, {{"input_forget", Attribute::of_int(2)}});
  EXPECT_EQ(inference_error(input_forget),
            "LSTM 'lstm_1' (opset 14): attribute 'input_forget' = 2, must be 0 or 1");
}

TEST(RecurrentErrors, ActivationCountPerDirection) {
  RecurrentGraph forward = lstm_with({}, {{"activations", Attribute::of_strings({"Sigmoid", "Tanh"})}});
  EXPECT_EQ(inference_error(forward),
            "LSTM 'lstm_1' (opset 14): attribute 'activations' has 2 entries, expected 3 (f, g, "
            "h for direction 'forward')");
  RecurrentGraph gru("GRU", {f32({5, 2, 8}), f32({2, 48, 8}), f32({2, 48, 16})},
                     {{"hidden_size", Attribute::of_int(16)},
                      {"direction", Attribute::of_string("bidirectional")},
                      {"activations", Attribute::of_strings({"Sigmoid", "Tanh"})}});
  EXPECT_EQ(inference_error(gru),
            "GRU 'gru_1' (opset 14): attribute 'activations' has 2 entries, expected 4 (f, g for "
            "forward, then for reverse)");
}

TEST(RecurrentErrors, UnknownActivationName) {
  RecurrentGraph g = lstm_with({}, {{"activations", Attribute::of_strings({"Sigmoid", "Swish", "Tanh"})}});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): attribute 'activations'[1] = 'Swish' is not a recurrent "
            "activation (one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
            "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)");
}

TEST(RecurrentErrors, ActivationNamesAreCaseInsensitive) {
  RecurrentGraph g = lstm_with({}, {{"activations", Attribute::of_strings({"sigmoid", "TANH", "tanh"})}});
  EXPECT_NO_THROW(infer_graph(g.graph));
}

TEST(RecurrentErrors, UnconsumedActivationAlpha) {
  // Only LeakyRelu takes an alpha, so a second value has no activation to go to.
  RecurrentGraph g = lstm_with({}, {{"activations", Attribute::of_strings({"Sigmoid", "LeakyRelu", "Tanh"})},
                                    {"activation_alpha", Attribute::of_floats({0.1f, 0.2f})}});
  EXPECT_EQ(inference_error(g),
            "LSTM 'lstm_1' (opset 14): attribute 'activation_alpha' has 2 values, but only 1 of "
            "the activations take one (values are consumed, in order, only by the activations "
            "that use them)");
}

TEST(RecurrentErrors, RnnAcceptsItsSchemaDefaultActivationsForOneDirection) {
  // RNN's schema default is ["Tanh", "Tanh"] even for one direction; exporters write it out.
  RecurrentGraph g(
      "RNN", {f32({5, 2, 8}), f32({1, 16, 8}), f32({1, 16, 16})},
      {{"hidden_size", Attribute::of_int(16)}, {"activations", Attribute::of_strings({"Tanh", "Tanh"})}});
  EXPECT_NO_THROW(infer_graph(g.graph));
  RecurrentGraph other(
      "RNN", {f32({5, 2, 8}), f32({1, 16, 8}), f32({1, 16, 16})},
      {{"hidden_size", Attribute::of_int(16)}, {"activations", Attribute::of_strings({"Relu", "Tanh"})}});
  EXPECT_EQ(inference_error(other),
            "RNN 'rnn_1' (opset 14): attribute 'activations' has 2 entries, expected 1 (f for "
            "direction 'forward')");
}

TEST(RecurrentErrors, TooManyInputs) {
  RecurrentGraph g("GRU",
                   {f32({5, 2, 8}), f32({1, 48, 8}), f32({1, 48, 16}), kOmitted, kOmitted, kOmitted,
                    f32({1, 2, 16})},
                   {{"hidden_size", Attribute::of_int(16)}});
  EXPECT_EQ(inference_error(g), "GRU 'gru_1' (opset 14): has 7 inputs, expected 3 to 6");
}

// ---- run-time errors from data -----------------------------------------------------------------

Tensor filled(std::vector<int64_t> shape, float value) {
  Tensor tensor(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = value;
  return tensor;
}

// A forward RNN over X [seq=3, batch=2, input=2] with hidden 2 and sequence_lens.
std::string rnn_run_error(const std::vector<int32_t>& lens) {
  RecurrentGraph g("RNN",
                   {f32({sym("seq"), sym("batch"), 2}), f32({1, 2, 2}), f32({1, 2, 2}), kOmitted,
                    typed(DType::kInt32, {sym("batch")})},
                   {{"hidden_size", Attribute::of_int(2)}});
  infer_graph(g.graph);
  std::map<std::string, Tensor> inputs = {
      {"X", filled({3, 2, 2}, 0.5f)},
      {"W", filled({1, 2, 2}, 0.1f)},
      {"R", filled({1, 2, 2}, 0.1f)},
      {"sequence_lens", Tensor::from_vector<int32_t>({2}, lens)},
  };
  return error_message([&] { evaluate(g.graph, inputs); }, ErrorKind::kInvalidInput);
}

TEST(RecurrentRunErrors, SequenceLengthLongerThanX) {
  EXPECT_EQ(rnn_run_error({3, 5}),
            "RNN 'rnn_1' (opset 14): input 'sequence_lens'[1] = 5, must be in [0, seq_length = "
            "3]");
}

TEST(RecurrentRunErrors, NegativeSequenceLength) {
  EXPECT_EQ(rnn_run_error({-1, 2}),
            "RNN 'rnn_1' (opset 14): input 'sequence_lens'[0] = -1, must be in [0, seq_length = "
            "3]");
}

TEST(RecurrentRunErrors, SymbolicBatchesThatDisagree) {
  // X and initial_h have different symbolic batch names, so only the run can see the mismatch.
  RecurrentGraph g("GRU",
                   {f32({sym("seq"), sym("batch"), 2}), f32({1, 6, 2}), f32({1, 6, 2}), kOmitted,
                    kOmitted, f32({1, sym("other_batch"), 2})},
                   {{"hidden_size", Attribute::of_int(2)}});
  infer_graph(g.graph);
  std::map<std::string, Tensor> inputs = {{"X", filled({3, 2, 2}, 0.5f)},
                                          {"W", filled({1, 6, 2}, 0.1f)},
                                          {"R", filled({1, 6, 2}, 0.1f)},
                                          {"initial_h", filled({1, 3, 2}, 0.0f)}};
  EXPECT_EQ(error_message([&] { evaluate(g.graph, inputs); }, ErrorKind::kInvalidInput),
            "GRU 'gru_1' (opset 14): input 'initial_h' has shape [1, 3, 2], expected [1, 2, 2]");
}

// ---- numeric cases against the independent reference -----------------------------------------

std::string case_dir(const std::string& name) {
  return std::string(RNNC_SOURCE_DIR) + "/tests/data/recurrent/" + name;
}

struct CaseRun {
  std::vector<Tensor> actual;
  std::vector<Tensor> expected;
  std::vector<std::string> names;
};

// Imports a case, runs its test_data_set_0 through the reference evaluator, and loads the
// stored outputs.
CaseRun run_case(const std::string& name) {
  std::string dir = case_dir(name);
  std::unique_ptr<Model> model = import_onnx_file(dir + "/model.onnx");
  const Graph& graph = *model->graph;
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    std::string input_name;
    Tensor tensor = read_tensor_pb(cat(dir, "/test_data_set_0/input_", i, ".pb"), &input_name);
    inputs[input_name] = tensor;
  }
  CaseRun run;
  run.actual = evaluate(graph, inputs);
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    run.expected.push_back(read_tensor_pb(cat(dir, "/test_data_set_0/output_", i, ".pb")));
    run.names.push_back(graph.outputs()[i]->name());
  }
  return run;
}

// float32 results differ from the float64 reference by float32 rounding over a few steps;
// float16 ones by one float16 rounding of the outputs (the kernel computes them in float32).
testing::Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return {1e-12, 1e-13};
    case DType::kFloat16:
      return {2e-3, 1e-3};
    default:
      return {1e-5, 1e-6};
  }
}

class RecurrentNumeric : public ::testing::TestWithParam<std::string> {};

TEST_P(RecurrentNumeric, MatchesIndependentReference) {
  CaseRun run = run_case(GetParam());
  ASSERT_EQ(run.actual.size(), run.expected.size());
  for (size_t i = 0; i < run.actual.size(); ++i) {
    testing::Comparison comparison = testing::compare_tensors(
        run.actual[i], run.expected[i], tolerance_for(run.expected[i].dtype()));
    EXPECT_TRUE(comparison.ok) << "output " << run.names[i] << ": " << comparison.message;
    RecordProperty("max_abs_diff_" + run.names[i], cat(comparison.max_abs_diff));
  }
}

// Each case is named after the behaviour it checks; make_recurrent_cases.py documents them.
INSTANTIATE_TEST_SUITE_P(
    Cases, RecurrentNumeric,
    ::testing::Values("lstm_bidirectional", "lstm_reverse", "lstm_sequence_lens",
                      "lstm_sequence_lens_layout1", "lstm_clip", "lstm_input_forget",
                      "lstm_peepholes", "lstm_activations", "lstm_float16",
                      "gru_linear_before_reset", "gru_reset_before_linear", "gru_clip",
                      "gru_activations", "gru_float64", "rnn_hidden_size_omitted",
                      "rnn_reverse_sequence_lens", "rnn_clip", "rnn_activations",
                      "rnn_activation_defaults"),
    [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Layout 1 is layout 0 with batch moved first: the kernel's own outputs for the same data in the
// two layouts must be exact transposes (the arithmetic is identical, only indexing differs).
TEST(RecurrentLayout, Layout1IsExactlyTransposedLayout0) {
  CaseRun layout0 = run_case("lstm_sequence_lens");
  CaseRun layout1 = run_case("lstm_sequence_lens_layout1");
  ASSERT_EQ(layout0.actual.size(), 3u);
  // Y: [seq, dirs, batch, hidden] -> [batch, seq, dirs, hidden].
  const Tensor& y0 = layout0.actual[0];
  const Tensor& y1 = layout1.actual[0];
  const int64_t seq = y0.dim(0), dirs = y0.dim(1), batch = y0.dim(2), hidden = y0.dim(3);
  ASSERT_EQ(y1.shape(), (std::vector<int64_t>{batch, seq, dirs, hidden}));
  for (int64_t t = 0; t < seq; ++t) {
    for (int64_t d = 0; d < dirs; ++d) {
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t j = 0; j < hidden; ++j) {
          EXPECT_EQ(y0.data<float>()[((t * dirs + d) * batch + b) * hidden + j],
                    y1.data<float>()[((b * seq + t) * dirs + d) * hidden + j])
              << "Y at t=" << t << " d=" << d << " b=" << b << " j=" << j;
        }
      }
    }
  }
  // Y_h, Y_c: [dirs, batch, hidden] -> [batch, dirs, hidden].
  for (size_t k = 1; k < 3; ++k) {
    const Tensor& s0 = layout0.actual[k];
    const Tensor& s1 = layout1.actual[k];
    ASSERT_EQ(s1.shape(), (std::vector<int64_t>{batch, dirs, hidden}));
    for (int64_t d = 0; d < dirs; ++d) {
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t j = 0; j < hidden; ++j) {
          EXPECT_EQ(s0.data<float>()[(d * batch + b) * hidden + j],
                    s1.data<float>()[(b * dirs + d) * hidden + j])
              << layout0.names[k] << " at d=" << d << " b=" << b << " j=" << j;
        }
      }
    }
  }
}

// sequence_lens [5, 0, 2, 3]: entry 1 has no steps, so Y is zero for it and Y_h / Y_c are its
// initial state; entry 2's Y is zero from step 2 on.
TEST(RecurrentSequenceLens, ZeroLengthGivesZeroYAndInitialState) {
  std::string dir = case_dir("lstm_sequence_lens");
  CaseRun run = run_case("lstm_sequence_lens");
  Tensor initial_h = read_tensor_pb(dir + "/test_data_set_0/input_5.pb");
  Tensor initial_c = read_tensor_pb(dir + "/test_data_set_0/input_6.pb");
  const Tensor& y = run.actual[0];
  const int64_t seq = y.dim(0), dirs = y.dim(1), batch = y.dim(2), hidden = y.dim(3);
  for (int64_t t = 0; t < seq; ++t) {
    for (int64_t d = 0; d < dirs; ++d) {
      for (int64_t j = 0; j < hidden; ++j) {
        EXPECT_EQ(y.data<float>()[((t * dirs + d) * batch + 1) * hidden + j], 0.0f);
        if (t >= 2) {
          EXPECT_EQ(y.data<float>()[((t * dirs + d) * batch + 2) * hidden + j], 0.0f);
        }
      }
    }
  }
  for (int64_t d = 0; d < dirs; ++d) {
    for (int64_t j = 0; j < hidden; ++j) {
      int64_t at = (d * batch + 1) * hidden + j;
      EXPECT_EQ(run.actual[1].data<float>()[at], initial_h.data<float>()[at]);
      EXPECT_EQ(run.actual[2].data<float>()[at], initial_c.data<float>()[at]);
    }
  }
}

}  // namespace
}  // namespace rnnc
