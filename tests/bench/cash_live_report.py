#!/usr/bin/python3
"""cash_live_report: tables (Markdown) and a balanced-accuracy-vs-seconds
plot (PNG) from the JSON lines cash_live.py wrote.

    /usr/bin/python3 tests/bench/cash_live_report.py runs.jsonl[.gz] [more ...] \\
        --md tests/bench/results/cash_live.md --png tests/bench/results/cash_live.png

Measures, per run (one dataset, method and seed, one worker, a budget of B
wall-clock seconds):
- best: the best cross-validated balanced accuracy of a trial that finished
  within B (the daemon's incumbent; the worker checks they agree), and the
  test balanced accuracy of that config refitted on all search rows;
- best at t: the best of the trials that had finished by t seconds (the
  clock starts when the worker's loop does, after loading the data, so the
  daemon's decisions and the HTTP calls are inside the budget);
- time on an arm: the wall seconds of its trials (fit and score in the
  child process; a trial cut by the end of the budget counts up to the cut);
- rising_bandits' eliminations: the round each eliminated arm went out in
  (the final scheduler state) and when: with one worker rounds are
  sequential, so round r ends with the trial numbered sum over arms of
  min(pulls, r) (cash_report.elimination_pulls), and that trial's end is the
  elimination time;
- final arm: the arm of the incumbent.
Mean ± standard deviation are over seeds; only (dataset, seed) blocks in
which every method ran are used.
"""

import gzip
import json
import math
import os
import statistics
import sys
from collections import Counter, defaultdict

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import md_table, report_main  # noqa: E402
from cash_report import elimination_pulls  # noqa: E402

ORDER = ("rising_bandits", "uniform", "gp_ucb")
LABEL = {"rising_bandits": "rising_bandits (cost-aware)", "uniform": "uniform (round robin)",
         "gp_ucb": "joint gp_ucb"}
COLOR = {"rising_bandits": "C0", "uniform": "C2", "gp_ucb": "C3"}
# rising_bandits and uniform make the same pulls until the first elimination,
# so their curves often coincide: rising_bandits is drawn on top, uniform dashed.
STYLE = {"rising_bandits": ("-", 2.0, 3), "uniform": ("--", 1.4, 2), "gp_ucb": ("-.", 1.4, 2)}
ARM_SHORT = {"random_forest": "rf", "extra_trees": "et", "hist_gradient_boosting": "hgb", "svc": "svc",
             "logistic_regression": "lr", "k_nearest_neighbors": "knn"}
DATASET_ORDER = ("wine", "breast_cancer", "digits", "fashion-mnist")
EPS = 1e-12


# ---- loading ----

def load(paths):
    """dataset -> method -> seed -> line (a later line of the same run wins)."""
    runs = defaultdict(lambda: defaultdict(dict))
    for p in paths:
        with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
            for text in f:
                line = json.loads(text)
                runs[line["dataset"]][line["method"]][line["seed"]] = line
    return runs


def blocks(runs):
    """(datasets, methods, dataset -> seeds where every method has a complete run)."""
    datasets = sorted(runs, key=lambda d: (DATASET_ORDER.index(d) if d in DATASET_ORDER else 99, d))
    methods = [m for m in ORDER if any(m in runs[d] for d in datasets)]
    seeds = {}
    for d in datasets:
        common = None
        for m in methods:
            ok = {s for s, line in runs[d].get(m, {}).items() if complete(line)}
            common = ok if common is None else common & ok
        seeds[d] = sorted(common or [])
    return datasets, methods, seeds


def complete(line):
    run = line.get("run")
    return bool(run and run.get("best") and line.get("worker_rc") == 0)


# ---- per-run measures ----

def best_at(run, t):
    """Best balanced accuracy among trials that ended by t seconds; None before the first."""
    vals = [x["value"] for x in run["trials"] if x["value"] is not None and x["end"] <= t]
    return max(vals) if vals else None


def seconds_on(run, arms):
    return sum(x["seconds"] for x in run["trials"] if x["arm"] in arms)


def final_arm(run):
    return (run.get("incumbent") or run["best"])["arm"]


