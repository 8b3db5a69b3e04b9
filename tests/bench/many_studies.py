#!/usr/bin/python3
"""many_studies.py: what a daemon holding very many studies costs in memory,
start-up and first-suggest time, and what one user's huge studies cost
(issue 20).

    tests/bench/many_studies.py BANDITD [--studies 100000] [--users 100]
        [--threads 8] [--note TEXT] [daemon flags...]

Starts the daemon (tests/integration/bdtest.py; flags the script does not
know go to the daemon, --log-level warn unless given). The admin creates
--users non-admin users; --threads threads (one keep-alive connection
each) create --studies studies spread round-robin over them, each tiny
(one float parameter; two for gp_ucb). --active (1%) of them, chosen at
random, are "active": half hyperband (epochs 1..27, eta 3), half gp_ucb,
each then given 30 completed trials (suggest + complete); the others are
random search with 0, 1 or 2 completed trials. Printed: the creation rate
(studies/s), then the feeding rate.

Then: the daemon's RSS (VmRSS, right away and 12 s later, once the reaper
gave freed heap back), a restart on the same database (SIGTERM; then the
start-up time, from exec until GET /healthz answers, polled every 5 ms),
the RSS after the restart, the first suggest to --cold (200) studies
picked at random (cold: not touched since the restart; p50/p99/max), the
first suggest to 10 hyperband and 10 gp_ucb studies, and one random-search
study's suggest latency over --warm (200) calls after a first one (each
trial completed after its timed suggest).

Last, one user's huge studies: a new non-admin user creates --huge (20)
studies of 8 categorical parameters with 10,000 choices each (about 860 kB
of JSON each; when that exceeds the daemon's 1 MiB default and no
--max-body-bytes is given, the script passes one that fits). Refused
studies (413, 400, 403, ...) are counted by status. Printed: the daemon's
peak RSS while they are created (VmRSS sampled every 20 ms, and VmHWM),
the RSS after, and after another restart.

Clients honour a 429's Retry-After (counted). The last line is one JSON
object with every figure. Exit status: 0 done, 1 the daemon died or
failed to (re)start. Python standard library only."""

import argparse
import collections
import http.client
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

DEFAULT_MAX_BODY = 1048576  # server/config.c, --max-body-bytes
SETTLE = 12.0  # seconds: the reaper gives freed heap back every 10 s


class DaemonDied(Exception):
    pass


def study_body(i, kind):
    body = {"name": "s%d" % i, "seed": i, "objective": {"goal": "minimize"},
            "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
            "scheduler": {"name": "random", "options": {}}}
    if kind == "hyperband":
        body["resource"] = {"name": "epochs", "min": 1, "max": 27, "integer": True}
        body["scheduler"] = {"name": "hyperband", "options": {"eta": 3}}
    elif kind == "gp_ucb":
        body["parameters"].append({"name": "y", "type": "float", "low": 0, "high": 1})
        body["scheduler"] = {"name": "gp_ucb", "options": {}}
    return body


def huge_body(j, params, choices):
    body = {"name": "huge-%d" % j, "seed": j, "objective": {"goal": "minimize"},
            "parameters": [{"name": "c%d" % k, "type": "categorical",
                            "choices": ["c%d-%05d" % (k, n) for n in range(choices)]} for k in range(params)],
            "scheduler": {"name": "random", "options": {}}}
    return json.dumps(body, separators=(",", ":")).encode()


def loss(config, budget=None):
    v = sum((x - 0.3) ** 2 for x in config.values() if isinstance(x, (int, float)))
    return v + (1.0 / budget if budget else 0.0)


def feed(api, sid, token, n, stats):
    """Suggests and completes n trials of study sid; returns how many completed."""
    done = waits = 0
    while done < n:
        st, b, _, dt = api.call("POST", "/v1/studies/%d/suggest" % sid, {"worker": "feed"}, token=token)
        stats["calls"] += 1
        if st != 200:
            stats["errors"] += 1
            return done
        if not b["trials"]:
            if b.get("done") or waits > 100:
                return done
            waits += 1
            time.sleep(min(1.0, b.get("retry_after_ms", 50) / 1e3))
            continue
        t = b["trials"][0]
        st, r, _, _ = api.call("POST", "/v1/trials/%d/complete" % t["id"],
                               {"value": loss(t["config"], t.get("budget"))}, token=token)
        stats["calls"] += 1
        if st != 200:
            stats["errors"] += 1
            return done
        done += 1
    return done


