#!/usr/bin/python3
"""kill_storm.py: SIGKILL banditd again and again under load and check that no
acknowledged write is lost and no trial is left running.

    tests/bench/kill_storm.py --build build                # 100 kills, 32 workers, --sync normal then full
    tests/bench/kill_storm.py --build build --quick        # smoke: 5 kills, 8 workers, 4 studies
    tests/bench/kill_storm.py --selftest                   # the front's recomputation on hand-worked values

For each --sync mode: starts the real daemon (tests/integration/bdtest.py's
Daemon: free port, temporary database) with a short --lease-seconds, creates
--studies studies (random search and ASHA in turn; every third one, i mod 3 = 2,
a study with several objectives instead: nsga2, ASHA and random search over
1..27 epochs in turn, each with two objectives, one maximized, and constraints), and runs
--workers threads, worker i on study i mod S, each looping suggest ->
measurements -> complete; in a multi-objective study both carry "values"
(measurements the objectives and now and then a constraint metric, completions
every objective and constraint metric). Every POST carries a fresh
Idempotency-Key; a request that gets no answer (the daemon was killed) is
retried with the same key until it gets one, across restarts. Every
acknowledged (2xx) write goes into a ledger: each trial handed out (with its
config and budget), each measurement (step, value or values), each completion
(value or values), each "stop" answer. A worker also "dies" now and then (--abandon, per trial):
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
- in a multi-objective study every acknowledged value of every objective and
  constraint metric is read back the same way (the trial's and each
  measurement's "values", "value" the first objective's), "feasible" must be
  what the constraints say of the acknowledged completion, and values stored
  where none was acknowledged are a PHANTOM; the study's pareto_front must hold
  no infeasible trial and be exactly the front recomputed here from the
  ledger's acknowledged completions (feasible, non-dominated, at full budget),
  with the acknowledged values, and with a reference point in the definition
  its hypervolume must be the one computed here; during the storm a thread
  reads each such front every 0.2 s, and every time no member may be
  infeasible, lack its values, or be dominated by another, and each member
  read must end as an acknowledged completion with the values read;
- right after the restart, running trials may only be ones a worker abandoned;
  after waiting out the lease none may be running, and every abandoned trial
  must be expired.
Prints the figures and a Markdown table row per --sync mode.

Exit status: 0 nothing lost; 1 a lost or phantom write, a trial left running,
a wrong final state, a wrong Pareto front, or an unexpected answer; 2 the daemon failed (did not
restart, or a worker hung). Python standard library only."""

import argparse
import collections
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


# The multi-objective studies (every third): error minimized, throughput
# maximized; nsga2's and ASHA's with reference values (so their hypervolume is
# checked here), random's without (BoTorch's rule on the server) and with a constraint
# on an objective's metric too. memory_mb is drawn over 0..1000 with its
# bounds 64 and 512 now and then, so about half of the completions are
# infeasible and a bound itself counts as feasible.
MO_OBJECTIVES = [{"metric": "error", "goal": "minimize", "reference": 1.0},
                 {"metric": "throughput", "goal": "maximize", "reference": 0}]
MO_CONSTRAINTS = [{"metric": "memory_mb", "max": 512}]
MO_CONSTRAINTS_RANDOM = [{"metric": "memory_mb", "min": 64, "max": 512}, {"metric": "throughput", "min": 10}]


class StormLedger(Ledger):
    """storm_ledger's Ledger (whose check reads "value", the first objective's
    in a multi-objective study) plus, for the multi-objective studies, every
    acknowledged value of every metric and each trial's budget."""

    def __init__(self):
        super().__init__()
        self.mo_measurements = {}  # trial id -> {step: {metric: value}} as acknowledged
        self.mo_completed = {}     # trial id -> {metric: value} as acknowledged
        self.budgets = {}          # trial id -> budget handed out (None: the study has no resource)

    def merge(self, o):
        super().merge(o)
        for tid, m in o.mo_measurements.items():
            self.mo_measurements.setdefault(tid, {}).update(m)
        self.mo_completed.update(o.mo_completed)
        self.budgets.update(o.budgets)

    def mo_counts(self):
        """(measurements, completions, values in all) acknowledged in multi-objective studies."""
        n_m = sum(len(m) for m in self.mo_measurements.values())
        n_v = sum(len(v) for m in self.mo_measurements.values() for v in m.values()) + \
            sum(len(v) for v in self.mo_completed.values())
        return n_m, len(self.mo_completed), n_v


