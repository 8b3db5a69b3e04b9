#!/usr/bin/python3
"""failover_storm.py: SIGKILL the daemons of a banditd cluster on PostgreSQL
one after another under load, and check that no acknowledged write is lost, no
rung slot is handed out twice, every study finishes, and how long a study
stays unanswered after its daemon dies (issue 16).

    tests/bench/failover_storm.py --build build            # 3 daemons, 32 workers, 8 studies, 5 min, a kill every 20 s
    tests/bench/failover_storm.py --build build --quick    # smoke: 40 s, a kill every 10 s, 8 workers, 5 studies

PostgreSQL: the server of BD_TEST_PG_URL, else the script runs itself again
inside a throwaway cluster (tests/pgcluster.sh). It makes a new database and
starts --daemons daemons on it, each with --advertise-url (its own address)
and --ownership-lease-seconds (2): a study is owned by one daemon under a
lease with a fencing token, a daemon that does not own a study forwards to its
owner or takes the study over, and when the owner dies its leases run out and
another daemon takes its studies (the contract of branch i16-own).

Load: --workers threads over --studies study slots (worker i on slot i mod S),
the slots' schedulers in turn successive_halving, hyperband, asha, random, tpe.
A slot's study is small (tens to a few hundred trials); when it is done the
first of its workers to see that creates the slot's next study (a new
"generation"), so studies finish all through the storm, not only at its end.
Each worker loops suggest -> --measurements measurements (sleeping --work-ms,
50, before each: the "training") -> complete. Routing (--route): sticky (the
default) keeps a worker on one daemon, slot j's workers starting on daemon
j mod N, until that daemon fails to answer or answers 503 (i16-own: a member
that does not hold a study waits up to the ownership lease + 0.5 s for the
holder's lease to run out, then answers 503 "moved"), then it moves to the
next daemon: a study's workers gather on the daemon that holds it, as a
client that retries elsewhere would. rr sends each request to the next daemon
in turn, which under that contract makes two requests in three wait for a
lease that never runs out (a storm with it, i16-own at 52ae2b4, answered
about 15 requests/s and finished no study). A request that gets no answer (connection refused,
reset or timed out) or a 503 is sent again, with the same Idempotency-Key, to
the next daemon, after a wait that doubles from --backoff to --max-backoff with
jitter (the Python client's policy; its default cap is 5 s, lower here so the
client's own waits add little to the measured outage); a 429 waits for its
Retry-After. Every acknowledged (2xx) write goes into a ledger
(storm_ledger.py, shared with kill_storm.py).

Storm: every --kill-every seconds for --duration seconds, the next daemon in
turn is SIGKILLed and started again --restart-after seconds later on the same
address. Then no more studies are created, the workers finish the current
ones, every daemon is stopped with SIGTERM (each must exit 0), one daemon is
started alone on the database, and through it:
- every ledger entry is read back: a trial, measurement or completion missing
  or different is LOST; one stored but never acknowledged is a PHANTOM;
- no trial id was handed to two workers, and for successive_halving and
  hyperband, per (iteration, bracket, rung), the trials that hold a slot
  (every state but expired and failed: those are retried by design) number at
  most the rung's n, and no config_id holds two slots;
- every study created (acknowledged) exists and is done;
- kill-to-answer: for each kill and each study live at that moment, the time
  from the SIGKILL to the first 2xx answer to any request on that study
  (p50/p99/max; the target is p99 <= 5 s with a 2 s ownership lease). Most
  studies are owned by a daemon that survives and answer at once; the tail is
  the failover. These times depend on the machine's load (2 shared cores);
  the correctness figures do not.

Output: a JSON line per kill and one summary line appended to --out
(tests/bench/results/failover_storm.jsonl), and a summary table.
Exit status: 0 all checks passed; 1 a check failed; 2 the cluster failed (a
daemon did not start, died by itself, did not stop cleanly, or a worker hung).
Python standard library only."""

import argparse
import collections
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import bench_common  # noqa: E402
import storm_ledger  # noqa: E402
from storm_ledger import Ledger  # noqa: E402

bdtest = None  # imported by main() once BANDITD is known

SCHEDULERS = ["successive_halving", "hyperband", "asha", "random", "tpe"]
BRACKETED = ("successive_halving", "hyperband")  # the rung-slot check applies to these
RESOURCE = {"name": "epochs", "min": 1, "max": 81, "integer": True}


class ClusterFailed(Exception):
    pass


