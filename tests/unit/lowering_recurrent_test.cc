// lower_recurrent: LSTM, GRU and RNN nodes lowered to Halide against the reference kernels on the
// same inputs, one behaviour per test.
//
// Tolerance: |lowered - reference| <= 1e-5 + 1e-4 * |reference|. The reference sums each gate's
// pre-activation in double and rounds once; the lowered code sums K + H products in float32 in
// a blocked order (error ~ sqrt(K + H) * 2^-24 * sum|terms|, about 1e-6 for K = H = 256 with
// these weights) and evaluates sigmoid/tanh by a rational function within 3e-7 absolute
// (lowering/activation_math.h). Gates and tanh are
// contractions, so the per-step error does not grow over the ~100-step sequences here; the
// measured worst case is near 1e-6 (printed by LongSequenceStaysWithinTolerance).
#include <Halide.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/onnx_import.h"
#include "ir/quantization.h"
#include "ir/reference/evaluator.h"
#include "lowering/halide_cache.h"
#include "lowering/lower_recurrent.h"
#include "lowering/quantized_operands.h"
#include "lowering/recurrent_pipelines.h"
#include "tests/support/compare.h"
#include "tests/support/disassembly.h"
#include "tests/support/error_message.h"
#include "tests/support/random.h"
#include "tests/support/scoped_env.h"

namespace rnnc {
namespace {

using testing::random_tensor;

constexpr testing::Tolerance kTolerance{1e-4, 1e-5};

// One cache per target for the whole binary, in the test temp dir (warm after the first run).
// Its kernels keep Halide's buffer checks (HalideCache::set_kernel_asserts): every buffer
// layout the runtime passes a step here is checked against what the kernel was compiled for.
// The model-level tests run the shipped kernels, without them.
HalideCache& cache_for(const std::string& target) {
  static std::map<std::string, std::unique_ptr<HalideCache>> caches;
  auto& cache = caches[target];
  if (!cache) {
    cache = std::make_unique<HalideCache>(::testing::TempDir() + "rnnc_lowering_recurrent_cache",
                                          target);
    cache->set_kernel_asserts(true);
  }
  return *cache;
}

// ---- building one node -------------------------------------------------------------------------

// A recurrent node and the data it runs on; defaults: a forward LSTM, seq 5, batch 1, input 8,
// hidden 16, with B.
struct Case {
  std::string op = "LSTM";
  int64_t seq = 5, batch = 1, input = 8, hidden = 16;
  std::string direction = "forward";
  int64_t layout = 0;
  std::vector<int32_t> sequence_lens;  // empty: input omitted
  bool bias = true, initial_h = false, initial_c = false, peepholes = false;
  std::map<std::string, Attribute> attributes;
  std::vector<bool> outputs;  // which of Y, Y_h (, Y_c) the node has; empty: all
  DType dtype = DType::kFloat32;
  bool runtime_weights = false;  // W, R as graph inputs instead of initializers
  uint32_t seed = 1;
  // Integer products: W and R quantized per row (symmetric with weight_bits, or uint8 with zero
  // points), as fold_quantized_weights leaves them (dequantized floats + QuantParams), and the
  // node annotated with this activation quantization.
  std::optional<ActivationQuant> quantize;
  bool asymmetric_weights = false;
  bool signed_storage = false;  // asymmetric weights as int8 with zero points in [-128, 127]
  int weight_bits = 8;  // symmetric weights: 2..16
  std::string target = "host";  // the kernel target the lowered block compiles for
};

int64_t gate_count(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

// Quantizes a [dirs, rows, cols] weight per row (one scale per row index, shared by the
// directions, as DequantizeLinear's axis 1 gives) and returns the dequantized values' parameters;
// `weight` is overwritten by its dequantized values.
// With `signed_storage`, asymmetric weights are int8 (q and zero point 128 below uint8's).
std::shared_ptr<QuantParams> quantize_rows_in_place(Tensor& weight, bool asymmetric, int bits,
                                                    bool signed_storage = false) {
  const int64_t dirs = weight.dim(0), rows = weight.dim(1), cols = weight.dim(2);
  const float half = static_cast<float>((1 << (bits - 1)) - 1);
  const float shift = asymmetric && signed_storage ? 128.0f : 0.0f;
  auto params = std::make_shared<QuantParams>();
  params->bits = asymmetric ? 8 : bits;
  params->granularity = QuantParams::Granularity::kAxis;
  params->axis = 1;
  params->is_signed = !asymmetric || signed_storage;
  params->symmetric = !asymmetric;
  float* w = weight.data<float>();
  for (int64_t row = 0; row < rows; ++row) {
    float lo = 0, hi = 0;
    for (int64_t d = 0; d < dirs; ++d) {
      for (int64_t k = 0; k < cols; ++k) {
        lo = std::min(lo, w[(d * rows + row) * cols + k]);
        hi = std::max(hi, w[(d * rows + row) * cols + k]);
      }
    }
    float scale = asymmetric ? (hi - lo) / 255 : std::max(-lo, hi) / half;
    if (!(scale > 0)) scale = 1;
    const int32_t zero_point =
        asymmetric ? static_cast<int32_t>(std::nearbyint(-lo / scale) - shift) : 0;
    params->scales.push_back(scale);
    if (asymmetric) params->zero_points.push_back(zero_point);
    for (int64_t d = 0; d < dirs; ++d) {
      for (int64_t k = 0; k < cols; ++k) {
        float& value = w[(d * rows + row) * cols + k];
        const float q = std::clamp(std::nearbyint(value / scale) + zero_point,
                                   asymmetric ? -shift : -half, asymmetric ? 255.0f - shift : half);
        value = (q - static_cast<float>(zero_point)) * scale;
      }
    }
  }
  return params;
}

struct Built {
  Graph graph;
  Node* node = nullptr;
  std::vector<Tensor> inputs;  // per node input; undefined for omitted ones
};

std::unique_ptr<Built> build(const Case& c) {
  auto built = std::make_unique<Built>();
  std::mt19937 random(c.seed);
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1, g = gate_count(c.op);
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(c.input));
  const float r_scale = 1.0f / std::sqrt(static_cast<float>(c.hidden));
  const std::vector<int64_t> state = c.layout == 0 ? std::vector<int64_t>{dirs, c.batch, c.hidden}
                                                   : std::vector<int64_t>{c.batch, dirs, c.hidden};
  std::vector<Tensor>& in = built->inputs;
  in.resize(c.op == "LSTM" ? 8 : 6);
  in[0] = random_tensor(c.layout == 0 ? std::vector<int64_t>{c.seq, c.batch, c.input}
                                      : std::vector<int64_t>{c.batch, c.seq, c.input},
                        random, -1.0f, 1.0f);
  in[1] = random_tensor({dirs, g * c.hidden, c.input}, random, -w_scale, w_scale);
  in[2] = random_tensor({dirs, g * c.hidden, c.hidden}, random, -r_scale, r_scale);
  if (c.bias) in[3] = random_tensor({dirs, 2 * g * c.hidden}, random, -0.5f, 0.5f);
  if (!c.sequence_lens.empty()) {
    in[4] = Tensor::from_vector<int32_t>({c.batch}, c.sequence_lens);
  }
  if (c.initial_h) in[5] = random_tensor(state, random, -1.0f, 1.0f);
  if (c.op == "LSTM") {
    if (c.initial_c) in[6] = random_tensor(state, random, -1.0f, 1.0f);
    if (c.peepholes) in[7] = random_tensor({dirs, 3 * c.hidden}, random, -0.5f, 0.5f);
  }
  std::shared_ptr<QuantParams> weight_quant[3];
  if (c.quantize) {
    for (int i : {1, 2}) {
      weight_quant[i] =
          quantize_rows_in_place(in[i], c.asymmetric_weights, c.weight_bits, c.signed_storage);
    }
  }
  if (c.dtype != DType::kFloat32) {
    for (Tensor& tensor : in) {
      if (tensor.defined() && tensor.dtype() == DType::kFloat32) tensor = tensor.cast(c.dtype);
    }
  }

  static const char* kNames[] = {"X",         "W",         "R", "B", "sequence_lens",
                                 "initial_h", "initial_c", "P"};
  std::vector<Value*> values;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].defined()) {
      values.push_back(nullptr);
      continue;
    }
    const bool weight = i == 1 || i == 2 || i == 3 || i == 7;
    if (weight && !(c.runtime_weights && i <= 2)) {
      values.push_back(built->graph.add_initializer(kNames[i], in[i]));
      if (i <= 2 && weight_quant[i]) values.back()->type.quant = weight_quant[i];
    } else {
      TensorType type;
      type.dtype = in[i].dtype();
      Shape shape;
      for (int64_t dim : in[i].shape()) shape.push_back(Dim(dim));
      type.shape = shape;
      values.push_back(built->graph.add_input(kNames[i], type));
    }
  }
  while (!values.empty() && !values.back()) values.pop_back();
  std::vector<std::string> outputs = c.op == "LSTM" ? std::vector<std::string>{"Y", "Y_h", "Y_c"}
                                                    : std::vector<std::string>{"Y", "Y_h"};
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (!c.outputs[i]) outputs[i] = "";
  }
  built->node = built->graph.add_node(c.op, "node", values, outputs, 14);
  std::map<std::string, Attribute> attributes = c.attributes;
  attributes.emplace("hidden_size", Attribute::of_int(c.hidden));
  if (c.direction != "forward") attributes.emplace("direction", Attribute::of_string(c.direction));
  if (c.layout != 0) attributes.emplace("layout", Attribute::of_int(c.layout));
  for (auto& [name, attribute] : attributes) built->node->set_attr(name, attribute);
  if (c.quantize) set_activation_quant(*built->node, *c.quantize);
  return built;
}

std::vector<const Tensor*> input_pointers(const Built& built) {
  std::vector<const Tensor*> pointers;
  for (size_t i = 0; i < built.node->num_inputs(); ++i) {
    pointers.push_back(built.node->input(i) ? &built.inputs[i] : nullptr);
  }
  return pointers;
}

std::vector<Tensor> run_reference(const Built& built) {
  return evaluate_node(*built.node, input_pointers(built), nullptr);
}

std::vector<Tensor> run_lowered(const Built& built, const std::string& target = "host") {
  std::unique_ptr<ExecutionBlock> block = lower_recurrent(*built.node, cache_for(target));
  BlockIO io;
  io.inputs = input_pointers(built);
  block->run(io);
  return io.outputs;
}

// Largest |lowered - reference| over the node's outputs, after checking each within kTolerance.
// (The reference kernel also fills the slots of omitted outputs; the lowered block leaves them
// undefined.)
double expect_outputs_match(const Node& node, const std::vector<Tensor>& lowered,
                            const std::vector<Tensor>& reference,
                            const testing::Tolerance& tolerance = kTolerance) {
  EXPECT_EQ(lowered.size(), node.num_outputs());
  double worst = 0;
  for (size_t i = 0; i < std::min(lowered.size(), reference.size()); ++i) {
    if (!node.output(i)) {
      EXPECT_FALSE(lowered[i].defined()) << "omitted output " << i;
      continue;
    }
    testing::Comparison comparison = testing::compare_tensors(lowered[i], reference[i], tolerance);
    EXPECT_TRUE(comparison.ok) << "output " << i << ": " << comparison.message;
    worst = std::max(worst, comparison.max_abs_diff);
  }
  return worst;
}

double expect_matches_reference(const Case& c) {
  std::unique_ptr<Built> built = build(c);
  return expect_outputs_match(*built->node, run_lowered(*built, c.target), run_reference(*built));
}

// The host, and where it runs AVX-512 with VNNI both schedule classes of 512-bit vectors, whose
// batched steps shift their last tile of 4 entries inward on different rules
// (RecurrentSchedule::shifted_tiles_from): Zen 4's (operations in 256-bit halves) and the
// full-width one's.
std::vector<std::string> step_tile_targets() {
  std::vector<std::string> targets = {"host"};
  if (resolve_kernel_target("host").halide.has_feature(Halide::Target::AVX512_SapphireRapids)) {
    targets.push_back("zen4");
    targets.push_back("x86-64-v4-vnni");
  }
  return targets;
}

