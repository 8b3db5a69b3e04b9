#!/usr/bin/python3
"""kill_storm.py: SIGKILL banditd again and again under load and check that no
acknowledged write is lost and no trial is left running.

    tests/bench/kill_storm.py --build build                # 100 kills, 32 workers, --sync normal then full
    tests/bench/kill_storm.py --build build --quick        # smoke: 5 kills, 8 workers, 4 studies

For each --sync mode: starts the real daemon (tests/integration/bdtest.py's
Daemon: free port, temporary database) with a short --lease-seconds, creates
--studies studies (random search and ASHA in turn), and runs --workers threads,
worker i on study i mod S, each looping suggest -> measurements -> complete.
Every POST carries a fresh Idempotency-Key; a request that gets no answer (the
daemon was killed) is retried with the same key until it gets one, across
restarts. Every acknowledged (2xx) write goes into a ledger: each trial handed
out (with its config), each measurement (step, value), each completion (value),
each "stop" answer. A worker also "dies" now and then (--abandon, per trial):
it drops its trial mid-flight, which must then expire when its lease runs out.
Meanwhile the main thread SIGKILLs the daemon --kills times at random intervals
(--min-interval..--max-interval s) and restarts it on the same database.

After the storm the workers finish their current trials, the daemon is SIGKILLed
once more and restarted, and then:
- every ledger entry is read back (GET /v1/trials/{id}): a trial missing or with
  another config, a measurement missing or with another value, a completion not
  stored as completed with its value is a LOST write;
- a stored measurement or trial nobody was acknowledged (a retried request that
  acted twice) is a PHANTOM;
- right after the restart, running trials may only be ones a worker abandoned;
  after waiting out the lease none may be running, and every abandoned trial
  must be expired.
Prints the figures and a Markdown table row per --sync mode.

Exit status: 0 nothing lost; 1 a lost or phantom write, a trial left running,
a wrong final state, or an unexpected answer; 2 the daemon failed (did not
restart, or a worker hung). Python standard library only."""

import argparse
import http.client
import os
import random
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import bench_common  # noqa: E402
from storm_ledger import Ledger, expected_state  # noqa: E402
import storm_ledger  # noqa: E402

bdtest = None  # imported by main() once BANDITD is known


class DaemonFailed(Exception):
    pass


