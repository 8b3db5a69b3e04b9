#!/usr/bin/python3
"""soak_studies.py: does the daemon's memory stay flat while studies keep
coming (issue 20)?

    tests/bench/soak_studies.py BANDITD [--minutes 60] [--threads 4]
        [--every 150] [--feed 30] [--note TEXT] [daemon flags...]

Starts the daemon (tests/integration/bdtest.py; flags the script does not
know go to the daemon, --log-level warn unless given). The admin creates
one non-admin user; --threads threads (one keep-alive connection and one
random-search study each) loop suggest -> complete for --minutes. Every
--every (150) completed random-search trials, the thread that completed
the 150th creates a new model-based study, hyperband, asha and gp_ucb in
turn (epochs 1..27 and eta 3 for the first two; two float parameters for
gp_ucb), and feeds it --feed (30) trials (suggest + complete) before going
back to its loop. A 429 is counted and the call sent again after its
Retry-After; any other non-2xx answer or failed connection is an error.

Printed: the daemon's RSS at 1/6 of the run and at the end (and 12 s
later, once the reaper gave freed heap back), its largest sample (every
5 s), the random-search suggest latency in the first and last sixth, the
trials and studies made, errors, and the database's size (with its WAL).
It must also work with --minutes 3. The last line is one JSON object with
every figure.

Exit status: 0 done, 1 the daemon died. Python standard library only."""

import argparse
import collections
import json
import os
import random
import signal
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fair_common as fc  # noqa: E402

KINDS = ("hyperband", "asha", "gp_ucb")
SETTLE = 12.0  # seconds: the reaper gives freed heap back every 10 s


