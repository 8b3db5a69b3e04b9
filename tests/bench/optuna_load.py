#!/usr/bin/python3
"""optuna_load.py: the bd_loadgen workload through Optuna with SQLite storage (issue 2).

Run with Debian's /usr/bin/python3 (python3-optuna 3.1). Each virtual worker loops
    study.ask() + trial.suggest_float("x", 0, 1)       -> 1 call  (like suggest)
    3 x (trial.report(value, step) + should_prune())   -> 3 calls (like measurements)
    study.tell(trial, value)                           -> 1 call  (like complete)
on a RandomSampler study (random search, like banditd's "random" scheduler) with
NopPruner by default (random search never stops a trial; --pruner hyperband gives
the set-up of the reference figures in PEERS.md), stored in an RDBStorage on a fresh
sqlite:/// file in a temporary directory (Optuna's defaults: rollback journal,
synchronous=FULL, 5 s busy timeout). Calls finishing in the warm-up are not counted;
an exception (e.g. "database is locked") is an error; only successful calls count in
calls/s and the latency figures.

--studies S (default 1) spreads the workers round-robin over S studies in the
same database (worker i on study i mod S), like bd_loadgen --studies; in
processes mode each process is one worker, so processes:2 uses two of them.

--runs lists the configurations tried, each on a fresh database, as
mode:workers[:wal], e.g. "threads:32,threads:1,threads:1:wal,processes:2". ":wal"
switches that run's file to journal_mode=WAL with synchronous=NORMAL (what
banditd --sync normal uses) instead of Optuna's defaults. Each prints a RUN line;
the last line is
    RESULT calls_per_s=... trials_per_s=... p50_ms=... p90_ms=... p99_ms=... max_ms=... errors=... mode=... workers=... journal=...
for the configuration with the best call rate (Optuna's figure), and says so.
"""

import argparse
import math
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time

import optuna
import sqlalchemy
from optuna.trial import TrialState

STUDY = "optuna-load"
KINDS = ("ask", "report", "tell")


def percentile(sorted_vals, p):
    if not sorted_vals:
        return 0.0
    rank = max(1, math.ceil(p * len(sorted_vals)))
    return sorted_vals[rank - 1]


class Stats:
    """One virtual worker's counters; merged after the run."""

    def __init__(self):
        self.calls = 0
        self.errors = 0
        self.errors_total = 0
        self.trials = 0
        self.lat = {k: [] for k in KINDS}
        self.first_errors = []

    def merge(self, other):
        self.calls += other.calls
        self.errors += other.errors
        self.errors_total += other.errors_total
        self.trials += other.trials
        for k in KINDS:
            self.lat[k].extend(other.lat[k])
        for e in other.first_errors:
            if len(self.first_errors) < 5:
                self.first_errors.append(e)


PRUNERS = {
    "nop": optuna.pruners.NopPruner,
    "median": optuna.pruners.MedianPruner,
    "hyperband": lambda: optuna.pruners.HyperbandPruner(min_resource=1, max_resource=3),
}


def make_storage(url, wal):
    """An RDBStorage on url; with wal, every connection runs synchronous=NORMAL
    (the file itself is put in WAL mode by run_one; that setting persists)."""
    storage = optuna.storages.RDBStorage(url)
    if wal:
        def on_connect(dbapi_con, _record):
            dbapi_con.execute("PRAGMA synchronous = NORMAL")

        sqlalchemy.event.listen(storage.engine, "connect", on_connect)
        storage.engine.dispose()  # connections opened before the listener are dropped
    return storage


