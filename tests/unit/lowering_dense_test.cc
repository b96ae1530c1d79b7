// Lowering of the non-recurrent compute ops to Halide (lowering/lower_group.h): every test builds
// a small graph, runs it through the reference evaluator, lowers its nodes to one Halide block and
// runs that on the very same inputs, and compares. One behaviour per test.
//
// Tolerances (float32 Halide code against the reference, which computes elementwise ops in float32
// with libm and accumulates dot products, Softmax sums and reductions in double):
//   - elementwise: rtol 1e-5, atol 1e-6. Halide's exp/log/erf are accurate to the last bits of the
//     mantissa, the tanh/softplus/expm1 formulas here to ~2e-7; a chain of a few ops stays within
//     tens of ulps (1 ulp = 6e-8 relative), and atol covers results near 0 (tanh of a tiny x).
//   - reductions of length K (MatMul, Gemm, Conv, ReduceSum, ...): rtol 1e-5 and atol
//     kSumAtol * K for operands in [-1, 1]. A float32 sum of K products reassociated by the tiling
//     (and contracted to FMAs) against the reference's double sum rounded once errs like a random
//     walk of K roundings of the partial sums, ~ u * K * rms(a * b) = 6e-8 * K / 3; measured here
//     4.4e-8 * K (K = 128), so 2e-7 * K leaves a margin of ~4 without hiding a wrong tap.
#include <Halide.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>

#include "graph_opt/pass.h"
#include "ir/op_schema.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "lowering/halide_block.h"
#include "lowering/halide_cache.h"
#include "lowering/layout.h"
#include "lowering/lower_group.h"
#include "lowering/schedule_table.h"
#include "tests/support/compare.h"
#include "tests/support/disassembly.h"
#include "tests/support/random.h"

namespace rnnc {
namespace {

using testing::random_tensor;
using testing::Tolerance;

constexpr Tolerance kElementwise = {1e-5, 1e-6};
constexpr double kSumAtol = 2e-7;
Tolerance summed(int64_t k) { return {1e-5, kSumAtol * static_cast<double>(k)}; }

// The kernel caches of this file's tests, in the test temp dir: ctest runs each test in its own
// process, and they share what any of them compiled (warm after the first run; the keys hold the
// generator's identity, so a changed lowering compiles anew).
std::string cache_directory() { return ::testing::TempDir() + "rnnc_lowering_dense_cache"; }

// The host target, or $RNNC_TARGET (RNNC_TARGET=avx2 runs every test for the generic target).
HalideCache& host_cache() {
  static HalideCache cache(cache_directory() + "/default", "");
  return cache;
}

HalideCache& avx2_cache() {
  static HalideCache cache(cache_directory() + "/avx2", "avx2");
  return cache;
}

Dim sym(const char* name) { return Dim::symbol(name); }

Tensor f32(std::vector<int64_t> shape, std::vector<float> values) {
  return Tensor::from_vector<float>(std::move(shape), values);
}

// A graph built by hand whose nodes all form one block. run() evaluates it with the reference
// evaluator and with the lowered block on the same inputs.
class Case {
 public:
  explicit Case(int opset = 17) : opset_(opset) {}

  Value* input(const std::string& name, Shape shape, DType dtype = DType::kFloat32) {
    TensorType type;
    type.dtype = dtype;
    type.shape = std::move(shape);
    return graph_.add_input(name, type);
  }
  Value* constant(const std::string& name, Tensor data) {
    return graph_.add_initializer(name, std::move(data));
  }
  Value* node(const std::string& op_type, const std::vector<Value*>& inputs,
              const std::map<std::string, Attribute>& attributes = {}) {
    std::string name = op_type + "_" + std::to_string(nodes_.size());
    Node* node = graph_.add_node(op_type, name, inputs, {name}, opset_);
    for (const auto& [attr_name, attribute] : attributes) node->set_attr(attr_name, attribute);
    nodes_.push_back(node);
    return node->output(0);
  }

  ExecutionBlock& lower(HalideCache& cache = host_cache()) {
    if (!block_) {
      finish();
      block_ = lower_nodes(std::vector<const Node*>(nodes_.begin(), nodes_.end()), cache);
    }
    return *block_;
  }

  Tensor reference(const std::map<std::string, Tensor>& inputs) {
    finish();
    return evaluate(graph_, inputs).at(0);
  }

  Tensor lowered(const std::map<std::string, Tensor>& inputs, HalideCache& cache = host_cache()) {
    ExecutionBlock& block = lower(cache);
    BlockIO io;
    for (const Value* value : block.inputs) io.inputs.push_back(&inputs.at(value->name()));
    block.run(io);
    EXPECT_EQ(io.outputs.size(), 1u);
    return io.outputs.at(0);
  }

  // Lowers, runs both, compares; returns the comparison's message on a mismatch.
  void expect_matches(const std::map<std::string, Tensor>& inputs, Tolerance tolerance,
                      HalideCache& cache = host_cache()) {
    Tensor expected = reference(inputs);
    Tensor actual = lowered(inputs, cache);
    testing::Comparison comparison = testing::compare_tensors(actual, expected, tolerance);
    EXPECT_TRUE(comparison.ok) << block_->kind() << ": " << comparison.message;
  }

  const std::vector<Node*>& nodes() const { return nodes_; }

 private:
  void finish() {
    if (finished_) return;
    finished_ = true;
    graph_.add_output(nodes_.back()->output(0));
    infer_graph(graph_);
  }

  int opset_;
  Graph graph_;
  std::vector<Node*> nodes_;
  bool finished_ = false;
  std::unique_ptr<ExecutionBlock> block_;
};

// The message of the rnnc::Error `action` raises, checking its kind.
std::string error_of(const std::function<void()>& action, ErrorKind kind) {
  try {
    action();
  } catch (const Error& e) {
    EXPECT_EQ(error_kind_name(e.kind()), std::string(error_kind_name(kind))) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error raised";
  return "";
}

// ---- layouts -----------------------------------------------------------------------------------

TEST(LoweringLayout, TiledPutsEachColumnPanelContiguouslyWithZeroPadding) {
  // B [K = 3, N = 5] tiled(d1, 2): [3 tiles][K][2], the last tile's second column zero.
  Tensor b = f32({3, 5}, {0, 1, 2, 3, 4, 10, 11, 12, 13, 14, 20, 21, 22, 23, 24});
  LayoutMap map({3, 5}, Layout{Layout::Kind::kTiled, 1, 2});
  EXPECT_EQ(map.physical_shape(), (std::vector<int64_t>{3, 3, 2}));
  Tensor physical = map.marshal(b);
  std::vector<float> values(physical.data<float>(), physical.data<float>() + physical.numel());
  EXPECT_EQ(values,
            (std::vector<float>{0, 1, 10, 11, 20, 21, 2, 3, 12, 13, 22, 23, 4, 0, 14, 0, 24, 0}));
  EXPECT_EQ(map.physical_offset({2, 3}), 1 * 6 + 2 * 2 + 1);
  EXPECT_EQ(map.to_string(), "tiled(d1, 2) [3, 5] -> [3, 3, 2]");
}

TEST(LoweringLayout, PermutedPaddedMovesTheDimInnermostAndPads) {
  // A transB Gemm weight [N = 3, K = 2] permuted_padded(d0, 4) is B^T [K][N padded to 4].
  Tensor b = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  LayoutMap map({3, 2}, Layout{Layout::Kind::kPermutedPadded, 0, 4});
  EXPECT_EQ(map.physical_shape(), (std::vector<int64_t>{2, 4}));
  Tensor physical = map.marshal(b);
  std::vector<float> values(physical.data<float>(), physical.data<float>() + physical.numel());
  EXPECT_EQ(values, (std::vector<float>{1, 3, 5, 0, 2, 4, 6, 0}));
}

TEST(LoweringLayout, TransposedGemmWeightsMarshalToTheSameTiledArray) {
  // [K, N] tiled(d1, 16) and its transpose [N, K] tiled(d0, 16): one physical array, so Gemm's
  // transB costs nothing.
  Tensor b = random_tensor({7, 37}, 7);
  Tensor bt(DType::kFloat32, {37, 7});
  for (int64_t k = 0; k < 7; ++k) {
    for (int64_t n = 0; n < 37; ++n) bt.data<float>()[n * 7 + k] = b.data<float>()[k * 37 + n];
  }
  Tensor direct = LayoutMap({7, 37}, Layout{Layout::Kind::kTiled, 1, 16}).marshal(b);
  Tensor transposed = LayoutMap({37, 7}, Layout{Layout::Kind::kTiled, 0, 16}).marshal(bt);
  EXPECT_TRUE(direct.bitwise_equal(transposed));
}

TEST(LoweringLayout, HalideCoordinatesAgreeWithTheOffsets) {
  LayoutMap map({4, 6, 5}, Layout{Layout::Kind::kTiled, 1, 4});
  const std::vector<int64_t>& physical = map.physical_shape();
  for (int64_t i : {0, 3}) {
    for (int64_t j : {0, 4, 5}) {
      for (int64_t k : {0, 4}) {
        // Halide indexes innermost first.
        std::vector<Halide::Expr> coords = map.physical_coords({Halide::Expr(static_cast<int>(k)),
                                                                Halide::Expr(static_cast<int>(j)),
                                                                Halide::Expr(static_cast<int>(i))});
        int64_t offset = 0;
        for (size_t d = coords.size(); d-- > 0;) {
          // as_const_int points into its Expr, which must outlive `value`.
          Halide::Expr simplified = Halide::Internal::simplify(coords[d]);
          const int64_t* value = Halide::Internal::as_const_int(simplified);
          ASSERT_NE(value, nullptr);
          offset = offset * physical[coords.size() - 1 - d] + *value;
        }
        EXPECT_EQ(offset, map.physical_offset({i, j, k})) << i << "," << j << "," << k;
      }
    }
  }
}

// ---- schedule table ----------------------------------------------------------------------------

// The AVX-512 row of the schedule tables.
const ArchTable& avx512_table() {
  return arch_table(Halide::Target("x86-64-linux-avx-avx2-avx512-fma-f16c-sse41"));
}

TEST(LoweringSchedule, GemmTileAndWeightLayoutFollowTheTargetAndN) {
  const ArchTable& avx512 = avx512_table();
  const ArchTable& avx2 = arch_table(Halide::Target("x86-64-linux-avx-avx2-fma-f16c-sse41"));
  EXPECT_EQ(avx512.lanes, 16);
  EXPECT_EQ(avx2.lanes, 8);
  GemmSchedule wide = choose_gemm_schedule(avx512, DType::kFloat32, 512, false);
  EXPECT_EQ(wide.to_string(), "gemm nr=32 mr=6 lanes=16 B tiled(d1, 32)");
  GemmSchedule head = choose_gemm_schedule(avx512, DType::kFloat32, 32, false);
  EXPECT_EQ(head.b_layout.to_string(), "permuted_padded(d1, 32)");
  GemmSchedule narrow = choose_gemm_schedule(avx512, DType::kFloat32, 5, true);
  EXPECT_EQ(narrow.to_string(), "gemm nr=16 mr=6 lanes=16 B permuted_padded(d0, 16)");
  EXPECT_EQ(choose_gemm_schedule(avx2, DType::kFloat32, 512, false).to_string(),
            "gemm nr=16 mr=6 lanes=8 B tiled(d1, 16)");
  EXPECT_NE(error_of([&] { choose_gemm_schedule(avx2, DType::kFloat64, 4, false); },
                     ErrorKind::kUnsupported)
                .find("float32 only"),
            std::string::npos);
}

// A constant B over half of L2 is walked in column panels of at most half of it, outermost.
TEST(LoweringSchedule, GemmWeightsOverHalfOfL2WalkColumnPanels) {
  constexpr int64_t kL2 = 1 << 20;
  // 512 x 256 floats (512 KiB): half of L2, rows outermost.
  EXPECT_EQ(gemm_panel_tiles(512, 256, 32, 4, kL2), 0);
  // 512 x 10000 floats: tiles of 512 x 32 floats (64 KiB), 8 of them per 512 KiB panel.
  EXPECT_EQ(gemm_panel_tiles(512, 10000, 32, 4, kL2), 8);
  // The same as int8: tiles of 16 KiB, 32 per panel; with 2 MiB of L2, 64.
  EXPECT_EQ(gemm_panel_tiles(512, 10000, 32, 1, kL2), 32);
  EXPECT_EQ(gemm_panel_tiles(512, 10000, 32, 1, 2 * kL2), 64);
  // A single tile over half of L2 still gets panels of one tile.
  EXPECT_EQ(gemm_panel_tiles(8192, 100, 32, 4, kL2), 1);
  GemmSchedule schedule = choose_gemm_schedule(avx512_table(), DType::kFloat32, 10000, false);
  schedule.panel_tiles = 8;
  EXPECT_EQ(schedule.to_string(), "gemm nr=32 mr=6 lanes=16 B tiled(d1, 32) panels of 8 tiles");
}

TEST(LoweringSchedule, ConvTileNoWiderThanAStaticOutput) {
  const ArchTable& avx512 = avx512_table();
  const DType f32 = DType::kFloat32;
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 128, 1, 3).to_string(),
            "conv channels mr=32 positions=6 lanes=16 W tiled(d0, 32)");
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 128, 1, 3, 2).to_string(),
            "conv channels mr=32 positions=2 lanes=16 W tiled(d0, 32)");
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 128, 1, 3, 100).to_string(),
            "conv channels mr=32 positions=6 lanes=16 W tiled(d0, 32)");
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 1, 1, 1).to_string(),
            "conv mr=1 vectors=2 lanes=16 unrolled-taps W native");
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 1, 1, 1, 1).to_string(),
            "conv mr=1 vectors=1 lanes=1 unrolled-taps W native");
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 3, 1, 3, 5).to_string(),
            "conv mr=3 vectors=1 lanes=8 unrolled-taps W tiled(d0, 3)");
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 3, 1, 3, 20).to_string(),
            "conv mr=3 vectors=1 lanes=16 unrolled-taps W tiled(d0, 3)");
}

