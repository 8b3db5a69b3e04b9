#!/usr/bin/python3
"""spc_decision_cost: what one decision of an algorithm-configuration
scheduler costs with 1,000 configurations x 600 instances (issue 15, item 2).

The matrix is made from a real one (ASlib SAT20-MAIN by default, 67 solvers x
400 instances): configuration k is solver k mod 67 with its runtimes read
through instance rotation k // 67 (so no two configurations have the same
row), instance j is the real instance j mod 400. Every runtime is a real one;
only their pairing is new.

Two figures:
- in-process: bd_spc_replay's mean wall time per decision (suggest and the two
  observe calls of its run), the scheduler code alone, for each --methods,
  and its mean CPU time (the figure to read on a busy machine);
- through the daemon: the latency of POST /v1/studies/{id}/suggest (and of
  complete) over HTTP for spc's default options (--daemon-method: another
  method), median and p99, plus a GET of the study and its size in bytes
  (describe lists the 64 most active testers, caps_race's 64 racers).

Run it alone on the machine (it is a timing); the load average before and
after is recorded with the figures:
    /usr/bin/python3 tests/bench/spc_decision_cost.py --banditd build/banditd
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bobos_replay import Daemon  # noqa: E402
from replay_common import Client  # noqa: E402
import spc_replay  # noqa: E402


class Enlarged:
    """A real matrix re-paired into n_configs x n_instances (see the docstring)."""

    def __init__(self, m, n_configs, n_instances):
        n_s, n_i = len(m.solvers), len(m.instances)
        self.name = "%s-x%dx%d" % (m.name, n_configs, n_instances)
        self.cutoff = m.cutoff
        self.solvers = ["c%04d" % k for k in range(n_configs)]
        self.instances = ["i%04d" % j for j in range(n_instances)]
        self.rt = [[m.rt[k % n_s][(j + k // n_s) % n_i] for j in range(n_instances)] for k in range(n_configs)]
        self.mean = [sum(min(v, self.cutoff) for v in row) / n_instances for row in self.rt]
        self.best = min(range(n_configs), key=lambda c: self.mean[c])
        self.naive_total = sum(sum(min(v, self.cutoff) for v in row) for row in self.rt)

    def order(self, seed):
        return spc_replay.Matrix.order(self, seed)

    def top(self, share=0.01):
        return spc_replay.Matrix.top(self, share)


def through_daemon(banditd, m, decisions, method):
    daemon = Daemon(banditd)
    try:
        client = Client(daemon.url, daemon.token, timeout=120)
        scheduler, options = spc_replay.SCHEDULER_METHODS[method]
        study = client.call("POST", "/v1/studies", {
            "name": "decision-cost",
            "parameters": [{"name": "solver", "type": "categorical", "choices": m.solvers}],
            "objective": {"metric": "runtime", "goal": "minimize"},
            "resource": {"name": "cpu_seconds", "min": 0.001, "max": m.cutoff},
            "instances": m.instances,
            "scheduler": {"name": scheduler, "options": spc_replay.full_options(m, scheduler, options)},
            "seed": 0})
        sid, index = study["id"], {s: k for k, s in enumerate(m.solvers)}
        suggest_ms, complete_ms = [], []
        for _ in range(decisions):
            t0 = time.perf_counter()
            ans = client.call("POST", "/v1/studies/%d/suggest" % sid, {"worker": "cost"})
            suggest_ms.append((time.perf_counter() - t0) * 1e3)
            if not ans["trials"]:
                break
            t = ans["trials"][0]
            rt = m.rt[index[t["config"]["solver"]]][t["instance"]["index"]]
            body = {"status": "timeout"} if rt > t["budget"] else {"value": rt}
            t0 = time.perf_counter()
            client.call("POST", "/v1/trials/%d/complete" % t["id"], body)
            complete_ms.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        got = client.call("GET", "/v1/studies/%d" % sid)
        get_ms = (time.perf_counter() - t0) * 1e3
        return {"decisions": len(complete_ms),
                "method": method, "suggest_ms_median": statistics.median(suggest_ms),
                "suggest_ms_p99": sorted(suggest_ms)[int(0.99 * (len(suggest_ms) - 1))],
                "complete_ms_median": statistics.median(complete_ms),
                "get_study_ms": get_ms, "get_study_bytes": len(json.dumps(got))}
    finally:
        daemon.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--banditd", required=True)
    ap.add_argument("--replayer", help="bd_spc_replay (default: beside --banditd, in tests/bench)")
    ap.add_argument("--scenario", default="sat20-main")
    ap.add_argument("--configs", type=int, default=1000)
    ap.add_argument("--instances", type=int, default=600)
    ap.add_argument("--methods", default="spc,spc_cycle")
    ap.add_argument("--horizon", type=float, default=0.01, help="fraction of the naive total CPU time")
    ap.add_argument("--daemon-decisions", type=int, default=5000)
    ap.add_argument("--daemon-method", default="spc", help="the method of the daemon's figure (spc_replay's names)")
    ap.add_argument("--out", help="append the figures as one JSON line")
    args = ap.parse_args()
    replayer = args.replayer or os.path.join(os.path.dirname(os.path.abspath(args.banditd)), "tests", "bench",
                                             "bd_spc_replay")
    m = Enlarged(spc_replay.Matrix(args.scenario, [spc_replay.DATA, spc_replay.OWN_DATA]), args.configs,
                 args.instances)
    result = {"matrix": m.name, "when": time.strftime("%Y-%m-%d %H:%M:%S"), "horizon": args.horizon,
              "loadavg_before": [round(x, 2) for x in os.getloadavg()], "in_process": {}}
    for method in args.methods.split(","):
        scheduler, options = spc_replay.SCHEDULER_METHODS[method]
        r = spc_replay.run_inprocess(replayer, m, 0, args.horizon * m.naive_total, scheduler, options, points=50)
        result["in_process"][method] = {"decisions": r["runs"], "us_per_decision": round(r["decision_us"], 2),
                                        "cpu_us_per_decision": round(r["decision_cpu_us"], 2)}
        print("%s in-process: %d decisions, %.2f us each (%.2f us of CPU time)" % (
            method, r["runs"], r["decision_us"], r["decision_cpu_us"]), flush=True)
    if args.daemon_decisions > 0:
        result["daemon"] = through_daemon(args.banditd, m, args.daemon_decisions, args.daemon_method)
        print("daemon: %s" % json.dumps(result["daemon"]), flush=True)
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]  # a busy machine slows every figure
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