Case gru(Case c = {}) {
  c.op = "GRU";
  return c;
}
Case rnn(Case c = {}) {
  c.op = "RNN";
  return c;
}

using testing::error_message;

// ---- LSTM --------------------------------------------------------------------------------------

TEST(LowerRecurrent, LstmForward) { expect_matches_reference({}); }

TEST(LowerRecurrent, LstmReverse) {
  Case c;
  c.direction = "reverse";
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmBidirectional) {
  Case c;
  c.direction = "bidirectional";
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmBatch5) {
  Case c;
  c.batch = 5;
  expect_matches_reference(c);
}

// Batches that are not a multiple of the step's tile of 4 entries: with the full-width AVX-512
// class, 22 entries step tiles of 4, the last shifted inward onto entries already computed
// (RecurrentSchedule::shifted_tiles_from: 18 for a float R in L2); 10 entries, and 22 with
// Zen 4's class, step tiles of 2. Sequence lengths differ per entry, so an entry computed twice
// with another entry's time or state would show. Without the AVX-512 row's tiles of 4 (AVX2)
// both run tiles of one entry.
TEST(LowerRecurrent, BatchesNotAMultipleOfTheStepTile) {
  for (const std::string& target : step_tile_targets()) {
    for (int64_t batch : {22, 10}) {
      for (const char* op : {"LSTM", "GRU", "RNN"}) {
        Case c;
        c.op = op;
        c.seq = 6;
        c.batch = batch;
        c.initial_h = true;
        c.target = target;
        for (int64_t b = 0; b < batch; ++b) c.sequence_lens.push_back(static_cast<int32_t>(b % 7));
        SCOPED_TRACE(cat(target, " ", op, " batch ", batch));
        expect_matches_reference(c);
        if (std::string(op) == "GRU") {
          c.attributes["linear_before_reset"] = Attribute::of_int(1);
          expect_matches_reference(c);
        }
      }
    }
  }
}

TEST(LowerRecurrent, LstmSequenceLensWithZeroAndFullLength) {
  Case c;
  c.seq = 7;
  c.batch = 5;
  c.sequence_lens = {3, 0, 7, 1, 7};
  c.initial_h = c.initial_c = true;  // length 0 must return them unchanged
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmReverseSequenceLensStartAtEachEntrysLastStep) {
  Case c;
  c.seq = 7;
  c.batch = 5;
  c.direction = "reverse";
  c.sequence_lens = {3, 0, 7, 1, 6};
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmBidirectionalSequenceLens) {
  Case c;
  c.seq = 6;
  c.batch = 5;
  c.direction = "bidirectional";
  c.sequence_lens = {6, 2, 0, 5, 1};
  c.initial_h = c.initial_c = true;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmHidden1) {
  Case c;
  c.hidden = 1;
  c.input = 3;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmHidden7NotAMultipleOfTheVectorWidth) {
  Case c;
  c.hidden = 7;
  c.input = 5;
  c.batch = 5;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmHidden128) {
  Case c;
  c.hidden = 128;
  c.input = 128;
  c.seq = 17;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmHidden256) {
  Case c;
  c.hidden = 256;
  c.input = 64;
  c.seq = 9;
  c.batch = 5;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmHidden100PadsTheHiddenTile) {
  Case c;
  c.hidden = 100;
  c.input = 37;
  c.seq = 6;
  c.batch = 3;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmClip) {
  Case c;
  c.attributes["clip"] = Attribute::of_float(0.4f);
  c.initial_h = c.initial_c = true;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmInputForget) {
  Case c;
  c.attributes["input_forget"] = Attribute::of_int(1);
  c.initial_c = true;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmPeepholes) {
  Case c;
  c.peepholes = true;
  c.initial_c = true;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmPeepholesWithInputForgetAndClip) {
  Case c;
  c.peepholes = true;
  c.initial_c = true;
  c.attributes["input_forget"] = Attribute::of_int(1);
  c.attributes["clip"] = Attribute::of_float(1.5f);
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmCustomActivationsWithAlphaBeta) {
  Case c;
  c.attributes["activations"] = Attribute::of_strings({"HardSigmoid", "LeakyRelu", "ScaledTanh"});
  c.attributes["activation_alpha"] = Attribute::of_floats({0.3f, 0.05f, 1.5f});
  c.attributes["activation_beta"] = Attribute::of_floats({0.4f, 0.8f});
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmBidirectionalDirectionsHaveTheirOwnActivations) {
  Case c;
  c.direction = "bidirectional";
  c.attributes["activations"] =
      Attribute::of_strings({"sigmoid", "tanh", "tanh", "HardSigmoid", "Softsign", "Elu"});
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmInitialStates) {
  Case c;
  c.initial_h = c.initial_c = true;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmWithoutBias) {
  Case c;
  c.bias = false;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmLayout1) {
  Case c;
  c.layout = 1;
  c.batch = 3;
  c.direction = "bidirectional";
  c.sequence_lens = {5, 2, 0};
  c.initial_h = c.initial_c = true;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, LstmOmittedOutputsStayOmitted) {
  Case c;
  c.outputs = {false, true, false};
  std::unique_ptr<Built> built = build(c);
  std::vector<Tensor> lowered = run_lowered(*built);
  ASSERT_EQ(lowered.size(), 3u);
  EXPECT_FALSE(lowered[0].defined());
  EXPECT_TRUE(lowered[1].defined());
  EXPECT_FALSE(lowered[2].defined());
  expect_outputs_match(*built->node, lowered, run_reference(*built));
}

TEST(LowerRecurrent, LstmBatch0AndSeq0) {
  Case c;
  c.batch = 0;
  expect_matches_reference(c);
  c.batch = 2;
  c.seq = 0;
  c.initial_h = c.initial_c = true;
  expect_matches_reference(c);
}

// ---- batch slices ------------------------------------------------------------------------------

// Runs the block as the batch slices [bounds[i], bounds[i + 1]), last slice first (no slice reads
// another's rows), and checks every output equals one whole run's bit for bit.
void expect_slices_equal_the_whole_run(const Case& c, const std::vector<int64_t>& bounds) {
  std::unique_ptr<Built> built = build(c);
  const std::vector<Tensor> whole = run_lowered(*built);
  std::unique_ptr<ExecutionBlock> block = lower_recurrent(*built->node, cache_for("host"));
  ASSERT_GT(block->batch_slice_unit(), 0);
  BlockIO io;
  io.inputs = input_pointers(*built);
  EXPECT_EQ(block->batch_size(io), c.batch);
  const int slices = static_cast<int>(bounds.size()) - 1;
  ASSERT_TRUE(block->begin_batch_slices(io, bounds.data(), slices));
  for (int i = slices - 1; i >= 0; --i) block->run_batch_slice(io, i);
  ASSERT_EQ(io.outputs.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    ASSERT_EQ(io.outputs[i].defined(), whole[i].defined()) << "output " << i;
    if (!whole[i].defined()) continue;
    ASSERT_EQ(io.outputs[i].shape(), whole[i].shape()) << "output " << i;
    EXPECT_EQ(std::memcmp(io.outputs[i].raw_data(), whole[i].raw_data(), whole[i].nbytes()), 0)
        << "output " << i;
  }
}

TEST(LowerRecurrentBatchSlices, LstmSlicesEqualTheWholeRunBitwise) {
  Case c;
  c.seq = 7;
  c.batch = 11;
  expect_slices_equal_the_whole_run(c, {0, 4, 11});
  c.initial_h = c.initial_c = true;
  expect_slices_equal_the_whole_run(c, {0, 2, 5, 9, 11});
}

// Layout 1 (batch outermost in X): a slice's rows of X are contiguous.
TEST(LowerRecurrentBatchSlices, Layout1SlicesEqualTheWholeRunBitwise) {
  Case c;
  c.layout = 1;
  c.seq = 6;
  c.batch = 9;
  c.initial_h = c.initial_c = true;
  expect_slices_equal_the_whole_run(c, {0, 4, 9});
}

TEST(LowerRecurrentBatchSlices, BidirectionalSequenceLensSlicesEqualTheWholeRunBitwise) {
  Case c;
  c.seq = 7;
  c.batch = 6;
  c.direction = "bidirectional";
  c.sequence_lens = {7, 0, 3, 7, 5, 1};
  c.initial_h = true;
  expect_slices_equal_the_whole_run(c, {0, 2, 6});
  expect_slices_equal_the_whole_run(gru(c), {0, 4, 6});
}

TEST(LowerRecurrentBatchSlices, GruAndRnnSlicesEqualTheWholeRunBitwise) {
  Case c;
  c.seq = 5;
  c.batch = 8;
  c.hidden = 40;
  c.attributes["linear_before_reset"] = Attribute::of_int(1);
  expect_slices_equal_the_whole_run(gru(c), {0, 4, 8});
  c.attributes.clear();
  expect_slices_equal_the_whole_run(gru(c), {0, 3, 8});
  expect_slices_equal_the_whole_run(rnn(c), {0, 2, 4, 6, 8});
}

TEST(LowerRecurrentBatchSlices, BoundsThatDoNotEndAtTheBatchRunNothing) {
  Case c;
  c.batch = 6;
  std::unique_ptr<Built> built = build(c);
  std::unique_ptr<ExecutionBlock> block = lower_recurrent(*built->node, cache_for("host"));
  BlockIO io;
  io.inputs = input_pointers(*built);
  const std::vector<int64_t> bounds = {0, 4, 8};
  EXPECT_FALSE(block->begin_batch_slices(io, bounds.data(), 2));
}

TEST(LowerRecurrent, LongSequenceStaysWithinTolerance) {
  Case c;
  c.hidden = 256;
  c.input = 256;
  c.seq = 100;
  c.batch = 2;
  c.initial_h = c.initial_c = true;
  double worst = expect_matches_reference(c);
  std::printf("LSTM hidden 256, 100 steps: max |lowered - reference| = %.3g\n", worst);
}

// ---- slot layouts (graph_opt's eliminate_layout_ops views) ------------------------------------

// Reads logical element (i0, i1, i2, i3) of a row-major tensor whose dims are the logical ones
// permuted: perm[k] is the logical axis of dim k.
Tensor permuted(const Tensor& tensor, const std::vector<int64_t>& logical_shape,
                const std::vector<int>& perm) {
  std::vector<int64_t> shape;
  for (int axis : perm) shape.push_back(logical_shape[static_cast<size_t>(axis)]);
  Tensor out(DType::kFloat32, shape);
  std::vector<int64_t> index(logical_shape.size(), 0);
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    int64_t rest = i;  // i as a logical row-major index
    for (size_t k = logical_shape.size(); k-- > 0;) {
      index[k] = rest % logical_shape[k];
      rest /= logical_shape[k];
    }
    int64_t o = 0;
    for (size_t k = 0; k < perm.size(); ++k) o = o * shape[k] + index[static_cast<size_t>(perm[k])];
    out.data<float>()[o] = tensor.data<float>()[i];
  }
  return out;
}

