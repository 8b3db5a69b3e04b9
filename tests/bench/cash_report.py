#!/usr/bin/python3
"""cash_report: tables (markdown) and an anytime plot (PNG) from the JSON
lines that cash_replay.py wrote.

    /usr/bin/python3 tests/bench/cash_report.py runs.jsonl [more.jsonl ...] \\
        --md tests/bench/results/cash.md --png tests/bench/results/cash_anytime.png \\
        [--methods rb_gp,tpe,...]   # only these methods' runs: ranks among them
        [--trials 200,...]          # only runs of these budgets T

Ranks: per (oracle, T, dataset, seed) the methods are ranked on the best
balanced accuracy they reached (1 = best, ties share the mean rank); the
oracle is not ranked (it is the dataset's best by definition and would tie
for first everywhere). A method's average rank is taken over the datasets
for each seed; the table gives its mean over seeds, the standard deviation
over seeds and the [min, max] over seeds. Only (dataset, seed) blocks where
every method of the table ran are used. Head to head, each rising_bandits
method also gets the per-seed difference of its average rank and the
other's (paired: both ranked on the same datasets), its mean, standard
deviation and standard error over seeds.
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

# (oracle, method) -> label; the order is the tables' order. In the shuffle
# form the inner optimizer cannot matter (proposals are ignored), so
# rising_bandits and uniform run with inner random there.
LABEL = {
    "rb_gp": "rising_bandits (GP-UCB inner)",
    "rb_random": "rising_bandits (random inner)",
    "rb_gp_paper": "rising_bandits, paper rule (GP-UCB inner)",
    "rb_random_paper": "rising_bandits, paper rule (random inner)",
    "uniform": "uniform (round robin, GP-UCB inner)",
    "uniform_random": "uniform (round robin, random inner)",
    "gp_ucb": "joint gp_ucb (all 50 parameters)",
    "random": "random search",
    "tpe": "Optuna 3.1 TPE",
    "rb_tpe": "rising_bandits (TPE inner)",
    "rb_tpe_ts": "rising_bandits (TPE inner, Thompson allocation)",
    "rb_gp_ts": "rising_bandits (GP-UCB inner, Thompson allocation)",
    "rb_random_ts": "rising_bandits (random inner, Thompson allocation)",
    "rb_tpe_share": "rising_bandits (TPE inner, Thompson, draw horizon share)",
    "rb_random_share": "rising_bandits (random inner, Thompson, draw horizon share)",
    "rb_gp_ei": "rising_bandits (GP-UCB inner, EI allocation)",
    "rb_random_ei": "rising_bandits (random inner, EI allocation)",
    "uniform_tpe": "uniform (round robin, TPE inner)",
}
ORDER = ["rb_tpe_share", "rb_random_share", "rb_tpe_ts", "rb_tpe", "rb_gp_ts", "rb_random_ts", "rb_gp_ei", "rb_random_ei", "rb_gp", "rb_random",
         "rb_gp_paper", "rb_random_paper", "uniform_tpe", "uniform", "uniform_random", "gp_ucb", "random", "tpe"]
SHORT = {"rb_gp": "RB-GP", "rb_random": "RB-rand", "rb_gp_paper": "RBp-GP", "rb_random_paper": "RBp-rand", "uniform": "unif-GP", "uniform_random": "unif-rand",
         "gp_ucb": "jointGP", "random": "random", "tpe": "TPE", "rb_tpe": "RB-TPE", "rb_tpe_ts": "RB-TPE-TS",
         "rb_gp_ts": "RB-GP-TS", "rb_random_ts": "RB-rand-TS", "rb_gp_ei": "RB-GP-EI", "rb_random_ei": "RB-rand-EI",
         "uniform_tpe": "unif-TPE", "rb_tpe_share": "RB-TPE-TSs", "rb_random_share": "RB-rand-TSs"}
ARM_SHORT = {"adaboost": "ada", "extra_trees": "et", "gradient_boosting": "gb", "k_nearest_neighbors": "knn",
             "liblinear_svc": "lsvc", "libsvm_svc": "svc", "lightgbm": "lgbm", "logistic_regression": "lr",
             "random_forest": "rf"}
RISING = ("rb_tpe_share", "rb_random_share", "rb_tpe_ts", "rb_tpe", "rb_gp_ts", "rb_random_ts", "rb_gp_ei", "rb_random_ei", "rb_gp", "rb_random",
          "rb_gp_paper", "rb_random_paper")
# allocations without rounds: eliminated_round is the count of finished pulls, not a round
NO_ROUNDS = ("rb_tpe_share", "rb_random_share", "rb_tpe_ts", "rb_gp_ts", "rb_random_ts", "rb_gp_ei", "rb_random_ei")
COLOR = {"rb_gp": "C0", "rb_random": "C1", "rb_gp_paper": "C6", "rb_random_paper": "C7", "uniform": "C2", "uniform_random": "C2", "gp_ucb": "C3", "random": "C4",
         "tpe": "C5", "rb_tpe": "C8", "rb_tpe_ts": "C9", "rb_gp_ts": "C0", "rb_random_ts": "C1", "rb_gp_ei": "C6",
         "rb_random_ei": "C7", "uniform_tpe": "C2", "rb_tpe_share": "C9", "rb_random_share": "C1"}
EPS = 1e-12
BOOT = 2000  # bootstrap resamples of the datasets (seeded): the 95% intervals


def boot_ci(datasets, stat, seed=0):
    """The 2.5% and 97.5% points of stat(sample) over BOOT resamples, with replacement, of the datasets
    (each resample keeps all seeds of a dataset together)."""
    import random
    rng = random.Random(seed)
    vals = sorted(stat([rng.choice(datasets) for _ in datasets]) for _ in range(BOOT))
    return vals[int(0.025 * BOOT)], vals[min(BOOT - 1, int(0.975 * BOOT))]


def load(paths, keep=None, trials=None):
    runs = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))  # (oracle, T) -> ds -> method -> seed
    oracle_arm = defaultdict(dict)  # (oracle, ds) -> seed -> run
    for p in paths:
        with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
            for line in f:
                r = json.loads(line)
                if keep is not None and r["method"] not in keep:
                    continue
                if trials is not None and r["trials"] not in trials:
                    continue
                if r["method"] == "oracle_arm":
                    oracle_arm[(r["oracle"], r["dataset"])][r["seed"]] = r
                else:
                    runs[(r["oracle"], r["trials"])][r["dataset"]][r["method"]][r["seed"]] = r
    if not runs and not oracle_arm:
        raise SystemExit("cash_report: no runs in %s" % ", ".join(paths))
    return runs, oracle_arm


def ranks(values):
    """Ranks (1 = largest), ties averaged."""
    out = []
    for v in values:
        above = sum(1 for w in values if w > v + EPS)
        same = sum(1 for w in values if abs(w - v) <= EPS)
        out.append(above + (same + 1) / 2.0)
    return out


def quart(xs):
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def fq(xs, digits=0):
    if not xs:
        return "—"
    q1, m, q3 = quart(xs)
    return "%.*f [%.*f, %.*f]" % (digits, m, digits, q1, digits, q3)


def mean(xs):
    return sum(xs) / len(xs) if xs else math.nan


def elimination_pulls(state, rounds=True):
    """arm -> the global pull after which it was eliminated (rounds are barriers: at the end of round r,
    sum over arms of min(pulls, r) pulls were made). Also checks pulls == eliminated_round. Without rounds
    (rounds False: allocation "ei" or "thompson") eliminated_round is already that pull."""
    arms = state["arms"]
    out, bad = {}, []
    for a in arms:
        r = a.get("eliminated_round")
        if r and not rounds:
            out[a["arm"]] = r
        elif r:
            if a["pulls"] != r:
                bad.append("%s: %d pulls, eliminated in round %d" % (a["arm"], a["pulls"], r))
            out[a["arm"]] = sum(min(b["pulls"], r) for b in arms)
    return out, bad


def blocks(by_ds):
    """Methods, datasets and seeds of complete blocks."""
    methods = [m for m in ORDER if any(m in by_ds[d] for d in by_ds)]
    datasets = sorted(by_ds)
    seeds = None
    for d in datasets:
        for m in methods:
            s = set(by_ds[d].get(m, {}))
            seeds = s if seeds is None else seeds & s
    return methods, datasets, sorted(seeds or [])


def table(key, by_ds, oracle_arm):
    oracle, T = key
    methods, datasets, seeds = blocks(by_ds)
    out = []
    if not seeds:
        return "\n### oracle %s, T = %d: no complete (dataset, seed) block\n" % key
    n_ds = len(datasets)
    out.append("\n## Oracle \"%s\", T = %d pulls: %d datasets x %d seeds (%s)\n"
               % (oracle, T, n_ds, len(seeds), ", ".join(str(s) for s in seeds)))
    # ranks and bests
    rank = {m: defaultdict(dict) for m in methods}  # m -> ds -> seed -> rank
    best = {m: defaultdict(dict) for m in methods}
    for d in datasets:
        for s in seeds:
            vals = [by_ds[d][m][s]["best"] for m in methods]
            for m, v, rk in zip(methods, vals, ranks(vals)):
                rank[m][d][s] = rk
                best[m][d][s] = v
    dsbest = {d: by_ds[d][methods[0]][seeds[0]]["dataset_best"] for d in datasets}

    out.append("Average rank over the %d datasets (1 = best of %d methods; mean over seeds ± standard deviation "
               "over seeds [min, max over seeds]); mean gap to the dataset's best balanced accuracy (over datasets "
               "and seeds); datasets whose best was reached in every seed:\n" % (n_ds, len(methods)))
    out.append("| method | average rank | gap to dataset best | best reached (all seeds) |")
    out.append("|---|---|---|---|")
    avg = {}
    for m in methods:
        per_seed = [mean([rank[m][d][s] for d in datasets]) for s in seeds]
        avg[m] = mean(per_seed)
        sd = statistics.stdev(per_seed) if len(per_seed) > 1 else 0.0
        gap = mean([dsbest[d] - best[m][d][s] for d in datasets for s in seeds])
        hit = sum(1 for d in datasets if all(best[m][d][s] >= dsbest[d] - EPS for s in seeds))
        out.append("| %s | %.2f ± %.2f [%.2f, %.2f] | %.4f | %d / %d |" % (
            LABEL[m], avg[m], sd, min(per_seed), max(per_seed), gap, hit, n_ds))

    pairs = [("rb_gp", "uniform"), ("rb_random", "uniform_random"), ("rb_gp_paper", "uniform"),
             ("rb_random_paper", "uniform_random"), ("rb_tpe", "uniform_tpe"), ("rb_tpe_ts", "uniform_tpe"), ("rb_tpe_ts", "uniform"),
             ("rb_tpe_share", "uniform_tpe"), ("rb_random_share", "uniform_random"),
             ("rb_gp_ts", "uniform"), ("rb_random_ts", "uniform_random"), ("rb_gp_ei", "uniform"),
             ("rb_random_ei", "uniform_random")]
    if "uniform_random" not in methods:
        pairs += [("rb_random", "uniform"), ("rb_random_paper", "uniform")]
    for rb, un in pairs:
        if rb not in methods or un not in methods:
            continue
        def n_ge(ds, rb=rb, un=un):
            return sum(1 for d in ds
                       if mean([best[rb][d][s] for s in seeds]) >= mean([best[un][d][s] for s in seeds]) - EPS)
        ge = n_ge(datasets)
        lo_ci, hi_ci = boot_ci(datasets, lambda ds: 100.0 * n_ge(ds) / len(ds))
        w = sum(1 for d in datasets for s in seeds if best[rb][d][s] > best[un][d][s] + EPS)
        lo = sum(1 for d in datasets for s in seeds if best[rb][d][s] < best[un][d][s] - EPS)
        out.append("\n%s >= %s (mean best over seeds) on %d of %d datasets (%.1f%%, bootstrap 95%% interval over "
                   "datasets [%.1f%%, %.1f%%]; issue 15's target: at least 85%%); per (dataset, seed): %d wins, "
                   "%d ties, %d losses." % (LABEL[rb], LABEL[un], ge, n_ds, 100.0 * ge / n_ds, lo_ci, hi_ci, w,
                                           n_ds * len(seeds) - w - lo, lo))
    for rb in RISING:
        if rb not in methods:
            continue
        cells = []
        for m in methods:
            if m == rb:
                continue
            w = sum(1 for d in datasets for s in seeds if best[rb][d][s] > best[m][d][s] + EPS)
            lo = sum(1 for d in datasets for s in seeds if best[rb][d][s] < best[m][d][s] - EPS)
            # paired: the seeds share datasets, so the spread of the per-seed difference of average ranks
            # says more than the two ranks' own spreads
            diff = [mean([rank[rb][d][s] - rank[m][d][s] for d in datasets]) for s in seeds]
            sd = statistics.stdev(diff) if len(diff) > 1 else 0.0
            cells.append("%s %d / %d / %d, rank difference %+.3f ± %.3f (standard error %.3f), ahead in %d of %d "
                         "seeds" % (SHORT[m], w, n_ds * len(seeds) - w - lo, lo, mean(diff), sd,
                                    sd / math.sqrt(len(diff)), sum(1 for x in diff if x < 0), len(diff)))
        out.append("\n%s against each method, per (dataset, seed), wins / ties / losses, and the per-seed difference "
                   "of average ranks (its mean ± standard deviation over seeds; negative: ahead): %s." % (
                       LABEL[rb], "; ".join(cells)))
    order = sorted(methods, key=lambda m: avg[m])
    if len(order) > 1:  # a section (form, T) can hold one method's runs alone
        out.append("\nBest average rank: %s (%.2f); next %s (%.2f)." % (LABEL[order[0]], avg[order[0]],
                                                                         LABEL[order[1]], avg[order[1]]))

    # per dataset
    out.append("\nPer dataset: the dataset's best balanced accuracy (the oracle) and its arm(s); each method's "
               "best balanced accuracy, mean over seeds, and its mean rank over seeds in parentheses; the "
               "oracle arm's own run: pulls it needed to reach the dataset's best, median over seeds.\n")
    out.append("| dataset | oracle | best arm | " + " | ".join(SHORT[m] for m in methods) + " | oracle run |")
    out.append("|---|---|---|" + "---|" * len(methods) + "---|")
    for d in datasets:
        r0 = by_ds[d][methods[0]][seeds[0]]
        barms = r0["best_arms"]
        barm = ",".join(ARM_SHORT[a] for a in barms) if len(barms) < 4 else "%d tied" % len(barms)
        cells = ["%.4f (%.1f)" % (mean([best[m][d][s] for s in seeds]), mean([rank[m][d][s] for s in seeds]))
                 for m in methods]
        oa = oracle_arm.get((oracle, d), {})
        reach = [first_reach(oa[s]["points"], dsbest[d]) for s in seeds if s in oa]
        out.append("| %s | %.4f | %s | %s | %s |" % (d, dsbest[d], barm, " | ".join(cells),
                                                    ("%.0f" % statistics.median(reach)) if reach else "—"))

    # rising bandits
    for rb in RISING:
        if rb not in methods:
            continue
        rs = [by_ds[d][rb][s] for d in datasets for s in seeds]
        n = len(rs)
        final_best = sum(1 for r in rs if r["state"]["incumbent_arm"] in r["best_arms"])
        lost = 0
        lost_by_ds = defaultdict(int)
        elim_pulls, bad = [], []
        per_arm = defaultdict(list)
        for r in rs:
            ep, b = elimination_pulls(r["state"], rb not in NO_ROUNDS)
            bad.extend(b)
            survivors = [a["arm"] for a in r["state"]["arms"] if not a.get("eliminated_round")]
            if not set(survivors) & set(r["best_arms"]):
                lost += 1
                lost_by_ds[r["dataset"]] += 1
            elim_pulls.append(sum(a["pulls"] for a in r["state"]["arms"] if a.get("eliminated_round")))
            for a, p in ep.items():
                per_arm[a].append(p)
        phases = defaultdict(int)
        for r in rs:
            phases["%s, %d left" % (r["state"]["phase"], sum(1 for a in r["state"]["arms"]
                                                              if not a.get("eliminated_round")))] += 1
        out.append("\n### %s\n" % LABEL[rb])
        out.append("- Final arm (the incumbent's arm) is a best arm of the dataset: %d of %d runs (%.0f%%)."
                   % (final_best, n, 100.0 * final_best / n))
        lo_ci, hi_ci = boot_ci(datasets, lambda ds: 100.0 * sum(lost_by_ds[d] for d in ds) / (len(ds) * len(seeds)))
        out.append("- Every best arm of the dataset eliminated: %d of %d runs (%.1f%%, bootstrap 95%% interval over "
                   "datasets [%.1f%%, %.1f%%]; issue 15's target: at most 10%%)." % (lost, n, 100.0 * lost / n, lo_ci,
                                                                                   hi_ci))
        out.append("- Pulls spent on arms that were eliminated, per run: median [Q1, Q3] %s of %d; %.1f%% of "
                   "all pulls." % (fq(elim_pulls), T, 100.0 * sum(elim_pulls) / (n * T)))
        out.append("- End state: %s." % ", ".join("%s: %d" % kv for kv in sorted(phases.items())))
        out.append("- Per arm: runs in which it was eliminated, and the pull (global count) after which it "
                   "was, median [Q1, Q3]:\n")
        out.append("| arm | best arm of | eliminated | at pull |")
        out.append("|---|---|---|---|")
        for a in sorted(ARM_SHORT):
            nb = sum(1 for d in datasets if a in by_ds[d][rb][seeds[0]]["best_arms"])
            out.append("| %s | %d datasets | %d / %d | %s |" % (a, nb, len(per_arm[a]), n, fq(per_arm[a])))
        out.append("\nPer dataset, the pull after which each arm was eliminated (median over the seeds that "
                   "eliminated it; in brackets how many seeds did, when not all; — never), best arm(s) marked *:\n")
        arms_sorted = sorted(ARM_SHORT)
        out.append("| dataset | " + " | ".join(ARM_SHORT[a] for a in arms_sorted) + " | on eliminated arms |")
        out.append("|---|" + "---|" * (len(arms_sorted) + 1))
        for d in datasets:
            cells = []
            ps_el = []
            for a in arms_sorted:
                got = []
                for s in seeds:
                    ep, _ = elimination_pulls(by_ds[d][rb][s]["state"], rb not in NO_ROUNDS)
                    if a in ep:
                        got.append(ep[a])
                c = "—" if not got else "%.0f" % statistics.median(got)
                if got and len(got) < len(seeds):
                    c += " (%d)" % len(got)
                if a in by_ds[d][rb][seeds[0]]["best_arms"]:
                    c += " *"
                cells.append(c)
            for s in seeds:
                st = by_ds[d][rb][s]["state"]
                ps_el.append(sum(x["pulls"] for x in st["arms"] if x.get("eliminated_round")))
            out.append("| %s | %s | %.0f |" % (d, " | ".join(cells), statistics.median(ps_el)))
        if bad:
            out.append("\nInconsistent elimination records: %d, e.g. %s" % (len(bad), bad[:3]))

    out.append("\nShare of the pulls that went to a best arm of the dataset (mean over datasets and seeds; "
               "on the dataset where all 9 arms tie it is 1 for every method):\n")
    out.append("| method | share |")
    out.append("|---|---|")
    for m in methods:
        sh = [sum(by_ds[d][m][s]["arm_pulls"][a] for a in by_ds[d][m][s]["best_arms"]) / T
              for d in datasets for s in seeds]
        out.append("| %s | %.2f |" % (LABEL[m], mean(sh)))

    # repeats
    out.append("\nExhausted arms: pulls answered by repeating a random used record (the arm had no unused "
               "record left); runs with any, and all such pulls over all pulls:\n")
    out.append("| method | runs with repeats | repeated pulls |")
    out.append("|---|---|---|")
    for m in methods:
        rs = [by_ds[d][m][s] for d in datasets for s in seeds]
        out.append("| %s | %d / %d | %d / %d (%.2f%%) |" % (
            LABEL[m], sum(1 for r in rs if r["repeats"]), len(rs), sum(r["repeats"] for r in rs),
            len(rs) * T, 100.0 * sum(r["repeats"] for r in rs) / (len(rs) * T)))
    problems = [p for d in datasets for m in methods for s in seeds for p in by_ds[d][m][s].get("problems", [])]
    if problems:
        out.append("\nProblems reported by the replay: %d, e.g. %s" % (len(problems), problems[:3]))
    return "\n".join(out) + "\n"


def first_reach(points, target):
    for p, v in points:
        if v >= target - EPS:
            return p
    return math.inf


def best_at(points, t):
    v = -math.inf
    for p, pv in points:
        if p > t:
            break
        v = pv
    return v


def report(runs, oracle_arm):
    head = ("# CASH replay (issue 8, item 1): results\n\nMade by tests/bench/cash_report.py from the runs of "
            "tests/bench/cash_replay.py; the setting, the command and the limits are in tests/bench/README-cash.md.\n")
    return head + "".join(table(k, runs[k], oracle_arm) for k in sorted(runs, key=lambda k: (k[0] != "nearest", k[1])))


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = sorted(runs, key=lambda k: (k[0] != "nearest", k[1]))
    fig, axes = plt.subplots(1, len(keys), figsize=(5.5 * len(keys), 4.5), squeeze=False)
    for ax, key in zip(axes[0], keys):
        by_ds = runs[key]
        methods, datasets, seeds = blocks(by_ds)
        if not seeds:
            continue
        T = key[1]
        grid = list(range(1, T + 1))
        for m in methods:
            ys = []
            for t in grid:
                ys.append(mean([by_ds[d][m][s]["dataset_best"] - best_at(by_ds[d][m][s]["points"], t)
                                for d in datasets for s in seeds]))
            style = "-" if m.startswith("rb") else "--" if m.startswith("uniform") else ":"
            ax.plot(grid, ys, style, color=COLOR[m], label=LABEL[m], linewidth=2 if m.startswith("rb") else 1.3)
        ax.set_yscale("log")
        ax.set_title("oracle %s, T = %d (%d datasets x %d seeds)" % (key[0], T, len(datasets), len(seeds)))
        ax.set_xlabel("pulls")
        ax.set_ylabel("mean gap to the dataset's best balanced accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    # --methods a,b,...: only those methods' runs are read, so the ranks are among them alone;
    # --trials T,...: only runs of those budgets
    import argparse
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--methods")
    ap.add_argument("--trials")
    args, rest = ap.parse_known_args()
    sys.argv = sys.argv[:1] + rest
    keep = set(m for m in args.methods.split(",") if m) if args.methods else None
    # load gives (runs, oracle_arm): the report needs both, the plot the runs.
    trials = set(int(t) for t in args.trials.split(",") if t) if args.trials else None
    report_main(__doc__, lambda paths: load(paths, keep, trials), lambda loaded: report(*loaded),
                lambda loaded, png: plot(loaded[0], png))


if __name__ == "__main__":
    main()
