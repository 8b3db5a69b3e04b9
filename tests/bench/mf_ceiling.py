#!/usr/bin/python3
"""mf_ceiling: how often could any method that starts from random configs
meet issue 14's two per-seed bars on a table? A ceiling, from the tables
alone, beside what the replayed methods did.

    /usr/bin/python3 tests/bench/mf_ceiling.py tests/bench/results/mf_runs.jsonl.gz \\
        [tests/bench/results/mf_nasbench_nlp_runs.jsonl.gz ...] [--sims 4000] [--md out.md]

Bar 1 (the headline): a seed counts when the best fully trained error comes
within 0.01 of the table's best in at most half of Optuna TPE's median time
(the median over the runs file's `tpe` seeds at that W). The ceiling is an
oracle screener, more generous than any real method: its W workers take
distinct rows in a random order (no method knows a table before its first
results), each pays the row's first epoch, and the oracle then tells it the
row's final error for free; a row that meets the target is trained on to
its last epoch. Its probability p of meeting the bar in a seed bounds that
of every method whose picks within that time are random and that must
train a config fully to count it: every method here where the ceiling
binds (mlp_digits, fmnist_mlp at W = 4), as that time holds fewer full
trainings than TPE's and the GP's random starts, and ASHA's and
Hyperband's default sampler is random throughout. P(>= 19 of 20) follows
as a binomial. A method that guides its choice by a model of the rows screened
so far could in principle do better than random picks; it would also have
to do so without the oracle's free final errors.

Bar 2 (GP against random search at equal time, >= 15 of 20 seeds won): a
seed where random search already holds the table's best final error at the
horizon is a tie at best for any method. Its probability q (random
search with W workers training whole rows until the horizon, as the replay
does) leaves at most 1 - q per seed to win.

Every number is a function of the tables and the runs file: no clock.
"""

import argparse
import math
import os
import random
import statistics
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import md_table  # noqa: E402
from bobos_report import first_time, load  # noqa: E402
from mf_report import DEFAULT_ASHA, PEER, table  # noqa: E402


def oracle_screener_time(t, target, workers, rng):
    """Time until the oracle screener holds a fully trained row within target."""
    order = list(range(t.n))
    rng.shuffle(order)
    free = [0.0] * workers  # when each worker is next idle
    hit = math.inf
    for row in order:
        w = min(range(workers), key=free.__getitem__)
        if free[w] >= hit:  # no later start can finish sooner
            break
        start = free[w]
        if t.final[row] <= target + 1e-12:
            hit = min(hit, start + t.cum[row][-1])
            free[w] = start + t.cum[row][-1]  # busy training it
        else:
            free[w] = start + t.cum[row][1]  # one epoch, then the oracle's verdict
    return hit


def random_search_best(t, horizon, workers, rng):
    """Best final error random search has fully trained by the horizon."""
    free, best = [0.0] * workers, math.inf
    while True:
        w = min(range(workers), key=free.__getitem__)
        row = rng.randrange(t.n)
        end = free[w] + t.cum[row][-1]
        if end > horizon:
            if all(f + min_cost(t) > horizon for f in free):
                return best
            free[w] = horizon  # this worker's next training would not end in time
            continue
        free[w] = end
        best = min(best, t.final[row])


_min_cost = {}


def min_cost(t):
    if t.name not in _min_cost:
        _min_cost[t.name] = min(c[-1] for c in t.cum)
    return _min_cost[t.name]


def at_least(n, k, p):
    return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(k, n + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="bobos_replay.py JSON lines (.gz allowed)")
    ap.add_argument("--sims", type=int, default=4000, help="simulated seeds per (table, W)")
    ap.add_argument("--md", help="also write the tables here")
    a = ap.parse_args()
    if a.sims < 100 or a.sims > 1_000_000:
        raise SystemExit("mf_ceiling: --sims must be in [100, 1000000]")
    missing = [p for p in a.runs if not os.path.isfile(p)]
    if missing:
        raise SystemExit("mf_ceiling: no such runs file: %s" % ", ".join(missing))
    runs = load(a.runs)
    if not runs:
        raise SystemExit("mf_ceiling: no runs in %s" % ", ".join(a.runs))
    rows1, rows2 = [], []
    for (name, w), by_method in sorted(runs.items()):
        if PEER not in by_method:
            print("mf_ceiling: %s W=%d has no %s runs; skipped" % (name, w, PEER), file=sys.stderr)
            continue
        t = table(name)
        target = t.best + 0.01
        peer = statistics.median(first_time(r["points"], target) for r in by_method[PEER].values())
        bar = peer / 2
        hits = sum(oracle_screener_time(t, target, w, random.Random(s)) <= bar for s in range(a.sims))
        p = hits / a.sims
        cheap = sum(1 for i in range(t.n) if t.final[i] <= target + 1e-12 and t.cum[i][-1] <= bar)
        best_m, best_k, n_seeds = "-", -1, 0
        for m, seeds in by_method.items():
            if m == PEER or not m.startswith(("asha", "hyperband", "bohb", "bd_tpe", "gp_", "bo_bos", "random")):
                continue
            k = sum(1 for r in seeds.values() if first_time(r["points"], target) <= bar)
            if k > best_k or (k == best_k and m == DEFAULT_ASHA):
                best_m, best_k, n_seeds = m, k, len(seeds)
        default = by_method.get(DEFAULT_ASHA, {})
        k_default = sum(1 for r in default.values() if first_time(r["points"], target) <= bar)
        rows1.append([name, str(w), "%.2f" % peer, "%.2f" % bar, "%d of %d" % (cheap, t.n),
                      "%.1f%%" % (100 * p), "%.3f" % at_least(20, 19, p),
                      "%d of %d" % (k_default, len(default)) if default else "-",
                      "%s: %d of %d" % (best_m, best_k, n_seeds)])
        horizon = next(iter(by_method[PEER].values()))["horizon"]
        ties = sum(random_search_best(t, horizon, w, random.Random(s)) <= t.best for s in range(a.sims))
        q = ties / a.sims
        rows2.append([name, str(w), "%g" % horizon, "%.1f%%" % (100 * q), "%.3f" % at_least(20, 15, 1 - q)])
    out = ["Bar 1: within 0.01 of the table's best in <= 0.5x Optuna TPE's median, per seed "
           "(oracle screener: random rows, free final error after one epoch; %d simulated seeds)" % a.sims, "",
           md_table(["table", "W", "Optuna TPE median (s)", "half of it", "rows that meet the target and train "
                     "in that time", "oracle screener: P(seed meets it)", "P(>= 19 of 20)",
                     "%s (the asha default): seeds that met it" % DEFAULT_ASHA,
                     "best replayed banditd method: seeds that met it"], rows1), "",
           "Bar 2: seeds where random search holds the table's best at the horizon (a tie at best for any method)",
           "", md_table(["table", "W", "horizon (s)", "P(random search holds the best)",
                         "P(>= 15 of 20 won) if every other seed were won"], rows2)]
    text = "\n".join(out)
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write("# Ceilings for issue 14's per-seed bars (mf_ceiling.py)\n\n" + text + "\n")


if __name__ == "__main__":
    main()