def study_body(scheduler, slot, generation, args):
    """A study of the slot's scheduler, small enough to finish in seconds under load."""
    if scheduler == "successive_halving":     # n = 81: 81 + 27 + 9 + 3 trials
        sched = {"name": scheduler, "options": {"eta": 3}}
    elif scheduler == "hyperband":            # eta 3 over 1..81: 5 brackets, one iteration
        sched = {"name": scheduler, "options": {"eta": 3}}
    elif scheduler == "asha":
        sched = {"name": scheduler, "options": {"eta": 3, "max_trials": args.trials}}
    else:                                     # random, tpe: one unit of resource per trial
        sched = {"name": scheduler, "options": {"max_trials": args.trials}}
    body = bdtest.study_body(scheduler=sched)
    if scheduler in ("successive_halving", "hyperband", "asha"):
        body["resource"] = RESOURCE
    body["name"] = "failover-%d-%d-%s" % (slot, generation, body["name"])
    body["lease_seconds"] = args.lease_seconds
    body["seed"] = 1000 * slot + generation
    return body


class Routed:
    """One worker's connections to every daemon; each request goes to the next
    daemon in turn, and is sent again (same Idempotency-Key) to the next one
    after no answer or a 503."""

    def __init__(self, cluster, args, rng, first):
        self.cluster, self.args, self.rng = cluster, args, rng
        self.clients = [d.client(timeout=args.request_timeout) for d in cluster]
        self.next = first
        self.retries = 0
        self.calls = 0
        self.failures = []  # (monotonic time, daemon index, study id, kind) of each unanswered attempt or 503

    def close(self):
        for c in self.clients:
            c.close()

    def request(self, method, path, body, sid, key=None):
        hdrs = {"Idempotency-Key": key} if key else None
        delay, busy = self.args.backoff, 0.25
        deadline = time.monotonic() + self.args.retry_deadline
        failed_in_a_row = 0
        while True:
            i = self.next % len(self.clients)
            if self.args.route == "rr":
                self.next += 1
            try:
                st, ans, h = self.clients[i].request(method, path, body, headers=hdrs)
            except (OSError, http.client.HTTPException, AttributeError):
                # AttributeError: http.client reading a socket that a SIGKILL closed mid-request.
                self.clients[i].close()
                st, ans, h = None, None, None
            now = time.monotonic()
            if st is not None and st not in (429, 503):
                self.calls += 1
                return st, ans, now
            self.retries += 1
            if now > deadline:
                raise ClusterFailed("%s %s: no answer for %.0f s" % (method, path, self.args.retry_deadline))
            if st == 429:
                try:
                    ra = float(h.get("Retry-After") or 0)
                except ValueError:
                    ra = 0
                time.sleep(min(max(ra, busy), 30.0))
                busy = min(busy * 2, 30.0)
                if self.args.route == "rr":
                    self.next -= 1  # busy is not down: ask the same daemon again
                continue
            self.failures.append((now, i, sid, "no answer" if st is None else "503"))
            if self.args.route == "sticky":
                self.next += 1  # this daemon failed: stay on the next one from now on
            failed_in_a_row += 1
            # The first failure may be the one dead daemon: try the next at once; after
            # that back off as the Python client does.
            if failed_in_a_row > 1 or st == 503:
                time.sleep(delay * (0.5 + self.rng.random()))
                delay = min(delay * 2, self.args.max_backoff)


class Slots:
    """The study of each slot, and its successors: a done study is replaced by
    a new one of the same scheduler until the storm is over."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.current = {}      # slot -> study (as created)
        self.generation = {}   # slot -> generation of the current study
        self.studies = []      # every study created (acknowledged), in order
        self.created_at = {}   # study id -> monotonic time it was created
        self.done_at = {}      # study id -> monotonic time a worker was told it is done
        self.creating = set()

    def scheduler(self, slot):
        return SCHEDULERS[slot % len(SCHEDULERS)]

    def create(self, slot, routed, key):
        gen = self.generation.get(slot, -1) + 1
        body = study_body(self.scheduler(slot), slot, gen, self.args)
        st, s, now = routed.request("POST", "/v1/studies", body, None, key)
        if st != 201:
            raise ClusterFailed("create study: %d %r" % (st, s))
        s["_scheduler"] = self.scheduler(slot)
        with self.lock:
            self.current[slot], self.generation[slot] = s, gen
            self.studies.append(s)
            self.created_at[s["id"]] = now
            self.creating.discard(slot)
        return s

    def study_for(self, slot, routed, key, drain):
        """The slot's live study; creates the first or the next one if it is this
        worker's turn. None when the slot is finished (drain and done)."""
        while True:
            with self.lock:
                s = self.current.get(slot)
                live = s is not None and s["id"] not in self.done_at
                if live:
                    return s
                if drain.is_set() and s is not None:
                    return None
                mine = slot not in self.creating
                if mine:
                    self.creating.add(slot)
            if mine:
                try:
                    return self.create(slot, routed, key)
                except Exception:
                    with self.lock:
                        self.creating.discard(slot)
                    raise
            time.sleep(0.02)

    def mark_done(self, sid, when):
        with self.lock:
            self.done_at.setdefault(sid, when)


