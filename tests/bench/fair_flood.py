#!/usr/bin/python3
"""fair_flood.py: what one user's flood of slow suggests costs another user
of the same daemon (issue 20).

    tests/bench/fair_flood.py BANDITD [--duration 30] [--flood-threads 80]
        [--count K] [--note TEXT] [daemon flags...]

Starts the daemon (tests/integration/bdtest.py; flags the script does not
know go to the daemon, --log-level warn unless given). The admin creates
two non-admin users, A and B. A creates a gp_ucb study of --params (100)
float parameters and completes --trials (200) trials (the first 2 d are
random, so this is quick); the script then times A's suggest. gp_ucb caps
its model at 192 points, so a count=1 suggest stays near 0.3 s on the
2-core reference machine: unless --count is given, the flood asks for the
smallest count whose suggest takes at least --target (1 s), measured (the
calibration's trials are failed again, leaving no observation). Pass the
count a before-run printed to an after-run so both floods ask the same.

Then --flood-threads threads of A (one keep-alive connection each) send
that suggest to the study back to back for --duration seconds. They are
hostile: a 429 is counted and sent again after 50 ms, whatever its
Retry-After says; any other non-200 answer (or a failed connection) too.
From 1 s into the flood, user B calls every 250 ms in rotation GET
/v1/studies, GET /v1/me, and suggest + complete on its own random-search
study (a 429 is counted and the call sent again after its Retry-After; a
call's time runs from its first send to its final answer; a call that
fails or answers non-2xx, or gets no answer within --b-timeout, is an
error). From 2 s in, B's lease test: a study with lease_seconds 1, one
suggested trial never heartbeaten, GET /v1/trials/{id} every 100 ms until
its state is "expired": printed is the time from the lease's end to the
answer that showed it expired (and the trial's finished_at minus the
lease's end, the daemon's own figure).

At --duration the script waits for B's last call, counts A's answers by
status (200, 429, other), and sends SIGTERM while the flood still runs:
printed is how long the daemon took to exit (target < 15 s; after
--term-timeout, 300 s, it is SIGKILLed and the figure is null). The last
line is one JSON object with every figure (for tests/bench/README.md).

Exit status: 0 done, 1 the daemon died (or failed to start) before the
SIGTERM. Python standard library only."""

import argparse
import collections
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fair_common as fc  # noqa: E402


def build_study(api, params, trials):
    body = {"name": "flood-gp", "seed": 1,
            "parameters": [{"name": "p%d" % i, "type": "float", "low": 0, "high": 1} for i in range(params)],
            "objective": {"metric": "loss", "goal": "minimize"},
            "scheduler": {"name": "gp_ucb", "options": {}}}
    st, s, _, _ = api.call("POST", "/v1/studies", body)
    if st != 201:
        raise SystemExit("A's gp_ucb study: %d %r" % (st, s))
    done = 0
    while done < trials:
        st, b, _, _ = api.call("POST", "/v1/studies/%d/suggest" % s["id"],
                               {"worker": "build", "count": min(20, trials - done)})
        if st != 200 or not b["trials"]:
            raise SystemExit("building A's study: suggest %d %r" % (st, b))
        for t in b["trials"]:
            v = sum((x - 0.3) ** 2 for x in t["config"].values())
            st, r, _, _ = api.call("POST", "/v1/trials/%d/complete" % t["id"], {"value": v})
            if st != 200:
                raise SystemExit("building A's study: complete %d %r" % (st, r))
            done += 1
    return s


