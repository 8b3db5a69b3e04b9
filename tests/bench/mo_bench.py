#!/usr/bin/python3
"""mo_bench: several objectives and constraints (issue 41, its Benchmarks section): banditd's
schedulers (random, nsga2, tpe with several objectives, and the study that names none: auto),
driven over HTTP, against Optuna 3.1's NSGAIISampler, TPESampler (several objectives;
constraints_func on a constrained table) and RandomSampler, on the real multi-objective
tables of tests/bench/mo/, on one simulated clock. README-mo.md has the setting and results.

A table row is a config and its recorded metrics; a proposed config is answered by the row
nearest to it in the unit cube of the table's parameters (log-scaled where the table says).
W virtual workers; a trial costs its row's train_seconds of simulated time, and its metrics
are reported when that time has passed (banditd: complete with "values"; Optuna: tell with
the objectives, the constraint given to constraints_func through a user attribute set
before tell). Events are processed in simulated-time order, so every method sees the other
workers' results exactly when they would have arrived. The horizon is per table at W = 1;
W workers get horizon / W (the same compute). Time a sampler spends deciding is not
charged, on either side.

Recorded per run: the hypervolume of the feasible non-dominated set of the completed trials
against the table's fixed reference point, at every completion that changes it ([t, hv]);
trials, infeasible trials; at the end, the front the method recommends (banditd:
GET /v1/studies/{id} "pareto_front"; Optuna: study.best_trials) and how many of its trials
are infeasible by the table; for banditd also the daemon's own "hypervolume" (checked
against this script's, the same reference point given in the definition). JSON lines.

    /usr/bin/python3 tests/bench/mo_bench.py --banditd build/banditd --tables sgd_fmnist_cost \\
        --methods bd_nsga2,optuna_nsga2 --seeds 0-19 --workers 1,4 --out runs.jsonl
    /usr/bin/python3 tests/bench/mo_bench.py --tables all --check     # the tables: fronts, HV, cut shares
    /usr/bin/python3 tests/bench/mo_bench.py --report runs.jsonl --md out.md
"""

import argparse
import bisect
import csv
import gzip
import heapq
import json
import math
import os
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import md_table  # noqa: E402
from replay_common import Client  # noqa: E402

MO_DIR = os.path.join(HERE, "mo")

# name -> file, parameters [(name, type, low, high, column, to_parameter, log)], objectives
# (metrics, all minimized), constraints [(metric, max)], horizon in simulated seconds at W = 1.
# The horizon is about 60 trainings of an average row (mean train_seconds: sgd 2.44 s,
# digits 1.23 s, NAS-Bench-NLP 22,100 s over the 148 rows kept).
TABLES = {
    "sgd_fmnist_cost": {
        "file": "sgd_fmnist_cost.csv.gz",
        "params": [("batch_size", "int", 16, 512, "batch_size", float, True),
                   ("alpha", "float", 1e-6, 1e-1, "alpha", float, True),
                   ("eta0", "float", 1e-4, 1.0, "eta0", float, True)],
        "objectives": ["val_error", "train_seconds"],
        "constraints": [],
        "horizon": 150.0,
        # the learning curves behind the table (per epoch err_e, cumulative sec_e; row i is config i)
        "curves": "sgd_fashion_mnist.csv.gz",
    },
    "mlp_digits_size": {
        "file": "mlp_digits_size.csv.gz",
        "params": [("hidden", "int", 16, 256, "hidden", float, True),
                   ("learning_rate_init", "float", 1e-4, 10 ** -0.5, "learning_rate_init", float, True),
                   ("alpha", "float", 1e-6, 1e-1, "alpha", float, True),
                   ("batch_size", "int", 16, 256, "batch_size", float, True),
                   ("one_minus_beta1", "float", 0.01, 0.5, "beta_1", lambda s: 1.0 - float(s), True)],
        "objectives": ["val_error", "train_seconds"],
        # a model that fits 5,000 weights (hidden <= 66): cuts 248 of the 512 configs (48%),
        # and 48% of uniform proposals
        "constraints": [("n_params", 5000.0)],
        "horizon": 75.0,
        "curves": "mlp_digits.csv.gz",
    },
    "nlp_wikitext2_size": {
        "file": "nlp_wikitext2_size.csv.gz",
        "params": [("n_linear", "int", 1, 7, "n_linear", float, False),
                   ("n_sigm", "int", 0, 4, "n_sigm", float, False),
                   ("n_tanh", "int", 0, 4, "n_tanh", float, False),
                   ("n_leaky_relu", "int", 0, 4, "n_leaky_relu", float, False),
                   ("n_sum", "int", 0, 3, "n_sum", float, False),
                   ("n_prod", "int", 0, 3, "n_prod", float, False),
                   ("n_blend", "int", 0, 3, "n_blend", float, False)],
        "objectives": ["val_loss", "train_seconds"],
        # at most 21 million parameters: cuts 55 of the 148 rows (37%), and 57% of uniform
        # proposals (the cells with many linear layers are the large ones, and the most
        # frequent count vectors of a uniform draw)
        "constraints": [("n_params", 21e6)],
        "horizon": 1.33e6,
    },
}
TARGET_SHARE = 0.95  # of the table's true front's hypervolume