def model_body(k):
    kind = KINDS[k % len(KINDS)]
    body = {"name": "m%d" % k, "seed": k, "objective": {"goal": "minimize"},
            "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
            "scheduler": {"name": kind, "options": {"eta": 3}}}
    if kind == "gp_ucb":
        body["parameters"].append({"name": "y", "type": "float", "low": 0, "high": 1})
        body["scheduler"]["options"] = {}
    else:
        body["resource"] = {"name": "epochs", "min": 1, "max": 27, "integer": True}
    return kind, body


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("binary", help="the banditd binary")
    ap.add_argument("--minutes", type=float, default=60.0, help="length of the run (default 60)")
    ap.add_argument("--threads", type=int, default=4, help="random-search loader threads (default 4)")
    ap.add_argument("--every", type=int, default=150,
                    help="completed random-search trials between two new model-based studies (default 150)")
    ap.add_argument("--feed", type=int, default=30, help="trials each model-based study is given (default 30)")
    ap.add_argument("--note", help="free text stored in the JSON result (machine load, ...)")
    args, daemon_flags = ap.parse_known_args()
    if not any(f.startswith("--log-level") for f in daemon_flags):
        daemon_flags = ["--log-level", "warn"] + daemon_flags
    # One user creates ~17 studies a second here: the default quota of
    # 10,000 live studies was reached after ~45 minutes (403s counted as
    # errors). The soak measures memory, not the quota.
    if not any(f.startswith("--max-studies-per-user") for f in daemon_flags):
        daemon_flags = ["--max-studies-per-user", "1000000"] + daemon_flags

    res = fc.header("soak_studies", args.binary, args.note)
    res["daemon_flags"] = daemon_flags
    res["config"] = {"minutes": args.minutes, "threads": args.threads, "every": args.every, "feed": args.feed}
    d = fc.start_daemon(args.binary, daemon_flags)
    pid = d.proc.pid
    print("banditd pid %d on port %d (%s), %s" % (pid, d.port, " ".join(daemon_flags), res["binary_commit"]))
    tok = fc.make_user(d, "soak")

    total = args.minutes * 60.0
    lock = threading.Lock()
    state = {"completed": 0, "models": 0}
    stop = threading.Event()
    t_start = [0.0]

    def loader(t):
        api = fc.Api(d.port, tok, timeout=120)
        rng = random.Random(t)
        errors, made, fed = collections.Counter(), collections.Counter(), collections.Counter()
        lat = collections.defaultdict(list)  # sixth of the run -> suggest seconds

        def ok(st, what, body):
            if 200 <= st < 300:
                return True
            errors[what + " " + str(st)] += 1
            if sum(errors.values()) <= 3:
                print("  thread %d: %s -> %s %s" % (t, what, st, str(body)[:160]), flush=True)
            return False

        st, s, _, _ = api.call("POST", "/v1/studies", {
            "name": "load-%d" % t, "seed": t, "objective": {"goal": "minimize"},
            "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
            "scheduler": {"name": "random", "options": {}}})
        if not ok(st, "create random", s):
            return errors, made, fed, lat, api.n429
        path = "/v1/studies/%d/suggest" % s["id"]
        while not stop.is_set():
            st, b, _, dt = api.call("POST", path, {"worker": "load-%d" % t})
            if not ok(st, "suggest", b) or not b["trials"]:
                time.sleep(0.05)
                continue
            lat[min(5, int(6 * (time.monotonic() - t_start[0]) / total))].append(dt)
            st, r, _, _ = api.call("POST", "/v1/trials/%d/complete" % b["trials"][0]["id"], {"value": rng.random()})
            if not ok(st, "complete", r):
                continue
            with lock:
                state["completed"] += 1
                k = None
                if state["completed"] % args.every == 0:
                    k = state["models"]
                    state["models"] += 1
            if k is None:
                continue
            kind, body = model_body(k)
            st, m, _, _ = api.call("POST", "/v1/studies", body)
            if not ok(st, "create " + kind, m):
                continue
            made[kind] += 1
            n = waits = 0
            while n < args.feed and not stop.is_set():
                st, b, _, _ = api.call("POST", "/v1/studies/%d/suggest" % m["id"], {"worker": "feed"})
                if not ok(st, "suggest " + kind, b):
                    break
                if not b["trials"]:
                    if b.get("done") or waits > 100:
                        break
                    waits += 1
                    time.sleep(min(1.0, b.get("retry_after_ms", 50) / 1e3))
                    continue
                tr = b["trials"][0]
                v = sum((x - 0.3) ** 2 for x in tr["config"].values()) + 1.0 / tr["budget"]
                st, r, _, _ = api.call("POST", "/v1/trials/%d/complete" % tr["id"], {"value": v})
                if not ok(st, "complete " + kind, r):
                    break
                n += 1
            fed[kind] += n
        api.close()
        return errors, made, fed, lat, api.n429

    results = [None] * args.threads

    def run(t):
        results[t] = loader(t)
    ths = [threading.Thread(target=run, args=(t,), daemon=True) for t in range(args.threads)]
    t_start[0] = time.monotonic()
    for th in ths:
        th.start()
    rss_sixth, rss_max, series, died = None, 0, [], False
    next_sample = t_start[0]
    while True:
        now = time.monotonic()
        if now >= t_start[0] + total:
            break
        if not d.running():
            died = True
            break
        if now >= next_sample:
            v = fc.rss_kb(pid) or 0
            rss_max = max(rss_max, v)
            series.append((round(now - t_start[0]), fc.mb(v)))
            next_sample += 5.0
        if rss_sixth is None and now >= t_start[0] + total / 6:
            rss_sixth = fc.rss_kb(pid)
            print("RSS at 1/6 of the run (%.0f s): %s MB, %d random-search trials, %d model-based studies"
                  % (now - t_start[0], fc.mb(rss_sixth), state["completed"], state["models"]), flush=True)
        time.sleep(0.2)
    stop.set()
    for th in ths:
        th.join(150)
    elapsed = time.monotonic() - t_start[0]
    died = died or not d.running()

    errors, made, fed, lat, n429 = collections.Counter(), collections.Counter(), collections.Counter(), \
        collections.defaultdict(list), 0
    for r in results:
        if r is None:
            continue
        errors.update(r[0])
        made.update(r[1])
        fed.update(r[2])
        for k, v in r[3].items():
            lat[k] += v
        n429 += r[4]
    res.update({"seconds": round(elapsed, 1), "random_trials": state["completed"],
                "random_trials_per_s": round(state["completed"] / elapsed, 1),
                "model_studies": dict(made), "model_trials": dict(fed),
                "errors": sum(errors.values()), "error_kinds": dict(errors.most_common(8)), "n429": n429,
                "suggest_first_sixth": fc.lat_summary(lat[0]), "suggest_last_sixth": fc.lat_summary(lat[5]),
                "rss_sixth_mb": fc.mb(rss_sixth), "rss_max_sample_mb": fc.mb(rss_max),
                "rss_series_mb": series[::max(1, len(series) // 30)]})
    if died:
        res["daemon_died"] = True
        print("banditd died (exit status %r); log tail:\n%s" % (d.proc.returncode, d.log_tail(40)))
        print(json.dumps(res))
        return 1
    res["rss_end_mb"] = fc.mb(fc.rss_kb(pid))
    time.sleep(SETTLE)
    res["rss_end_settled_mb"] = fc.mb(fc.rss_kb(pid))
    res["hwm_mb"] = fc.mb(fc.hwm_kb(pid))
    res["db_mb"] = round(fc.db_bytes(d.db_path) / 2**20, 1)
    t0 = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    rc = d.proc.wait(300)
    d._closed()
    res["shutdown_s"], res["exit_status"] = round(time.monotonic() - t0, 3), rc
    res["db_mb_after_exit"] = round(fc.db_bytes(d.db_path) / 2**20, 1)
    res["load_after"] = round(os.getloadavg()[0], 2)

    print("=== soak: %.1f min, %d threads, %s" % (elapsed / 60, args.threads, res["date"]))
    print("random-search trials %d (%.0f/s); model-based studies %s, their trials %s"
          % (state["completed"], res["random_trials_per_s"], dict(made), dict(fed)))
    print("random-search suggest: first sixth p50 %s ms p99 %s ms; last sixth p50 %s ms p99 %s ms"
          % (res["suggest_first_sixth"]["p50_ms"], res["suggest_first_sixth"]["p99_ms"],
             res["suggest_last_sixth"]["p50_ms"], res["suggest_last_sixth"]["p99_ms"]))
    print("RSS at 1/6: %s MB, at the end: %s MB (%s MB %.0f s later), largest sample %s MB, peak %s MB"
          % (res["rss_sixth_mb"], res["rss_end_mb"], res["rss_end_settled_mb"], SETTLE, res["rss_max_sample_mb"],
             res["hwm_mb"]))
    print("errors %d %s, 429s %d; database %s MB (%s MB after exit); SIGTERM: %.2f s, exit status %s"
          % (res["errors"], res["error_kinds"] or "", n429, res["db_mb"], res["db_mb_after_exit"],
             res["shutdown_s"], rc))
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
