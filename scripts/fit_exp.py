#!/usr/bin/env python3
# fit_exp.py N: the coefficients of fl_expf's polynomial in
# engine/backend/runtime/math_rt.c, and how they were made.
#
# exp(r) on |r| <= ln(2)/2 (widened by 1e-4: the two-part reduction can
# land a hair outside) by the polynomial of degree N that interpolates it
# at the N + 1 Chebyshev points of the interval -- within a small factor
# of the best (minimax) polynomial of that degree, and with N even the
# middle point is 0, so p(0) = 1.  The linear system is solved in
# 60-digit decimal arithmetic from the double values of the points and of
# exp.
# Prints the largest relative error in double and the coefficients of
# r^0 .. r^N.  math_rt.c uses:
#   scripts/fit_exp.py 6   (2.5e-09 in double)
# Pure Python, no packages (fit_rational.py's solver).
import math, os, sys
from decimal import Decimal as D
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fit_rational import solve  # Gaussian elimination, 60 digits

def main():
    n = int(sys.argv[1]) + 1 if len(sys.argv) > 1 else 7
    a = math.log(2) / 2 * 1.0001
    pts = [a * math.cos(math.pi * (2 * k + 1) / (2 * n)) for k in range(n)]
    c = [float(v) for v in solve([[D(x) ** j for j in range(n)] for x in pts],
                                 [D(math.exp(x)) for x in pts])]
    worst = 0.0
    for i in range(20001):
        r = -a + 2 * a * i / 20000
        p = sum(c[j] * r ** j for j in range(n))
        worst = max(worst, abs(p - math.exp(r)) / math.exp(r))
    print("exp degree %d max rel err (double) %s" % (n - 1, worst))
    print(", ".join("%.9e" % v for v in c))

main()
