#!/usr/bin/python3
"""cash_rule_model: an exact Python model of rising_bandits with inner random
in the shuffle form of cash_replay.py, to compare elimination rules quickly
(issue 15, item 5). In that form a proposal is ignored, so a run is fixed by
the rule alone: rounds pull every surviving arm once in arm order, arm k's
t-th pull reads the t-th record of the seeded shuffle of its records (a
repeat once they are used up: it never raises the best), and after each
round the bounds of rising_bound.c decide the eliminations. `--check
runs.jsonl` replays the daemon's rb_random / rb_random_paper shuffle runs
and asserts the same arm sequences and bests.

    /usr/bin/python3 tests/bench/cash_rule_model.py               # the table in README-cash.md
    /usr/bin/python3 tests/bench/cash_rule_model.py --check runs.jsonl

Measures per rule, over the datasets x seeds: the share of runs where every
best arm of the dataset was eliminated, the share of datasets where the
rule's mean best over seeds >= uniform's, the mean gap to the dataset's
best, the mean number of arms left at T, and the same first two measures on
each half of the datasets (alternate names) as a held-out check.
"""

import argparse
import glob
import gzip
import json
import math
import os
import random
import statistics
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data", "cash", "mindware-bal-acc"))


def load(data):
    if not os.path.isdir(data):
        raise SystemExit("cash_rule_model: the data directory %s does not exist (--data)" % data)
    out = {}
    for p in sorted(glob.glob(os.path.join(data, "*.json"))):
        with open(p) as f:
            d = json.load(f)
        arms = sorted(d["arms"])
        out[os.path.basename(p)[:-5]] = (arms, {a: [r["score"] for r in d["arms"][a]] for a in arms})
    if not out:
        raise SystemExit("cash_rule_model: no *.json dataset in %s (--data)" % data)
    return out


def harmonic(k):
    return sum(1.0 / i for i in range(1, k + 1))


def growth(y, C):
    t = len(y)
    return None if t <= C else (y[t - 1] - y[t - 1 - C]) / C


def rule_paper(C=7):
    def bound(y, rewards, T, ctx):
        w = growth(y, C)
        if w is None:
            return y[-1], 1.0, False
        return y[-1], (min(y[-1] + w * (T - len(y)), 1.0) if w > 0 else y[-1]), True
    return bound


def rule_tail(k=5, C=7, scale=None, horizon="arm"):
    """upper_bound "tail" (horizon "arm": T - t, as rising_bandits.c); "left": T - pulls made;
    "share": (T - pulls made) / surviving arms; scale None: 1 + 1/sqrt(k')."""
    paper = rule_paper(C)

    def bound(y, rewards, T, ctx):
        lower, upper, ready = paper(y, rewards, T, ctx)
        n = len(rewards)
        if not ready or n < 2:
            return lower, upper, ready
        kk = min(k, n - 1)
        top = sorted(rewards, reverse=True)
        sigma = (top[0] - top[kk]) / harmonic(kk)
        h = {"arm": T - len(y), "left": T - ctx["pulls"], "share": (T - ctx["pulls"]) / ctx["alive"]}[horizon]
        if sigma > 0 and h > 0:
            s = scale if scale is not None else 1 + 1 / math.sqrt(kk)
            upper = max(upper, min(lower + s * sigma * math.log((n + h) / n), 1.0))
        return lower, upper, ready
    return bound


def rule_consecutive(m=3, C=7):
    """Elimination needs the comparison to hold at m consecutive rounds: u = the largest of the last m."""
    paper = rule_paper(C)

    def bound(y, rewards, T, ctx):
        lower, upper, ready = paper(y, rewards, T, ctx)
        hist = ctx["state"].setdefault("u", [])
        if ready:
            hist.append(upper)
        if len(hist) < m:
            return lower, 1.0, False
        return lower, max(hist[-m:]), True
    return bound


def rule_min_pulls(fraction=0.5, C=7):
    """No elimination before the arm has fraction * T / K pulls."""
    paper = rule_paper(C)

    def bound(y, rewards, T, ctx):
        lower, upper, ready = paper(y, rewards, T, ctx)
        return lower, upper, ready and len(y) >= fraction * T / ctx["K"]
    return bound


def rule_long_window(fraction=0.75, C=7):
    """w over the last max(C, fraction * t) pulls."""
    def bound(y, rewards, T, ctx):
        w = growth(y, max(C, int(len(y) * fraction)))
        if w is None:
            return y[-1], 1.0, False
        return y[-1], (min(y[-1] + w * (T - len(y)), 1.0) if w > 0 else y[-1]), True
    return bound


def rule_uniform():
    return lambda y, rewards, T, ctx: (y[-1], 1.0, False)


