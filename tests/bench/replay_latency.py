#!/usr/bin/python3
"""replay_latency: suggest/complete latency of banditd at about 1,000 and about
100,000 trials in one study.

For each scheduler (random, asha, hyperband by default) one study of the
replay space (arch int 0..344, epochs 1..50) is driven to --trials trials by
one keep-alive client that keeps --inflight trials running: it completes the
oldest running trial with its recorded val_loss at its budget (a diverged row
completes with null), then asks for one new trial (count 1). Nothing is
trained, so the daemon is the bottleneck. Every call's latency (request sent
to answer read, client side) is recorded while the study's trial count is in
a window [c - w/2, c + w/2) around each checkpoint c (default 1,000 and
100,000, w = 1,000); p50/p99/max per call kind are printed and written as JSON.

Usage: replay_latency.py --url 127.0.0.1:PORT --token-file DB.admin-token
       [--schedulers random,asha,hyperband] [--trials 100000] [--out lat.json]
"""

import argparse
import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_common import MAX_EPOCHS, Client, Table, study_body  # noqa: E402
from replay_daemon import METHODS, parse_list  # noqa: E402


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def drive(client, table, sched, options, total, checkpoints, window, inflight):
    name = "latency-%s-%d" % (sched, os.getpid())
    sid = client.call("POST", "/v1/studies", study_body(name, sched, options, 7))["id"]
    lat = {c: collections.defaultdict(list) for c in checkpoints}
    allcalls = []
    created = 0
    running = collections.deque()
    waits = 0
    t0 = time.time()
    load0 = os.getloadavg()[0]

    def win():
        for c in checkpoints:
            if c - window // 2 <= created < c + window // 2:
                return lat[c]
        return None

    def timed(kind, method, path, body):
        w = win()
        t = time.perf_counter()
        r = client.call(method, path, body)
        allcalls.append(time.perf_counter() - t)
        if w is not None:
            w[kind].append(time.perf_counter() - t)
        return r

    while created < total:
        if len(running) >= inflight or (running and waits):
            tr = running.popleft()
            b = int(round(tr["budget"]))
            arch = tr["config"]["arch"]
            L = table.length(arch)
            v = table.val[arch][b - 1] if b <= L else None
            body = {"value": v} if v is not None else {"value": None, "reason": "diverged"}
            timed("complete", "POST", "/v1/trials/%d/complete" % tr["id"], body)
            waits = 0
        r = timed("suggest", "POST", "/v1/studies/%d/suggest" % sid, {"worker": "lat", "count": 1})
        if r.get("trials"):
            running.extend(r["trials"])
            created += len(r["trials"])
        elif r.get("done"):
            break
        else:
            waits += 1
            if not running:
                raise SystemExit("%s: told to retry with nothing running after %d trials" % (sched, created))
    elapsed = time.time() - t0
    study = client.call("GET", "/v1/studies/%d" % sid)
    out = {"scheduler": sched, "options": options, "trials": created, "inflight": inflight,
           "seconds": elapsed, "trials_per_s": created / elapsed, "study_trials": study["trials"],
           "loadavg_1min": [load0, os.getloadavg()[0]], "calls": len(allcalls), "mean_ms": 1e3 * sum(allcalls) / len(allcalls),
           "p50_ms": 1e3 * pct(allcalls, 50), "p99_ms": 1e3 * pct(allcalls, 99),
           "p999_ms": 1e3 * pct(allcalls, 99.9), "max_ms": 1e3 * max(allcalls),
           "calls_over_10ms": sum(1 for x in allcalls if x > 0.01), "windows": {}}
    for c in checkpoints:
        out["windows"][str(c)] = {
            kind: {"n": len(xs), "mean_ms": 1e3 * sum(xs) / len(xs), "p50_ms": 1e3 * pct(xs, 50),
                   "p99_ms": 1e3 * pct(xs, 99), "p999_ms": 1e3 * pct(xs, 99.9), "max_ms": 1e3 * max(xs)}
            for kind, xs in lat[c].items() if xs}
    try:
        client.call("DELETE", "/v1/studies/%d" % sid)
    except Exception as e:  # noqa: BLE001 - a failed cleanup is only reported
        out["delete_error"] = str(e)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--schedulers", default="random,asha,hyperband")
    ap.add_argument("--trials", type=int, default=100000)
    ap.add_argument("--checkpoints", default="1000,100000")
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--inflight", type=int, default=8)
    ap.add_argument("--table", default=None)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    table = Table(a.table) if a.table else Table()
    client = Client(a.url, open(a.token_file).read().strip())
    checkpoints = parse_list(a.checkpoints, int)
    res = []
    for sched in parse_list(a.schedulers):
        _, options, _ = METHODS[sched]
        r = drive(client, table, sched, options, a.trials, checkpoints, a.window, a.inflight)
        res.append(r)
        print("latency %-10s %d trials in %.1f s (%.0f trials/s); all calls: mean %.3f p50 %.3f p99 %.3f "
              "p99.9 %.1f max %.0f ms, %d over 10 ms" %
              (sched, r["trials"], r["seconds"], r["trials_per_s"], r["mean_ms"], r["p50_ms"], r["p99_ms"],
               r["p999_ms"], r["max_ms"], r["calls_over_10ms"]), file=sys.stderr)
        for c, w in r["windows"].items():
            print("   ~%s trials: %s" % (c, "  ".join("%s p50 %.3f p99 %.3f ms" % (k, v["p50_ms"], v["p99_ms"])
                                                   for k, v in sorted(w.items()))), file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump({"runs": res, "window": a.window, "inflight": a.inflight}, f)


if __name__ == "__main__":
    main()
