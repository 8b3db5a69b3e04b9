#!/usr/bin/python3
"""spc_replay: Structured Procrastination with Confidence on real solver
runtime matrices (ASlib SAT scenarios, ../shared/data/runtimes), against the
baselines issue 9 names.

Each scenario's solvers are the configurations and its instances the
instances. A run (solver, instance, cap) is answered from the matrix: it
costs min(runtime, cap) CPU seconds and times out when the recorded run did
not finish ("status" other than ok) or took longer than the cap. The best
configuration is the solver with the smallest mean PAR1 runtime (a timeout
at the scenario's cutoff counts the cutoff), the quantity SPC estimates.

Methods (each for every seed; a seed is an order of the instances):
- spc: banditd's `spc` over HTTP, one worker (so the exact sequential
  algorithm), instances declared in the seed's order (shuffle_instances
  off), kappa0 = 1 s, caps doubling up to the cutoff; the incumbent is what
  GET /v1/studies/{id} answers (the most active instances).
- spc_last_step: the same with the option lcb = "last_step" (the earlier
  spec's form, docs/ALGORITHMS.md section 5; the default polls every
  tester's LCB at the current iteration).
- spc_once: spc with stream = "once": every instance at most once per
  config (no new draws of the instances after the first pass).
- uniform: spc's finite-stream testers (each instance once per tester, a
  fresh instance while the queue is below its bound, else the queue's front;
  doubling caps) taken in round-robin order instead of by LCB, answering
  with spc's finite-stream incumbent rule: an ablation of spc's allocation
  alone (since issue 15). Simulated here.
- uniform_paper: the uniform of issue 9 and of issue 15's text: the paper's
  testers (the instance stream cycles, a new seeded order every pass) taken
  round robin, answering with the paper's incumbent (the most active
  instances, ties to the earlier config). Simulated here.
- hyperband: banditd's `hyperband` over HTTP with the number of instances as
  the budget (successive halving on instances; eta 3): a trial of budget b
  runs the config on the seed's first b instances at the full cutoff (runs
  already made for that config are reused, not charged again); its loss is
  their mean PAR1 runtime. Incumbent: the best loss at the largest budget
  reached.
- naive: every config on every instance at the full cutoff, configs in a
  seeded order; the incumbent is the best mean among the configs done.

Measured: the CPU time until the incumbent is the best configuration and
stays so until the run's horizon (a fraction of the naive baseline's total
CPU time, --horizon), and the incumbent's true mean runtime against CPU time
(sampled at log-spaced checkpoints). Raw results go to a JSON-lines file;
spc_report.py makes the tables and the plot.

    /usr/bin/python3 tests/bench/spc_replay.py --banditd build/banditd \\
        --scenarios sat11-indu,sat18-exp,sat20-main --seeds 0-19 --out tests/bench/results/spc_runs.jsonl
"""

import argparse
import csv
import gzip
import json
import math
import os
import random
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bobos_replay import Daemon, parse_range  # noqa: E402
from replay_common import Client  # noqa: E402

DATA = os.path.join(HERE, "..", "..", "..", "shared", "data", "runtimes")
OWN_DATA = os.path.join(HERE, "runtimes")  # matrices measured for this project (runtimes/README.md)
POINTS = 600  # log-spaced checkpoints from 1e-6 of the horizon: 2.3% apart


# banditd's configurators run in-process: method -> (scheduler, options). kappa0
# is set per matrix (kappa0_for); shuffle_instances is off because the instances
# are declared in the seed's order.
SCHEDULER_METHODS = {
    "spc": ("spc", {"lcb": "current", "stream": "finite"}),  # new studies' defaults
    "spc_cycle": ("spc", {"lcb": "current", "stream": "cycle"}),  # the paper's stream (the old default)
    "spc_last_step": ("spc", {"lcb": "last_step", "stream": "cycle"}),
    "spc_once": ("spc", {"lcb": "current", "stream": "once"}),
    # the successor (server/sched/caps_race.c) with new studies' defaults
    # (caps_race_new_study_defaults; a stored study without them runs cap_factor 1, no defer, no skip,
    # every doubling level, the instance-by-instance order at kappa, level_wait "leader", compare
    # "recount" and incumbent "leader")
    "caps_race": ("caps_race", {"cap_factor": 2, "defer": 1.3, "skip_levels": 0.5, "last_level": 0.0625,
                                "race_order": "ranked", "level_wait": "all", "compare": "incremental",
                                "incumbent": "upper"}),
    # the same before incumbent "upper": the anytime answer below kappa is the leader (best capped mean)
    "caps_race_leader": ("caps_race", {"cap_factor": 2, "defer": 1.3, "skip_levels": 0.5, "last_level": 0.0625,
                                       "race_order": "ranked", "level_wait": "all", "compare": "incremental",
                                       "incumbent": "leader"}),
    # and before compare "incremental": every re-run of the leader's lower bounds recounts every
    # compared sum (same runs up to rounding; O(configs x instances) per re-run)
    "caps_race_recount": ("caps_race", {"cap_factor": 2, "defer": 1.3, "skip_levels": 0.5, "last_level": 0.0625,
                                        "race_order": "ranked", "level_wait": "all", "compare": "recount",
                                        "incumbent": "leader"}),
}