def worker_loop(study, measure, stop, stats, seed, measurements):
    """Runs trials until stop is set; measure tells whether calls are counted."""
    import random

    rng = random.Random(seed)

    def booked(kind, fn):
        t0 = time.perf_counter()
        try:
            result = fn()
            ok = True
        except Exception as exc:  # noqa: BLE001 - every failure is an error of the call
            result, ok = exc, False
        t1 = time.perf_counter()
        counted = measure.is_set() and not stop.is_set()
        if counted and ok:
            stats.calls += 1
            stats.lat[kind].append((t1 - t0) * 1000.0)
        if not ok:
            stats.errors_total += 1
            if counted:
                stats.errors += 1
            if len(stats.first_errors) < 5:
                stats.first_errors.append("%s: %s: %s" % (kind, type(result).__name__, str(result).splitlines()[0][:200]))
        return ok, result

    def ask():
        trial = study.ask()
        return trial, trial.suggest_float("x", 0.0, 1.0)

    while not stop.is_set():
        ok, r = booked("ask", ask)
        if not ok:
            time.sleep(0.001)
            continue
        trial, x = r
        base = (x - 0.3) ** 2
        failed = False
        for step in range(1, measurements + 1):
            v = base + 0.5 / step + 0.01 * rng.random()

            def report(v=v, step=step):
                trial.report(v, step)
                return trial.should_prune()

            ok, pruned = booked("report", report)
            if not ok:
                failed = True
                break
        if failed:
            try:
                study.tell(trial, state=TrialState.FAIL)
            except Exception:  # noqa: BLE001 - best effort clean-up, not a counted call
                pass
            continue
        ok, _ = booked("tell", lambda: study.tell(trial, base + 0.01 * rng.random()))
        if ok and measure.is_set() and not stop.is_set():
            stats.trials += 1


def study_name(i, n):
    return STUDY if n == 1 else "%s-%d" % (STUDY, i)


def process_main(url, wal, measure, stop, seed, measurements, pruner, queue, name):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    stats = Stats()
    try:
        study = optuna.load_study(study_name=name, storage=make_storage(url, wal),
                                  sampler=optuna.samplers.RandomSampler(seed=seed),
                                  pruner=PRUNERS[pruner]())
        worker_loop(study, measure, stop, stats, seed, measurements)
    except Exception as exc:  # noqa: BLE001
        stats.first_errors.append("setup: %s" % exc)
        stats.errors_total += 1
    queue.put(stats)


def run_one(mode, workers, wal, args):
    tmp = tempfile.mkdtemp(prefix="optuna-load-")
    path = os.path.join(tmp, "optuna.db")
    try:
        if wal:
            import sqlite3

            con = sqlite3.connect(path)
            con.execute("PRAGMA journal_mode=WAL")
            con.close()
        url = "sqlite:///" + path
        storage = make_storage(url, wal)
        studies = [optuna.create_study(study_name=study_name(i, args.studies), storage=storage,
                                       direction="minimize", sampler=optuna.samplers.RandomSampler(seed=1 + i),
                                       pruner=PRUNERS[args.pruner]())
                   for i in range(args.studies)]
        total = Stats()
        if mode == "threads":
            measure, stop = threading.Event(), threading.Event()
            per = [Stats() for _ in range(workers)]
            threads = [threading.Thread(target=worker_loop, args=(studies[i % args.studies], measure, stop, per[i],
                                                                  1000 + i, args.measurements))
                       for i in range(workers)]
            for t in threads:
                t.start()
            time.sleep(args.warmup)
            measure.set()
            t0 = time.perf_counter()
            time.sleep(args.duration)
            stop.set()
            t1 = time.perf_counter()
            for t in threads:
                t.join()
            for s in per:
                total.merge(s)
        else:
            ctx = multiprocessing.get_context("fork")
            measure, stop, queue = ctx.Event(), ctx.Event(), ctx.Queue()
            storage.engine.dispose()
            procs = [ctx.Process(target=process_main,
                                 args=(url, wal, measure, stop, 1000 + i, args.measurements, args.pruner, queue,
                                       study_name(i % args.studies, args.studies)))
                     for i in range(workers)]
            for p in procs:
                p.start()
            time.sleep(args.warmup)
            measure.set()
            t0 = time.perf_counter()
            time.sleep(args.duration)
            stop.set()
            t1 = time.perf_counter()
            for _ in procs:
                total.merge(queue.get())
            for p in procs:
                p.join()
        secs = t1 - t0
        n_trials_db = sum(len(st.get_trials(deepcopy=False)) for st in studies)
        return total, secs, n_trials_db
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def summarize(mode, workers, wal, stats, secs, args):
    lat = sorted(stats.lat["ask"] + stats.lat["report"] + stats.lat["tell"])
    r = {
        "p999_ms": percentile(lat, 0.999),
        "calls_per_s": stats.calls / secs,
        "trials_per_s": stats.trials / secs,
        "p50_ms": percentile(lat, 0.50),
        "p90_ms": percentile(lat, 0.90),
        "p99_ms": percentile(lat, 0.99),
        "max_ms": lat[-1] if lat else 0.0,
        "errors": stats.errors,
        "mode": mode,
        "journal": "wal" if wal else "default",
        "workers": workers,
        "studies": args.studies,
    }
    print("optuna_load: optuna %s, sqlite (%s), %s x %d, %d stud%s, RandomSampler + %s pruner, warm-up %.1f s, "
          "measured %.2f s"
          % (optuna.__version__, "WAL, synchronous=NORMAL" if wal else "defaults: rollback journal, synchronous=FULL",
             mode, workers, args.studies, "y" if args.studies == 1 else "ies", args.pruner, args.warmup,
             secs))
    print("calls          %d ok (errors %d; %d including warm-up)" % (stats.calls, stats.errors, stats.errors_total))
    print("calls/s        %.1f" % r["calls_per_s"])
    print("trials/s       %.1f (%d completed)" % (r["trials_per_s"], stats.trials))
    print("latency ms     p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f"
          % (r["p50_ms"], r["p90_ms"], r["p99_ms"], r["p999_ms"], r["max_ms"]))
    for k in KINDS:
        v = sorted(stats.lat[k])
        print("  %-12s p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  (n=%d)"
              % (k, percentile(v, 0.5), percentile(v, 0.9), percentile(v, 0.99), v[-1] if v else 0.0, len(v)))
    for e in stats.first_errors:
        print("error          %s" % e)
    print("RUN " + fmt(r))
    sys.stdout.flush()
    return r


