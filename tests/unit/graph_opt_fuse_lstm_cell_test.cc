// graph_opt's fuse_lstm_cell, numerically: LSTM steps written as their equations, in the forms
// exporters write (Gemm with either transB, MatMul, a bias added after the sum, the chunks in any
// gate order, products and sums in either operand order, input size equal to hidden size, steps
// written out one after another), run
// through the reference evaluator before and after fuse_lstm_cell + dce on random inputs. The
// fused graph holds one LSTM per step and no Split, and its outputs are within 1e-5 absolute of the
// original's: the LSTM sums x W^T, h R^T and the two biases in another order than the Gemms and
// Adds did (float32 rounding of sums of at most 12 products of magnitude < 4; measured ~1e-7).
// Forms that are not one LSTM step as written (an intermediate read elsewhere, a c_prev that
// broadcasts) are left alone.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "graph_opt/pipeline.h"
#include "ir/printer.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "tests/support/compare.h"

namespace rnnc {
namespace {

struct CellSpec {
  int input = 3, hidden = 2;
  bool matmul = false;         // MatMul by [K, 4H] instead of Gemm {transB=1}
  bool gemm_plain = false;     // Gemm {transB=0} by [K, 4H] with its bias
  bool sum_bias = false;       // one bias added to the projections' sum instead of theirs
  std::string order = "ifgo";  // the gate of each Split chunk
  bool swap = false;           // the other operand order in every Add and Mul
  bool c_output = true;        // c_new is a graph output too
  bool extra_reader = false;   // the input gate's sigmoid is also an output
  bool broadcast_c = false;    // c_prev is [1, H]
  int steps = 1;               // steps written out one after another, each reading the last
};

std::string values(int count, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::ostringstream out;
  out.precision(9);
  for (int i = 0; i < count; ++i) out << (i ? ", " : "") << uniform(rng);
  return out.str();
}

std::string cell_model(const CellSpec& s) {
  std::mt19937 rng(7);
  const int h4 = 4 * s.hidden;
  auto pair = [&](const std::string& a, const std::string& b) {
    return s.swap ? b + ", " + a : a + ", " + b;
  };
  auto weight = [&](const std::string& name, int k) {
    const bool rows_first = !s.matmul && !s.gemm_plain;
    return "  const %" + name + ": f32[" +
           (rows_first ? std::to_string(h4) + ", " + std::to_string(k)
                       : std::to_string(k) + ", " + std::to_string(h4)) +
           "] = {" + values(h4 * k, rng) + "}\n";
  };
  std::ostringstream m;
  m << "model opset=18\n"
    << "graph main(%x: f32[batch, " << s.input << "], %h: f32[batch, " << s.hidden << "], %c: f32["
    << (s.broadcast_c ? "1" : "batch") << ", " << s.hidden << "]) {\n";
  m << weight("W_ih", s.input) << weight("W_hh", s.hidden);
  m << "  const %b_ih: f32[" << h4 << "] = {" << values(h4, rng) << "}\n";
  m << "  const %b_hh: f32[" << h4 << "] = {" << values(h4, rng) << "}\n";
  // One step t: reads %x, h_in and c_in, writes %h_t and %c_t.
  auto step = [&](int t, const std::string& h_in, const std::string& c_in) {
    const std::string n = std::to_string(t);
    auto project = [&](const std::string& out, const std::string& in, const std::string& w,
                       const std::string& b) {
      if (s.matmul) return "  %" + out + " = MatMul '" + out + "' (%" + in + ", %" + w + ")\n";
      const std::string bias = s.sum_bias ? "" : ", %" + b;
      return "  %" + out + " = Gemm '" + out + "' (%" + in + ", %" + w + bias + ")" +
             (s.gemm_plain ? "" : " {transB=1}") + "\n";
    };
    m << project("xw" + n, "x", "W_ih", "b_ih") << project("hr" + n, h_in, "W_hh", "b_hh");
    if (s.sum_bias || s.matmul) {
      m << "  %sum" << n << " = Add 'sum" << n << "' (" << pair("%xw" + n, "%hr" + n) << ")\n";
      m << "  %gates" << n << " = Add 'gates" << n << "' (" << pair("%sum" + n, "%b_ih") << ")\n";
    } else {
      m << "  %gates" << n << " = Add 'gates" << n << "' (" << pair("%xw" + n, "%hr" + n) << ")\n";
    }
    m << "  %k0_" << n << ", %k1_" << n << ", %k2_" << n << ", %k3_" << n << " = Split 'chunk" << n
      << "' (%gates" << n << ") {axis=1, num_outputs=4}\n";
    for (int k = 0; k < 4; ++k) {
      const char gate = s.order[static_cast<size_t>(k)];
      m << "  %" << gate << n << " = " << (gate == 'g' ? "Tanh" : "Sigmoid") << " '" << gate << n
        << "' (%k" << k << "_" << n << ")\n";
    }
    m << "  %fc" << n << " = Mul 'keep" << n << "' (" << pair("%f" + n, "%" + c_in) << ")\n";
    m << "  %ig" << n << " = Mul 'write" << n << "' (" << pair("%i" + n, "%g" + n) << ")\n";
    m << "  %c_" << n << " = Add 'cell" << n << "' (" << pair("%fc" + n, "%ig" + n) << ")\n";
    m << "  %ct" << n << " = Tanh 'cell_tanh" << n << "' (%c_" << n << ")\n";
    m << "  %h_" << n << " = Mul 'hidden" << n << "' (" << pair("%o" + n, "%ct" + n) << ")\n";
  };
  step(0, "h", "c");
  for (int t = 1; t < s.steps; ++t) {
    step(t, "h_" + std::to_string(t - 1), "c_" + std::to_string(t - 1));
  }
  const std::string last = std::to_string(s.steps - 1);
  m << "  return %h_" << last << (s.c_output ? ", %c_" + last : "")
    << (s.extra_reader ? ", %i0" : "") << "\n}\n";
  return m.str();
}

int64_t count_ops(const Graph& graph, const std::string& op_type) {
  int64_t n = 0;
  for (const auto& node : graph.nodes()) n += node->op_type() == op_type;
  return n;
}

// Runs the cell before and after the passes on random inputs; returns whether it was fused.
bool check_cell(const CellSpec& spec) {
  const std::string text = cell_model(spec);
  auto original = parse_model_text(text, "cell");
  auto fused = parse_model_text(text, "cell");
  OptimizeOptions options;
  options.passes = {"fuse_lstm_cell", "dce"};
  optimize(*fused, options);
  const bool did_fuse = count_ops(*fused->graph, "LSTM") == spec.steps;
  if (did_fuse) {
    EXPECT_EQ(count_ops(*fused->graph, "Split"), 0) << to_text(*fused);
    EXPECT_EQ(count_ops(*fused->graph, "Sigmoid"), 0) << to_text(*fused);
    // Nothing of the old form is left to compute, a later step's included.
    EXPECT_EQ(count_ops(*fused->graph, "Gemm") + count_ops(*fused->graph, "MatMul"), 0)
        << to_text(*fused);
  }
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (int64_t batch : {1, 3}) {
    auto random = [&](std::vector<int64_t> shape) {
      Tensor t(DType::kFloat32, shape);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = uniform(rng);
      return t;
    };
    std::map<std::string, Tensor> inputs{
        {"x", random({batch, spec.input})},
        {"h", random({batch, spec.hidden})},
        {"c", random({spec.broadcast_c ? 1 : batch, spec.hidden})}};
    std::vector<Tensor> expected = evaluate(*original->graph, inputs);
    std::vector<Tensor> actual = evaluate(*fused->graph, inputs);
    EXPECT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
      testing::Comparison c = testing::compare_tensors(actual[i], expected[i], {0, 1e-5});
      EXPECT_TRUE(c.ok) << "output " << i << ", batch " << batch << ": " << c.message << "\n"
                        << to_text(*fused);
    }
  }
  return did_fuse;
}

TEST(GraphOptFuseLstmCell, TorchLstmCellBecomesOneLstmStep) { EXPECT_TRUE(check_cell({})); }

TEST(GraphOptFuseLstmCell, OperandOrdersAndGateOrdersAreReadFromTheStructure) {
  for (const char* order : {"ifgo", "iofg", "gofi", "ofgi"}) {
    for (bool swap : {false, true}) {
      CellSpec spec;
      spec.order = order;
      spec.swap = swap;
      EXPECT_TRUE(check_cell(spec)) << order << (swap ? " swapped" : "");
    }
  }
}

TEST(GraphOptFuseLstmCell, MatMulGemmWithoutTransposeAndABiasAfterTheSum) {
  CellSpec matmul;
  matmul.matmul = true;
  EXPECT_TRUE(check_cell(matmul));
  CellSpec plain;
  plain.gemm_plain = true;
  EXPECT_TRUE(check_cell(plain));
  CellSpec summed;
  summed.sum_bias = true;
  summed.swap = true;
  EXPECT_TRUE(check_cell(summed));
}

TEST(GraphOptFuseLstmCell, InputOfHiddenSizeAndOnlyHRead) {
  CellSpec spec;
  spec.input = 2;
  spec.c_output = false;
  EXPECT_TRUE(check_cell(spec));
}

TEST(GraphOptFuseLstmCell, StepsWrittenOutOneAfterAnotherEachBecomeAnLstm) {
  CellSpec spec;
  spec.steps = 3;
  EXPECT_TRUE(check_cell(spec));
  spec.c_output = false;
  spec.swap = true;
  EXPECT_TRUE(check_cell(spec));
}

TEST(GraphOptFuseLstmCell, OtherFormsAreLeftAlone) {
  CellSpec read_elsewhere;
  read_elsewhere.extra_reader = true;
  EXPECT_FALSE(check_cell(read_elsewhere));
  CellSpec broadcast;
  broadcast.broadcast_c = true;
  EXPECT_FALSE(check_cell(broadcast));
}

}  // namespace
}  // namespace rnnc