def kappa0_for(m):
    """The first cap: 1 s for ASlib's 5000 s cutoffs (as before), cutoff / 64
    for matrices measured with short caps (6 doublings up to the cutoff)."""
    return min(1.0, m.cutoff / 64)


class Matrix:
    """One scenario: runtime[solver][instance] (inf: never solved within the cutoff)."""

    def __init__(self, name, data_dirs):
        data_dir = next((d for d in data_dirs if os.path.exists(os.path.join(d, name + ".json"))), None)
        if data_dir is None:
            sys.exit("spc_replay: no matrix %s.json in %s" % (name, ", ".join(data_dirs)))
        with open(os.path.join(data_dir, name + ".json")) as f:
            meta = json.load(f)
        self.name, self.cutoff = name, float(meta["cutoff_seconds"])
        rt = {}
        path = os.path.join(data_dir, name + ".csv")
        opener = (lambda: open(path)) if os.path.exists(path) else (lambda: gzip.open(path + ".gz", "rt"))
        with opener() as f:
            for row in csv.DictReader(f):
                v = float(row["runtime"]) if row["status"] == "ok" else math.inf
                rt.setdefault(row["solver"], {})[row["instance"]] = v if v <= self.cutoff else math.inf
        if not rt:
            sys.exit("spc_replay: the matrix %s has no runs" % name)
        self.solvers = sorted(rt)
        self.instances = sorted(rt[self.solvers[0]])
        self.rt = [[rt[s][i] for i in self.instances] for s in self.solvers]
        self.mean = [sum(min(v, self.cutoff) for v in row) / len(row) for row in self.rt]
        self.best = min(range(len(self.solvers)), key=lambda c: self.mean[c])
        self.naive_total = sum(sum(min(v, self.cutoff) for v in row) for row in self.rt)

    def top(self, share=0.01):
        """The configs in the top share by mean runtime (at least one)."""
        k = max(1, math.ceil(share * len(self.mean)))
        return set(sorted(range(len(self.mean)), key=lambda c: self.mean[c])[:k])

    def order(self, seed):
        idx = list(range(len(self.instances)))
        random.Random(seed).shuffle(idx)
        return idx


class Trace:
    """The incumbent against CPU time, sampled at log-spaced checkpoints."""

    def __init__(self, m, horizon, points=None):
        points = points or POINTS
        self.m, self.horizon = m, horizon
        lo = max(1.0, horizon * 1e-6)
        self.checkpoints = [lo * (horizon / lo) ** (k / (points - 1)) for k in range(points)]
        self.next = 0
        self.samples = []  # (cpu, incumbent config index or None)

    def due(self, cpu):
        return self.next < len(self.checkpoints) and cpu >= self.checkpoints[self.next]

    def add(self, cpu, incumbent):
        while self.next < len(self.checkpoints) and cpu >= self.checkpoints[self.next]:
            self.next += 1
        self.samples.append((cpu, incumbent))

    def time_to_best(self):
        """The CPU time from which the incumbent is the best config until the end."""
        return self.time_to_set({self.m.best})

    def time_to_set(self, configs):
        """The CPU time from which the incumbent is in configs until the end."""
        t = None
        for cpu, inc in self.samples:
            if inc in configs:
                if t is None:
                    t = cpu
            else:
                t = None
        return t

    def time_to_within(self, eps):
        """The CPU time from which the incumbent's mean runtime stays within
        (1 + eps) of the best (the paper's epsilon-optimality)."""
        t = None
        for cpu, inc in self.samples:
            if inc is not None and self.m.mean[inc] <= (1 + eps) * self.m.mean[self.m.best]:
                if t is None:
                    t = cpu
            else:
                t = None
        return t

    def result(self):
        return {"time_to_best": self.time_to_best(), "time_to_top1pct": self.time_to_set(self.m.top(0.01)),
                "time_to_5pct": self.time_to_within(0.05),
                "time_to_10pct": self.time_to_within(0.10),
                "trace": [(round(c, 3), None if i is None else self.m.mean[i]) for c, i in self.samples]}


