#!/usr/bin/python3
"""replay_report: tables (Markdown) and anytime plots (PNG) from the JSON files
written by replay_daemon.py, replay_optuna.py and replay_latency.py.

Anytime value of a run at x (epochs trained, or simulated hours): the best
epoch-50 val_loss among configs trained to 50 epochs by then. A run that
stopped because it found the table's best is flat afterwards; a run that hit
the epoch cap (or whose study ended) has no value beyond its end, and a
cell computed from fewer runs than the others says so ("n=k").
Budget to a threshold: epochs trained (and simulated hours) when the first
config at or under it finished its 50th epoch; a run that never got there is
censored and counts as +infinity in medians and quartiles.

Usage: replay_report.py --results a.json,b.json [--latency lat.json]
       --md results/replay.md --png results/replay_anytime.png
"""

import argparse
import json
import math
import os
import sys

ORDER = ["random", "successive_halving", "hyperband", "asha", "asha_rmin2", "optuna_sh", "optuna_hyperband"]
LABEL = {
    "random": "banditd random",
    "successive_halving": "banditd SH (repeated)",
    "hyperband": "banditd hyperband",
    "asha": "banditd asha",
    "asha_rmin2": "banditd asha r_min 50/27",
    "optuna_sh": "optuna SH pruner",
    "optuna_hyperband": "optuna HB pruner",
}
EPOCH_GRID = [100, 250, 500, 1000, 2000, 5000, 10000, 20000]
HOUR_GRID = {1: [25, 50, 100, 250, 500, 1000, 2000], 8: [5, 10, 25, 50, 100, 250]}
INF = math.inf


def quantile(xs, q):
    """Quantile with linear interpolation; xs may contain +inf (censored)."""
    xs = sorted(xs)
    if not xs:
        return None
    pos = q * (len(xs) - 1)
    lo, hi = int(math.floor(pos)), int(math.ceil(pos))
    frac = pos - lo
    if frac == 0:
        return xs[lo]
    if xs[hi] == INF:
        return INF
    return xs[lo] + (xs[hi] - xs[lo]) * frac


def q3(xs):
    return quantile(xs, 0.25), quantile(xs, 0.5), quantile(xs, 0.75)


def value_at(run, x, axis):
    """Anytime value of a run at x on axis 'epochs' or 'hours'; None = not covered."""
    key = 1 if axis == "epochs" else 0
    scale = 1.0 if axis == "epochs" else 3600.0
    end = run["end_epochs"] if axis == "epochs" else run["end_time"] / 3600.0
    if x > end and run["stop_reason"] != "found_best":
        return None
    best = INF
    for p in run["points"]:
        if p[key] / scale <= x:
            best = p[2]
        else:
            break
    return best


def fmt_loss(v):
    if v is None:
        return "n/a"
    return "—" if v == INF else "%.3f" % v


def fmt_num(v, digits=0):
    if v is None:
        return "n/a"
    if v == INF:
        return "cens."
    return "{:,.{d}f}".format(v, d=digits)


def load(paths):
    runs, meta = [], {}
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        meta.setdefault("unavailable", []).extend(d.get("unavailable", []))
        meta["table_best"] = d["table_best"]
        meta["thresholds"] = d["thresholds"]
        runs.extend(r for r in d["runs"])
    return runs, meta


def groups(runs):
    g = {}
    for r in runs:
        if "error" in r:
            continue
        g.setdefault((r["method"], r["workers"]), []).append(r)
    return sorted(g.items(), key=lambda kv: (kv[0][1], ORDER.index(kv[0][0]) if kv[0][0] in ORDER else 99))


