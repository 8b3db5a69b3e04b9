#!/usr/bin/python3
"""bos_request_latency.py: what one BO-BOS solve costs a worker.

Starts a real banditd (BANDITD=path/to/banditd) with a temporary database,
creates a bo_bos study (N = 50 epochs, N0 = 8, default 100,000 paths), and
runs two trials over HTTP the way a worker does: the first follows a good
learning curve to the end (the incumbent), the second a clearly worse one
until the server answers "stop". Every POST /v1/trials/{id}/measurements
is timed (wall clock, one keep-alive connection); the second trial's
measurement at epoch N0 carries the BOS solve (the first trial's needs
none: with no completed trial the table could never stop it). Prints that request's time next to the median of
the other measurement requests, the stop answer, and the study's bo_bos
state. Single worker, one run: a rough number, not a benchmark series.

Usage: BANDITD=build/banditd /usr/bin/python3 tests/bench/bos_request_latency.py
"""
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import bdtest  # noqa: E402

N, N0 = 50, 8


def good(n):
    return 0.05 + 0.5 * math.exp(-0.3 * (n - 1))


def bad(n):
    return 0.6 - 0.002 * n


def main():
    d = bdtest.Daemon()
    c = d.client()
    try:
        study = bdtest.create_study(d, resource={"name": "epochs", "min": 1, "max": N, "integer": True},
                                    scheduler={"name": "bo_bos", "options": {"n_init": 2}},
                                    objective={"metric": "error", "goal": "minimize"})
        times = {}  # (trial index, epoch) -> ms
        answers = {}
        for k, curve in ((1, good), (2, bad)):
            trial = bdtest.suggest(d, study["id"])[0]
            for n in range(1, N + 1):
                t0 = time.perf_counter()
                st, body, _ = c.request("POST", "/v1/trials/%d/measurements" % trial["id"],
                                        {"step": n, "value": curve(n)})
                times[(k, n)] = (time.perf_counter() - t0) * 1e3
                if st != 200:
                    raise SystemExit("measurement: %d %r" % (st, body))
                answers[(k, n)] = body
                if body.get("action") == "stop":
                    break
            else:
                st, body, _ = c.request("POST", "/v1/trials/%d/complete" % trial["id"], {"value": curve(N)})
                if st != 200:
                    raise SystemExit("complete: %d %r" % (st, body))
        others = [ms for (k, n), ms in times.items() if n != N0]
        print("measurement requests: %d; median without the solve %.2f ms, max %.2f ms"
              % (len(times), statistics.median(others), max(others)))
        print("trial 1, epoch %d (no completed trial yet, so no solve): %.2f ms" % (N0, times[(1, N0)]))
        print("trial 2, epoch %d (the BOS solve): %.2f ms" % (N0, times[(2, N0)]))
        print("load average:", " ".join("%.2f" % x for x in os.getloadavg()))
        stop = [(kn, a) for kn, a in answers.items() if a.get("action") == "stop"]
        for (k, n), a in stop:
            print("trial %d stopped at epoch %d (%.2f ms): %s" % (k, n, times[(k, n)], a.get("reason")))
        st, body, _ = c.request("GET", "/v1/studies/%d" % study["id"])
        state = body["scheduler"]["state"]
        print("bos:", state["bos"], "observations:", state["observations"])
    finally:
        d.stop()


if __name__ == "__main__":
    main()