# ---------------------------------------------------------------- spc (daemon)

def full_options(m, scheduler, options):
    """The instances come in the seed's order; spc's first cap is the matrix's
    (kappa0_for); caps_race keeps its own defaults (first cap cutoff / 64)."""
    extra = {"kappa0": kappa0_for(m)} if scheduler == "spc" else {}
    return dict(options, shuffle_instances=False, **extra)


def run_daemon(client, m, seed, horizon, scheduler, options):
    order = m.order(seed)
    study = client.call("POST", "/v1/studies", {
        "name": "%s-%s-%s-%d" % (scheduler, m.name, json.dumps(options, sort_keys=True), seed),  # unique per run
        "parameters": [{"name": "solver", "type": "categorical", "choices": m.solvers}],
        "objective": {"metric": "runtime", "goal": "minimize"},
        "resource": {"name": "cpu_seconds", "min": 0.001, "max": m.cutoff},
        "instances": [m.instances[i] for i in order],
        "scheduler": {"name": scheduler, "options": full_options(m, scheduler, options)},
        "seed": seed})
    sid, cpu, runs = study["id"], 0.0, 0
    solver_index = {s: k for k, s in enumerate(m.solvers)}
    trace = Trace(m, horizon)
    while cpu < horizon:
        ans = client.call("POST", "/v1/studies/%d/suggest" % sid, {"worker": "replay"})
        if not ans["trials"]:
            break
        t = ans["trials"][0]
        c, j, cap = solver_index[t["config"]["solver"]], order[t["instance"]["index"]], t["budget"]
        rt = m.rt[c][j]
        if rt > cap:
            client.call("POST", "/v1/trials/%d/complete" % t["id"], {"status": "timeout"})
            cpu += cap
        else:
            client.call("POST", "/v1/trials/%d/complete" % t["id"], {"value": rt})
            cpu += rt
        runs += 1
        if trace.due(cpu):
            inc = client.call("GET", "/v1/studies/%d" % sid)["incumbent"]
            trace.add(cpu, solver_index[inc["config"]["solver"]] if inc else None)
    client.call("DELETE", "/v1/studies/%d" % sid, ok=(200, 204))
    out = trace.result()
    out.update(runs=runs, cpu=cpu)
    return out


