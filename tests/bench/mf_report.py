#!/usr/bin/python3
"""mf_report: time-to-target tables (issue 14) from the JSON lines that
bobos_replay.py wrote.

    /usr/bin/python3 tests/bench/mf_report.py runs.jsonl [more.jsonl ...] \\
        --md tests/bench/results/mf.md --png tests/bench/results/mf_anytime.png

For each (table, W) and method: the simulated time until the best fully
trained error comes within 0.01 of the table's best final error (the
issue's figure), median [Q1, Q3] over seeds and how many seeds got there;
the same for a stricter target, the table's top 1% of final errors; the
ratio of the median to Optuna TPE's; and per seed, whether the method got
there in at most half of Optuna TPE's median time. ∞: not reached by the
horizon. Every statistic compares seeds of the same run.

    /usr/bin/python3 tests/bench/mf_report.py --paired A,B runs.jsonl [...]

prints instead, per (table, W), methods A and B over every seed both ran
(a seed draws the same configs for both): each one's median time to both
targets and its seeds that got there, and the seeds where A got there
sooner / later than B.

    /usr/bin/python3 tests/bench/mf_report.py --compare A,B,C runs.jsonl [...]

prints, for several methods over the (table, W) cells all of them ran and
the seeds they share: each one's median time to both targets per cell,
then across all cells the geometric mean of each median's ratio to the
cell's best median (a median of ∞ counts as 10x; a cell no method
reached counts 1 for all) and the (run, target) pairs that reached the
target (a run counts once per target):
one figure for choosing a default over several tables.

    /usr/bin/python3 tests/bench/mf_report.py --stopping runs.jsonl [...]

prints instead issue 39's comparison (README-stopping.md): for each pair of
a stopping-type method and its promotion-type twin run without checkpoints
(asha_stop / asha_scratch, hyperband_stop / hyperband_scratch, ...), per
(table, W) and target, the epochs all workers had trained and the
simulated time when the target was first reached, median [Q1, Q3] over the
seeds both ran (∞: not by the horizon; a median of ∞ shows as —) and the
seeds that reached it, and seed by seed on which side fewer epochs were
spent; then what each spent by the horizon (trials, full trainings,
stopped trials, epochs).
"""

import math
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import report_main  # noqa: E402
from bobos_report import best_at, figure_grid, first_time, fmt_q, load, quartiles  # noqa: E402
from curve_table import CurveTable  # noqa: E402

ORDER = ["tpe", "tpe_hyperband", "tpe_median", "random", "bd_tpe", "bd_tpe_nocost", "bd_tpe_mv", "gp_ucb",
         "gp_logei", "gp_logei_d1", "gp_logei_sobol", "gp_logei_q", "gp_logei_cost", "gp_logei_cost_d1",
         "gp_logei_cost_sobol", "gp_logei_cost_half", "gp_logei_cost_half_q", "gp_logei_cost_q",
         "gp_logei_cost_d1_q", "gp_logei_cost_sobol_q", "bo_bos", "bo_bos_logei", "bo_bos_logei_cost",
         "bo_bos_logei_cost_half_q", "bo_bos_logei_cost_sobol", "hyperband", "hb_gp", "bohb", "bohb_nocost", "asha", "asha_tpe",
         "asha_tpe_nocost", "asha_hb", "asha_pred", "asha_gp", "asha_pred_gp", "asha_pred_tpe",
         "asha_rel", "asha_cur_rel", "asha_floor", "asha_learned", "asha_stop", "asha_scratch", "asha_stop_learned",
         "asha_scratch_learned", "hyperband_stop", "hyperband_scratch"]