// One vector of output channels leaves room for twice the positions: a static output of up to 12
// is one tile (Silero v4's 1x1 convs over 8 frames); two vectors keep the 6-position tiles.
TEST(LoweringSchedule, ConvWithOneChannelVectorTakesAShortOutputInOneTile) {
  const ArchTable& avx512 = avx512_table();
  const DType f32 = DType::kFloat32;
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 16, 1, 1, 8).to_string(),
            "conv channels mr=16 positions=8 lanes=16 W tiled(d0, 16)");
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 16, 1, 1, 12).to_string(),
            "conv channels mr=16 positions=12 lanes=16 W tiled(d0, 16)");
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 16, 1, 1, 13).to_string(),
            "conv channels mr=16 positions=6 lanes=16 W tiled(d0, 16)");
  EXPECT_EQ(choose_conv_schedule(avx512, f32, 64, 1, 1, 8).to_string(),
            "conv channels mr=32 positions=6 lanes=16 W tiled(d0, 32)");
}

// A grouped (depthwise) conv vectorizes positions: a vector of output channels would gather its
// input channels at every tap.
TEST(LoweringSchedule, GroupedConvVectorizesPositions) {
  const ArchTable& avx512 = avx512_table();
  EXPECT_EQ(choose_conv_schedule(avx512, DType::kFloat32, 258, 258, 5, 8).to_string(),
            "conv mr=4 vectors=1 lanes=8 unrolled-taps W tiled(d0, 4)");
}

// ---- MatMul ------------------------------------------------------------------------------------

TEST(LoweringMatMul, WeightsWithOddKAndN) {
  Case c;
  Value* a = c.input("a", {sym("seq"), 13});
  c.node("MatMul", {a, c.constant("w", random_tensor({13, 37}, 1))});
  c.expect_matches({{"a", random_tensor({7, 13}, 7)}}, summed(13));
  EXPECT_EQ(c.lower().kind(), "halide matmul [K=13,N=37]");
}

TEST(LoweringMatMul, SequenceAndBatchRowsMergeIntoOneTiledDim) {
  Case c;
  Value* x = c.input("x", {sym("seq"), sym("batch"), 128});
  c.node("MatMul", {x, c.constant("w", random_tensor({128, 512}, 2))});
  c.expect_matches({{"x", random_tensor({5, 3, 128}, 7)}}, summed(128));
  c.expect_matches({{"x", random_tensor({17, 1, 128}, 3)}}, summed(128));
}

// Runs a little longer than mr rows take two smaller tiles that compute at most one row more.
TEST(LoweringMatMul, PairedRowTilesComputeAtMostOneRowMore) {
  auto tiles_of = [](int mr) {
    std::vector<std::array<int, 3>> out;
    for (const PairedRowTile& t : paired_row_tiles(mr))
      out.push_back({t.min_rows, t.max_rows, t.tile});
    return out;
  };
  EXPECT_EQ(tiles_of(6), (std::vector<std::array<int, 3>>{{9, 10, 5}, {7, 8, 4}}));
  EXPECT_EQ(tiles_of(4), (std::vector<std::array<int, 3>>{{5, 6, 3}}));
  EXPECT_TRUE(tiles_of(3).empty());
  for (int mr = 1; mr <= 16; ++mr) {
    for (const PairedRowTile& t : paired_row_tiles(mr)) {
      EXPECT_LT(t.tile, mr);
      EXPECT_GT(t.min_rows, mr);
      EXPECT_LE(2 * t.tile - t.min_rows, 1);  // two tiles of t hold the run, one row to spare
      EXPECT_GE(2 * t.tile, t.max_rows);
    }
  }
}

// Every row count through two register tiles: one row, one tile of exactly 2 to mr - 1 rows,
// two tiles of 4 or 5 for 7 to 10 rows, whole tiles of mr, and tiles shifted inward onto rows
// already computed.
TEST(LoweringMatMul, EveryRowCountThroughTwoRegisterTiles) {
  Case c;
  Value* a = c.input("a", {sym("m"), 64});
  c.node("MatMul", {a, c.constant("w", random_tensor({64, 20}, 4))});
  for (int64_t rows = 1; rows <= 13; ++rows) {
    SCOPED_TRACE(rows);
    c.expect_matches({{"a", random_tensor({rows, 64}, 7)}}, summed(64));
  }
}

// A B of 1.5 MiB (over half of L2 on both host kinds) in column panels: the last panel partial
// (47 tiles of 32 columns, the last one ragged), for one row, a tile of a few and several tiles.
TEST(LoweringMatMul, WeightsInColumnPanels) {
  Case c;
  Value* a = c.input("a", {sym("m"), 256});
  c.node("MatMul", {a, c.constant("w", random_tensor({256, 1500}, 5))});
  for (int64_t rows : {1, 4, 17}) {
    SCOPED_TRACE(rows);
    c.expect_matches({{"a", random_tensor({rows, 256}, 8)}}, summed(256));
  }
}

TEST(LoweringMatMul, OneDimensionalOperands) {
  {
    Case c;  // [K] x [K, N] -> [N]
    c.node("MatMul", {c.input("a", {24}), c.constant("w", random_tensor({24, 9}, 7))});
    c.expect_matches({{"a", random_tensor({24}, 7)}}, summed(24));
  }
  {
    Case c;  // [M, K] x [K] -> [M]
    c.node("MatMul", {c.input("a", {sym("m"), 24}), c.constant("w", random_tensor({24}, 7))});
    c.expect_matches({{"a", random_tensor({3, 24}, 7)}}, summed(24));
  }
  {
    Case c;  // [K] x [K] -> []
    c.node("MatMul", {c.input("a", {24}), c.input("b", {24})});
    c.expect_matches({{"a", random_tensor({24}, 7)}, {"b", random_tensor({24}, 9)}}, summed(24));
  }
}

TEST(LoweringMatMul, BatchDimsBroadcast) {
  Case c;  // [2, 1, 3, 4] x [3, 4, 5] -> [2, 3, 3, 5], B at run time
  c.node("MatMul", {c.input("a", {2, 1, 3, 4}), c.input("b", {3, 4, 5})});
  c.expect_matches({{"a", random_tensor({2, 1, 3, 4}, 7)}, {"b", random_tensor({3, 4, 5}, 5)}},
                   summed(4));
}