def run_name(mode, workers, wal):
    return "%s:%d%s" % (mode, workers, ":wal" if wal else "")


def fmt(r):
    return ("calls_per_s=%.1f trials_per_s=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f errors=%d mode=%s "
            "workers=%d journal=%s p999_ms=%.3f studies=%d"
            % (r["calls_per_s"], r["trials_per_s"], r["p50_ms"], r["p90_ms"], r["p99_ms"], r["max_ms"], r["errors"],
               r["mode"], r["workers"], r["journal"], r["p999_ms"], r["studies"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="threads:32,threads:1",
                    help="comma-separated mode:workers[:wal], mode threads or processes (default threads:32,threads:1)")
    ap.add_argument("--workers", type=int, help="shorthand for --runs threads:W")
    ap.add_argument("--duration", type=float, default=15.0, help="measured seconds per run (default 15)")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds not counted (default 2)")
    ap.add_argument("--measurements", type=int, default=3, help="reports per trial (default 3)")
    ap.add_argument("--studies", type=int, default=1,
                    help="studies the workers are spread over, round-robin (default 1)")
    ap.add_argument("--pruner", choices=sorted(PRUNERS), default="nop", help="default nop (random search)")
    args = ap.parse_args()
    runs = []
    spec = "threads:%d" % args.workers if args.workers else args.runs
    for item in spec.split(","):
        parts = item.strip().split(":")
        if (len(parts) not in (2, 3) or parts[0] not in ("threads", "processes") or not parts[1].isdigit()
                or int(parts[1]) < 1 or (len(parts) == 3 and parts[2] != "wal")):
            ap.error("bad run %r (mode:workers[:wal])" % item)
        runs.append((parts[0], int(parts[1]), len(parts) == 3))

    if args.studies < 1:
        ap.error("--studies must be at least 1")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    results = []
    for mode, workers, wal in runs:
        stats, secs, n_db = run_one(mode, workers, wal, args)
        results.append(summarize(mode, workers, wal, stats, secs, args))
        print("trials in db   %d" % n_db)
        print()
    best = max(results, key=lambda r: r["calls_per_s"])
    print("optuna_load: best of %s is %s (used as Optuna's figure)"
          % (",".join(run_name(m, w, wal) for m, w, wal in runs),
             run_name(best["mode"], best["workers"], best["journal"] == "wal")))
    print("RESULT " + fmt(best))
    return 0 if any(r["calls_per_s"] > 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
