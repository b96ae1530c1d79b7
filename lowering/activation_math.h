// The recurrent gates' transcendental functions as plain float32 Halide arithmetic that
// vectorizes (Halide's exp/tanh call libm one lane at a time). Their error bounds, measured over
// dense grids by tests/unit/activation_math_test.cc:
//
//   tanh_f32     |error| and relative error < 5e-7 (measured 3.2e-7); exactly odd, within
//                [-1, 1], exactly +-1 from |x| = 7.97 on (tanh(7.97) is 2.4e-7 from 1)
//                Fit::kDegree3: < 2.5e-6 (measured 1.6e-6), exactly +-1 from |x| = 7.03 on
//   sigmoid_f32  |error| < 3e-7 (measured 1.7e-7), within [0, 1], exactly 0 and 1 from
//                |x| = 15.9 on; Fit::kDegree3: < 1.5e-6 (measured 7.9e-7), from |x| = 14.05 on;
//                Quotient::kFractions: within [-3e-8, 1], within 3e-8 of 0 and 6e-8 of 1 from
//                twice its saturation point on
//   exp_f32      relative error < 1e-7 on [-87, 88] (measured 7.9e-8), saturating outside
//
// The degree-4 bounds are below the float32 rounding of the products feeding them (sums of 256+
// terms), so the lowered kernels' tolerance against the reference
// (tests/unit/lowering_recurrent_test.cc) is unchanged by them. The degree-3 fit, two
// multiply-adds shorter per activation, is for steps that quantize h to 8 bits each step
// (lowering/recurrent_pipelines.cc): its error is ~1/1500 of that quantization's step for a row
// of h spanning [-0.5, 0.5] (1/255 of the range: 3.9e-3).
#pragma once

#include <Halide.h>

namespace rnnc {

// How tanh_f32 and sigmoid_f32 divide their two polynomials: kExact, a divide (correctly rounded);
// kEstimate, the hardware reciprocal estimate refined by one Newton step (within two units in the
// last place, at several times a divide's throughput); kFractions, P / Q as a constant plus two
// fractions (its partial fractions, Q's roots combined in pairs: scripts/fit-tanh.py prints them),
// two divides and four fewer multiplies per activation, for a CPU whose divider takes no multiply
// slots. The bounds above hold for all three; kFractions saturates at its own point (degree 4:
// |x| = 7.97, degree 3: 7.02), the first float32 x where its value is 1.
enum class Quotient { kExact, kEstimate, kFractions };

// Which rational fit of tanh (both also give sigmoid): degree 4 in x^2 on [0, 9], or degree 3 on
// [0, 7].
enum class Fit { kDegree4, kDegree3 };

Halide::Expr exp_f32(Halide::Expr x);
Halide::Expr tanh_f32(Halide::Expr x, Quotient quotient = Quotient::kExact,
                      Fit fit = Fit::kDegree4);
Halide::Expr sigmoid_f32(const Halide::Expr& x, Quotient quotient = Quotient::kExact,
                         Fit fit = Fit::kDegree4);

}  // namespace rnnc