TEST(LowerRecurrent, AnnotatedLayoutsReadAndWriteTheViews) {
  Case c;
  c.direction = "bidirectional";
  c.batch = 3;
  c.seq = 4;
  c.sequence_lens = {4, 1, 0};
  c.initial_h = c.initial_c = true;
  std::unique_ptr<Built> built = build(c);
  std::vector<Tensor> reference = run_reference(*built);
  const int64_t dirs = 2, seq = c.seq, batch = c.batch, hidden = c.hidden, input = c.input;
  // X as PyTorch's batch_first input, initial_h batch-major, Y as [seq, batch, 2 * hidden].
  RecurrentLayouts layouts = onnx_recurrent_layouts(*built->node);
  layouts.x = "batch_seq_input";
  layouts.initial_h = "batch_dir_hidden";
  layouts.y = "seq_batch_dirhidden";
  layouts.y_h = "batch_dir_hidden";
  std::unique_ptr<ExecutionBlock> block = lower_recurrent(*built->node, cache_for("host"), layouts);
  Tensor x = permuted(built->inputs[0], {seq, batch, input}, {1, 0, 2});
  Tensor initial_h = permuted(built->inputs[5], {dirs, batch, hidden}, {1, 0, 2});
  BlockIO io;
  io.inputs = input_pointers(*built);
  io.inputs[0] = &x;
  io.inputs[5] = &initial_h;
  block->run(io);
  std::vector<Tensor> expected = {permuted(reference[0], {seq, dirs, batch, hidden}, {0, 2, 1, 3})
                                      .reshaped({seq, batch, dirs * hidden}),
                                  permuted(reference[1], {dirs, batch, hidden}, {1, 0, 2}),
                                  reference[2]};
  expect_outputs_match(*built->node, io.outputs, expected);
}

TEST(LowerRecurrent, AnnotatedLayoutsSqueezeTheDirectionOfOneDirection) {
  Case c = gru();
  c.batch = 2;
  std::unique_ptr<Built> built = build(c);
  std::vector<Tensor> reference = run_reference(*built);
  RecurrentLayouts layouts = onnx_recurrent_layouts(*built->node);
  layouts.y = "batch_seq_hidden";
  layouts.y_h = "batch_hidden";
  std::unique_ptr<ExecutionBlock> block = lower_recurrent(*built->node, cache_for("host"), layouts);
  BlockIO io;
  io.inputs = input_pointers(*built);
  block->run(io);
  std::vector<Tensor> expected = {permuted(reference[0].reshaped({c.seq, c.batch, c.hidden}),
                                           {c.seq, c.batch, c.hidden}, {1, 0, 2}),
                                  reference[1].reshaped({c.batch, c.hidden})};
  expect_outputs_match(*built->node, io.outputs, expected);
}

TEST(LowerRecurrent, AnnotatedLayoutsComeFromTheNodesAnnotations) {
  Case c;
  c.layout = 1;
  std::unique_ptr<Built> built = build(c);
  built->node->set_attr("rnnc.y_layout", Attribute::of_string("batch_seq_dirhidden"));
  built->node->set_attr("rnnc.x_layout", Attribute::of_string("seq_batch_input"));
  RecurrentLayouts layouts = annotated_recurrent_layouts(*built->node);
  EXPECT_EQ(layouts.x, "seq_batch_input");
  EXPECT_EQ(layouts.y, "batch_seq_dirhidden");
  EXPECT_EQ(layouts.y_h, "batch_dir_hidden");  // layout=1's own, not annotated
  EXPECT_EQ(onnx_recurrent_layouts(*built->node).y, "batch_seq_dir_hidden");
}

TEST(LowerRecurrent, UnknownLayoutIsUnsupported) {
  std::unique_ptr<Built> built = build({});
  RecurrentLayouts layouts = onnx_recurrent_layouts(*built->node);
  layouts.y = "seq_hidden_batch";
  EXPECT_EQ(error_message([&] { lower_recurrent(*built->node, cache_for("host"), layouts); },
                          ErrorKind::kUnsupported),
            "LSTM 'node' (opset 14): Y layout 'seq_hidden_batch' is not one the Halide lowering "
            "reads or writes");
}

// ---- GRU ---------------------------------------------------------------------------------------

TEST(LowerRecurrent, GruResetBeforeLinear) { expect_matches_reference(gru()); }

TEST(LowerRecurrent, GruLinearBeforeReset) {
  Case c = gru();
  c.attributes["linear_before_reset"] = Attribute::of_int(1);
  expect_matches_reference(c);
}

TEST(LowerRecurrent, GruHidden7Batch5LinearBeforeReset) {
  Case c = gru();
  c.hidden = 7;
  c.batch = 5;
  c.attributes["linear_before_reset"] = Attribute::of_int(1);
  expect_matches_reference(c);
}

TEST(LowerRecurrent, GruHidden256ResetBeforeLinear) {
  Case c = gru();
  c.hidden = 256;
  c.input = 40;
  c.seq = 8;
  c.batch = 2;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, GruBidirectionalSequenceLens) {
  Case c = gru();
  c.direction = "bidirectional";
  c.batch = 5;
  c.seq = 6;
  c.sequence_lens = {6, 0, 3, 1, 6};
  c.initial_h = true;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, GruReverseLinearBeforeResetWithClip) {
  Case c = gru();
  c.direction = "reverse";
  c.attributes["linear_before_reset"] = Attribute::of_int(1);
  c.attributes["clip"] = Attribute::of_float(0.7f);
  c.initial_h = true;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, GruCustomActivations) {
  Case c = gru();
  c.attributes["activations"] = Attribute::of_strings({"HardSigmoid", "Affine"});
  c.attributes["activation_alpha"] = Attribute::of_floats({0.25f, 0.9f});
  c.attributes["activation_beta"] = Attribute::of_floats({0.45f, 0.1f});
  expect_matches_reference(c);
}

TEST(LowerRecurrent, GruWithoutBias) {
  Case c = gru();
  c.bias = false;
  c.attributes["linear_before_reset"] = Attribute::of_int(1);
  expect_matches_reference(c);
}

// ---- RNN ---------------------------------------------------------------------------------------

TEST(LowerRecurrent, RnnForward) { expect_matches_reference(rnn()); }

TEST(LowerRecurrent, RnnReverseSequenceLens) {
  Case c = rnn();
  c.direction = "reverse";
  c.batch = 5;
  c.seq = 4;
  c.sequence_lens = {4, 0, 2, 1, 3};
  c.initial_h = true;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, RnnBidirectionalHidden128) {
  Case c = rnn();
  c.direction = "bidirectional";
  c.hidden = 128;
  c.input = 24;
  c.seq = 10;
  expect_matches_reference(c);
}

TEST(LowerRecurrent, RnnSchemaDefaultActivationsTanhTanh) {
  Case c = rnn();
  c.attributes["activations"] = Attribute::of_strings({"Tanh", "Tanh"});
  expect_matches_reference(c);
}

// Every recurrent activation as the RNN's f, with alpha/beta where it takes them.
class LowerRecurrentActivation : public ::testing::TestWithParam<std::string> {};

TEST_P(LowerRecurrentActivation, RnnMatchesReference) {
  Case c = rnn();
  c.attributes["activations"] = Attribute::of_strings({GetParam()});
  const std::map<std::string, std::pair<std::vector<float>, std::vector<float>>> parameters = {
      {"Affine", {{0.7f}, {0.2f}}},      {"LeakyRelu", {{0.1f}, {}}},
      {"ThresholdedRelu", {{0.3f}, {}}}, {"ScaledTanh", {{1.3f}, {0.6f}}},
      {"HardSigmoid", {{0.3f}, {0.4f}}}, {"Elu", {{0.8f}, {}}},
  };
  if (auto it = parameters.find(GetParam()); it != parameters.end()) {
    if (!it->second.first.empty()) c.attributes["activation_alpha"] = Attribute::of_floats(it->second.first);
    if (!it->second.second.empty())
      c.attributes["activation_beta"] = Attribute::of_floats(it->second.second);
  }
  c.initial_h = true;
  expect_matches_reference(c);
}

INSTANTIATE_TEST_SUITE_P(EveryActivation, LowerRecurrentActivation,
                         ::testing::Values("Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu",
                                           "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",
                                           "Softsign", "Softplus"));

// The activations at large |x| (saturation, exp clamping) and near 0 (tanh's series branch).
TEST(LowerRecurrent, ActivationsAtExtremeInputs) {
  for (const char* activation : {"Sigmoid", "Tanh", "Softplus", "Elu"}) {
    Case c = rnn();
    c.attributes["activations"] = Attribute::of_strings({activation});
    std::unique_ptr<Built> built = build(c);
    float* x = built->inputs[0].data<float>();
    const float values[] = {-200.0f, -90.0f, -30.0f, -1e-3f, 0.0f,
                            1e-5f,   0.05f,  30.0f,  90.0f,  200.0f};
    for (int64_t i = 0; i < built->inputs[0].numel(); ++i)
      x[i] = values[i % 10] * (i % 3 ? 1 : 0.01f);
    SCOPED_TRACE(activation);
    expect_outputs_match(*built->node, run_lowered(*built), run_reference(*built));
  }
}

// ---- integer products (cell.quant) -------------------------------------------------------------

// The integer kernels against the reference's fake quantization (the same quantized operands and
// dequantized weights; ir/quantization.h). The integer dot products are exact and the reference
// sums the same terms in double, so they differ by float rounding (~1e-7) and, in steps that
// quantize h to 8 bits, by the degree-3 sigmoid and tanh (< 2.5e-6; lowering/activation_math.h):
// the float tolerance. Such a difference could land an h value on the other side of a
// quantization boundary (one code apart, ~s_h * |w| in a product); on these fixed inputs none
// does, and a failure here is either that or a bug worth reading (a wrong zero-point or column-sum
// term is ~1e-5, which a looser bound would hide). The measured worst case is printed.
constexpr testing::Tolerance kQuantTolerance = kTolerance;

ActivationQuant dynamic_u8() { return ActivationQuant{}; }

double expect_quantized_matches_reference(Case c) {
  if (!c.quantize) c.quantize = dynamic_u8();
  std::unique_ptr<Built> built = build(c);
  const double worst = expect_outputs_match(*built->node, run_lowered(*built, c.target),
                                            run_reference(*built), kQuantTolerance);
  std::printf("[ quant    ] %s %s hidden=%ld: max |integer - reference| = %.3g\n", c.op.c_str(),
              c.quantize->to_string().c_str(), static_cast<long>(c.hidden), worst);
  return worst;
}

TEST(LowerRecurrentQuant, LstmDynamicU8) { expect_quantized_matches_reference({}); }

// An integer step of the full-width AVX-512 class shifts its last tile of 4 entries inward from 6
// entries (10 here: tiles at 0, 4 and 6); Zen 4's steps tiles of 4, 4 and 2. Sequence lengths
// differ per entry.
TEST(LowerRecurrentQuant, BatchNotAMultipleOfTheStepTile) {
  for (const std::string& target : step_tile_targets()) {
    for (const char* op : {"LSTM", "GRU"}) {
      Case c;
      c.op = op;
      c.seq = 6;
      c.batch = 10;
      c.hidden = 32;
      c.target = target;
      for (int64_t b = 0; b < c.batch; ++b)
        c.sequence_lens.push_back(static_cast<int32_t>(6 - b % 4));
      SCOPED_TRACE(cat(target, " ", op));
      expect_quantized_matches_reference(c);
    }
  }
}

// Integer steps with each quotient they may take (the host's class picks one: the fractions for
// LSTM steps on Zen 5, the divide otherwise; RNNC_GATE_DIVIDE either one for any cell), batch 1
// and batched, LSTM, GRU and RNN.
TEST(LowerRecurrentQuant, EachGateQuotientAgreesWithTheReference) {
  const testing::ScopedEnv variable("RNNC_GATE_DIVIDE", nullptr);
  for (const char* choice : {"divide", "fractions"}) {
    variable.set(choice);
    for (const char* op : {"LSTM", "GRU", "RNN"}) {
      for (const int64_t batch : {1, 6}) {
        Case c;
        c.op = op;
        c.seq = 5;
        c.batch = batch;
        c.hidden = 48;
        SCOPED_TRACE(cat(choice, " ", op, " batch ", batch));
        expect_quantized_matches_reference(c);
      }
    }
  }
}