# ---------------------------------------------------------------- hypervolume


def dominates(a, b):
    """a dominates b (minimized): no worse in every objective, better in one."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def front_of(points):
    """The non-dominated points of a list (duplicates kept once), in input order."""
    out = []
    for i, p in enumerate(points):
        if any(dominates(q, p) for q in points):
            continue
        if any(tuple(q) == tuple(p) for q in points[:i]):
            continue
        out.append(p)
    return out


def hypervolume(points, ref):
    """The volume the points dominate below ref (server/model/pareto.h's semantics: a point
    counts only where it is below ref in every objective). Exact for 2 objectives (a sweep);
    for more, slicing on the last objective (exponential, fine for the small fronts here)."""
    pts = [tuple(p) for p in points if all(x < r for x, r in zip(p, ref))]
    if not pts:
        return 0.0
    m = len(ref)
    if m == 1:
        return ref[0] - min(p[0] for p in pts)
    if m == 2:
        pts.sort()
        hv, y_best = 0.0, ref[1]
        for x, y in pts:
            if y < y_best:
                hv += (ref[0] - x) * (y_best - y)
                y_best = y
        return hv
    pts.sort(key=lambda p: p[-1])
    hv = 0.0
    for i, p in enumerate(pts):
        top = pts[i + 1][-1] if i + 1 < len(pts) else ref[-1]
        if top > p[-1]:
            hv += hypervolume([q[:-1] for q in pts[:i + 1]], ref[:-1]) * (top - p[-1])
    return hv


def botorch_reference(front):
    """BoTorch's infer_reference_point (as bd_pareto_reference): the front's nadir moved away
    from its ideal point by 10% of the range (10% of |nadir|, or 1 when 0, where the range is 0)."""
    ref = []
    for j in range(len(front[0])):
        hi = max(p[j] for p in front)
        span = hi - min(p[j] for p in front)
        ref.append(hi + 0.1 * (span if span > 0 else (abs(hi) if hi != 0 else 1.0)))
    return ref


class Front:
    """The feasible non-dominated set of the trials completed so far, and its hypervolume."""

    def __init__(self, ref):
        self.ref = ref
        self.points = []
        self.hv = 0.0

    def add(self, p):
        """Adds a feasible point; returns True when the hypervolume changed."""
        p = tuple(p)
        if any(q == p or dominates(q, p) for q in self.points):
            return False
        self.points = [q for q in self.points if not dominates(p, q)] + [p]
        hv = hypervolume(self.points, self.ref)
        changed = hv != self.hv
        self.hv = hv
        return changed


# ---------------------------------------------------------------------- tables


class MoTable:
    def __init__(self, name):
        spec = TABLES[name]
        self.name = name
        self.params = spec["params"]
        self.objectives = spec["objectives"]
        self.constraints = spec["constraints"]
        self.horizon = spec["horizon"]
        with gzip.open(os.path.join(MO_DIR, spec["file"]), "rt") as f:
            rows = list(csv.DictReader(f))
        self.n = len(rows)
        self.obj = [[float(r[m]) for m in self.objectives] for r in rows]
        self.cons = [[float(r[c]) for c, _ in self.constraints] for r in rows]
        self.cost = [float(r["train_seconds"]) for r in rows]
        self.units = [self.unit({p[0]: p[5](r[p[4]]) for p in self.params}) for r in rows]
        self.feasible = [self.is_feasible(c) for c in self.cons]
        feas = [self.obj[i] for i in range(self.n) if self.feasible[i]]
        self.true_front = front_of(feas)
        self.ref = botorch_reference(self.true_front)
        self.true_hv = hypervolume(self.true_front, self.ref)
        self.mean_cost = sum(self.cost) / self.n
        self.curves = spec.get("curves")
        if self.curves:
            with gzip.open(os.path.join(HERE, "curves", self.curves), "rt") as f:
                crows = list(csv.DictReader(f))
            self.epochs = max(int(k[4:]) for k in crows[0] if k.startswith("err_"))
            self.err = [[float(r["err_%d" % e]) for e in range(1, self.epochs + 1)] for r in crows]
            self.sec = [[float(r["sec_%d" % e]) for e in range(1, self.epochs + 1)] for r in crows]
            assert len(crows) == self.n and all(self.err[i][-1] == self.obj[i][0] for i in range(self.n))

    def is_feasible(self, cons_values):
        return all(v <= mx for v, (_, mx) in zip(cons_values, self.constraints))

    def space(self):
        return [{"name": p[0], "type": p[1], "low": p[2], "high": p[3], "log": p[6]} for p in self.params]

    def unit(self, config):
        out = []
        for n, _, lo, hi, _, _, log in self.params:
            v = min(max(float(config[n]), lo), hi)
            out.append((math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo)) if log else (v - lo) / (hi - lo))
        return out

    def nearest(self, config):
        u = self.unit(config)
        best, best_d = 0, math.inf
        for i, r in enumerate(self.units):
            d = sum((a - b) ** 2 for a, b in zip(u, r))
            if d < best_d:
                best, best_d = i, d
        return best

    def values(self, row):
        """The reported metrics of a row: objectives then constraint metrics, by name."""
        out = dict(zip(self.objectives, self.obj[row]))
        out.update({c: v for (c, _), v in zip(self.constraints, self.cons[row])})
        return out

    def values_at(self, row, epoch):
        """The metrics a worker reports after `epoch` epochs of a row's training (its learning curve):
        val_error at that epoch, the seconds trained so far, and the constraint metrics (fixed per
        config). At the last epoch these are values(row)."""
        out = {self.objectives[0]: self.err[row][epoch - 1], self.objectives[1]: self.sec[row][epoch - 1]}
        out.update({c: v for (c, _), v in zip(self.constraints, self.cons[row])})
        return out

    def reachable(self):
        """Rows a proposal can land on (each its own nearest row)."""
        return sum(1 for i in range(self.n) if self.nearest(self.config_of(i)) == i)

    def random_config(self, rng):
        """A config drawn uniformly in the space (log-uniformly on log scales)."""
        out = {}
        for n, typ, lo, hi, _, _, log in self.params:
            v = math.exp(rng.uniform(math.log(lo), math.log(hi))) if log else rng.uniform(lo, hi)
            out[n] = int(round(v)) if typ == "int" else v
        return out

    def config_of(self, row):
        out = {}
        for j, (n, typ, lo, hi, _, _, log) in enumerate(self.params):
            u = self.units[row][j]
            v = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))) if log else lo + u * (hi - lo)
            out[n] = v
        return out


# --------------------------------------------------------------------- drivers


class BanditdDriver:
    METHODS = {"bd_random": "random", "bd_nsga2": "nsga2", "bd_tpe": "tpe", "bd_auto": None,
               "bd_gp_ucb": "gp_ucb"}  # gp_ucb: ParEGO + P(feasible); O(n^3) a suggestion, the short horizon only
    # multi-objective ASHA (promotion type) on a table's learning curves, budgets 1..epochs: its sampler
    MF = {"bd_asha_random": "random", "bd_asha_tpe": "tpe"}
    METHODS.update({m: "asha" for m in MF})

    def __init__(self, client, table, method, seed):
        self.c, self.table = client, table
        objs = [{"metric": m, "goal": "minimize", "reference": r} for m, r in zip(table.objectives, table.ref)]
        body = {
            "name": "mo-%s-%s-%d-%d" % (table.name, method, seed, int(time.time() * 1e6)),
            "parameters": table.space(),
            "objectives": objs,
            "seed": seed,
            "lease_seconds": 86400,
        }
        if table.constraints:
            body["constraints"] = [{"metric": c, "max": mx} for c, mx in table.constraints]
        sched = self.METHODS[method]
        if sched is not None:
            body["scheduler"] = {"name": sched}
        if method in self.MF:
            body["resource"] = {"name": "epochs", "min": 1, "max": table.epochs, "integer": True}
            body["scheduler"]["options"] = {"sampler": self.MF[method]}
        ans = self.c.call("POST", "/v1/studies", body)
        self.sid = ans["id"]
        self.scheduler = ans.get("scheduler")

    def ask(self, w):
        ans = self.c.call("POST", "/v1/studies/%d/suggest" % self.sid, {"worker": "w%d" % w, "count": 1})
        if not ans["trials"]:
            return None
        tr = ans["trials"][0]
        return self.table.nearest(tr["config"]), tr["id"]

    def tell(self, handle, row, cost):
        self.c.call("POST", "/v1/trials/%d/complete" % handle,
                    {"values": self.table.values(row), "elapsed_seconds": cost})

    def ask_mf(self, w):
        """(row, trial id, budget in epochs, resume_from or None), or None."""
        ans = self.c.call("POST", "/v1/studies/%d/suggest" % self.sid, {"worker": "w%d" % w, "count": 1})
        if not ans["trials"]:
            return None
        tr = ans["trials"][0]
        return self.table.nearest(tr["config"]), tr["id"], int(round(tr["budget"])), tr.get("resume_from")

    def tell_mf(self, handle, row, epoch, cost):
        self.c.call("POST", "/v1/trials/%d/complete" % handle,
                    {"values": self.table.values_at(row, epoch), "elapsed_seconds": cost})

    def recommended(self):
        """(the front's rows by the table, the daemon's hypervolume, its reference point)."""
        st = self.c.call("GET", "/v1/studies/%d" % self.sid)
        rows = [self.table.nearest(p["config"]) for p in st.get("pareto_front") or []]
        return rows, st.get("hypervolume"), st.get("reference_point")


class OptunaDriver:
    METHODS = ("optuna_nsga2", "optuna_tpe", "optuna_random")

    def __init__(self, table, method, seed):
        import optuna
        import warnings
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.table = table
        cf = None
        if table.constraints:
            def cf(trial):
                return trial.user_attrs["constraint"]
        if method == "optuna_nsga2":
            sampler = optuna.samplers.NSGAIISampler(seed=seed, constraints_func=cf)
        elif method == "optuna_tpe":
            sampler = optuna.samplers.TPESampler(seed=seed, constraints_func=cf)
        else:
            sampler = optuna.samplers.RandomSampler(seed=seed)
        self.study = optuna.create_study(directions=["minimize"] * len(table.objectives), sampler=sampler,
                                         study_name="mo-%s-%s-%d" % (table.name, method, seed))
        self.trials = {}

    def ask(self, w):
        trial = self.study.ask()
        config = {}
        for n, typ, lo, hi, _, _, log in self.table.params:
            if typ == "int":
                config[n] = trial.suggest_int(n, lo, hi, log=log)
            else:
                config[n] = trial.suggest_float(n, lo, hi, log=log)
        row = self.table.nearest(config)
        self.trials[trial.number] = trial
        return row, trial.number

    def tell(self, handle, row, cost):
        trial = self.trials.pop(handle)
        # Optuna's convention: a value <= 0 is satisfied
        trial.set_user_attr("constraint", [v - mx for v, (_, mx) in zip(self.table.cons[row], self.table.constraints)])
        self.study.tell(trial, self.table.obj[row])

    def recommended(self):
        rows = [self.table.nearest(t.params) for t in self.study.best_trials]
        return rows, None, None


# ------------------------------------------------------------------ simulation


def simulate(driver, table, workers, horizon):
    """Runs W virtual workers to the horizon; returns the run's record."""
    front = Front(table.ref)
    points = []
    heap, seq = [], 0
    idle = list(range(workers))
    trials = completed = infeasible = idle_answers = 0
    rows_seen = set()
    t = 0.0
    while True:
        still = []
        for w in idle:
            got = driver.ask(w)
            if got is None:
                idle_answers += 1
                still.append(w)
                continue
            row, handle = got
            trials += 1
            heapq.heappush(heap, (t + table.cost[row], seq, w, row, handle))
            seq += 1
        idle = still
        if not heap:
            break
        t, _, w, row, handle = heapq.heappop(heap)
        if t > horizon:
            break
        driver.tell(handle, row, table.cost[row])
        completed += 1
        rows_seen.add(row)
        if table.feasible[row]:
            if front.add(table.obj[row]):
                points.append([t, front.hv])
        else:
            infeasible += 1
        idle.append(w)
    return {"points": points, "final_hv": front.hv, "trials": trials, "completed": completed, "infeasible": infeasible, "distinct_rows": len(rows_seen),
            "idle_answers": idle_answers}