class Worker(threading.Thread):
    def __init__(self, cluster, wid, slots, run_id, args, drain, seed):
        super().__init__(daemon=True)
        self.wid, self.slots, self.args, self.drain = wid, slots, args, drain
        self.slot = wid % args.studies
        self.rng = random.Random(seed)
        # sticky: a slot's workers start on the same daemon, the one its study is created on.
        self.routed = Routed(cluster, args, self.rng, wid if args.route == "rr" else self.slot)
        self.key_prefix = "fs-%s-%d-" % (run_id, wid)
        self.seq = 0
        self.ledger = Ledger()
        self.handed = {}       # trial id -> (study id, config_id, scheduler fields) as acknowledged
        self.answers = collections.defaultdict(list)  # study id -> monotonic times of its 2xx answers
        self.error = None

    def key(self):
        self.seq += 1
        return self.key_prefix + str(self.seq)

    def post(self, path, body, sid):
        st, ans, now = self.routed.request("POST", path, body, sid, self.key())
        if 200 <= st < 300:
            self.answers[sid].append(now)
        return st, ans

    def unexpected(self, what, st, ans):
        self.ledger.unexpected.append((what, st, str(ans)[:200] if len(self.ledger.unexpected) < 20 else ""))

    def run(self):
        try:
            self.loop()
        except ClusterFailed as e:
            self.error = str(e)
            self.ledger.unexpected.append(("cluster", None, str(e)))
        except Exception as e:  # noqa: BLE001 - a worker's crash is a failed run, said so
            self.error = "worker %d: %r" % (self.wid, e)
            self.ledger.unexpected.append(("worker", None, repr(e)))
        finally:
            self.ledger.retries, self.ledger.calls = self.routed.retries, self.routed.calls
            self.routed.close()

    def loop(self):
        L = self.ledger
        while True:
            s = self.slots.study_for(self.slot, self.routed, self.key(), self.drain)
            if s is None:
                return
            sid = s["id"]
            st, ans = self.post("/v1/studies/%d/suggest" % sid, {"worker": "fs-%d" % self.wid, "count": 1}, sid)
            if st != 200:
                self.unexpected("suggest", st, ans)
                time.sleep(0.05)
                continue
            if not ans["trials"]:
                if ans.get("done"):
                    self.slots.mark_done(sid, time.monotonic())
                    continue
                time.sleep(min(ans.get("retry_after_ms", 50), 200) / 1000.0)
                continue
            t = ans["trials"][0]
            tid = t["id"]
            L.trials[tid] = (sid, t["config"])
            self.handed[tid] = (sid, t["config_id"], t.get("scheduler"))
            budget = t.get("budget") or 1
            finished = False
            for i in range(1, self.args.measurements + 1):
                time.sleep(self.args.work_ms / 1000.0)
                step = round(budget * i / self.args.measurements, 6)
                body = {"step": step, "value": round(self.rng.random(), 6)}
                st, ans = self.post("/v1/trials/%d/measurements" % tid, body, sid)
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
            st, ans = self.post("/v1/trials/%d/complete" % tid, {"value": value}, sid)
            if st == 200:
                L.completed[tid] = value
            elif st == 409:
                L.lease_lost.add(tid)
            else:
                self.unexpected("complete", st, ans)


# ---- the cluster ----

