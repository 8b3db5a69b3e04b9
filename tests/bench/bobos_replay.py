#!/usr/bin/python3
"""bobos_replay: BO-BOS against GP-UCB, random search, Hyperband, ASHA and
Optuna 3.1 (TPE alone, with its HyperbandPruner, with its MedianPruner) on the
real learning-curve tables of tests/bench/curves/, on a simulated clock
(issue 7). See tests/bench/README-bobos.md for the setting and the results.

Every method runs W virtual workers for a simulated wall-clock horizon. A
proposed config is answered by the curve of its nearest table row (unit cube
of the log-scaled parameters). A worker trains epoch by epoch: each epoch
ends at the recorded cumulative seconds of that row, and is then reported
(banditd: POST measurements; Optuna: trial.report, then should_prune when a
pruner is set). A "stop" (or a prune) ends the trial; the budget reached
ends it with complete (Optuna: tell). A promoted banditd trial (resume_from)
continues its row from the epoch its parent reached and is charged only the
new epochs, except for the NO_CHECKPOINT methods, whose worker keeps no
checkpoint: their promoted trial trains its row again from epoch 0 and is
charged every epoch of its budget. Events are processed in simulated-time order, so each method
sees the other workers' results exactly when they would have arrived.

Recorded per run: every improvement of the best epoch-50 error among configs
trained to 50 epochs (time, error; and in epoch_points the epochs all
workers had trained by then), trials, full trainings (and the distinct
table rows among them, full_rows), stopped trials,
the epochs stopped trials did not train (saved) and the stopped trials whose
row's epoch-50 error beat the best epoch-50 error known when they were
stopped (wrongly stopped). Output: JSON lines, one per run.

    /usr/bin/python3 tests/bench/bobos_replay.py --banditd build/banditd \\
        --tables sgd_fashion_mnist --methods bo_bos,gp_ucb --seeds 0-19 --workers 1,4 --out runs.jsonl
"""

import argparse
import heapq
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from curve_table import CurveTable  # noqa: E402
from replay_common import Client  # noqa: E402

