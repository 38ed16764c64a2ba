#!/usr/bin/env python3
# fit_exp.py N: the coefficients of fl_expf's polynomial in
# engine/backend/runtime/math_rt.c, and how they were made.
#
# exp(r) on |r| <= ln(2)/2 (widened by 1e-4: the two-part reduction can
# land a hair outside) by the polynomial of degree N that interpolates it
# at the N + 1 Chebyshev points of the interval -- within a small factor
# of the best (minimax) polynomial of that degree, and with N even the
# middle point is 0, so p(0) = 1.  The linear system is solved in exact
# rational arithmetic from the double values of the points and of exp.
# Prints the largest relative error in double and the coefficients of
# r^0 .. r^N.  math_rt.c uses:
#   scripts/fit_exp.py 6   (2.5e-09 in double)
# Pure Python, no packages.
import math, sys
from fractions import Fraction as F

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
    x = [F(0)] * n
    for i in reversed(range(n)):
        x[i] = (M[i][n] - sum(M[i][j] * x[j] for j in range(i + 1, n))) \
            / M[i][i]
    return x

def main():
    n = int(sys.argv[1]) + 1 if len(sys.argv) > 1 else 7
    a = math.log(2) / 2 * 1.0001
    pts = [a * math.cos(math.pi * (2 * k + 1) / (2 * n)) for k in range(n)]
    c = [float(v) for v in solve([[F(x) ** j for j in range(n)] for x in pts],
                                 [F(math.exp(x)) for x in pts])]
    worst = 0.0
    for i in range(20001):
        r = -a + 2 * a * i / 20000
        p = sum(c[j] * r ** j for j in range(n))
        worst = max(worst, abs(p - math.exp(r)) / math.exp(r))
    print("exp degree %d max rel err (double) %s" % (n - 1, worst))
    print(", ".join("%.9e" % v for v in c))

main()