LABEL = {
    "tpe": "Optuna TPE", "tpe_hyperband": "Optuna TPE + HyperbandPruner", "tpe_median": "Optuna TPE + MedianPruner",
    "random": "random", "bd_tpe": "tpe", "bd_tpe_nocost": "tpe, cost_aware false",
    "bd_tpe_mv": "tpe, multivariate, cost_aware false", "gp_ucb": "gp_ucb, UCB", "gp_logei": "gp_ucb, LogEI",
    "bo_bos": "bo_bos, UCB", "bo_bos_logei": "bo_bos, LogEI", "hyperband": "hyperband, random sampler",
    "bohb": "hyperband, tpe sampler (BOHB)", "bohb_nocost": "hyperband, tpe, cost_aware false",
    "asha": "asha, random, 1 bracket, current loss", "asha_tpe": "asha, tpe sampler",
    "asha_tpe_nocost": "asha, tpe, cost_aware false", "asha_hb": "asha, 4 brackets (asynchronous Hyperband)",
    "asha_pred": "asha, promotion by predicted loss",
    "asha_rel": "asha, predicted loss, cut by rung reliability",
    "asha_cur_rel": "asha, current loss, cut by rung reliability",
    "asha_learned": "asha, learned across configs, cut by rung reliability",
    "asha_floor": "asha, predicted loss (asymptote >= 0), cut by rung reliability",
    "gp_logei_d1": "gp_ucb, LogEI, n_init d+1", "gp_logei_sobol": "gp_ucb, LogEI, n_init d+1 Sobol",
    "gp_logei_cost": "gp_ucb, LogEI per second", "gp_logei_cost_d1": "gp_ucb, LogEI per second, n_init d+1",
    "gp_logei_cost_sobol": "gp_ucb, LogEI per second, n_init d+1 Sobol",
    "bo_bos_logei_cost": "bo_bos, LogEI per second",
    "bo_bos_logei_cost_half_q": "bo_bos, LogEI per sqrt(second), quantile warp",
    "gp_logei_q": "gp_ucb, LogEI, quantile warp",
    "gp_logei_cost_half": "gp_ucb, LogEI per sqrt(second)",
    "gp_logei_cost_half_q": "gp_ucb, LogEI per sqrt(second), quantile warp",
    "gp_logei_cost_q": "gp_ucb, LogEI per second, quantile warp",
    "gp_logei_cost_d1_q": "gp_ucb, LogEI per second, quantile warp, n_init d+1",
    "gp_logei_cost_sobol_q": "gp_ucb, LogEI per second, quantile warp, n_init d+1 Sobol",
    "hb_gp": "hyperband, gp sampler", "asha_gp": "asha, gp sampler",
    "asha_pred_gp": "asha, gp sampler, promotion by predicted loss",
    "asha_pred_tpe": "asha, tpe sampler, promotion by predicted loss",
    "bo_bos_logei_cost_sobol": "bo_bos, LogEI per second, n_init d+1 Sobol",
    "asha_stop": "asha, type stopping", "asha_scratch": "asha, promotion retrained from scratch",
    "asha_stop_learned": "asha, learned + reliability, type stopping",
    "asha_scratch_learned": "asha, learned + reliability, promotion from scratch",
    "hyperband_stop": "hyperband, type stopping", "hyperband_scratch": "hyperband, promotion retrained from scratch",
}
PEER = "tpe"
DEFAULT_ASHA = "asha_learned"  # what a new asha study runs (asha_new_study_defaults; "asha_floor" before 2026-11-28)
PLOTTED = ["tpe", "tpe_hyperband", "random", "bd_tpe", "gp_ucb", "hyperband", "bohb", "asha", "asha_pred", "asha_rel",
           "asha_floor", "asha_learned"]
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf", "#aec7e8", "#000000"]  # matplotlib's ten, then light blue and black (the default): one per PLOTTED
_tables = {}


def table(name):
    if name not in _tables:
        _tables[name] = CurveTable(name)
    return _tables[name]


def targets(name):
    """(issue's target, top-1% target) of a table."""
    t = table(name)
    finals = sorted(t.final)
    return t.best + 0.01, finals[max(0, int(0.01 * len(finals)) - 1)]


def label(m):
    return LABEL.get(m, m)