# method -> (scheduler, options). The bo_bos variants are ablations: without
# the intermediate observations of the outer GP, and with the constants of
# the authors' code where they differ from the paper (gamma 0.99 and the
# multiplier 0.2 D ln(2t)).
BANDITD_METHODS = {
    "bo_bos": ("bo_bos", {"acquisition": "ucb"}),
    "bo_bos_noint": ("bo_bos", {"acquisition": "ucb", "intermediate_epochs": []}),
    "bo_bos_int10": ("bo_bos", {"acquisition": "ucb", "intermediate_epochs": [10]}),  # README-mf.md, BO-BOS
    # the outer model without the stops (BOS decides from epoch 49 of 50 on): README-mf.md, BO-BOS
    "bo_bos_nostop": ("bo_bos", {"acquisition": "ucb", "n0": 49}),
    "bo_bos_code": ("bo_bos", {"acquisition": "ucb", "gamma": 0.99, "multiplier": "code"}),
    "bo_bos_logei": ("bo_bos", {"acquisition": "logei"}),
    "gp_ucb": ("gp_ucb", {"acquisition": "ucb"}),
    "gp_logei": ("gp_ucb", {"acquisition": "logei"}),
    "random": ("random", {}),
    # Every option that a new study's defaults would fill in is spelled out,
    # so that a run measures the same method whatever the defaults are.
    "hyperband": ("hyperband", {"eta": 3, "iterations": 0, "sampler": "random"}),
    "asha": ("asha", {"eta": 3, "sampler": "random", "brackets": 1, "promotion": "current",
                      "promotion_fraction": "eta"}),
    # issue 14: TPE alone, TPE as the sampler of Hyperband (BOHB) and ASHA,
    # ASHA's hedged brackets and its promotion by predicted final loss
    "bd_tpe": ("tpe", {}),
    "bd_tpe_nocost": ("tpe", {"cost_aware": False}),
    "bd_tpe_mv": ("tpe", {"multivariate": True, "cost_aware": False}),
    "bohb": ("hyperband", {"eta": 3, "iterations": 0, "sampler": "tpe"}),
    "bohb_nocost": ("hyperband", {"eta": 3, "iterations": 0, "sampler": "tpe", "cost_aware": False}),
    "asha_tpe": ("asha", {"eta": 3, "sampler": "tpe", "brackets": 1, "promotion": "current",
                          "promotion_fraction": "eta"}),
    "asha_tpe_nocost": ("asha", {"eta": 3, "sampler": "tpe", "brackets": 1, "promotion": "current",
                                 "cost_aware": False, "promotion_fraction": "eta"}),
    "asha_hb": ("asha", {"eta": 3, "sampler": "random", "brackets": 4, "promotion": "current",
                         "promotion_fraction": "eta"}),
    "asha_pred": ("asha", {"eta": 3, "sampler": "random", "brackets": 1, "promotion": "predicted",
                           "promotion_fraction": "eta"}),
    # issue 14, the GP: expected improvement per predicted second
    # (cost_aware) and shorter or space-filling starts. "n_init": "2d" /
    # "d+1" is resolved per table (d parameters; gp_ucb's old default is
    # max(2 d, 4)).
    "gp_logei_cost": ("gp_ucb", {"acquisition": "logei", "cost_aware": True, "n_init": "2d", "initial": "random"}),
    "gp_logei_d1": ("gp_ucb", {"acquisition": "logei", "cost_aware": False, "n_init": "d+1", "initial": "random"}),
    "gp_logei_sobol": ("gp_ucb", {"acquisition": "logei", "cost_aware": False, "n_init": "d+1",
                                  "initial": "sobol"}),
    "gp_logei_cost_d1": ("gp_ucb", {"acquisition": "logei", "cost_aware": True, "n_init": "d+1",
                                    "initial": "random"}),
    "gp_logei_cost_sobol": ("gp_ucb", {"acquisition": "logei", "cost_aware": True, "n_init": "d+1",
                                       "initial": "sobol"}),
    # the GP as the sampler of Hyperband and ASHA (option "sampler": "gp")
    "hb_gp": ("hyperband", {"eta": 3, "iterations": 0, "sampler": "gp", "cost_aware": True}),
    "asha_gp": ("asha", {"eta": 3, "sampler": "gp", "brackets": 1, "promotion": "current", "cost_aware": True,
                         "promotion_fraction": "eta"}),
    "asha_pred_gp": ("asha", {"eta": 3, "sampler": "gp", "brackets": 1, "promotion": "predicted",
                              "cost_aware": True, "promotion_fraction": "eta"}),
    "asha_pred_tpe": ("asha", {"eta": 3, "sampler": "tpe", "brackets": 1, "promotion": "predicted",
                               "cost_aware": True, "promotion_fraction": "eta"}),
    "gp_logei_q": ("gp_ucb", {"acquisition": "logei", "cost_aware": False, "n_init": "2d", "initial": "random",
                              "warp": "quantile"}),
    "gp_logei_cost_half": ("gp_ucb", {"acquisition": "logei", "cost_aware": True, "cost_exponent": 0.5, "n_init": "2d",
                                      "initial": "random", "warp": "none"}),
    "gp_logei_cost_half_q": ("gp_ucb", {"acquisition": "logei", "cost_aware": True, "cost_exponent": 0.5,
                                        "n_init": "2d", "initial": "random", "warp": "quantile"}),
    "gp_logei_cost_q": ("gp_ucb", {"acquisition": "logei", "cost_aware": True, "n_init": "2d", "initial": "random",
                                   "warp": "quantile"}),
    "gp_logei_cost_d1_q": ("gp_ucb", {"acquisition": "logei", "cost_aware": True, "n_init": "d+1",
                                      "initial": "random", "warp": "quantile"}),
    "gp_logei_cost_sobol_q": ("gp_ucb", {"acquisition": "logei", "cost_aware": True, "n_init": "d+1",
                                         "initial": "sobol", "warp": "quantile"}),
    "bo_bos_logei_cost": ("bo_bos", {"acquisition": "logei", "cost_aware": True, "n_init": 6, "initial": "random"}),
    "bo_bos_logei_cost_half_q": ("bo_bos", {"acquisition": "logei", "cost_aware": True, "cost_exponent": 0.5,
                                            "n_init": 6, "initial": "random", "warp": "quantile"}),
    "bo_bos_logei_cost_sobol": ("bo_bos", {"acquisition": "logei", "cost_aware": True, "n_init": "d+1",
                                           "initial": "sobol"}),
    # issue 14, ASHA's cut by the reliability of the rung's ranking
    # (asha.c, "promotion_fraction": "reliability")
    "asha_rel": ("asha", {"eta": 3, "sampler": "random", "brackets": 1, "promotion": "predicted",
                          "promotion_fraction": "reliability"}),
    "asha_cur_rel": ("asha", {"eta": 3, "sampler": "random", "brackets": 1, "promotion": "current",
                              "promotion_fraction": "reliability"}),
    # and with the curve fits' asymptote kept at or above zero (asha.c, "asymptote"; README-mf.md,
    # "A floor for the asymptote"); asha_rel above is the same with "asymptote": "free"
    "asha_floor": ("asha", {"eta": 3, "sampler": "random", "brackets": 1, "promotion": "predicted",
                            "promotion_fraction": "reliability", "asymptote": "nonnegative"}),
    # ranked by a model fitted across configs (asha.c, "promotion": "learned"; README-mf.md,
    # "A curve model fitted across configs"), with the default's cut and floor
    "asha_learned": ("asha", {"eta": 3, "sampler": "random", "brackets": 1, "promotion": "learned",
                              "promotion_fraction": "reliability", "asymptote": "nonnegative"}),
    # issue 39: the stopping type (each config one trial to resource.max, stopped at the rungs) against
    # the promotion type run by a worker that does not checkpoint (NO_CHECKPOINT: a promoted trial
    # retrains from epoch 0 and is charged its whole budget again); README-stopping.md
    "asha_stop": ("asha", {"eta": 3, "sampler": "random", "brackets": 1, "promotion": "current",
                           "promotion_fraction": "eta", "type": "stopping"}),
    "asha_scratch": ("asha", {"eta": 3, "sampler": "random", "brackets": 1, "promotion": "current",
                              "promotion_fraction": "eta", "type": "promotion"}),
    "asha_stop_learned": ("asha", {"eta": 3, "sampler": "random", "brackets": 1, "promotion": "learned",
                                   "promotion_fraction": "reliability", "asymptote": "nonnegative",
                                   "type": "stopping"}),
    "asha_scratch_learned": ("asha", {"eta": 3, "sampler": "random", "brackets": 1, "promotion": "learned",
                                      "promotion_fraction": "reliability", "asymptote": "nonnegative",
                                      "type": "promotion"}),
    "hyperband_stop": ("hyperband", {"eta": 3, "iterations": 0, "sampler": "random", "type": "stopping"}),
    "hyperband_scratch": ("hyperband", {"eta": 3, "iterations": 0, "sampler": "random", "type": "promotion"}),
    # issue 40: ASHA that measures its own fidelities (asha.c, "fidelity": "measured"; fidelity.h): every
    # bracket from s = 0 to the full-fidelity one, the cuts, the bracket and the full-fidelity share set by
    # the measured rank agreement of each level with the final loss; TPE proposals. "auto" is the
    # scheduler a study gets when it names none (server/auto_scheduler.c), with whatever it picks.
    "asha_measured": ("asha", {"eta": 3, "sampler": "tpe", "promotion": "learned",
                               "promotion_fraction": "reliability", "asymptote": "nonnegative",
                               "fidelity": "measured", "type": "promotion"}),
    "asha_measured_stop": ("asha", {"eta": 3, "sampler": "tpe", "promotion": "learned",
                                    "promotion_fraction": "reliability", "asymptote": "nonnegative",
                                    "fidelity": "measured", "type": "stopping"}),
    "asha_measured_cur": ("asha", {"eta": 3, "sampler": "tpe", "promotion": "current",
                                   "promotion_fraction": "eta", "fidelity": "measured", "type": "promotion"}),
    "asha_measured_rand": ("asha", {"eta": 3, "sampler": "random", "promotion": "learned",
                                    "promotion_fraction": "reliability", "asymptote": "nonnegative",
                                    "fidelity": "measured", "type": "promotion"}),
    "asha_tpe3": ("asha", {"eta": 3, "sampler": "tpe", "brackets": 3, "promotion": "learned",
                           "promotion_fraction": "reliability", "asymptote": "nonnegative"}),
    # "fidelity": "winners" (fidelity.h): the cuts from where the configs that end best stood at each
    # level, the full-fidelity share at least 1 / (n + 1); README-auto.md, 2026-11-29 second pass
    "asha_winners": ("asha", {"eta": 3, "sampler": "tpe", "promotion": "learned",
                              "promotion_fraction": "reliability", "asymptote": "nonnegative",
                              "fidelity": "winners", "type": "promotion"}),
    "asha_winners_rand": ("asha", {"eta": 3, "sampler": "random", "promotion": "learned",
                                   "promotion_fraction": "reliability", "asymptote": "nonnegative",
                                   "fidelity": "winners", "type": "promotion"}),
    "auto": ("auto", None),
}
# Methods whose worker keeps no checkpoint: resume_from is ignored, so a promoted trial trains its
# config again from epoch 0 (Optuna users' objectives, which train one model in a loop).
NO_CHECKPOINT = {"asha_scratch", "asha_scratch_learned", "hyperband_scratch"}


