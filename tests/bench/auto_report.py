#!/usr/bin/python3
"""auto_report: issue 40's tables (README-auto.md) from bobos_replay.py's
JSON lines: per learning-curve table its epoch-1 vs final rank correlation
(Spearman and Kendall's tau-b over the table's rows), then per W the
simulated time until the best fully trained error comes within 0.01 of the
table's best final error, and until it reaches the table's top 1%, median
[Q1, Q3] over the seeds with the seeds that got there, for `auto` beside
every other method in the runs; and the issue's done-when checks for auto
against the best banditd scheduler of the cell (most seeds reaching the
target, then the lowest median) and against Optuna TPE without a pruner.

    /usr/bin/python3 tests/bench/auto_report.py runs.jsonl [more.jsonl.gz ...] --seeds 0-29 --md out.md \
        [--methods auto,bd_tpe,...] [--previous-auto earlier_runs.jsonl.gz]

Each method is reported over the seeds it ran within --seeds (shown beside
it); the ratios compare medians over those seeds.
"""

import argparse
import math
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bobos_report import first_time, fmt_q, load, quartiles  # noqa: E402
from mf_report import table, targets  # noqa: E402

OPTUNA = ("tpe", "tpe_hyperband", "tpe_median")
LABEL = {"auto": "banditd `auto` (asha, fidelity winners, random proposals)",
         "auto_prev": "banditd `auto` before (asha, fidelity measured, TPE proposals)", "bd_tpe": "banditd `tpe`",
         "asha_learned": "banditd `asha`, new-study defaults", "asha_measured": "banditd `asha`, fidelity measured",
         "asha_tpe3": "banditd `asha`, TPE, 3 brackets", "asha_tpe": "banditd `asha`, TPE, 1 bracket",
         "hyperband": "banditd `hyperband`", "bohb": "banditd `hyperband`, TPE (BOHB)", "random": "banditd `random`",
         "tpe": "Optuna 3.1 TPE, no pruner", "tpe_hyperband": "Optuna 3.1 TPE, HyperbandPruner",
         "tpe_median": "Optuna 3.1 TPE, MedianPruner"}
ORDER = ["auto", "auto_prev", "bd_tpe", "asha_learned", "asha_measured", "asha_tpe3", "asha_tpe", "hyperband", "bohb", "random",
         "tpe", "tpe_hyperband", "tpe_median"]


def parse_range(text):
    out = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def kendall(xs, ys):
    n, s, tx, ty = len(xs), 0, 0, 0
    for i in range(n):
        for j in range(i):
            a = (xs[i] > xs[j]) - (xs[i] < xs[j])
            b = (ys[i] > ys[j]) - (ys[i] < ys[j])
            s += a * b
            tx += a == 0
            ty += b == 0
    n0 = n * (n - 1) / 2
    return s / math.sqrt((n0 - tx) * (n0 - ty))


def med(xs):
    return quartiles(xs)[1] if xs else math.inf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--seeds", default="0-29")
    ap.add_argument("--methods", help="comma-separated: only these (default: every method in the runs)")
    ap.add_argument("--md")
    ap.add_argument("--previous-auto", metavar="RUNS",
                    help="a runs file whose method \"auto\" is an earlier auto rule: reported as auto_prev "
                         "(beside auto, not a candidate for the best single scheduler)")
    args = ap.parse_args()
    want = parse_range(args.seeds)
    runs = load(args.runs)  # a later file's run of the same (table, W, method, seed) replaces an earlier one's
    if args.previous_auto:
        for cell, by_method in load([args.previous_auto]).items():
            if "auto" in by_method:
                runs[cell]["auto_prev"] = by_method["auto"]
    if args.methods:
        keep = set(args.methods.split(","))
        for cell in runs.values():
            for m in set(cell) - keep:
                del cell[m]
    out = ["## Tables: how well the first epoch ranks the final error", "",
           "| table | rows x epochs | Spearman(epoch 1, final) | Kendall tau-b(epoch 1, final) |", "|---|---|---|---|"]
    for name in sorted({t for t, _ in runs}):
        t = table(name)
        first = [e[0] for e in t.err]
        out.append("| `%s` | %d x %d | %.2f | %.2f |" % (name, len(t.err), t.epochs, t.rank_correlation(1),
                                                       kendall(first, t.final)))
    checks = []
    for (name, w), by_method in sorted(runs.items()):
        goals = targets(name)
        horizon = next(iter(next(iter(by_method.values())).values()))["horizon"]
        out += ["", "### %s, W = %d (horizon %g simulated s)" % (name, w, horizon), "",
                "| method | seeds | within 0.01: median [Q1, Q3] | reached | top 1%: median [Q1, Q3] | reached |",
                "|---|---|---|---|---|---|"]
        times = {}
        for m in [m for m in ORDER if m in by_method] + sorted(set(by_method) - set(ORDER)):
            seeds = sorted(set(by_method[m]) & want)
            if not seeds:
                continue
            ts = [[first_time(by_method[m][s]["points"], g) for s in seeds] for g in goals]
            times[m] = ts
            cells = []
            for x in ts:
                cells += [fmt_q(x, digits=1), "%d/%d" % (sum(v != math.inf for v in x), len(x))]
            out.append("| %s | %s | %s |" % (LABEL.get(m, m), "%d-%d" % (seeds[0], seeds[-1]) if
                                             seeds == list(range(seeds[0], seeds[-1] + 1)) else len(seeds),
                                             " | ".join(cells)))
        if "auto" not in times:
            continue
        for k, what in enumerate(("within 0.01", "top 1%")):
            bd = {m: ts[k] for m, ts in times.items() if m not in OPTUNA and m not in ("auto", "auto_prev")}
            if not bd:
                continue
            reached = lambda x: sum(v != math.inf for v in x)  # noqa: E731
            best = min(bd, key=lambda m: (-reached(bd[m]), med(bd[m])))
            a = times["auto"][k]
            opt = times.get("tpe", [None, None])[k]
            def ratio(x, peer):
                """auto's median over peer's: "—" when either is not reached by the horizon (∞) or peer is absent"""
                if peer is None or med(peer) in (0, math.inf) or med(x) == math.inf:
                    return "—"
                return "%.2fx" % (med(x) / med(peer))
            checks.append("| %s | %d | %s | %s: %d | %d | %s | %s |" % (
                name, w, what, LABEL.get(best, best), reached(bd[best]), reached(a), ratio(a, bd[best]),
                ratio(a, opt)))
    out += ["", "## Done-when checks for `auto`", "",
            "Best banditd scheduler of the cell: most seeds reaching the target, then the lowest median. "
            "Targets: seeds >= best's - 1; median <= 1.1x the best's and <= 0.7x Optuna TPE's (no pruner). "
            "—: a median not reached by the horizon (∞) on either side.", "",
            "| table | W | target | best banditd scheduler: seeds | auto: seeds | auto median / best's | "
            "auto median / Optuna TPE's |", "|---|---|---|---|---|---|---|"] + checks
    text = "\n".join(out) + "\n"
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