def ratio_interval(times, peer_times, resamples=2000):
    """95% bootstrap interval of median(times) / median(peer_times), the
    seeds of each method resampled on their own (a method's seed is its own
    random stream, so seeds are not pairs). With 20 seeds the time to the
    loose target is reached within a few trainings, by luck as much as by
    design, and this interval is wide (README-mf.md, "How noisy the ratio
    is"). None when a median is 0."""
    rng = random.Random(14)  # the same interval on every run of the report
    ratios = []
    for _ in range(resamples):
        a = quartiles([rng.choice(times) for _ in times])[1]
        b = quartiles([rng.choice(peer_times) for _ in peer_times])[1]
        if b == 0:
            return None
        ratios.append(math.inf if a == math.inf else 0.0 if b == math.inf else a / b)
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def report(runs):
    out = ["Tables: %s." % ", ".join(
        "%s (%d configs x %d epochs; Spearman rank correlation of epoch-1 and final errors %.2f)"
        % (n, table(n).n, table(n).epochs, table(n).rank_correlation(1))
        for n in sorted({k[0] for k in runs}))]
    for (name, w), by_method in sorted(runs.items()):
        methods = [m for m in ORDER if m in by_method] + sorted(m for m in by_method if m not in ORDER)
        seeds = sorted(set.intersection(*(set(by_method[m]) for m in methods)))
        horizon = by_method[methods[0]][seeds[0]]["horizon"]
        loose, strict = targets(name)
        out.append("\n### %s, W = %d, horizon %.0f simulated s, %d seeds\n" % (name, w, horizon, len(seeds)))
        out.append("Targets: within 0.01 of the table's best final error (%.4f), and the top 1%% of final "
                   "errors (%.4f). Time to each (simulated s), median [Q1, Q3], seeds that got there; "
                   "the median's ratio to Optuna TPE's, with its 95%% bootstrap interval over seeds; "
                   "seeds that got within 0.01 in at most half of "
                   "Optuna TPE's median time; best final error found at the horizon.\n" % (loose, strict))
        out.append("| method | within 0.01 | reached | / Optuna | <= 0.5x Optuna | top 1% | reached | best at horizon |")
        out.append("|---|---|---|---|---|---|---|---|")
        peer_med = peer_t1 = None
        if PEER in by_method:
            peer_t1 = [first_time(by_method[PEER][s]["points"], loose) for s in seeds]
            peer_med = quartiles(peer_t1)[1]
        for m in methods:
            rs = [by_method[m][s] for s in seeds]
            t1 = [first_time(r["points"], loose) for r in rs]
            t2 = [first_time(r["points"], strict) for r in rs]
            med = quartiles(t1)[1]
            ratio = "—" if peer_med in (None, 0, math.inf) or med == math.inf else "%.2f" % (med / peer_med)
            interval = ratio_interval(t1, peer_t1) if ratio != "—" and m != PEER else None
            if interval:
                ratio += " [%s, %s]" % tuple("%.2f" % v if v != math.inf else "∞" for v in interval)
            half = "—" if peer_med in (None, math.inf) else "%d/%d" % (
                sum(1 for t in t1 if t <= 0.5 * peer_med), len(seeds))
            out.append("| %s | %s | %d/%d | %s | %s | %s | %d/%d | %s |" % (
                label(m), fmt_q(t1, 1), sum(1 for t in t1 if t != math.inf), len(seeds), ratio, half,
                fmt_q(t2, 1), sum(1 for t in t2 if t != math.inf), len(seeds),
                fmt_q([best_at(r["points"], horizon) for r in rs])))
        if "random" in by_method:
            out.append("\nAgainst random search at equal time (half the horizon, and the horizon), per seed: "
                       "wins / ties / losses (lower best error wins):\n")
            out.append("| method | t = H/2 | t = H |")
            out.append("|---|---|---|")
            for m in methods:
                if m == "random":
                    continue
                cells = []
                for f in (0.5, 1.0):
                    wins = ties = losses = 0
                    for s in seeds:
                        a = best_at(by_method[m][s]["points"], f * horizon)
                        b = best_at(by_method["random"][s]["points"], f * horizon)
                        wins += a < b - 1e-12
                        losses += b < a - 1e-12
                        ties += not (a < b - 1e-12 or b < a - 1e-12)
                    cells.append("%d / %d / %d" % (wins, ties, losses))
                out.append("| %s | %s |" % (label(m), " | ".join(cells)))
        problems = [p for m in methods for s in seeds for p in by_method[m][s].get("problems", [])]
        if problems:
            out.append("\nScheduler problems: %d, e.g. %s" % (len(problems), problems[:3]))
    return "\n".join(out) + "\n"


