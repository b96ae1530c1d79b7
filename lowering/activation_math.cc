// tanh and sigmoid as one rational function: a clamp, a square, seven multiply-adds and an add
// (five and an add for the degree-3 fit), a multiply and a division (sigmoid: and an add), with no
// exp. An LSTM step evaluates five of them per hidden unit (three sigmoids, two tanh), so their
// instruction count and latency are a large share of a step, above all in int8 steps, whose dot
// products are short. An e^x-based form (a degree-7 polynomial, range reduction and a division
// each, plus a small-argument series for tanh) has about twice both. The same function as a sum of
// fractions (Quotient::kFractions) trades three of the multiply-adds for a second division.
#include "lowering/activation_math.h"

namespace rnnc {

using Halide::Expr;

// e^x = 2^k e^r with x = k ln2 + r, |r| <= ln2/2 (Cody-Waite split of ln2), e^r by its degree-7
// Taylor polynomial (relative error < 6e-9), 2^k built in the exponent field. x is clamped so 2^k
// stays a normal float: e^x for x < -87 (< 2e-38) and x > 88 (> 1.6e38) saturates there. Then
// x / ln2 + 128.5 > 0, so truncating it to an integer is floor: k = round(x / ln2) without a
// rounding instruction (Halide splits AVX-512 floor into two 256-bit halves).
Expr exp_f32(Expr x) {
  x = clamp(x, -87.0f, 88.0f);
  Expr k_int = Halide::cast<int32_t>(x * 1.44269504089f + 128.5f) - 128;
  Expr k = Halide::cast<float>(k_int);
  Expr r = x - k * 0.693359375f;  // ln 2 = 0.693359375 - 2.12194440e-4
  r = r + k * 2.12194440e-4f;
  Expr p = 1.0f / 5040;
  for (float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f}) p = p * r + c;
  Expr scale = Halide::reinterpret(Halide::Float(32), (k_int + 127) << 23);
  return p * scale;
}