def anytime_table(gs, axis, W, grid):
    head = "| method | " + " | ".join(("%s ep" % fmt_num(x)) if axis == "epochs" else ("%s h" % fmt_num(x))
                                      for x in grid) + " |"
    lines = [head, "|---|" + "---|" * len(grid)]
    for (m, w), rs in gs:
        if w != W:
            continue
        cells = []
        for x in grid:
            vals = [value_at(r, x, axis) for r in rs]
            got = [v for v in vals if v is not None]
            if not got:
                cells.append("n/a")
                continue
            a, b, c = q3(got)
            s = "%s [%s, %s]" % (fmt_loss(b), fmt_loss(a), fmt_loss(c))
            if len(got) < len(rs):
                s += " n=%d" % len(got)
            cells.append(s)
        lines.append("| %s | %s |" % (LABEL.get(m, m), " | ".join(cells)))
    return lines


def hits(rs, thr, key):
    out = []
    for r in rs:
        h = r["hits"].get(thr)
        out.append(INF if h is None else (h[key] / (3600.0 if key == "time" else 1.0)))
    return out


def budget_table(gs, meta):
    lines = []
    for thr in meta["thresholds"]:
        lines.append("")
        lines.append("Threshold %s: epoch-50 val_loss <= %.4f" % (thr, meta["thresholds"][thr]))
        lines.append("")
        lines.append("| method | W | runs | censored | epochs median [Q1, Q3] | speedup vs random (epochs) "
                     "| sim. hours median [Q1, Q3] | speedup vs random (hours) |")
        lines.append("|---|---|---|---|---|---|---|---|")
        ref = {}
        for (m, w), rs in gs:
            if m == "random":
                ref[w] = (q3(hits(rs, thr, "epochs"))[1], q3(hits(rs, thr, "time"))[1])
        for (m, w), rs in gs:
            e = q3(hits(rs, thr, "epochs"))
            t = q3(hits(rs, thr, "time"))
            cens = sum(1 for x in hits(rs, thr, "epochs") if x == INF)
            re, rt = ref.get(w, (None, None))

            def ratio(r_med, med):
                if r_med is None or med is None or med == INF or med == 0:
                    return "n/a"
                if r_med == INF:
                    return "n/a (random cens.)"
                return "%.1fx" % (r_med / med)
            lines.append("| %s | %d | %d | %d | %s [%s, %s] | %s | %s [%s, %s] | %s |" % (
                LABEL.get(m, m), w, len(rs), cens, fmt_num(e[1]), fmt_num(e[0]), fmt_num(e[2]), ratio(re, e[1]),
                fmt_num(t[1], 1), fmt_num(t[0], 1), fmt_num(t[2], 1), ratio(rt, t[1])))
    return lines


def sampling_table(gs, n_rows):
    """Finding the best row is waiting for the sampler to draw it: each new config
    is a uniform draw of the 345 rows, so the draws until it appears are geometric
    (median ln 2 / -ln(1 - 1/345) = 238.8 draws), and the epochs spent per new
    config c set the budget: about 238.8 c, plus the best row's own training."""
    med_draws = math.log(2) / -math.log(1 - 1.0 / n_rows)
    lines = ["| method | W | epochs per new config (all runs) | predicted median epochs to draw the best row "
             "(%.1f c) | measured median (1%% threshold) |" % med_draws, "|---|---|---|---|---|"]
    for (m, w), rs in gs:
        if not all("new_configs" in r for r in rs):
            continue
        c = sum(r["end_epochs"] for r in rs) / max(1, sum(r["new_configs"] for r in rs))
        meas = q3(hits(rs, "1%", "epochs"))[1]
        lines.append("| %s | %d | %.2f | %s | %s |" % (LABEL.get(m, m), w, c, fmt_num(med_draws * c),
                                                        fmt_num(meas)))
    return lines