def supports_cluster(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    return "--advertise-url" in out and "--ownership-lease-seconds" in out


def make_daemon(db, token_file, args, cluster_flags, start=True):
    d = bdtest.Daemon(db=db, admin_token_file=token_file, lease_seconds=None, start=False,
                      extra_args=["--log-level", "warn", "--admin-token-file", token_file])
    if cluster_flags:
        d.extra_args += ["--advertise-url", victim_url(d),
                         "--ownership-lease-seconds", str(args.ownership_lease)]
    if start:
        d.start(timeout=30)
    return d


def victim_url(d):
    return "http://127.0.0.1:%d" % d.port


def owned_by(db, url):
    """The studies whose ownership lease the daemon advertised at url holds now,
    read from i16-own's tables (study_owners, daemons); empty when they are
    not there (no cluster flags)."""
    try:
        out = bdtest.psql(db, "SELECT o.study_id FROM study_owners o JOIN daemons d ON d.id = o.daemon_id "
                              "WHERE d.url = '%s' AND o.expires_at > clock_timestamp()" % url.replace("'", "''"))
    except AssertionError:
        return set()
    return {int(x) for x in out.split()}


def rung_violations(studies_by_id, trials, handed):
    """For successive_halving and hyperband studies: per (iteration, bracket,
    rung), the trials holding a slot (all but expired and failed) must be at
    most the rung's n and carry distinct config_ids. trials: every stored trial
    (with "scheduler"); handed: trial id -> (study id, config_id, scheduler
    fields) as acknowledged to a worker, which must agree with what is stored."""
    bad = []
    n_of = {}
    for sid, s in studies_by_id.items():
        if s["_scheduler"] not in BRACKETED:
            continue
        st, full, _ = s["_reader"].request("GET", "/v1/studies/%d" % sid)
        if st != 200:
            bad.append("study %d: GET -> %d" % (sid, st))
            continue
        for b in full["scheduler"]["state"]["brackets"]:
            for r in b["rungs"]:
                n_of[(sid, b["iteration"], b["bracket"], r["rung"])] = r["n"]
        if full["scheduler"]["state"].get("brackets_total", 0) > len(full["scheduler"]["state"]["brackets"]):
            bad.append("study %d: more brackets than GET shows; the check is incomplete" % sid)
    slots = collections.defaultdict(list)
    for t in trials:
        s = studies_by_id.get(t["study_id"])
        if s is None or s["_scheduler"] not in BRACKETED:
            continue
        x = t.get("scheduler") or {}
        if "bracket" not in x or "rung" not in x:
            bad.append("trial %d: no bracket/rung in %r" % (t["id"], x))
            continue
        if t["id"] in handed and handed[t["id"]][1:] != (t["config_id"], t.get("scheduler")):
            bad.append("trial %d: handed out as %r, stored as %r" % (t["id"], handed[t["id"]][1:],
                                                                    (t["config_id"], t.get("scheduler"))))
        if t["state"] in ("expired", "failed"):
            continue
        slots[(t["study_id"], x.get("iteration", 1), x["bracket"], x["rung"])].append(t)
    for key, ts in sorted(slots.items()):
        n = n_of.get(key)
        if n is None:
            bad.append("study %d iteration %d bracket %d rung %d: not in the study's description" % key)
            continue
        if len(ts) > n:
            bad.append("study %d iteration %d bracket %d rung %d: %d trials hold slots, n = %d"
                       % (key + (len(ts), n)))
        cfgs = collections.Counter(t["config_id"] for t in ts)
        for cid, k in cfgs.items():
            if k > 1:
                bad.append("study %d iteration %d bracket %d rung %d: config %d holds %d slots" % (key + (cid, k)))
    return bad, len(slots)


def kill_to_answer(kills, answers, slots):
    """For each kill and each study live at it (created before, not yet told
    done): seconds from the SIGKILL to the study's first 2xx answer after it,
    and whether the killed daemon held the study's lease then (kill["owned"]).
    Returns per kill {study id: (seconds or None, held by the killed daemon)}."""
    per_kill = []
    for k in kills:
        tk, gaps = k["t"], {}
        for sid, t_created in slots.created_at.items():
            if t_created > tk or slots.done_at.get(sid, float("inf")) <= tk:
                continue
            ts = answers.get(sid, [])
            after = [a for a in ts if a > tk]
            gaps[sid] = ((min(after) - tk) if after else None, sid in k.get("owned", ()))
        per_kill.append(gaps)
    return per_kill


def storm(args, db, token_file):
    cluster_flags = args.daemons > 1 or supports_cluster(os.environ["BANDITD"])
    print("=== failover storm: %d daemons on %s, %d workers over %d study slots, a SIGKILL every %.0f s "
          "for %.0f s, ownership lease %s s" % (args.daemons, db.rsplit("/", 1)[-1], args.workers, args.studies,
                                                args.kill_every, args.duration,
                                                args.ownership_lease if cluster_flags else "(none: no cluster flags)"),
          flush=True)
    load_before = bench_common.loadavg()
    cluster = [make_daemon(db, token_file, args, cluster_flags) for _ in range(args.daemons)]
    for i, d in enumerate(cluster):
        print("  daemon %d: port %d, log %s" % (i, d.port, d.log_path), flush=True)
    slots = Slots(args)
    drain = threading.Event()
    run_id = "%d%d" % (os.getpid(), int(time.time()))
    workers = [Worker(cluster, i, slots, run_id, args, drain, args.seed * 1000 + i) for i in range(args.workers)]
    kills, failure = [], None
    kill_rng = random.Random(args.seed)
    t0 = time.monotonic()
    for w in workers:
        w.start()
    try:
        k = 0
        while True:
            next_kill = t0 + (k + 1) * args.kill_every
            if next_kill > t0 + args.duration:
                break
            while time.monotonic() < next_kill:
                time.sleep(0.1)
                dead = [i for i, d in enumerate(cluster) if not d.running()]
                if dead:
                    raise ClusterFailed("daemon %d died by itself (status %r); log:\n%s"
                                        % (dead[0], cluster[dead[0]].proc.returncode, cluster[dead[0]].log_tail(30)))
                hung = [w for w in workers if not w.is_alive()]
                if hung:
                    raise ClusterFailed("worker %d stopped: %s" % (hung[0].wid, hung[0].error))
            # A random victim (seeded): in turn, sticky workers that moved to the next
            # daemon after one kill would all be on the next kill's victim.
            victim = kill_rng.randrange(len(cluster))
            d = cluster[victim]
            owned = owned_by(db, victim_url(d))
            tk = time.monotonic()
            d.proc.send_signal(signal.SIGKILL)
            rc = d.wait(10)
            if rc != -signal.SIGKILL:
                raise ClusterFailed("daemon %d was not killed by SIGKILL (status %r)" % (victim, rc))
            time.sleep(args.restart_after)
            t_start = time.monotonic()
            try:
                d.start(timeout=30)
            except AssertionError as e:
                raise ClusterFailed("restart of daemon %d failed: %s" % (victim, e))
            kills.append({"t": tk, "at_s": tk - t0, "victim": victim, "restart_s": time.monotonic() - t_start,
                          "owned": owned})
            k += 1
            print("  kill %d at %.0f s: daemon %d, back in %.2f s; %d studies created, %d done, %d requests answered"
                  % (k, tk - t0, victim, kills[-1]["restart_s"], len(slots.studies), len(slots.done_at),
                     sum(w.routed.calls for w in workers)), flush=True)
        while time.monotonic() < t0 + args.duration:
            time.sleep(0.1)
    except ClusterFailed as e:
        failure = str(e)
    storm_s = time.monotonic() - t0
    drain.set()
    finish_deadline = time.monotonic() + args.finish_timeout
    for w in workers:
        w.join(max(1.0, finish_deadline - time.monotonic()))
    hung = [w.wid for w in workers if w.is_alive()]
    finish_s = time.monotonic() - t0 - storm_s
    if hung and not failure:
        failure = "workers %s did not finish their studies within %.0f s of the storm's end" % (hung[:5],
                                                                                                args.finish_timeout)
    errors = [w.error for w in workers if w.error]
    if errors and not failure:
        failure = errors[0]
    for i, d in enumerate(cluster):
        if not d.running() and not failure:
            failure = "daemon %d died by itself (status %r)" % (i, d.proc.returncode)
    # Every daemon stops cleanly; then one alone reads the database back.
    stop_status = []
    for d in cluster:
        stop_status.append(d.stop(20) if d.running() else None)
    if any(rc != 0 for rc in stop_status) and not failure:
        failure = "a daemon did not stop cleanly on SIGTERM (statuses %r)" % stop_status

    result = {"kills": kills, "duration_s": storm_s, "finish_s": finish_s, "failure": failure,
              "load_before": load_before, "studies": len(slots.studies), "hung": hung}
    ledger, handed, answers, twice = Ledger(), {}, collections.defaultdict(list), []
    for w in workers:
        for tid in w.handed:
            if tid in handed:
                twice.append("trial %d handed to two workers" % tid)
        handed.update(w.handed)
        ledger.merge(w.ledger)
        for sid, ts in w.answers.items():
            answers[sid] += ts
    result.update(ledger=ledger, twice=twice)
    reader = make_daemon(db, token_file, args, cluster_flags)
    try:
        listed = {}
        missing = []
        for s in slots.studies:
            st, full, _ = reader.request("GET", "/v1/studies/%d" % s["id"])
            if st != 200:
                missing.append("study %d: acknowledged created, GET -> %d" % (s["id"], st))
                continue
            listed[s["id"]] = full
            s["_reader"] = reader
        unfinished = ["study %d (%s): %s, %r" % (sid, s.get("scheduler", {}).get("name"), s.get("state"), s["trials"])
                      for sid, s in sorted(listed.items()) if not s.get("done")]
        lost, phantom, states, stored, trials = storm_ledger.verify(
            reader, ledger, [s for s in slots.studies if s["id"] in listed], bdtest)
        left_running = sorted(tid for tid, st in stored.items() if st == "running")
        rungs, n_rungs = rung_violations({s["id"]: s for s in slots.studies if s["id"] in listed}, trials, handed)
        rc = reader.stop()
        if rc != 0 and not result["failure"]:
            result["failure"] = "the reading daemon did not stop cleanly (status %r)" % rc
    finally:
        reader.cleanup()
        for d in cluster:
            d.cleanup()
    gaps = kill_to_answer(kills, answers, slots)
    result.update(lost=missing + lost, phantom=phantom, unfinished=unfinished, left_running=left_running,
                  rungs=rungs, n_rungs=n_rungs, gaps=gaps, load_after=bench_common.loadavg(),
                  expired=sum(1 for st in stored.values() if st == "expired"),
                  cluster_flags=cluster_flags,
                  failures=sum(len(w.routed.failures) for w in workers))
    return result


def gap_figures(gaps):
    """p50/p99/max of the kill-to-answer times over all (kill, live study)
    pairs, and over the affected ones (the study was on the killed daemon)."""
    q = bench_common.quantile

    def figs(pairs):
        vals = [g for g, _ in pairs if g is not None]
        return {"pairs": len(pairs), "never": sum(1 for g, _ in pairs if g is None),
                "p50_s": round(q(vals, 0.5), 3) if vals else None,
                "p99_s": round(q(vals, 0.99), 3) if vals else None,
                "max_s": round(max(vals), 3) if vals else None}
    out = figs([v for per in gaps for v in per.values()])
    out["affected"] = figs([v for per in gaps for v in per.values() if v[1]])
    out["worst_per_kill_s"] = [max((round(g, 3) for g, _ in per.values() if g is not None), default=None)
                               for per in gaps]
    return out


def report(args, r, info):
    L = r["ledger"]
    g = gap_figures(r["gaps"])
    restarts = [k["restart_s"] for k in r["kills"]]
    print()
    print("kills              %d in %.0f s (restart median %.2f s, max %.2f s); finishing took %.0f s more"
          % (len(r["kills"]), r["duration_s"], bench_common.quantile(restarts, 0.5) if restarts else float("nan"),
             max(restarts) if restarts else float("nan"), r["finish_s"]))
    print("studies            %d created, %d not done at the end" % (r["studies"], len(r["unfinished"])))
    print("answered requests  %d (%d sent again: %d unanswered or 503)" % (L.calls, L.retries, r["failures"]))
    print("acknowledged       %d writes: %d trials, %d measurements, %d completions (%d stop answers); "
          "%d trials expired, %d answered 409" % (L.writes(), len(L.trials), L.n_measurements(), len(L.completed),
                                                 len(L.stopped), r["expired"], len(L.lease_lost)))
    print("LOST writes        %d" % len(r["lost"]))
    print("phantom writes     %d" % len(r["phantom"]))
    print("handed out twice   %d trials; rung-slot violations %d (%d SH/hyperband rungs checked)"
          % (len(r["twice"]), len(r["rungs"]), r["n_rungs"]))
    print("left running       %d" % len(r["left_running"]))
    print("unexpected answers %d" % len(L.unexpected))
    a = g["affected"]
    print("kill -> answer s   p50 %s, p99 %s, max %s over %d (kill, live study) pairs; %d never answered "
          "(target p99 <= 5 s)" % (g["p50_s"], g["p99_s"], g["max_s"], g["pairs"], g["never"]))
    print("  studies the killed daemon held: p50 %s, p99 %s, max %s over %d pairs; %d never answered"
          % (a["p50_s"], a["p99_s"], a["max_s"], a["pairs"], a["never"]))
    print("  worst study per kill: %s" % g["worst_per_kill_s"])
    for label, items in (("lost", r["lost"]), ("phantom", r["phantom"]), ("twice", r["twice"]),
                         ("rung", r["rungs"]), ("unfinished", r["unfinished"]),
                         ("left running", r["left_running"]), ("unexpected", L.unexpected)):
        for x in items[:10]:
            print("  %s: %s" % (label, x))
    if r["failure"]:
        print("FAILED: %s" % r["failure"])
    ok = not (r["failure"] or r["lost"] or r["phantom"] or r["twice"] or r["rungs"] or r["unfinished"]
              or r["left_running"] or L.unexpected)
    summary = {"bench": "failover_storm", "kind": "summary", "date": info["date"], "machine": info["machine"],
               "source": info["source"], "load_before": r["load_before"], "load_after": r.get("load_after"),
               "daemons": args.daemons, "route": args.route, "workers": args.workers, "study_slots": args.studies,
               "ownership_lease_s": args.ownership_lease if r["cluster_flags"] else None,
               "kill_every_s": args.kill_every, "duration_s": round(r["duration_s"], 1),
               "restart_after_s": args.restart_after, "work_ms": args.work_ms,
               "kills": len(r["kills"]), "studies": r["studies"], "unfinished": len(r["unfinished"]),
               "answered": L.calls, "resent": L.retries,
               "acknowledged": {"trials": len(L.trials), "measurements": L.n_measurements(),
                                "completions": len(L.completed)},
               "expired": r["expired"], "lost": len(r["lost"]), "phantom": len(r["phantom"]),
               "handed_twice": len(r["twice"]), "rung_violations": len(r["rungs"]), "rungs_checked": r["n_rungs"],
               "left_running": len(r["left_running"]), "unexpected": len(L.unexpected),
               "kill_to_answer": g, "failure": r["failure"], "passed": ok}
    lines = [dict(bench="failover_storm", kind="kill", date=info["date"], n=i + 1, at_s=round(k["at_s"], 2),
                  victim=k["victim"], restart_s=round(k["restart_s"], 3),
                  kill_to_answer_s={str(sid): None if v is None else round(v, 3) for sid, (v, _) in gaps.items()},
                  held_by_killed=sorted(sid for sid, (_, hit) in gaps.items() if hit))
             for i, (k, gaps) in enumerate(zip(r["kills"], r["gaps"]))] + [summary]
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "a") as f:
            for x in lines:
                f.write(json.dumps(x, sort_keys=True) + "\n")
        print("appended %d lines to %s" % (len(lines), args.out))
    headers = ["date", "machine", "source", "load avg before/after", "config", "kills", "studies (not done)",
               "acknowledged writes (trials / measurements / completions)", "lost", "phantom",
               "handed twice / rung violations", "kill -> answer s p50 / p99 / max (studies the killed daemon held)"]
    row = [info["date"], info["machine"], info["source"], "%s / %s" % (r["load_before"], r.get("load_after")),
           "%d daemons (route %s), lease %s s, %d workers, %d slots, kill every %.0f s for %.0f s"
           % (args.daemons, args.route,
              args.ownership_lease if r["cluster_flags"] else "-", args.workers, args.studies,
              args.kill_every, r["duration_s"]),
           len(r["kills"]), "%d (%d)" % (r["studies"], len(r["unfinished"])),
           "{:,} ({:,} / {:,} / {:,})".format(L.writes(), len(L.trials), L.n_measurements(), len(L.completed)),
           len(r["lost"]), len(r["phantom"]), "%d / %d" % (len(r["twice"]), len(r["rungs"])),
           "%s / %s / %s (%s / %s / %s, %d pairs)" % (g["p50_s"], g["p99_s"], g["max_s"], a["p50_s"], a["p99_s"],
                                                      a["max_s"], a["pairs"])]
    print("=== failover storm summary (for a dated file tests/bench/results/YYYY-MM-DD-<topic>.md; the current headline goes to tests/bench/README.md)")
    print(bench_common.md_table(headers, [row]))
    print("RESULT passed=%d lost=%d phantom=%d handed_twice=%d rung_violations=%d unfinished=%d "
          "kill_to_answer_p50_s=%s kill_to_answer_p99_s=%s kill_to_answer_max_s=%s"
          % (ok, len(r["lost"]), len(r["phantom"]), len(r["twice"]), len(r["rungs"]), len(r["unfinished"]),
             g["p50_s"], g["p99_s"], g["max_s"]), flush=True)
    return ok