def is_multi_objective(study):
    """study: a created study, its body as sent under "definition"."""
    return len(study["definition"].get("objectives") or []) > 1


def feasible(constraints, values):
    """Whether values (a report's, every metric) meet every constraint; a
    missing metric meets none."""
    return all(c["metric"] in values and c.get("min", -float("inf")) <= values[c["metric"]] <= c.get("max", float("inf"))
               for c in constraints)


def losses(objectives, values):
    return tuple(-values[o["metric"]] if o["goal"] == "maximize" else values[o["metric"]] for o in objectives)


def dominates(a, b):
    return all(x <= y for x, y in zip(a, b)) and a != b


def pareto_front(points):
    """The trial ids of points ({trial id: losses}) that no other point
    dominates (equal points are all kept, as the server keeps them)."""
    front = {}
    for tid, p in sorted(points.items()):
        if any(dominates(q, p) for q in front.values()):
            continue
        front = {k: q for k, q in front.items() if not dominates(p, q)}
        front[tid] = p
    return set(front)


def hypervolume_2d(points, ref):
    """The area dominated by points (minimized, two objectives) and bounded
    by ref; points not below ref in both are left out."""
    pts = sorted(p for p in points if p[0] < ref[0] and p[1] < ref[1])
    stairs = []  # the non-dominated points by the first loss: the second falls
    for x, y in pts:
        if not stairs or y < stairs[-1][1]:
            stairs.append((x, y))
    area = 0.0
    for i, (x, y) in enumerate(stairs):
        nxt = stairs[i + 1][0] if i + 1 < len(stairs) else ref[0]
        area += (nxt - x) * (ref[1] - y)
    return area


def selftest():
    """The front and hypervolume the checks recompute, on values worked by
    hand (test_multi_objective's: error minimized, throughput maximized,
    memory_mb <= 512), so a check that cannot fail would show. Returns the
    exit status."""
    reports = [(0.2, 2.0, 100), (0.6, 5.0, 100), (0.5, 6.0, 300), (0.1, 9.0, 600), (0.8, 8.0, 512)]
    values = {i: {"error": e, "throughput": t, "memory_mb": m} for i, (e, t, m) in enumerate(reports)}
    points = {i: losses(MO_OBJECTIVES, v) for i, v in values.items() if feasible(MO_CONSTRAINTS, v)}
    ref = losses(MO_OBJECTIVES, {"error": 1.0, "throughput": 0})
    checks = [
        ("infeasible left out, 512 within the bound", sorted(points), [0, 1, 2, 4]),
        ("front", sorted(pareto_front(points)), [0, 2, 4]),
        # by error the staircase 0.3 * 2 + 0.3 * 6 + 0.2 * 8
        ("hypervolume", round(hypervolume_2d([points[i] for i in pareto_front(points)], ref), 12), 4.0),
        ("dominated points add nothing", round(hypervolume_2d(list(points.values()), ref), 12), 4.0),
        ("a point outside the reference adds nothing",
         round(hypervolume_2d([(0.5, 0.5), (0.2, 1.5), (1.0, 0.1)], (1.0, 1.0)), 12), 0.25),
        ("equal points all kept, a tie in one objective dominated",
         sorted(pareto_front({1: (1, 1), 2: (1, 1), 3: (0, 2), 4: (1, 2), 5: (2, 1)})), [1, 2, 3]),
        ("both bounds hold", feasible(MO_CONSTRAINTS_RANDOM, {"throughput": 10, "memory_mb": 64}), True),
        ("below a min", feasible(MO_CONSTRAINTS_RANDOM, {"throughput": 9.99, "memory_mb": 300}), False),
        ("above a max", feasible(MO_CONSTRAINTS_RANDOM, {"throughput": 50, "memory_mb": 512.5}), False),
        ("a missing metric", feasible(MO_CONSTRAINTS, {"error": 0.1, "throughput": 2}), False),
    ]
    bad = [(what, got, want) for what, got, want in checks if got != want]
    for what, got, want in bad:
        print("selftest: %s: %r, expected %r" % (what, got, want))
    print("selftest: %d of %d checks passed" % (len(checks) - len(bad), len(checks)))
    return 1 if bad else 0