def resolve_options(options, d):
    """The options with "n_init": "2d" / "d+1" made numbers for d parameters."""
    out = dict(options)
    if out.get("n_init") == "2d":
        out["n_init"] = max(2 * d, 4)
    elif out.get("n_init") == "d+1":
        out["n_init"] = d + 1
    return out
OPTUNA_METHODS = ("tpe", "tpe_hyperband", "tpe_median")
# Simulated seconds at W = 1: about 80 full trainings of an average row (mean
# recorded seconds: SGD 2.44, MLP 1.23, Fashion-MNIST MLP 4.91, its two-layer
# 30-epoch twin 5.46, a NAS-Bench-NLP run 20,976).
HORIZON = {"sgd_fashion_mnist": 200.0, "mlp_digits": 100.0, "fmnist_mlp": 400.0, "fmnist_mlp2": 440.0,
           "nasbench_nlp": 1.68e6,
           "warmup_digits": 50.0}  # issue 40's warm-up table: mean full training 0.615 s


class Job:
    """A trial on a virtual worker: table row, epochs, charge and the method's handle."""

    def __init__(self, row, e0, budget, t_start, handle):
        self.row, self.e0, self.e, self.budget = row, e0, e0, budget
        self.t_start, self.handle = t_start, handle


class Record:
    def __init__(self, table):
        self.table = table
        self.best = math.inf
        self.points = []  # [t, best] at each improvement
        self.trials = self.full = self.stopped = self.diverged = 0
        self.epochs = 0
        self.epoch_points = []  # epochs trained by all workers at each point of points
        self.saved = 0
        self.wrong = 0
        self.idle = 0
        self.full_rows = set()  # distinct table rows trained to the end

    def trained_to_end(self, t, row):
        v = self.table.err[row][-1]
        self.full += 1
        self.full_rows.add(row)
        if v < self.best:
            self.best = v
            self.points.append([t, v])
            self.epoch_points.append(self.epochs)

    def stopped_at(self, row, epoch):
        self.stopped += 1
        self.saved += self.table.epochs - epoch
        if self.table.final[row] < self.best:
            self.wrong += 1


