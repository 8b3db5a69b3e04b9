#!/usr/bin/python3
"""million_trials.py: one study grown to a million trials (issue 18, item 4).

    tests/bench/million_trials.py BANDITD [--trials 1000000] [--scheduler random|hyperband]
        [--threads 8] [--latency-calls 1000] [--note TEXT] [daemon flags...]

Starts the daemon (tests/integration/bdtest.py; flags the script does not
know go to the daemon, --log-level warn unless given) and creates one study
(random search, or infinite-horizon Hyperband over epochs 1..27: the
finite one ends after its brackets). --threads
workers then loop: suggest count=50, complete each trial with a random
value, until the study holds --trials trials. Measured:

- a suggest (count=1, completed at once) p50 / p90 / p99 over --latency-calls
  calls (1,000 by default: over 200, the p99 is the second-worst call) when
  the study holds 1,000 trials and again at the end;
- the daemon's RSS at the end;
- GET /v1/studies/{id}/history?points=200 and the whole CSV export
  (GET /v1/studies/{id}/trials.csv), their times and the daemon's peak RSS
  while they run (sampled every 20 ms);
- a restart: time to /healthz, then the first suggest (it replays the
  study: studies load on first use), its time, and RSS after.

Prints one JSON line at the end. Python standard library only; exit 1 if
the daemon dies."""

import argparse
import collections
import http.client
import json
import os
import random
import re
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import bdtest  # noqa: E402


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024


def pct(xs, q):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3, 3)