def simulate_mf(driver, table, workers, horizon):
    """simulate() for a multi-fidelity method (asha, promotion type) on a table's learning curves:
    a trial with budget b resuming from trial r (which reached epoch e0) costs the recorded
    seconds of epochs e0+1..b of its row, and reports the curve's values at epoch b. The
    hypervolume counts the feasible trials completed at the full budget, as the daemon's
    pareto_front does; "full" counts those trials, "infeasible" the infeasible among them."""
    front = Front(table.ref)
    points = []
    heap, seq = [], 0
    idle = list(range(workers))
    trials = completed = infeasible = idle_answers = full = 0
    rows_seen = set()
    reached = {}
    t = 0.0
    while True:
        still = []
        for w in idle:
            got = driver.ask_mf(w)
            if got is None:
                idle_answers += 1
                still.append(w)
                continue
            row, handle, budget, resume = got
            e0 = reached.get(resume, 0) if resume else 0
            cost = table.sec[row][budget - 1] - (table.sec[row][e0 - 1] if e0 else 0.0)
            trials += 1
            heapq.heappush(heap, (t + cost, seq, w, row, handle, budget, cost))
            seq += 1
        idle = still
        if not heap:
            break
        t, _, w, row, handle, budget, cost = heapq.heappop(heap)
        if t > horizon:
            break
        driver.tell_mf(handle, row, budget, cost)
        reached[handle] = budget
        completed += 1
        if budget == table.epochs:
            full += 1
            rows_seen.add(row)
            if table.feasible[row]:
                if front.add(table.obj[row]):
                    points.append([t, front.hv])
            else:
                infeasible += 1
        idle.append(w)
    return {"points": points, "final_hv": front.hv, "trials": trials, "completed": completed, "full": full,
            "infeasible": infeasible, "distinct_rows": len(rows_seen), "idle_answers": idle_answers}