TEST(LoweringMatMul, RunTimeBIsPackedLikeWeights) {
  Case c;
  c.node("MatMul", {c.input("a", {sym("m"), 20}), c.input("b", {20, sym("n")})});
  for (int64_t n : {1, 18, 40}) {
    SCOPED_TRACE(n);
    c.expect_matches({{"a", random_tensor({9, 20}, 7)}, {"b", random_tensor({20, n}, 6)}},
                     summed(20));
  }
}

TEST(LoweringMatMul, InnerDimensionMismatchAtRunTimeIsAnInputError) {
  Case c;
  c.node("MatMul", {c.input("a", {3, sym("k")}), c.input("b", {sym("k2"), 4})});
  c.lower();
  std::string message = error_of(
      [&] {
        c.lowered({{"a", random_tensor({3, 5}, 7)}, {"b", random_tensor({6, 4}, 7)}});
      },
      ErrorKind::kInvalidInput);
  EXPECT_EQ(message,
            "MatMul 'MatMul_0' (opset 17): inner dimensions differ: A is [3, 5], B is "
            "[6, 4]");
}

// ---- Gemm --------------------------------------------------------------------------------------

TEST(LoweringGemm, EveryTransposeCombinationWithAlphaAndBeta) {
  for (int trans_a : {0, 1}) {
    for (int trans_b : {0, 1}) {
      SCOPED_TRACE(::testing::Message() << "transA " << trans_a << " transB " << trans_b);
      Case c(13);
      std::vector<int64_t> a_shape =
          trans_a ? std::vector<int64_t>{20, 6} : std::vector<int64_t>{6, 20};
      std::vector<int64_t> b_shape =
          trans_b ? std::vector<int64_t>{11, 20} : std::vector<int64_t>{20, 11};
      Value* a = c.input("a", shape_from_values(a_shape));
      c.node(
          "Gemm",
          {a, c.constant("b", random_tensor(b_shape, 2)), c.constant("c", random_tensor({11}, 3))},
          {{"transA", Attribute::of_int(trans_a)},
           {"transB", Attribute::of_int(trans_b)},
           {"alpha", Attribute::of_float(0.5f)},
           {"beta", Attribute::of_float(2.0f)}});
      c.expect_matches({{"a", random_tensor(a_shape, 7)}}, summed(20));
    }
  }
}

TEST(LoweringGemm, EachFormOfCBroadcasts) {
  std::vector<std::vector<int64_t>> forms = {{}, {1}, {9}, {1, 9}, {5, 1}, {5, 9}};
  for (const std::vector<int64_t>& form : forms) {
    SCOPED_TRACE(shape_to_string(shape_from_values(form)));
    Case c(13);
    c.node("Gemm",
           {c.input("a", {5, 16}), c.constant("b", random_tensor({16, 9}, 2)),
            c.constant("c", random_tensor(form, 3))},
           {{"beta", Attribute::of_float(0.25f)}});
    c.expect_matches({{"a", random_tensor({5, 16}, 7)}}, summed(16));
  }
  Case c(13);  // C omitted (opset 11+)
  c.node("Gemm", {c.input("a", {5, 16}), c.constant("b", random_tensor({16, 9}, 2))});
  c.expect_matches({{"a", random_tensor({5, 16}, 7)}}, summed(16));
}

TEST(LoweringGemm, RunTimeCAndTransposedRunTimeB) {
  Case c(13);
  c.node("Gemm", {c.input("a", {7, 12}), c.input("b", {10, 12}), c.input("c", {7, 1})},
         {{"transB", Attribute::of_int(1)}, {"alpha", Attribute::of_float(-1.5f)}});
  c.expect_matches({{"a", random_tensor({7, 12}, 7)},
                    {"b", random_tensor({10, 12}, 4)},
                    {"c", random_tensor({7, 1}, 5)}},
                   summed(12));
}

TEST(LoweringGemm, CompilesAndMatchesForTheGenericAvx2Target) {
  Case c(13);
  c.node("Gemm", {c.input("a", {sym("m"), 128}), c.constant("b", random_tensor({128, 100}, 7)),
                  c.constant("c", random_tensor({100}, 3))});
  c.expect_matches({{"a", random_tensor({17, 128}, 7)}}, summed(128), avx2_cache());
}

// ---- elementwise groups ------------------------------------------------------------------------

struct UnaryCase {
  const char* op;
  float low, high;  // input range (positive for Log and Sqrt, away from 0 for Reciprocal)
  std::map<std::string, Attribute> attributes;
};

void PrintTo(const UnaryCase& param, std::ostream* out) { *out << param.op; }

class LoweringUnary : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(LoweringUnary, MatchesTheReferenceKernel) {
  const UnaryCase& param = GetParam();
  Case c;
  c.node(param.op, {c.input("x", {sym("seq"), 3, 37})}, param.attributes);
  Tensor x = random_tensor({5, 3, 37}, 7, param.low, param.high);
  x.data<float>()[0] = param.low * 40;  // saturating and overflowing regions too
  x.data<float>()[1] = param.high * 40;
  x.data<float>()[2] = param.low > 0 ? param.low : 1e-4f;  // tiny arguments
  c.expect_matches({{"x", x}}, kElementwise);
}

INSTANTIATE_TEST_SUITE_P(
    Ops, LoweringUnary,
    ::testing::Values(
        UnaryCase{"Relu", -3, 3, {}}, UnaryCase{"Sigmoid", -6, 6, {}}, UnaryCase{"Tanh", -4, 4, {}},
        UnaryCase{"Exp", -5, 2, {}}, UnaryCase{"Log", 0.01f, 50, {}}, UnaryCase{"Sqrt", 0, 9, {}},
        UnaryCase{"Neg", -3, 3, {}}, UnaryCase{"Abs", -3, 3, {}},
        UnaryCase{"Reciprocal", 0.5f, 4, {}},
        UnaryCase{"LeakyRelu", -3, 3, {{"alpha", Attribute::of_float(0.2f)}}},
        UnaryCase{"HardSigmoid",
                  -5,
                  5,
                  {{"alpha", Attribute::of_float(0.3f)}, {"beta", Attribute::of_float(0.4f)}}},
        UnaryCase{"Softplus", -20, 20, {}}, UnaryCase{"Erf", -3, 3, {}},
        UnaryCase{"Elu", -3, 3, {{"alpha", Attribute::of_float(0.7f)}}},
        UnaryCase{"Selu", -3, 3, {}}, UnaryCase{"Softsign", -3, 3, {}},
        UnaryCase{"HardSwish", -4, 4, {}}, UnaryCase{"Clip", -3, 3, {}}),
    [](const ::testing::TestParamInfo<UnaryCase>& info) { return std::string(info.param.op); });

TEST(LoweringElementwise, NaNPropagatesThroughSelectsAsInTheReference) {
  // Halide's fast-math would turn select(x < 0, 0, x) into max(x, 0) and drop the NaN.
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = f32({6}, {nan, -1, 2, nan, -3, 0.5f});
  Tensor y = f32({6}, {1, nan, -2, nan, 3, 0.25f});
  for (const char* op : {"Relu", "LeakyRelu", "Elu", "HardSigmoid", "Clip", "Sign"}) {
    SCOPED_TRACE(op);
    Case c(13);
    Value* in = c.input("x", {6});
    if (std::string(op) == "Clip") {
      c.node(op,
             {in, c.constant("lo", Tensor::scalar(-0.5f)), c.constant("hi", Tensor::scalar(1.f))});
    } else {
      c.node(op, {in});
    }
    c.expect_matches({{"x", x}}, kElementwise);
  }
  for (const char* op : {"Max", "Min"}) {
    SCOPED_TRACE(op);
    Case c(13);
    c.node(op, {c.input("x", {6}), c.input("y", {6})});
    c.expect_matches({{"x", x}, {"y", y}}, kElementwise);
  }
}

TEST(LoweringElementwise, ClipBoundsFromAttributesAndInputs) {
  {
    Case c(9);  // Clip-6: attributes, an absent one bounding nothing
    c.node("Clip", {c.input("x", {40})}, {{"min", Attribute::of_float(-0.5f)}});
    c.expect_matches({{"x", random_tensor({40}, 7)}}, kElementwise);
  }
  {
    Case c(13);  // Clip-13: a constant min (compiled in) and a run-time max
    c.node("Clip",
           {c.input("x", {40}), c.constant("lo", Tensor::scalar(-0.25f)), c.input("hi", {})});
    c.expect_matches({{"x", random_tensor({40}, 7)}, {"hi", Tensor::scalar(0.5f)}}, kElementwise);
  }
}

class LoweringBinary : public ::testing::TestWithParam<const char*> {};

TEST_P(LoweringBinary, BroadcastsBothWays) {
  Case c;  // [seq, 1, 8] op [3, 8] -> [seq, 3, 8]
  c.node(GetParam(), {c.input("a", {sym("seq"), 1, 8}), c.input("b", {3, 8})});
  bool pow = std::string(GetParam()) == "Pow";
  c.expect_matches({{"a", random_tensor({4, 1, 8}, 7, pow ? 0.1f : -2, 2)},
                    {"b", random_tensor({3, 8}, 11, 0.5f, 2)}},
                   kElementwise);
}

