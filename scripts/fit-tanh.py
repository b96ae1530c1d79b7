#!/usr/bin/python3
"""Fits the rational tanh of lowering/activation_math.cc and prints its coefficients.

tanh(x) ~ x P(x^2) / Q(x^2) on [0, CLAMP] (|x| >= CLAMP is clamped), P and Q of degree DEGREE
with P(0) = Q(0) (odd, exact slope at 0), printed with Q monic. Minimizes the maximum relative
error of tanh(x) / x by Lawson's iteratively reweighted least squares on the linearized residual
x P(s) - tanh(x) Q(s), s = (x / CLAMP)^2 (scaled so the normal equations stay well conditioned).
Then evaluates the float32-rounded coefficients in float32 Horner arithmetic and prints the
maximum absolute and relative error over a dense grid.

It also prints the same rational function as a constant plus fractions (Quotient::kFractions):
P(s) / Q(s) = C + sum of r_i / (s + a_i) over Q's roots -a_i (all real and negative for these
fits, with positive residues r_i, so no term cancels another), the terms of the two largest roots
combined into (n1 s + n0) / (s^2 + d1 s + d0), and so on in pairs, an odd one left alone as
n0 / (s + d0). Those float32 constants are evaluated the same way.

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


def fractions(p, q):
    """C and the fractions [(n1, n0, d1, d0)] (d1 = None: n0 / (s + d0)) of P / Q, from the
    float32-rounded coefficients (lowest degree first)."""
    p = np.array([np.float32(c) for c in p], dtype=np.float64)
    q = np.array([np.float32(c) for c in q], dtype=np.float64)
    roots = np.roots(q[::-1])
    assert np.all(np.abs(roots.imag) == 0) and np.all(roots.real < 0), roots
    poles = sorted(-roots.real, reverse=True)  # a_i, largest first
    dq = np.polyder(q[::-1])
    residue = {a: np.polyval(p[::-1], -a) / np.polyval(dq, -a) for a in poles}
    terms = []
    for i in range(0, len(poles) - 1, 2):
        a, b = poles[i], poles[i + 1]
        terms.append((residue[a] + residue[b], residue[a] * b + residue[b] * a, a + b, a * b))
    if len(poles) % 2:
        terms.append((0.0, residue[poles[-1]], None, poles[-1]))
    return p[-1] / q[-1], terms


def fractions32(constant, terms, x):
    """x (C + the fractions) in float32, each multiply-add formed in float64 and rounded once (close
    to the kernels' FMAs, not bit for bit: the saturation points in lowering/activation_math.cc come
    from the JIT-compiled form)."""
    f32 = np.float32
    s = (x * x).astype(np.float32)
    total = np.full_like(s, f32(constant))
    for n1, n0, d1, d0 in terms:
        if d1 is None:
            term = (f32(n0) / (s + f32(d0)).astype(np.float32)).astype(np.float32)
        else:
            numerator = (f32(n1) * s.astype(np.float64) + f32(n0)).astype(np.float32)
            base = (s + f32(d1)).astype(np.float32)
            denominator = (base.astype(np.float64) * s + f32(d0)).astype(np.float32)
            term = (numerator / denominator).astype(np.float32)
        total = (total + term).astype(np.float32)
    return (x * total).astype(np.float32)


def main():
    p, q = fit()
    x = np.concatenate([np.linspace(0, CLAMP, 400001), np.geomspace(1e-8, 1, 10000)])
    x = x.astype(np.float32)
    t = x * x
    # P and Q divided by Q's leading coefficient (Q monic: its first Horner step is an add), each
    # coefficient from the float32-rounded fit, rounded to float32 again: the arrays of
    # lowering/activation_math.cc, highest degree first.
    lead = float(np.float32(q[-1]))
    p_monic = [np.float32(float(np.float32(c)) / lead) for c in p]
    q_monic = [np.float32(float(np.float32(c)) / lead) for c in q]
    y = (x * horner32(p_monic, t) / horner32(q_monic, t)).astype(np.float32)
    exact = np.tanh(x.astype(np.float64))
    err = np.abs(y - exact)
    print("P:", ", ".join("%.9e" % c for c in p_monic[::-1]))
    print("Q:", ", ".join("%.9e" % c for c in q_monic[::-1]))
    print("max abs error %.3g, max rel error %.3g (float32 Horner, no FMA)"
          % (err.max(), (err[x > 0] / exact[x > 0]).max()))
    constant, terms = fractions(p, q)
    print("fractions: C = %.9e" % np.float32(constant))
    for n1, n0, d1, d0 in terms:
        if d1 is None:
            print("  %.9e / (s + %.9e)" % (np.float32(n0), np.float32(d0)))
        else:
            print("  (%.9e s + %.9e) / (s^2 + %.9e s + %.9e)"
                  % (np.float32(n1), np.float32(n0), np.float32(d1), np.float32(d0)))
    y = fractions32(constant, terms, x)
    err = np.abs(y - exact)
    print("max abs error %.3g, max rel error %.3g, largest value %.9g (fractions, float32)"
          % (err.max(), (err[x > 0] / exact[x > 0]).max(), y.max()))


if __name__ == "__main__":
    main()