# ------------------------------------------------------------------------ runs


def parse_range(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def run(args):
    from bobos_replay import Daemon
    methods = [m for m in args.methods.split(",") if m]
    unknown = [m for m in methods if m not in BanditdDriver.METHODS and m not in OptunaDriver.METHODS]
    if unknown:
        raise SystemExit("unknown methods: %s" % unknown)
    daemon = client = None
    if any(m in BanditdDriver.METHODS for m in methods):
        if not args.banditd:
            raise SystemExit("--banditd is needed for the bd_ methods")
        daemon = Daemon(args.banditd)
        client = Client(daemon.url, daemon.token, timeout=120)
    tables = list(TABLES) if args.tables == "all" else args.tables.split(",")
    try:
        with open(args.out, "a") as out:
            for name in tables:
                table = MoTable(name)
                for w in parse_range(args.workers):
                    horizon = (args.horizon or table.horizon) * args.horizon_scale / w
                    for method in methods:
                        for seed in parse_range(args.seeds):
                            wall = time.monotonic()
                            if method in BanditdDriver.METHODS:
                                driver = BanditdDriver(client, table, method, seed)
                            else:
                                driver = OptunaDriver(table, method, seed)
                            if method in BanditdDriver.MF:
                                if not table.curves:
                                    raise SystemExit("%s needs a table with learning curves" % method)
                                rec = simulate_mf(driver, table, w, horizon)
                            else:
                                rec = simulate(driver, table, w, horizon)
                            front_rows, daemon_hv, daemon_ref = driver.recommended()
                            line = {"table": name, "method": method, "seed": seed, "workers": w, "horizon": horizon,
                                    "horizon_scale": args.horizon_scale,
                                    "ref": table.ref, "true_hv": table.true_hv,
                                    "front_size": len(front_rows),
                                    "front_infeasible": sum(1 for r in front_rows if not table.feasible[r]),
                                    "daemon_hv": daemon_hv, "daemon_ref": daemon_ref,
                                    "scheduler": getattr(driver, "scheduler", None),
                                    "wall_seconds": round(time.monotonic() - wall, 3)}
                            line.update(rec)
                            if daemon_hv is not None and abs(daemon_hv - rec["final_hv"]) > 1e-9 * max(1.0, table.true_hv):
                                # the daemon's front covers every completed trial, ours those before the horizon
                                line["note"] = "daemon hypervolume %r, replay's %r" % (daemon_hv, rec["final_hv"])
                            out.write(json.dumps(line) + "\n")
                            out.flush()
                            print("%s W=%d %-13s seed %2d: HV %.4f of the true front's, %d trials (%d infeasible), "
                                  "front %d (%d infeasible)%s, %.1f s"
                                  % (name, w, method, seed, rec["final_hv"] / table.true_hv, rec["trials"],
                                     rec["infeasible"], len(front_rows), line["front_infeasible"],
                                     "" if daemon_hv is None else ", daemon HV %.4f" % (daemon_hv / table.true_hv),
                                     line["wall_seconds"]), flush=True)
    finally:
        if client:
            client.close()
        if daemon:
            daemon.stop()


def check(args):
    """Prints each table's true front, reference point, hypervolume and cut share, and
    cross-checks the hypervolume against Optuna's WFG."""
    tables = list(TABLES) if args.tables == "all" else args.tables.split(",")
    for name in tables:
        t = MoTable(name)
        cut = 1 - sum(t.feasible) / t.n
        print("%s: %d rows (%d reachable), objectives %s, constraints %s (cut %.1f%% of the rows)"
              % (name, t.n, t.reachable(), t.objectives, t.constraints, 100 * cut))
        print("  true feasible front (%d points): %s" % (len(t.true_front), sorted(t.true_front)))
        if t.constraints:
            import random
            rng = random.Random(0)
            hits = [t.nearest(t.random_config(rng)) for _ in range(2000)]
            print("  uniform proposals (2,000, seed 0) landing on an infeasible row: %.1f%%"
                  % (100.0 * sum(1 for r in hits if not t.feasible[r]) / len(hits)))
        print("  reference point %s, hypervolume %r, mean train_seconds %.4g, horizon %g (%.0f mean trainings)"
              % (t.ref, t.true_hv, t.mean_cost, t.horizon, t.horizon / t.mean_cost))
        try:
            import numpy as np
            from optuna._hypervolume import WFG
            wfg = WFG().compute(np.array(t.true_front), np.array(t.ref))
            print("  optuna._hypervolume.WFG: %r (relative difference %.2g)" % (wfg, abs(wfg - t.true_hv) / t.true_hv))
            # and this script's slicing path on 3 objectives (the front with error x seconds as a third)
            pts3 = [list(p) + [p[1] * p[0]] for p in t.true_front]
            ref3 = list(t.ref) + [max(p[2] for p in pts3) * 1.1]
            a, b = hypervolume(pts3, ref3), WFG().compute(np.array(pts3), np.array(ref3))
            print("  3 objectives: this script %r, WFG %r" % (a, b))
        except ImportError:
            print("  (no optuna/numpy: WFG cross-check skipped)")


# ---------------------------------------------------------------------- report

LABEL = {"bd_auto": "banditd auto (no scheduler named)", "bd_nsga2": "banditd nsga2", "bd_tpe": "banditd tpe",
         "bd_random": "banditd random", "optuna_nsga2": "Optuna NSGAIISampler", "optuna_tpe": "Optuna TPESampler",
         "optuna_random": "Optuna RandomSampler", "bd_gp_ucb": "banditd gp_ucb (ParEGO)"}
ORDER = ["bd_auto", "bd_nsga2", "bd_tpe", "bd_gp_ucb", "bd_random", "optuna_nsga2", "optuna_tpe", "optuna_random"]
OPTUNA_MO = ("optuna_nsga2", "optuna_tpe")
PAIRS = [("bd_nsga2", "optuna_nsga2"), ("bd_tpe", "optuna_tpe"), ("bd_random", "optuna_random")]


def finals(rs):
    """The runs' final hypervolumes as shares of the true front's."""
    return [r["final_hv"] / r["true_hv"] for r in rs]


def group_key(r):
    return (r.get("horizon_scale", 1.0), r["table"], r["workers"])


def sort_key(k):
    return (k[0], list(TABLES).index(k[1]) if k[1] in TABLES else 99, k[2])


def load_runs(paths):
    runs = []
    for p in paths:
        op = gzip.open if p.endswith(".gz") else open
        with op(p, "rt") as f:
            runs.extend(json.loads(line) for line in f if line.strip())
    return runs


def hv_at(run, t):
    """The run's hypervolume at simulated time t."""
    ts = [p[0] for p in run["points"]]
    i = bisect.bisect_right(ts, t)
    return run["points"][i - 1][1] if i else 0.0


def time_to(run, target):
    for t, hv in run["points"]:
        if hv >= target:
            return t
    return None


def quartiles(xs):
    """Median and quartiles by linear interpolation (numpy's default)."""
    xs = sorted(xs)
    if not xs:
        return None

    def q(p):
        k = (len(xs) - 1) * p
        lo = int(math.floor(k))
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)
    return q(0.25), q(0.5), q(0.75)


