// The recurrent gates' transcendental functions as plain float32 Halide arithmetic that
// vectorizes (Halide's exp/tanh call libm one lane at a time). Their error bounds, measured over
// dense grids by tests/unit/activation_math_test.cc:
//
//   tanh_f32     |error| and relative error < 5e-7 (measured 2.6e-7); exactly odd, within
//                [-1, 1], within 1.2e-7 of +-1 at |x| >= 9 (tanh(9) is 3e-8 from 1)
//   sigmoid_f32  |error| < 3e-7 (measured 1.6e-7), within [0, 1]
//   exp_f32      relative error < 1e-7 on [-87, 88] (measured 7.9e-8), saturating outside
//
// These are below the float32 rounding of the products feeding them (sums of 256+ terms), so
// the lowered kernels' tolerance against the reference (tests/unit/lowering_recurrent_test.cc)
// is unchanged by them.
#pragma once

#include <Halide.h>

namespace rnnc {

// How tanh_f32 and sigmoid_f32 divide their two polynomials: kExact, a divide (correctly rounded);
// kEstimate, the hardware reciprocal estimate refined by one Newton step (within two units in the
// last place, at several times a divide's throughput; the bounds above hold for both).
enum class Quotient { kExact, kEstimate };

Halide::Expr exp_f32(Halide::Expr x);
Halide::Expr tanh_f32(Halide::Expr x, Quotient quotient = Quotient::kExact);
Halide::Expr sigmoid_f32(const Halide::Expr& x, Quotient quotient = Quotient::kExact);

}  // namespace rnnc
