#!/usr/bin/python3
"""replay_latency: suggest/complete latency of banditd at about 1,000 and about
100,000 trials in one study.

For each scheduler (random, asha, hyperband by default) one study of the
replay space (arch int 0..344, epochs 1..50) is driven by one keep-alive
client to --trials trials (or further, until the last window is full). Inside
a window [c - w/2, c + w/2) of the study's trial count around each checkpoint
c (default 1,000 and 100,000, w = 1,000) the client keeps --inflight (8)
trials running: it completes the oldest with its recorded val_loss at its
budget (a diverged row completes with null) and asks for one new trial
(count 1); every call's latency (request sent to answer read, client side) is
recorded. Between the windows it fills faster: it completes every running
trial, then asks for up to --fill (100) trials in one suggest. Nothing is
trained, so the daemon is the bottleneck. Written per window and call kind:
p50/p99/p99.9/max; for the whole run: throughput and the latency of every
complete call (the same call in both modes).

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
from replay_common import Client, Table, study_body  # noqa: E402
from replay_daemon import METHODS, parse_list  # noqa: E402


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def drive(client, table, sched, options, total, checkpoints, window, inflight, fill):
    name = "latency-%s-%d" % (sched, os.getpid())
    sid = client.call("POST", "/v1/studies", study_body(name, sched, options, 7))["id"]
    lat = {c: collections.defaultdict(list) for c in checkpoints}
    allcompletes = []
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

    def fill_count():
        """Suggest count outside the windows: up to fill, never into a window."""
        if win() is not None:
            return 1
        nxt = [c - window // 2 for c in checkpoints if c - window // 2 > created]
        room = (min(nxt) if nxt else total) - created
        return max(1, min(fill, room, total - created))

    def timed(kind, method, path, body):
        w = win()
        t = time.perf_counter()
        r = client.call(method, path, body)
        dt = time.perf_counter() - t
        if kind == "complete":
            allcompletes.append(dt)
        if w is not None:
            w[kind].append(dt)
        return r

    def complete_oldest():
        tr = running.popleft()
        b = int(round(tr["budget"]))
        arch = tr["config"]["arch"]
        L = table.length(arch)
        v = table.val[arch][b - 1] if b <= L else None
        body = {"value": v} if v is not None else {"value": None, "reason": "diverged"}
        timed("complete", "POST", "/v1/trials/%d/complete" % tr["id"], body)

    total = max(total, max(checkpoints) + window // 2)
    while created < total:
        n = fill_count()
        if n > 1:       # filling: finish everything running, then take a batch
            while running:
                complete_oldest()
        elif len(running) >= inflight or (running and waits):
            complete_oldest()
            waits = 0
        r = timed("suggest", "POST", "/v1/studies/%d/suggest" % sid, {"worker": "lat", "count": n})
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
           "loadavg_1min": [load0, os.getloadavg()[0]], "completes": len(allcompletes),
           "complete_mean_ms": 1e3 * sum(allcompletes) / len(allcompletes),
           "complete_p50_ms": 1e3 * pct(allcompletes, 50), "complete_p99_ms": 1e3 * pct(allcompletes, 99),
           "complete_p999_ms": 1e3 * pct(allcompletes, 99.9), "complete_max_ms": 1e3 * max(allcompletes),
           "completes_over_10ms": sum(1 for x in allcompletes if x > 0.01), "windows": {}}
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
    ap.add_argument("--checkpoints", default=None, help="trial counts to measure around (default 1000,TRIALS)")
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--inflight", type=int, default=8, help="running trials kept inside the windows")
    ap.add_argument("--fill", type=int, default=100, help="suggest count between the windows (1..100)")
    ap.add_argument("--table", default=None)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    table = Table(a.table) if a.table else Table()
    client = Client(a.url, open(a.token_file).read().strip())
    checkpoints = parse_list(a.checkpoints, int) if a.checkpoints else sorted({min(1000, a.trials), a.trials})
    res = []
    for sched in parse_list(a.schedulers):
        _, options, _ = METHODS[sched]
        r = drive(client, table, sched, options, a.trials, checkpoints, a.window, a.inflight, a.fill)
        res.append(r)
        print("latency %-10s %d trials in %.1f s (%.0f trials/s); every complete: mean %.3f p50 %.3f p99 %.3f "
              "p99.9 %.1f max %.0f ms, %d over 10 ms" %
              (sched, r["trials"], r["seconds"], r["trials_per_s"], r["complete_mean_ms"], r["complete_p50_ms"],
               r["complete_p99_ms"], r["complete_p999_ms"], r["complete_max_ms"], r["completes_over_10ms"]),
              file=sys.stderr)
        for c, w in r["windows"].items():
            print("   ~%s trials: %s" % (c, "  ".join("%s p50 %.3f p99 %.3f ms" % (k, v["p50_ms"], v["p99_ms"])
                                                   for k, v in sorted(w.items()))), file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump({"runs": res, "window": a.window, "inflight": a.inflight, "fill": a.fill}, f)


if __name__ == "__main__":
    main()