INSTANTIATE_TEST_SUITE_P(Ops, LoweringBinary,
                         ::testing::Values("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

TEST(LoweringElementwise, PowWithCompiledInExponents) {
  for (float exponent : {2.0f, 3.0f, 0.5f, -1.0f, 1.7f}) {
    SCOPED_TRACE(exponent);
    Case c;
    c.node("Pow", {c.input("x", {33}), c.constant("e", Tensor::scalar(exponent))});
    c.expect_matches({{"x", random_tensor({33}, 7, 0.1f, 3)}}, kElementwise);
  }
  Case c;  // an integer exponent tensor, negative bases
  c.node("Pow", {c.input("x", {6}),
                 c.constant("e", Tensor::from_vector<int64_t>({6}, {0, 1, 2, 3, -1, -2}))});
  c.expect_matches({{"x", f32({6}, {-1.5f, -2, 3, -0.5f, 4, -3})}}, kElementwise);
}

// Cast to float32 rounds int32 to nearest as the reference's static_cast does (beyond 2^24),
// int8 exactly, bools to 0 and 1: equal bit for bit. An int64 Cast stays on the reference kernel.
TEST(LoweringElementwise, CastToFloatFromIntegersAndBools) {
  const std::map<std::string, Attribute> to_float = {
      {"to", Attribute::of_int(static_cast<int64_t>(DType::kFloat32))}};
  Case c;  // float(i32) + float(mask) + float(i8): sums, which no FMA contracts
  Value* sum =
      c.node("Add", {c.node("Cast", {c.input("i32", {sym("n")}, DType::kInt32)}, to_float),
                     c.node("Cast", {c.input("mask", {sym("n")}, DType::kBool)}, to_float)});
  c.node("Add", {sum, c.node("Cast", {c.input("i8", {sym("n")}, DType::kInt8)}, to_float)});
  const int64_t n = 37;
  std::mt19937_64 rng(5);
  Tensor i32(DType::kInt32, {n}), mask(DType::kBool, {n}), i8(DType::kInt8, {n});
  for (int64_t i = 0; i < n; ++i) {
    i32.data<int32_t>()[i] = static_cast<int32_t>(rng() >> (i % 30));  // most beyond 2^24
    mask.data<bool>()[i] = rng() % 2 == 0;
    i8.data<int8_t>()[i] = static_cast<int8_t>(rng());
  }
  c.expect_matches({{"i32", i32}, {"mask", mask}, {"i8", i8}}, {0, 0});
  EXPECT_EQ(c.lower().kind(), "halide cast+cast+add+cast+add [n]");
  Case wide;
  wide.node("Cast", {wide.input("i64", {sym("n")}, DType::kInt64)}, to_float);
  EXPECT_EQ(error_of([&] { wide.lower(); }, ErrorKind::kUnsupported),
            "Cast 'Cast_0' (opset 17): not lowered to Halide");
}

TEST(LoweringElementwise, WhereBroadcastsThreeWays) {
  Case c;  // cond [4, 1], X [1, 6], Y a compiled-in scalar -> [4, 6]
  c.node("Where", {c.input("cond", {4, 1}, DType::kBool), c.input("x", {1, 6}),
                   c.constant("y", Tensor::scalar(-7.0f))});
  Tensor cond = Tensor::from_vector<bool>({4, 1}, {true, false, false, true});
  c.expect_matches({{"cond", cond}, {"x", random_tensor({1, 6}, 7)}}, kElementwise);
}

TEST(LoweringElementwise, SymbolicDimsBroadcastAtRunTime) {
  Case c;  // [a, 4] + [b, 4]: only the run time tells whether a or b is 1
  c.node("Add", {c.input("x", {sym("a"), 4}), c.input("y", {sym("b"), 4})});
  c.expect_matches({{"x", random_tensor({3, 4}, 7)}, {"y", random_tensor({3, 4}, 2)}},
                   kElementwise);
  c.expect_matches({{"x", random_tensor({3, 4}, 7)}, {"y", random_tensor({1, 4}, 2)}},
                   kElementwise);
  c.expect_matches({{"x", random_tensor({1, 4}, 7)}, {"y", random_tensor({5, 4}, 2)}},
                   kElementwise);
  std::string message = error_of(
      [&] {
        c.lowered({{"x", random_tensor({3, 4}, 7)}, {"y", random_tensor({2, 4}, 7)}});
      },
      ErrorKind::kInvalidInput);
  EXPECT_EQ(message, "Add 'Add_0' (opset 17): shapes [3, 4] and [2, 4] cannot be broadcast");
}

TEST(LoweringElementwise, FusedChainIsOneLoop) {
  Case c;  // the LSTM-style gate: sigmoid(x + bias) * z, then tanh
  Value* x = c.input("x", {sym("seq"), sym("batch"), 64});
  Value* added = c.node("Add", {x, c.constant("bias", random_tensor({64}, 7))});
  Value* gate = c.node("Sigmoid", {added});
  Value* scaled = c.node("Mul", {gate, c.input("z", {sym("seq"), sym("batch"), 64})});
  c.node("Tanh", {scaled});
  c.expect_matches(
      {{"x", random_tensor({6, 2, 64}, 7)}, {"z", random_tensor({6, 2, 64}, 3, -2, 2)}},
      kElementwise);
  ExecutionBlock& block = c.lower();
  EXPECT_EQ(block.kind(), "halide add+sigmoid+mul+tanh [seq, batch, 64]");
  EXPECT_EQ(block.nodes.size(), 4u);
  ASSERT_EQ(block.inputs.size(), 2u);  // the bias is held by the block
  EXPECT_EQ(block.inputs[0]->name(), "x");
}

TEST(LoweringElementwise, DiamondOfTwoBranches) {
  Case c;  // exp(t) + (-t): t read twice from outside
  Value* t = c.input("t", {sym("n")});
  c.node("Add", {c.node("Exp", {t}), c.node("Neg", {t})});
  c.expect_matches({{"t", random_tensor({19}, 7)}}, kElementwise);
}

// ---- MatMul / Gemm epilogues and the classifier head -------------------------------------------

TEST(LoweringEpilogue, MatMulBiasAndActivationRunInTheOutputStage) {
  Case c;
  Value* x = c.input("x", {sym("seq"), 1, 96});
  Value* product = c.node("MatMul", {x, c.constant("w", random_tensor({96, 70}, 7))});
  Value* biased = c.node("Add", {product, c.constant("b", random_tensor({70}, 2))});
  c.node("Tanh", {biased});
  c.expect_matches({{"x", random_tensor({11, 1, 96}, 7)}}, summed(96));
  EXPECT_EQ(c.lower().kind(), "halide matmul+add+tanh [K=96,N=70]");
}

TEST(LoweringEpilogue, EpilogueOperandThatVariesPerRowKeepsBatchDimsApart) {
  Case c;  // the residual [2, 3, 20] varies over both leading dims; the bias [3, 1] over one
  Value* x = c.input("x", {2, 3, 16});
  Value* product = c.node("MatMul", {x, c.constant("w", random_tensor({16, 20}, 7))});
  Value* sum = c.node("Add", {product, c.input("residual", {2, 3, 20})});
  c.node("Mul", {sum, c.constant("scale", random_tensor({3, 1}, 4))});
  c.expect_matches(
      {{"x", random_tensor({2, 3, 16}, 7)}, {"residual", random_tensor({2, 3, 20}, 5)}},
      summed(16));
}

TEST(LoweringEpilogue, ClassifierHeadMatMulAddLogSoftmax) {
  Case c;  // the LSTM acoustic model's head: [rows, 128] x [128, 32] + b, LogSoftmax over N
  Value* h = c.input("h", {sym("rows"), 128});
  Value* logits = c.node("MatMul", {h, c.constant("w", random_tensor({128, 32}, 7))});
  Value* biased = c.node("Add", {logits, c.constant("b", random_tensor({32}, 2))});
  c.node("LogSoftmax", {biased}, {{"axis", Attribute::of_int(-1)}});
  for (int64_t rows : {1, 2, 3, 4, 5, 17}) {
    SCOPED_TRACE(rows);
    c.expect_matches({{"h", random_tensor({rows, 128}, 7)}}, summed(128));
  }
  EXPECT_EQ(c.lower().kind(), "halide matmul+add+logsoftmax [K=128,N=32]");
}

TEST(LoweringEpilogue, GemmSoftmaxOverAnOddN) {
  Case c(13);
  Value* h = c.input("h", {sym("rows"), 40});
  c.node("Softmax", {c.node("Gemm",
                            {h, c.constant("w", random_tensor({21, 40}, 7)),
                             c.constant("b", random_tensor({21}, 2))},
                            {{"transB", Attribute::of_int(1)}})});
  c.expect_matches({{"h", random_tensor({8, 40}, 7, -3, 3)}}, summed(40));
}

// ---- Softmax / LogSoftmax alone ----------------------------------------------------------------

TEST(LoweringNormalizer, SoftmaxAndLogSoftmaxAlongTheLastAxis) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int64_t length : {5, 32, 1000}) {
      SCOPED_TRACE(::testing::Message() << op << " " << length);
      Case c;
      c.node(op, {c.input("x", {sym("seq"), 2, length})});
      c.expect_matches({{"x", random_tensor({3, 2, length}, 7, -8, 8)}}, kElementwise);
    }
  }
}

TEST(LoweringNormalizer, Opset11AxisOneOfAMatrixIsTheLastAxis) {
  Case c(11);
  c.node("LogSoftmax", {c.input("x", {sym("seq"), 30})}, {{"axis", Attribute::of_int(1)}});
  c.expect_matches({{"x", random_tensor({4, 30}, 7, -5, 5)}}, kElementwise);
}

TEST(LoweringNormalizer, ElementwisePrologueFeedsTheRows) {
  Case c;
  Value* x = c.input("x", {sym("seq"), 48});
  c.node("Softmax", {c.node("Mul", {x, c.constant("temperature", Tensor::scalar(0.5f))})});
  c.expect_matches({{"x", random_tensor({3, 48}, 7, -6, 6)}}, kElementwise);
}

TEST(LoweringNormalizer, OtherAxesAreUnsupported) {
  Case c;
  c.node("Softmax", {c.input("x", {3, 4})}, {{"axis", Attribute::of_int(0)}});
  EXPECT_EQ(error_of([&] { c.lower(); }, ErrorKind::kUnsupported),
            "Softmax 'Softmax_0' (opset 17): lowered along the last axis only (axis 0, rank 2)");
}

// ---- Conv --------------------------------------------------------------------------------------

