#!/usr/bin/python3
"""disk_fault_campaign.py: the disk fault of tests/integration/test_disk_fault.py,
repeated, with figures.

    tests/bench/disk_fault_campaign.py --build build              # 20 faults, --sync normal then full
    tests/bench/disk_fault_campaign.py --build build --quick      # smoke: 3 short faults, --sync normal

Needs the shim target: cmake --build build --target bd_fault_shim (it is built
with the tree: build/tests/bd_fault_shim.so). For each --sync mode, one banditd
runs under the shim (LD_PRELOAD, test_disk_fault.shim_env: while a trigger file
exists, every write and sync to the database files fails with the chosen errno)
on a random-search and an ASHA study. Each repetition:

1. --workers threads loop suggest -> 1 measurement -> complete (no
   Idempotency-Key: a write answered 500 is simply dropped, as a worker would
   after giving up); every request is logged with its send and answer times;
2. after 1 s the fault starts: errno EIO, EROFS, ENOSPC in turn, lasting 1..5 s
   in turn (so 15 repetitions cover every pair); it is held until at least one
   commit failed (at most 15 s) and the actual length is reported;
3. the fault ends; the load goes on 1 s after the first successful write;
4. every write acknowledged in this repetition is read back live, the daemon is
   SIGKILLed and restarted (under the shim, trigger absent), and read back again.

Figures per repetition: seconds from the fault's end to the first successful
write sent after it ("heal s"), writes failed during the fault (500
storage_error), writes acknowledged while the fault was on, GET /healthz 503
seen during the fault, acknowledged writes LOST (live or after the restart),
and PHANTOMS: writes answered 500 that are in the database anyway (README:
"the requests in it get a 500 and nothing of them is kept"). At the end the
whole ledger is read back once more. Prints a Markdown table.
BD_FAULT_DEBUG=1 also prints every write request around each fault (send and
answer times relative to the fault's start, status).

Exit status: 0 nothing lost and no phantom; 1 a write lost, a phantom, a
repetition that did not heal within 30 s, or an unexpected answer; 2 the daemon
failed (died, or did not restart). Python standard library only."""

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

bdtest = None
ERRNOS = ("EIO", "EROFS", "ENOSPC")
HEAL_LIMIT = 30.0


class DaemonFailed(Exception):
    pass


