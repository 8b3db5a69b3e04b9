#!/usr/bin/python3
"""replay_optuna: the same NAS-Bench-NLP replay driven by Optuna 3.1 (Debian's
python3-optuna), for comparison with banditd's schedulers.

Sampler: RandomSampler(seed) over suggest_int("arch", 0, 344), so that the
pruners are compared with random search on equal terms. Pruners:
  optuna_hyperband  HyperbandPruner(min_resource=1, max_resource=50, reduction_factor=3)
  optuna_sh         SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
Each trial trains its row from epoch 0 (Optuna pruners only stop, never
promote or resume), reports val_loss after every epoch with trial.report and
asks trial.should_prune() at the pruners' rung steps (1, 3, 9, 27: the
pruners cannot decide anything at other steps); a pruned trial is charged only
the epochs it ran. A diverged row fails (TrialState.FAIL) at the epoch it
diverged. Trials reaching epoch 50 are told their epoch-50 val_loss.

W workers (ask/tell, in-memory storage) share the discrete-event clock of
replay_daemon.py: every rung step and every finish is an event at its
simulated time, processed in time order, so the pruner sees the other
workers' reports in simulated order. Stop rules and the trace are those of
replay_daemon.py.

Usage: replay_optuna.py --methods optuna_hyperband,optuna_sh --seeds 0-19 --workers 1,8
       --cap 50000 --out results.json
"""

import argparse
import heapq
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_common import MAX_EPOCHS, Table, Trace  # noqa: E402
from replay_daemon import parse_list  # noqa: E402

import optuna  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

RUNG_STEPS = (1, 3, 9, 27)   # min_resource 1, reduction_factor 3: 3^k < 50


def make_pruner(method):
    if method == "optuna_hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=MAX_EPOCHS, reduction_factor=3)
    if method == "optuna_sh":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    raise SystemExit("unknown method %r" % method)


METHODS = ("optuna_hyperband", "optuna_sh")


class OptunaRun:
    def __init__(self, table, method, seed, workers, cap):
        self.table = table
        self.method = method
        self.seed = seed
        self.W = workers
        self.cap = cap
        self.trace = Trace(table, workers, cap)
        self.study = optuna.create_study(study_name="replay-%s-s%d" % (method, seed), direction="minimize",
                                         sampler=optuna.samplers.RandomSampler(seed=seed),
                                         pruner=make_pruner(method))
        self.heap = []        # (t, seq, worker)
        self.seq = 0
        self.now = 0.0
        self.running = {}     # worker -> job

    def checkpoints(self, arch):
        L = self.table.length(arch)
        pts = [s for s in RUNG_STEPS if s < min(L, MAX_EPOCHS)]
        pts.append(min(L, MAX_EPOCHS))
        return pts

    def start(self, w):
        trial = self.study.ask()
        arch = trial.suggest_int("arch", 0, 344)
        job = {"trial": trial, "arch": arch, "start": self.now, "pts": self.checkpoints(arch), "k": 0,
               "reported": 0}
        self.running[w] = job
        self.push(w, job)

    def push(self, w, job):
        step = job["pts"][job["k"]]
        heapq.heappush(self.heap, (job["start"] + self.table.cum[job["arch"]][step], self.seq, w))
        self.seq += 1

    def epochs_now(self):
        n = self.trace.epochs_done
        for j in self.running.values():
            n += self.table.epochs_done_by(j["arch"], 0, j["start"], self.now)
        return n

    def step(self, w):
        """Worker w reached its next checkpoint; returns True when its trial ended."""
        job = self.running[w]
        arch, trial = job["arch"], job["trial"]
        step = job["pts"][job["k"]]
        vals = self.table.val[arch]
        for e in range(job["reported"] + 1, step + 1):
            v = vals[e - 1]
            if v is None:   # diverged at epoch e (= step: checkpoints include the divergence)
                self.study.tell(trial, state=TrialState.FAIL)
                return self.end(w, job, e, None)
            trial.report(v, e)
        job["reported"] = step
        if step >= MAX_EPOCHS:
            self.study.tell(trial, vals[step - 1])
            return self.end(w, job, step, vals[step - 1])
        if trial.should_prune():
            self.study.tell(trial, state=TrialState.PRUNED)
            return self.end(w, job, step, vals[step - 1])
        job["k"] += 1
        self.push(w, job)
        return False

    def end(self, w, job, epochs, value):
        del self.running[w]
        secs = self.table.cum[job["arch"]][epochs]
        now = self.epochs_now() + epochs
        self.trace.finish_trial(self.now, now, job["arch"], epochs, epochs, secs, value)
        return True

    def run(self):
        t0 = time.time()
        for w in range(self.W):
            self.start(w)
        reason = None
        while True:
            t, _, w = heapq.heappop(self.heap)
            self.now = t
            if not self.step(w):
                continue
            if self.trace.found_table_best():
                reason = "found_best"
                break
            if self.epochs_now() >= self.cap:
                reason = "cap"
                break
            self.start(w)
        busy = sum(min(self.now - j["start"], self.table.cum[j["arch"]][j["pts"][-1]])
                   for j in self.running.values())
        self.trace.close(self.now, self.epochs_now(), busy, reason)
        return self.trace.to_json(method=self.method, source="optuna " + optuna.__version__, seed=self.seed,
                                  new_configs=len(self.study.trials), sampler="RandomSampler",
                                  pruner=type(self.study.pruner).__name__,
                                  real_seconds=time.time() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--workers", default="1,8")
    ap.add_argument("--cap", type=int, default=50000)
    ap.add_argument("--table", default=None)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    table = Table(a.table) if a.table else Table()
    results = []
    for method in parse_list(a.methods):
        for W in parse_list(a.workers, int):
            t0 = time.time()
            for seed in parse_list(a.seeds, int):
                results.append(OptunaRun(table, method, seed, W, a.cap).run())
            print("optuna  %-19s W=%d: %d runs in %.1f s" % (method, W, len(parse_list(a.seeds, int)),
                                                            time.time() - t0), file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump({"table_best": table.best, "thresholds": table.thresholds, "runs": results}, f)


if __name__ == "__main__":
    main()