class _FakeReader:
    """selftest(): answers GET /v1/studies/{id} with a fixed description."""

    def __init__(self, study):
        self.study = study

    def request(self, method, path, body=None):
        return 200, self.study, {}


def selftest():
    """The checks must be able to fail: a rung over its n, a config twice in a
    rung, a retried (expired) slot that is allowed, and a kill-to-answer time."""
    desc = {"scheduler": {"state": {"brackets_total": 1, "brackets": [
        {"iteration": 1, "bracket": 0, "rungs": [{"rung": 0, "n": 2}, {"rung": 1, "n": 1}]}]}}}
    study = {"id": 7, "_scheduler": "successive_halving", "_reader": _FakeReader(desc)}

    def trial(tid, cid, rung, state="completed"):
        return {"id": tid, "study_id": 7, "config_id": cid, "state": state,
                "scheduler": {"bracket": 0, "rung": rung}}
    good = [trial(1, 1, 0), trial(2, 2, 0, "expired"), trial(3, 2, 0), trial(4, 1, 1)]
    bad, n = rung_violations({7: study}, good, {})
    assert bad == [] and n == 2, bad
    over = good + [trial(5, 3, 0)]
    assert any("3 trials hold slots, n = 2" in b for b in rung_violations({7: study}, over, {})[0])
    dup = good + [trial(6, 1, 1, "running")]
    assert any("config 1 holds 2 slots" in b for b in rung_violations({7: study}, dup, {})[0])
    moved = rung_violations({7: study}, good, {4: (7, 1, {"bracket": 0, "rung": 0})})[0]
    assert any("handed out as" in b for b in moved), moved
    slots = Slots(argparse.Namespace())
    slots.created_at = {7: 0.0, 8: 0.0, 9: 5.0}
    slots.done_at = {8: 1.0}
    gaps = kill_to_answer([{"t": 2.0, "owned": {7}}], {7: [1.5, 2.5, 4.0]}, slots)
    assert gaps == [{7: (0.5, True)}], gaps  # 8 was done before the kill, 9 created after it
    assert gap_figures(gaps)["affected"]["p50_s"] == 0.5
    gaps = kill_to_answer([{"t": 2.0, "owned": set()}], {7: [2.5]}, slots)
    assert gaps == [{7: (0.5, False)}] and gap_figures(gaps)["affected"]["pairs"] == 0, gaps
    gaps = kill_to_answer([{"t": 2.0}], {}, slots)
    assert gaps == [{7: (None, False)}] and gap_figures(gaps)["never"] == 1, gaps
    print("failover_storm.py selftest: ok")