def parallel(n_threads, work):
    """Runs work(t) in n_threads threads; returns their results."""
    out = [None] * n_threads

    def run(t):
        out[t] = work(t)
    ths = [threading.Thread(target=run, args=(t,), daemon=True) for t in range(n_threads)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    return out


def stop_daemon(d, timeout=600.0):
    """SIGTERM and wait; returns the seconds it took."""
    t0 = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    d.proc.wait(timeout)
    d._closed()
    if d._client is not None:
        d._client.close()
    return time.monotonic() - t0


def timed_start(d, timeout=1800.0):
    """Starts d; returns the seconds from just before exec to the first
    GET /healthz answered 200 (polled every 5 ms)."""
    hit, stop = [], threading.Event()

    def poll():
        while not stop.is_set():
            try:
                c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=2)
                c.request("GET", "/healthz")
                r = c.getresponse()
                r.read()
                c.close()
                if r.status == 200:
                    hit.append(time.monotonic())
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.005)
    th = threading.Thread(target=poll, daemon=True)
    t0 = time.monotonic()
    th.start()
    try:
        d.start(timeout)
    except AssertionError as e:
        stop.set()
        raise DaemonDied("restart failed: %s" % e)
    th.join(5)
    stop.set()
    return (hit[0] if hit else time.monotonic()) - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("binary", help="the banditd binary")
    ap.add_argument("--studies", type=int, default=100000, help="studies created (default 100000)")
    ap.add_argument("--users", type=int, default=100, help="users they are spread over (default 100)")
    ap.add_argument("--active", type=float, default=0.01, help="fraction of active studies (default 0.01)")
    ap.add_argument("--active-trials", type=int, default=30, help="completed trials per active study (default 30)")
    ap.add_argument("--threads", type=int, default=8, help="client threads (default 8)")
    ap.add_argument("--cold", type=int, default=200, help="cold studies given a first suggest (default 200)")
    ap.add_argument("--warm", type=int, default=200, help="timed suggests to one warm study (default 200)")
    ap.add_argument("--huge", type=int, default=20, help="one user's huge studies (default 20)")
    ap.add_argument("--huge-params", type=int, default=8, help="categorical parameters of a huge study (default 8)")
    ap.add_argument("--huge-choices", type=int, default=10000, help="choices of each (default 10000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--note", help="free text stored in the JSON result (machine load, ...)")
    args, daemon_flags = ap.parse_known_args()
    if not any(f.startswith("--log-level") for f in daemon_flags):
        daemon_flags = ["--log-level", "warn"] + daemon_flags
    huge_size = len(huge_body(0, args.huge_params, args.huge_choices))
    if huge_size > DEFAULT_MAX_BODY and not any(f.startswith("--max-body-bytes") for f in daemon_flags):
        daemon_flags += ["--max-body-bytes", str(huge_size + 65536)]

    rng = random.Random(args.seed)
    res = fc.header("many_studies", args.binary, args.note)
    res["daemon_flags"] = daemon_flags
    res["config"] = {"studies": args.studies, "users": args.users, "active": args.active,
                     "active_trials": args.active_trials, "threads": args.threads}
    d = fc.start_daemon(args.binary, daemon_flags)
    print("banditd pid %d on port %d (%s), %s" % (d.proc.pid, d.port, " ".join(daemon_flags), res["binary_commit"]))
    try:
        return run(args, d, rng, res, huge_size)
    except DaemonDied as e:
        res["daemon_died"] = str(e)
        print("banditd died: %s; log tail:\n%s" % (e, d.log_tail(40)))
        print(json.dumps(res))
        return 1