// Entries with the same inputs get the same outputs bit for bit, wherever they sit in their step
// tiles (batch 6: tiles of 4, the last shifted inward; 11: three tiles), float and integer, with
// the host's own quotient and with the fractions. Integer GRU and RNN steps are left out of the
// fractions: with them their entries differed from the first step on (docs/lowering.md, "Gate
// activations as fractions"), which is why the schedule keeps the divide there.
TEST(LowerRecurrentQuant, EntriesWithTheSameInputsGetTheSameOutputs) {
  const testing::ScopedEnv variable("RNNC_GATE_DIVIDE", nullptr);
  for (const char* choice : {"", "fractions"}) {
    variable.set(choice);
    for (const char* op : {"LSTM", "GRU", "RNN"}) {
      for (const bool quantized : {false, true}) {
        if (*choice && quantized && std::string(op) != "LSTM") continue;
        for (const int64_t batch : {6, 11}) {
          Case c;
          if (quantized) c.quantize = dynamic_u8();
          c.op = op;
          c.seq = 5;
          c.batch = batch;
          std::unique_ptr<Built> built = build(c);
          float* x = built->inputs[0].data<float>();  // [seq, batch, input]
          for (int64_t t = 0; t < c.seq; ++t) {
            for (int64_t b = 1; b < c.batch; ++b) {
              std::memcpy(x + (t * c.batch + b) * c.input, x + t * c.batch * c.input,
                          sizeof(float) * c.input);
            }
          }
          const std::vector<Tensor> out = run_lowered(*built);
          const float* y = out[0].data<float>();  // [seq, 1, batch, hidden]
          SCOPED_TRACE(cat(*choice ? choice : "host's quotient", " ", op,
                           quantized ? " int8" : " float", " batch ", batch));
          for (int64_t t = 0; t < c.seq; ++t) {
            for (int64_t b = 1; b < c.batch; ++b) {
              ASSERT_EQ(std::memcmp(y + (t * c.batch + b) * c.hidden, y + t * c.batch * c.hidden,
                                    sizeof(float) * c.hidden),
                        0)
                  << "step " << t << " entry " << b;
            }
          }
        }
      }
    }
  }
}

// Quantized cells: each row of X and each entry's h is quantized with its own scale and every
// dot product is an exact integer sum, so a slice's rows come out as in the whole run.
TEST(LowerRecurrentQuant, SlicesEqualTheWholeRunBitwise) {
  Case c;
  c.quantize = dynamic_u8();
  c.seq = 7;
  c.batch = 11;
  c.initial_h = c.initial_c = true;
  expect_slices_equal_the_whole_run(c, {0, 4, 11});
  expect_slices_equal_the_whole_run(c, {0, 2, 5, 9, 11});
  c.direction = "bidirectional";
  c.sequence_lens = {7, 0, 3, 7, 5, 1, 2, 7, 6, 4, 7};
  expect_slices_equal_the_whole_run(c, {0, 4, 8, 11});
  // Entries at other places in their step tiles than in the whole run: slices of 3 and 6 entries
  // (tiles of 2, and of 4 with the last shifted inward).
  expect_slices_equal_the_whole_run(c, {0, 3, 11});
  expect_slices_equal_the_whole_run(c, {0, 6, 11});
  expect_slices_equal_the_whole_run(gru(c), {0, 6, 11});
  expect_slices_equal_the_whole_run(rnn(c), {0, 3, 11});
}

TEST(LowerRecurrentQuant, LstmHidden128Batch3Bidirectional) {
  Case c;
  c.hidden = 128;
  c.input = 40;
  c.batch = 3;
  c.direction = "bidirectional";
  c.sequence_lens = {5, 2, 0};
  expect_quantized_matches_reference(c);
}

// The integer input projection's row tiles: one row alone (up to 4 column panels per tile; GRU
// hidden 20 has 3), 2 to 5 rows as one tile of exactly that many, 7, 9 and 10 in two tiles of 4
// or 5, more as whole tiles with the last shifted inward, multiples of 8 (AVX-512) in 8-row
// tiles; row tiles outermost and (input 600: over 512 KB of float weights) column panels.
TEST(LowerRecurrentQuant, ProjectionTakesAnyRowCount) {
  for (const int64_t seq : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 16, 24}) {
    for (const int64_t input : {8, 600}) {
      Case c;
      c.seq = seq;
      c.input = input;
      c.hidden = 64;
      SCOPED_TRACE(cat("LSTM seq ", seq, " input ", input));
      expect_quantized_matches_reference(c);
    }
    Case g = gru();
    g.seq = seq;
    g.hidden = 20;
    SCOPED_TRACE(cat("GRU seq ", seq));
    expect_quantized_matches_reference(g);
  }
}

// LSTMs of input x hidden at the row counts the streamed projections tile differently: one row,
// 2 to 5 rows (one tile of exactly that many), 6 to 15 (6-row tiles), whole 16-row tiles, a last
// tile shifted inward (26 rows: 6 recomputed), the rows past whole tiles in a call of their own
// (17, 18 and 33 rows: 8 or more would be recomputed), and rows from two batch entries.
std::vector<Case> streamed_row_counts(int64_t input, int64_t hidden) {
  std::vector<Case> cases;
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {1, 1},  {2, 1},  {3, 1},  {4, 1},  {5, 1}, {6, 1}, {7, 1},
      {15, 1}, {16, 1}, {17, 1}, {33, 1}, {9, 2}, {13, 2}};  // (seq, batch)
  for (const auto& [seq, batch] : shapes) {
    Case c;
    c.seq = seq;
    c.batch = batch;
    c.input = input;
    c.hidden = hidden;
    cases.push_back(c);
  }
  return cases;
}

// Integer W over 1 MiB (input 600 x 4 gates x hidden 448) streams from beyond L2: on AVX-512,
// 16-row x 1-vector tiles, one pass over W per 16 rows. The subject is the projection, so the
// gates are HardSigmoid and Softsign, which kernel and reference compute alike up to float
// rounding: with sigmoid and tanh (the 8-bit step's degree-3 fit, within 2.5e-6 of the exact
// functions), some of hidden 448's h values over 16 and 33 steps land one quantization code
// away from the reference's, which every later step carries (~4e-4 in the outputs).
TEST(LowerRecurrentQuant, StreamedProjectionTakesAnyRowCount) {
  for (Case c : streamed_row_counts(600, 448)) {
    c.attributes["activations"] = Attribute::of_strings({"HardSigmoid", "Softsign", "Softsign"});
    SCOPED_TRACE(cat("LSTM seq ", c.seq, " batch ", c.batch));
    expect_quantized_matches_reference(c);
  }
}

// The float projection's row tiles with W in L2: one row alone, 2 to 5 rows as one tile of
// exactly that many, 7 to 10 in two tiles of 4 or 5, 6 and 11 or more as whole 6-row tiles with
// the last shifted inward; rows from one and from three batch entries.
TEST(LowerRecurrent, ProjectionTakesAnyRowCount) {
  for (const int64_t seq : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13}) {
    for (const int64_t batch : {1, 3}) {
      Case c;
      c.seq = seq;
      c.batch = batch;
      c.hidden = 32;
      SCOPED_TRACE(cat("LSTM seq ", seq, " batch ", batch));
      expect_matches_reference(c);
    }
  }
}

// Float W over 1 MiB (input 300 x 4 gates x hidden 256) streams too (a single row takes 4
// panels per tile).
TEST(LowerRecurrent, StreamedProjectionTakesAnyRowCount) {
  for (const Case& c : streamed_row_counts(300, 256)) {
    SCOPED_TRACE(cat("LSTM seq ", c.seq, " batch ", c.batch));
    expect_matches_reference(c);
  }
}

TEST(LowerRecurrentQuant, LstmAsymmetricWeights) {
  Case c;
  c.asymmetric_weights = true;
  c.hidden = 20;  // not a multiple of 4: the k padding of the packed weights
  c.input = 7;
  expect_quantized_matches_reference(c);
}

// int8 weights with zero points (DequantizeLinear allows them; rnnc's own asymmetric
// weights are uint8): the zero-point terms of both products, as for uint8.
TEST(LowerRecurrentQuant, LstmSignedWeightsWithZeroPoints) {
  Case c;
  c.asymmetric_weights = true;
  c.signed_storage = true;
  c.initial_h = c.initial_c = true;
  expect_quantized_matches_reference(c);
  c.batch = 5;
  expect_quantized_matches_reference(gru(c));
}

TEST(LowerRecurrentQuant, LstmSymmetricActivations) {
  Case c;
  c.quantize = dynamic_u8();
  c.quantize->symmetric = true;
  expect_quantized_matches_reference(c);
}

TEST(LowerRecurrentQuant, LstmStaticActivations4Bits) {
  Case c;
  ActivationQuant quant;
  quant.dynamic = false;
  quant.bits = 4;
  quant.input_scale = 2.0f / 15;
  quant.input_zero_point = 8;
  quant.state_scale = 2.0f / 15;
  quant.state_zero_point = 8;
  c.quantize = quant;
  c.peepholes = true;
  c.initial_h = c.initial_c = true;
  expect_quantized_matches_reference(c);
}

// Static 8-bit coefficients: each weight row's dequantizing factor is computed once per hidden
// tile (recurrent_pipelines.cc, recurrent_product's `factor`) and once per column panel in the
// projection; batches that fill step tiles and one that does not (6 entries), and the GRU's
// z and r gates, which are tiled apart from its h gate.
ActivationQuant static_u8() {
  ActivationQuant quant;
  quant.dynamic = false;
  quant.input_scale = 2.0f / 255;
  quant.input_zero_point = 128;
  quant.state_scale = 2.0f / 255;
  quant.state_zero_point = 127;
  return quant;
}

TEST(LowerRecurrentQuant, LstmStatic8BitBatches) {
  for (int64_t batch : {1, 4, 6, 16}) {
    Case c;
    c.quantize = static_u8();
    c.batch = batch;
    c.hidden = 40;
    c.initial_h = c.initial_c = true;
    SCOPED_TRACE(batch);
    expect_quantized_matches_reference(c);
  }
}

TEST(LowerRecurrentQuant, GruStatic8BitBatch) {
  Case c = gru();
  c.quantize = static_u8();
  c.batch = 5;
  c.hidden = 36;
  expect_quantized_matches_reference(c);
  c.attributes["linear_before_reset"] = Attribute::of_int(1);
  expect_quantized_matches_reference(c);
}

TEST(LowerRecurrentQuant, GruLinearBeforeReset) {
  Case c = gru();
  c.attributes["linear_before_reset"] = Attribute::of_int(1);
  c.hidden = 64;
  c.batch = 5;
  expect_quantized_matches_reference(c);
}

TEST(LowerRecurrentQuant, GruResetBeforeLinearQuantizesTheResetState) {
  Case c = gru();
  c.hidden = 36;
  c.direction = "reverse";
  expect_quantized_matches_reference(c);
}

TEST(LowerRecurrentQuant, RnnBidirectional) {
  Case c = rnn();
  c.direction = "bidirectional";
  c.hidden = 33;
  expect_quantized_matches_reference(c);
}

// Wide operands (s16 x s16 -> s32 pairs): 12- and 16-bit weights, 12- and 16-bit activations, and
// the mixed cases where only one side is wide (8-bit u8 activations widened to s16 next to
// 12-bit weights; 16-bit activations next to 8-bit weights). Hidden 20 and input 7 are odd
// multiples of nothing: the k padding of the two-wide lanes.
ActivationQuant symmetric_bits(int bits) {
  ActivationQuant quant;
  quant.bits = bits;
  quant.symmetric = true;
  return quant;
}

TEST(LowerRecurrentQuant, LstmWide16BitWeightsAndActivations) {
  Case c;
  c.weight_bits = 16;
  c.quantize = symmetric_bits(16);
  c.hidden = 20;
  c.input = 7;
  c.peepholes = true;
  expect_quantized_matches_reference(c);
}

TEST(LowerRecurrentQuant, LstmWide12BitWeightsU8Activations) {
  Case c;
  c.weight_bits = 12;
  c.hidden = 128;
  c.input = 40;
  c.batch = 3;
  c.direction = "bidirectional";
  c.sequence_lens = {5, 2, 0};
  expect_quantized_matches_reference(c);
}