def main():
    global bdtest
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="build directory with banditd (default build)")
    ap.add_argument("--daemons", type=int, default=3)
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--studies", type=int, default=8, help="study slots (default 8)")
    ap.add_argument("--duration", type=float, default=300, help="seconds of storm (default 300)")
    ap.add_argument("--kill-every", type=float, default=20, help="seconds between SIGKILLs (default 20)")
    ap.add_argument("--route", choices=("rr", "sticky"), default="sticky",
                    help="sticky (default): a worker stays on one daemon (slot j's workers start on daemon "
                         "j mod N) until it fails to answer or answers 503, then moves to the next; rr: each "
                         "request to the next daemon")
    ap.add_argument("--restart-after", type=float, default=0, help="seconds a killed daemon stays down (0)")
    ap.add_argument("--ownership-lease", type=float, default=2, help="--ownership-lease-seconds (default 2)")
    ap.add_argument("--lease-seconds", type=int, default=30, help="the studies' trial lease (default 30)")
    ap.add_argument("--trials", type=int, default=120, help="max_trials of the asha, random, tpe studies (120)")
    ap.add_argument("--measurements", type=int, default=3, help="per trial (default 3)")
    ap.add_argument("--work-ms", type=float, default=50, help="a worker's sleep before each measurement (50)")
    ap.add_argument("--backoff", type=float, default=0.1, help="first wait after a failed attempt (0.1 s)")
    ap.add_argument("--max-backoff", type=float, default=1.0, help="longest wait between attempts (1 s)")
    ap.add_argument("--request-timeout", type=float, default=10.0, help="seconds an attempt may wait (10)")
    ap.add_argument("--retry-deadline", type=float, default=60.0,
                    help="seconds a request may go unanswered before the cluster counts as failed (60)")
    ap.add_argument("--finish-timeout", type=float, default=300.0,
                    help="seconds the workers get to finish their studies after the storm (300)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "failover_storm.jsonl"),
                    help="JSON lines appended here ('' for none)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: 40 s, a kill every 10 s, 8 workers, 5 slots, no --out")
    ap.add_argument("--selftest", action="store_true", help="check the checks on made-up data, then exit")
    args = ap.parse_args()
    if args.selftest:
        selftest()
        return 0
    if args.quick:
        args.duration, args.kill_every, args.workers, args.studies, args.out = 40, 10, 8, 5, ""
        args.trials = 60
    if args.daemons < 1 or args.workers < 1 or not 1 <= args.studies <= args.workers or args.kill_every <= 0 \
            or args.duration < 0 or args.ownership_lease <= 0:
        ap.error("bad options")
    if not os.environ.get("BD_TEST_PG_URL"):
        os.execv(os.path.join(SOURCE, "tests", "pgcluster.sh"),
                 [os.path.join(SOURCE, "tests", "pgcluster.sh"), sys.executable, os.path.abspath(__file__)]
                 + sys.argv[1:])
    os.environ["BD_TEST_STORE"] = "postgres"
    bdtest = bench_common.use_build(args.build)
    if args.daemons > 1 and not supports_cluster(os.environ["BANDITD"]):
        print("failover_storm.py: %s has no --advertise-url/--ownership-lease-seconds (multi-daemon clusters, "
              "branch i16-own); only --daemons 1 can run" % os.environ["BANDITD"], file=sys.stderr)
        return 2
    info = bench_common.describe()
    tokdir = tempfile.mkdtemp(prefix="bd-fs-")
    bdtest._TMPDIRS.append(tokdir)
    token_file = os.path.join(tokdir, "admin-token")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write("bdt_1_%s\n" % os.urandom(32).hex())
    db = bdtest.new_db(tokdir)
    r = storm(args, db, token_file)
    ok = report(args, r, info)
    if r["failure"]:
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