def median_time(times, horizon):
    """Median and quartiles of times to a target, a run that missed it counted as never
    (after the horizon): None where the quartile itself was not reached."""
    ts = sorted(t if t is not None else math.inf for t in times)
    qs = quartiles(ts)
    return [None if (q is None or math.isinf(q) or math.isnan(q)) else q for q in qs]


def superiority(xs, ys):
    """P(X > Y) + P(X = Y) / 2 over all pairs (Vargha and Delaney's A12)."""
    if not xs or not ys:
        return float("nan")
    wins = sum((x > y) + 0.5 * (x == y) for x in xs for y in ys)
    return wins / (len(xs) * len(ys))


def median_curve_time(rs, target):
    """The first simulated time at which the median over the runs of the HV reaches target."""
    times = sorted({p[0] for r in rs for p in r["points"]})
    for t in times:
        if quartiles([hv_at(r, t) for r in rs])[1] >= target:
            return t
    return None


def fmt_t(x, horizon):
    if x is None:
        return "—"
    return ("%.0f" % x) if horizon >= 1000 else ("%.1f" % x)


def report(runs):
    groups = {}
    for r in runs:
        groups.setdefault(group_key(r), {}).setdefault(r["method"], []).append(r)
    out = ["# Several objectives on real tables: banditd against Optuna 3.1 (issue 41)", ""]
    out.append("Hypervolume (HV) as a share of the table's true feasible front's HV, at the table's fixed "
               "reference point (BoTorch's rule over that front); median [Q1, Q3] over the seeds. Time in "
               "simulated seconds; '—' where the quartile did not reach the target before the horizon.")
    out.append("")
    verdicts, pairs = [], []
    for (scale, table, w) in sorted(groups, key=sort_key):
        g = groups[(scale, table, w)]
        any_run = next(iter(g.values()))[0]
        H, true_hv = any_run["horizon"], any_run["true_hv"]
        seeds = sorted({r["seed"] for rs in g.values() for r in rs})
        out.append("## %s, W = %d (horizon %s s%s, %d seeds)" % (
            table, w, fmt_t(H, H), "" if scale == 1 else ", %g times the table's" % scale, len(seeds)))
        out.append("")
        out.append("Reference point %s (the objectives %s); the true feasible front's HV %.6g."
                   % ("(" + ", ".join("%.6g" % x for x in any_run["ref"]) + ")",
                      ", ".join(TABLES[table]["objectives"]) if table in TABLES else "?", true_hv))
        out.append("")
        # Optuna's best final HV: the better median of its two multi-objective samplers
        opt_meds = {m: quartiles([r["final_hv"] for r in g[m]])[1] for m in OPTUNA_MO if m in g}
        opt_best = max(opt_meds, key=opt_meds.get) if opt_meds else None
        target_opt = opt_meds[opt_best] if opt_best else None
        rows = []
        times_opt = {}
        for m in [m for m in ORDER if m in g] + sorted(m for m in g if m not in ORDER):
            rs = g[m]
            cells = [LABEL.get(m, m)]
            for frac in (0.25, 0.5, 1.0):
                q1, q2, q3 = quartiles([hv_at(r, frac * H) / true_hv for r in rs])
                cells.append("%.3f [%.3f, %.3f]" % (q2, q1, q3))
            tt = [time_to(r, TARGET_SHARE * true_hv) for r in rs]
            q1, q2, q3 = median_time(tt, H)
            cells.append("%s [%s, %s], %d/%d" % (fmt_t(q2, H), fmt_t(q1, H), fmt_t(q3, H),
                                                 sum(1 for x in tt if x is not None), len(rs)))
            if target_opt is not None:
                to = [time_to(r, target_opt) for r in rs]
                q1, q2, q3 = median_time(to, H)
                times_opt[m] = q2
                cells.append("%s [%s, %s], %d/%d" % (fmt_t(q2, H), fmt_t(q1, H), fmt_t(q3, H),
                                                     sum(1 for x in to if x is not None), len(rs)))
            tr = quartiles([r["trials"] for r in rs])
            cells.append("%.0f [%.0f, %.0f]" % (tr[1], tr[0], tr[2]))
            inf = quartiles([r["infeasible"] for r in rs])
            cells.append("%.0f [%.0f, %.0f]" % (inf[1], inf[0], inf[2]))
            cells.append("%d of %d" % (sum(r["front_infeasible"] for r in rs), sum(r["front_size"] for r in rs)))
            rows.append(cells)
        headers = ["method", "HV at H/4", "HV at H/2", "HV at H",
                   "time to %d%% of the true HV, seeds" % (100 * TARGET_SHARE)]
        if target_opt is not None:
            headers.append("time to Optuna's best, seeds")
        headers += ["trials", "infeasible trials", "infeasible in the recommended front"]
        if target_opt is not None:
            out.append("Optuna's best final median HV: %.3f (%s), the target of the column \"time to Optuna's "
                       "best\"." % (target_opt / true_hv, LABEL[opt_best]))
            out.append("")
        out.append(md_table(headers, rows))
        out.append("")
        label = "%s%s" % (table, "" if scale == 1 else " (horizon x%g)" % scale)
        if target_opt is not None and "bd_auto" in g:
            a = median_curve_time(g["bd_auto"], target_opt)
            b = median_curve_time(g[opt_best], target_opt)
            verdicts.append((label, w, g["bd_auto"][0].get("scheduler") or {}, LABEL[opt_best], a, b,
                             (a / b) if (a is not None and b) else None,
                             superiority(finals(g["bd_auto"]), finals(g[opt_best]))))
        for m_bd, m_opt in PAIRS:
            if m_bd in g and m_opt in g:
                pairs.append((label, w, LABEL[m_bd], quartiles(finals(g[m_bd])), LABEL[m_opt],
                              quartiles(finals(g[m_opt])), superiority(finals(g[m_bd]), finals(g[m_opt]))))
        notes = [r for rs in g.values() for r in rs if r.get("note")]
        if notes:
            out.append("Daemon HV differing from the replay's: %d runs (first: %s)." % (len(notes), notes[0]["note"]))
            out.append("")
    if verdicts:
        out.append("## The issue's bar: banditd's default reaches Optuna's best final median HV in <= 0.5x its time")
        out.append("")
        out.append("The time at which the median HV curve over the seeds (the median at every moment) first "
                   "reaches the final median HV of the better of Optuna's multi-objective samplers, against the "
                   "time that sampler's own median curve reaches it (at or before the horizon, by definition). "
                   "The last column is the probability of superiority of the final HV: the share of (seed, seed') "
                   "pairs in which banditd's run ends above Optuna's (ties count half; 0.5 = no difference).")
        out.append("")
        rows = []
        for table, w, sched, best, a, b, ratio, a12 in verdicts:
            rows.append([table, w, sched.get("name", "?"), best, fmt_t(a, 1) if a is not None else "not reached",
                         fmt_t(b, 1) if b is not None else "—", "%.2f" % ratio if ratio is not None else "—",
                         "met" if ratio is not None and ratio <= 0.5 else "missed", "%.2f" % a12])
        out.append(md_table(["table", "W", "auto chose", "Optuna's best", "banditd's median curve, s",
                             "Optuna's, s", "ratio", "<= 0.5x", "P(banditd's final HV above)"], rows))
        out.append("")
    if pairs:
        out.append("## The same algorithm on both sides: final HV, median [Q1, Q3]")
        out.append("")
        out.append("Under no difference the probability of superiority of 20 runs against 20 has a standard "
                   "error of about 0.09; the two random searches, one algorithm with two random streams, "
                   "calibrate it.")
        out.append("")
        rows = [[t, w, a, "%.3f [%.3f, %.3f]" % (qa[1], qa[0], qa[2]), b, "%.3f [%.3f, %.3f]" % (qb[1], qb[0], qb[2]),
                 "%.2f" % a12] for t, w, a, qa, b, qb, a12 in pairs]
        out.append(md_table(["table", "W", "banditd", "final HV", "Optuna", "final HV", "P(banditd's above)"], rows))
        out.append("")
    return "\n".join(out)