def plot(runs, path):
    keys = sorted(runs)
    fig, axes = figure_grid(len(keys))
    for ax, key in zip(axes, keys):
        by_method = runs[key]
        methods = [m for m in PLOTTED if m in by_method]
        seeds = sorted(set.intersection(*(set(by_method[m]) for m in methods)))
        horizon = by_method[methods[0]][seeds[0]]["horizon"]
        loose, strict = targets(key[0])
        for m in methods:
            ts = sorted(first_time(by_method[m][s]["points"], strict) for s in seeds)
            xs = [t for t in ts if t != math.inf]
            style = "--" if m.startswith("tpe") else "-" if m == DEFAULT_ASHA else ":"
            ax.step([0] + xs + [horizon], [0] + [(i + 1) / len(ts) for i in range(len(xs))] + [len(xs) / len(ts)],
                    style, where="post", label=label(m), linewidth=2.4 if m in (DEFAULT_ASHA, PEER) else 1.3,
                    color=COLORS[PLOTTED.index(m) % len(COLORS)])  # a method's colour is the same in every panel
        ax.set_title("%s, W = %d: seeds that found a top-1%% config by time t (%d seeds)"
                     % (key[0], key[1], len(seeds)), fontsize=10)
        ax.set_xlabel("simulated wall-clock seconds (recorded training time)")
        ax.set_ylabel("fraction of seeds")
        ax.set_xscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def paired(runs, a, b):
    out = ["| table, W | seeds | target | %s: median (reached) | %s: median (reached) | %s sooner / later |"
           % (a, b, a), "|---|---|---|---|---|---|"]
    totals = {"within 0.01": [0, 0], "top 1%": [0, 0]}
    for (name, w), by_method in sorted(runs.items()):
        if a not in by_method or b not in by_method:
            continue
        seeds = sorted(set(by_method[a]) & set(by_method[b]))
        for target, what in zip(targets(name), ("within 0.01", "top 1%")):
            ta = [first_time(by_method[a][s]["points"], target) for s in seeds]
            tb = [first_time(by_method[b][s]["points"], target) for s in seeds]
            cell = lambda ts: "%s (%d)" % (fmt_q(ts, 1).split(" [")[0], sum(t != math.inf for t in ts))
            sooner, later = sum(x < y for x, y in zip(ta, tb)), sum(y < x for x, y in zip(ta, tb))
            totals[what][0] += sooner
            totals[what][1] += later
            out.append("| %s, %d | %d | %s | %s | %s | %d / %d |" % (
                name, w, len(seeds), what, cell(ta), cell(tb), sooner, later))
    for what, (sooner, later) in totals.items():
        out.append("| every cell | | %s | | | %d / %d |" % (what, sooner, later))
    return "\n".join(out) + "\n"


def compare(runs, methods):
    out = ["| table, W (seeds) | target | %s |" % " | ".join(methods), "|---|---|" + "---|" * len(methods)]
    logs = {m: [] for m in methods}
    reached = {m: 0 for m in methods}
    runs_counted = 0
    for (name, w), by_method in sorted(runs.items()):
        if not all(m in by_method for m in methods):
            continue
        seeds = sorted(set.intersection(*(set(by_method[m]) for m in methods)))
        if not seeds:
            continue
        for target, what in zip(targets(name), ("within 0.01", "top 1%")):
            runs_counted += len(seeds)
            med = {}
            for m in methods:
                ts = [first_time(by_method[m][s]["points"], target) for s in seeds]
                med[m] = statistics.median(ts)
                reached[m] += sum(t != math.inf for t in ts)
            best = min(med.values())
            for m in methods:  # a best median of 0 (reached at once) or of ∞ (by none): the ratio is 1 or capped
                ratio = 1.0 if best == math.inf or med[m] == best else 10.0 if best == 0 else med[m] / best
                logs[m].append(math.log(min(ratio, 10.0)))
            out.append("| %s, %d (%d) | %s | %s |" % (name, w, len(seeds), what, " | ".join(
                "∞" if med[m] == math.inf else "%.1f" % med[m] for m in methods)))
    if not logs[methods[0]]:
        return "no (table, W) cell has runs of every method\n"
    out.append("| geometric mean of the ratio to the cell's best median | | %s |" % " | ".join(
        "%.2f" % math.exp(sum(logs[m]) / len(logs[m])) for m in methods))
    out.append("| (run, target) pairs that reached the target | | %s |" % " | ".join(
        "%d of %d" % (reached[m], runs_counted) for m in methods))
    return "\n".join(out) + "\n"


STOP_PAIRS = [("asha_stop", "asha_scratch"), ("asha_stop_learned", "asha_scratch_learned"),
              ("hyperband_stop", "hyperband_scratch")]


def first_epochs(run, target):
    """Epochs trained by all workers when the best full training first came within target (∞: never)."""
    for (_, v), e in zip(run["points"], run.get("epoch_points", [])):
        if v <= target + 1e-12:
            return e
    return math.inf