def eliminations(run):
    """arm -> {"round", "by", "time", "pull"} for rising_bandits' eliminated arms; and a list of
    inconsistencies (an arm's pulls other than its round, a pull count the trials do not have)."""
    state = run.get("state") or {}
    if not state.get("arms"):
        return {}, []
    pulls, bad = elimination_pulls(state)
    out = {}
    for a in state["arms"]:
        if not a.get("eliminated_round"):
            continue
        p = pulls[a["arm"]]
        if p > len(run["trials"]):
            bad.append("%s: eliminated after pull %d of %d trials" % (a["arm"], p, len(run["trials"])))
            continue
        out[a["arm"]] = {"round": a["eliminated_round"], "by": a["eliminated_by"], "pull": p,
                         "time": run["trials"][p - 1]["end"]}
    return out, bad


# ---- formatting ----

def mean(xs):
    return sum(xs) / len(xs) if xs else math.nan


def sd(xs):
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def pm(xs, digits=4):
    return "%.*f ± %.*f" % (digits, mean(xs), digits, sd(xs)) if xs else "—"


def median_range(xs, digits=0):
    if not xs:
        return "—"
    return "%.*f [%.*f, %.*f]" % (digits, statistics.median(xs), digits, min(xs), digits, max(xs))


def wtl(a, b):
    """Wins / ties / losses of the values a against b, pairwise."""
    w = sum(1 for x, y in zip(a, b) if x > y + EPS)
    lo = sum(1 for x, y in zip(a, b) if x < y - EPS)
    return "%d / %d / %d" % (w, len(a) - w - lo, lo)


# ---- the report ----

def header(runs, datasets, methods, seeds):
    lines = [line for d in datasets for m in methods for s in seeds[d] for line in [runs[d][m][s]]]
    start = min(x["campaign_started"] for x in lines)
    end = max(x["finished"] for x in lines)
    run0 = lines[0]["run"]
    cpus = sorted({tuple(x["cpus"]) for x in lines})
    loads = [x["loadavg_before"] for x in lines] + [x["loadavg_after"] for x in lines]
    desc = lines[0].get("campaign") or {}
    out = ["# CASH live (issue 8, item 2): results", "",
           "Made by tests/bench/cash_live_report.py from the runs of tests/bench/cash_live.py; the setting, "
           "the commands and the limits are in tests/bench/README-cash-live.md.", "",
           "- Date %s; machine %s; source %s." % (desc.get("date", "?"), desc.get("machine", "?"),
                                                   desc.get("source", "?")),
           "- Runs: %d (%d datasets x %d methods x seeds %s), one worker process each, one fresh daemon each." % (
               len(lines), len(datasets), len(methods),
               ", ".join(sorted({str(s) for d in datasets for s in seeds[d]}))),
           "- Campaign wall time: %.0f s (%.1f min), from the first run's start to the last run's end." % (
               end - start, (end - start) / 60),
           "- CPUs the runs were allowed: %s; the machine's 1-minute load average around the runs: %.1f to %.1f "
           "(2 cores, shared with another session)." % (" / ".join(",".join(map(str, c)) for c in cpus),
                                                        min(loads), max(loads)),
           "- Per-trial cap: a tenth of the budget; cross-validation: %d-fold stratified." % run0["data"]["folds"],
           ""]
    rows = []
    for d in datasets:
        line = runs[d][methods[0]][seeds[d][0]]
        data = line["run"]["data"]
        rows.append([d, "%.0f s" % line["budget"], data["search_rows"], data["test_rows"], data["features"],
                     data["classes"], data["note"]])
    out.append(md_table(["dataset", "budget", "search rows", "test rows", "features", "classes", "data"], rows))
    return out