TEST(LoweringConv, OneDimensionalWithGroupsDilationPaddingStride) {
  Case c;
  c.node("Conv",
         {c.input("x", {2, 4, sym("time")}), c.constant("w", random_tensor({6, 2, 3}, 7)),
          c.constant("b", random_tensor({6}, 2))},
         {{"group", Attribute::of_int(2)},
          {"dilations", Attribute::of_ints({2})},
          {"pads", Attribute::of_ints({1, 2})},
          {"strides", Attribute::of_ints({2})}});
  for (int64_t time : {19, 4}) {
    SCOPED_TRACE(time);
    c.expect_matches({{"x", random_tensor({2, 4, time}, 7)}}, summed(6));
  }
}

TEST(LoweringConv, TwoDimensionalWithStridesPadsDilationsAndRelu) {
  Case c;
  Value* y =
      c.node("Conv", {c.input("x", {1, 3, 9, 11}), c.constant("w", random_tensor({5, 3, 3, 2}, 7))},
             {{"strides", Attribute::of_ints({2, 1})},
              {"pads", Attribute::of_ints({1, 0, 1, 1})},
              {"dilations", Attribute::of_ints({1, 2})}});
  c.node("Relu", {y});
  c.expect_matches({{"x", random_tensor({1, 3, 9, 11}, 7)}}, summed(18));
  EXPECT_EQ(c.lower().kind(), "halide conv+relu [M=5,C=3,k=2x3]");
}

TEST(LoweringConv, DepthwiseOneChannelPerGroup) {
  Case c;
  c.node("Conv", {c.input("x", {1, 8, 30}), c.constant("w", random_tensor({8, 1, 5}, 7))},
         {{"group", Attribute::of_int(8)}, {"pads", Attribute::of_ints({2, 2})}});
  c.expect_matches({{"x", random_tensor({1, 8, 30}, 7)}}, summed(5));
}

TEST(LoweringConv, SameUpperPadsFromKnownInputSize) {
  Case c;
  c.node("Conv", {c.input("x", {1, 2, 6}), c.constant("w", random_tensor({3, 2, 2}, 7))},
         {{"auto_pad", Attribute::of_string("SAME_UPPER")},
          {"strides", Attribute::of_ints({2})},
          {"dilations", Attribute::of_ints({2})}});
  c.expect_matches({{"x", random_tensor({1, 2, 6}, 7)}}, summed(4));
}

TEST(LoweringConv, ChannelVectorizedStridedWithAChannelTail) {
  // 40 output channels (a vector or more: channels vectorized; 40 is not a multiple of the
  // channel tile), stride 3, and 4 or 23 output positions (a partial and several position tiles).
  Case c;
  c.node("Conv",
         {c.input("x", {2, 3, sym("time")}), c.constant("w", random_tensor({40, 3, 7}, 7)),
          c.constant("b", random_tensor({40}, 2))},
         {{"strides", Attribute::of_ints({3})}, {"pads", Attribute::of_ints({2, 1})}});
  for (int64_t time : {13, 70}) {
    SCOPED_TRACE(time);
    c.expect_matches({{"x", random_tensor({2, 3, time}, 7)}}, summed(21));
  }
  EXPECT_EQ(c.lower().kind(), "halide conv [M=40,C=3,k=7]");
}

TEST(LoweringConv, ChannelVectorizedGroupedAndTwoDimensional) {
  Case grouped;
  grouped.node(
      "Conv", {grouped.input("x", {1, 4, 11}), grouped.constant("w", random_tensor({32, 2, 3}, 7))},
      {{"group", Attribute::of_int(2)}, {"pads", Attribute::of_ints({1, 1})}});
  grouped.expect_matches({{"x", random_tensor({1, 4, 11}, 7)}}, summed(6));
  Case two_d;
  two_d.node("Conv",
             {two_d.input("x", {1, 3, 7, 9}), two_d.constant("w", random_tensor({24, 3, 3, 3}, 7))},
             {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}});
  two_d.expect_matches({{"x", random_tensor({1, 3, 7, 9}, 7)}}, summed(27));
}

// A statically known output width narrower than a tile (Silero's encoder tail and decoder: 1-4
// positions) narrows the tile to it: channels vectorized, positions = the width; positions
// vectorized (fewer channels than a vector), the narrowest vector that holds them. Widths 1 to 7
// with strides and pads, and a sigmoid epilogue over the one-position 1x1 decoder.
TEST(LoweringConv, StaticNarrowOutputsNarrowTheTile) {
  for (int64_t out_channels : {1, 3, 40}) {
    for (int64_t width : {1, 2, 3, 5, 7}) {
      SCOPED_TRACE(::testing::Message() << out_channels << " channels, " << width << " positions");
      const int64_t time = 2 * (width - 1) + 3 - 2;  // stride 2, kernel 3, pads 1 + 1
      Case c;
      Value* y = c.node(
          "Conv",
          {c.input("x", {1, 6, time}), c.constant("w", random_tensor({out_channels, 6, 3}, 7)),
           c.constant("b", random_tensor({out_channels}, 2))},
          {{"strides", Attribute::of_ints({2})}, {"pads", Attribute::of_ints({1, 1})}});
      c.node("Relu", {y});
      c.expect_matches({{"x", random_tensor({1, 6, time}, 7)}}, summed(18));
    }
  }
  Case decoder;
  decoder.node("Sigmoid",
               {decoder.node("Conv", {decoder.input("x", {1, 128, 1}),
                                      decoder.constant("w", random_tensor({1, 128, 1}, 7)),
                                      decoder.constant("b", random_tensor({1}, 2))})});
  decoder.expect_matches({{"x", random_tensor({1, 128, 1}, 7, -2, 2)}}, summed(128));
  EXPECT_EQ(decoder.lower().kind(), "halide conv+sigmoid [M=1,C=128,k=1]");
}

// A channel tile's weights are one contiguous vector per tap in the tiled layout: the compiled
// loop must load them as such. (With the output's channel extent left to run time, Halide shifts
// the last channel tile inward, its first channel is not known to be a multiple of the tile, and
// every weight load becomes a 16-lane gather, several times slower.)
TEST(LoweringConv, ChannelVectorizedWeightsAreDenseLoadsNotGathers) {
  HalideCache cache(cache_directory() + "/objects", "");
  cache.set_keep_objects(true);
  Case c;
  c.node("Conv",
         {c.input("x", {1, 129, sym("time")}), c.constant("w", random_tensor({128, 129, 3}, 7)),
          c.constant("b", random_tensor({128}, 7))},
         {{"pads", Attribute::of_ints({1, 1})}});
  c.expect_matches({{"x", random_tensor({1, 129, 4}, 7)}}, summed(387), cache);
  auto* block = dynamic_cast<HalideBlock*>(&c.lower(cache));
  ASSERT_TRUE(block);
  ASSERT_FALSE(block->pipeline_.object_path.empty());
  const std::string text = testing::disassemble(block->pipeline_.object_path);
  ASSERT_NE(text.find("vfmadd"), std::string::npos) << "no FMA in the listing: wrong object?";
  EXPECT_FALSE(testing::gathers_data(text)) << block->kind() << " gathers";
}

// ---- reductions --------------------------------------------------------------------------------

TEST(LoweringReduce, MeanOverTheLastAxisKeepsDims) {
  Case c(13);
  c.node("ReduceMean", {c.input("x", {sym("seq"), 3, 100})}, {{"axes", Attribute::of_ints({-1})}});
  c.expect_matches({{"x", random_tensor({4, 3, 100}, 7)}}, summed(100));
}

TEST(LoweringReduce, SumOverInnerAndOuterAxesWithoutKeepdims) {
  Case c(13);  // opset 13: axes as a constant input
  c.node("ReduceSum",
         {c.input("x", {5, sym("n"), 21}),
          c.constant("axes", Tensor::from_vector<int64_t>({2}, {0, 2}))},
         {{"keepdims", Attribute::of_int(0)}});
  c.expect_matches({{"x", random_tensor({5, 7, 21}, 7)}}, summed(105));
}

TEST(LoweringReduce, MaxOverAnOuterAxisVectorizesTheKeptOne) {
  Case c(13);
  c.node("ReduceMax", {c.input("x", {sym("seq"), 6, 50})}, {{"axes", Attribute::of_ints({1})}});
  c.expect_matches({{"x", random_tensor({3, 6, 50}, 7)}}, kElementwise);
  c.expect_matches({{"x", random_tensor({2, 6, 50}, 9)}}, kElementwise);
}

TEST(LoweringReduce, EveryAxisWhenAxesAreAbsent) {
  Case c(13);
  c.node("ReduceSum", {c.input("x", {sym("seq"), 9})});
  c.expect_matches({{"x", random_tensor({13, 9}, 7)}}, summed(117));
}

// ---- graph_opt's fusion groups -----------------------------------------------------------------