class Worker(threading.Thread):
    def __init__(self, d, wid, study, run_id, args, drain, seed):
        super().__init__(daemon=True)
        self.d, self.wid, self.study, self.args, self.drain = d, wid, study, args, drain
        self.rng = random.Random(seed)
        self.key_prefix = "ks-%s-%d-" % (run_id, wid)
        self.seq = 0
        self.ledger = Ledger()
        self.client = d.client(timeout=10)

    def post(self, what, path, body):
        """POSTs with a fresh Idempotency-Key until an answer arrives (same key on
        every retry). Returns (status, body)."""
        self.seq += 1
        hdrs = {"Idempotency-Key": self.key_prefix + str(self.seq)}
        delay = 0.01
        deadline = time.monotonic() + self.args.retry_deadline
        while True:
            try:
                st, ans, _ = self.client.request("POST", path, body, headers=hdrs)
            except (OSError, http.client.HTTPException, AttributeError):
                # AttributeError: http.client reading from a socket that a
                # SIGKILL closed while the request was being sent.
                st = None
            if st is not None and st != 503:
                self.ledger.calls += 1
                return st, ans
            self.client.close()
            self.ledger.retries += 1
            if time.monotonic() > deadline:
                raise DaemonFailed("%s %s: no answer for %.0f s" % (what, path, self.args.retry_deadline))
            time.sleep(delay)
            delay = min(0.2, delay * 2)

    def unexpected(self, what, st, ans):
        if len(self.ledger.unexpected) < 20:
            self.ledger.unexpected.append((what, st, str(ans)[:200]))
        else:
            self.ledger.unexpected.append((what, st, ""))

    def run(self):
        try:
            self.loop()
        except DaemonFailed as e:
            self.ledger.unexpected.append(("daemon", None, str(e)))
        finally:
            self.client.close()

    def loop(self):
        L, sid = self.ledger, self.study["id"]
        suggest_path = "/v1/studies/%d/suggest" % sid
        while not self.drain.is_set():
            st, ans = self.post("suggest", suggest_path, {"worker": "ks-%d" % self.wid, "count": 1})
            if st != 200:
                self.unexpected("suggest", st, ans)
                time.sleep(0.05)
                continue
            if not ans["trials"]:
                if ans.get("done"):
                    self.unexpected("suggest", st, "study done")
                    return
                time.sleep(min(ans.get("retry_after_ms", 50), 200) / 1000.0)
                continue
            t = ans["trials"][0]
            tid = t["id"]
            L.trials[tid] = (sid, t["config"])
            budget = t.get("budget") or self.args.measurements
            finished = False
            for i in range(1, self.args.measurements + 1):
                if not self.drain.is_set() and self.rng.random() < self.args.abandon / self.args.measurements:
                    L.abandoned.add(tid)  # this worker "dies": nobody completes the trial
                    finished = True
                    break
                step = round(budget * i / self.args.measurements, 6)
                body = {"step": step, "value": round(self.rng.random(), 6)}
                st, ans = self.post("measurement", "/v1/trials/%d/measurements" % tid, body)
                if st == 200:
                    L.measurements.setdefault(tid, {})[step] = body["value"]
                    if ans.get("action") == "stop":
                        L.stopped.add(tid)
                        finished = True
                        break
                elif st == 409:
                    L.lease_lost.add(tid)
                    finished = True
                    break
                else:
                    self.unexpected("measurement", st, ans)
                    finished = True
                    break
            if finished:
                continue
            value = round(self.rng.random(), 6)
            st, ans = self.post("complete", "/v1/trials/%d/complete" % tid, {"value": value})
            if st == 200:
                L.completed[tid] = value
            elif st == 409:
                L.lease_lost.add(tid)
            else:
                self.unexpected("complete", st, ans)


def study_defs(n, lease):
    """n study bodies: random search and ASHA (eta 3 over 1..27) in turn."""
    out = []
    for i in range(n):
        if i % 2 == 0:
            body = bdtest.study_body(scheduler={"name": "random", "options": {"max_trials": 100000000}})
        else:
            body = bdtest.study_body(resource={"name": "epochs", "min": 1, "max": 27, "integer": True},
                                     scheduler={"name": "asha", "options": {"eta": 3}})
        body["name"] = "kill-storm-%d-%s" % (i, body["name"])
        body["lease_seconds"] = lease
        body["seed"] = 100 + i
        out.append(body)
    return out


def kill_restart(d, stats):
    rc = d.kill(signal.SIGKILL)
    if rc != -signal.SIGKILL:
        raise DaemonFailed("banditd was not killed by SIGKILL (exit status %r)" % rc)
    t0 = time.monotonic()
    try:
        d.start(timeout=30)
    except AssertionError as e:
        raise DaemonFailed("restart after SIGKILL failed: %s" % e)
    stats["restart_s"].append(time.monotonic() - t0)