class Peak:
    """Samples the daemon's RSS every 20 ms while a block runs."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0.0, threading.Event()

    def __enter__(self):
        def run():
            while not self.stop.is_set():
                self.peak = max(self.peak, rss_mb(self.pid))
                time.sleep(0.02)
        self.t = threading.Thread(target=run)
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()


def study_body(scheduler):
    body = {"name": "million", "objective": {"goal": "minimize"}, "seed": 1,
            "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1},
                           {"name": "k", "type": "categorical", "choices": ["a", "b", "c"]}]}
    if scheduler == "random":
        body["scheduler"] = {"name": "random"}
    elif scheduler == "asha":
        body["resource"] = {"name": "epochs", "min": 1, "max": 27, "integer": True}
        body["scheduler"] = {"name": "asha"}
    else:
        body["resource"] = {"name": "epochs", "min": 1, "max": 27, "integer": True}
        body["scheduler"] = {"name": "hyperband", "options": {"mode": "infinite"}}
    return body


def suggest_latency(d, sid, n):
    c = d.client(timeout=60)
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        st, body, _ = c.request("POST", "/v1/studies/%d/suggest" % sid, {"count": 1})
        times.append(time.monotonic() - t0)
        if st != 200:
            raise SystemExit("suggest: %d %r" % (st, body))
        for t in body["trials"]:
            c.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": random.random()})
    c.close()
    return {"n": n, "p50_ms": pct(times, 0.5), "p90_ms": pct(times, 0.9), "p99_ms": pct(times, 0.99)}


def fill(d, sid, target, threads, have=0):
    """Grows the study from have trials to at least target."""
    made = [have]
    ended = []
    lock = threading.Lock()
    errors = collections.Counter()  # by HTTP status (429: a busy study's backpressure)

    def work(i):
        c = d.client(timeout=120)
        rng = random.Random(i)
        while True:
            with lock:
                if made[0] >= target:
                    break
            st, body, _ = c.request("POST", "/v1/studies/%d/suggest" % sid, {"count": 50, "worker": "w%d" % i})
            if st != 200:
                with lock:
                    errors[str(st)] += 1
                time.sleep(0.1)
                continue
            if body.get("done"):
                ended.append(made[0])
                break
            for t in body["trials"]:
                st, _, _ = c.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": rng.random()})
                if st != 200:
                    with lock:
                        errors[str(st)] += 1
            with lock:
                made[0] += len(body["trials"])
        c.close()

    ws = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    t0 = time.monotonic()
    for w in ws:
        w.start()
    last = t0
    while any(w.is_alive() for w in ws):
        time.sleep(1)
        if time.monotonic() - last > 30:
            last = time.monotonic()
            print("  %d trials, %.0f s, RSS %.1f MB" % (made[0], last - t0, rss_mb(d.proc.pid)), flush=True)
    for w in ws:
        w.join()
    if ended:
        raise SystemExit("the study ended at %d trials" % ended[0])
    return made[0], time.monotonic() - t0, dict(errors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--trials", type=int, default=1000000)
    ap.add_argument("--scheduler", choices=("random", "hyperband", "asha"), default="random")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--latency-calls", type=int, default=1000)
    ap.add_argument("--note")
    a, daemon_flags = ap.parse_known_args()
    if not any(f.startswith("--log-level") for f in daemon_flags):
        daemon_flags += ["--log-level", "warn"]
    os.environ["BANDITD"] = os.path.abspath(a.binary)
    d = bdtest.Daemon(extra_args=tuple(daemon_flags))
    out = {"bench": "million_trials", "date": time.strftime("%Y-%m-%d %H:%MZ", time.gmtime()),
           "scheduler": a.scheduler, "note": a.note, "load_before": os.getloadavg()[0]}
    try:
        st, s, _ = d.request("POST", "/v1/studies", study_body(a.scheduler))
        if st != 201:
            raise SystemExit("create: %d %r" % (st, s))
        sid = s["id"]
        have, _, _ = fill(d, sid, 1000, a.threads)
        out["suggest_at_1k"] = suggest_latency(d, sid, a.latency_calls)
        made, secs, errors = fill(d, sid, a.trials, a.threads, have + a.latency_calls)
        out["fill"] = {"trials": made, "seconds": round(secs, 1), "errors": errors}
        print("filled %d trials in %.0f s (errors by status: %s)" % (made, secs, errors or "none"), flush=True)
        out["suggest_at_end"] = suggest_latency(d, sid, a.latency_calls)
        out["rss_end_mb"] = round(rss_mb(d.proc.pid), 1)
        c = d.client(timeout=600)
        with Peak(d.proc.pid) as p:
            t0 = time.monotonic()
            st, _, _ = c.request("GET", "/v1/studies/%d/history?points=200" % sid)
            out["history"] = {"status": st, "seconds": round(time.monotonic() - t0, 3)}
        out["history"]["rss_peak_mb"] = round(p.peak, 1)
        conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=600)
        with Peak(d.proc.pid) as p:
            t0 = time.monotonic()
            conn.request("GET", "/v1/studies/%d/trials.csv" % sid, headers={"Authorization": "Bearer " + d.token})
            r = conn.getresponse()
            size = 0
            while True:
                chunk = r.read(1 << 20)
                if not chunk:
                    break
                size += len(chunk)
            out["csv"] = {"status": r.status, "bytes": size, "seconds": round(time.monotonic() - t0, 2)}
        out["csv"]["rss_peak_mb"] = round(p.peak, 1)
        conn.close()
        c.close()
        t0 = time.monotonic()
        d.restart(timeout=120)
        out["restart_s"] = round(time.monotonic() - t0, 2)
        out["rss_after_restart_mb"] = round(rss_mb(d.proc.pid), 1)
        c = d.client(timeout=600)
        with Peak(d.proc.pid) as p:
            t0 = time.monotonic()
            st, _, _ = c.request("POST", "/v1/studies/%d/suggest" % sid, {"count": 1})
            out["first_suggest_after_restart"] = {"status": st, "seconds": round(time.monotonic() - t0, 2)}
        out["first_suggest_after_restart"]["rss_peak_mb"] = round(p.peak, 1)
        out["rss_after_load_mb"] = round(rss_mb(d.proc.pid), 1)
        c.close()
        out["load_after"] = os.getloadavg()[0]
        print(json.dumps(out), flush=True)
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
