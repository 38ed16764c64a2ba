#!/usr/bin/env python3
# fit_rational.py FUNC C NP NQ: the coefficients of fl_tanhf and fl_erff
# in engine/backend/runtime/math_rt.c, and how they were made.
#
# Fits  f(x) ~ x * P(x^2) / Q(x^2),  deg P = NP, deg Q = NQ, Q(0) = 1, on
# [0, C] by weighted linearised least squares (Sanathanan-Koerner
# iteration: solve P - f Q = 0 weighted by 1 / (f Q_previous), which
# converges to a small *relative* error), at Chebyshev points, with the
# normal equations in 60-digit decimal arithmetic (x^2 is scaled to [0, 1]
# first; the powers would otherwise span 20 orders of magnitude).  Prints
# the largest relative error in double precision and the coefficients of
# x^2.  math_rt.c uses:
#   scripts/fit_rational.py tanh 9.1 4 4  (2.5e-08 in double)
#   scripts/fit_rational.py erf 4 6 4     (7.4e-08 in double)
# Pure Python, no packages.
import math, sys
from decimal import Decimal as D, getcontext
getcontext().prec = 60

def solve(A, b):
    n = len(b)
    M = [row[:] + [b[i]] for i, row in enumerate(A)]
    for k in range(n):
        p = max(range(k, n), key=lambda i: abs(M[i][k]))
        M[k], M[p] = M[p], M[k]
        for i in range(k + 1, n):
            f = M[i][k] / M[k][k]
            for j in range(k, n + 1):
                M[i][j] -= f * M[k][j]
    x = [D(0)] * n
    for i in range(n - 1, -1, -1):
        s = M[i][n] - sum(M[i][j] * x[j] for j in range(i + 1, n))
        x[i] = s / M[i][i]
    return x

def fit(fn, c, npn, nq, npts=1500, iters=8):
    xs = [c * (1 - math.cos(math.pi * (i + 0.5) / npts)) / 2 for i in range(npts)]
    xs = [x for x in xs if x > 1e-6]
    S = D(c * c)  # scale t = x^2 / S
    ts = [D(x * x) / S for x in xs]
    fs = [D(repr(fn(x) / x)) for x in xs]
    q = [D(1)] + [D(0)] * nq
    for it in range(iters):
        rows, rhs = [], []
        for t, f in zip(ts, fs):
            qp = sum(q[j] * t ** j for j in range(nq + 1))
            w = 1 / (f * qp)
            row = [w * t ** j for j in range(npn + 1)] + [-w * f * t ** j for j in range(1, nq + 1)]
            rows.append(row); rhs.append(w * f)
        n = len(rows[0])
        A = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
        b = [sum(r[i] * y for r, y in zip(rows, rhs)) for i in range(n)]
        sol = solve(A, b)
        p = sol[:npn + 1]; q = [D(1)] + sol[npn + 1:]
    # back to coefficients of x^2
    P = [float(p[j] / S ** j) for j in range(npn + 1)]
    Q = [float(q[j] / S ** j) for j in range(nq + 1)]
    err = 0
    for i in range(20001):
        x = c * i / 20000 + 1e-9
        t = x * x
        v = x * sum(P[j] * t ** j for j in range(npn + 1)) / sum(Q[j] * t ** j for j in range(nq + 1))
        err = max(err, abs(v - fn(x)) / abs(fn(x)))
    return P, Q, err

def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("tanh", "erf"):
        sys.exit("usage: fit_rational.py tanh|erf C NP NQ")
    name = sys.argv[1]; c = float(sys.argv[2]); npn = int(sys.argv[3]); nq = int(sys.argv[4])
    fn = {"tanh": math.tanh, "erf": math.erf}[name]
    P, Q, err = fit(fn, c, npn, nq)
    print(name, c, npn, nq, "max rel err (double)", err)
    print("P", ", ".join("%.9e" % v for v in P))
    print("Q", ", ".join("%.9e" % v for v in Q))

if __name__ == "__main__":
    main()