TEST(LowerRecurrentQuant, GruWide12BitActivations8BitWeights) {
  Case c = gru();
  c.quantize = symmetric_bits(12);
  c.hidden = 36;  // linear_before_reset = 0: rt (.) h is quantized as 12-bit s16 too
  c.batch = 2;
  expect_quantized_matches_reference(c);
}

TEST(LowerRecurrentQuant, RnnWideAsymmetricWeightsStatic16BitActivations) {
  Case c = rnn();
  c.asymmetric_weights = true;  // uint8 weights with zero points, shifted into s16
  ActivationQuant quant = symmetric_bits(16);
  quant.dynamic = false;
  quant.input_scale = 3.0f / 32767;
  quant.state_scale = 1.0f / 32767;
  c.quantize = quant;
  c.hidden = 33;
  c.direction = "reverse";
  expect_quantized_matches_reference(c);
}

TEST(LowerRecurrentQuant, WideAvx2TargetAgreesWithReference) {
  Case c;
  c.weight_bits = 12;
  c.quantize = symmetric_bits(10);
  c.hidden = 24;
  c.batch = 2;
  std::unique_ptr<Built> built = build(c);
  expect_outputs_match(*built->node, run_lowered(*built, "avx2"), run_reference(*built),
                       kQuantTolerance);
}

// Overflow mode: the kernels' counts equal the same quantities computed here from the arithmetic
// of ir/quantization.h: X's values and the states h(t-1) each step quantizes (Y's rows, after the
// initial zeros), clamped above qmax or below qmin, and the exact sums
// sum_k (q - zq) * w_q of W.x and R.h beyond the declared accumulation width. Static 8-bit
// coefficients narrower than the data (X in [-1, 1) against [-0.5, 0.5]) make clamps happen, and
// 12-bit accumulation makes sums exceed it.
// Lowers `built` through a cache in overflow mode and runs it once; the counting kernels must
// compute what the plain ones do (checked against the reference here).
struct CountingRun {
  std::unique_ptr<HalideCache> cache;  // outlives the block, whose kernels it loaded
  std::unique_ptr<ExecutionBlock> block;
  BlockIO io;
};

CountingRun run_counting(const Built& built) {
  CountingRun run;
  run.cache = std::make_unique<HalideCache>(
      ::testing::TempDir() + "rnnc_lowering_recurrent_cache", "host");
  run.cache->set_count_overflow(true);
  run.cache->set_kernel_asserts(true);
  run.block = lower_recurrent(*built.node, *run.cache);
  run.io.inputs = input_pointers(built);
  run.block->run(run.io);
  expect_outputs_match(*built.node, run.io.outputs, run_reference(built), kQuantTolerance);
  return run;
}

struct HostCounts {
  int64_t values = 0, above = 0, below = 0, sums_beyond = 0;
};

void count_product(const float* rows, int64_t row_count, int64_t k_size, const Tensor& weight,
                   const QuantParams& params, float scale, int32_t zero_point,
                   const ActivationQuant& quant, HostCounts& counts) {
  const RowQuant row_quant = static_row_quant(scale, zero_point);
  const int64_t outputs = weight.dim(1);
  const int64_t limit = (int64_t{1} << (quant.accumulation_bits - 1)) - 1;
  for (int64_t m = 0; m < row_count; ++m) {
    std::vector<int64_t> q(static_cast<size_t>(k_size));
    for (int64_t k = 0; k < k_size; ++k) {
      const float raw = std::nearbyint(rows[m * k_size + k] * row_quant.inv_scale) +
                        static_cast<float>(zero_point);
      counts.values += 1;
      counts.above += raw > static_cast<float>(quant.qmax());
      counts.below += raw < static_cast<float>(quant.qmin());
      q[static_cast<size_t>(k)] = quantize_value(rows[m * k_size + k], row_quant, quant) - zero_point;
    }
    for (int64_t n = 0; n < outputs; ++n) {
      const float w_scale = params.scales.at(static_cast<size_t>(n));
      int64_t sum = 0;
      for (int64_t k = 0; k < k_size; ++k) {
        sum += q[static_cast<size_t>(k)] *
               std::lround(weight.data<float>()[n * k_size + k] / w_scale);
      }
      counts.sums_beyond += sum > limit || sum < -limit - 1;
    }
  }
}

TEST(LowerRecurrentQuant, OverflowModeCountsClampsAndSumsBeyondTheDeclaredWidth) {
  Case c;
  c.seq = 6;
  c.batch = 2;
  c.hidden = 20;
  c.input = 12;
  ActivationQuant quant;
  quant.dynamic = false;
  quant.input_scale = 1.0f / 255;  // [-0.5, 0.5] with zero point 128
  quant.input_zero_point = 128;
  quant.state_scale = 0.25f / 255;  // [-0.125, 0.125]
  quant.state_zero_point = 128;
  quant.accumulation_bits = 12;
  c.quantize = quant;
  std::unique_ptr<Built> built = build(c);
  const CountingRun run = run_counting(*built);
  const BlockIO& io = run.io;
  const ExecutionBlock* block = run.block.get();

  HostCounts host;
  const Tensor& x = built->inputs[0];
  count_product(x.data<float>(), c.seq * c.batch, c.input, built->inputs[1],
                *built->node->input(1)->type.quant, quant.input_scale, quant.input_zero_point,
                quant, host);
  // The states each step reads: zeros, then Y's rows but the last ([seq, 1, batch, hidden]).
  std::vector<float> states(static_cast<size_t>(c.seq * c.batch * c.hidden), 0.0f);
  std::copy_n(io.outputs[0].data<float>(), (c.seq - 1) * c.batch * c.hidden,
              states.begin() + c.batch * c.hidden);
  count_product(states.data(), c.seq * c.batch, c.hidden, built->inputs[2],
                *built->node->input(2)->type.quant, quant.state_scale, quant.state_zero_point,
                quant, host);

  const std::vector<OverflowCounts> counts = block->overflow_counts();
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].values, host.values);
  EXPECT_EQ(counts[0].above, host.above);
  EXPECT_EQ(counts[0].below, host.below);
  EXPECT_EQ(counts[0].sums_beyond, host.sums_beyond);
  EXPECT_EQ(counts[0].accumulation_bits, 12);
  // Not vacuous: each kind happened, and not everywhere.
  EXPECT_GT(host.above, 0);
  EXPECT_GT(host.below, 0);
  EXPECT_GT(host.sums_beyond, 0);
  EXPECT_LT(host.above + host.below, host.values / 2);
  std::printf("[ overflow ] %ld values, %ld above, %ld below, %ld sums beyond 12 bits\n",
              static_cast<long>(host.values), static_cast<long>(host.above),
              static_cast<long>(host.below), static_cast<long>(host.sums_beyond));
  // Blocks lowered without overflow mode report nothing.
  EXPECT_TRUE(lower_recurrent(*built->node, cache_for("host"))->overflow_counts().empty());
}

// The GRU's step has two products (z and r, then the h gate over rt (.) h): in overflow mode
// both are counted and the outputs stay the plain kernels'.
TEST(LowerRecurrentQuant, OverflowModeCountsBothGruProducts) {
  for (bool linear_before_reset : {false, true}) {
    Case c = gru();
    c.seq = 4;
    c.batch = 3;
    c.hidden = 24;
    if (linear_before_reset) c.attributes["linear_before_reset"] = Attribute::of_int(1);
    c.quantize = dynamic_u8();
    std::unique_ptr<Built> built = build(c);
    SCOPED_TRACE(linear_before_reset ? "linear_before_reset" : "reset before linear");
    const std::vector<OverflowCounts> counts = run_counting(*built).block->overflow_counts();
    ASSERT_EQ(counts.size(), 1u);
    // X's rows, h each step, and (reset before linear) rt (.) h each step; dynamic coefficients
    // cover each row, so nothing is clamped.
    const int64_t operands = linear_before_reset ? 1 : 2;
    EXPECT_EQ(counts[0].values, c.seq * c.batch * (c.input + operands * c.hidden));
    EXPECT_EQ(counts[0].above + counts[0].below, 0);
    EXPECT_EQ(counts[0].sums_beyond, 0);
  }
}

// Quantization itself stays near float: 8-bit weights and activations on these unit-scale
// weights move the LSTM's outputs by a few quantization steps at most.
TEST(LowerRecurrentQuant, StaysNearFloat) {
  Case c;
  c.hidden = 128;
  c.input = 64;
  c.seq = 20;
  Case float_case = c;
  c.quantize = dynamic_u8();
  std::unique_ptr<Built> quantized = build(c), float_built = build(float_case);
  expect_outputs_match(*quantized->node, run_lowered(*quantized), run_reference(*float_built),
                       testing::Tolerance{0.0, 0.05});
}

// Odd steps run on tile-reversed views (RecurrentSchedule::alternate_tiles): batch-1 runs of
// several hidden tiles and an odd number of steps, every per-tile input in play (peepholes,
// initial state, GRU's h-gate Rb), float and int8 (whose batch-1 step also splits its dot).
TEST(LowerRecurrent, MultiTileStepsAgreeInBothTileOrders) {
  Case lstm;
  lstm.hidden = 64;
  lstm.input = 24;
  lstm.seq = 7;
  lstm.peepholes = true;
  lstm.initial_h = lstm.initial_c = true;
  Case gru_lbr = gru(lstm);
  gru_lbr.peepholes = false;
  gru_lbr.initial_c = false;
  gru_lbr.attributes["linear_before_reset"] = Attribute::of_int(1);
  Case rnn_case = rnn(gru_lbr);
  rnn_case.attributes.clear();
  rnn_case.hidden = 160;  // five tiles of 32
  for (Case c : {lstm, gru_lbr, rnn_case}) {
    SCOPED_TRACE(c.op);
    expect_matches_reference(c);
    expect_quantized_matches_reference(c);
  }
}

TEST(LowerRecurrentQuant, Avx2TargetAgreesWithReference) {
  Case c = gru();
  c.hidden = 24;
  c.batch = 2;
  c.quantize = dynamic_u8();
  std::unique_ptr<Built> built = build(c);
  expect_outputs_match(*built->node, run_lowered(*built, "avx2"), run_reference(*built),
                       kQuantTolerance);
}

// A forward LSTM cell with ONNX's default activations, for the tests that compile its kernels
// directly.
RecurrentCell lstm_cell(int hidden, int input) {
  RecurrentCell cell;
  cell.hidden_size = hidden;
  cell.input_size = input;
  cell.gates = {kLstmI, kLstmO, kLstmF, kLstmC};
  cell.activations = {{RecurrentActivation::Kind::kSigmoid},
                      {RecurrentActivation::Kind::kTanh},
                      {RecurrentActivation::Kind::kTanh}};
  return cell;
}

// Where the batched step shifts its last tile of 4 entries inward: from 6 entries for an integer
// step or an R over L2, from 18 for a float R in L2; on Zen 4 only for a float R over L2; never
// without tiles of 4 (AVX2), nor for a batch of one.
TEST(LowerRecurrent, ShiftedStepTilesWhereEachRLoadCostsMost) {
  KernelTarget host = resolve_kernel_target("x86-64-v4");
  host.l2_bytes = int64_t{1} << 20;
  RecurrentCell small = lstm_cell(128, 64);  // R 256 KiB as float
  RecurrentCell large = lstm_cell(512, 64);  // R 4 MiB as float
  EXPECT_EQ(choose_recurrent_schedule(small, host, true).shifted_tiles_from, 18);
  EXPECT_EQ(choose_recurrent_schedule(large, host, true).shifted_tiles_from, 6);
  EXPECT_EQ(choose_recurrent_schedule(small, host, false).shifted_tiles_from, 0);
  small.quant = recurrent_quant(ActivationQuant{}, small.input_size, small.hidden_size, 8, false, 8,
                                false, 4);
  EXPECT_EQ(choose_recurrent_schedule(small, host, true).shifted_tiles_from, 6);
  const KernelTarget avx2 = resolve_kernel_target("x86-64-v3");
  EXPECT_EQ(choose_recurrent_schedule(large, avx2, true).shifted_tiles_from, 0);
  // Zen 4 (512-bit operations in halves): only a float R over L2.
  const KernelTarget zen4 = resolve_kernel_target("zen4");
  EXPECT_EQ(choose_recurrent_schedule(small, zen4, true).shifted_tiles_from, 0);
  small.quant.reset();
  EXPECT_EQ(choose_recurrent_schedule(small, zen4, true).shifted_tiles_from, 0);
  EXPECT_EQ(choose_recurrent_schedule(large, zen4, true).shifted_tiles_from, 6);
  large.quant = recurrent_quant(ActivationQuant{}, large.input_size, large.hidden_size, 8, false, 8,
                                false, 4);
  EXPECT_EQ(choose_recurrent_schedule(large, zen4, true).shifted_tiles_from, 0);
  large.quant.reset();
  // The kernels' key holds the choice, so a cached kernel of the other tiling is never reused.
  RecurrentSchedule unshifted = choose_recurrent_schedule(large, host, true);
  const std::string shifted_key = unshifted.key();
  unshifted.shifted_tiles_from = 0;
  EXPECT_NE(shifted_key, unshifted.key());
}

