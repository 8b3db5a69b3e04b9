#!/usr/bin/python3
"""spc_report: tables and the plot from spc_replay.py's JSON lines.

    /usr/bin/python3 tests/bench/spc_report.py tests/bench/results/spc_runs.jsonl.gz \\
        --md tests/bench/results/spc.md --png tests/bench/results/spc_anytime.png

Per scenario and method, over the seeds: the CPU time from which the
incumbent is the best configuration and stays so until the horizon (as a
fraction of the naive baseline's total CPU time: median and quartiles, and
how many seeds got there), the same for an incumbent within 5% and 10% of
the best mean runtime, and the runs made. The plot shows the incumbent's
true mean runtime against CPU time (median over seeds, quartile band).
"""

import argparse
import gzip
import json
import math
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import describe, md_table, quantile  # noqa: E402

ORDER = ["spc", "caps_race", "spc_cycle", "spc_last_step", "spc_once", "uniform", "uniform_paper", "hyperband",
         "naive"]
COLORS = {"spc": "tab:red", "caps_race": "tab:brown", "spc_cycle": "tab:pink", "spc_last_step": "tab:orange",
          "spc_once": "tab:purple", "uniform": "tab:blue", "uniform_paper": "tab:cyan", "hyperband": "tab:green",
          "naive": "black"}


def load(path):
    runs = {}
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            r = json.loads(line)
            runs.setdefault(r["scenario"], {}).setdefault(r["method"], []).append(r)
    return runs


def fraction_cell(rs, key):
    got = [r[key] / r["naive_total"] for r in rs if r.get(key) is not None]
    if not got:
        return "never (0/%d)" % len(rs)
    return "%.3f [%.3f, %.3f] (%d/%d)" % (quantile(got, 0.5), quantile(got, 0.25), quantile(got, 0.75), len(got),
                                          len(rs))


def tables(runs):
    out = []
    for scen in sorted(runs):
        ms = runs[scen]
        any_run = next(iter(ms.values()))[0]
        out.append("### %s\n" % scen)
        out.append("Best solver: `%s`, mean PAR1 runtime %.4g s; naive baseline (every solver on every instance "
                   "at the cutoff): %.0f CPU s. Fractions are of that total (median [quartiles] (seeds that got "
                   "there)); horizon %.2f of it.\n" % (any_run["best"], any_run["best_mean"], any_run["naive_total"],
                                                       any_run["horizon"] / any_run["naive_total"]))
        rows = []
        for m in ORDER:
            if m not in ms:
                continue
            rs = ms[m]
            checks = [r.get("daemon_check") for r in rs if r.get("daemon_check")]
            rows.append([m, fraction_cell(rs, "time_to_best"), fraction_cell(rs, "time_to_top1pct"),
                         fraction_cell(rs, "time_to_5pct"), fraction_cell(rs, "time_to_10pct"),
                         "%.0f" % quantile([r["runs"] for r in rs], 0.5), ", ".join(sorted(set(checks))) or "-"])
        out.append(md_table(["method", "best config, for good", "top 1%, for good", "within 5%, for good",
                             "within 10%, for good", "runs (median)", "daemon check"], rows))
        out.append("")
    return "\n".join(out)