def run_inprocess(binary, m, seed, horizon, scheduler, options, points=POINTS, runlog=None, final=None):
    """The same scheduler code driven in-process by bd_spc_replay (fast).
    runlog: a path where bd_spc_replay writes every run (spc_diagnose.py);
    final: a path for the scheduler's describe() at the end (needs runlog)."""
    order = m.order(seed)
    lines = ["%d %d %r %r %d %d %s" % (len(m.solvers), len(m.instances), m.cutoff, horizon, points, seed, scheduler),
             json.dumps(full_options(m, scheduler, options))]
    lines += m.solvers
    for c in range(len(m.solvers)):
        lines.append(" ".join("-1" if math.isinf(m.rt[c][j]) else repr(m.rt[c][j]) for j in order))
    args = [binary] + ([runlog] if runlog else []) + ([final] if runlog and final else [])
    out = subprocess.run(args, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    r = json.loads(out.stdout)
    trace = Trace(m, horizon, points)
    index = {s: k for k, s in enumerate(m.solvers)}
    trace.samples = [(cpu, None if s is None else index[s]) for cpu, s in r["trace"]]
    res = trace.result()
    res.update(runs=r["runs"], cpu=r["cpu"], decision_us=r["decision_us"], decision_cpu_us=r["decision_cpu_us"])
    return res


# ------------------------------------------------------- uniform (simulated)

def queue_bound(t, r):
    return 25 if r <= 1 or t <= 1 else math.ceil(25 * math.log2(t * math.log2(r)))


def run_uniform(m, seed, horizon):
    """SPC's testers with spc's finite-instance rules (each instance once per
    tester, timeouts queued at twice the cap, the queue taken once every
    instance is seen), taken round robin instead of by LCB. Incumbent: spc's
    finite-stream rule (among the testers with at least half the most active
    one's instances, the smallest mean with pending timeouts at the cutoff)."""
    n, cutoff, order = len(m.instances), m.cutoff, m.order(seed)
    testers = [{"theta": kappa0_for(m), "r": 0, "q": 1, "queue": [], "head": 0, "sum": 0.0, "pending": {}}
               for _ in m.solvers]
    trace, cpu, t, runs, turn, idle = Trace(m, horizon), 0.0, 0, 0, 0, 0
    while cpu < horizon and idle < len(testers):
        c, x = turn, testers[turn]
        turn = (turn + 1) % len(testers)
        queued = len(x["queue"]) - x["head"]
        if (queued < x["q"] or not queued) and x["r"] < n:
            pos, cap = x["r"], x["theta"]
            x["r"] += 1
        elif queued:
            pos, cap = x["queue"][x["head"]]
            x["head"] += 1
            x["theta"] = cap
        else:
            idle += 1  # this tester is done; the run ends when all are
            continue
        idle = 0
        rt = m.rt[c][order[pos]]
        x["sum"] -= x["pending"].pop(pos, 0.0)
        if rt > cap:
            cpu += cap
            if cap < cutoff:
                x["queue"].append((pos, min(2 * cap, cutoff)))
                x["pending"][pos] = cap
            x["sum"] += cap
        else:
            cpu += rt
            x["sum"] += rt
        x["q"] = queue_bound(t, x["r"])
        t += 1
        runs += 1
        if trace.due(cpu):
            r_max = max(y["r"] for y in testers)

            def worst_mean(k):
                y = testers[k]
                pend = y["pending"]
                return (y["sum"] - sum(pend.values()) + len(pend) * cutoff) / y["r"]
            best = min((k for k in range(len(testers)) if testers[k]["r"] and 2 * testers[k]["r"] >= r_max),
                       key=lambda k: (worst_mean(k), -testers[k]["r"], k))
            trace.add(cpu, best)
    out = trace.result()
    out.update(runs=runs, cpu=cpu)
    return out


def run_uniform_paper(m, seed, horizon):
    """The paper's testers (cycling instance stream, the queue taken when it
    reaches its bound q) round robin; incumbent: the most active instances,
    ties to the earlier config. What issue 15 called uniform (issue 9's
    code, with spc's first cap kappa0_for(m): 1 s on ASlib as it was)."""
    n, cutoff = len(m.instances), m.cutoff
    passes = [m.order(seed)]

    def instance(pos):
        while pos // n >= len(passes):
            o = list(range(n))
            random.Random("%d/%d" % (seed, len(passes))).shuffle(o)
            passes.append(o)
        return passes[pos // n][pos % n]

    testers = [{"theta": kappa0_for(m), "r": 0, "q": 1, "queue": [], "head": 0} for _ in m.solvers]
    trace, cpu, t, runs, turn = Trace(m, horizon), 0.0, 0, 0, 0
    while cpu < horizon:
        c, x = turn, testers[turn]
        turn = (turn + 1) % len(testers)
        if len(x["queue"]) - x["head"] < x["q"]:
            pos, cap = x["r"], x["theta"]
            x["r"] += 1
        else:
            pos, cap = x["queue"][x["head"]]
            x["head"] += 1
            x["theta"] = cap
        rt = m.rt[c][instance(pos)]
        if rt > cap:
            cpu += cap
            if cap < cutoff:
                x["queue"].append((pos, min(2 * cap, cutoff)))
        else:
            cpu += rt
        x["q"] = queue_bound(t, x["r"])
        t += 1
        runs += 1
        if trace.due(cpu):
            trace.add(cpu, max(range(len(testers)), key=lambda k: (testers[k]["r"], -k)))
    out = trace.result()
    out.update(runs=runs, cpu=cpu)
    return out


# ------------------------------------------------------- hyperband (daemon)

def run_hyperband(client, m, seed, horizon, eta=3):
    order, n = m.order(seed), len(m.instances)
    r_min = max(1, math.ceil(n / eta ** 4))
    study = client.call("POST", "/v1/studies", {
        "name": "hb-%s-%d" % (m.name, seed),
        "parameters": [{"name": "solver", "type": "categorical", "choices": m.solvers}],
        "objective": {"metric": "mean_runtime", "goal": "minimize"},
        "resource": {"name": "instances", "min": r_min, "max": n, "integer": True},
        "scheduler": {"name": "hyperband", "options": {"eta": eta}},
        "seed": seed})
    sid, cpu, runs = study["id"], 0.0, 0
    solver_index = {s: k for k, s in enumerate(m.solvers)}
    done = {}  # config -> instances already run (a prefix of the order)
    best_at = {}  # budget -> (loss, config)
    trace = Trace(m, horizon)
    while cpu < horizon:
        ans = client.call("POST", "/v1/studies/%d/suggest" % sid, {"worker": "replay"})
        if not ans["trials"]:
            if ans.get("done"):
                break
            continue
        t = ans["trials"][0]
        c, b = solver_index[t["config"]["solver"]], int(t["budget"])
        have = done.get(c, 0)
        cpu += sum(min(m.rt[c][order[p]], m.cutoff) for p in range(have, b))
        done[c] = max(have, b)
        loss = sum(min(m.rt[c][order[p]], m.cutoff) for p in range(b)) / b
        client.call("POST", "/v1/trials/%d/complete" % t["id"], {"value": loss})
        runs += 1
        if b not in best_at or loss < best_at[b][0]:
            best_at[b] = (loss, c)
        if trace.due(cpu):
            trace.add(cpu, best_at[max(best_at)][1])
    client.call("DELETE", "/v1/studies/%d" % sid, ok=(200, 204))
    out = trace.result()
    out.update(runs=runs, cpu=cpu)
    return out


# ------------------------------------------------------------------ naive

def run_naive(m, seed, horizon):
    configs = list(range(len(m.solvers)))
    random.Random(seed).shuffle(configs)
    trace, cpu, best = Trace(m, horizon), 0.0, None
    for c in configs:
        cpu += sum(min(v, m.cutoff) for v in m.rt[c])
        if best is None or m.mean[c] < m.mean[best]:
            best = c
        trace.add(cpu, best)
        if cpu >= horizon:
            break
    out = trace.result()
    out.update(runs=len(m.instances) * len(m.solvers), cpu=cpu)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--banditd", required=True)
    ap.add_argument("--replayer", help="bd_spc_replay: run spc in-process (default: beside --banditd, "
                    "in tests/bench)")
    ap.add_argument("--daemon-seeds", default="0-1", help="seeds whose spc runs also go through the daemon "
                    "over HTTP, checked to give the same incumbent trace as in-process")
    ap.add_argument("--data", default=DATA + "," + OWN_DATA, help="directories searched for the matrices")
    ap.add_argument("--scenarios", default="sat11-indu,sat18-exp,sat20-main")
    ap.add_argument("--methods", default="spc,spc_cycle,uniform,hyperband,naive")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--check-fraction", type=float, default=0.01,
                    help="the daemon check's horizon, a fraction of the run's")
    ap.add_argument("--horizon", type=float, default=1.0, help="fraction of the naive total CPU time")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    replayer = args.replayer or os.path.join(os.path.dirname(os.path.abspath(args.banditd)), "tests", "bench",
                                             "bd_spc_replay")
    daemon_seeds = set(parse_range(args.daemon_seeds))
    daemon = Daemon(args.banditd)
    client = Client(daemon.url, daemon.token, timeout=120)
    try:
        with open(args.out, "a") as out:
            for name in args.scenarios.split(","):
                m = Matrix(name, args.data.split(","))
                horizon = args.horizon * m.naive_total
                for seed in parse_range(args.seeds):
                    for method in args.methods.split(","):
                        started = time.time()
                        if method in SCHEDULER_METHODS:
                            scheduler, options = SCHEDULER_METHODS[method]
                            r = run_inprocess(replayer, m, seed, horizon, scheduler, options)
                            if seed in daemon_seeds:  # over HTTP on a short horizon: the same decisions?
                                short = horizon * args.check_fraction
                                via = run_daemon(client, m, seed, short, scheduler, options)
                                ref = run_inprocess(replayer, m, seed, short, scheduler, options)
                                same = via["trace"] == ref["trace"] and via["runs"] == ref["runs"]
                                r["daemon_check"] = "same" if same else "DIFFERENT"
                                if not same:
                                    print("WARNING: daemon and in-process traces differ for %s seed %d" % (
                                        method, seed), flush=True)
                        elif method == "uniform":
                            r = run_uniform(m, seed, horizon)
                        elif method == "uniform_paper":
                            r = run_uniform_paper(m, seed, horizon)
                        elif method == "hyperband":
                            r = run_hyperband(client, m, seed, horizon)
                        elif method == "naive":
                            r = run_naive(m, seed, horizon)
                        else:
                            sys.exit("unknown method %s" % method)
                        r.update(scenario=name, method=method, seed=seed, naive_total=m.naive_total,
                                 horizon=horizon, best=m.solvers[m.best], best_mean=m.mean[m.best],
                                 wall=round(time.time() - started, 2))
                        out.write(json.dumps(r) + "\n")
                        out.flush()
                        ttb = r["time_to_best"]
                        print("%s %-13s seed %2d: %6d runs, best from %s (%.4f of naive), %.1fs wall" % (
                            name, method, seed, r["runs"], "%.0f s" % ttb if ttb is not None else "never",
                            ttb / m.naive_total if ttb is not None else float("nan"), r["wall"]), flush=True)
    finally:
        daemon.stop()


if __name__ == "__main__":
    main()
