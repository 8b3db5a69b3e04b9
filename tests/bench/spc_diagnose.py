#!/usr/bin/python3
"""spc_diagnose: where an algorithm-configuration scheduler's CPU goes on a
runtime matrix (README-spc.md section 3, issue 15's step 1).

Runs one method of spc_replay.py in-process for each seed with bd_spc_replay's
run log and prints, per seed, one JSON line:

- t_top1: the CPU time from which the incumbent is in the top 1% and stays
  (spc_replay's measure), t_first_top1: the first time it is in the top 1%,
  changes: incumbent changes after that first time (how long it takes to
  settle);
- cpu_by_class up to t_top1 (or the horizon): CPU spent on the top-1%
  configs, on configs within 1.25x / 2x of the best mean, and on the rest
  ("never competitive": more than 2x the best mean), with their runs;
- cpu_by_cap: CPU per cap value (caps_race's levels, spc's doublings);
- exact_known: the CPU time from which the best config that has an exact
  value on every instance (solved, or timed out at the cutoff) is in the top
  1% for good: when the evidence an exact incumbent rule would need exists
  (t_top1 much later says the incumbent rule is the bottleneck, about the
  same says the exploration is);
- repeats: runs of a (config, instance) at a cap at or below one where it
  already timed out, or after it was solved.

    /usr/bin/python3 tests/bench/spc_diagnose.py --banditd build/banditd \\
        --scenario minisat-rand3sat --method caps_race --seeds 0-4
"""

import argparse
import json
import math
import os
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bobos_replay import parse_range  # noqa: E402
from spc_replay import DATA, OWN_DATA, SCHEDULER_METHODS, Matrix, run_inprocess  # noqa: E402


def diagnose(m, runlog, result):
    order_top = m.top(0.01)
    best = m.mean[m.best]
    horizon_cpu = result["cpu"]
    t_top1 = result["time_to_top1pct"]
    upto = t_top1 if t_top1 is not None else horizon_cpu

    def klass(c):
        if c in order_top:
            return "top1pct"
        if m.mean[c] <= 1.25 * best:
            return "within_1.25x"
        if m.mean[c] <= 2 * best:
            return "within_2x"
        return "over_2x"

    by_class = {k: {"cpu": 0.0, "runs": 0} for k in ("top1pct", "within_1.25x", "within_2x", "over_2x")}
    by_cap = {}
    state = {}  # (config, instance) -> ("solved", rt) or ("timeout", cap)
    exact = {}  # config -> instances with an exact value
    exact_sum = {}
    repeats = 0
    cpu = 0.0
    n = len(m.instances)
    exact_best = None  # the best fully exact config so far
    exact_trace = []
    with open(runlog) as f:
        for line in f:
            c, j, cap, to, charge = line.split()
            c, j, cap, to, charge = int(c), int(j), float(cap), int(to), float(charge)
            cpu += charge
            if cpu <= upto + 1e-9:
                k = by_class[klass(c)]
                k["cpu"] += charge
                k["runs"] += 1
                key = "cutoff/%d" % 2 ** max(0, round(math.log2(m.cutoff / cap)))  # its doubling level
                b = by_cap.setdefault(key, {"cpu": 0.0, "runs": 0})
                b["cpu"] += charge
                b["runs"] += 1
            old = state.get((c, j))
            if old is not None and (old[0] == "solved" or cap <= old[1] * (1 + 1e-9)):
                repeats += 1
            was_exact = old is not None and (old[0] == "solved" or old[1] >= m.cutoff * (1 - 1e-9))
            state[(c, j)] = ("timeout", cap) if to else ("solved", charge)
            now_exact = not to or cap >= m.cutoff * (1 - 1e-9)
            if now_exact and not was_exact:
                exact[c] = exact.get(c, 0) + 1
                if exact[c] == n and (exact_best is None or m.mean[c] < m.mean[exact_best]):
                    exact_best = c
                    exact_trace.append((cpu, c))
    t_exact = None
    for t, c in exact_trace:  # exact_best only improves, so it stays once in the top 1%
        if c in order_top:
            t_exact = t
            break
    first = None
    changes = 0
    prev = None
    for t, mean in result["trace"]:
        inc_top = mean is not None and mean <= max(m.mean[c] for c in order_top) + 1e-12
        if first is None and inc_top:
            first = t
        if first is not None and prev is not None and mean != prev:
            changes += 1
        prev = mean
    nt = m.naive_total
    frac = (lambda x: None if x is None else round(x / nt, 4))
    return {"t_top1": frac(t_top1), "t_first_top1": frac(first), "changes_after_first": changes,
            "exact_known": frac(t_exact), "runs": result["runs"], "cpu": frac(horizon_cpu),
            "repeats": repeats,
            "cpu_by_class": {k: {"cpu": frac(v["cpu"]), "runs": v["runs"]} for k, v in by_class.items()},
            "cpu_by_cap": {k: {"cpu": frac(v["cpu"]), "runs": v["runs"]}
                           for k, v in sorted(by_cap.items(), key=lambda kv: -int(kv[0].split("/")[1]))}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--banditd", required=True)
    ap.add_argument("--scenario", default="minisat-rand3sat")
    ap.add_argument("--method", default="caps_race")
    ap.add_argument("--options", default="{}", help="JSON merged over the method's options")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--horizon", type=float, default=1.0)
    ap.add_argument("--data", default=DATA + "," + OWN_DATA)
    ap.add_argument("--brief", action="store_true", help="one short line per seed, then the medians")
    args = ap.parse_args()
    replayer = os.path.join(os.path.dirname(os.path.abspath(args.banditd)), "tests", "bench", "bd_spc_replay")
    m = Matrix(args.scenario, args.data.split(","))
    scheduler, options = SCHEDULER_METHODS[args.method]
    options = dict(options, **json.loads(args.options))
    briefs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in parse_range(args.seeds):
            log = os.path.join(tmp, "runs-%d" % seed)
            r = run_inprocess(replayer, m, seed, args.horizon * m.naive_total, scheduler, options, runlog=log)
            d = diagnose(m, log, r)
            d.update(scenario=args.scenario, method=args.method, options=options, seed=seed)
            if not args.brief:
                print(json.dumps(d), flush=True)
                continue
            briefs.append(d)
            c = d["cpu_by_class"]
            print("seed %2d: top1 for good %s (first %s, %d changes after), exact-known %s, runs %d; cpu on "
                  "top1 %.3f, <=1.25x %.3f, <=2x %.3f, >2x %.3f" % (
                      seed, d["t_top1"], d["t_first_top1"], d["changes_after_first"], d["exact_known"], d["runs"],
                      c["top1pct"]["cpu"], c["within_1.25x"]["cpu"], c["within_2x"]["cpu"], c["over_2x"]["cpu"]),
                  flush=True)
    if briefs:
        t = sorted(math.inf if d["t_top1"] is None else d["t_top1"] for d in briefs)
        print("median top1 for good: %s over %d seeds" % (t[len(t) // 2] if len(t) % 2 else
                                                          (t[len(t) // 2 - 1] + t[len(t) // 2]) / 2, len(t)))


if __name__ == "__main__":
    main()