TEST(LoweringFusionGroups, EveryGroupTheFusionPassMarksLowersAndMatches) {
  const PassInfo* pass = find_pass("fusion_groups");
  if (!pass) GTEST_SKIP() << "the fusion_groups pass is not registered in this build";
  std::unique_ptr<Model> model = parse_model_text(R"(
model opset=14
graph main(%x: f32[seq, 4], %w: f32[4, 4], %bias: f32[4], %z: f32[seq, 4]) {
  %m = MatMul 'project' (%x, %w)
  %b = Add 'add_bias' (%m, %bias)
  %t = Tanh 'activation' (%b)
  %e = Exp 'left' (%t)
  %n = Neg 'right' (%t)
  %d = Add 'join' (%e, %n)
  %s = Sigmoid 'after_output' (%d)
  %u = Mul 'scale' (%s, %z)
  return %d, %u
}
)",
                                                  "fusion.ir");
  std::map<std::string, Tensor> inputs = {{"x", random_tensor({5, 4}, 7)},
                                          {"w", random_tensor({4, 4}, 2)},
                                          {"bias", random_tensor({4}, 3)},
                                          {"z", random_tensor({5, 4}, 4)}};
  std::vector<Tensor> expected = evaluate(*model->graph, inputs);
  PassStats stats;
  pass->run(*model, PassContext{}, stats);
  const Graph& graph = *model->graph;

  // Each group runs as one lowered block at its last node; every other node on its reference
  // kernel.
  std::map<int64_t, std::vector<const Node*>> groups;
  for (const auto& node : graph.nodes()) {
    if (const Attribute* group = node->find_attr("rnnc.fusion_group")) {
      groups[group->i].push_back(node.get());
    }
  }
  ASSERT_EQ(groups.size(), 3u);
  std::map<const Value*, Tensor> values;
  for (const Value* input : graph.inputs()) values[input] = inputs.at(input->name());
  std::map<const Node*, std::unique_ptr<ExecutionBlock>> block_at_sink;
  for (auto& [id, members] : groups) {
    block_at_sink[members.back()] = lower_nodes(members, host_cache());
  }
  for (const auto& node : graph.nodes()) {
    auto block = block_at_sink.find(node.get());
    if (block != block_at_sink.end()) {
      BlockIO io;
      for (const Value* value : block->second->inputs) io.inputs.push_back(&values.at(value));
      block->second->run(io);
      values[node->output(0)] = io.outputs.at(0);
    } else if (!node->find_attr("rnnc.fusion_group")) {
      std::vector<const Tensor*> node_inputs;
      for (const Value* input : node->inputs()) node_inputs.push_back(&values.at(input));
      values[node->output(0)] = evaluate_node(*node, node_inputs, nullptr).at(0);
    }
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    testing::Comparison comparison =
        testing::compare_tensors(values.at(graph.outputs()[i]), expected[i], summed(4));
    EXPECT_TRUE(comparison.ok) << graph.outputs()[i]->name() << ": " << comparison.message;
  }
  EXPECT_EQ(block_at_sink.at(groups.at(0).back())->kind(), "halide matmul+add+tanh [K=4,N=4]");
}

// ---- what falls back ---------------------------------------------------------------------------

// An ungrouped Conv without pads over whole tiles of a static output reads its input in place:
// no padded copy, so no memset call per channel row (Silero's 1x1 decoder conv). Partial tiles
// and run-time widths keep the copy, whose zeros the tile's extra positions read: all agree
// with the reference.
TEST(LoweringConv, UnpaddedWholeTilesReadTheInputInPlace) {
  HalideCache cache(cache_directory() + "/unpadded", "");
  cache.set_keep_objects(true);
  Case decoder;
  decoder.node("Conv", {decoder.input("x", {1, 128, 1}),
                        decoder.constant("w", random_tensor({1, 128, 1}, 7)),
                        decoder.constant("b", random_tensor({1}, 2))});
  decoder.expect_matches({{"x", random_tensor({1, 128, 1}, 7)}}, summed(128), cache);
  auto* block = dynamic_cast<HalideBlock*>(&decoder.lower(cache));
  ASSERT_TRUE(block);
  const std::string text = testing::disassemble(block->pipeline_.object_path);
  ASSERT_NE(text.find("vfmadd"), std::string::npos) << "no FMA in the listing: wrong object?";
  EXPECT_EQ(text.find("memset"), std::string::npos) << block->kind() << " zeroes a padded copy";
  for (const bool symbolic : {false, true}) {
    for (int64_t time : {37, 40}) {
      SCOPED_TRACE(::testing::Message() << time << (symbolic ? " samples, run-time" : " samples"));
      Case c;
      c.node("Conv", {c.input("x", {1, 8, symbolic ? sym("time") : Dim(time)}),
                      c.constant("w", random_tensor({24, 8, 3}, 7))});
      c.expect_matches({{"x", random_tensor({1, 8, time}, 7)}}, summed(24));
    }
  }
}

// ---- Conv with a DFT basis (lower_dft_conv.h) --------------------------------------------------

// The weights of an STFT written as a Conv: B = N / 2 + 1 rows w[n] cos(2 pi m n / N), then B rows
// -w[n] sin(2 pi m n / N), as Silero VAD exports it.
Tensor dft_basis(const std::vector<double>& window) {
  const int64_t n = static_cast<int64_t>(window.size()), bins = n / 2 + 1;
  Tensor w(DType::kFloat32, {2 * bins, 1, n});
  for (int64_t m = 0; m < bins; ++m) {
    for (int64_t k = 0; k < n; ++k) {
      const double phase = 2 * M_PI * static_cast<double>(m * k % n) / static_cast<double>(n);
      w.data<float>()[m * n + k] =
          static_cast<float>(window[static_cast<size_t>(k)] * std::cos(phase));
      w.data<float>()[(bins + m) * n + k] =
          static_cast<float>(-window[static_cast<size_t>(k)] * std::sin(phase));
    }
  }
  return w;
}

std::vector<double> hann(int64_t n) {
  std::vector<double> window;
  for (int64_t k = 0; k < n; ++k) window.push_back(0.5 - 0.5 * std::cos(2 * M_PI * k / n));
  return window;
}

// Tolerance: the two short DFTs sum each bin in a different order than the direct product (and
// over the exact basis, which the float weights round by 6e-8 relative), so the result differs
// like two float sums of N terms: summed(N), as the direct convolution's own check.
TEST(LoweringDftConv, AWindowedDftBasisRunsAsTwoShortTransforms) {
  struct Config {
    std::vector<double> window;
    int64_t hop;
    std::vector<int64_t> lengths;
  };
  std::vector<double> random_window;
  std::mt19937 generator(5);
  for (int k = 0; k < 48; ++k)
    random_window.push_back(std::uniform_real_distribution<>(0, 1)(generator));
  const std::vector<Config> configs = {
      {hann(256), 128, {640, 256, 700}},              // Silero's: 16 x 16, 4 frames
      {std::vector<double>(64, 1.0), 16, {64, 129}},  // a rectangular window
      {random_window, 48, {96, 150}},                 // N = 48: factors 16 x 3 or 8 x 6
      {hann(400), 160, {400, 1000}},                  // 400 samples: n1 25 x n2 16 (AVX2: 50 x 8)
  };
  for (HalideCache* cache : {&host_cache(), &avx2_cache()}) {
    for (const Config& config : configs) {
      const int64_t n = static_cast<int64_t>(config.window.size());
      SCOPED_TRACE(::testing::Message() << "N=" << n << " on " << cache->target().to_string());
      Case c;
      c.node("Conv", {c.input("x", {2, 1, sym("time")}), c.constant("w", dft_basis(config.window))},
             {{"strides", Attribute::of_ints({config.hop})}});
      EXPECT_EQ(c.lower(*cache).kind().rfind("halide dft conv [N=" + std::to_string(n), 0), 0u)
          << c.lower(*cache).kind();
      for (int64_t length : config.lengths) {
        SCOPED_TRACE(length);
        c.expect_matches({{"x", random_tensor({2, 1, length}, 7)}}, summed(n), *cache);
      }
    }
  }
}

// Frame lengths whose factors vectorize differently: one odd vector (18 = 2 x 9), a vector of 2
// (62 = 31 x 2), whole vectors (100, 512), the smallest matched (16).
TEST(LoweringDftConv, EveryFactorizationOfTheFrameLength) {
  for (HalideCache* cache : {&host_cache(), &avx2_cache()}) {
    for (int64_t n : {16, 18, 62, 100, 512}) {
      SCOPED_TRACE(::testing::Message() << "N=" << n << " on " << cache->target().to_string());
      Case c;
      c.node("Conv", {c.input("x", {1, 1, 3 * n}), c.constant("w", dft_basis(hann(n)))},
             {{"strides", Attribute::of_ints({n / 2})}});
      EXPECT_EQ(c.lower(*cache).kind().rfind("halide dft conv", 0), 0u) << c.lower(*cache).kind();
      c.expect_matches({{"x", random_tensor({1, 1, 3 * n}, 7)}}, summed(n), *cache);
    }
  }
}

TEST(LoweringDftConv, AnythingElseRunsAsTheDirectConvolution) {
  auto kind_of = [](Tensor w, const std::map<std::string, Attribute>& attributes, bool bias) {
    Case c;
    std::vector<Value*> inputs = {c.input("x", {1, 1, 300}), c.constant("w", w)};
    if (bias) inputs.push_back(c.constant("b", random_tensor({w.dim(0)}, 2)));
    c.node("Conv", inputs, attributes);
    c.expect_matches({{"x", random_tensor({1, 1, 300}, 7)}}, summed(w.dim(2)));
    return c.lower().kind();
  };
  const std::map<std::string, Attribute> hop = {{"strides", Attribute::of_ints({64})}};
  const Tensor basis = dft_basis(hann(64));
  EXPECT_EQ(kind_of(basis, hop, false).rfind("halide dft conv", 0), 0u);
  Tensor off = basis.clone();
  off.data<float>()[5 * 64 + 7] += 1e-4f;  // one weight off the basis by 1e-4 of the largest
  EXPECT_EQ(kind_of(off, hop, false).rfind("halide conv", 0), 0u);
  EXPECT_EQ(kind_of(basis, hop, true).rfind("halide conv", 0), 0u);  // a bias
  EXPECT_EQ(
      kind_of(basis, {{"strides", Attribute::of_ints({64})}, {"pads", Attribute::of_ints({2, 2})}},
              false)
          .rfind("halide conv", 0),
      0u);
  EXPECT_EQ(kind_of(random_tensor({66, 1, 64}, 3), hop, false).rfind("halide conv", 0), 0u);
}

// ---- ConvTranspose -----------------------------------------------------------------------------
// Tolerance summed(C/group * taps): each output sums at most that many products (the taps that
// fall between input positions add exact zeros, which round nothing).

TEST(LoweringConvTranspose, OneDimensionalWithGroupsStrideDilationPadsAndOutputPadding) {
  Case c;
  c.node("ConvTranspose",
         {c.input("x", {2, 4, sym("time")}), c.constant("w", random_tensor({4, 3, 3}, 7)),
          c.constant("b", random_tensor({6}, 2))},
         {{"group", Attribute::of_int(2)},
          {"strides", Attribute::of_ints({2})},
          {"dilations", Attribute::of_ints({2})},
          {"pads", Attribute::of_ints({1, 2})},
          {"output_padding", Attribute::of_ints({1})}});
  for (int64_t time : {9, 1}) {
    SCOPED_TRACE(time);
    c.expect_matches({{"x", random_tensor({2, 4, time}, 7)}}, summed(6));
  }
  EXPECT_EQ(c.lower().kind(), "halide convtranspose [M=6,C=4,k=3,s=2]");
}