// Sigmoid and tanh take the degree-3 fit only where a step quantizes h to 8 bits or fewer; float
// steps and 12- or 16-bit activations keep the degree-4 one (lowering/activation_math.h).
TEST(LowerRecurrentQuant, GateFitFollowsTheStateWidth) {
  RecurrentCell cell = lstm_cell(128, 64);
  EXPECT_EQ(cell.gate_fit(), Fit::kDegree4);
  for (int bits : {4, 8, 12, 16}) {
    ActivationQuant activations;
    activations.bits = bits;
    activations.symmetric = bits > 8;
    cell.quant =
        recurrent_quant(activations, cell.input_size, cell.hidden_size, 8, false, 8, false, 4);
    EXPECT_EQ(cell.gate_fit(), bits <= 8 ? Fit::kDegree3 : Fit::kDegree4) << bits << " bits";
  }
}

// The object code of `cell`'s input projection or of its step, disassembled.
std::string kernel_disassembly(const RecurrentCell& cell, const RecurrentSchedule& schedule,
                               bool projection, const KernelTarget& target) {
  // One file per test and process: ctest runs tests as parallel processes (the same test too,
  // once alone and once in unit_tests_x86_64_v3), and a shared path lets one disassemble
  // another's half-written object.
  const std::string object = cat(::testing::TempDir(), "rnnc_kernel_disassembly_",
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                                 "_", ::getpid(), ".o");
  if (projection) {
    compile_input_projection(cell, schedule, object, "projection", target);
  } else {
    compile_recurrent_step(cell, schedule, object, "step", target);
  }
  std::string listing = testing::disassemble(object);
  std::filesystem::remove(object);
  return listing;
}

// The host target (AVX-512 with VNNI here) must really use the dot-product instructions: a silent
// fallback to widening multiplies would pass every numeric test. u8 x s8 products are vpdpbusd;
// s16 x s16 ones (12-bit weights) vpdpwssd, also in the chunked int64 form (16 x 16 bits).
TEST(LowerRecurrentQuant, HostKernelsUseVnniDotProducts) {
  const KernelTarget host = resolve_kernel_target("host");
  if (!host.halide.has_feature(Halide::Target::AVX512_SapphireRapids)) {
    GTEST_SKIP() << "host has no AVX512-VNNI (target " << host.halide.to_string() << ")";
  }
  RecurrentCell cell = lstm_cell(128, 64);
  struct Variant {
    int weight_bits, activation_bits;
    const char* instruction;
  };
  for (const Variant& variant :
       {Variant{8, 8, "vpdpbusd"}, Variant{12, 8, "vpdpwssd"}, Variant{16, 16, "vpdpwssd"}}) {
    ActivationQuant activations;
    activations.bits = variant.activation_bits;
    activations.symmetric = variant.activation_bits > 8;
    cell.quant = recurrent_quant(activations, cell.input_size, cell.hidden_size,
                                 variant.weight_bits, false, variant.weight_bits, false, 4);
    EXPECT_EQ(cell.quant->state_widths.int64_sum, variant.activation_bits == 16);
    const RecurrentSchedule schedule = choose_recurrent_schedule(cell, host);
    for (bool projection : {false, true}) {
      const std::string text = kernel_disassembly(cell, schedule, projection, host);
      EXPECT_NE(text.find(variant.instruction), std::string::npos)
          << (projection ? "projection" : "step") << " of " << cell.quant->key() << " has no "
          << variant.instruction;
    }
  }
}

// Without VNNI (x86-64-v3 here, on any host) u8 x s8 products are summed in pairs, each pair one
// lane of vpmaddwd, without shuffles in the dot product: with four products per lane Halide adds
// each vpmaddwd's pairs with a vshufps and a vpermpd, 1.6x slower (docs/measurements.md, "Integer
// products in pairs without VNNI"). Compiled, not run; unit_tests_x86_64_v3 runs these kernels
// against the reference and KernelIsa.* compares them with the VNNI kernels.
TEST(LowerRecurrentQuant, WithoutVnniProductsAreSummedInPairs) {
  const KernelTarget avx2 = resolve_kernel_target("x86-64-v3");
  EXPECT_EQ(u8_products_per_lane(avx2), 2);
  EXPECT_EQ(u8_products_per_lane(resolve_kernel_target("x86-64-v4")), 2);
  EXPECT_EQ(u8_products_per_lane(resolve_kernel_target("x86-64-v4-vnni")), 4);
  RecurrentCell cell = lstm_cell(128, 64);
  for (int lane : {2, 4}) {
    cell.quant = recurrent_quant(ActivationQuant{}, cell.input_size, cell.hidden_size, 8, false, 8,
                                 false, lane);
    for (bool batched : {false, true}) {
      const RecurrentSchedule schedule = choose_recurrent_schedule(cell, avx2, batched);
      for (bool projection : {false, true}) {
        const std::string text = kernel_disassembly(cell, schedule, projection, avx2);
        const std::string what = cat(projection ? "projection"
                                     : batched  ? "batched step"
                                                : "step",
                                     ", ", lane, " products per lane");
        auto count = [&](const std::string& mnemonic) {
          int n = 0;
          for (size_t at = text.find(mnemonic); at != std::string::npos;
               at = text.find(mnemonic, at + 1)) {
            ++n;
          }
          return n;
        };
        // Four per lane: a vshufps and a vpermpd per vpmaddwd; in pairs a few vshufps elsewhere
        // (quantizing rows) and no vpermpd.
        const int products = count("vpmaddwd"), shuffles = count("vshufps") + count("vpermpd");
        EXPECT_GT(products, 0) << what;
        if (lane == 2) {
          EXPECT_LT(shuffles, products / 2) << what;
        } else {
          EXPECT_GE(shuffles, products) << what;
        }
      }
    }
  }
}

// The integer kernels quantize X's and h's rows without a packed rounding instruction: Halide 14
// splits a 16-lane round into two 256-bit vroundps with an extract and an insert, which
// quantize_rows avoids by adding 1.5 * 2^23 (lowering/quantized_operands.cc). Compiled, not run,
// for the AVX2 level and the Zen 4 feature set, so any host checks both.
TEST(LowerRecurrentQuant, RowsQuantizeWithoutPackedRounding) {
  RecurrentCell cell = lstm_cell(128, 64);
  for (const KernelTarget& target :
       {resolve_kernel_target("x86-64-v3"), kernel_target_for(zen4_features())}) {
    cell.quant = recurrent_quant(ActivationQuant{}, cell.input_size, cell.hidden_size, 8, false, 8,
                                 false, u8_products_per_lane(target));
    const RecurrentSchedule schedule = choose_recurrent_schedule(cell, target);
    for (bool projection : {false, true}) {
      const std::string text = kernel_disassembly(cell, schedule, projection, target);
      for (const char* instruction : {"vroundps", "vrndscaleps"}) {
        EXPECT_EQ(text.find(instruction), std::string::npos)
            << (projection ? "projection" : "step") << " for " << target.halide.to_string()
            << " has " << instruction;
      }
    }
  }
}

// Weights streamed from beyond L2 (over 1 MiB of W for a 1 MiB L2: hidden 448 x input 600 as
// int8 or float, not int8 at input 128 or float at hidden 128) take 16-row x 1-vector projection
// tiles and prefetch the next panel into L1 (prefetcht0: compile_object rewrites Halide 14's
// prefetchnta); weights that stay in L2 take the 6-row tiles and no prefetch. The host's
// features with a stated L2, so the thresholds do not depend on which host runs the test.
TEST(LowerRecurrent, StreamedWeightsArePrefetchedIntoL1) {
  KernelTarget host = resolve_kernel_target("host");
  host.l2_bytes = int64_t{1} << 20;
  if (!host.halide.has_feature(Halide::Target::AVX512_SapphireRapids)) {
    GTEST_SKIP() << "host has no AVX512-VNNI (target " << host.halide.to_string() << ")";
  }
  struct Variant {
    bool quantized;
    int hidden, input;
    bool streamed;
    int unstreamed_vectors;
  };
  for (const Variant& variant :
       {Variant{true, 448, 600, true, 2}, Variant{true, 448, 128, false, 2},
        Variant{false, 448, 600, true, 4}, Variant{false, 128, 128, false, 4}}) {
    RecurrentCell cell = lstm_cell(variant.hidden, variant.input);
    if (variant.quantized) {
      cell.quant =
          recurrent_quant(ActivationQuant{}, variant.input, variant.hidden, 8, false, 8, false, 4);
    }
    const std::string what = cat(variant.quantized ? "int8" : "float", " hidden ", variant.hidden,
                                 " input ", variant.input);
    const RecurrentSchedule schedule = choose_recurrent_schedule(cell, host);
    EXPECT_EQ(schedule.stream_weights, variant.streamed) << what;
    EXPECT_EQ(schedule.gemm_rows, variant.streamed ? 16 : 6) << what;
    EXPECT_EQ(schedule.gemm_rows_exact, variant.quantized && !variant.streamed ? 8 : 0) << what;
    EXPECT_EQ(schedule.gemm_vectors, variant.streamed ? 1 : variant.unstreamed_vectors) << what;
    const std::string text = kernel_disassembly(cell, schedule, true, host);
    EXPECT_EQ(text.find("prefetch") != std::string::npos, variant.streamed) << what;
    EXPECT_EQ(text.find("prefetchnta"), std::string::npos) << what;
  }
}

// The int8 batch-1 step's k loop is a chain of dependent vpdpbusd per accumulator (latency ~5
// cycles, two per cycle): it sums interleaved halves of k into separate accumulators, 8 chains for
// an LSTM tile of 16 units x 4 gates, not 4. The batched step already has 4 per batch entry.
TEST(LowerRecurrentQuant, BatchOneStepSplitsItsDotProductsIntoTwiceTheChains) {
  const KernelTarget host = resolve_kernel_target("host");
  if (!host.halide.has_feature(Halide::Target::AVX512_SapphireRapids)) {
    GTEST_SKIP() << "host has no AVX512-VNNI (target " << host.halide.to_string() << ")";
  }
  RecurrentCell cell = lstm_cell(128, 128);
  cell.quant = recurrent_quant(ActivationQuant{}, 128, 128, 8, false, 8, false, 4);
  for (bool batched : {false, true}) {
    const RecurrentSchedule schedule = choose_recurrent_schedule(cell, host, batched);
    EXPECT_EQ(schedule.step_k_split, batched ? 1 : 2);
    // The vpdpbusd destinations (AT&T: the last operand) of each straight run of code between
    // jumps: a dot loop's body holds its register tile. The kernel's specializations (the batched
    // step's tiles of 4 and of 2 entries, and of 4 with the last shifted) each have their own.
    size_t largest = 0;
    std::set<std::string> accumulators;
    std::istringstream lines(kernel_disassembly(cell, schedule, false, host));
    for (std::string line; std::getline(lines, line);) {
      if (line.find("\tj") != std::string::npos) {
        largest = std::max(largest, accumulators.size());
        accumulators.clear();
      }
      if (line.find("vpdpbusd") == std::string::npos) continue;
      const size_t at = line.rfind("%zmm");
      ASSERT_NE(at, std::string::npos) << line;
      accumulators.insert(line.substr(at));
    }
    largest = std::max(largest, accumulators.size());
    EXPECT_EQ(largest, batched ? 16u : 8u) << (batched ? "batched" : "batch-1");
  }
}