// tanh(x) = x P(x^2) / Q(x^2), P and Q fitted for the least maximum relative error
// by scripts/fit-tanh.py (the printed coefficients, rounded to float32). Odd by construction, and
// exact slope 1 at 0 (so relative accuracy holds for tiny x, where the e^x form needed a separate
// series). Q is monic (P and Q divided by Q's leading coefficient), so Q's first Horner step is an
// add: one multiply-add fewer per activation on the pipes the dot products use.
namespace {

// One term of P / Q's partial fractions: (n1 s + n0) / (s^2 + d1 s + d0), the terms of two of Q's
// roots combined, or n0 / (s + d0) for a root alone (pair false, n1 = d1 = 0).
struct Fraction {
  bool pair;
  float n1, n0, d1, d0;
};

struct TanhFit {
  int degree;        // of P and Q in x^2
  float saturation;  // x is clamped to [-saturation, saturation]
  float p[5], q[5];  // highest degree first, degree + 1 of each; q[0] = 1
  // The same P / Q as p[0] + fractions[0] + fractions[1] (Quotient::kFractions: with Q monic,
  // P / Q's limit p[0] is the constant term), and where that form saturates (its float32 value
  // reaches 1 at another point than P / Q's).
  Fraction fractions[2];
  float fractions_saturation;
};

// The saturation point: the largest float32 x up to which the fit's float32 value by divide never
// exceeds 1 and at which it is exactly 1, found by evaluating every float32 near the end of the
// fitted interval with Horner's steps as FMAs (docs/lowering.md, "Saturation points";
// tests/unit/activation_math_test.cc evaluates every float from 5 to it again). (A CPU without
// FMA rounds each step twice and may come out 1 ulp above 1 there.) So tanh with the divide
// saturates at exactly +-1 and needs no clamp of its output. Beyond the point the error is
// 1 - tanh(saturation). The fractions' float32 value flickers between 1 - 6e-8 and 1 over a
// stretch before it first exceeds 1; their saturation point is the first float32 x where it is
// exactly 1 (every value before it is below 1), found the same way.
// `scripts/fit-tanh.py`, fitted on [0, 9]: saturation 7.97178078 (1 - tanh there: 2.4e-7).
// Its fractions (`scripts/fit-tanh.py` prints them too): saturation 7.96560717 (1 - tanh there:
// 2.4e-7).
constexpr TanhFit kTanhDegree4 = {
    4,
    7.97178078f,
    {1.719438471e-02f, 2.647285461e+01f, 4.483215332e+03f, 1.714874688e+05f, 1.281289750e+06f},
    {1.0f, 4.216752930e+02f, 3.317280859e+04f, 5.985838750e+05f, 1.281289750e+06f},
    {{true, 1.518732548e+01f, 1.885521851e+03f, 3.969094849e+02f, 2.328800781e+04f},
     {true, 4.035082340e+00f, 4.961861420e+01f, 2.476580238e+01f, 5.501929474e+01f}},
    7.96560717f};
// `scripts/fit-tanh.py 3 7`, fitted on [0, 7]: fit error 1.4e-6; saturation 7.02555037 (1 - tanh
// there: 1.6e-6); its fractions: saturation 7.02463675 (1 - tanh there: 1.6e-6).
constexpr TanhFit kTanhDegree3 = {
    3,
    7.02555037f,
    {2.781121247e-02f, 1.589757729e+01f, 8.523784790e+02f, 6.912990234e+03f},
    {1.0f, 1.464441833e+02f, 3.156672119e+03f, 6.912990234e+03f},
    {{true, 9.824132919e+00f, 4.522973633e+02f, 1.439764709e+02f, 2.801380127e+03f},
     {false, 0.0f, 2.000654221e+00f, 0.0f, 2.467708588e+00f}},
    7.02463675f};

const TanhFit& tanh_fit(Fit fit) { return fit == Fit::kDegree3 ? kTanhDegree3 : kTanhDegree4; }

// P or Q at t = (x / d)^2, times factor d^2n (n the degree), as the polynomial in s = x^2 whose
// coefficient i (highest degree first) is multiplied by factor d^2i (d and factor powers of two,
// so these are exact): each Horner step then gives exactly its float at t scaled by a power of
// two, and the monic Q keeps its leading 1, so its first step is s plus a constant. Handed
// tanh_f32(x / d), Halide's simplifier rewrites t = (x / d)^2 as x^2 / d^2 and puts a multiply by
// 1 / d^2 into every Horner step: twice the latency there.
Expr horner(const float* coefficients, int degree, const Expr& s, float d, float factor) {
  auto scaled = [&](int i) {
    float c = coefficients[i] * factor;
    for (int power = 0; power < i; ++power) c *= d * d;
    return c;
  };
  // A leading 1 (Q's) needs no multiply: the first step is s plus the next coefficient.
  Expr value = scaled(0) == 1.0f ? s + scaled(1) : scaled(0) * s + scaled(1);
  for (int i = 2; i <= degree; ++i) value = value * s + scaled(i);
  return value;
}

// d factor tanh(x / d) as factor x (C + the fractions at s / d^2), s = x^2: each fraction's
// numerator and denominator scaled by powers of d (powers of two, so exact) to take s itself.
// A pair costs two multiply-adds and a divide, a single root a divide; x^2 and the final product
// two multiplies. The fractions' terms are all positive (Q's roots are real and negative, their
// residues positive): no cancellation, and the sum runs from the smallest term to the largest.
Expr fractions_tanh(const TanhFit& f, Expr x, float d, float factor) {
  const float saturation = d * f.fractions_saturation;
  x = clamp(x, -saturation, saturation);
  const Expr s = x * x;
  const float d2 = d * d, d4 = d2 * d2;
  Expr sum = factor * f.p[0];
  for (const Fraction& fraction : f.fractions) {
    if (fraction.pair) {
      Expr numerator = factor * d2 * fraction.n1 * s + factor * d4 * fraction.n0;
      Expr denominator = (s + d2 * fraction.d1) * s + d4 * fraction.d0;
      sum = sum + numerator / denominator;
    } else {
      sum = sum + factor * d2 * fraction.n0 / (s + d2 * fraction.d0);
    }
  }
  return x * sum;
}

// p / q for Q's values (q >= 1). kEstimate: the hardware estimate of 1 / q (12 to 14 bits)
// refined by one Newton step, r (2 - q r): a vector divide issues at a fraction of a multiply's
// rate, and every gate activation divides once; where multiplies are the scarcer issue slots
// (512-bit operations split into halves) the schedule asks for the divide
// (RecurrentSchedule::gate_quotient).
Expr quotient_of(const Expr& p, const Expr& q, Quotient quotient) {
  if (quotient == Quotient::kExact) return p / q;
  Expr r = Halide::fast_inverse(q);
  return p * (r * (2.0f - q * r));
}

// d factor tanh(x / d), without an output clamp: factor x P(x^2 / d^2) / Q(x^2 / d^2) of fit
// `f`, P and Q evaluated at s = x^2 (horner), saturating at x = d f.saturation. d = 1 for tanh,
// 2 for sigmoid's. With the divide: x clamped (a min and a max) before the fit and nothing after
// it, since the saturation point keeps the correctly rounded quotient within [-1, 1] (x = +-inf
// saturates too; kFractions: the same, at its own point). With the estimate, the quotient's
// rounding depends on how LLVM contracts the Newton step in each kernel (a few floats near 8 reach
// 1 + 1.2e-7 in some), so only x^2 is clamped (one min) and the callers clamp the output.
Expr fitted_tanh(const TanhFit& f, Expr x, float d, float factor, Quotient quotient) {
  if (quotient == Quotient::kFractions) return fractions_tanh(f, x, d, factor);
  const float saturation = d * f.saturation;
  Expr s;
  if (quotient == Quotient::kEstimate) {
    s = min(x * x, saturation * saturation);
  } else {
    x = clamp(x, -saturation, saturation);
    s = x * x;
  }
  return quotient_of(x * horner(f.p, f.degree, s, d, factor), horner(f.q, f.degree, s, d, 1.0f),
                     quotient);
}

}  // namespace