TEST(LoweringConvTranspose, StrideLargerThanTheKernelLeavesBiasOnlyPositions) {
  // Stride 3, kernel 2: every third output position is reached by no tap and holds the bias.
  Case c;
  c.node("ConvTranspose",
         {c.input("x", {1, 3, 5}), c.constant("w", random_tensor({3, 2, 2}, 7)),
          c.constant("b", random_tensor({2}, 2))},
         {{"strides", Attribute::of_ints({3})}});
  c.expect_matches({{"x", random_tensor({1, 3, 5}, 7)}}, summed(3));
}

TEST(LoweringConvTranspose, TwoDimensionalWithOutputPaddingAndReluEpilogue) {
  Case c;
  Value* y = c.node("ConvTranspose",
                    {c.input("x", {1, 3, 4, 5}), c.constant("w", random_tensor({3, 5, 3, 2}, 7)),
                     c.constant("b", random_tensor({5}, 2))},
                    {{"strides", Attribute::of_ints({2, 3})},
                     {"pads", Attribute::of_ints({1, 0, 0, 1})},
                     {"dilations", Attribute::of_ints({1, 2})},
                     {"output_padding", Attribute::of_ints({1, 2})}});
  c.node("Relu", {y});
  c.expect_matches({{"x", random_tensor({1, 3, 4, 5}, 7)}}, summed(18));
  EXPECT_EQ(c.lower().kind(), "halide convtranspose+relu [M=5,C=3,k=3x2,s=2x3]");
}

TEST(LoweringConvTranspose, ChannelVectorizedWithAChannelTailAndASigmoidEpilogue) {
  // 20 output channels: channels vectorized, with a partial channel tile; a decoder's x2
  // upsampling.
  Case c;
  Value* y =
      c.node("ConvTranspose",
             {c.input("x", {2, 8, sym("time")}), c.constant("w", random_tensor({8, 20, 4}, 7)),
              c.constant("b", random_tensor({20}, 2))},
             {{"strides", Attribute::of_ints({2})}, {"pads", Attribute::of_ints({1, 1})}});
  c.node("Sigmoid", {y});
  for (int64_t time : {3, 21}) {
    SCOPED_TRACE(time);
    c.expect_matches({{"x", random_tensor({2, 8, time}, 7)}}, summed(32));
  }
}

TEST(LoweringConvTranspose, DepthwiseTwoDimensional) {
  Case c;
  c.node("ConvTranspose",
         {c.input("x", {1, 6, 3, 4}), c.constant("w", random_tensor({6, 1, 2, 2}, 7))},
         {{"group", Attribute::of_int(6)}, {"strides", Attribute::of_ints({2, 2})}});
  c.expect_matches({{"x", random_tensor({1, 6, 3, 4}, 7)}}, summed(4));
}

TEST(LoweringConvTranspose, OutputShapeAndAutoPadFromAStaticInputSize) {
  // output_shape larger than the full output (negative total padding: positions past every tap),
  // and SAME_UPPER / SAME_LOWER with an odd total padding (the larger part at the end for UPPER).
  Case shaped;
  shaped.node("ConvTranspose",
              {shaped.input("x", {1, 2, 4}), shaped.constant("w", random_tensor({2, 3, 3}, 7))},
              {{"strides", Attribute::of_ints({2})}, {"output_shape", Attribute::of_ints({11})}});
  shaped.expect_matches({{"x", random_tensor({1, 2, 4}, 7)}}, summed(6));
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    SCOPED_TRACE(mode);
    Case same;
    same.node("ConvTranspose",
              {same.input("x", {1, 2, 3, 5}), same.constant("w", random_tensor({2, 2, 3, 2}, 7))},
              {{"strides", Attribute::of_ints({2, 2})}, {"auto_pad", Attribute::of_string(mode)}});
    same.expect_matches({{"x", random_tensor({1, 2, 3, 5}, 7)}}, summed(12));
  }
}

TEST(LoweringConvTranspose, CompilesAndMatchesForTheGenericAvx2Target) {
  Case c;
  Value* y =
      c.node("ConvTranspose",
             {c.input("x", {1, 4, sym("time")}), c.constant("w", random_tensor({4, 17, 3}, 7)),
              c.constant("b", random_tensor({17}, 2))},
             {{"strides", Attribute::of_ints({2})}, {"output_padding", Attribute::of_ints({1})}});
  c.node("LeakyRelu", {y});
  c.expect_matches({{"x", random_tensor({1, 4, 6}, 7)}}, summed(12), avx2_cache());
}

// As Conv's: a channel tile's flipped weights are one dense vector load per tap, and the strided
// scatter into U is scalar stores, not gathers.
TEST(LoweringConvTranspose, ChannelVectorizedWeightsAreDenseLoadsNotGathers) {
  HalideCache cache(cache_directory() + "/objects", "");
  cache.set_keep_objects(true);
  Case c;
  c.node("ConvTranspose",
         {c.input("x", {1, 64, sym("time")}), c.constant("w", random_tensor({64, 32, 4}, 7)),
          c.constant("b", random_tensor({32}, 7))},
         {{"strides", Attribute::of_ints({2})}, {"pads", Attribute::of_ints({1, 1})}});
  c.expect_matches({{"x", random_tensor({1, 64, 5}, 7)}}, summed(128), cache);
  auto* block = dynamic_cast<HalideBlock*>(&c.lower(cache));
  ASSERT_TRUE(block);
  ASSERT_FALSE(block->pipeline_.object_path.empty());
  const std::string text = testing::disassemble(block->pipeline_.object_path);
  ASSERT_NE(text.find("vfmadd"), std::string::npos) << "no FMA in the listing: wrong object?";
  EXPECT_FALSE(testing::gathers_data(text)) << block->kind() << " gathers";
}

TEST(LoweringConvTranspose, PadsThatDependOnARunTimeSizeAreUnsupported) {
  Case c;
  c.node("ConvTranspose",
         {c.input("x", {1, 2, sym("time")}), c.constant("w", random_tensor({2, 2, 3}, 7))},
         {{"strides", Attribute::of_ints({2})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}});
  EXPECT_EQ(error_of([&] { c.lower(); }, ErrorKind::kUnsupported),
            "ConvTranspose 'ConvTranspose_0' (opset 17): auto_pad SAME_UPPER on a run-time input "
            "size");
}

TEST(LoweringConvTranspose, RunTimeWeightsAreUnsupported) {
  Case c;
  c.node("ConvTranspose", {c.input("x", {1, 2, 5}), c.input("w", {2, 2, 3})});
  EXPECT_EQ(error_of([&] { c.lower(); }, ErrorKind::kUnsupported),
            "ConvTranspose 'ConvTranspose_0' (opset 17): weights computed at run time");
}

// ---- CumSum ------------------------------------------------------------------------------------
// float32: a running float32 sum of L terms against the reference's double sum rounded once,
// summed(L). Integers: exact (both wrap modulo 2^bits).

Value* cumsum(Case& c, Value* x, int64_t axis, bool exclusive, bool reverse) {
  return c.node(
      "CumSum", {x, c.constant(cat("axis", c.nodes().size()), Tensor::scalar<int64_t>(axis))},
      {{"exclusive", Attribute::of_int(exclusive)}, {"reverse", Attribute::of_int(reverse)}});
}

TEST(LoweringCumSum, EveryExclusiveAndReverseCombinationAlongAMiddleAxis) {
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "exclusive " << exclusive << " reverse " << reverse);
      Case c(14);
      cumsum(c, c.input("x", {3, sym("length"), 21}), 1, exclusive, reverse);
      for (int64_t length : {13, 1}) {
        SCOPED_TRACE(length);
        c.expect_matches({{"x", random_tensor({3, length, 21}, 7)}}, summed(length));
      }
    }
  }
}

TEST(LoweringCumSum, LastAndNegativeAxes) {
  Case last(14);
  cumsum(last, last.input("x", {4, 9}), -1, true, true);
  last.expect_matches({{"x", random_tensor({4, 9}, 7)}}, summed(9));
  EXPECT_EQ(last.lower().kind(), "halide cumsum f32 axis 1 exclusive reverse [4, 9]");
  Case first(14);
  cumsum(first, first.input("x", {sym("length"), 2, 3}), -3, false, true);
  first.expect_matches({{"x", random_tensor({10, 2, 3}, 7)}}, summed(10));
}