class Worker(threading.Thread):
    def __init__(self, d, wid, study, run_id, args, drain, seed):
        super().__init__(daemon=True)
        self.d, self.wid, self.study, self.args, self.drain = d, wid, study, args, drain
        self.rng = random.Random(seed)
        self.key_prefix = "ks-%s-%d-" % (run_id, wid)
        self.seq = 0
        self.ledger = StormLedger()
        self.client = d.client(timeout=10)
        self.mo = is_multi_objective(study)

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

    def values(self, complete):
        """A multi-objective report's "values": every objective; at completion
        every constraint metric too, in a measurement now and then one."""
        v = {"error": round(self.rng.random(), 6), "throughput": round(self.rng.uniform(0, 100), 4)}
        if complete or self.rng.random() < 0.3:
            r = self.rng.random()
            v["memory_mb"] = 512 if r < 0.05 else 64 if r < 0.1 else self.rng.randint(0, 1000)
        return v

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
            if self.mo:
                L.budgets[tid] = t.get("budget")
            budget = t.get("budget") or self.args.measurements
            finished = False
            for i in range(1, self.args.measurements + 1):
                if not self.drain.is_set() and self.rng.random() < self.args.abandon / self.args.measurements:
                    L.abandoned.add(tid)  # this worker "dies": nobody completes the trial
                    finished = True
                    break
                step = round(budget * i / self.args.measurements, 6)
                if self.mo:
                    body = {"step": step, "values": self.values(False)}
                else:
                    body = {"step": step, "value": round(self.rng.random(), 6)}
                st, ans = self.post("measurement", "/v1/trials/%d/measurements" % tid, body)
                if st == 200:
                    if self.mo:  # "value" reads back as the first objective's
                        L.mo_measurements.setdefault(tid, {})[step] = body["values"]
                        L.measurements.setdefault(tid, {})[step] = body["values"]["error"]
                    else:
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
            if self.mo:
                values = self.values(True)
                body, value = {"values": values}, values["error"]
            else:
                value = round(self.rng.random(), 6)
                body = {"value": value}
            st, ans = self.post("complete", "/v1/trials/%d/complete" % tid, body)
            if st == 200:
                L.completed[tid] = value
                if self.mo:
                    L.mo_completed[tid] = body["values"]
            elif st == 409:
                L.lease_lost.add(tid)
            else:
                self.unexpected("complete", st, ans)