Expr tanh_f32(Expr x, Quotient quotient, Fit fit) {
  Expr y = fitted_tanh(tanh_fit(fit), x, 1.0f, 1.0f, quotient);
  return quotient == Quotient::kEstimate ? clamp(y, -1.0f, 1.0f) : y;
}

// sigmoid(x) = 1/2 + tanh(x / 2) / 2 = 1/2 + (x / 4) P(x^2 / 4) / Q(x^2 / 4): P and Q evaluated
// at x^2 with their coefficients scaled by powers of two (exact), the 1/4 among P's. So its
// absolute error is about half tanh's, and it saturates at 0 and 1 (below -15.9, degree 3:
// -14.05, it is 0 rather than e^x (< 1.3e-7; < 8e-7): gates multiply it into states, where only
// absolute error matters).
// With the fractions, the last product x sum and the 1/2 are one multiply-add: the product is not
// rounded to -1/2 or 1/2 first, and where tanh's value rounds to 1 it lies within 2^-24 of 1. So
// near 0 the value is within 2^-25 = 3e-8 of 0, on either side, and at most 1 near 1. It is not
// clamped: two more operations per gate cost more than that error.
Expr sigmoid_f32(const Expr& x, Quotient quotient, Fit fit) {
  Expr y = 0.5f + fitted_tanh(tanh_fit(fit), x, 2.0f, 0.25f, quotient);
  return quotient == Quotient::kEstimate ? clamp(y, 0.0f, 1.0f) : y;
}

}  // namespace rnnc