def util_table(gs):
    lines = ["| method | W | utilisation median [min, max] | suggest answers \"retry later\" (median per run) "
             "| trials per run (median) | stop reasons |", "|---|---|---|---|---|---|"]
    for (m, w), rs in gs:
        if w == 1:
            continue
        u = sorted(r["utilisation"] for r in rs if r["utilisation"] is not None)
        waits = q3([r.get("idle_waits", 0) for r in rs])[1]
        trials = q3([r["trials"] for r in rs])[1]
        reasons = {}
        for r in rs:
            reasons[r["stop_reason"]] = reasons.get(r["stop_reason"], 0) + 1
        lines.append("| %s | %d | %.3f [%.3f, %.3f] | %s | %s | %s |" % (
            LABEL.get(m, m), w, q3(u)[1], u[0], u[-1], fmt_num(waits), fmt_num(trials),
            ", ".join("%s %d" % kv for kv in sorted(reasons.items()))))
    return lines


def latency_table(lat):
    lines = ["| scheduler | trials in study | suggest p50 / p99 / p99.9 / max ms | complete p50 / p99 / p99.9 / max ms "
             "| calls in window |", "|---|---|---|---|---|"]
    for r in lat["runs"]:
        for c, w in r["windows"].items():
            def cell(k):
                if k not in w:
                    return "n/a"
                return "%.3f / %.2f / %.1f / %.1f" % (w[k]["p50_ms"], w[k]["p99_ms"], w[k].get("p999_ms", 0),
                                                     w[k]["max_ms"])
            n = sum(v["n"] for v in w.values())
            lines.append("| %s | %s +- %s | %s | %s | %d |" % (r["scheduler"], fmt_num(int(c)),
                                                               fmt_num(lat.get("window", 1000) // 2),
                                                               cell("suggest"), cell("complete"), n))
    lines += ["", "Whole runs (between the windows the client completes every running trial, then suggests up to "
              "%d at once; every complete call counted):" % lat.get("fill", 1), "",
              "| scheduler | trials | wall s | trials/s | complete mean / p50 / p99 / p99.9 / max ms "
              "| completes > 10 ms | load avg (1 min) at start, end |", "|---|---|---|---|---|---|---|"]
    for r in lat["runs"]:
        la = r.get("loadavg_1min") or [float("nan")] * 2
        lines.append("| %s | %s | %.1f | %.0f | %.3f / %.3f / %.2f / %.1f / %.0f | %d of %s | %.1f, %.1f |" % (
            r["scheduler"], fmt_num(r["trials"]), r["seconds"], r["trials_per_s"], r["complete_mean_ms"],
            r["complete_p50_ms"], r["complete_p99_ms"], r["complete_p999_ms"], r["complete_max_ms"],
            r["completes_over_10ms"], fmt_num(r["completes"]), la[0], la[1]))
    return lines


def plot(gs, meta, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(13, 9), sharey=True)
    palette = ["k", "tab:orange", "tab:blue", "tab:green", "tab:olive", "tab:purple", "tab:red"]
    colors = dict(zip(ORDER, palette))
    for col, W in enumerate((1, 8)):
        for row, axis in enumerate(("epochs", "hours")):
            ax = axes[row][col]
            hi = 50000 if axis == "epochs" else max(
                [r["end_time"] / 3600.0 for (m, w), rs in gs if w == W for r in rs] + [1])
            lo = 50 if axis == "epochs" else 2
            xs = [lo * (hi / lo) ** (i / 199.0) for i in range(200)]
            for (m, w), rs in gs:
                if w != W:
                    continue
                med, q1, q3_ = [], [], []
                for x in xs:
                    vals = [value_at(r, x, axis) for r in rs]
                    if any(v is None for v in vals):   # a run ended at the cap: stop the curve
                        med.append(float("nan")), q1.append(float("nan")), q3_.append(float("nan"))
                        continue
                    a, b, c = q3(vals)
                    med.append(b if b != INF else float("nan"))
                    q1.append(a if a != INF else float("nan"))
                    q3_.append(c if c != INF else float("nan"))
                ax.plot(xs, med, color=colors.get(m), label=LABEL.get(m, m), lw=1.6,
                        ls="--" if m.startswith("optuna") else "-")
                ax.fill_between(xs, q1, q3_, color=colors.get(m), alpha=0.12, lw=0)
            ax.axhline(meta["table_best"], color="grey", lw=0.8, ls=":")
            ax.axhline(meta["thresholds"]["1%"], color="grey", lw=0.8, ls="--")
            ax.axhline(meta["thresholds"]["5% of range"], color="grey", lw=0.8, ls="-.")
            ax.set_xscale("log")
            ax.set_ylim(meta["table_best"] - 0.02, 5.1)
            ax.set_xlabel("epochs trained (all workers)" if axis == "epochs" else "simulated wall-clock hours")
            if col == 0:
                ax.set_ylabel("best epoch-50 val_loss found (median, IQR band)")
            ax.set_title("W = %d, vs %s" % (W, "epochs" if axis == "epochs" else "simulated time"))
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("NAS-Bench-NLP replay, %d seeds: table best %.4f (dotted), 1%% threshold (dashed), "
                 "5%%-of-range threshold (dash-dot)" % (len({r["seed"] for _, rs in gs for r in rs}),
                                                       meta["table_best"]))
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", required=True, help="comma-separated JSON files")
    ap.add_argument("--latency", default=None)
    ap.add_argument("--md", required=True)
    ap.add_argument("--png", default=None)
    ap.add_argument("--header", default="")
    a = ap.parse_args()
    runs, meta = load([p for p in a.results.split(",") if p])
    gs = groups(runs)
    errors = [r for r in runs if "error" in r]
    problems = [(r["method"], r["workers"], r["seed"], p) for r in runs for p in r.get("problems", [])]
    out = []
    if a.header:
        out += [a.header, ""]
    seeds = sorted({r["seed"] for r in runs})
    out.append("Table best (epoch-50 val_loss over the 341 completed runs): %.4f; seeds %d..%d (%d); "
               "epoch cap %s per run." % (meta["table_best"], seeds[0], seeds[-1], len(seeds),
                                          fmt_num(max(r.get("cap_epochs", 0) for r in runs if "error" not in r))))
    for W in (1, 8):
        out += ["", "### Anytime, W = %d: best epoch-50 val_loss vs epochs trained (median [Q1, Q3])" % W, ""]
        out += anytime_table(gs, "epochs", W, EPOCH_GRID)
        out += ["", "### Anytime, W = %d: vs simulated wall-clock hours (median [Q1, Q3])" % W, ""]
        out += anytime_table(gs, "hours", W, HOUR_GRID[W])
    out += ["", "### Budget to reach a threshold (cens. = censored: not reached before the run stopped)"]
    out += budget_table(gs, meta)
    out += ["", "### Why: epochs per newly sampled config (the 1% threshold is met only by the best row)", ""]
    out += sampling_table(gs, 345)
    out += ["", "### Worker utilisation, W = 8 (busy worker-seconds / (8 x simulated time until the run stopped))",
            ""]
    out += util_table(gs)
    if a.latency and os.path.exists(a.latency):
        with open(a.latency) as f:
            lat = json.load(f)
        out += ["", "### banditd latency in one study (client-side, keep-alive, windows of trials around the count)",
                ""]
        out += latency_table(lat)
    if meta.get("unavailable"):
        out += ["", "Not run (scheduler not available in this daemon): " + ", ".join(meta["unavailable"])]
    if errors or problems:
        out += ["", "### Errors and scheduler problems", ""]
        for r in errors:
            out.append("- %s W=%d seed %d: %s" % (r["method"], r["workers"], r["seed"], r["error"]))
        for p in problems[:50]:
            out.append("- %s W=%d seed %d: %s" % p)
    text = "\n".join(out) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(a.md)), exist_ok=True)
    with open(a.md, "w") as f:
        f.write(text)
    sys.stdout.write(text)
    if a.png:
        plot(gs, meta, a.png)


if __name__ == "__main__":
    main()