def storm(args, sync):
    print("=== kill storm, --sync %s: %d workers over %d studies, %d SIGKILLs every %.1f..%.1f s, lease %d s"
          % (sync, args.workers, args.studies, args.kills, args.min_interval, args.max_interval,
             args.lease_seconds), flush=True)
    load_before = bench_common.loadavg()
    rng = random.Random(args.seed)
    d = bdtest.Daemon(lease_seconds=args.lease_seconds, extra_args=["--sync", sync, "--log-level", "warn"])
    print("banditd on port %d, database %s" % (d.port, d.db_path), flush=True)
    studies = [bdtest.expect(d.request("POST", "/v1/studies", body), 201, "create study")
               for body in study_defs(args.studies, args.lease_seconds)]
    drain = threading.Event()
    run_id = "%d%d" % (os.getpid(), int(time.time()))
    workers = [Worker(d, i, studies[i % len(studies)], run_id, args, drain, args.seed * 1000 + i)
               for i in range(args.workers)]
    stats = {"restart_s": []}
    failure = None
    t0 = time.monotonic()
    for w in workers:
        w.start()
    try:
        for k in range(args.kills):
            time.sleep(rng.uniform(args.min_interval, args.max_interval))
            if not d.running():
                raise DaemonFailed("banditd died by itself before kill %d (status %r); log:\n%s"
                                   % (k + 1, d.proc.returncode, d.log_tail(30)))
            kill_restart(d, stats)
            if (k + 1) % 10 == 0 or k + 1 == args.kills:
                print("  %d kills, %.0f s, %d requests answered so far"
                      % (k + 1, time.monotonic() - t0, sum(w.ledger.calls for w in workers)), flush=True)
        time.sleep(rng.uniform(args.min_interval, args.max_interval))
    except DaemonFailed as e:
        failure = str(e)
    storm_s = time.monotonic() - t0
    drain.set()
    if failure is None and not d.running():
        failure = "banditd died by itself (status %r)" % d.proc.returncode
    for w in workers:
        w.join(args.retry_deadline + 30)
        if w.is_alive():
            failure = failure or "worker %d hung" % w.wid
    ledger = Ledger()
    for w in workers:
        ledger.merge(w.ledger)
    result = {"sync": sync, "kills": len(stats["restart_s"]), "duration_s": storm_s, "ledger": ledger,
              "load_before": load_before, "failure": failure}
    if failure:
        print("FAILED: %s" % failure)
        result.update(lost=[], phantom=[], left_running=[], wrong_state=[], running_after_restart=0)
        d.cleanup()
        return result

    # Everything acknowledged must survive one more SIGKILL.
    kill_restart(d, stats)
    running_now = set()
    for s in studies:
        running_now |= {t["id"] for t in bdtest.list_all_trials(d, s["id"], state="running", limit=1000)}
    unexplained = sorted(running_now - ledger.abandoned)
    # Wait out the leases; the daemon's sweep expires what nobody renews.
    deadline = time.monotonic() + args.lease_seconds + 15
    while True:
        running = sum(bdtest.expect(d.request("GET", "/v1/studies/%d" % s["id"]), 200, "study")["trials"]["running"]
                      for s in studies)
        if running == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    lost, phantom, states, listed, _ = storm_ledger.verify(d, ledger, studies, bdtest)
    left_running = sorted(tid for tid, st in listed.items() if st == "running")
    wrong_state = ["trial %d: %s, expected %s" % (tid, states[tid], expected_state(ledger, tid))
                   for tid in sorted(states) if states[tid] != expected_state(ledger, tid)
                   and tid not in left_running]
    alive = d.running()
    rc = d.stop()
    if not alive or rc != 0:
        result["failure"] = "banditd did not stop cleanly on SIGTERM (status %r)" % rc
    result.update(lost=lost, phantom=phantom, left_running=left_running, wrong_state=wrong_state,
                  running_after_restart=len(running_now), unexplained_running=unexplained,
                  restart_s=stats["restart_s"], load_after=bench_common.loadavg())
    report(result)
    if lost or phantom or left_running or wrong_state or ledger.unexpected:
        print("log of this daemon: %s (kept: BD_KEEP_TMP=1)" % d.log_path)
    d.cleanup()
    return result


def report(r):
    L = r["ledger"]
    n_meas = sum(len(m) for m in L.measurements.values())
    print("kills              %d (+1 before the check), %.1f s of storm" % (r["kills"], r["duration_s"]))
    print("restart s          median %.3f, max %.3f" % (bench_common.quantile(r["restart_s"], 0.5),
                                                       max(r["restart_s"])))
    print("answered requests  %d (%d sent again after no answer)" % (L.calls, L.retries))
    print("acknowledged       %d writes: %d trials, %d measurements, %d completions (%d stop answers)"
          % (L.writes(), len(L.trials), n_meas, len(L.completed), len(L.stopped)))
    print("abandoned trials   %d (worker 'died'); lease ran out while down: %d" % (len(L.abandoned),
                                                                                  len(L.lease_lost)))
    print("running after the last restart: %d (not abandoned: %d)" % (r["running_after_restart"],
                                                                      len(r["unexplained_running"])))
    print("LOST writes        %d" % len(r["lost"]))
    print("phantom writes     %d" % len(r["phantom"]))
    print("left running       %d (after waiting out the lease)" % len(r["left_running"]))
    print("wrong final state  %d" % len(r["wrong_state"]))
    print("unexpected answers %d" % len(L.unexpected))
    for label, items in (("lost", r["lost"]), ("phantom", r["phantom"]), ("left running", r["left_running"]),
                         ("wrong state", r["wrong_state"]), ("unexpected", L.unexpected),
                         ("running, not abandoned", r["unexplained_running"])):
        for x in items[:10]:
            print("  %s: %s" % (label, x))
    print(flush=True)


