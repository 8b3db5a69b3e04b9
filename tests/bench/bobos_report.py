#!/usr/bin/python3
"""bobos_report: tables (markdown) and anytime plots (PNG) from the JSON lines
that bobos_replay.py wrote.

    /usr/bin/python3 tests/bench/bobos_report.py runs.jsonl [more.jsonl ...] \\
        --md tests/bench/results/bobos.md --png tests/bench/results/bobos_anytime.png

Every statistic is over seeds of the same (table, W, method): median and
quartiles [Q1, Q3]; "—" where fewer than half of the seeds have a value.
"""

import gzip
import json
import math
import statistics
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import report_main  # noqa: E402

ORDER = ["bo_bos", "bo_bos_noint", "bo_bos_code", "bo_bos_nostop", "gp_ucb", "random", "hyperband", "asha", "tpe", "tpe_hyperband", "tpe_median"]
LABEL = {"bo_bos": "banditd bo_bos", "bo_bos_noint": "bo_bos, no intermediate obs.",
         "bo_bos_code": "bo_bos, authors' code constants", "bo_bos_nostop": "bo_bos without stops (n0 49)", "gp_ucb": "banditd gp_ucb", "random": "banditd random",
         "hyperband": "banditd hyperband", "asha": "banditd asha", "tpe": "Optuna TPE",
         "tpe_hyperband": "Optuna TPE + HyperbandPruner", "tpe_median": "Optuna TPE + MedianPruner"}
FRACTIONS = (0.125, 0.25, 0.5, 1.0)


def best_at(points, t):
    v = math.inf
    for pt, pv in points:
        if pt > t:
            break
        v = pv
    return v


def first_time(points, target):
    for pt, pv in points:
        if pv <= target + 1e-12:
            return pt
    return math.inf