def live_table(path):
    """The minisat run of spc_live.py: default vs the incumbents."""
    with open(path) as f:
        r = json.load(f)
    out = ["### Live: minisat on SATLIB uf175 / uuf175 (spc_live.py)\n",
           "%d training and %d held-out instances, caps %g .. %g CPU s, %d runs per (config, instance) in the "
           "measurement, PAR1 at %g s. Incumbent snapshots:\n" % (
               len(r["train"]), len(r["test"]), r["kappa0"], r["cutoff"], r["repeats"], r["cutoff"])]
    out.append(md_table(["minute", "runs", "solver CPU s", "configs sampled", "incumbent's active instances",
                         "its mean capped runtime (s)"],
                        [[s["minute"], s["runs"], "%.0f" % s["cpu_seconds"], s["configs"],
                          (s["incumbent"] or {}).get("active_instances", "-"),
                          "%.4f" % s["incumbent"]["value"] if s["incumbent"] else "-"] for s in r["snapshots"]]))
    out.append("\nMean CPU seconds per instance (max; timeouts at the cutoff):\n")
    rows = []
    for name, c in r["configs"].items():
        rows.append([name, "%.4f (%.3f; %d)" % (c["train"]["mean"], c["train"]["max"], c["train"]["timeouts"]),
                     "%.4f (%.3f; %d)" % (c["test"]["mean"], c["test"]["max"], c["test"]["timeouts"]),
                     " ".join("%s=%s" % (k, ("%.4g" % v) if isinstance(v, float) else v)
                              for k, v in sorted(c["config"].items()))])
    out.append(md_table(["config", "training instances", "held-out instances", "parameters"], rows))
    if r.get("sample_incumbents"):
        out.append("\nEach sample's own incumbent at the end (most active instances within the sample), "
                   "measured the same way:\n")
        out.append(md_table(["sample", "configs", "active instances", "spc's mean capped runtime", "training",
                             "held-out"],
                            [[s["sample"], s["size"], s["active_instances"], "%.4f" % s["mean_capped"],
                              "%.4f (%d)" % (s["train"]["mean"], s["train"]["timeouts"]),
                              "%.4f (%d)" % (s["test"]["mean"], s["test"]["timeouts"])]
                             for s in r["sample_incumbents"]]))
    return "\n".join(out) + "\n"


def plot(runs, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    scen = sorted(runs)
    fig, axes = plt.subplots(1, len(scen), figsize=(5.2 * len(scen), 4.2), squeeze=False)
    for ax, s in zip(axes[0], scen):
        any_run = next(iter(runs[s].values()))[0]
        total = any_run["naive_total"]
        grid = [total * 10 ** (k / 20.0) for k in range(-120, 1)]
        for m in ORDER:
            if m not in runs[s]:
                continue
            curves = []
            for r in runs[s][m]:
                tr, vals, i, cur = r["trace"], [], 0, math.nan
                for g in grid:
                    while i < len(tr) and tr[i][0] <= g:
                        cur = tr[i][1] if tr[i][1] is not None else math.nan
                        i += 1
                    vals.append(cur)
                curves.append(vals)
            med, lo, hi, xs = [], [], [], []
            for k, g in enumerate(grid):
                col = [c[k] for c in curves if not math.isnan(c[k])]
                if len(col) * 2 < len(curves):
                    continue
                xs.append(g / total)
                med.append(quantile(col, 0.5))
                lo.append(quantile(col, 0.25))
                hi.append(quantile(col, 0.75))
            ax.plot(xs, med, color=COLORS[m], label=m)
            ax.fill_between(xs, lo, hi, color=COLORS[m], alpha=0.15)
        ax.axhline(any_run["best_mean"], color="grey", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_title(s)
        ax.set_xlabel("CPU time / naive baseline's total")
        ax.set_ylabel("incumbent's mean PAR1 runtime (s)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Algorithm configuration on runtime matrices (ASlib SAT, minisat): incumbent vs CPU time (median, quartiles over seeds)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs")
    ap.add_argument("--md", required=True)
    ap.add_argument("--png", required=True)
    ap.add_argument("--live", help="spc_live.py's JSON, tabled after the replay")
    args = ap.parse_args()
    runs = load(args.runs)
    with open(args.md, "w") as f:
        f.write("# SPC replay on ASlib SAT runtime matrices\n\n")
        d = describe()
        f.write("Run %s on %s, source %s.\n\nCommand: `tests/bench/spc_run.sh` (see README-spc.md).\n\n" % (
            d["date"], d["machine"], d["source"]))
        f.write(tables(runs))
        if args.live:
            f.write("\n" + live_table(args.live))
    plot(runs, args.png)


if __name__ == "__main__":
    main()
