#!/usr/bin/python3
"""cash_compare.py: a rising_bandits variant's runs (cash_replay.py output) against the
stored runs of the default and of uniform allocation on the same (dataset, seed) pairs:
how often every best arm of the dataset was eliminated, on how many datasets the mean
best over seeds is >= uniform's, and the mean gap to the dataset's best.

    /usr/bin/python3 tests/bench/cash_compare.py CANDIDATE.jsonl[.gz] \
        [--stored tests/bench/results/cash_bandits_runs.jsonl.gz]

The candidate's nearest-form method is compared with rb_gp and uniform, its
shuffle-form method with rb_random and uniform_random (the stored runs' names).
A uniform method in the candidate file (uniform_tpe: round robin with the same
inner optimizer) replaces the stored one for the candidates of that form whose
inner optimizer it shares (rb_tpe*), and is not a candidate itself."""

import argparse
import collections
import gzip
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = {"nearest": ("rb_gp", "uniform"), "shuffle": ("rb_random", "uniform_random")}


def read(path):
    runs = collections.defaultdict(dict)  # (oracle, method) -> (dataset, seed) -> run
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            r = json.loads(line)
            if r["trials"] == 200:
                runs[(r["oracle"], r["method"])][(r["dataset"], r["seed"])] = r
    if not runs:
        raise SystemExit("cash_compare: no T = 200 runs in %s" % path)
    return runs


def lost_every_best_arm(run):
    alive = [a["arm"] for a in (run.get("state") or {}).get("arms", []) if a.get("eliminated_round") is None]
    return not any(b in alive for b in run["best_arms"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("candidate")
    ap.add_argument("--stored", default=os.path.join(HERE, "results", "cash_bandits_runs.jsonl.gz"))
    args = ap.parse_args()
    cand, stored = read(args.candidate), read(args.stored)
    for (oracle, method), runs in sorted(cand.items()):
        if method.startswith("uniform"):
            continue
        base_name, unif_name = BASE[oracle]
        if method.startswith("rb_tpe") and (oracle, "uniform_tpe") in cand:
            unif_name = "uniform_tpe"
        base = stored[(oracle, base_name)]
        unif = cand[(oracle, unif_name)] if (oracle, unif_name) in cand else stored[(oracle, unif_name)]
        keys = sorted(k for k in runs if k in base and k in unif)
        if not keys:
            raise SystemExit("cash_compare: no stored runs share %s's (dataset, seed) pairs" % method)
        datasets = sorted({d for d, _ in keys})

        def datasets_at_least_uniform(m):
            n = 0
            for d in datasets:
                ks = [k for k in keys if k[0] == d]
                n += statistics.mean(m[k]["best"] for k in ks) >= statistics.mean(unif[k]["best"] for k in ks) - 1e-12
            return n

        def gap(m):
            return statistics.mean(m[k]["dataset_best"] - m[k]["best"] for k in keys)

        print("%s, %s vs %s: %d runs (%d datasets, seeds %s)" % (oracle, method, base_name, len(keys), len(datasets),
                                                                ",".join(str(s) for s in sorted({s for _, s in keys}))))
        print("  every best arm eliminated: %.1f%% vs %.1f%%" % (
            100.0 * sum(lost_every_best_arm(runs[k]) for k in keys) / len(keys),
            100.0 * sum(lost_every_best_arm(base[k]) for k in keys) / len(keys)))
        print("  datasets with mean best >= %s's: %d vs %d of %d" % (
            unif_name, datasets_at_least_uniform(runs), datasets_at_least_uniform(base), len(datasets)))
        print("  mean gap to the dataset's best: %.4f vs %.4f (%s %.4f)" % (gap(runs), gap(base), unif_name, gap(unif)))


if __name__ == "__main__":
    main()