def simulate(driver, table, workers, horizon):
    rec = Record(table)
    heap, seq = [], 0
    idle = list(range(workers))

    def start(w, t):
        nonlocal seq
        job = driver.ask(t, w)
        if job is None:
            rec.idle += 1
            return False
        rec.trials += 1
        job.t_start = t
        heapq.heappush(heap, (t + table.cum[job.row][job.e + 1] - table.cum[job.row][job.e0], seq, w, job))
        seq += 1
        return True

    t = 0.0
    while True:
        still = []
        for w in idle:
            if not start(w, t):
                still.append(w)
        idle = still
        if not heap:
            break  # nothing runs and nobody got work: the method is done
        t, _, w, job = heapq.heappop(heap)
        if t > horizon:
            break
        job.e += 1
        rec.epochs += 1
        row, e = job.row, job.e
        elapsed = table.cum[row][e] - table.cum[row][job.e0]
        if table.diverges_at(row, e):
            rec.diverged += 1
            driver.diverged(job, e, elapsed)
            idle.append(w)
            continue
        action = driver.report(job, e, table.err[row][e - 1], elapsed)
        if action == "stop":
            rec.stopped_at(row, e)
            idle.append(w)
        elif e >= job.budget:
            driver.complete(job, table.err[row][e - 1], elapsed)
            if e >= table.epochs:
                rec.trained_to_end(t, row)
            idle.append(w)
        else:
            heapq.heappush(heap, (job.t_start + table.cum[row][e + 1] - table.cum[row][job.e0], seq, w, job))
            seq += 1
    return rec


