// Unit tests of the conformance generator: that it covers what the specs promise (every op,
// type combination, rank, boundary class, recurrent feature), deterministically.
#include "tests/conformance/generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ir/onnx_export.h"
#include "ir/op_schema.h"
#include "tests/conformance/spec.h"

namespace rnnc::conformance {
namespace {

OpGenReport generate(const std::string& op, Profile profile, int count,
                     std::vector<GeneratedTest>* keep = nullptr, uint64_t seed = 1) {
  GenOptions options;
  options.profile = profile;
  options.count = count;
  options.seed = seed;
  const OpSpec* spec = find_spec(op);
  EXPECT_NE(spec, nullptr) << op;
  return generate_op(*spec, options, keep);
}

TEST(ConformanceSpecs, EveryRegisteredOpHasASpecAndEverySpecARegisteredOp) {
  std::set<std::string> registered, specified;
  for (const OpSchema* schema : all_op_schemas()) registered.insert(schema->op_type);
  for (const OpSpec& spec : all_specs()) specified.insert(spec.op_type);
  for (const std::string& op : registered) EXPECT_TRUE(specified.count(op)) << op << " has no spec";
  for (const std::string& op : specified) {
    EXPECT_TRUE(registered.count(op)) << op << " has a spec but no registered schema";
  }
}

TEST(ConformanceSpecs, EverySpecialCaseNamedBySomeSpecExists) {
  for (const OpSpec& spec : all_specs()) {
    if (!spec.special_case.empty()) {
      EXPECT_NE(find_special_case(spec.special_case), nullptr) << spec.op_type;
    }
  }
}

TEST(ConformanceGenerator, SameSeedGivesTheSameBytes) {
  std::vector<GeneratedTest> first, second, other_seed;
  generate("LSTM", Profile::kFull, 6, &first);
  generate("LSTM", Profile::kFull, 6, &second);
  generate("LSTM", Profile::kFull, 6, &other_seed, /*seed=*/2);
  ASSERT_EQ(first.size(), 6u);
  ASSERT_EQ(second.size(), 6u);
  int differing = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(export_onnx_bytes(*first[i].model), export_onnx_bytes(*second[i].model));
    ASSERT_EQ(first[i].inputs.size(), second[i].inputs.size());
    for (size_t k = 0; k < first[i].inputs.size(); ++k) {
      EXPECT_TRUE(first[i].inputs[k].second.bitwise_equal(second[i].inputs[k].second));
    }
    differing += export_onnx_bytes(*first[i].model) != export_onnx_bytes(*other_seed[i].model);
  }
  EXPECT_GT(differing, 0) << "seed 2 generated the same models as seed 1";
}

TEST(ConformanceGenerator, NamesEncodeOpProfileAndIndex) {
  std::vector<GeneratedTest> tests;
  generate("Add", Profile::kSmoke, 3, &tests);
  ASSERT_EQ(tests.size(), 3u);
  EXPECT_EQ(tests[2].meta.name, "Add_smoke_0002");
  EXPECT_EQ(tests[2].meta.op, "Add");
  EXPECT_EQ(tests[2].meta.profile, "smoke");
  EXPECT_EQ(tests[2].meta.index, 2);
}

TEST(ConformanceGenerator, SplitsTheCountEvenlyAcrossTypeCombinations) {
  const OpSpec& spec = *find_spec("Add");
  size_t combinations = spec.type_combinations();
  ASSERT_EQ(combinations, 12u);
  OpGenReport report = generate("Add", Profile::kFull, static_cast<int>(3 * combinations + 2));
  ASSERT_EQ(report.coverage.type_counts().size(), combinations);
  for (const auto& [key, count] : report.coverage.type_counts()) {
    EXPECT_TRUE(count == 3 || count == 4) << key << ": " << count;
  }
}

TEST(ConformanceGenerator, GivesEveryRankItsShare) {
  // Add's A has ranks 0..4: 50 tests give each rank 10.
  OpGenReport report = generate("Add", Profile::kFull, 50);
  ASSERT_EQ(report.failures, std::vector<std::string>{});
  for (int rank = 0; rank <= 4; ++rank) {
    auto it = report.coverage.rank_counts().find(rank);
    ASSERT_NE(it, report.coverage.rank_counts().end()) << "rank " << rank;
    EXPECT_EQ(it->second, 10) << "rank " << rank;
  }
}

TEST(ConformanceGenerator, RankMustExceedTheAxis) {
  std::vector<GeneratedTest> tests;
  generate("Softmax", Profile::kFull, 60, &tests);
  for (const auto& test : tests) {
    const Node& node = *test.model->graph->nodes().front();
    int64_t rank = test.inputs.empty() ? -1 : test.inputs[0].second.rank();
    int64_t axis = node.attr_int("axis", node.opset() >= 13 ? -1 : 1);
    EXPECT_TRUE(axis >= 0 ? rank > axis : rank >= -axis) << test.meta.name;
  }
}

TEST(ConformanceGenerator, HitsEveryBoundaryClassOfAnOp) {
  const OpSpec& spec = *find_spec("Div");
  CoverageUniverse universe = coverage_universe(spec);
  std::set<std::string> expected(universe.boundaries.begin(), universe.boundaries.end());
  EXPECT_EQ(expected, (std::set<std::string>{"dim1", "dim0", "dim_large", "zero", "neg_zero",
                                             "huge", "tiny", "nan", "inf"}));
  OpGenReport report = generate("Div", Profile::kFull, 120);
  EXPECT_EQ(report.coverage.missing(universe), std::vector<std::string>{});
}

TEST(ConformanceGenerator, NeverDividesIntegersByZero) {
  std::vector<GeneratedTest> tests;
  OpGenReport report = generate("Div", Profile::kFull, 120, &tests);
  EXPECT_EQ(report.failures, std::vector<std::string>{});
  for (const auto& test : tests) {
    ASSERT_EQ(test.inputs.size(), 2u);
    const Tensor& divisor = test.inputs[1].second;
    if (!is_integer(divisor.dtype())) continue;
    for (int64_t i = 0; i < divisor.numel(); ++i) EXPECT_NE(divisor.get_int64(i), 0);
  }
}

TEST(ConformanceGenerator, SmokeFixesAttributesAndFullVariesThem) {
  std::vector<GeneratedTest> smoke, full;
  generate("LSTM", Profile::kSmoke, 20, &smoke);
  generate("LSTM", Profile::kFull, 20, &full);
  auto attributes = [](const GeneratedTest& test) {
    std::string text;
    for (const auto& [name, attr] : test.model->graph->nodes().front()->attributes()) {
      if (name == "direction" || name == "layout" || name == "clip" || name == "input_forget" ||
          name == "activations") {
        text += name + "=" + std::to_string(attr.i) + attr.s + std::to_string(attr.f) +
                std::to_string(attr.strings.size()) + ";";
      }
    }
    return text;
  };
  std::set<std::string> smoke_instances, full_instances;
  for (const auto& test : smoke) smoke_instances.insert(attributes(test));
  for (const auto& test : full) full_instances.insert(attributes(test));
  EXPECT_EQ(smoke_instances.size(), 1u);
  EXPECT_GT(full_instances.size(), 5u);
}

// The recurrent coverage issue 8 asks for, in one full run of each op.
TEST(ConformanceGenerator, RecurrentFullProfileCoversEveryFeature) {
  OpGenReport lstm = generate("LSTM", Profile::kFull, 300);
  OpGenReport gru = generate("GRU", Profile::kFull, 200);
  OpGenReport rnn = generate("RNN", Profile::kFull, 200);
  for (const OpGenReport* report : {&lstm, &gru, &rnn}) {
    EXPECT_EQ(report->failures, std::vector<std::string>{}) << report->op;
    const auto& tags = report->coverage.tag_counts();
    for (const char* tag : {"direction=forward",
                            "direction=reverse",
                            "direction=bidirectional",
                            "layout=0",
                            "layout=1",
                            "in:sequence_lens",
                            "seq_lens_mixed",
                            "seq_lens_zero",
                            "clip",
                            "activations",
                            "activation_alpha",
                            "activation_beta",
                            "hidden_size_omitted",
                            "in:initial_h",
                            "const:W",
                            "long_sequence",
                            "act:relu",
                            "act:tanh",
                            "act:sigmoid",
                            "act:affine",
                            "act:leakyrelu",
                            "act:thresholdedrelu",
                            "act:scaledtanh",
                            "act:hardsigmoid",
                            "act:elu",
                            "act:softsign",
                            "act:softplus",
                            "default_alpha:leakyrelu",
                            "default_alpha:hardsigmoid",
                            "default_beta:hardsigmoid",
                            "default_alpha:elu",
                            "out:Y",
                            "out:Y_h"}) {
      EXPECT_GT(tags.count(tag), 0u) << report->op << " never has " << tag;
    }
    EXPECT_EQ(report->coverage.type_counts().size(), 3u) << report->op;
  }
  for (const char* tag :
       {"input_forget=1", "input_forget=0", "peepholes", "in:initial_c", "out:Y_c"}) {
    EXPECT_GT(lstm.coverage.tag_counts().count(tag), 0u) << "LSTM never has " << tag;
  }
  for (const char* tag : {"linear_before_reset=0", "linear_before_reset=1"}) {
    EXPECT_GT(gru.coverage.tag_counts().count(tag), 0u) << "GRU never has " << tag;
  }
}

TEST(ConformanceGenerator, SequenceLensMixZeroFullAndPartialLengths) {
  std::vector<GeneratedTest> tests;
  generate("GRU", Profile::kFull, 150, &tests);
  bool zero = false, full = false, partial = false;
  for (const auto& test : tests) {
    const Graph& graph = *test.model->graph;
    const Node& node = *graph.nodes().front();
    const Value* lens = node.input(4);
    const Value* x = node.input(0);
    if (!lens || !x) continue;
    Tensor values = lens->is_constant() ? *lens->constant() : Tensor();
    for (const auto& [name, tensor] : test.inputs) {
      if (name == lens->name()) values = tensor;
    }
    int64_t layout = node.attr_int("layout", 0);
    int64_t seq = (*x->type.shape)[layout == 0 ? 0 : 1].value();
    for (int64_t i = 0; i < values.numel(); ++i) {
      int64_t len = values.get_int64(i);
      EXPECT_TRUE(len >= 0 && len <= seq) << test.meta.name;
      zero = zero || len == 0;
      full = full || len == seq;
      partial = partial || (len > 0 && len < seq);
    }
  }
  EXPECT_TRUE(zero && full && partial);
}

TEST(ConformanceGenerator, EverySpecGeneratesWithoutFailures) {
  for (const OpSpec& spec : all_specs()) {
    GenOptions options;
    options.profile = Profile::kFull;
    options.count = 12;
    OpGenReport report = generate_op(spec, options);
    EXPECT_EQ(report.failures, std::vector<std::string>{}) << spec.op_type;
    EXPECT_EQ(report.written, 12) << spec.op_type;
  }
}

}  // namespace
}  // namespace rnnc::conformance