def run(args, d, rng, res, huge_size):
    def alive(what):
        if not d.running():
            raise DaemonDied("during %s (exit status %r)" % (what, d.proc.returncode))

    t0 = time.monotonic()
    tokens = parallel(min(args.threads, args.users), lambda t: [
        (u, fc.make_user(d, "u%d" % u)) for u in range(t, args.users, min(args.threads, args.users))])
    tokens = dict(x for part in tokens for x in part)
    print("%d users with a token each in %.1f s" % (args.users, time.monotonic() - t0))

    n = args.studies
    active = set(rng.sample(range(n), int(round(n * args.active))))
    kinds = ["random"] * n
    for j, i in enumerate(sorted(active)):
        kinds[i] = "hyperband" if j % 2 == 0 else "gp_ucb"
    trials = [args.active_trials if i in active else rng.randint(0, 2) for i in range(n)]
    ids = [None] * n
    n429 = collections.Counter()
    progress = {"created": 0}
    T = args.threads

    def create(t):
        api, errs = fc.Api(d.port, None, timeout=300), collections.Counter()
        for i in range(t, n, T):
            st, b, _, _ = api.call("POST", "/v1/studies", study_body(i, kinds[i]), token=tokens[i % args.users])
            if st == 201:
                ids[i] = b["id"]
            else:
                errs[str(st)] += 1
                if sum(errs.values()) <= 3:
                    print("  create s%d: %s %s" % (i, st, str(b)[:200]))
            progress["created"] += 1
        n429["create"] += api.n429
        api.close()
        return errs

    def report_progress(stop, label, key, total):
        last = time.monotonic()
        while not stop.wait(1.0):
            if time.monotonic() - last >= 30:
                last = time.monotonic()
                print("  %s: %d / %d, %.0f s, RSS %s MB" % (label, progress[key], total, last - t0,
                                                          fc.mb(fc.rss_kb(d.proc.pid))), flush=True)
                if not d.running():
                    return

    t0 = time.monotonic()
    stop = threading.Event()
    threading.Thread(target=report_progress, args=(stop, "created", "created", n), daemon=True).start()
    errs = collections.Counter()
    for e in parallel(T, create):
        errs.update(e)
    stop.set()
    create_s = time.monotonic() - t0
    alive("creation")
    created = sum(1 for x in ids if x is not None)
    res["create"] = {"created": created, "seconds": round(create_s, 1), "studies_per_s": round(created / create_s, 1),
                     "errors": dict(errs), "db_mb": round(fc.db_bytes(d.db_path) / 2**20, 1)}
    print("created %d studies in %.1f s: %.0f studies/s (errors %s)"
          % (created, create_s, created / create_s, dict(errs) or 0))

    progress["fed"] = 0

    def feed_all(t):
        api, stats = fc.Api(d.port, None, timeout=300), collections.Counter()
        for i in range(t, n, T):
            if ids[i] is not None and trials[i]:
                stats["trials"] += feed(api, ids[i], tokens[i % args.users], trials[i], stats)
            progress["fed"] += 1
        n429["feed"] += api.n429
        api.close()
        return stats

    t0 = time.monotonic()
    stop = threading.Event()
    threading.Thread(target=report_progress, args=(stop, "fed", "fed", n), daemon=True).start()
    fed = collections.Counter()
    for s in parallel(T, feed_all):
        fed.update(s)
    stop.set()
    feed_s = time.monotonic() - t0
    alive("feeding")
    res["feed"] = {"trials": fed["trials"], "calls": fed["calls"], "errors": fed["errors"],
                   "seconds": round(feed_s, 1), "calls_per_s": round(fed["calls"] / feed_s, 1),
                   "active_studies": len(active), "db_mb": round(fc.db_bytes(d.db_path) / 2**20, 1)}
    print("fed %d trials (%d calls, %d errors) in %.1f s: %.0f calls/s"
          % (fed["trials"], fed["calls"], fed["errors"], feed_s, fed["calls"] / feed_s))

    mem = res["memory"] = {"rss_mb": fc.mb(fc.rss_kb(d.proc.pid))}
    time.sleep(SETTLE)
    mem["rss_settled_mb"] = fc.mb(fc.rss_kb(d.proc.pid))
    mem["hwm_mb"] = fc.mb(fc.hwm_kb(d.proc.pid))
    alive("settling")
    mem["shutdown_s"] = round(stop_daemon(d), 3)
    mem["startup_s"] = round(timed_start(d), 3)
    mem["rss_after_restart_mb"] = fc.mb(fc.rss_kb(d.proc.pid))
    time.sleep(SETTLE)
    mem["rss_after_restart_settled_mb"] = fc.mb(fc.rss_kb(d.proc.pid))
    alive("restart")
    print("RSS %s MB (%s MB %.0f s later, peak %s MB); SIGTERM took %.2f s; restart: /healthz after %.3f s, "
          "RSS %s MB (%s MB %.0f s later)"
          % (mem["rss_mb"], mem["rss_settled_mb"], SETTLE, mem["hwm_mb"], mem["shutdown_s"], mem["startup_s"],
             mem["rss_after_restart_mb"], mem["rss_after_restart_settled_mb"], SETTLE))

    api = fc.Api(d.port, None, timeout=300)
    live = [i for i in range(n) if ids[i] is not None]
    randoms = [i for i in live if kinds[i] == "random"]
    warm_i = rng.choice(randoms)
    cold = rng.sample([i for i in live if i != warm_i], min(args.cold, len(live) - 1))
    cold_set = set(cold)

    def first_suggests(indices):
        lat, errors, by_kind = [], 0, collections.defaultdict(list)
        for i in indices:
            st, b, _, dt = api.call("POST", "/v1/studies/%d/suggest" % ids[i], {"worker": "cold"},
                                    token=tokens[i % args.users])
            if st != 200:
                errors += 1
                continue
            lat.append(dt)
            by_kind[kinds[i]].append(dt)
        return lat, errors, by_kind

    lat, errors, by_kind = first_suggests(cold)
    res["cold"] = dict(fc.lat_summary(lat), errors=errors,
                       by_kind={k: fc.lat_summary(v) for k, v in sorted(by_kind.items())})
    extra = []
    for k in ("hyperband", "gp_ucb"):
        pool = [i for i in live if kinds[i] == k and i not in cold_set]
        extra += rng.sample(pool, min(10, len(pool)))
    lat2, errors2, by_kind2 = first_suggests(extra)
    res["cold_active"] = {k: fc.lat_summary(v) for k, v in sorted(by_kind2.items())}
    res["cold_active"]["errors"] = errors2
    print("first suggest to %d cold studies: p50 %s ms, p99 %s ms, max %s ms, errors %d; "
          "10 hyperband: p50 %s ms; 10 gp_ucb: p50 %s ms"
          % (len(cold), res["cold"]["p50_ms"], res["cold"]["p99_ms"], res["cold"]["max_ms"], errors,
             res["cold_active"].get("hyperband", {}).get("p50_ms"), res["cold_active"].get("gp_ucb", {}).get("p50_ms")))

    tok = tokens[warm_i % args.users]
    warm, werr = [], 0
    for j in range(args.warm + 1):
        st, b, _, dt = api.call("POST", "/v1/studies/%d/suggest" % ids[warm_i], {"worker": "warm"}, token=tok)
        if st != 200 or not b["trials"]:
            werr += 1
            continue
        if j:
            warm.append(dt)
        api.call("POST", "/v1/trials/%d/complete" % b["trials"][0]["id"], {"value": 0.5}, token=tok)
    res["warm"] = dict(fc.lat_summary(warm), errors=werr)
    print("warm study's suggest over %d calls: p50 %s ms, p99 %s ms, max %s ms"
          % (len(warm), res["warm"]["p50_ms"], res["warm"]["p99_ms"], res["warm"]["max_ms"]))
    mem["rss_after_suggests_mb"] = fc.mb(fc.rss_kb(d.proc.pid))
    n429["measure"] += api.n429
    api.close()
    alive("cold and warm suggests")

    huge = res["huge"] = {"studies": args.huge, "params": args.huge_params, "choices": args.huge_choices,
                          "body_kb": round(huge_size / 1024, 1)}
    tok = fc.make_user(d, "huge")
    huge["rss_before_mb"] = fc.mb(fc.rss_kb(d.proc.pid))
    samples, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            v = fc.rss_kb(d.proc.pid)
            if v:
                samples.append(v)
            time.sleep(0.02)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    api = fc.Api(d.port, tok, timeout=300)
    statuses, times = collections.Counter(), []
    for j in range(args.huge):
        st, b, _, dt = api.call("POST", "/v1/studies", raw=huge_body(j, args.huge_params, args.huge_choices))
        statuses[str(st)] += 1
        times.append(dt)
        if st != 201 and statuses[str(st)] == 1:
            print("  huge study %d: %s %s" % (j, st, str(b)[:200]))
    stop.set()
    sampler.join()
    n429["huge"] += api.n429
    api.close()
    alive("huge studies")
    huge.update(statuses=dict(statuses), created=statuses.get("201", 0),
                refused=sum(v for k, v in statuses.items() if k != "201"),
                create_ms=fc.lat_summary(times), rss_peak_mb=fc.mb(max(samples) if samples else None),
                hwm_mb=fc.mb(fc.hwm_kb(d.proc.pid)), rss_after_mb=fc.mb(fc.rss_kb(d.proc.pid)))
    time.sleep(SETTLE)
    huge["rss_after_settled_mb"] = fc.mb(fc.rss_kb(d.proc.pid))
    huge["shutdown_s"] = round(stop_daemon(d), 3)
    huge["startup_s"] = round(timed_start(d), 3)
    huge["rss_after_restart_mb"] = fc.mb(fc.rss_kb(d.proc.pid))
    time.sleep(SETTLE)
    huge["rss_after_restart_settled_mb"] = fc.mb(fc.rss_kb(d.proc.pid))
    huge["db_mb"] = round(fc.db_bytes(d.db_path) / 2**20, 1)
    alive("the last restart")
    print("%d huge studies (%.0f kB each): statuses %s, %s ms each (p50); RSS %s MB before, peak %s MB, "
          "after %s MB (%s MB settled); restart %.3f s, RSS %s MB (%s MB settled)"
          % (args.huge, huge["body_kb"], dict(statuses), huge["create_ms"]["p50_ms"], huge["rss_before_mb"],
             huge["rss_peak_mb"], huge["rss_after_mb"], huge["rss_after_settled_mb"], huge["startup_s"],
             huge["rss_after_restart_mb"], huge["rss_after_restart_settled_mb"]))
    res["n429"] = dict(n429)
    stop_daemon(d)
    res["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