TEST(LoweringCumSum, IntegersWrapAsTheReference) {
  std::mt19937 rng(3);
  for (DType dtype : {DType::kInt32, DType::kInt64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Case c(14);
    cumsum(c, c.input("x", {5, 37}, dtype), 1, true, false);
    Tensor x = random_tensor(dtype, {5, 37}, rng);
    // Near the top of the range, so the sums wrap.
    if (dtype == DType::kInt32) x.data<int32_t>()[3] = INT32_MAX - 5;
    if (dtype == DType::kInt64) x.data<int64_t>()[3] = INT64_MAX - 5;
    c.expect_matches({{"x", x}}, {0, 0});
  }
}

TEST(LoweringCumSum, AnAxisComputedAtRunTimeIsUnsupported) {
  Case c(14);
  c.node("CumSum", {c.input("x", {4, 3}), c.input("axis", {}, DType::kInt64)});
  EXPECT_EQ(error_of([&] { c.lower(); }, ErrorKind::kUnsupported),
            "CumSum 'CumSum_0' (opset 14): an axis computed at run time");
}

// ---- DFT and STFT ------------------------------------------------------------------------------
// A GEMM of K samples against the transform matrix, |T| <= 1 (times the window): summed(K).

Value* int_constant(Case& c, const std::string& name, int64_t value) {
  return c.constant(name, Tensor::scalar<int64_t>(value));
}

TEST(LoweringStft, HannWindowedFramesReadInPlaceWithAnOddFrameLength) {
  // frame_length 25 (odd: bins 13), step 10: frames overlap; 1 to 5 frames (one row tile of
  // exactly that many) and 7 (a whole tile and one shifted inward).
  std::vector<float> hann;
  for (int n = 0; n < 25; ++n)
    hann.push_back(static_cast<float>(0.5 - 0.5 * std::cos(2 * M_PI * n / 25)));
  Case c;
  c.node("STFT", {c.input("signal", {2, sym("samples"), 1}), int_constant(c, "step", 10),
                  c.constant("window", f32({25}, hann))});
  for (int64_t samples : {25, 35, 45, 55, 65, 94}) {
    SCOPED_TRACE(samples);
    c.expect_matches({{"signal", random_tensor({2, samples, 1}, 7)}}, summed(25));
  }
  EXPECT_EQ(c.lower().kind(), "halide stft [N=25,bins=13,step=10]");
}

TEST(LoweringStft, TwoSidedWithFrameLengthAndNoWindow) {
  Case c;
  c.node("STFT",
         {c.input("signal", {1, 40, 1}), int_constant(c, "step", 16), nullptr,
          int_constant(c, "frame_length", 16)},
         {{"onesided", Attribute::of_int(0)}});
  c.expect_matches({{"signal", random_tensor({1, 40, 1}, 7)}}, summed(16));
}

TEST(LoweringDft, OnesidedOddLengthZeroPaddedAndCut) {
  // dft_length 9 (odd) over 6 samples (zero padding) and over 12 (cut); rows from two dims.
  for (int64_t length : {6, 12}) {
    SCOPED_TRACE(length);
    Case c;
    c.node("DFT", {c.input("x", {sym("batch"), 3, length, 1}), int_constant(c, "n", 9)},
           {{"onesided", Attribute::of_int(1)}, {"axis", Attribute::of_int(2)}});
    c.expect_matches({{"x", random_tensor({2, 3, length, 1}, 7)}}, summed(9));
  }
}

TEST(LoweringDft, InverseOverTheWholeAxis) {
  Case c(20);
  c.node("DFT", {c.input("x", {5, 16, 1})}, {{"inverse", Attribute::of_int(1)}});
  c.expect_matches({{"x", random_tensor({5, 16, 1}, 7)}}, summed(16));
  EXPECT_EQ(c.lower().kind(), "halide dft inverse [N=16,bins=16]");
}

TEST(LoweringDft, CompilesAndMatchesForTheGenericAvx2Target) {
  Case c;
  c.node("STFT", {c.input("signal", {1, 100, 1}), int_constant(c, "step", 8), nullptr,
                  int_constant(c, "frame_length", 32)});
  c.expect_matches({{"signal", random_tensor({1, 100, 1}, 7)}}, summed(32), avx2_cache());
}

TEST(LoweringDft, ComplexSignalsAndOtherAxesAreUnsupported) {
  Case complex;
  complex.node("DFT", {complex.input("x", {4, 8, 2})});
  EXPECT_EQ(error_of([&] { complex.lower(); }, ErrorKind::kUnsupported),
            "DFT 'DFT_0' (opset 17): lowered for real signals (last dim 1) only");
  Case axis;
  axis.node("DFT", {axis.input("x", {4, 8, 3, 1})}, {{"axis", Attribute::of_int(1)}});
  EXPECT_EQ(error_of([&] { axis.lower(); }, ErrorKind::kUnsupported),
            "DFT 'DFT_0' (opset 17): lowered for the axis before the last only");
}

// ---- Resize and Upsample ------------------------------------------------------------------------
// Linear: at most four weight products of values in [-1, 1] summed in float32 against the
// reference's double sum: rtol 1e-5, atol 1e-6 (kElementwise); cubic and antialiased filters sum
// more, with weights of both signs: atol 4e-6. Nearest copies: exact.

Value* resize(Case& c, Value* x, const std::vector<float>& scales, const std::string& mode,
              const std::string& coordinates, const std::string& nearest_mode = "") {
  std::map<std::string, Attribute> attributes = {
      {"mode", Attribute::of_string(mode)},
      {"coordinate_transformation_mode", Attribute::of_string(coordinates)}};
  if (!nearest_mode.empty()) attributes["nearest_mode"] = Attribute::of_string(nearest_mode);
  const int64_t rank = static_cast<int64_t>(scales.size());
  return c.node("Resize",
                {x, nullptr, c.constant(cat("scales", c.nodes().size()), f32({rank}, scales))},
                attributes);
}

TEST(LoweringResize, LinearTwoDimensionalInEveryCommonCoordinateMode) {
  for (const char* mode : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}) {
    SCOPED_TRACE(mode);
    Case c;
    resize(c, c.input("x", {sym("batch"), 3, 5, 7}), {1, 1, 2, 2.5}, "linear", mode);
    c.expect_matches({{"x", random_tensor({2, 3, 5, 7}, 7)}}, kElementwise);
  }
}

TEST(LoweringResize, LinearDownscaleAlongTimeOnly) {
  // 1-D [N, C, L], L 23 -> 13 (scale 0.6): taps clamped at both edges.
  Case c;
  resize(c, c.input("x", {1, 4, 23}), {1, 1, 0.6f}, "linear", "half_pixel");
  c.expect_matches({{"x", random_tensor({1, 4, 23}, 7)}}, kElementwise);
  EXPECT_EQ(c.lower().kind(), "halide resize linear half_pixel [23->13]");
}

TEST(LoweringResize, NearestModesAndSizes) {
  for (const char* rounding : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    SCOPED_TRACE(rounding);
    Case c;
    resize(c, c.input("x", {2, sym("channels"), 6, 9}), {1, 1, 1.5f, 3}, "nearest", "asymmetric",
           rounding);
    c.expect_matches({{"x", random_tensor({2, 5, 6, 9}, 7)}}, {0, 0});
  }
  Case sized;
  sized.node("Resize",
             {sized.input("x", {1, 2, 7}), nullptr, nullptr,
              sized.constant("sizes", Tensor::from_vector<int64_t>({3}, {1, 2, 19}))},
             {{"mode", Attribute::of_string("nearest")}});
  sized.expect_matches({{"x", random_tensor({1, 2, 7}, 7)}}, {0, 0});
}

TEST(LoweringResize, UpsampleOpset9IsANearestResize) {
  Case c(9);
  c.node("Upsample", {c.input("x", {1, 2, 3, 4}), c.constant("scales", f32({4}, {1, 1, 2, 2}))});
  c.expect_matches({{"x", random_tensor({1, 2, 3, 4}, 7)}}, {0, 0});
}

TEST(LoweringResize, CompilesAndMatchesForTheGenericAvx2Target) {
  Case c;
  resize(c, c.input("x", {1, 8, 33}), {1, 1, 4}, "linear", "align_corners");
  c.expect_matches({{"x", random_tensor({1, 8, 33}, 7)}}, kElementwise, avx2_cache());
}

TEST(LoweringResize, CubicWithExcludeOutsideAndAnAntialiasedDownscale) {
  // Cubic: four taps per axis (16 weight products), the edge taps dropped and the rest
  // renormalized under exclude_outside; antialiased linear 0.4x: the filter stretched to five
  // taps. Tolerance as linear, scaled by the taps (rtol 1e-5, atol 1e-6 * 4).
  Case cubic;
  Value* x = cubic.input("x", {1, 2, 5, 6});
  cubic.node("Resize", {x, nullptr, cubic.constant("scales", f32({4}, {1, 1, 2, 1.5f}))},
             {{"mode", Attribute::of_string("cubic")},
              {"exclude_outside", Attribute::of_int(1)},
              {"cubic_coeff_a", Attribute::of_float(-0.5f)}});
  cubic.expect_matches({{"x", random_tensor({1, 2, 5, 6}, 7)}}, {1e-5, 4e-6});
  Case antialias(18);
  antialias.node("Resize",
                 {antialias.input("x", {1, 3, 20}), nullptr,
                  antialias.constant("scales", f32({3}, {1, 1, 0.4f}))},
                 {{"mode", Attribute::of_string("linear")}, {"antialias", Attribute::of_int(1)}});
  antialias.expect_matches({{"x", random_tensor({1, 3, 20}, 7)}}, {1e-5, 4e-6});
}

TEST(LoweringResize, CropAndResizeAndRunTimeSizedAxesAreUnsupported) {
  Case crop;
  crop.node(
      "Resize",
      {crop.input("x", {1, 1, 4, 4}), crop.constant("roi", f32({8}, {0, 0, 0, 0, 1, 1, 1, 1})),
       crop.constant("scales", f32({4}, {1, 1, 2, 2}))},
      {{"mode", Attribute::of_string("linear")},
       {"coordinate_transformation_mode", Attribute::of_string("tf_crop_and_resize")}});
  EXPECT_EQ(error_of([&] { crop.lower(); }, ErrorKind::kUnsupported),
            "Resize 'Resize_0' (opset 17): tf_crop_and_resize (a region and an extrapolation "
            "value)");
  Case dynamic;
  resize(dynamic, dynamic.input("x", {1, 2, sym("time")}), {1, 1, 2}, "nearest", "asymmetric");
  EXPECT_EQ(error_of([&] { dynamic.lower(); }, ErrorKind::kUnsupported),
            "Resize 'Resize_0' (opset 17): axis 2 of a size known only at run time is resized");
}

TEST(LoweringFallback, OpsOutsideTheTablesAreUnsupported) {
  Case c;
  c.node("Cos", {c.input("x", {4})});
  EXPECT_EQ(error_of([&] { c.lower(); }, ErrorKind::kUnsupported),
            "Cos 'Cos_0' (opset 17): not lowered to Halide");
}

TEST(LoweringFallback, OtherElementTypesAreUnsupported) {
  Case c;
  c.node("MatMul",
         {c.input("a", {3, 4}, DType::kFloat64), c.constant("b", Tensor(DType::kFloat64, {4, 2}))});
  EXPECT_EQ(error_of([&] { c.lower(); }, ErrorKind::kUnsupported),
            "MatMul 'MatMul_0' (opset 17): lowered for float32 only");
}

}  // namespace
}  // namespace rnnc
