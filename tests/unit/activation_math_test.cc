// lowering/activation_math: the vectorized tanh, sigmoid and exp against libm in double, over
// dense grids, at the bounds the header states, with each quotient (a divide, the reciprocal
// estimate and a Newton step, or the fractions) and either fit (the estimate with degree 4 only,
// as float steps use it). JIT-compiled for the host, vectorized as the
// recurrent kernels use them (16 lanes with AVX-512), so FMA contraction is what they get.
#include "lowering/activation_math.h"

#include <Halide.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace rnnc {
namespace {

// f over `xs`, vectorized by 16 lanes.
template <typename F>
std::vector<float> evaluate(F f, const std::vector<float>& xs) {
  Halide::Buffer<float> in(static_cast<int>(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) in(static_cast<int>(i)) = xs[i];
  Halide::Var i("i");
  Halide::Func out("out");
  out(i) = f(in(i));
  out.vectorize(i, 16, Halide::TailStrategy::GuardWithIf);
  Halide::Buffer<float> result = out.realize({static_cast<int>(xs.size())});
  return std::vector<float>(result.data(), result.data() + xs.size());
}

// One case per quotient and fit, with the bounds activation_math.h states for the fit.
struct Case {
  Quotient quotient;
  Fit fit;
};

struct Bounds {
  double tanh, sigmoid;  // max |error| (tanh: also relative)
};

class Activation : public ::testing::TestWithParam<Case> {
 protected:
  Bounds bounds() const {
    return GetParam().fit == Fit::kDegree4 ? Bounds{5e-7, 3e-7} : Bounds{2.5e-6, 1.5e-6};
  }
  // Where tanh saturates (activation_math.cc's TanhFit::saturation and fractions_saturation).
  float saturation() const {
    if (GetParam().quotient == Quotient::kFractions) {
      return GetParam().fit == Fit::kDegree4 ? 7.96560717f : 7.02463675f;
    }
    return GetParam().fit == Fit::kDegree4 ? 7.97178078f : 7.02555037f;
  }
  std::vector<float> tanh_of(const std::vector<float>& xs) const {
    return evaluate(
        [&](Halide::Expr x) { return tanh_f32(x, GetParam().quotient, GetParam().fit); }, xs);
  }
  std::vector<float> sigmoid_of(const std::vector<float>& xs) const {
    return evaluate(
        [&](Halide::Expr x) { return sigmoid_f32(x, GetParam().quotient, GetParam().fit); }, xs);
  }
};

INSTANTIATE_TEST_SUITE_P(QuotientsAndFits, Activation,
                         ::testing::Values(Case{Quotient::kExact, Fit::kDegree4},
                                           Case{Quotient::kEstimate, Fit::kDegree4},
                                           Case{Quotient::kExact, Fit::kDegree3},
                                           Case{Quotient::kFractions, Fit::kDegree4},
                                           Case{Quotient::kFractions, Fit::kDegree3}),
                         [](const auto& info) {
                           const Quotient q = info.param.quotient;
                           return std::string(q == Quotient::kExact      ? "Exact"
                                              : q == Quotient::kEstimate ? "Estimate"
                                                                         : "Fractions") +
                                  (info.param.fit == Fit::kDegree4 ? "Degree4" : "Degree3");
                         });

// Every 1/1024 on [-lo, hi], plus tiny magnitudes down to 1e-30 of both signs.
std::vector<float> grid(float lo, float hi) {
  std::vector<float> xs;
  for (float x = lo; x <= hi; x += 1.0f / 1024) xs.push_back(x);
  for (float m = 1e-30f; m < 1.0f; m *= 1.7f) {
    xs.push_back(m);
    xs.push_back(-m);
  }
  return xs;
}

struct Errors {
  double abs = 0, rel = 0;
};

Errors errors(const std::vector<float>& xs, const std::vector<float>& ys, double (*exact)(double)) {
  Errors e;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = exact(xs[i]), diff = std::abs(ys[i] - want);
    e.abs = std::max(e.abs, diff);
    if (want != 0) e.rel = std::max(e.rel, diff / std::abs(want));
  }
  return e;
}

TEST_P(Activation, TanhWithinItsBoundAbsoluteAndRelative) {
  const std::vector<float> xs = grid(-20, 20);
  const std::vector<float> ys = tanh_of(xs);
  const Errors e = errors(xs, ys, [](double x) { return std::tanh(x); });
  std::printf("[ tanh     ] max abs error %.3g, max rel error %.3g\n", e.abs, e.rel);
  EXPECT_LT(e.abs, bounds().tanh);
  EXPECT_LT(e.rel, bounds().tanh);
}

TEST_P(Activation, TanhIsOddBoundedAndSaturates) {
  const std::vector<float> xs = grid(-20, 20);
  const std::vector<float> ys = tanh_of(xs);
  std::vector<float> negated(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) negated[i] = -xs[i];
  const std::vector<float> ys_negated = tanh_of(negated);
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(ys_negated[i], -ys[i]) << "x = " << xs[i];
    ASSERT_LE(std::abs(ys[i]), 1.0f) << "x = " << xs[i];
  }
  // Exactly +-1 from the saturation point on, and just below 1 before it.
  const float s = saturation();
  const std::vector<float> extremes = tanh_of({s, 50.0f, 1e30f, INFINITY, -s, -1e30f, -INFINITY});
  for (float y : extremes) EXPECT_EQ(std::abs(y), 1.0f);
  EXPECT_LT(tanh_of({s - 0.01f})[0], 1.0f);
}

