#!/usr/bin/python3
"""curve_rank_check: does ranking configs by an extrapolated learning curve
beat ranking them by their current loss? (issue 14, item 4; README-mf.md,
"Ranking by the extrapolation, offline".)

For each learning-curve table of tests/bench/curve_table.py (among them the
NAS-Bench-NLP curves of ../shared/data/curves, 341 real RNN language-model
trainings: a curve set no banditd default was tuned on), every config's curve
is cut after k epochs and its final loss predicted two ways: its loss at epoch k (what
ASHA's "current" promotion ranks by), and server/model/curve.c's pow3 fit
extrapolated to the last epoch (what "predicted" ranks by; the fit is
replicated here: least squares of a + b t^-c with b >= 0 over a grid of c in
[0.25, 3], never above the curve's current level), and the same fit with the
asymptote a kept >= 0 for a positive curve (curve.h's BD_CURVE_FLOOR_ZERO, asha's
"asymptote": "nonnegative"); and a model fitted across the configs instead of per
curve (not in banditd; an offline try): least squares of the loss at epoch 3k on
(1, loss at k, loss at k minus loss at k/3) over the third of configs best at k
(those ASHA would have promoted, so whose next rung it would know), applied to all.
Printed per (curve set, k):
Spearman's rank correlation of each prediction with the final losses, and
the share of the true top 1% and top 5% of final losses that the prediction
puts in its top third (ASHA with eta 3 promotes a third) and of the top 5%
in its top ninth (two rungs).

This is a ranking of all configs at once, not ASHA's greedy promotions
within a rung as results arrive; the end-to-end measure is bobos_replay.py.

    /usr/bin/python3 tests/bench/curve_rank_check.py [--epochs 3,9,27]

Python 3 standard library only.
"""

import argparse
import math
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from curve_table import NLP_FILE, TABLES, CurveTable, spearman  # noqa: E402

C_MIN, C_MAX, GRID = 0.25, 3.0, 32  # curve.h's BD_CURVE_C_MIN, BD_CURVE_C_MAX and curve.c's GRID
C_VALUES = [C_MIN * (C_MAX / C_MIN) ** (g / (GRID - 1)) for g in range(GRID)]


def pow3_predict(losses, target, floor_zero=False):
    """curve.c's bd_curve_predict for the points (1, losses[0]) .. (n, losses[n-1]);
    floor_zero: its flag BD_CURVE_FLOOR_ZERO (a positive curve's asymptote >= 0)."""
    n = len(losses)
    if n < 3 or target <= n:
        return losses[-1]
    best = None
    for c in C_VALUES:
        xs = [(i + 1) ** -c for i in range(n)]
        sx, sy = sum(xs), sum(losses)
        var = sum(x * x for x in xs) - sx * sx / n
        b = (sum(x * y for x, y in zip(xs, losses)) - sx * sy / n) / var if var > 1e-300 else 0.0
        b = max(b, 0.0)
        a = (sy - b * sx) / n
        if floor_zero and a < 0 and min(losses) > 0:
            a, b = 0.0, sum(x * y for x, y in zip(xs, losses)) / sum(x * x for x in xs)
        sse = sum((y - a - b * x) ** 2 for x, y in zip(xs, losses))
        if best is None or sse < best[0]:
            best = (sse, a, b, c)
    _, a, b, c = best
    now = min(a + b * n ** -c, losses[-1])
    return min(a + b * target ** -c, now)


def solve(a, b):
    """x with a x = b (Gaussian elimination with partial pivoting; a small and
    well conditioned here)."""
    d = len(b)
    a = [row[:] for row in a]
    b = b[:]
    for i in range(d):
        p = max(range(i, d), key=lambda r: abs(a[r][i]))
        a[i], a[p], b[i], b[p] = a[p], a[i], b[p], b[i]
        for r in range(i + 1, d):
            f = a[r][i] / a[i][i]
            for col in range(i, d):
                a[r][col] -= f * a[i][col]
            b[r] -= f * b[i]
    x = [0.0] * d
    for i in reversed(range(d)):
        x[i] = (b[i] - sum(a[i][col] * x[col] for col in range(i + 1, d))) / a[i][i]
    return x


def across_configs(curves, k, epochs, eta=3):
    """The loss at epoch eta*k predicted by a linear model over all configs:
    features 1, the loss at k and its change since epoch k/eta; fitted on the
    third of configs with the lowest loss at k (a small ridge keeps it solvable
    when the change is 0 for all, at k = 1)."""
    def features(c):
        return [1.0, c[k - 1], c[k - 1] - c[max(1, math.ceil(k / eta)) - 1]]
    later = min(eta * k, epochs)
    train = sorted(range(len(curves)), key=lambda i: curves[i][k - 1])[:max(3, len(curves) // eta)]
    xs = [features(curves[i]) for i in train]
    gram = [[sum(x[i] * x[j] for x in xs) + (1e-9 if i == j else 0.0) for j in range(3)] for i in range(3)]
    w = solve(gram, [sum(x[i] * curves[t][later - 1] for x, t in zip(xs, train)) for i in range(3)])
    return [sum(a * b for a, b in zip(w, features(c))) for c in curves]


def curve_sets():
    """Every table of curve_table.py (NAS-Bench-NLP's as "nasbench_nlp": its losses
    over ln(vocabulary), which changes no ranking), skipping NAS-Bench-NLP when
    ../shared/data is not there."""
    for name in TABLES:
        if TABLES[name][0] == NLP_FILE and not os.path.exists(NLP_FILE):
            print("(no %s: the NAS-Bench-NLP curves are skipped)" % NLP_FILE)
            continue
        t = CurveTable(name)
        yield name, [list(e) for e in t.err], t.epochs


def share_in_top(prediction, true_top, fraction):
    n = len(prediction)
    kept = set(sorted(range(n), key=lambda i: (prediction[i], i))[:max(1, int(n * fraction))])
    return len(kept & true_top) / len(true_top)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", default="3,9,27", help="where the curves are cut (ASHA's rungs with eta 3)")
    args = ap.parse_args()
    print("| curve set (configs) | epochs seen | rank by | Spearman with final | top 1% in top third | "
          "top 5% in top third | top 5% in top ninth |")
    print("|---|---|---|---|---|---|---|")
    for name, curves, epochs in curve_sets():
        finals = [c[epochs - 1] for c in curves]
        order = sorted(range(len(curves)), key=lambda i: finals[i])
        top1 = set(order[:max(2, math.ceil(0.01 * len(curves)))])
        top5 = set(order[:max(2, math.ceil(0.05 * len(curves)))])
        for k in (int(x) for x in args.epochs.split(",")):
            population = across_configs(curves, k, epochs)
            for rule, predict in (("current loss", lambda i: curves[i][k - 1]),
                                  ("pow3 extrapolation", lambda i: pow3_predict(curves[i][:k], epochs)),
                                  ("pow3, asymptote >= 0", lambda i: pow3_predict(curves[i][:k], epochs, True)),
                                  ("across configs", lambda i: population[i])):
                p = [predict(i) for i in range(len(curves))]
                print("| %s (%d) | %d | %s | %.2f | %.2f | %.2f | %.2f |" % (
                    name, len(curves), k, rule, spearman(p, finals), share_in_top(p, top1, 1 / 3),
                    share_in_top(p, top5, 1 / 3), share_in_top(p, top5, 1 / 9)))


if __name__ == "__main__":
    main()