def figure_grid(n):
    """A figure with n panels, two per row; returns (figure, the n axes)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = 2 if n > 1 else 1
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(7.5 * cols, 5 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def quartiles(xs):
    xs = sorted(xs)
    if not xs:
        return None
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]


def fmt_q(xs, digits=4, unit=""):
    finite = [x for x in xs if x != math.inf]
    if len(finite) * 2 < len(xs) or not xs:
        return "—"
    q1, m, q3 = quartiles(xs)
    f = lambda x: "∞" if x == math.inf else ("%.*f%s" % (digits, x, unit))  # noqa: E731
    return "%s [%s, %s]" % (f(m), f(q1), f(q3))


def load(paths):
    runs = defaultdict(dict)  # (table, W) -> method -> seed -> run
    for p in paths:  # JSON lines, gzipped when the name ends in .gz (the committed runs)
        with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
            for line in f:
                r = json.loads(line)
                runs[(r["table"], r["workers"])].setdefault(r["method"], {})[r["seed"]] = r
    return runs


def report(runs):
    out = []
    for (table, w), by_method in sorted(runs.items()):
        methods = [m for m in ORDER if m in by_method]
        seeds = sorted(set.intersection(*(set(by_method[m]) for m in methods)))
        horizon = by_method[methods[0]][seeds[0]]["horizon"]
        tbest = by_method[methods[0]][seeds[0]]["table_best"]
        out.append("\n### %s, W = %d, horizon %.0f simulated s, %d seeds (table's best epoch-50 error %.4f)\n"
                   % (table, w, horizon, len(seeds), tbest))
        out.append("Best epoch-50 validation error found by time t (median [Q1, Q3]):\n")
        out.append("| method | " + " | ".join("t = %.0f s" % (f * horizon) for f in FRACTIONS) + " | trials | "
                   "trained to 50 | stopped |")
        out.append("|---|" + "---|" * (len(FRACTIONS) + 3))
        for m in methods:
            rs = [by_method[m][s] for s in seeds]
            cells = [fmt_q([best_at(r["points"], f * horizon) for r in rs]) for f in FRACTIONS]
            out.append("| %s | %s | %s | %s | %s |" % (
                LABEL[m], " | ".join(cells), fmt_q([r["trials"] for r in rs], 0),
                fmt_q([r["full"] for r in rs], 0), fmt_q([r["stopped"] for r in rs], 0)))

        if "gp_ucb" in by_method:
            out.append("\nTime to reach the error GP-UCB ends with (same seed): simulated seconds, median "
                       "[Q1, Q3] (∞: not reached by the horizon), the fraction of seeds that reach it, and the "
                       "per-seed ratio to GP-UCB's own time:\n")
            out.append("| method | time | reached | ratio to GP-UCB |")
            out.append("|---|---|---|---|")
            gp = {s: by_method["gp_ucb"][s] for s in seeds}
            gp_t = {s: first_time(gp[s]["points"], gp[s]["best"]) if gp[s]["best"] is not None else math.inf
                    for s in seeds}
            for m in methods:
                ts, ratios = [], []
                for s in seeds:
                    r = by_method[m][s]
                    target = gp[s]["best"]
                    t = first_time(r["points"], target) if target is not None else math.inf
                    ts.append(t)
                    ratios.append(t / gp_t[s] if gp_t[s] not in (0, math.inf) else math.inf)
                reached = sum(1 for t in ts if t != math.inf)
                out.append("| %s | %s | %d/%d | %s |" % (LABEL[m], fmt_q(ts, 1), reached, len(seeds),
                                                         fmt_q(ratios, 2)))

        if "bo_bos" in by_method:
            out.append("\nbo_bos against the others at equal time, per seed (wins / ties / losses of bo_bos; "
                       "lower error wins):\n")
            out.append("| against | " + " | ".join("t = %.0f s" % (f * horizon) for f in FRACTIONS) + " |")
            out.append("|---|" + "---|" * len(FRACTIONS))
            for m in methods:
                if m == "bo_bos":
                    continue
                cells = []
                for f in FRACTIONS:
                    wins = ties = losses = 0
                    for s in seeds:
                        a = best_at(by_method["bo_bos"][s]["points"], f * horizon)
                        b = best_at(by_method[m][s]["points"], f * horizon)
                        if a < b - 1e-12:
                            wins += 1
                        elif b < a - 1e-12:
                            losses += 1
                        else:
                            ties += 1
                    cells.append("%d / %d / %d" % (wins, ties, losses))
                out.append("| %s | %s |" % (LABEL[m], " | ".join(cells)))
            rs = [by_method["bo_bos"][s] for s in seeds]
            out.append("\nBOS stops (bo_bos): per run stopped trials %s, epochs not trained %s "
                       "(%.1f%% of all epochs trained and saved, summed over seeds), wrongly stopped "
                       "(the row's epoch-50 error beat the best known at the stop) %s, in all %d of %d stops." % (
                           fmt_q([r["stopped"] for r in rs], 0), fmt_q([r["saved"] for r in rs], 0),
                           100.0 * sum(r["saved"] for r in rs) / max(1, sum(r["saved"] + r["epochs"] for r in rs)),
                           fmt_q([r["wrong"] for r in rs], 0), sum(r["wrong"] for r in rs),
                           sum(r["stopped"] for r in rs)))
        problems = [p for m in methods for s in seeds for p in by_method[m][s].get("problems", [])]
        if problems:
            out.append("\nScheduler problems: %d, e.g. %s" % (len(problems), problems[:3]))
    return "\n".join(out) + "\n"


def plot(runs, path):
    keys = sorted(runs)
    fig, axes = figure_grid(len(keys))
    for ax, key in zip(axes, keys):
        by_method = runs[key]
        methods = [m for m in ORDER if m in by_method]
        seeds = sorted(set.intersection(*(set(by_method[m]) for m in methods)))
        horizon = by_method[methods[0]][seeds[0]]["horizon"]
        grid = [horizon * (i + 1) / 200 for i in range(200)]
        top = 0.0  # the y range shows the medians from a tenth of the horizon on
        for m in methods:
            med, lo, hi, xs = [], [], [], []
            for t in grid:
                vals = [best_at(by_method[m][s]["points"], t) for s in seeds]
                if sum(1 for v in vals if v != math.inf) * 2 < len(vals):
                    continue
                q1, md, q3 = quartiles(vals)
                xs.append(t)
                med.append(md)
                lo.append(q1)
                hi.append(q3 if q3 != math.inf else float("nan"))
            if not xs:
                continue
            top = max([top] + [v for x, v in zip(xs, med) if x >= horizon / 10])
            style = "-" if m in ("bo_bos", "gp_ucb") else "--" if m.startswith("tpe") else ":"
            line, = ax.plot(xs, med, style, label=LABEL[m], linewidth=2 if m == "bo_bos" else 1.3)
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.12)
        tbest = by_method[methods[0]][seeds[0]]["table_best"]
        if top > tbest:
            ax.set_ylim(tbest - 0.1 * (top - tbest), top + 0.3 * (top - tbest))
        ax.axhline(tbest, color="black", linewidth=0.6, linestyle="-.")
        ax.set_title("%s, W = %d (%d seeds; median, IQR; dash-dot: table's best)" % (key[0], key[1], len(seeds)))
        ax.set_xlabel("simulated wall-clock seconds (recorded training time)")
        ax.set_ylabel("best epoch-50 validation error")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    report_main(__doc__, load, report, plot)


if __name__ == "__main__":
    main()