def final_tables(runs, datasets, methods, seeds):
    out = ["", "## Final best balanced accuracy", "",
           "Best cross-validated balanced accuracy reached within the budget (the incumbent), mean ± sd over "
           "seeds; trials per run, median [min, max]:", ""]
    rows = []
    for d in datasets:
        row = [d]
        for m in methods:
            rs = [runs[d][m][s]["run"] for s in seeds[d]]
            row.append("%s (%s trials)" % (pm([r["best"]["value"] for r in rs]),
                                           median_range([len(r["trials"]) for r in rs])))
        rows.append(row)
    out.append(md_table(["dataset"] + [LABEL[m] for m in methods], rows))

    out += ["", "Test balanced accuracy of the incumbent refitted on all search rows (held-out split), "
                "mean ± sd over seeds:", ""]
    rows = []
    for d in datasets:
        row = [d]
        for m in methods:
            tests = [runs[d][m][s]["run"]["test"] for s in seeds[d]]
            row.append(pm([t["balanced_accuracy"] for t in tests if t]))
        rows.append(row)
    out.append(md_table(["dataset"] + [LABEL[m] for m in methods], rows))

    if "rising_bandits" in methods:
        out += ["", "rising_bandits against each other method, per seed, wins / ties / losses (cross-validated "
                    "best; test score of the incumbent):", ""]
        rows = []
        for d in datasets:
            row = [d]
            rb = [runs[d]["rising_bandits"][s]["run"] for s in seeds[d]]
            for m in methods:
                if m == "rising_bandits":
                    continue
                other = [runs[d][m][s]["run"] for s in seeds[d]]
                row.append("%s; test %s" % (
                    wtl([r["best"]["value"] for r in rb], [r["best"]["value"] for r in other]),
                    wtl([test_score(r) for r in rb], [test_score(r) for r in other])))
            rows.append(row)
        out.append(md_table(["dataset"] + ["vs %s" % LABEL[m] for m in methods if m != "rising_bandits"], rows))
        if "uniform" in methods:
            ge = [d for d in datasets if mean_best(runs, d, "rising_bandits", seeds) >=
                  mean_best(runs, d, "uniform", seeds) - EPS]
            out += ["", "rising_bandits >= uniform on the mean over seeds of the cross-validated best: %d of %d "
                        "datasets (%s)." % (len(ge), len(datasets), ", ".join(ge) or "none")]
            out += ["", after_elimination(runs, datasets, seeds)]
    return out


def joint_random_phase(runs, datasets, methods, seeds):
    """How far joint gp_ucb got past its random start (n_init trials) within the budget."""
    if "gp_ucb" not in methods:
        return []
    rows = []
    for d in datasets:
        rs = [runs[d]["gp_ucb"][s]["run"] for s in seeds[d]]
        n_init = rs[0]["state"]["n_init"]
        beyond = [max(0, len(r["trials"]) - n_init) for r in rs]
        rows.append([d, n_init, "%d / %d" % (sum(1 for b in beyond if b), len(rs)), median_range(beyond)])
    return ["", "Joint gp_ucb starts with n_init random trials (its default, 2 x 31 parameters) before its "
                "GP-UCB proposals; within the budget it got this far:", "",
            md_table(["dataset", "n_init", "runs past the random start", "GP-UCB trials, median [min, max]"], rows)]


def after_elimination(runs, datasets, seeds):
    """Where rising_bandits beat uniform, did its best trial end after its first elimination (the two
    make the same pulls until then, so an earlier win is timing noise)?"""
    wins = late = 0
    for d in datasets:
        for s in seeds[d]:
            rb, un = runs[d]["rising_bandits"][s]["run"], runs[d]["uniform"][s]["run"]
            if rb["best"]["value"] <= un["best"]["value"] + EPS:
                continue
            wins += 1
            el, _ = eliminations(rb)
            late += bool(el) and rb["best"]["end"] > min(e["time"] for e in el.values())
    return ("Of the %d (dataset, seed) pairs where rising_bandits beat uniform, %d had their best trial end after "
            "rising_bandits' first elimination (before it, both make the same pulls)." % (wins, late))


def mean_best(runs, d, m, seeds):
    return mean([runs[d][m][s]["run"]["best"]["value"] for s in seeds[d]])


def test_score(run):
    return run["test"]["balanced_accuracy"] if run["test"] else -math.inf


def anytime_table(runs, datasets, methods, seeds):
    fracs = (0.25, 0.5, 0.75, 1.0)
    out = ["", "## Best so far against time", "",
           "Best cross-validated balanced accuracy of the trials finished by a fraction of the budget, mean over "
           "seeds (— : some seed had no finished trial yet):", ""]
    rows = []
    for d in datasets:
        for m in methods:
            row = [d, LABEL[m]]
            for f in fracs:
                vals = [best_at(runs[d][m][s]["run"], f * runs[d][m][s]["budget"]) for s in seeds[d]]
                row.append("—" if None in vals else "%.4f" % mean(vals))
            rows.append(row)
    out.append(md_table(["dataset", "method"] + ["at %d%%" % (100 * f) for f in fracs], rows))
    return out