class BanditdDriver:
    def __init__(self, client, table, method, seed):
        self.c, self.table = client, table
        body = {
            "name": "replay-%s-%s-%d-%d" % (table.name, method, seed, int(time.time() * 1e6)),
            "parameters": table.space(),
            "objective": {"metric": "val_error", "goal": "minimize", "bounds": [0, 1]},
            "resource": {"name": "epochs", "min": 1, "max": table.epochs, "integer": True},
            "scheduler": ({"name": BANDITD_METHODS[method][0],
                           "options": resolve_options(BANDITD_METHODS[method][1], len(table.params))}
                          if BANDITD_METHODS[method][1] is not None else {"name": BANDITD_METHODS[method][0]}),
            "seed": seed,
            "lease_seconds": 86400,
        }
        self.sid = self.c.call("POST", "/v1/studies", body)["id"]
        self.reached = {}  # trial id -> epoch its row stands at
        self.checkpoints = method not in NO_CHECKPOINT
        self.problems = []

    def ask(self, t, w):
        ans = self.c.call("POST", "/v1/studies/%d/suggest" % self.sid, {"worker": "w%d" % w, "count": 1})
        if not ans["trials"]:
            return None
        tr = self.last_trial = ans["trials"][0]  # the answer itself, for subclasses (asha_diagnose.py)
        row = self.table.nearest(tr["config"])
        e0 = 0
        if tr.get("resume_from") is not None and self.checkpoints:
            e0 = self.reached.get(tr["resume_from"], 0)
        budget = int(round(tr["budget"]))
        if not 1 <= budget <= self.table.epochs or budget <= e0:
            self.problems.append("trial %d: budget %r from epoch %d" % (tr["id"], tr["budget"], e0))
            budget = max(e0 + 1, min(budget, self.table.epochs))
        return Job(row, e0, budget, t, tr["id"])

    def report(self, job, epoch, err, elapsed):
        ans = self.c.call("POST", "/v1/trials/%d/measurements" % job.handle,
                          {"step": epoch, "value": err, "elapsed_seconds": elapsed})
        self.reached[job.handle] = epoch
        return ans.get("action")

    def complete(self, job, err, elapsed):
        self.c.call("POST", "/v1/trials/%d/complete" % job.handle, {"value": err, "elapsed_seconds": elapsed})

    def diverged(self, job, epoch, elapsed):
        self.reached[job.handle] = epoch
        self.c.call("POST", "/v1/trials/%d/complete" % job.handle,
                    {"value": None, "reason": "diverged", "elapsed_seconds": elapsed})


class OptunaDriver:
    def __init__(self, table, method, seed):
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna, self.table = optuna, table
        pruner = {"tpe": optuna.pruners.NopPruner(),
                  "tpe_hyperband": optuna.pruners.HyperbandPruner(min_resource=1, max_resource=table.epochs,
                                                                  reduction_factor=3),
                  "tpe_median": optuna.pruners.MedianPruner()}[method]
        # A fixed study name: the HyperbandPruner assigns trials to brackets
        # by a hash of it, so a random name made runs irreproducible.
        self.study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed),
                                         pruner=pruner, study_name="replay-%s-%s-%d" % (table.name, method, seed))
        self.prunes = method != "tpe"

    def ask(self, t, w):
        trial = self.study.ask()
        config = {}
        for p in self.table.space():
            name, lo, hi, log = p["name"], p["low"], p["high"], p["log"]
            if p["type"] == "int":
                config[name] = trial.suggest_int(name, lo, hi, log=log)
            else:
                config[name] = trial.suggest_float(name, lo, hi, log=log)
        return Job(self.table.nearest(config), 0, self.table.epochs, t, trial)

    def report(self, job, epoch, err, elapsed):
        job.handle.report(err, epoch)
        if self.prunes and job.handle.should_prune():
            self.study.tell(job.handle, state=self.optuna.trial.TrialState.PRUNED)
            return "stop"
        return "continue"

    def complete(self, job, err, elapsed):
        self.study.tell(job.handle, err)

    def diverged(self, job, epoch, elapsed):
        self.study.tell(job.handle, state=self.optuna.trial.TrialState.FAIL)