def report_asha(runs):
    """Multi-objective ASHA against the same sampler without early stopping (issue 41's bar: the
    time to the same hypervolume at most 0.5x). Target: the sampler's median final HV over the
    seeds at the horizon; times: when each method's median HV curve first reaches it, and the
    quartiles of the per-seed times (a seed that never reached it counted as never)."""
    groups = {}
    for r in runs:
        groups.setdefault(group_key(r), {}).setdefault(r["method"], []).append(r)
    out = ["## Multi-objective ASHA against the same sampler without early stopping", ""]
    rows, bar = [], []
    for k in sorted(groups, key=sort_key):
        g = groups[k]
        for sampler in ("random", "tpe"):
            base, asha = g.get("bd_" + sampler), g.get("bd_asha_" + sampler)
            if not base or not asha:
                continue
            horizon = base[0]["horizon"]
            target = quartiles([hv_at(r, horizon) for r in base])[1]
            tb, ta = median_curve_time(base, target), median_curve_time(asha, target)
            ratio = ta / tb if (ta is not None and tb) else None
            qb = median_time([time_to(r, target) for r in base], horizon)
            qa = median_time([time_to(r, target) for r in asha], horizon)
            fa, fb = quartiles(finals(asha)), quartiles(finals(base))
            rows.append([k[1], k[2], sampler, len(asha), "%.3f" % (target / base[0]["true_hv"]),
                         fmt_t(tb, horizon), fmt_t(ta, horizon), "—" if ratio is None else "%.2f" % ratio,
                         "%s [%s, %s]" % tuple(fmt_t(x, horizon) for x in (qb[1], qb[0], qb[2])),
                         "%s [%s, %s]" % tuple(fmt_t(x, horizon) for x in (qa[1], qa[0], qa[2])),
                         "%.3f [%.3f, %.3f]" % (fb[1], fb[0], fb[2]), "%.3f [%.3f, %.3f]" % (fa[1], fa[0], fa[2]),
                         "%.0f" % quartiles([r["trials"] for r in asha])[1],
                         "%.0f" % quartiles([r.get("full", 0) for r in asha])[1],
                         sum(r["front_infeasible"] for r in asha)])
            bar.append(ratio is not None and ratio <= 0.5)
    out.append(md_table(["table", "W", "sampler", "seeds", "target HV (sampler's median final)",
                         "sampler's median curve, s", "asha's median curve, s", "ratio",
                         "sampler per seed, median [Q1, Q3]", "asha per seed, median [Q1, Q3]",
                         "sampler final HV", "asha final HV", "asha trials (median)",
                         "asha full-budget trials (median)", "infeasible trials on asha's fronts"], rows))
    out.append("")
    out.append("The bar (ratio <= 0.5) is met in %d of %d cells." % (sum(bar), len(bar)))
    return "\n".join(out)


