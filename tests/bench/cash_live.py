#!/usr/bin/python3
"""cash_live: Rising Bandits against uniform allocation and joint GP-UCB on
live scikit-learn runs at the same wall-clock budget (issue 8, item 2). See
tests/bench/README-cash-live.md for the setting and the results.

For every seed, dataset and method it starts a fresh daemon on a temporary
database (tests/integration/bdtest.py through bench_common.use_build), runs
ONE clients/examples/cash_worker.py process that creates the study
(--create-study METHOD) and works until the dataset's budget of wall-clock
seconds is spent, stops the daemon, and appends one JSON line: the
dataset, method, seed and budget, the CPUs the run was allowed, the load
average before and after, and the worker's whole run (every trial with its
arm, start and end in seconds since the loop began, balanced accuracy;
the final scheduler state; the incumbent's test score).

Loops: seed, then dataset, then method, so a campaign cut short holds whole
seeds; the methods' order rotates with the seed, so a slow spell of the
machine does not always hit the same method. Nothing runs in parallel.
Pin the campaign to one core (every child inherits it):

    taskset -c 1 /usr/bin/python3 tests/bench/cash_live.py --build build \\
        --datasets wine=25,breast_cancer=25,digits=70,fashion-mnist=100 --seeds 0-4 --out runs.jsonl
    /usr/bin/python3 tests/bench/cash_live_report.py runs.jsonl --md cash_live.md --png cash_live.png
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_common  # noqa: E402
from bobos_replay import parse_range  # noqa: E402

WORKER = os.path.join(bench_common.SOURCE, "clients", "examples", "cash_worker.py")
METHODS = ("rising_bandits", "uniform", "gp_ucb")
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# The committed results' budgets (README-cash-live.md says why): about 57
# minutes for 5 seeds on one core.
DEFAULT_BUDGETS = "wine=25,breast_cancer=25,digits=70,fashion-mnist=100"
SLACK = 600  # seconds a worker may take beyond its budget (data loading, the test refit) before it is killed


def budgets_arg(text):
    """"wine=15,digits=80" -> [("wine", 15.0), ("digits", 80.0)] (the order is kept)."""
    out = []
    for part in text.split(","):
        name, _, secs = part.partition("=")
        if not name or not secs:
            raise argparse.ArgumentTypeError("expected dataset=seconds, got %r" % part)
        out.append((name, float(secs)))
    return out


def rotated(methods, seed):
    k = seed % len(methods)
    return methods[k:] + methods[:k]


def run_worker(daemon, dataset, method, seed, budget, logdir, worker_args):
    """Runs one cash_worker.py against daemon; returns (exit code, its JSON summary or None)."""
    out = os.path.join(logdir, "%s-%s-%d.json" % (dataset, method, seed))
    cmd = [sys.executable, WORKER, "--url", "http://127.0.0.1:%d" % daemon.port,
           "--token-file", daemon.db_path + ".admin-token", "--dataset", dataset, "--create-study", method,
           "--seconds", repr(budget), "--seed", str(seed), "--out", out] + worker_args
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **SINGLE_THREAD)
    with open(os.path.join(logdir, "%s-%s-%d.log" % (dataset, method, seed)), "wb") as logf:
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env)
        try:
            rc = proc.wait(budget + SLACK)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = "killed after %.0f s" % (budget + SLACK)
    if not os.path.exists(out):
        return rc, None
    with open(out) as f:
        return rc, json.load(f)


def run_one(bdtest, dataset, method, seed, budget, logdir, worker_args, campaign):
    """One fresh daemon, one worker; returns the JSON line."""
    load_before = os.getloadavg()[0]
    started = time.time()
    daemon = bdtest.Daemon(extra_args=["--log-level", "warn"])
    try:
        rc, run = run_worker(daemon, dataset, method, seed, budget, logdir, worker_args)
        daemon_rc = daemon.stop()
    finally:
        daemon.cleanup()
    finished = time.time()
    return {"dataset": dataset, "method": method, "seed": seed, "budget": budget,
            "cpus": sorted(os.sched_getaffinity(0)), "loadavg_before": load_before,
            "loadavg_after": os.getloadavg()[0], "campaign_started": campaign["started"],
            "campaign": campaign["describe"], "started": started,
            "finished": finished, "run_seconds": finished - started, "worker_rc": rc, "daemon_rc": daemon_rc,
            "run": run}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(bench_common.SOURCE, "build"), help="holds banditd")
    ap.add_argument("--datasets", type=budgets_arg, default=budgets_arg(DEFAULT_BUDGETS),
                    help="dataset=seconds pairs, comma-separated: the wall-clock budget of each run")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--worker-arg", action="append", default=[],
                    help="an extra argument for cash_worker.py (repeat the option for each)")
    ap.add_argument("--logdir", help="where the workers' logs and JSON go (default: a new temporary directory)")
    ap.add_argument("--out", required=True, help="JSON lines, appended")
    args = ap.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise SystemExit("unknown methods: %s" % unknown)
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        print("note: not pinned (CPUs %s); the runs are timed, pin them with taskset -c 1" % cpus, flush=True)
    bdtest = bench_common.use_build(args.build)
    logdir = args.logdir or tempfile.mkdtemp(prefix="bd-cash-live.")
    os.makedirs(logdir, exist_ok=True)
    print("worker logs in %s; CPUs %s" % (logdir, cpus), flush=True)
    campaign = {"started": time.time(), "describe": bench_common.describe()}
    failed = 0
    with open(args.out, "a") as out:
        for seed in parse_range(args.seeds):
            for dataset, budget in args.datasets:
                for method in rotated(methods, seed):
                    line = run_one(bdtest, dataset, method, seed, budget, logdir, args.worker_arg, campaign)
                    out.write(json.dumps(line) + "\n")
                    out.flush()
                    run = line["run"]
                    ok = line["worker_rc"] == 0 and line["daemon_rc"] == 0 and run is not None
                    failed += not ok
                    print("%-14s %-15s seed %d: %s, %.0f s wall, load %.1f -> %.1f" % (
                        dataset, method, seed,
                        "best %.4f (%s), %d trials, test %s" % (
                            run["best"]["value"], run["best"]["arm"], len(run["trials"]),
                            "%.4f" % run["test"]["balanced_accuracy"] if run["test"] else "-")
                        if run and run["best"] else "FAILED (worker %s, daemon %s)" % (
                            line["worker_rc"], line["daemon_rc"]),
                        line["run_seconds"], line["loadavg_before"], line["loadavg_after"]), flush=True)
    print("campaign: %.0f s wall, %d runs failed" % (time.time() - campaign["started"], failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