def stopping(runs):
    out = []
    for a, b in STOP_PAIRS:
        cells = [(key, by) for key, by in sorted(runs.items()) if a in by and b in by]
        if not cells:
            continue
        out.append("\n### %s against %s\n" % (a, b))
        out.append("Epochs (all workers) and simulated seconds until the best full training came within the "
                   "target: median [Q1, Q3] over the seeds both ran, (seeds that got there); then the seeds where "
                   "%s needed fewer / more epochs than %s (a seed that got there against one that did not "
                   "counts as fewer).\n" % (a, b))
        out.append("| table, W (seeds) | target | %s epochs | %s epochs | fewer / more | %s s | %s s |" % (a, b, a, b))
        out.append("|---|---|---|---|---|---|---|")
        fewer_cells = {"within 0.01": [0, 0], "top 1%": [0, 0]}
        fewer_seeds = {"within 0.01": [0, 0], "top 1%": [0, 0]}
        for (name, w), by in cells:
            seeds = sorted(set(by[a]) & set(by[b]))
            for target, what in zip(targets(name), ("within 0.01", "top 1%")):
                ea = [first_epochs(by[a][s], target) for s in seeds]
                eb = [first_epochs(by[b][s], target) for s in seeds]
                ta = [first_time(by[a][s]["points"], target) for s in seeds]
                tb = [first_time(by[b][s]["points"], target) for s in seeds]
                reached = lambda xs: sum(x != math.inf for x in xs)  # noqa: E731
                ma, mb = statistics.median(ea), statistics.median(eb)
                fewer_cells[what][0] += ma < mb
                fewer_cells[what][1] += mb < ma
                fewer_seeds[what][0] += sum(x < y for x, y in zip(ea, eb))
                fewer_seeds[what][1] += sum(y < x for x, y in zip(ea, eb))
                out.append("| %s, %d (%d) | %s | %s (%d) | %s (%d) | %d / %d | %s (%d) | %s (%d) |" % (
                    name, w, len(seeds), what, fmt_q(ea, 0), reached(ea), fmt_q(eb, 0), reached(eb),
                    sum(x < y for x, y in zip(ea, eb)), sum(y < x for x, y in zip(ea, eb)),
                    fmt_q(ta, 1), reached(ta), fmt_q(tb, 1), reached(tb)))
        for what, (fewer, more) in fewer_cells.items():
            out.append("| cells where %s's median epochs are fewer / more | %s | | | %d / %d | | |"
                       % (a, what, fewer, more))
        for what, (fewer, more) in fewer_seeds.items():
            out.append("| (table, W, seed) runs where %s spent fewer / more epochs | %s | | | %d / %d | | |"
                       % (a, what, fewer, more))
        out.append("\nBy the horizon, medians over seeds: trials, full trainings (to the table's last epoch), "
                   "stopped trials, epochs.\n")
        out.append("| table, W | %s | %s |" % (a, b))
        out.append("|---|---|---|")
        for (name, w), by in cells:
            seeds = sorted(set(by[a]) & set(by[b]))
            cell = lambda m: "%d trials, %d full, %d stopped, %d epochs" % tuple(  # noqa: E731
                statistics.median(by[m][s][k] for s in seeds) for k in ("trials", "full", "stopped", "epochs"))
            out.append("| %s, %d | %s | %s |" % (name, w, cell(a), cell(b)))
    return "\n".join(out).lstrip("\n") + "\n" if out else "no stopping pair in these runs\n"


def main():
    if "--stopping" in sys.argv:
        import argparse
        ap = argparse.ArgumentParser(description="mf_report --stopping: stopping type against promotion from scratch")
        ap.add_argument("--stopping", action="store_true")
        ap.add_argument("runs", nargs="+")
        args = ap.parse_args()
        print(stopping(load(args.runs)), end="")
        return
    if "--compare" in sys.argv:
        import argparse
        ap = argparse.ArgumentParser(description="mf_report --compare: several methods over every cell")
        ap.add_argument("--compare", required=True, help="A,B,...: method names")
        ap.add_argument("runs", nargs="+")
        args = ap.parse_args()
        print(compare(load(args.runs), [m for m in args.compare.split(",") if m]))
        return
    if "--paired" in sys.argv:
        import argparse
        ap = argparse.ArgumentParser(description="mf_report --paired: two methods seed by seed")
        ap.add_argument("--paired", required=True, help="A,B: two method names")
        ap.add_argument("runs", nargs="+")
        args = ap.parse_args()
        names = args.paired.split(",")
        if len(names) != 2:
            ap.error("--paired takes two method names, A,B")
        print(paired(load(args.runs), *names))
        return
    report_main(__doc__, load, report, plot)


if __name__ == "__main__":
    main()