def timed_suggest(api, sid, count):
    """One suggest of `count`, its trials failed again; returns (seconds, trials)."""
    st, b, _, dt = api.call("POST", "/v1/studies/%d/suggest" % sid, {"worker": "calibrate", "count": count})
    if st != 200:
        raise SystemExit("calibration suggest: %d %r" % (st, b))
    for t in b["trials"]:
        api.call("POST", "/v1/trials/%d/fail" % t["id"], {"reason": "calibration"})
    return dt, len(b["trials"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("binary", help="the banditd binary")
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of flood (default 30)")
    ap.add_argument("--flood-threads", type=int, default=80, help="user A's threads (default 80)")
    ap.add_argument("--params", type=int, default=100, help="float parameters of A's study (default 100)")
    ap.add_argument("--trials", type=int, default=200, help="completed trials in A's study (default 200)")
    ap.add_argument("--count", type=int, help="count of A's suggests (default: the smallest taking --target)")
    ap.add_argument("--target", type=float, default=1.0, help="seconds one flood suggest should take (default 1)")
    ap.add_argument("--b-timeout", type=float, default=60.0, help="seconds user B waits for an answer (default 60)")
    ap.add_argument("--term-timeout", type=float, default=300.0,
                    help="seconds to wait for exit after SIGTERM before SIGKILL (default 300)")
    ap.add_argument("--note", help="free text stored in the JSON result (machine load, ...)")
    args, daemon_flags = ap.parse_known_args()
    if not any(f.startswith("--log-level") for f in daemon_flags):
        daemon_flags = ["--log-level", "warn"] + daemon_flags

    res = fc.header("fair_flood", args.binary, args.note)
    res["daemon_flags"] = daemon_flags
    d = fc.start_daemon(args.binary, daemon_flags)
    pid = d.proc.pid
    print("banditd pid %d on port %d (%s), %s" % (pid, d.port, " ".join(daemon_flags), res["binary_commit"]))
    tok_a, tok_b = fc.make_user(d, "flood-a"), fc.make_user(d, "benign-b")

    a = fc.Api(d.port, tok_a, timeout=600)
    t0 = time.monotonic()
    study = build_study(a, args.params, args.trials)
    res["a_study"] = {"params": args.params, "completed_trials": args.trials,
                      "build_s": round(time.monotonic() - t0, 2)}
    print("A's gp_ucb study %d: %d float parameters, %d completed trials in %.1f s"
          % (study["id"], args.params, args.trials, res["a_study"]["build_s"]))
    one = sorted(timed_suggest(a, study["id"], 1)[0] for _ in range(3))
    res["a_study"]["suggest_count1_s"] = round(one[1], 3)
    print("A's suggest count=1: %.3f s (median of 3; %s)" % (one[1], ", ".join("%.3f" % x for x in one)))
    if args.count:
        count = args.count
        dt, n = timed_suggest(a, study["id"], count)
    else:
        count, dt, n = 1, one[1], 1
        for _ in range(4):
            if dt >= args.target or count >= 100:
                break
            count = min(100, max(count + 1, math.ceil(count * args.target * 1.1 / dt)))
            dt, n = timed_suggest(a, study["id"], count)
    res["a_study"].update({"flood_count": count, "suggest_flood_count_s": round(dt, 3), "trials_per_answer": n})
    print("flood suggest: count=%d answers %d trials in %.3f s (alone)" % (count, n, dt))
    a.close()

    b = fc.Api(d.port, tok_b, timeout=args.b_timeout)
    plain = {"seed": 2, "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
             "objective": {"goal": "minimize"}, "scheduler": {"name": "random", "options": {}}}
    st, b_study, _, _ = b.call("POST", "/v1/studies", dict(plain, name="b-random"))
    st2, lease_study, _, _ = b.call("POST", "/v1/studies", dict(plain, name="b-lease", lease_seconds=1))
    if st != 201 or st2 != 201:
        raise SystemExit("B's studies: %d %r / %d %r" % (st, b_study, st2, lease_study))
    b.close()

    stop_flood, stop_b = threading.Event(), threading.Event()
    term_at = [None]  # monotonic time of the SIGTERM
    a_counts = [collections.Counter() for _ in range(args.flood_threads)]
    a_after = [collections.Counter() for _ in range(args.flood_threads)]
    a_other = [collections.Counter() for _ in range(args.flood_threads)]
    a_lat = [[] for _ in range(args.flood_threads)]
    suggest_path = "/v1/studies/%d/suggest" % study["id"]

    def flood(i):
        api = fc.Api(d.port, tok_a, timeout=600, benign=False)
        body = {"worker": "flood-%d" % i, "count": count}
        while not stop_flood.is_set():
            st, body_or_err, _, dt = api.call("POST", suggest_path, body)
            after = term_at[0] is not None and time.monotonic() > term_at[0]
            kind = "200" if st == 200 else "429" if st == 429 else "other"
            (a_after if after else a_counts)[i][kind] += 1
            if kind == "other" and not after:
                a_other[i][str(st) if st else str(body_or_err)[:60]] += 1
            if st == 200 and not after:
                a_lat[i].append(dt)
            if st != 200:
                time.sleep(0.05)
        api.close()

    b_lat = collections.defaultdict(list)
    b_err = collections.Counter()
    b_err_first = []
    b_api = fc.Api(d.port, tok_b, timeout=args.b_timeout)

    def b_call(kind, method, path, body=None):
        st, r, _, dt = b_api.call(method, path, body)
        b_lat[kind].append(dt)
        if not 200 <= st < 300:
            b_err[kind] += 1
            if len(b_err_first) < 5:
                b_err_first.append("%s -> %s %s" % (kind, st, str(r)[:120]))
            return None
        return r

    def benign():
        t_start, i = time.monotonic(), 0
        while not stop_b.is_set():
            op = i % 3
            if op == 0:
                b_call("GET /v1/studies", "GET", "/v1/studies")
            elif op == 1:
                b_call("GET /v1/me", "GET", "/v1/me")
            else:
                r = b_call("suggest", "POST", "/v1/studies/%d/suggest" % b_study["id"], {"worker": "b"})
                if r and r.get("trials"):
                    b_call("complete", "POST", "/v1/trials/%d/complete" % r["trials"][0]["id"], {"value": 0.5})
            i += 1
            wait = t_start + 0.25 * i - time.monotonic()
            if wait > 0:
                stop_b.wait(wait)

    lease = {}

    def lease_test():
        api = fc.Api(d.port, tok_b, timeout=args.b_timeout)
        st, r, _, dt = api.call("POST", "/v1/studies/%d/suggest" % lease_study["id"], {"worker": "b-lease"})
        lease["suggest_ms"] = round(1e3 * dt, 1)
        if st != 200 or not r.get("trials"):
            lease["error"] = "suggest %s %s" % (st, str(r)[:120])
            return
        t = r["trials"][0]
        end = t["lease_expires_at"]
        lease["answered_after_lease_end"] = time.time() > end
        polls = fails = 0
        while not stop_b.is_set():
            st, g, _, _ = api.call("GET", "/v1/trials/%d" % t["id"])
            polls += 1
            if st == 200 and g.get("state") == "expired":
                lease["seen_after_lease_end_s"] = round(time.time() - end, 3)
                if g.get("finished_at") is not None:
                    lease["finished_at_after_lease_end_s"] = round(g["finished_at"] - end, 3)
                break
            if st != 200:
                fails += 1
            stop_b.wait(0.1)
        else:
            lease["seen_after_lease_end_s"] = None
            lease["not_expired_after_s"] = round(time.time() - end, 3)
        lease.update(polls=polls, failed_polls=fails)

    rss_start = fc.rss_kb(pid)
    flooders = [threading.Thread(target=flood, args=(i,), daemon=True) for i in range(args.flood_threads)]
    t_flood = time.monotonic()
    for th in flooders:
        th.start()
    time.sleep(1.0)
    tb = threading.Thread(target=benign, daemon=True)
    tb.start()
    time.sleep(1.0)
    tl = threading.Thread(target=lease_test, daemon=True)
    tl.start()
    rss_peak = 0
    died = False
    while time.monotonic() < t_flood + args.duration:
        rss_peak = max(rss_peak, fc.rss_kb(pid) or 0)
        if not d.running():
            died = True
            break
        time.sleep(0.5)
    stop_b.set()
    t_b_end = time.monotonic()
    tb.join(args.b_timeout + 5)
    tl.join(args.b_timeout + 5)
    res["b_wait_for_last_call_s"] = round(time.monotonic() - t_b_end, 2)
    died = died or not d.running()

    counts, other, lat = collections.Counter(), collections.Counter(), []
    for c in a_counts:
        counts.update(c)
    for c in a_other:
        other.update(c)
    for xs in a_lat:
        lat += xs
    flood_s = time.monotonic() - t_flood
    res["flood"] = {"threads": args.flood_threads, "duration_s": args.duration, "until_sigterm_s": round(flood_s, 1),
                    "a_answers": {k: counts.get(k, 0) for k in ("200", "429", "other")},
                    "a_other": dict(other.most_common(8)), "a_200_latency": fc.lat_summary(lat),
                    "rss_start_mb": fc.mb(rss_start), "rss_peak_mb": fc.mb(rss_peak)}
    all_b = [x for xs in b_lat.values() for x in xs]
    res["b"] = dict(fc.lat_summary(all_b), slots=int((args.duration - 1.0) / 0.25), errors=sum(b_err.values()),
                    n429=b_api.n429,
                    retry_after_waited_s=round(b_api.waited, 1),
                    by_call={k: dict(fc.lat_summary(v), errors=b_err.get(k, 0)) for k, v in sorted(b_lat.items())})
    res["b_lease"] = lease

    if died:
        res["daemon_died"] = True
        rc = d.proc.returncode
        print("banditd died during the flood (exit status %r); log tail:\n%s" % (rc, d.log_tail(40)))
        stop_flood.set()
        print(json.dumps(res))
        return 1

    term_at[0] = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    try:
        rc = d.proc.wait(args.term_timeout)
        exit_s = round(time.monotonic() - term_at[0], 3)
        killed = False
    except subprocess.TimeoutExpired:
        d.proc.kill()
        rc = d.proc.wait()
        exit_s, killed = None, True
    stop_flood.set()
    for th in flooders:
        th.join(5)
    after = collections.Counter()
    for c in a_after:
        after.update(c)
    res["sigterm"] = {"exit_s": exit_s, "killed_after_s": args.term_timeout if killed else None,
                      "exit_status": rc, "a_answers_after": dict(after)}
    res["load_after"] = round(os.getloadavg()[0], 2)

    f = res["flood"]
    print("=== flood: %d threads of A, suggest count=%d, %.0f s (SIGTERM at %.1f s, after B's last call), %s"
          % (args.flood_threads, count, args.duration, flood_s, res["date"]))
    print("A's answers: 200: %d, 429: %d, other: %d %s; A's 200 latency p50 %s ms, max %s ms"
          % (f["a_answers"]["200"], f["a_answers"]["429"], f["a_answers"]["other"],
             f["a_other"] or "", f["a_200_latency"]["p50_ms"], f["a_200_latency"]["max_ms"]))
    print("B (every 250 ms: %d slots): %d calls, p50 %s ms, p95 %s ms, max %s ms, errors %d, 429s %d"
          % (res["b"]["slots"], res["b"]["n"], res["b"]["p50_ms"], res["b"]["p95_ms"], res["b"]["max_ms"], res["b"]["errors"],
             res["b"]["n429"]))
    for k, v in res["b"]["by_call"].items():
        print("  %-16s n=%d p50 %s ms p95 %s ms max %s ms errors %d"
              % (k, v["n"], v["p50_ms"], v["p95_ms"], v["max_ms"], v["errors"]))
    for e in b_err_first:
        print("  B error: %s" % e)
    print("B's lease test: %s" % json.dumps(lease))
    print("SIGTERM during the flood: %s (exit status %s)"
          % ("exited in %.2f s" % exit_s if exit_s is not None else "still running after %.0f s, SIGKILLed"
             % args.term_timeout, rc))
    print("RSS start %s MB, peak %s MB; load average %s -> %s"
          % (f["rss_start_mb"], f["rss_peak_mb"], res["load_before"], res["load_after"]))
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