def run(data, name, seed, T, rule):
    """(arm sequence, {arm index: pulls made when it was eliminated}, best)."""
    arms, recs = data[name]
    order = {}
    for a in arms:
        idx = list(range(len(recs[a])))
        random.Random("shuffle:%s:%d:%s" % (name, seed, a)).shuffle(idx)
        order[a] = idx
    y = {a: [] for a in arms}
    rewards = {a: [] for a in arms}
    state = {k: {} for k in range(len(arms))}
    alive, seq, elim = set(range(len(arms))), [], {}

    repeat_rng = random.Random("repeat:%s:%d" % (name, seed))  # cash_replay.py's Oracle: one per run

    def pull(k):
        a = arms[k]
        prev = y[a][-1] if y[a] else 0.0
        if len(y[a]) < len(recs[a]):
            s = recs[a][order[a][len(y[a])]]
        else:  # every record used: one of them again, drawn as the Oracle draws it
            s = recs[a][repeat_rng.choice(order[a])]
        rewards[a].append(s)
        y[a].append(max(prev, s))
        seq.append(k)

    while len(seq) < T:
        if len(alive) == 1:
            pull(next(iter(alive)))
            continue
        for k in sorted(alive):
            if len(seq) < T:
                pull(k)
        if len(seq) >= T:
            break
        b = {}
        for k in alive:
            ctx = {"pulls": len(seq), "alive": len(alive), "K": len(arms), "state": state[k]}
            b[k] = rule(y[arms[k]], rewards[arms[k]], T, ctx)
        # rising_bound.c's bd_rising_eliminate: ascending upper (ties: index); the eliminator is the
        # surviving other arm with the largest lower (ties: index); non-strict
        for j in sorted(alive, key=lambda k: (b[k][1], k)):
            others = [i for i in sorted(alive) if i != j]
            if not others or not b[j][2]:
                continue
            i = max(others, key=lambda i: (b[i][0], -i))
            if b[i][0] >= b[j][1]:
                alive.discard(j)
                elim[j] = len(seq)
    return seq, elim, max(max(v) if v else 0.0 for v in y.values())


def evaluate(data, rule, names, seeds, T, uniform_cache):
    lost, n, gaps, left, ge = 0, 0, [], [], 0
    for name in names:
        arms, recs = data[name]
        best = max(max(v) for v in recs.values())
        best_arms = [i for i, a in enumerate(arms) if max(recs[a]) == best]
        mine, unif = [], []
        for s in seeds:
            seq, elim, b = run(data, name, s, T, rule)
            key = (name, s, T)
            if key not in uniform_cache:
                uniform_cache[key] = run(data, name, s, T, rule_uniform())[2]
            mine.append(b)
            unif.append(uniform_cache[key])
            n += 1
            lost += all(i in elim for i in best_arms)
            gaps.append(best - b)
            left.append(len(arms) - len(elim))
        ge += statistics.mean(mine) >= statistics.mean(unif) - 1e-12
    return {"lost": lost / n, "ge": ge / len(names), "gap": statistics.mean(gaps), "left": statistics.mean(left)}


RULES = [
    ("paper (Inequality 9, C = 7)", rule_paper()),
    ("tail, k = 5 (the new default)", rule_tail(5)),
    ("tail, k = 3", rule_tail(3)),
    ("tail, k = 8", rule_tail(8)),
    ("tail, k = 5, scale 1 (expected rise)", rule_tail(5, scale=1.0)),
    ("tail, k = 5, horizon T - pulls made", rule_tail(5, horizon="left")),
    ("tail, k = 5, horizon (T - pulls made) / arms left", rule_tail(5, horizon="share")),
    ("window max(C, 3t/4)", rule_long_window(0.75)),
    ("3 consecutive rounds", rule_consecutive(3)),
    ("at least T / (2K) pulls", rule_min_pulls(0.5)),
]


def check(data, path):
    rules = {"rb_random": rule_tail(5), "rb_random_paper": rule_paper()}
    n = bad = 0
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            r = json.loads(line)
            if r["oracle"] != "shuffle" or r["method"] not in rules:
                continue
            seq, _, best = run(data, r["dataset"], r["seed"], r["trials"], rules[r["method"]])
            n += 1
            if "".join(str(k) for k in seq) != r["arm_seq"] or abs(best - r["best"]) > 1e-12:
                bad += 1
                print("differs: %s seed %d %s" % (r["dataset"], r["seed"], r["method"]))
    if not n:
        raise SystemExit("cash_rule_model: no rb_random or rb_random_paper shuffle run in %s" % path)
    print("%d runs checked, %d differ" % (n, bad))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--check", help="runs (JSON lines, .gz or not) of cash_replay.py to compare with")
    args = ap.parse_args()
    data = load(os.path.abspath(args.data))
    if args.check:
        sys.exit(check(data, args.check))
    names = sorted(data)
    seeds = range(args.seeds)
    cache = {}
    print("| rule | every best arm eliminated | >= uniform | gap to best | arms left at T |"
          " halves: eliminated | halves: >= uniform |")
    print("|---|---|---|---|---|---|---|")
    for label, rule in RULES:
        a = evaluate(data, rule, names, seeds, args.trials, cache)
        h1 = evaluate(data, rule, names[::2], seeds, args.trials, cache)
        h2 = evaluate(data, rule, names[1::2], seeds, args.trials, cache)
        print("| %s | %.1f%% | %.1f%% | %.5f | %.2f | %.1f%%, %.1f%% | %.1f%%, %.1f%% |" % (
            label, 100 * a["lost"], 100 * a["ge"], a["gap"], a["left"], 100 * h1["lost"], 100 * h2["lost"],
            100 * h1["ge"], 100 * h2["ge"]), flush=True)


if __name__ == "__main__":
    main()