def study_defs(n, lease):
    """n study bodies: random search and ASHA (eta 3 over 1..27) in turn, but
    every third one (i mod 3 = 2) has two objectives and constraints: nsga2
    (populations of 8, so generations close during the storm), ASHA (eta 3
    over 1..27 epochs: most trials end below the full budget, off the front)
    and random search over 1..27 epochs in turn."""
    out = []
    epochs = {"name": "epochs", "min": 1, "max": 27, "integer": True}
    for i in range(n):
        mo_kind = (i // 3) % 3
        if i % 3 == 2 and mo_kind == 0:
            body = bdtest.study_body(objectives=MO_OBJECTIVES, constraints=MO_CONSTRAINTS,
                                     scheduler={"name": "nsga2", "options": {"population_size": 8}})
            del body["objective"]
        elif i % 3 == 2 and mo_kind == 1:
            body = bdtest.study_body(objectives=MO_OBJECTIVES, constraints=MO_CONSTRAINTS, resource=epochs,
                                     scheduler={"name": "asha", "options": {"eta": 3}})
            del body["objective"]
        elif i % 3 == 2:
            body = bdtest.study_body(objectives=[{k: v for k, v in o.items() if k != "reference"}
                                                 for o in MO_OBJECTIVES],
                                     constraints=MO_CONSTRAINTS_RANDOM, resource=epochs,
                                     scheduler={"name": "random", "options": {"max_trials": 100000000}})
            del body["objective"]
        elif i % 2 == 0:
            body = bdtest.study_body(scheduler={"name": "random", "options": {"max_trials": 100000000}})
        else:
            body = bdtest.study_body(resource={"name": "epochs", "min": 1, "max": 27, "integer": True},
                                     scheduler={"name": "asha", "options": {"eta": 3}})
        body["name"] = "kill-storm-%d-%s" % (i, body["name"])
        body["lease_seconds"] = lease
        body["seed"] = 100 + i
        out.append(body)
    return out


def verify_multi_objective(d, ledger, studies, threads=8):
    """Reads back every acknowledged value of the multi-objective studies'
    trials through daemon d and checks each study's Pareto front against the
    front recomputed from the ledger. Returns (lost, phantom, front_bad,
    fronts): lists of descriptions, and per study (id, scheduler, front size
    on the server, recomputed, feasible completions at full budget,
    completions). A trial GET cannot answer is storm_ledger.verify's to
    count, as are the measurement steps stored but never acknowledged."""
    mo = {s["id"]: s["definition"] for s in studies if is_multi_objective(s)}
    lost, phantom, front_bad, fronts = [], [], [], []
    tids = sorted(tid for tid, (sid, _) in ledger.trials.items() if sid in mo)
    lock = threading.Lock()

    def check(chunk):
        c = d.client(timeout=30)
        for tid in chunk:
            definition = mo[ledger.trials[tid][0]]
            st, t, _ = c.request("GET", "/v1/trials/%d" % tid)
            if st != 200:
                continue
            bad, extra = [], []
            stored = collections.defaultdict(list)
            for m in t.get("measurements", []):
                stored[m["step"]].append(m.get("values"))
            for step, values in ledger.mo_measurements.get(tid, {}).items():
                if stored.get(step) != [values]:
                    bad.append("trial %d step %r: acknowledged values %r, stored %r"
                               % (tid, step, values, stored.get(step)))
            values = ledger.mo_completed.get(tid)
            if values is not None:
                if t.get("values") != values:
                    bad.append("trial %d: acknowledged completion values %r, stored %r" % (tid, values, t.get("values")))
                if t.get("feasible") is not feasible(definition["constraints"], values):
                    bad.append("trial %d: values %r are %s, stored feasible %r"
                               % (tid, values, "feasible" if feasible(definition["constraints"], values)
                                  else "infeasible", t.get("feasible")))
            elif t.get("values") is not None:
                extra.append("trial %d (%s): stored values %r, no completion acknowledged"
                             % (tid, t["state"], t["values"]))
            with lock:
                lost.extend(bad)
                phantom.extend(extra)
        c.close()

    per = max(1, (len(tids) + threads - 1) // threads)
    ts = [threading.Thread(target=check, args=(tids[i:i + per],)) for i in range(0, len(tids), per)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()

    for sid, definition in sorted(mo.items()):
        s = bdtest.expect(d.request("GET", "/v1/studies/%d" % sid), 200, "study")
        objectives, constraints = definition["objectives"], definition["constraints"]
        if s.get("objectives") != objectives or s.get("constraints") != constraints:
            front_bad.append("study %d: objectives %r constraints %r, defined %r %r"
                             % (sid, s.get("objectives"), s.get("constraints"), objectives, constraints))
        r_max = (definition.get("resource") or {}).get("max")
        done = [tid for tid in ledger.mo_completed if ledger.trials[tid][0] == sid]
        points = {tid: losses(objectives, ledger.mo_completed[tid]) for tid in done
                  if feasible(constraints, ledger.mo_completed[tid])
                  and (r_max is None or (ledger.budgets.get(tid) or 0) >= r_max)}
        expected = pareto_front(points)
        front = s.get("pareto_front") or []
        got = [p["trial_id"] for p in front]
        fronts.append((sid, definition["scheduler"]["name"], len(got), len(expected), len(points), len(done)))
        if s.get("pareto_front_truncated") is not False:
            front_bad.append("study %d: pareto_front_truncated %r" % (sid, s.get("pareto_front_truncated")))
        if len(set(got)) != len(got) or set(got) != expected:
            front_bad.append("study %d: pareto_front %s, recomputed from the ledger %s (only on the server %s, "
                             "only recomputed %s)" % (sid, sorted(got), sorted(expected), sorted(set(got) - expected),
                                                     sorted(expected - set(got))))
        for p in front:
            acked = ledger.mo_completed.get(p["trial_id"])
            if acked is None or not feasible(constraints, p["values"]) or not feasible(constraints, acked):
                front_bad.append("study %d: trial %d on the front with values %r, acknowledged %r: infeasible "
                                 "or never completed" % (sid, p["trial_id"], p["values"], acked))
            elif p["values"] != acked or p["config"] != ledger.trials[p["trial_id"]][1]:
                front_bad.append("study %d: trial %d on the front with values %r config %r, acknowledged %r %r"
                                 % (sid, p["trial_id"], p["values"], p["config"], acked,
                                    ledger.trials[p["trial_id"]][1]))
        if len(objectives) == 2 and all("reference" in o for o in objectives):
            ref = losses(objectives, {o["metric"]: o["reference"] for o in objectives})
            hv = hypervolume_2d([points[tid] for tid in expected], ref)
            if s.get("hypervolume") is None or abs(s["hypervolume"] - hv) > 1e-9 * max(1.0, hv):
                front_bad.append("study %d: hypervolume %r, recomputed %r" % (sid, s.get("hypervolume"), hv))
    return lost, phantom, front_bad, fronts


class FrontWatcher(threading.Thread):
    """Reads the multi-objective studies' pareto_front during the storm (one
    GET per study every 0.2 s; no answer while the daemon is down): each time
    every member must have its values, be feasible and be dominated by no
    other member. Problems go into .bad, successful reads count in .reads,
    and .seen keeps every member read (trial id -> values) for check_seen."""

    def __init__(self, d, studies, drain):
        super().__init__(daemon=True)
        self.studies = [s for s in studies if is_multi_objective(s)]
        self.d, self.drain, self.bad, self.reads, self.seen = d, drain, [], 0, {}

    def run(self):
        c = self.d.client(timeout=10)
        while not self.drain.is_set() and self.studies:
            for study in self.studies:
                definition = study["definition"]
                try:
                    st, s, _ = c.request("GET", "/v1/studies/%d" % study["id"])
                except (OSError, http.client.HTTPException, AttributeError):
                    st = None
                if st != 200:
                    c.close()
                    continue
                self.reads += 1
                front = s.get("pareto_front") or []
                for p in front:
                    v = p.get("values")
                    self.seen.setdefault(p.get("trial_id"), v)
                    if not isinstance(v, dict) or not feasible(definition["constraints"], v):
                        self.bad.append("during the storm, study %d: trial %r on the front with values %r"
                                        % (study["id"], p.get("trial_id"), v))
                pts = {p["trial_id"]: losses(definition["objectives"], p["values"]) for p in front
                       if isinstance(p.get("values"), dict)
                       and all(o["metric"] in p["values"] for o in definition["objectives"])}
                dominated = set(pts) - pareto_front(pts)
                if dominated:
                    self.bad.append("during the storm, study %d: front members %s dominated by others"
                                    % (study["id"], sorted(dominated)))
                del self.bad[50:]
            time.sleep(0.2)
        c.close()

    def check_seen(self, ledger):
        """Each member read during the storm must be a completion a worker was
        acknowledged, with those values: one shown and then lost to a SIGKILL
        (read before it was durable) is a lost value too."""
        return ["during the storm, trial %r on a front with values %r; acknowledged completion %r"
                % (tid, v, ledger.mo_completed.get(tid)) for tid, v in sorted(self.seen.items(), key=str)
                if ledger.mo_completed.get(tid) != v]


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
    studies = []
    for body in study_defs(args.studies, args.lease_seconds):
        studies.append(bdtest.expect(d.request("POST", "/v1/studies", body), 201, "create study"))
        studies[-1]["definition"] = body
    drain = threading.Event()
    run_id = "%d%d" % (os.getpid(), int(time.time()))
    workers = [Worker(d, i, studies[i % len(studies)], run_id, args, drain, args.seed * 1000 + i)
               for i in range(args.workers)]
    stats = {"restart_s": []}
    failure = None
    t0 = time.monotonic()
    watcher = FrontWatcher(d, studies, drain)
    watcher.start()
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
    watcher.join(30)
    ledger = StormLedger()
    for w in workers:
        ledger.merge(w.ledger)
    result = {"sync": sync, "kills": len(stats["restart_s"]), "duration_s": storm_s, "ledger": ledger,
              "load_before": load_before, "failure": failure,
              "mo_studies": sum(1 for s in studies if is_multi_objective(s)), "front_reads": watcher.reads,
              "front_seen": len(watcher.seen)}
    if failure:
        print("FAILED: %s" % failure)
        result.update(lost=[], phantom=[], left_running=[], wrong_state=[], running_after_restart=0,
                      mo_lost=[], mo_phantom=[], front_bad=[], fronts=[])
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
    mo_lost, mo_phantom, front_bad, fronts = verify_multi_objective(d, ledger, studies)
    left_running = sorted(tid for tid, st in listed.items() if st == "running")
    wrong_state = ["trial %d: %s, expected %s" % (tid, states[tid], expected_state(ledger, tid))
                   for tid in sorted(states) if states[tid] != expected_state(ledger, tid)
                   and tid not in left_running]
    alive = d.running()
    rc = d.stop()
    if not alive or rc != 0:
        result["failure"] = "banditd did not stop cleanly on SIGTERM (status %r)" % rc
    result.update(lost=lost + mo_lost, phantom=phantom + mo_phantom, mo_lost=mo_lost, mo_phantom=mo_phantom,
                  front_bad=watcher.bad + watcher.check_seen(ledger) + front_bad, fronts=fronts, left_running=left_running, wrong_state=wrong_state,
                  running_after_restart=len(running_now), unexplained_running=unexplained,
                  restart_s=stats["restart_s"], load_after=bench_common.loadavg())
    report(result)
    if lost or phantom or mo_lost or mo_phantom or front_bad or left_running or wrong_state or ledger.unexpected:
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
    n_m, n_c, n_v = L.mo_counts()
    print("multi-objective    %d studies: %d values acknowledged (every metric) in %d measurements and %d completions"
          " (%d feasible at full budget)" % (r["mo_studies"], n_v, n_m, n_c, sum(f[4] for f in r["fronts"])))
    for sid, sched, n_got, n_expected, n_feasible, n_done in r["fronts"]:
        print("  study %d (%s): pareto_front %d trials, recomputed from the ledger %d (%d of %d completions "
              "feasible at full budget)" % (sid, sched, n_got, n_expected, n_feasible, n_done))
    print("LOST writes        %d (of them values of a multi-objective study %d)" % (len(r["lost"]), len(r["mo_lost"])))
    print("phantom writes     %d (of them values of a multi-objective study %d)"
          % (len(r["phantom"]), len(r["mo_phantom"])))
    print("wrong Pareto front %d (fronts read during the storm: %d, %d distinct members)"
          % (len(r["front_bad"]), r["front_reads"], r["front_seen"]))
    print("left running       %d (after waiting out the lease)" % len(r["left_running"]))
    print("wrong final state  %d" % len(r["wrong_state"]))
    print("unexpected answers %d" % len(L.unexpected))
    for label, items in (("lost", r["lost"]), ("phantom", r["phantom"]), ("left running", r["left_running"]),
                         ("wrong state", r["wrong_state"]), ("wrong front", r["front_bad"]),
                         ("unexpected", L.unexpected),
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
    ap.add_argument("--selftest", action="store_true",
                    help="check the Pareto front and hypervolume recomputation on values worked by hand; no daemon")
    args = ap.parse_args()
    if args.selftest:
        return selftest()
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
                     "--sync %s, %d workers, %d studies (%d multi-objective), lease %d s"
                     % (r["sync"], args.workers, args.studies, r["mo_studies"], args.lease_seconds),
                     r["kills"], "%.0f" % r["duration_s"],
                     "{:,} ({:,} / {:,} / {:,})".format(L.writes(), len(L.trials),
                                                        sum(len(m) for m in L.measurements.values()),
                                                        len(L.completed)),
                     len(r["lost"]), len(r["phantom"]), len(r["left_running"]),
                     "%.2f / %.2f" % (bench_common.quantile(r["restart_s"], 0.5), max(r["restart_s"]))])
    print("=== kill storm summary (for a dated file tests/bench/results/YYYY-MM-DD-<topic>.md; the current headline goes to tests/bench/README.md)")
    print(bench_common.md_table(headers, rows))
    mo_headers = ["date", "source", "config", "multi-objective studies",
                  "acknowledged values (measurements / completions carrying them)", "feasible completions at full budget",
                  "values lost", "values phantom", "pareto_front trials (server = recomputed)", "wrong fronts"]
    mo_rows = []
    for r in results:
        if not r.get("fronts"):
            continue
        L = r["ledger"]
        n_m, n_c, n_v = L.mo_counts()
        mo_rows.append([info["date"], info["source"], "--sync %s, %d kills" % (r["sync"], r["kills"]),
                        ", ".join("%s %d" % (f[1], f[0]) for f in r["fronts"]),
                        "{:,} ({:,} / {:,})".format(n_v, n_m, n_c), "{:,}".format(sum(f[4] for f in r["fronts"])),
                        len(r["mo_lost"]), len(r["mo_phantom"]),
                        ", ".join("%d = %d" % (f[2], f[3]) if f[2] == f[3] else "%d != %d" % (f[2], f[3])
                                  for f in r["fronts"]),
                        len(r["front_bad"])])
    if mo_rows:
        print()
        print(bench_common.md_table(mo_headers, mo_rows))
    if any(r["failure"] for r in results):
        return 2
    bad = any(r["lost"] or r["phantom"] or r["front_bad"] or r["left_running"] or r["wrong_state"]
              or r["ledger"].unexpected for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