def main():
    global bdtest
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="build directory with banditd (default build)")
    ap.add_argument("--sync", default="normal,full", help="comma-separated: normal, full (default both)")
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--studies", type=int, default=8)
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--min-interval", type=float, default=0.3, help="seconds between kills, at least (0.3)")
    ap.add_argument("--max-interval", type=float, default=2.0, help="seconds between kills, at most (2.0)")
    ap.add_argument("--lease-seconds", type=int, default=5, help="the studies' lease (default 5)")
    ap.add_argument("--measurements", type=int, default=3, help="per trial (default 3)")
    ap.add_argument("--abandon", type=float, default=0.01, help="chance a worker drops a trial (default 0.01)")
    ap.add_argument("--retry-deadline", type=float, default=60.0,
                    help="seconds a request may go unanswered before the daemon counts as failed (60)")
    ap.add_argument("--seed", type=int, default=1, help="seeds the kill intervals and the workers' values")
    ap.add_argument("--tmpdir", help="where the databases go (default: the system's temporary directory)")
    ap.add_argument("--quick", action="store_true", help="smoke test: 5 kills, 8 workers, 4 studies, 0.3..1 s")
    args = ap.parse_args()
    if args.quick:
        args.kills, args.workers, args.studies, args.max_interval = 5, 8, 4, 1.0
        args.lease_seconds = min(args.lease_seconds, 3)
    syncs = [s.strip() for s in args.sync.split(",") if s.strip()]
    if not syncs or any(s not in ("normal", "full") for s in syncs) or args.studies < 1 or args.workers < 1 \
            or args.kills < 0 or not 0 < args.min_interval <= args.max_interval:
        ap.error("bad options")
    bdtest = bench_common.use_build(args.build, args.tmpdir)
    info = bench_common.describe()
    results = [storm(args, s) for s in syncs]

    headers = ["date", "machine", "source", "load avg before/after", "config", "kills", "duration s",
               "acknowledged writes (trials / measurements / completions)", "lost", "phantom",
               "left running after lease", "restart s median / max"]
    rows = []
    for r in results:
        L = r["ledger"]
        if r["failure"] and not r.get("restart_s"):
            rows.append([info["date"], info["machine"], info["source"], r["load_before"],
                         "--sync %s: FAILED %s" % (r["sync"], r["failure"][:80])] + [""] * 7)
            continue
        rows.append([info["date"], info["machine"], info["source"],
                     "%s / %s" % (r["load_before"], r["load_after"]),
                     "--sync %s, %d workers, %d studies, lease %d s" % (r["sync"], args.workers, args.studies,
                                                                       args.lease_seconds),
                     r["kills"], "%.0f" % r["duration_s"],
                     "{:,} ({:,} / {:,} / {:,})".format(L.writes(), len(L.trials),
                                                        sum(len(m) for m in L.measurements.values()),
                                                        len(L.completed)),
                     len(r["lost"]), len(r["phantom"]), len(r["left_running"]),
                     "%.2f / %.2f" % (bench_common.quantile(r["restart_s"], 0.5), max(r["restart_s"]))])
    print("=== kill storm summary (for a dated file tests/bench/results/YYYY-MM-DD-<topic>.md; the current headline goes to tests/bench/README.md)")
    print(bench_common.md_table(headers, rows))
    if any(r["failure"] for r in results):
        return 2
    bad = any(r["lost"] or r["phantom"] or r["left_running"] or r["wrong_state"] or r["ledger"].unexpected
              for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
