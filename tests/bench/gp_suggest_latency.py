#!/usr/bin/python3
"""gp_suggest_latency.py: what one suggest costs a worker of a model-based
study as the study grows, through the real daemon and the scheduler.

Starts banditd (BANDITD=path/to/banditd) on a temporary database, creates a
study with 8 float parameters and the given scheduler (gp_ucb by default;
bo_bos also works: its trials then report one measurement per trial at the
last epoch), and runs one worker over HTTP: suggest, complete with a smooth
synthetic loss (fine for timing, says nothing about search quality). At 100,
500 and 2,000 completed trials it times `--probes` suggest requests (wall
clock, one keep-alive connection; each probe's trial is completed before the
next, so every probe includes the model rebuild of the previous completion)
and prints their median and largest time. Single worker; run it on an
otherwise idle machine for numbers worth quoting.

Usage: BANDITD=build/banditd /usr/bin/python3 tests/bench/gp_suggest_latency.py [--scheduler gp_ucb]
"""
import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import bdtest  # noqa: E402

D = 8
CHECKPOINTS = (100, 500, 2000)


def loss(config):
    return sum((config["x%d" % i] - 0.3) ** 2 * (1 + i) for i in range(D)) + 0.1 * math.sin(7 * config["x0"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scheduler", default="gp_ucb")
    ap.add_argument("--probes", type=int, default=20)
    args = ap.parse_args()
    d = bdtest.Daemon(extra_args=("--log-level", "warn"))
    try:
        body = {
            "name": "latency",
            "parameters": [{"name": "x%d" % i, "type": "float", "low": 0, "high": 1} for i in range(D)],
            "objective": {"metric": "loss", "goal": "minimize", "bounds": [0, 40]},
            "scheduler": {"name": args.scheduler, "options": {}},
            "seed": 1,
        }
        if args.scheduler == "bo_bos":
            body["resource"] = {"name": "epochs", "min": 1, "max": 50, "integer": True}
        sid = bdtest.expect(d.request("POST", "/v1/studies", body), 201)["id"]
        c = d.client(timeout=60)
        done, t0 = 0, time.monotonic()

        def one():
            t = time.perf_counter()
            st, ans, _ = c.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"})
            took = time.perf_counter() - t
            assert st == 200 and ans["trials"], (st, ans)
            tr = ans["trials"][0]
            v = loss(tr["config"])
            if args.scheduler == "bo_bos":
                c.request("POST", "/v1/trials/%d/measurements" % tr["id"], {"step": 50, "value": v})
            st, ans, _ = c.request("POST", "/v1/trials/%d/complete" % tr["id"], {"value": v})
            assert st == 200, (st, ans)
            return took

        print("%s, %d dimensions, one worker; suggest request times (ms):" % (args.scheduler, D))
        for n in CHECKPOINTS:
            while done < n:
                one()
                done += 1
            times = [one() * 1e3 for _ in range(args.probes)]
            done += args.probes
            print("  at %5d completed trials: median %6.1f, max %6.1f  (%d probes; %.0f s so far)" % (
                n, statistics.median(times), max(times), len(times), time.monotonic() - t0), flush=True)
        c.close()
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