# one colour per algorithm, solid for banditd, dashed for Optuna; auto (which chose tpe) dotted
STYLE = {"bd_auto": ("black", ":"), "bd_nsga2": ("tab:orange", "-"), "bd_tpe": ("tab:green", "-"),
         "bd_random": ("tab:red", "-"), "optuna_nsga2": ("tab:orange", "--"), "optuna_tpe": ("tab:green", "--"),
         "optuna_random": ("tab:red", "--"), "bd_gp_ucb": ("tab:blue", "-")}


def plot(runs, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = {}
    for r in runs:
        groups.setdefault(group_key(r), {}).setdefault(r["method"], []).append(r)
    keys = sorted(groups, key=sort_key)
    fig, axes = plt.subplots(len(keys) // 2 + len(keys) % 2, 2, figsize=(11, 3.2 * (len(keys) // 2 + len(keys) % 2)),
                             squeeze=False)
    for ax, key in zip(axes.flat, keys):
        g = groups[key]
        any_run = next(iter(g.values()))[0]
        H, true_hv = any_run["horizon"], any_run["true_hv"]
        ts = [H * i / 60 for i in range(61)]
        for m in [m for m in ORDER if m in g]:
            qs = [quartiles([hv_at(r, t) / true_hv for r in g[m]]) for t in ts]
            color, style = STYLE[m]
            ax.plot(ts, [q[1] for q in qs], label=LABEL[m], color=color, linestyle=style,
                    linewidth=1.0 if m == "bd_auto" else 1.5)
            if m != "bd_auto":
                ax.fill_between(ts, [q[0] for q in qs], [q[2] for q in qs], alpha=0.10, color=color)
        ax.set_title("%s, W = %d%s" % (key[1], key[2], "" if key[0] == 1 else ", horizon x%g" % key[0]), fontsize=9)
        ax.set_xlabel("simulated seconds")
        ax.set_ylabel("HV / true front's HV")
        ax.set_ylim(0, 1.02)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, loc="lower right")
    fig.suptitle("Hypervolume / the true feasible front's, median and quartiles over 20 seeds", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(png, dpi=90)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--banditd", help="the daemon binary (for the bd_ methods)")
    ap.add_argument("--tables", default="all")
    ap.add_argument("--methods", default="bd_auto,bd_nsga2,bd_tpe,bd_random,optuna_nsga2,optuna_tpe,optuna_random")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--workers", default="1,4")
    ap.add_argument("--horizon", type=float, help="simulated seconds at W = 1 (default: the table's)")
    ap.add_argument("--horizon-scale", type=float, default=1.0,
                    help="multiplies every table's horizon (the long pass of README-mo.md: 4)")
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true", help="print the tables' fronts and hypervolumes")
    ap.add_argument("--report", nargs="+", metavar="RUNS", help="write the report of these runs files")
    ap.add_argument("--asha", action="store_true",
                    help="with --report: the multi-objective ASHA table (bd_asha_* against bd_random, bd_tpe)")
    ap.add_argument("--md")
    ap.add_argument("--png")
    args = ap.parse_args()
    if args.check:
        check(args)
    elif args.report:
        runs = load_runs(args.report)
        text = report_asha(runs) if args.asha else report(runs)
        print(text)
        if args.md:
            with open(args.md, "w") as f:
                f.write(text + "\n")
        if args.png:
            plot(runs, args.png)
    else:
        if not args.out:
            raise SystemExit("--out is needed")
        run(args)


if __name__ == "__main__":
    main()