def time_table(runs, datasets, methods, seeds):
    out = ["", "## Where the time went", "",
           "Seconds per run, mean ± sd over seeds (share of the budget): for rising_bandits on the arms it "
           "eliminated (all their trials, before the elimination); for every method on the arms other than "
           "the final arm (the incumbent's).", ""]
    rows = []
    for d in datasets:
        budget = runs[d][methods[0]][seeds[d][0]]["budget"]
        row = [d]
        if "rising_bandits" in methods:
            el = [seconds_on(r, eliminations(r)[0]) for r in (runs[d]["rising_bandits"][s]["run"] for s in seeds[d])]
            row.append("%s (%.0f%%)" % (pm(el, 1), 100 * mean(el) / budget))
        for m in methods:
            rs = [runs[d][m][s]["run"] for s in seeds[d]]
            off = [sum(x["seconds"] for x in r["trials"] if x["arm"] != final_arm(r)) for r in rs]
            row.append("%s (%.0f%%)" % (pm(off, 1), 100 * mean(off) / budget))
        rows.append(row)
    heads = ["dataset"] + (["rising_bandits: eliminated arms"] if "rising_bandits" in methods else []) + \
        ["%s: not the final arm" % LABEL[m] for m in methods]
    out.append(md_table(heads, rows))

    out += ["", "The budget also holds what happens between trials: the suggest and complete calls (with the "
                "daemon's decision: joint gp_ucb's acquisition over 31 parameters, rising_bandits' per-arm GP) "
                "and the fork of each trial's process. Seconds of the budget outside the trials per run, mean "
                "over seeds, and per trial:", ""]
    rows = []
    for d in datasets:
        row = [d]
        for m in methods:
            rs = [runs[d][m][s]["run"] for s in seeds[d]]
            gaps = [r["budget"] - sum(x["seconds"] for x in r["trials"]) for r in rs]
            per = [g / len(r["trials"]) for g, r in zip(gaps, rs)]
            row.append("%.2f s (%.0f ms a trial)" % (mean(gaps), 1000 * mean(per)))
        rows.append(row)
    out.append(md_table(["dataset"] + [LABEL[m] for m in methods], rows))
    return out


def elimination_tables(runs, datasets, methods, seeds):
    if "rising_bandits" not in methods:
        return []
    out = ["", "## rising_bandits' eliminations", "",
           "Per arm: in how many seeds it was eliminated; when (seconds into the run, median [min, max] over "
           "those seeds) and in which round; by which arm (the surviving arm with the largest lower bound at "
           "that moment; most frequent). An arm never eliminated shows —.", ""]
    problems = []
    rows = []
    for d in datasets:
        n = len(seeds[d])
        per_arm = defaultdict(list)
        first = []
        for s in seeds[d]:
            run = runs[d]["rising_bandits"][s]["run"]
            el, bad = eliminations(run)
            problems += ["%s seed %d: %s" % (d, s, b) for b in bad]
            for arm, e in el.items():
                per_arm[arm].append(e)
            if el:
                first.append(min(e["time"] for e in el.values()))
        for arm in ARM_SHORT:
            es = per_arm.get(arm, [])
            if not es:
                rows.append([d, arm, "0 / %d" % n, "—", "—", "—"])
                continue
            by = Counter(e["by"] for e in es).most_common(1)[0][0]
            rows.append([d, arm, "%d / %d" % (len(es), n), median_range([e["time"] for e in es], 1),
                         median_range([e["round"] for e in es]), ARM_SHORT.get(by, by)])
        rows.append([d, "(first elimination)", "%d / %d seeds" % (len(first), n), median_range(first, 1), "", ""])
    out.append(md_table(["dataset", "arm", "eliminated", "at seconds", "round", "by"], rows))

    out += ["", "End state of rising_bandits (surviving arms per run, by seed); the best arm(s): those whose "
                "best score, over every run of every method, is the dataset's best score any run found, and "
                "the rising_bandits runs that eliminated every one of them; the final arm of every method "
                "(the incumbent's arm; count over seeds):", ""]
    rows = []
    for d in datasets:
        surv, lost = [], 0
        top = best_arms(runs, d, methods, seeds)
        for s in seeds[d]:
            arms = runs[d]["rising_bandits"][s]["run"]["state"]["arms"]
            alive = {a["arm"] for a in arms if not a.get("eliminated_round")}
            surv.append(str(len(alive)))
            lost += not (alive & set(top))
        row = [d, " ".join(surv), ", ".join(ARM_SHORT[a] for a in top), "%d / %d" % (lost, len(seeds[d]))]
        for m in methods:
            c = Counter(final_arm(runs[d][m][s]["run"]) for s in seeds[d])
            row.append(", ".join("%s %d" % (ARM_SHORT[a], k) for a, k in c.most_common()))
        rows.append(row)
    out.append(md_table(["dataset", "rising_bandits: arms left", "best arm", "best arm eliminated"] +
                        ["final arm: %s" % LABEL[m] for m in methods], rows))
    if problems:
        out += ["", "Inconsistent elimination records: %d, e.g. %s" % (len(problems), problems[:3])]
    return out