// Every step but the two-phase GRU's (which reads rt (.) h across tiles in hidden order) may be
// handed tile-reversed views on odd steps; the numeric tests above run both orders.
TEST(LowerRecurrent, ScheduleAlternatesTileOrderExceptInTwoPhaseGru) {
  const KernelTarget host = resolve_kernel_target("host");
  RecurrentCell cell = lstm_cell(64, 32);
  EXPECT_TRUE(choose_recurrent_schedule(cell, host).alternate_tiles);
  cell.op = RecurrentOp::kGru;
  cell.gates = {kGruZ, kGruR, kGruH};
  cell.linear_before_reset = true;
  EXPECT_TRUE(choose_recurrent_schedule(cell, host).alternate_tiles);
  cell.linear_before_reset = false;
  EXPECT_FALSE(choose_recurrent_schedule(cell, host).alternate_tiles);
}

// Operands reach the products as whole vectors: no gathers, no vectors assembled byte by byte.
// (An AVX-512 integer projection of 4 x 6 register tiles once compiled to vpinsrb sequences and
// ran at half speed while every numeric test passed.)
TEST(LowerRecurrent, HostKernelsLoadOperandsAsWholeVectors) {
  const KernelTarget host = resolve_kernel_target("host");
  RecurrentCell cell = lstm_cell(128, 128);
  for (bool quantized : {false, true}) {
    if (quantized) {
      cell.quant = recurrent_quant(ActivationQuant{}, cell.input_size, cell.hidden_size, 8, false,
                                   8, false, u8_products_per_lane(host));
    }
    for (bool batched : {false, true}) {
      const RecurrentSchedule schedule = choose_recurrent_schedule(cell, host, batched);
      for (bool projection : {false, true}) {
        const std::string text = kernel_disassembly(cell, schedule, projection, host);
        const std::string what = cat(projection ? "projection" : "step",
                                     quantized ? " (int8)" : " (float)", batched ? " batched" : "");
        EXPECT_FALSE(testing::gathers_data(text)) << what << " gathers data";
        EXPECT_EQ(text.find("vpinsrb"), std::string::npos) << what << " inserts bytes";
      }
    }
  }
}

// The step's hidden tiles become a parallel loop only when R overflows L2 (1 MiB here: the
// float h128 stacks' 256 KiB steps stay one loop; speech-sized layers split).
TEST(LowerRecurrent, ScheduleParallelizesTheTilesOfLargeStepsOnly) {
  KernelTarget host = resolve_kernel_target("host");
  host.l2_bytes = int64_t{1} << 20;
  RecurrentCell cell = lstm_cell(128, 128);
  for (const auto& [hidden, parallel] :
       std::vector<std::pair<int, bool>>{{128, false}, {256, false}, {288, true}, {608, true}}) {
    cell.hidden_size = hidden;
    EXPECT_EQ(choose_recurrent_schedule(cell, host).parallel_tiles, parallel) << hidden;
  }
  // int8 weights are a quarter of the bytes: h608's 1.4 MiB still splits, h288's 324 KiB not.
  cell.hidden_size = 288;
  cell.quant = recurrent_quant(ActivationQuant{}, 128, 288, 8, false, 8, false, 4);
  EXPECT_FALSE(choose_recurrent_schedule(cell, host).parallel_tiles);
  cell.hidden_size = 608;
  cell.quant = recurrent_quant(ActivationQuant{}, 128, 608, 8, false, 8, false, 4);
  EXPECT_TRUE(choose_recurrent_schedule(cell, host).parallel_tiles);
}

// The weight thresholds follow the schedule class's L2: with 2 MiB per core (a Sapphire Rapids
// Xeon) a speech layer's 1.3 MiB float R and 1 MiB int8 W stay in L2 (no parallel step, no
// streaming) where a 1 MiB L2 (an AMD EPYC) splits and streams them.
TEST(LowerRecurrent, WeightThresholdsFollowTheTargetsL2) {
  const testing::ScopedEnv own_l2("RNNC_L2_KIB", nullptr);  // each target's own L2
  for (const char* name : {"zen4", "sapphirerapids"}) {
    const KernelTarget target = resolve_kernel_target(name);
    const bool small_l2 = target.l2_bytes == (int64_t{1} << 20);
    EXPECT_EQ(target.l2_bytes, small_l2 ? int64_t{1} << 20 : int64_t{2} << 20) << name;
    RecurrentCell cell = lstm_cell(288, 128);
    EXPECT_EQ(choose_recurrent_schedule(cell, target).parallel_tiles, small_l2) << name;
    cell = lstm_cell(448, 600);
    cell.quant = recurrent_quant(ActivationQuant{}, 600, 448, 8, false, 8, false, 4);
    EXPECT_EQ(choose_recurrent_schedule(cell, target).stream_weights, small_l2) << name;
  }
  EXPECT_EQ(resolve_kernel_target("zen4").schedule_class(), "avx512 in 256-bit halves, L2 1 MiB");
  EXPECT_EQ(resolve_kernel_target("sapphirerapids").schedule_class(), "avx512, L2 2 MiB");
  EXPECT_EQ(resolve_kernel_target("x86-64-v3").schedule_class(), "avx2, L2 1 MiB");
  KernelTarget larger = resolve_kernel_target("zen4");
  larger.l2_bytes *= 2;  // kernels cached for one L2 are never served to another
  EXPECT_NE(larger.key(), resolve_kernel_target("zen4").key());
}

// Float gates divide exactly where 512-bit operations are split (Zen 4) or the divider takes no
// multiply slots (Zen 5), and by the reciprocal estimate on the other full-width cores and with
// AVX2. Quantized LSTM gates take the two fractions where the divider takes no multiply slots (zmm
// only); other quantized gates divide.
TEST(LowerRecurrent, GatesDivideExactlyWhereTheClassMakesDividesCheap) {
  const testing::ScopedEnv class_choice("RNNC_GATE_DIVIDE", nullptr);
  RecurrentCell cell = lstm_cell(128, 64);
  RecurrentCell quantized = cell;
  quantized.quant = recurrent_quant(ActivationQuant{}, 64, 128, 8, false, 8, false, 4);
  for (const char* name : {"zen4", "sapphirerapids", "x86-64-v4", "x86-64-v3"}) {
    const KernelTarget target = resolve_kernel_target(name);
    EXPECT_EQ(target.splits_512_bit_ops, std::string(name) == "zen4") << name;
    EXPECT_EQ(choose_recurrent_schedule(cell, target).gate_quotient,
              target.splits_512_bit_ops ? Quotient::kExact : Quotient::kEstimate)
        << name;
    EXPECT_EQ(choose_recurrent_schedule(quantized, target).gate_quotient, Quotient::kExact) << name;
  }
  // Either property makes AVX-512 float gates divide; AVX2 keeps the estimate (ymm operations
  // run whole).
  for (bool KernelTarget::*property :
       {&KernelTarget::splits_512_bit_ops, &KernelTarget::divides_beside_multiplies}) {
    KernelTarget avx512 = resolve_kernel_target("x86-64-v4");
    avx512.*property = true;
    EXPECT_EQ(choose_recurrent_schedule(cell, avx512).gate_quotient, Quotient::kExact);
    KernelTarget avx2 = resolve_kernel_target("x86-64-v3");
    avx2.*property = true;
    EXPECT_EQ(choose_recurrent_schedule(cell, avx2).gate_quotient, Quotient::kEstimate);
    EXPECT_EQ(choose_recurrent_schedule(quantized, avx2).gate_quotient, Quotient::kExact);
  }
  KernelTarget zen5 = resolve_kernel_target("x86-64-v4-vnni");
  zen5.divides_beside_multiplies = true;
  EXPECT_EQ(choose_recurrent_schedule(quantized, zen5).gate_quotient, Quotient::kFractions);
  RecurrentCell gru_cell = quantized;
  gru_cell.op = RecurrentOp::kGru;
  EXPECT_EQ(choose_recurrent_schedule(gru_cell, zen5).gate_quotient, Quotient::kExact);
  EXPECT_NE(choose_recurrent_schedule(quantized, zen5).key(),
            choose_recurrent_schedule(quantized, resolve_kernel_target("x86-64-v4-vnni")).key());
  EXPECT_NE(choose_recurrent_schedule(cell, resolve_kernel_target("zen4")).key(),
            choose_recurrent_schedule(cell, resolve_kernel_target("x86-64-v4")).key());
}

// RNNC_GATE_DIVIDE replaces the class's choice in any direction, and the kernels' key changes with
// it; quantized gates given `estimate` divide; another value is an invalid-input error naming the
// variable. The host's float kernels agree with the reference under each choice.
TEST(LowerRecurrent, GateDivideVariableReplacesTheClassChoice) {
  RecurrentCell cell = lstm_cell(128, 64);
  const KernelTarget zen4 = resolve_kernel_target("zen4");
  const KernelTarget xeon = resolve_kernel_target("sapphirerapids");
  const testing::ScopedEnv variable("RNNC_GATE_DIVIDE", nullptr);
  const std::string zen4_key = choose_recurrent_schedule(cell, zen4).key();
  variable.set("estimate");
  EXPECT_EQ(choose_recurrent_schedule(cell, zen4).gate_quotient, Quotient::kEstimate);
  EXPECT_NE(choose_recurrent_schedule(cell, zen4).key(), zen4_key);
  RecurrentCell quantized = cell;
  quantized.quant = recurrent_quant(ActivationQuant{}, 64, 128, 8, false, 8, false, 4);
  EXPECT_EQ(choose_recurrent_schedule(quantized, zen4).gate_quotient, Quotient::kExact);
  variable.set("divide");
  EXPECT_EQ(choose_recurrent_schedule(cell, xeon).gate_quotient, Quotient::kExact);
  EXPECT_EQ(choose_recurrent_schedule(cell, resolve_kernel_target("x86-64-v3")).gate_quotient,
            Quotient::kExact);
  variable.set("fractions");
  EXPECT_EQ(choose_recurrent_schedule(cell, xeon).gate_quotient, Quotient::kFractions);
  EXPECT_EQ(choose_recurrent_schedule(quantized, zen4).gate_quotient, Quotient::kFractions);
  EXPECT_NE(choose_recurrent_schedule(cell, zen4).key(), zen4_key);
  variable.set("exact");
  EXPECT_EQ(error_message([&] { choose_recurrent_schedule(cell, zen4); }, ErrorKind::kInvalidInput),
            "RNNC_GATE_DIVIDE = 'exact': must be divide, estimate or fractions (unset: the "
            "schedule class decides)");
  variable.set("");
  EXPECT_EQ(choose_recurrent_schedule(cell, zen4).key(), zen4_key);

  Case c;
  c.hidden = 40;
  c.batch = 3;
  c.sequence_lens = {5, 2, 4};
  std::unique_ptr<Built> built = build(c);
  for (const char* choice : {"divide", "estimate", "fractions"}) {
    SCOPED_TRACE(choice);
    variable.set(choice);
    expect_outputs_match(*built->node, run_lowered(*built), run_reference(*built));
  }
}

