#!/usr/bin/python3
"""asha_diagnose: where ASHA spends its epochs and where it loses the configs
that end best (issue 14), on bobos_replay.py's simulated clock.

Runs one bobos_replay method (an asha variant) per seed and records every
trial (simulated start and end, table row, rung, epochs trained). Prints per
seed: when the first full-budget training completes, the epochs spent per
rung up to the target (best full training within 0.01 of the table's best
final error) and up to the horizon, and the first qualifying config started:
when, the highest rung it reached, and its rank there by the rung's own
ordering (the config's error at the rung's budget, or with --predicted the
pow3 extrapolation of its curve, as asha.c ranks). Then, per table, the
Spearman correlation over all rows of that ranking at each rung's budget
with the final error.

    /usr/bin/python3 tests/bench/asha_diagnose.py --banditd build/banditd \\
        --tables mlp_digits,sgd_fashion_mnist --method asha_pred --seeds 0-19 --workers 1
"""

import argparse
import math
import os
import statistics
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bobos_replay as br  # noqa: E402
from curve_table import CurveTable, spearman  # noqa: E402
from replay_common import Client  # noqa: E402


def pow3_predict(steps, losses, target):
    """Python twin of server/model/curve.c's bd_curve_predict (pow3, 32 values of c)."""
    pts = [(s, v) for s, v in zip(steps, losses) if math.isfinite(v) and s > 0]
    if not pts:
        return math.inf
    t_last, last = pts[-1]
    if len(pts) < 3 or not target > t_last:
        return last
    best = (math.inf, last, last)
    for g in range(32):
        c = 0.25 * (3.0 / 0.25) ** (g / 31)
        xs = [s ** -c for s, _ in pts]
        ys = [v for _, v in pts]
        k = len(pts)
        sx, sy = sum(xs), sum(ys)
        sxx = sum(x * x for x in xs)
        sxy = sum(x * y for x, y in zip(xs, ys))
        var = sxx - sx * sx / k
        b = max((sxy - sx * sy / k) / var if var > 1e-300 else 0.0, 0.0)
        a = (sy - b * sx) / k
        sse = sum((y - (a + b * x)) ** 2 for x, y in zip(xs, ys))
        if sse < best[0]:
            best = (sse, a + b * target ** -c, a + b * t_last ** -c)
    return min(best[1], min(best[2], last))


class Recorder(br.BanditdDriver):
    """A BanditdDriver that keeps every trial: start, end, row, rung, epochs."""

    def __init__(self, *a):
        super().__init__(*a)
        self.log = []  # dicts: id, row, rung, e0, budget, t0, t1, done
        self.by_id = {}

    def ask(self, t, w):
        job = super().ask(t, w)
        if job is None:
            return None
        tr = self.last_trial
        rec = {"id": tr["id"], "row": job.row, "rung": (tr.get("scheduler") or {}).get("rung"), "e0": job.e0,
               "budget": job.budget, "t0": t, "t1": None, "end_epoch": job.e0}
        self.log.append(rec)
        self.by_id[tr["id"]] = rec
        self.now = t
        return job

    def report(self, job, epoch, err, elapsed):
        self.by_id[job.handle]["end_epoch"] = epoch
        self.by_id[job.handle]["t1"] = job.t_start + elapsed
        return super().report(job, epoch, err, elapsed)


def rung_value(table, row, budget, predicted):
    e = table.err[row][:budget]
    return pow3_predict(list(range(1, budget + 1)), e, table.epochs) if predicted else e[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--banditd", required=True)
    ap.add_argument("--tables", default="mlp_digits,sgd_fashion_mnist")
    ap.add_argument("--method", default="asha_pred")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--workers", default="1")
    args = ap.parse_args()
    predicted = br.BANDITD_METHODS[args.method][1].get("promotion") == "predicted"
    daemon = br.Daemon(args.banditd)
    client = Client(daemon.url, daemon.token, timeout=120)
    try:
        for name in args.tables.split(","):
            table = CurveTable(name)
            thr = table.best + 0.01
            budgets = [1, 3, 9, 50]
            print("== %s (%d rows, %d within 0.01)" % (name, table.n, sum(f <= thr for f in table.final)))
            corr = [spearman([rung_value(table, r, b, predicted) for r in range(table.n)], table.final)
                    for b in budgets[:-1]]
            print("Spearman(rung ranking value, final) at budgets 1/3/9: %s" % " ".join("%.2f" % c for c in corr))
            for w in br.parse_range(args.workers):
                horizon = br.HORIZON[name] / w
                summary = []
                for seed in br.parse_range(args.seeds):
                    drv = Recorder(client, table, args.method, seed)
                    rec = br.simulate(drv, table, w, horizon)
                    hit = next((t for t, v in rec.points if v <= thr), math.inf)
                    full = [x for x in drv.log if x["end_epoch"] >= table.epochs]
                    first_full = min((x["t1"] for x in full), default=math.inf)
                    ep_hit = [0] * 4
                    ep_all = [0] * 4
                    for x in drv.log:
                        k = x["rung"] if x["rung"] is not None else 0
                        n = x["end_epoch"] - x["e0"]
                        ep_all[min(k, 3)] += n
                        if x["t0"] < hit:
                            # epochs trained before the hit (a trial cut by it counts pro rata)
                            frac = 1.0 if x["t1"] is None or x["t1"] <= hit else \
                                (hit - x["t0"]) / max(x["t1"] - x["t0"], 1e-12)
                            ep_hit[min(k, 3)] += n * frac
                    # the first qualifying config started: how far it got and its rank there
                    q = next((x for x in drv.log if x["rung"] == 0 and table.final[x["row"]] <= thr), None)
                    fate = "none started"
                    if q is not None:
                        top = max(x["rung"] for x in drv.log if x["row"] == q["row"] and x["rung"] is not None)
                        peers = [x for x in drv.log if x["rung"] == top and x["t1"] is not None
                                 and x["end_epoch"] >= budgets[top]]
                        vals = sorted((rung_value(table, x["row"], budgets[top], predicted), x["row"]) for x in peers)
                        mine = rung_value(table, q["row"], budgets[top], predicted)
                        rank = sum(v < mine for v, _ in vals) + 1
                        fate = "started %.1f s (trial %d), reached rung %d, rank %d of %d there" % (
                            q["t0"], drv.log.index(q) + 1, top, rank, len(vals))
                    summary.append((hit, first_full, ep_hit, ep_all, rec.full))
                    print("W=%d seed %2d: hit %6.1f s, first full %5.1f s, epochs to hit r0..r3 %s, "
                          "to horizon %s; first qualifying: %s" % (
                              w, seed, hit, first_full, [round(e) for e in ep_hit], ep_all, fate))
                med = lambda i: statistics.median(s[i] for s in summary)
                print("W=%d median: hit %.1f s, first full %.1f s; epochs to horizon per rung %s" % (
                    w, med(0), med(1), [round(statistics.mean(s[3][k] for s in summary)) for k in range(4)]))
    finally:
        client.close()
        daemon.stop()


if __name__ == "__main__":
    main()