def best_arms(runs, d, methods, seeds):
    """The arms whose best result over every run of dataset d equals the best any run found."""
    best = defaultdict(lambda: -math.inf)
    for m in methods:
        for s in seeds[d]:
            for x in runs[d][m][s]["run"]["trials"]:
                if x["value"] is not None:
                    best[x["arm"]] = max(best[x["arm"]], x["value"])
    top = max(best.values())
    return [a for a in ARM_SHORT if best.get(a, -math.inf) >= top - EPS]


def shared_prefix(rb, un):
    """Trials at the start of two runs with the same arm and config (a cut trial has no value)."""
    n = 0
    for a, b in zip(rb["trials"], un["trials"]):
        if a["arm"] != b["arm"] or a["config"] != b["config"]:
            break
        if a["value"] is not None and b["value"] is not None and abs(a["value"] - b["value"]) > EPS:
            break
        n += 1
    return n


def noise_table(runs, datasets, methods, seeds):
    """rising_bandits and uniform make the same pulls until the first elimination: a check that they
    did, and, from the time the same trials took in the two runs, how noisy the clock was."""
    if "rising_bandits" not in methods or "uniform" not in methods:
        return []
    out = ["", "## Same pulls, different clocks", "",
           "rising_bandits and uniform share the study seed and the per-arm GP-UCB, so up to rising_bandits' "
           "first elimination they propose the same configs in the same order. Per dataset: the runs where "
           "the two agree on every trial up to that point (or, without an elimination, up to the shorter "
           "run), and the ratio of the seconds that same prefix took in the rising_bandits run to the "
           "seconds in the uniform run, median [min, max] over seeds: the same work, timed twice, so its "
           "spread is the timing noise of the machine.", ""]
    rows = []
    for d in datasets:
        agree, ratios = 0, []
        for s in seeds[d]:
            rb, un = runs[d]["rising_bandits"][s]["run"], runs[d]["uniform"][s]["run"]
            el, _ = eliminations(rb)
            want = min([e["pull"] for e in el.values()] or [min(len(rb["trials"]), len(un["trials"]))])
            n = shared_prefix(rb, un)
            if n >= want:
                agree += 1
                ratios.append(rb["trials"][want - 1]["end"] / un["trials"][want - 1]["end"])
        rows.append([d, "%d / %d" % (agree, len(seeds[d])), median_range(ratios, 2)])
    out.append(md_table(["dataset", "same pulls", "time ratio rising_bandits / uniform"], rows))
    return out