// The reciprocal estimate in AVX-512 float kernels against the reference on any AVX-512 host:
// x86-64-v4 is of the full-width class, so its kernels take the estimate even where the host's
// own kernels (Zen 4: the divide, which the host-target tests run) do not.
TEST(LowerRecurrent, FullWidthAvx512TargetAgreesWithTheReference) {
  const testing::ScopedEnv class_choice("RNNC_GATE_DIVIDE", nullptr);
  if (!host_cpu().features.contains(resolve_kernel_target("x86-64-v4").features)) {
    GTEST_SKIP() << "host has no AVX-512";
  }
  for (Case c : {Case{}, gru()}) {
    c.hidden = 40;
    c.batch = 3;
    c.sequence_lens = {5, 2, 4};
    std::unique_ptr<Built> built = build(c);
    SCOPED_TRACE(c.op);
    expect_outputs_match(*built->node, run_lowered(*built, "x86-64-v4"), run_reference(*built));
  }
}

// ---- the input projection in chunks of steps ----------------------------------------------------

// Lowers and runs the case with RNNC_XW_CHUNK_KIB = kib (the chunk size lowering reads).
std::vector<Tensor> run_with_xw_chunks(const Built& built, const char* kib) {
  EXPECT_EQ(::setenv("RNNC_XW_CHUNK_KIB", kib, 1), 0);
  std::vector<Tensor> outputs = run_lowered(built);
  ::unsetenv("RNNC_XW_CHUNK_KIB");
  return outputs;
}

// A whole run whose XW rows exceed the chunk size projects them per chunk of steps, each just
// before the steps that read it (recurrent_loop_test.cc checks the order): bit for bit the run
// that projects every row at once, and within tolerance of the reference. 43 steps of 3 entries,
// 4 gates x 16 units: 768 bytes of rows per step; 4 KiB chunks are 5 steps.
TEST(LowerRecurrent, LongRunsProjectedInChunksEqualOneProjectionBitForBit) {
  Case lstm;
  lstm.seq = 43;
  lstm.batch = 3;
  lstm.initial_h = lstm.initial_c = true;
  Case bidirectional = lstm;
  bidirectional.direction = "bidirectional";
  Case full_lengths = bidirectional;
  full_lengths.sequence_lens = {43, 43, 43};
  Case gru_reverse = gru(lstm);
  gru_reverse.direction = "reverse";
  gru_reverse.attributes["linear_before_reset"] = Attribute::of_int(1);
  Case quantized = bidirectional;
  quantized.quantize = dynamic_u8();
  // The variable reaches the schedule the loop reads its chunk size from (else both runs below
  // would project at once and agree trivially).
  const KernelTarget host = resolve_kernel_target("host");
  EXPECT_EQ(choose_recurrent_schedule(lstm_cell(16, 8), host).xw_chunk_bytes, host.l2_bytes / 2);
  ASSERT_EQ(::setenv("RNNC_XW_CHUNK_KIB", "4", 1), 0);
  EXPECT_EQ(choose_recurrent_schedule(lstm_cell(16, 8), host).xw_chunk_bytes, 4096);
  ::unsetenv("RNNC_XW_CHUNK_KIB");
  for (const Case& c :
       {lstm, bidirectional, full_lengths, gru_reverse, rnn(bidirectional), quantized}) {
    const std::string what = cat(c.op, " ", c.direction, c.quantize ? " int8" : "");
    std::unique_ptr<Built> built = build(c);
    const std::vector<Tensor> at_once = run_with_xw_chunks(*built, "0");
    const std::vector<Tensor> chunked = run_with_xw_chunks(*built, "4");
    ASSERT_EQ(chunked.size(), at_once.size()) << what;
    for (size_t i = 0; i < at_once.size(); ++i) {
      ASSERT_EQ(chunked[i].defined(), at_once[i].defined()) << what << " output " << i;
      if (!at_once[i].defined()) continue;
      EXPECT_EQ(std::memcmp(chunked[i].raw_data(), at_once[i].raw_data(), at_once[i].nbytes()), 0)
          << what << " output " << i;
    }
    expect_outputs_match(*built->node, chunked, run_reference(*built),
                         c.quantize ? kQuantTolerance : kTolerance);
  }
}

TEST(LowerRecurrent, AChunkSizeThatIsNotANumberNamesTheVariable) {
  std::unique_ptr<Built> built = build(Case{});
  ASSERT_EQ(::setenv("RNNC_XW_CHUNK_KIB", "4k", 1), 0);
  const std::string message = error_message(
      [&] { lower_recurrent(*built->node, cache_for("host")); }, ErrorKind::kInvalidInput);
  ::unsetenv("RNNC_XW_CHUNK_KIB");
  EXPECT_EQ(message, "RNNC_XW_CHUNK_KIB = '4k': must be a whole number of KiB (0: no chunks)");
}

// ---- targets, caching, plan text ----------------------------------------------------------------

TEST(LowerRecurrent, Avx2TargetCompilesAndAgreesWithHost) {
  for (Case c : {Case{}, gru(), rnn()}) {
    c.hidden = 20;
    c.batch = 3;
    c.direction = "bidirectional";
    c.sequence_lens = {5, 1, 0};
    if (c.op == "GRU") c.attributes["linear_before_reset"] = Attribute::of_int(1);
    std::unique_ptr<Built> built = build(c);
    SCOPED_TRACE(c.op);
    std::vector<Tensor> host = run_lowered(*built, "host");
    std::vector<Tensor> avx2 = run_lowered(*built, "avx2");
    expect_outputs_match(*built->node, avx2, host);
    expect_outputs_match(*built->node, avx2, run_reference(*built));
  }
}

// The cache key holds shapes and attributes, not weights: a second layer (here: a second process,
// modeled by a fresh cache over the same directory) loads the first one's compiled code.
TEST(LowerRecurrent, LayersWithEqualShapesShareCompiledPipelines) {
  Case first;
  first.hidden = 24;
  first.input = 24;
  first.attributes["clip"] = Attribute::of_float(2.25f);
  Case second = first;
  second.seed = 2;  // other weights, same shapes and attributes
  std::unique_ptr<Built> a = build(first), b = build(second);
  lower_recurrent(*a->node, cache_for("host"));
  HalideCache fresh(::testing::TempDir() + "rnnc_lowering_recurrent_cache", "host");
  fresh.set_kernel_asserts(true);  // as cache_for's
  std::unique_ptr<ExecutionBlock> block = lower_recurrent(*b->node, fresh);
  EXPECT_TRUE(block->from_cache);
  EXPECT_EQ(block->compile_ms, 0.0);
  BlockIO io;
  io.inputs = input_pointers(*b);
  block->run(io);
  expect_outputs_match(*b->node, io.outputs, run_reference(*b));
}

TEST(LowerRecurrent, KindNamesOpDirectionAndSizes) {
  Case c = gru();
  c.direction = "bidirectional";
  c.hidden = 128;
  c.input = 40;
  std::unique_ptr<Built> built = build(c);
  EXPECT_EQ(lower_recurrent(*built->node, cache_for("host"))->kind(),
            "halide gru bidirectional h=128 in=40");
}

// ---- what is not lowered, and input errors
// -------------------------------------------------------

TEST(LowerRecurrent, RuntimeWeightsAreUnsupported) {
  Case c;
  c.runtime_weights = true;
  std::unique_ptr<Built> built = build(c);
  EXPECT_EQ(error_message([&] { lower_recurrent(*built->node, cache_for("host")); },
                          ErrorKind::kUnsupported),
            "LSTM 'node' (opset 14): input 'W' is computed at run time; Halide lowering needs "
            "constant weights");
}

TEST(LowerRecurrent, Float64IsUnsupported) {
  Case c = gru();
  c.dtype = DType::kFloat64;
  std::unique_ptr<Built> built = build(c);
  EXPECT_EQ(error_message([&] { lower_recurrent(*built->node, cache_for("host")); },
                          ErrorKind::kUnsupported),
            "GRU 'node' (opset 14): element type double is not lowered to Halide (float32 only)");
}

TEST(LowerRecurrent, SequenceLensOutOfRangeIsAnInputError) {
  Case c;
  c.batch = 2;
  c.sequence_lens = {5, 6};
  std::unique_ptr<Built> built = build(c);
  EXPECT_EQ(error_message([&] { run_lowered(*built); }, ErrorKind::kInvalidInput),
            "LSTM 'node' (opset 14): input 'sequence_lens'[1] = 6, must be in [0, seq_length = 5]");
}

TEST(LowerRecurrent, InputSizeMismatchIsAnInputError) {
  Case c;
  std::unique_ptr<Built> built = build(c);
  std::unique_ptr<ExecutionBlock> block = lower_recurrent(*built->node, cache_for("host"));
  Tensor x(DType::kFloat32, {5, 1, 9});
  BlockIO io;
  io.inputs = input_pointers(*built);
  io.inputs[0] = &x;
  EXPECT_EQ(error_message([&] { block->run(io); }, ErrorKind::kInvalidInput),
            "LSTM 'node' (opset 14): input 'X' has shape [5, 1, 9], expected rank 3 with "
            "input_size 8");
}

// ---- stored node cases -------------------------------------------------------------------------

// Imports a one-node model, turns its weight inputs into constants (the lowering's precondition)
// and runs its test_data_set_0 through both paths. Returns false when the node is not float32.
bool check_model_case(const std::string& dir) {
  std::unique_ptr<Model> model = import_onnx_file(dir + "/model.onnx");
  Graph& graph = *model->graph;
  std::map<std::string, Tensor> data;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    std::string name;
    Tensor tensor = read_tensor_pb(cat(dir, "/test_data_set_0/input_", i, ".pb"), &name);
    data[name.empty() ? graph.inputs()[i]->name() : name] = tensor;
  }
  EXPECT_EQ(graph.nodes().size(), 1u) << dir;
  Node* node = graph.nodes().front().get();
  for (size_t index : {1, 2, 3, 7}) {
    Value* value = node->input(index);
    if (value && value->is_graph_input()) {
      graph.convert_input_to_constant(value, data.at(value->name()));
    }
  }
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < node->num_inputs(); ++i) {
    const Value* value = node->input(i);
    inputs.push_back(!value                 ? nullptr
                     : value->is_constant() ? value->constant().get()
                                            : &data.at(value->name()));
  }
  std::unique_ptr<ExecutionBlock> block;
  try {
    block = lower_recurrent(*node, cache_for("host"));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << dir << ": " << e.what();
    EXPECT_NE(inputs[0]->dtype(), DType::kFloat32) << dir << ": " << e.what();
    return false;
  }
  BlockIO io;
  io.inputs = inputs;
  block->run(io);
  SCOPED_TRACE(dir);
  expect_outputs_match(*node, io.outputs, evaluate_node(*node, inputs, nullptr));
  // And the stored outputs of the case (NumPy / ONNX's own expectations), node outputs in order.
  size_t stored = 0;
  for (size_t i = 0; i < node->num_outputs(); ++i) {
    if (!node->output(i)) continue;
    std::string path = cat(dir, "/test_data_set_0/output_", stored++, ".pb");
    if (!std::filesystem::exists(path)) break;
    testing::Comparison comparison =
        testing::compare_tensors(io.outputs[i], read_tensor_pb(path), kTolerance);
    EXPECT_TRUE(comparison.ok) << path << ": " << comparison.message;
  }
  return true;
}

TEST(LowerRecurrent, GeneratedRecurrentCases) {
  int lowered = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(RNNC_SOURCE_DIR) +
                                                               "/tests/data/recurrent")) {
    if (std::filesystem::exists(entry.path() / "model.onnx")) {
      lowered += check_model_case(entry.path().string());
    }
  }
  EXPECT_EQ(lowered, 17);  // all 19 but lstm_float16 and gru_float64
}

TEST(LowerRecurrent, OnnxBackendNodeCases) {
  const std::string root = "/usr/share/libonnx-testdata/data/node";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << root << " is not installed";
  int lowered = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    for (const char* prefix : {"test_lstm_", "test_gru_", "test_rnn_", "test_simple_rnn_"}) {
      if (name.rfind(prefix, 0) == 0) lowered += check_model_case(entry.path().string());
    }
  }
  EXPECT_EQ(lowered, 12);
}

}  // namespace
}  // namespace rnnc