class Log:
    """Every write request of one repetition, and what it acknowledged."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []       # (t_sent, t_answer, kind, status)
        self.trials = {}         # trial id -> (study id, config), acknowledged
        self.measurements = {}   # trial id -> {step: value}, acknowledged
        self.completed = {}      # trial id -> value, acknowledged
        self.failed_meas = []    # (trial id, step) answered 500
        self.failed_complete = []  # trial ids whose completion was answered 500
        self.unexpected = []

    def note(self, t0, t1, kind, st, body):
        with self.lock:
            self.requests.append((t0, t1, kind, st))
            if st not in (200, 409, 500) or (st == 500 and not (
                    isinstance(body, dict) and body.get("error", {}).get("code") == "storage_error")):
                self.unexpected.append((kind, st, str(body)[:200]))

    def writes(self):
        return len(self.trials) + sum(len(m) for m in self.measurements.values()) + len(self.completed)


def worker(d, studies, n, stop, log, seed):
    c = d.client(timeout=30)
    rng = random.Random(seed)
    study = studies[n % len(studies)]
    path = "/v1/studies/%d/suggest" % study["id"]

    def post(kind, p, body):
        t0 = time.monotonic()
        try:
            st, ans, _ = c.request("POST", p, body)
        except (OSError, http.client.HTTPException) as e:
            st, ans = None, repr(e)
        log.note(t0, time.monotonic(), kind, st, ans)
        return st, ans

    while not stop.is_set():
        st, body = post("suggest", path, {"worker": "fault-%d" % n})
        if st != 200 or not body["trials"]:
            time.sleep(0.02)
            continue
        t = body["trials"][0]
        tid = t["id"]
        with log.lock:
            log.trials[tid] = (study["id"], t["config"])
        step = t.get("budget") or 1
        value = round(rng.random(), 6)
        st, body = post("measurement", "/v1/trials/%d/measurements" % tid, {"step": step, "value": value})
        with log.lock:
            if st == 200:
                log.measurements.setdefault(tid, {})[step] = value
            elif st == 500:
                log.failed_meas.append((tid, step))
        if st != 200:
            time.sleep(0.02)
            continue
        value = round(rng.random(), 6)
        st, body = post("complete", "/v1/trials/%d/complete" % tid, {"value": value})
        with log.lock:
            if st == 200:
                log.completed[tid] = value
            elif st == 500:
                log.failed_complete.append(tid)
        if st != 200:
            time.sleep(0.02)
    c.close()


def check(d, log):
    """Returns (lost, phantom): descriptions of acknowledged writes missing, and of
    writes answered 500 found stored."""
    lost, phantom = [], []
    c = d.client(timeout=30)
    failed_meas = {}
    for tid, step in log.failed_meas:
        failed_meas.setdefault(tid, set()).add(step)
    for tid in sorted(set(log.trials) | set(failed_meas) | set(log.failed_complete)):
        st, t, _ = c.request("GET", "/v1/trials/%d" % tid)
        if st != 200:
            if tid in log.trials:
                lost.append("trial %d: GET -> %d %r" % (tid, st, t))
            continue
        if tid in log.trials and (t["study_id"], t["config"]) != log.trials[tid]:
            lost.append("trial %d: stored %r, acknowledged %r" % (tid, (t["study_id"], t["config"]), log.trials[tid]))
        stored = {}
        for m in t.get("measurements", []):
            stored.setdefault(m["step"], []).append(m["value"])
        for step, value in log.measurements.get(tid, {}).items():
            if stored.get(step) != [value]:
                lost.append("trial %d step %r: acknowledged %r, stored %r" % (tid, step, value, stored.get(step)))
        for step in failed_meas.get(tid, ()):
            if step in stored and step not in log.measurements.get(tid, {}):
                phantom.append("trial %d step %r: answered 500, stored %r" % (tid, step, stored[step]))
        if tid in log.completed and (t["state"], t.get("value")) != ("completed", log.completed[tid]):
            lost.append("trial %d: acknowledged completion %r, stored %s %r"
                        % (tid, log.completed[tid], t["state"], t.get("value")))
        if tid in log.failed_complete and tid not in log.completed and t["state"] == "completed":
            phantom.append("trial %d: completion answered 500, stored completed %r" % (tid, t.get("value")))
    c.close()
    return lost, phantom


def restart_after_kill(d):
    rc = d.kill(signal.SIGKILL)
    if rc != -signal.SIGKILL:
        raise DaemonFailed("banditd was not killed by SIGKILL (status %r)" % rc)
    try:
        d.start(timeout=30)
    except AssertionError as e:
        raise DaemonFailed("restart failed: %s" % e)


def repetition(d, studies, args, rep, err, seconds, all_trials):
    trigger = d.env["BD_FAULT_TRIGGER"]
    log = Log()
    stop = threading.Event()
    threads = [threading.Thread(target=worker, args=(d, studies, n, stop, log, rep * 1000 + n), daemon=True)
               for n in range(args.workers)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    c = d.client(timeout=30)
    health = []
    open(trigger, "w").close()
    t_on = time.monotonic()

    def failed_yet():
        with log.lock:
            return any(st == 500 for t0, _, _, st in log.requests if t0 >= t_on)
    while time.monotonic() - t_on < seconds or (not failed_yet() and time.monotonic() - t_on < 15):
        health.append(c.request("GET", "/healthz")[0])
        time.sleep(0.1)
    os.unlink(trigger)
    t_off = time.monotonic()
    heal = None
    while heal is None and time.monotonic() - t_off < HEAL_LIMIT:
        time.sleep(0.02)
        with log.lock:
            ok = [t1 for t0, t1, _, st in log.requests if t0 >= t_off and st == 200]
        if ok:
            heal = min(ok) - t_off
    if heal is not None:
        time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join(60)
        if t.is_alive():
            raise DaemonFailed("a worker hung (repetition %d)" % (rep + 1))
    c.close()
    if not d.running():
        raise DaemonFailed("banditd died during repetition %d (status %r); log:\n%s"
                           % (rep + 1, d.proc.returncode, d.log_tail(30)))
    during = [(t0, t1, st) for t0, t1, _, st in log.requests if t_on <= t0 < t_off]
    if os.environ.get("BD_FAULT_DEBUG"):
        for t0, t1, kind, st in sorted(log.requests):
            if t_on - 0.2 <= t0 < t_off + 0.2:
                print("      %+.3f %+.3f %-11s %s" % (t0 - t_on, t1 - t_on, kind, st))
        print("      fault off at %+.3f" % (t_off - t_on))
    lost, phantom = check(d, log)
    restart_after_kill(d)
    lost2, phantom2 = check(d, log)
    all_trials.update(log.trials)
    return {
        "rep": rep + 1, "errno": err, "fault_s": t_off - t_on, "heal_s": heal,
        "failed_during": sum(1 for _, _, st in during if st == 500),
        "acked_during": sum(1 for _, t1, st in during if st == 200 and t1 < t_off),
        "health_503": health.count(503), "health_n": len(health),
        "acked": log.writes(), "lost": lost + [x for x in lost2 if x not in lost],
        "phantom": phantom + [x for x in phantom2 if x not in phantom],
        "unexpected": log.unexpected, "log": log,
    }


def campaign(args, sync):
    import test_disk_fault  # tests/integration: its shim_env is the shim's set-up

    print("=== disk fault campaign, --sync %s: %d repetitions, %d workers" % (sync, args.repetitions, args.workers),
          flush=True)
    load_before = bench_common.loadavg()
    d = bdtest.Daemon(start=False, extra_args=["--sync", sync, "--log-level", "warn"])
    d.env = test_disk_fault.shim_env(d.tmpdir, "EIO")
    d.start()
    studies = [bdtest.create_study(d, name="fault-random-%d" % os.getpid(),
                                   scheduler={"name": "random", "options": {"max_trials": 100000000}}),
               bdtest.create_study(d, name="fault-asha-%d" % os.getpid(),
                                   resource={"name": "epochs", "min": 1, "max": 27, "integer": True},
                                   scheduler={"name": "asha", "options": {"eta": 3}})]
    rows, failure, all_trials, ledger = [], None, {}, Log()
    try:
        for rep in range(args.repetitions):
            err = args.errnos[rep % len(args.errnos)]
            seconds = args.durations[rep % len(args.durations)]
            if d.env["BD_FAULT_ERRNO"] != err:  # the shim reads it from the daemon's environment
                d.env["BD_FAULT_ERRNO"] = err
                restart_after_kill(d)
            r = repetition(d, studies, args, rep, err, seconds, all_trials)
            rows.append(r)
            for k in ("trials", "measurements", "completed"):
                getattr(ledger, k).update(getattr(r["log"], k))
            print("  #%-2d %-6s fault %4.1f s  heal %s  failed %4d  acked during %d  /healthz 503 %d/%d  "
                  "acked %5d  lost %d  phantom %d  unexpected %d"
                  % (r["rep"], err, r["fault_s"], "%.3f s" % r["heal_s"] if r["heal_s"] is not None else "NEVER",
                     r["failed_during"], r["acked_during"], r["health_503"], r["health_n"], r["acked"],
                     len(r["lost"]), len(r["phantom"]), len(r["unexpected"])), flush=True)
            for label in ("lost", "phantom", "unexpected"):
                for x in r[label][:5]:
                    print("      %s: %s" % (label, x))
    except DaemonFailed as e:
        failure = str(e)
        print("FAILED: %s" % failure)
    final_lost = []
    if failure is None:
        final_lost, _ = check(d, ledger)
        alive = d.running()
        rc = d.stop()
        if not alive or rc != 0:
            failure = "banditd did not stop cleanly on SIGTERM (status %r)" % rc
    if any(r["lost"] or r["phantom"] or r["unexpected"] for r in rows) or final_lost or failure:
        print("daemon log: %s (kept with BD_KEEP_TMP=1)" % d.log_path)
    d.cleanup()
    return {"sync": sync, "rows": rows, "failure": failure, "final_lost": final_lost, "load_before": load_before,
            "load_after": bench_common.loadavg(), "ledger_writes": ledger.writes()}


def main():
    global bdtest
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="build directory with banditd and tests/bd_fault_shim.so")
    ap.add_argument("--sync", default="normal,full", help="comma-separated: normal, full (default both)")
    ap.add_argument("--repetitions", type=int, default=20, help="faults per --sync mode (default 20)")
    ap.add_argument("--errnos", default=",".join(ERRNOS), help="cycled through (default EIO,EROFS,ENOSPC)")
    ap.add_argument("--durations", default="1,2,3,4,5", help="fault seconds, cycled through (default 1,2,3,4,5)")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--tmpdir", help="where the databases go (default: the system's temporary directory)")
    ap.add_argument("--quick", action="store_true", help="smoke test: 3 faults of 1 s, --sync normal")
    args = ap.parse_args()
    if args.quick:
        args.repetitions, args.durations, args.sync = 3, "1", "normal"
    args.errnos = [e.strip() for e in args.errnos.split(",")]
    args.durations = [float(x) for x in args.durations.split(",")]
    syncs = [s.strip() for s in args.sync.split(",")]
    if any(e not in ERRNOS for e in args.errnos) or any(s not in ("normal", "full") for s in syncs) \
            or args.repetitions < 1 or args.workers < 1 or any(x <= 0 for x in args.durations):
        ap.error("bad options")
    bdtest = bench_common.use_build(args.build, args.tmpdir)
    if not os.environ.get("BD_FAULT_SHIM"):
        sys.exit("%s/tests/bd_fault_shim.so not found; build it: cmake --build %s --target bd_fault_shim"
                 % (args.build, args.build))
    info = bench_common.describe()
    results = [campaign(args, s) for s in syncs]

    headers = ["date", "machine", "source", "load avg before/after", "config", "faults", "fault s (min-max)",
               "heal s median / max", "writes failed during faults", "acked during faults",
               "acknowledged writes", "lost", "phantom (500 but stored)"]
    table = []
    for res in results:
        rows = res["rows"]
        heals = [r["heal_s"] for r in rows if r["heal_s"] is not None]
        never = sum(1 for r in rows if r["heal_s"] is None)
        table.append([
            info["date"], info["machine"], info["source"], "%s / %s" % (res["load_before"], res["load_after"]),
            "--sync %s, %d workers, %s" % (res["sync"], args.workers, "/".join(args.errnos))
            + (" FAILED: %s" % res["failure"][:80] if res["failure"] else ""),
            len(rows),
            "%.1f-%.1f" % (min(r["fault_s"] for r in rows), max(r["fault_s"] for r in rows)) if rows else "",
            ("%.3f / %.3f" % (bench_common.quantile(heals, 0.5), max(heals)) if heals else "-")
            + (" (%d never)" % never if never else ""),
            "{:,}".format(sum(r["failed_during"] for r in rows)), sum(r["acked_during"] for r in rows),
            "{:,}".format(res["ledger_writes"]),
            sum(len(r["lost"]) for r in rows) + len(res["final_lost"]), sum(len(r["phantom"]) for r in rows)])
    print()
    print("=== disk fault campaign summary (for a dated file tests/bench/results/YYYY-MM-DD-<topic>.md; the current headline goes to tests/bench/README.md)")
    print(bench_common.md_table(headers, table))
    print()
    print("per fault:")
    per = []
    for res in results:
        for r in res["rows"]:
            per.append([res["sync"], r["rep"], r["errno"], "%.1f" % r["fault_s"],
                        "%.3f" % r["heal_s"] if r["heal_s"] is not None else "never",
                        r["failed_during"], r["acked_during"], "%d/%d" % (r["health_503"], r["health_n"]),
                        r["acked"], len(r["lost"]), len(r["phantom"])])
    print(bench_common.md_table(["sync", "#", "errno", "fault s", "heal s", "writes failed", "acked during fault",
                                 "/healthz 503", "acknowledged", "lost", "phantom"], per))
    if any(res["failure"] for res in results):
        return 2
    bad = any(res["final_lost"] or any(r["lost"] or r["phantom"] or r["unexpected"] or r["heal_s"] is None
                                       for r in res["rows"]) for res in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