def arm_table(runs, datasets, methods, seeds):
    out = ["", "## The arms", "",
           "Per dataset and arm, over every method's trials: trials, mean seconds per trial, share that hit "
           "the per-trial cap (value null), and the best cross-validated balanced accuracy any run found with "
           "the arm:", ""]
    rows = []
    for d in datasets:
        trials = [x for m in methods for s in seeds[d] for x in runs[d][m][s]["run"]["trials"]]
        for arm in ARM_SHORT:
            xs = [x for x in trials if x["arm"] == arm]
            vals = [x["value"] for x in xs if x["value"] is not None]
            capped = sum(1 for x in xs if x["status"] == "timeout")
            errors = sum(1 for x in xs if x["status"] == "error")
            rows.append([d, arm, len(xs), "%.2f" % mean([x["seconds"] for x in xs]) if xs else "—",
                         "%.0f%%" % (100.0 * capped / len(xs)) if xs else "—",
                         "%.4f" % max(vals) if vals else "—", errors])
    out.append(md_table(["dataset", "arm", "trials", "s/trial", "capped", "best", "errors"], rows))
    problems = ["%s %s seed %d: %s" % (d, m, s, p) for d in datasets for m in methods for s in seeds[d]
                for p in runs[d][m][s]["run"]["problems"]]
    bad_daemon = ["%s %s seed %d" % (d, m, s) for d in datasets for m in methods for s in seeds[d]
                  if runs[d][m][s]["daemon_rc"] != 0]
    out += ["", "Problems reported by the workers: %s. Daemons that did not stop cleanly: %s." % (
        "; ".join(problems) if problems else "none", ", ".join(bad_daemon) if bad_daemon else "none")]
    return out


def report(runs):
    datasets, methods, seeds = blocks(runs)
    datasets = [d for d in datasets if seeds[d]]
    if not datasets:
        raise SystemExit("no dataset has a seed where every method completed")
    out = header(runs, datasets, methods, seeds)
    out += final_tables(runs, datasets, methods, seeds)
    out += joint_random_phase(runs, datasets, methods, seeds)
    out += anytime_table(runs, datasets, methods, seeds)
    out += time_table(runs, datasets, methods, seeds)
    out += elimination_tables(runs, datasets, methods, seeds)
    out += noise_table(runs, datasets, methods, seeds)
    out += arm_table(runs, datasets, methods, seeds)
    return "\n".join(out) + "\n"


# ---- the plot ----

def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    datasets, methods, seeds = blocks(runs)
    datasets = [d for d in datasets if seeds[d]]
    cols = min(2, len(datasets))
    rows = (len(datasets) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 4.6 * rows), squeeze=False)
    for ax in axes.flat[len(datasets):]:
        ax.set_visible(False)
    for ax, d in zip(axes.flat, datasets):
        budget = runs[d][methods[0]][seeds[d][0]]["budget"]
        grid = [budget * i / 400.0 for i in range(401)]
        lows = []
        for m in methods:
            rs = [runs[d][m][s]["run"] for s in seeds[d]]
            xs, mu, lo, hi = [], [], [], []
            for t in grid:
                vals = [best_at(r, t) for r in rs]
                if None in vals:  # the mean starts once every seed has a result
                    continue
                xs.append(t)
                mu.append(mean(vals))
                lo.append(mean(vals) - sd(vals))
                hi.append(mean(vals) + sd(vals))
            if not xs:
                continue
            style, width, z = STYLE[m]
            ax.plot(xs, mu, style, color=COLOR[m], label=LABEL[m], linewidth=width, zorder=z)
            ax.fill_between(xs, lo, hi, color=COLOR[m], alpha=0.15, linewidth=0)
            lows.append(min(mu[len(mu) // 10:]) if len(mu) > 10 else min(mu))
        if "rising_bandits" in methods:
            first = [min(e["time"] for e in el.values())
                     for el in (eliminations(runs[d]["rising_bandits"][s]["run"])[0] for s in seeds[d]) if el]
            if first:
                ax.axvline(statistics.median(first), color=COLOR["rising_bandits"], linestyle=":", linewidth=1,
                           label="rising_bandits: first elimination (median, %d of %d seeds)" % (
                               len(first), len(seeds[d])))
        top = max(max(x["value"] for x in runs[d][m][s]["run"]["trials"] if x["value"] is not None)
                  for m in methods for s in seeds[d])
        if lows:
            ax.set_ylim(min(lows) - 0.2 * (top - min(lows) + 1e-3), top + 0.1 * (top - min(lows) + 1e-3))
        ax.set_xlim(0, budget)
        ax.set_title("%s (%d seeds, %.0f s budget)" % (d, len(seeds[d]), budget))
        ax.set_xlabel("seconds (one worker, one core)")
        ax.set_ylabel("best cross-validated balanced accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("CASH live: mean over seeds, band ± 1 sd", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    report_main(__doc__, load, report, plot)


if __name__ == "__main__":
    main()