def parse_range(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


class Daemon:
    """A banditd on a free port, on a new database in a temporary directory
    (kept after stop()), or on db when given."""

    def __init__(self, binary, db=None):
        self.tmp = tempfile.mkdtemp(prefix="bd-bobos.")
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        db = db or os.path.join(self.tmp, "bd.db")
        self.log = open(os.path.join(self.tmp, "daemon.log"), "wb")
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1:%d" % self.port, "--db", db,
                                      "--log-level", "warn"], stderr=self.log)
        token_file = db + ".admin-token"
        for _ in range(200):
            if os.path.exists(token_file) and os.path.getsize(token_file) > 0:
                try:
                    c = Client("http://127.0.0.1:%d" % self.port, "x")
                    c.call("GET", "/healthz")
                    break
                except Exception:
                    pass
            if self.proc.poll() is not None:
                raise SystemExit("banditd exited; log in %s" % self.tmp)
            time.sleep(0.05)
        with open(token_file) as f:
            self.token = f.read().strip()
        self.url = "http://127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(30)
        if rc != 0:
            raise SystemExit("banditd exited with %d; log in %s" % (rc, self.tmp))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--banditd", help="the daemon binary (needed for banditd methods)")
    ap.add_argument("--tables", default="sgd_fashion_mnist")
    ap.add_argument("--methods", default="bo_bos,gp_ucb,random,hyperband,asha," + ",".join(OPTUNA_METHODS))
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--workers", default="1,4")
    ap.add_argument("--horizon", type=float,
                    help="simulated seconds at W = 1 (default per table: %s); W workers get horizon / W "
                         "(the same compute)" % HORIZON)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    unknown = [m for m in methods if m not in BANDITD_METHODS and m not in OPTUNA_METHODS]
    if unknown:
        raise SystemExit("unknown methods: %s" % unknown)
    daemon = client = None
    if any(m in BANDITD_METHODS for m in methods):
        if not args.banditd:
            raise SystemExit("--banditd is needed for %s" % [m for m in methods if m in BANDITD_METHODS])
        daemon = Daemon(args.banditd)
        client = Client(daemon.url, daemon.token, timeout=120)
    try:
        with open(args.out, "a") as out:
            for table_name in args.tables.split(","):
                table = CurveTable(table_name)
                for w in parse_range(args.workers):
                    horizon = (args.horizon or HORIZON[table_name]) / w
                    for method in methods:
                        for seed in parse_range(args.seeds):
                            wall = time.monotonic()
                            if method in BANDITD_METHODS:
                                driver = BanditdDriver(client, table, method, seed)
                            else:
                                driver = OptunaDriver(table, method, seed)
                            rec = simulate(driver, table, w, horizon)
                            wall = time.monotonic() - wall
                            line = {
                                "table": table_name, "method": method, "seed": seed, "workers": w,
                                "horizon": horizon, "points": rec.points,
                                "best": None if rec.best == math.inf else rec.best, "table_best": table.best,
                                "epoch_points": rec.epoch_points,
                                "trials": rec.trials, "full": rec.full, "full_rows": len(rec.full_rows),
                                "stopped": rec.stopped,
                                "diverged": rec.diverged, "epochs": rec.epochs, "saved": rec.saved,
                                "wrong": rec.wrong, "idle": rec.idle, "wall_seconds": wall,
                                "problems": getattr(driver, "problems", []),
                            }
                            out.write(json.dumps(line) + "\n")
                            out.flush()
                            print("%s W=%d %-14s seed %2d: best %.4f, %d trials (%d full, %d stopped), "
                                  "%d epochs, %.1f s" % (table_name, w, method, seed, line["best"] or math.nan,
                                                         rec.trials, rec.full, rec.stopped, rec.epochs, wall),
                                  flush=True)
    finally:
        if client:
            client.close()
        if daemon:
            daemon.stop()


if __name__ == "__main__":
    main()
