#!/usr/bin/python3
"""Fits the rational tanh of lowering/activation_math.cc and prints its coefficients.

tanh(x) ~ x P(x^2) / Q(x^2) on [0, CLAMP] (|x| >= CLAMP is clamped), P and Q of degree DEGREE
with P(0) = Q(0) = 1 (odd, exact slope at 0). Minimizes the maximum relative error of tanh(x) / x
by Lawson's iteratively reweighted least squares on the linearized residual
x P(s) - tanh(x) Q(s), s = (x / CLAMP)^2 (scaled so the normal equations stay well conditioned).
Then evaluates the float32-rounded coefficients in float32 Horner arithmetic and prints the
maximum absolute and relative error over a dense grid.

    /usr/bin/python3 scripts/fit-tanh.py        degree 4 on [0, 9] (tanh(9) = 1 - 3e-8): kTanhDegree4
    /usr/bin/python3 scripts/fit-tanh.py 3 7    degree 3 on [0, 7] (tanh(7) = 1 - 1.7e-6): kTanhDegree3
(needs numpy: Debian's python3-numpy)
"""
import sys

import numpy as np

DEGREE = int(sys.argv[1]) if len(sys.argv) > 1 else 4
CLAMP = float(sys.argv[2]) if len(sys.argv) > 2 else 9.0


def fit():
    x = np.concatenate([np.linspace(1e-4, CLAMP, 6000), np.geomspace(1e-6, 0.5, 500)])
    s = (x / CLAMP) ** 2
    f = np.tanh(x)
    # Unknowns: p_1..p_n and q_1..q_n (p_0 = q_0 = 1): x (1 + sum p_i s^i) - f (1 + sum q_i s^i).
    powers = np.vstack([s ** i for i in range(1, DEGREE + 1)]).T
    system = np.hstack([x[:, None] * powers, -f[:, None] * powers])
    rhs = f - x
    weights = np.ones_like(x)
    q_prev = np.ones_like(x)
    for _ in range(400):
        scale = weights / (f * q_prev)  # relative error of P/Q
        sol, *_ = np.linalg.lstsq(system * scale[:, None], rhs * scale, rcond=None)
        p, q = sol[:DEGREE], sol[DEGREE:]
        q_prev = 1 + powers @ q
        error = np.abs(x * (1 + powers @ p) / q_prev - f) / f
        weights = weights * (error / error.max()) ** 0.3 + 1e-300
        weights *= len(weights) / weights.sum()
    unscale = CLAMP ** (-2.0 * np.arange(1, DEGREE + 1))
    return np.concatenate([[1.0], p * unscale]), np.concatenate([[1.0], q * unscale])


def horner32(coefficients, t):
    acc = np.full_like(t, np.float32(coefficients[-1]))
    for c in coefficients[-2::-1]:
        acc = (acc * t + np.float32(c)).astype(np.float32)
    return acc


def main():
    p, q = fit()
    x = np.concatenate([np.linspace(0, CLAMP, 400001), np.geomspace(1e-8, 1, 10000)])
    x = x.astype(np.float32)
    t = x * x
    y = (x * horner32(p, t) / horner32(q, t)).astype(np.float32)
    exact = np.tanh(x.astype(np.float64))
    err = np.abs(y - exact)
    print("P:", ", ".join("%.9e" % np.float32(c) for c in p))
    print("Q:", ", ".join("%.9e" % np.float32(c) for c in q))
    print("max abs error %.3g, max rel error %.3g (float32 Horner, no FMA)"
          % (err.max(), (err[x > 0] / exact[x > 0]).max()))


if __name__ == "__main__":
    main()