// No float from 5 to the saturation point (every one of them, about 2.5 million) gives a value
// above 1: with the divide the output needs no clamp (the estimate's is clamped). Below 5 the fit
// is more than 1e-4 below 1.
TEST_P(Activation, TanhNeverExceedsOneBeforeItSaturates) {
  std::vector<float> xs;
  for (float x = 5.0f; x <= saturation(); x = std::nextafter(x, INFINITY)) xs.push_back(x);
  const std::vector<float> ys = tanh_of(xs);
  for (size_t i = 0; i < xs.size(); ++i) ASSERT_LE(ys[i], 1.0f) << "x = " << xs[i];
}

TEST_P(Activation, SigmoidWithinItsBoundAbsolute) {
  const std::vector<float> xs = grid(-40, 40);
  const std::vector<float> ys = sigmoid_of(xs);
  const Errors e = errors(xs, ys, [](double x) { return 1 / (1 + std::exp(-x)); });
  std::printf("[ sigmoid  ] max abs error %.3g\n", e.abs);
  EXPECT_LT(e.abs, bounds().sigmoid);
  // Within [0, 1], and exactly 0 and 1 from twice tanh's saturation point on; with the
  // fractions, whose last product and the 1/2 are one multiply-add, within 2^-25 of 0 on either
  // side and 2^-24 below 1.
  const bool fractions = GetParam().quotient == Quotient::kFractions;
  const float near_0 = fractions ? 0x1p-25f : 0.0f, near_1 = fractions ? 0x1p-24f : 0.0f;
  for (float y : ys) ASSERT_TRUE(y >= -near_0 && y <= 1.0f) << y;
  const float s = 2 * saturation();
  const std::vector<float> extremes = sigmoid_of({-s, -1e30f, -INFINITY, s, 1e30f, INFINITY});
  for (int i = 0; i < 3; ++i) EXPECT_LE(std::abs(extremes[i]), near_0);
  for (int i = 3; i < 6; ++i) {
    EXPECT_GE(extremes[i], 1.0f - near_1);
    EXPECT_LE(extremes[i], 1.0f);
  }
  // Every float of the last unit before that point, where the value comes within a few units in
  // the last place of 0 and 1 (below it, tanh is more than 1e-7 from 1).
  std::vector<float> tail;
  for (float x = s - 1; x <= s; x = std::nextafter(x, INFINITY)) {
    tail.push_back(x);
    tail.push_back(-x);
  }
  const std::vector<float> tail_ys = sigmoid_of(tail);
  for (size_t i = 0; i < tail.size(); ++i) {
    ASSERT_TRUE(tail_ys[i] >= -near_0 && tail_ys[i] <= 1.0f) << "x = " << tail[i];
  }
}

// The multiplies left in an activation once Halide's simplifier has run (LLVM fuses each Horner
// step's multiply and add into one FMA, so extra multiplies there are extra latency).
int simplified_multiplies(const Halide::Expr& e) {
  struct Count : Halide::Internal::IRGraphVisitor {  // each shared node once
    int multiplies = 0;
    using IRGraphVisitor::visit;
    void visit(const Halide::Internal::Mul* op) override {
      ++multiplies;
      IRGraphVisitor::visit(op);
    }
  } count;
  Halide::Internal::common_subexpression_elimination(Halide::Internal::simplify(e)).accept(&count);
  return count.multiplies;
}

// sigmoid(x) is tanh(x / 2) rescaled, but its polynomials are evaluated in x^2 with rescaled
// coefficients: one multiply per Horner step, as in tanh (fed (x / 2)^2, the simplifier added a
// multiply by 1 / 4 to each step), and the halvings are in the coefficients.
TEST(ActivationMath, SigmoidHasTanhsMultiplies) {
  Halide::Var x("x");
  const Halide::Expr input = Halide::cast<float>(x);
  const int tanh_multiplies = simplified_multiplies(tanh_f32(input));
  EXPECT_EQ(tanh_multiplies, 9);  // x^2, 4 + 3 Horner steps (Q is monic: its first step adds), x P
  EXPECT_EQ(simplified_multiplies(sigmoid_f32(input)), tanh_multiplies);
  // The estimate's quotient p r (2 - q r): three multiplies where the divide was.
  EXPECT_EQ(simplified_multiplies(tanh_f32(input, Quotient::kEstimate)), tanh_multiplies + 3);
  // The degree-3 fit: one Horner step fewer in each of P and Q.
  EXPECT_EQ(simplified_multiplies(tanh_f32(input, Quotient::kExact, Fit::kDegree3)),
            tanh_multiplies - 2);
  EXPECT_EQ(simplified_multiplies(sigmoid_f32(input, Quotient::kExact, Fit::kDegree3)),
            tanh_multiplies - 2);
  // The fractions: x^2, two multiply-adds per pair (numerator, denominator), none for a single
  // root, x times the sum. Degree 4: two pairs; degree 3: a pair and a single root.
  for (const Fit fit : {Fit::kDegree4, Fit::kDegree3}) {
    const int pairs = fit == Fit::kDegree4 ? 2 : 1;
    EXPECT_EQ(simplified_multiplies(tanh_f32(input, Quotient::kFractions, fit)), 2 + 2 * pairs);
    EXPECT_EQ(simplified_multiplies(sigmoid_f32(input, Quotient::kFractions, fit)), 2 + 2 * pairs);
  }
}

TEST(ActivationMath, ExpWithinOneTenthOfAMicroRelative) {
  std::vector<float> xs;
  for (float x = -87; x <= 88; x += 1.0f / 256) xs.push_back(x);
  const std::vector<float> ys = evaluate(exp_f32, xs);
  const Errors e = errors(xs, ys, [](double x) { return std::exp(x); });
  std::printf("[ exp      ] max rel error %.3g\n", e.rel);
  EXPECT_LT(e.rel, 1e-7);
}

}  // namespace
}  // namespace rnnc
