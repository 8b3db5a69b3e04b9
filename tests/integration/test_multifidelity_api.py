"""Multi-fidelity schedulers (successive_halving, hyperband, asha) through the
HTTP API, with fake workers: the golden Hyperband tables (R = 81, 27, 243 from
tests/fixtures/hyperband/, cross-checked against an independent computation),
promotions with resume_from and survivors ranked by the reported losses,
Successive Halving's budgets and survivors on a hand-made example (and its
doubling trick), the ASHA test vector, and "workers never idle" with ten
virtual workers. Restarts, replay and vanishing workers are in
test_multifidelity_restart.py, which reuses the Driver below.

The virtual workers run in one thread: every idle worker asks for one trial,
then one running trial (picked by a seeded RNG) is completed with
loss_of(config, budget). A run is therefore a deterministic function of the
daemon's answers, which is what the twin comparisons in the restart tests
rely on."""

import collections
import json
import math
import os
import random
import sys
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bdtest  # noqa: E402
from bdtest import expect, unique_name  # noqa: E402

SOURCE_DIR = os.environ.get("BD_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(SOURCE_DIR, "tests", "fixtures", "hyperband")

PARAMETERS = [
    {"name": "x", "type": "float", "low": 0.0, "high": 1.0},
    {"name": "y", "type": "float", "low": 0.01, "high": 10.0, "log": True},
    {"name": "k", "type": "categorical", "choices": ["a", "b", "c"]},
]


def loss_of(config, budget):
    """Deterministic loss of `config` trained to `budget`: falls with the budget,
    and the config-dependent 1/budget term reorders configs between budgets."""
    x, y = config["x"], config["y"]
    base = (x - 0.3) ** 2 + 0.05 * math.log(y) ** 2 + {"a": 0.0, "b": 0.02, "c": 0.05}[config["k"]]
    return base + (0.2 + x) / (1.0 + float(budget))


def rank_key(t):
    """Ranking rule of docs/SCHEDULERS.md "Rules common to all three": smaller loss first, ties to the lower config_id."""
    return (t["loss"], t["config_id"])


# ---------------------------------------------------------------- plans

def load_fixture(name):
    """(study.json, expected.json) of tests/fixtures/hyperband/<name>."""
    d = os.path.join(FIXTURES, name)
    with open(os.path.join(d, "study.json")) as f:
        study = json.load(f)
    with open(os.path.join(d, "expected.json")) as f:
        expected = json.load(f)
    return study, expected


def hyperband_plan(R, eta, r_min=1):
    """Li et al. 2018, Algorithm 1 with integers: {s: [(n_i, r_i), ...]},
    r_i = floor(R eta^(i-s)) (integer resource)."""
    s_max = 0
    while r_min * eta ** (s_max + 1) <= R:
        s_max += 1
    plan = {}
    for s in range(s_max, -1, -1):
        n = -(-((s_max + 1) * eta ** s) // (s + 1))
        plan[s] = [(n // eta ** i, max(r_min, (R * eta ** i) // eta ** s)) for i in range(s + 1)]
    return plan


def plan_from_table(table):
    """Fixture rows [s, budget, n] -> {s: [(n_i, r_i), ...]} in rung order."""
    plan = collections.defaultdict(list)
    for s, budget, n in table:
        plan[s].append((n, budget))
    for s in plan:
        plan[s].sort(key=lambda nr: nr[1])
    return dict(plan)


def table_of(plan):
    return {(s, r): n for s, rungs in plan.items() for n, r in rungs}


# ---------------------------------------------------------------- studies

def study_body(scheduler, resource, seed=11, goal="minimize", lease_seconds=None, name=None):
    body = {"name": name or unique_name("mf"), "parameters": PARAMETERS,
            "objective": {"metric": "loss", "goal": goal}, "resource": resource,
            "scheduler": scheduler, "seed": seed}
    if lease_seconds is not None:
        body["lease_seconds"] = lease_seconds
    return body


def create_study(daemon, *args, **kwargs):
    return expect(daemon.request("POST", "/v1/studies", study_body(*args, **kwargs)), 201, "create study")


def get_study(daemon, sid):
    return expect(daemon.request("GET", "/v1/studies/%d" % sid), 200, "GET study %d" % sid)


def wait_until_expired(daemon, tid, timeout=6.0):
    """Polls GET /v1/trials/{tid} until its state is expired; returns the trial."""
    deadline = time.monotonic() + timeout
    while True:
        t = expect(daemon.request("GET", "/v1/trials/%d" % tid), 200, "GET trial %d" % tid)
        if t["state"] == "expired":
            return t
        if t["state"] != "running":
            raise AssertionError("trial %d ended as %s, not expired: %r" % (tid, t["state"], t))
        if time.monotonic() > deadline:
            raise AssertionError("trial %d still running %.0f s after its lease was due: %r" % (tid, timeout, t))
        time.sleep(0.05)


# ---------------------------------------------------------------- driver

class Driver:
    """Virtual workers on one study, all in this thread (see the module comment).

    trials: id -> the trial as suggested, plus "created_seq", and after its
    completion "loss" and "completed_seq" (one counter orders both). drop(t) may
    mark a fresh trial as taken by a worker that vanishes: it is never reported
    and that worker never comes back; step() then waits for the lease to run out
    instead of calling the study stuck. transcript lists every answer with ids
    replaced by creation ordinals, so two studies can be compared."""

    def __init__(self, daemon, sid, workers=4, seed=1, goal="minimize", on_wait=None, drop=None):
        self.daemon = daemon
        self.client = daemon.client()
        self.sid = sid
        self.rng = random.Random(seed)
        self.sign = -1.0 if goal == "maximize" else 1.0
        self.idle = ["vw%d" % i for i in range(workers)]
        self.trials = {}
        self.order = []
        self.ordinal = {}
        self.running = []
        self.dropped = []
        self.completed = []
        self.transcript = []
        self.waits = 0
        self.done = False
        self.seq = 0
        self.on_wait = on_wait
        self.drop = drop

    def close(self):
        self.client.close()

    def reconnect(self):
        """After a daemon restart: the old keep-alive connection is dead."""
        self.client.close()

    def post(self, path, body):
        st, answer, _ = self.client.request("POST", path, body)
        if st != 200:
            raise AssertionError("POST %s %r -> %d %r" % (path, body, st, answer))
        return answer

    def _ord(self, tid):
        if tid is None:
            return None
        return self.ordinal.get(tid, "unknown id %r" % (tid,))

    def normalized(self, t):
        """A trial with ids replaced by creation ordinals."""
        return {"n": self._ord(t["id"]), "config_of": self._ord(t["config_id"]),
                "config": t["config"], "budget": t["budget"], "scheduler": t.get("scheduler"),
                "resume_from": self._ord(t["resume_from"]), "worker": t["worker"]}

    def ask(self, worker):
        """One suggest (count 1) for worker: returns the trial, "wait" or "done"."""
        answer = self.post("/v1/studies/%d/suggest" % self.sid, {"worker": worker, "count": 1})
        trials = answer.get("trials")
        if trials:
            if len(trials) != 1:
                raise AssertionError("suggest with count 1 gave %d trials: %r" % (len(trials), answer))
            t = trials[0]
            self.seq += 1
            t["created_seq"] = self.seq
            self.ordinal[t["id"]] = len(self.order)
            self.order.append(t["id"])
            self.trials[t["id"]] = t
            self.transcript.append(("trial", self.normalized(t)))
            return t
        if answer.get("done") is True:
            if self.running:
                raise AssertionError("suggest answered done while trials %r run" % self.running)
            self.transcript.append(("done",))
            return "done"
        if not isinstance(answer.get("retry_after_ms"), int) or answer["retry_after_ms"] <= 0:
            raise AssertionError("suggest gave no trial, no done and no retry_after_ms: %r" % answer)
        self.waits += 1
        self.transcript.append(("wait", worker))
        return "wait"

    def fill(self):
        """Idle workers ask for work until one is told to wait or the study is done."""
        while self.idle and not self.done:
            got = self.ask(self.idle[0])
            if got == "done":
                self.done = True
            elif got == "wait":
                if self.on_wait:
                    self.on_wait(self)
                return
            else:
                self.idle.pop(0)
                if self.drop and self.drop(self, got):
                    self.dropped.append(got["id"])
                else:
                    self.running.append(got["id"])

    def complete(self, tid, loss=None):
        t = self.trials[tid]
        loss = loss_of(t["config"], t["budget"]) if loss is None else loss
        answer = self.post("/v1/trials/%d/complete" % tid, {"value": self.sign * loss})
        if answer.get("state") != "completed" or answer.get("id") != tid:
            raise AssertionError("complete trial %d: %r" % (tid, answer))
        self.running.remove(tid)
        self.seq += 1
        t["loss"] = loss
        t["value"] = self.sign * loss
        t["completed_seq"] = self.seq
        self.completed.append(tid)
        self.idle.append(t["worker"])
        self.transcript.append(("complete", self.ordinal[tid]))

    def step(self):
        """fill(), then completes one running trial. False once the study is done."""
        self.fill()
        if self.running:
            self.complete(self.running[self.rng.randrange(len(self.running))])
            return True
        if self.done:
            return False
        pending = [tid for tid in self.dropped if self.trials[tid].get("expired") is None]
        if not pending:
            raise AssertionError("stuck: nothing runs and suggest answers retry_after_ms (%d trials so far)"
                                 % len(self.order))
        for tid in pending:
            self.trials[tid]["expired"] = wait_until_expired(self.daemon, tid)
            self.transcript.append(("expired", self.ordinal[tid]))
        return True

    def run(self, completions=None):
        """Runs until the study is done, or until `completions` more steps."""
        n = 0
        while completions is None or n < completions:
            if not self.step():
                return
            n += 1

    def by_rung(self, completed_only=True):
        """(bracket, rung) -> trials in creation order."""
        out = collections.defaultdict(list)
        for tid in self.order:
            t = self.trials[tid]
            if completed_only and "loss" not in t:
                continue
            out[(t["scheduler"]["bracket"], t["scheduler"]["rung"])].append(t)
        return out

    def counts(self, completed_only=True):
        """Counter of (bracket, budget)."""
        return collections.Counter((t["scheduler"]["bracket"], t["budget"])
                                   for t in self.trials.values() if not completed_only or "loss" in t)


def driver(test, *args, **kwargs):
    """A Driver whose connection is closed when the test ends."""
    drv = Driver(*args, **kwargs)
    test.addCleanup(drv.close)
    return drv


def check_resume_from(test, drv, what):
    """Rung 0: a new config (config_id = own id, no resume_from). Rung > 0: resume_from
    = the config's latest trial completed before this one was created, with a smaller budget."""
    for tid in drv.order:
        t = drv.trials[tid]
        rung = t["scheduler"]["rung"]
        if rung == 0:
            test.assertIsNone(t["resume_from"], "%s: rung-0 trial %r" % (what, t))
            test.assertEqual(t["config_id"], tid, "%s: rung-0 trial %r starts a new config" % (what, t))
            continue
        test.assertIsNotNone(t["resume_from"], "%s: promoted trial without resume_from: %r" % (what, t))
        prev = drv.trials.get(t["resume_from"])
        test.assertIsNotNone(prev, "%s: resume_from %r is no trial of this study" % (what, t["resume_from"]))
        test.assertEqual(prev["config_id"], t["config_id"], "%s: %r resumes another config: %r" % (what, t, prev))
        test.assertIn("completed_seq", prev, "%s: %r resumes a trial never completed" % (what, t))
        test.assertLess(prev["completed_seq"], t["created_seq"], "%s: %r resumes a later trial" % (what, t))
        test.assertLess(prev["budget"], t["budget"], "%s: %r resumes a trial with budget %r" % (
            what, t, prev["budget"]))
        test.assertEqual(prev["scheduler"]["rung"], rung - 1, "%s: %r resumes %r" % (what, t, prev))
        earlier = [u for u in drv.trials.values() if u["config_id"] == t["config_id"]
                   and u.get("completed_seq", 1 << 60) < t["created_seq"]]
        latest = max(earlier, key=lambda u: u["completed_seq"])
        test.assertEqual(latest["id"], prev["id"], "%s: %r does not resume the config's latest trial" % (what, t))


def check_hyperband_run(test, drv, plan, what, state=None):
    """A finished run of a one-pass Hyperband study against plan: trials per
    (bracket, budget), budgets per rung, survivors, resume_from; with state
    (GET study's scheduler.state) also its survivors lists and winners."""
    test.assertTrue(drv.done, "%s: the study never answered done" % what)
    unfinished = [tid for tid in drv.order if "loss" not in drv.trials[tid] and tid not in drv.dropped]
    test.assertEqual(unfinished, [], "%s: trials left unfinished" % what)
    got = drv.counts()
    want = collections.Counter(table_of(plan))
    test.assertEqual(sorted(got.items()), sorted(want.items()), "%s: trials per (bracket, budget)" % what)
    check_resume_from(test, drv, what)
    rungs = drv.by_rung()
    for t in drv.trials.values():
        s, i = t["scheduler"]["bracket"], t["scheduler"]["rung"]
        test.assertIn(s, plan, "%s: trial in unplanned bracket: %r" % (what, t))
        test.assertEqual(t["budget"], plan[s][i][1], "%s: budget of bracket %d rung %d: %r" % (what, s, i, t))
    survivors = {}
    for s, srungs in plan.items():
        for i in range(len(srungs) - 1):
            ranked = sorted(rungs[(s, i)], key=rank_key)
            best = [t["config_id"] for t in ranked[:srungs[i + 1][0]]]
            survivors[(s, i)] = best
            promoted = [t["config_id"] for t in rungs[(s, i + 1)]]
            test.assertEqual(sorted(promoted), sorted(best),
                             "%s: bracket %d rung %d -> %d: promoted configs vs the best %d by reported loss"
                             % (what, s, i, i + 1, len(best)))
            test.assertEqual(len(set(promoted)), len(promoted), "%s: a config promoted twice" % what)
    if state is None:
        return
    test.assertIsNone(state.get("next"), "%s: a bracket is still planned: %r" % (what, state.get("next")))
    listed = {b["bracket"]: b for b in state["brackets"]}
    test.assertEqual(sorted(listed), sorted(plan), "%s: brackets in scheduler.state" % what)
    for s, srungs in plan.items():
        b = listed[s]
        test.assertEqual(b["state"], "done", "%s: bracket %d: %r" % (what, s, b))
        for i in range(len(srungs) - 1):
            test.assertEqual(b["rungs"][i].get("survivors"), survivors[(s, i)],
                             "%s: scheduler.state survivors of bracket %d rung %d (best first)" % (what, s, i))
        last = sorted(rungs[(s, len(srungs) - 1)], key=rank_key)[0]
        test.assertEqual(b["winner"]["config_id"], last["config_id"], "%s: winner of bracket %d" % (what, s))


# ---------------------------------------------------------------- tests

class HyperbandGolden(bdtest.DaemonTestCase):
    """The R = 81 / 27 / 243 tables, reproduced by a study driven over HTTP."""

    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def run_golden(self, fixture, workers, seed, goal="minimize", options=None):
        study_def, expected = load_fixture(fixture)
        plan = plan_from_table(expected["table"])
        res = study_def["resource"]
        opts = dict(study_def["options"])
        self.assertEqual(plan, hyperband_plan(int(res["max"]), opts.get("eta", 3), int(res["min"])),
                         "fixture %s disagrees with Algorithm 1 computed here" % fixture)
        self.assertEqual(sum(n for n, _ in sum(plan.values(), [])), expected["total"], fixture)
        opts.update(options or {})
        study = create_study(self.d, {"name": "hyperband", "options": opts}, dict(res, name="epochs"),
                             seed=seed, goal=goal)
        drv = driver(self, self.d, study["id"], workers=workers, seed=seed, goal=goal)
        drv.run()
        what = "%s (%d workers)" % (fixture, workers)
        final = get_study(self.d, study["id"])
        check_hyperband_run(self, drv, plan, what, final["scheduler"]["state"])
        for t in drv.trials.values():
            self.assertNotIn("iteration", t["scheduler"], "%s: one pass has no iteration label: %r" % (what, t))
        self.assertIs(final["done"], True, "%s: GET study done" % what)
        self.assertEqual(final["trials"]["completed"], expected["total"], what)
        self.assertEqual(final["trials"]["total"], expected["total"], what)
        best = min(drv.trials.values(), key=rank_key)
        self.assertEqual(final["incumbent"]["value"], best["value"], "%s: incumbent %r" % (what, final["incumbent"]))
        return drv, plan

    def test_r81_eta3_table(self):
        self.run_golden("r81_eta3", workers=4, seed=81, options={"iterations": 1})

    def test_r27_table_maximized_metric(self):
        # goal maximize: the worker reports -loss, survivors are the largest values.
        self.run_golden("r27_eta3", workers=3, seed=27, goal="maximize")

    def test_r243_table(self):
        drv, plan = self.run_golden("r243_eta3", workers=6, seed=243)
        rungs = drv.by_rung()
        first = [len(rungs[(s, 0)]) for s in range(5, -1, -1)]
        self.assertEqual(first, [243, 98, 41, 18, 9, 6], "R = 243: first-round n per bracket s = 5..0")


class NoIdleWorkers(bdtest.DaemonTestCase):
    """Ten virtual workers on Hyperband R = 81: suggest answers retry_after_ms
    only when no bracket can start a trial (every bracket started, every
    started bracket's current rung handed out and waiting on running trials)."""

    def test_ten_workers_never_wait_while_work_exists(self):
        d = bdtest.Daemon()
        self.addCleanup(d.cleanup)
        plan = hyperband_plan(81, 3)
        study = create_study(d, {"name": "hyperband", "options": {"eta": 3}},
                             {"name": "epochs", "min": 1, "max": 81, "integer": True}, seed=5)
        unstarted_waits, bad_waits = [], []

        def on_wait(drv):
            created, finished, top = collections.Counter(), collections.Counter(), {}
            for t in drv.trials.values():
                s, i = t["scheduler"]["bracket"], t["scheduler"]["rung"]
                created[(s, i)] += 1
                finished[(s, i)] += "loss" in t
                top[s] = max(top.get(s, -1), i)
            at = "wait after %d trials, %d running" % (len(drv.order), len(drv.running))
            for s, rungs in plan.items():
                if s not in top:
                    unstarted_waits.append("%s: bracket %d not started" % (at, s))
                    continue
                i = top[s]
                if created[(s, i)] < rungs[i][0]:
                    bad_waits.append("%s: bracket %d rung %d has handed out %d of %d" % (
                        at, s, i, created[(s, i)], rungs[i][0]))
                elif i + 1 < len(rungs) and finished[(s, i)] == rungs[i][0]:
                    bad_waits.append("%s: bracket %d rung %d is complete, rung %d not started" % (at, s, i, i + 1))

        drv = driver(self, d, study["id"], workers=10, seed=10, on_wait=on_wait)
        drv.run()
        self.assertGreater(drv.waits, 0, "ten workers on 206 trials never waited: the check saw nothing")
        self.assertEqual(unstarted_waits, [], "retry_after_ms while brackets were still unstarted")
        self.assertEqual(bad_waits, [], "retry_after_ms while a started bracket had work")
        check_hyperband_run(self, drv, plan, "10 workers", get_study(d, study["id"])["scheduler"]["state"])
        # Brackets overlap: bracket 3 starts while bracket 4's first rung still runs.
        rungs = drv.by_rung()
        first_b3 = min(t["created_seq"] for t in rungs[(3, 0)])
        last_b4 = max(t["completed_seq"] for t in rungs[(4, 0)])
        self.assertLess(first_b3, last_b4, "bracket 3 started only after bracket 4 rung 0 ended")


class SuccessiveHalving(bdtest.DaemonTestCase):

    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def test_hand_made_example(self):
        # n = 10 arms, B = 230, halving (eta 2): K = ceil(log2 10) = 4 rounds of
        # 10, 5, 2, 1 arms; r_k = floor(230 / (|S_k| 4)) = floor(5.75, 11.5, 28.75, 57.5)
        # = 5, 11, 28, 57 more units, so cumulative R_k = 5, 16, 44, 101;
        # spend 50 + 55 + 56 + 57 = 218 <= B.
        n, B, eta = 10, 230, 2
        K, p = 0, 1
        while p < n:
            p *= 2
            K += 1
        sizes = [n]
        while len(sizes) < K:
            sizes.append(sizes[-1] // eta)
        cum, budgets = 0, []
        for size in sizes:
            cum += B // (size * K)
            budgets.append(cum)
        self.assertEqual((K, sizes, budgets), (4, [10, 5, 2, 1], [5, 16, 44, 101]))

        study = create_study(self.d, {"name": "successive_halving", "options": {"n": n, "budget": B}},
                             {"name": "epochs", "min": 1, "max": 120, "integer": True}, seed=3)
        state = study["scheduler"]["state"]
        self.assertEqual(state["plan"], {"bracket": 0, "n": sizes, "budget": budgets}, "SH plan in scheduler.state")
        drv = driver(self, self.d, study["id"], workers=3, seed=3)
        drv.run()
        self.assertTrue(drv.done)
        rungs = drv.by_rung()
        self.assertEqual(sorted(rungs), [(0, k) for k in range(K)], "rounds")
        self.assertEqual([len(rungs[(0, k)]) for k in range(K)], sizes, "arms per round")
        spend = 0
        for k in range(K):
            for t in rungs[(0, k)]:
                self.assertEqual(t["budget"], budgets[k], "round %d budget: %r" % (k, t))
                self.assertEqual(t["scheduler"], {"bracket": 0, "rung": k}, "round %d: %r" % (k, t))
                spend += t["budget"] - (drv.trials[t["resume_from"]]["budget"] if t["resume_from"] else 0)
            if k + 1 < K:
                best = sorted(rungs[(0, k)], key=rank_key)[:sizes[k] // eta]
                self.assertEqual(sorted(t["config_id"] for t in rungs[(0, k + 1)]),
                                 sorted(t["config_id"] for t in best), "survivors of round %d" % k)
                # Synchronous: round k+1 starts only once round k has ended.
                self.assertGreater(min(t["created_seq"] for t in rungs[(0, k + 1)]),
                                   max(t["completed_seq"] for t in rungs[(0, k)]), "round %d started early" % (k + 1))
        self.assertLessEqual(spend, B, "total spend")
        self.assertEqual(spend, 218, "total spend")
        check_resume_from(self, drv, "SH")
        final = get_study(self.d, study["id"])
        self.assertIs(final["done"], True)
        winner = final["scheduler"]["state"]["brackets"][0]["winner"]
        self.assertEqual(winner["config_id"], rungs[(0, K - 1)][0]["config_id"], "SH winner %r" % winner)

    def test_doubling_reuses_progress(self):
        # n = 4, eta 2 (K = 2), resource 1..16: B starts at the smallest 4 * 2^j >= n K = 8
        # and doubles; each run re-ranks the same 4 configs; a config trained to R'
        # gets a trial only when the round's budget R > R', resuming its latest trial.
        n, eta, K, r_max = 4, 2, 2, 16
        study = create_study(self.d, {"name": "successive_halving", "options": {"n": n, "doubling": True}},
                             {"name": "epochs", "min": 1, "max": r_max, "integer": True}, seed=8)
        drv = driver(self, self.d, study["id"], workers=2, seed=8)
        drv.run()
        self.assertTrue(drv.done)
        by_label = collections.defaultdict(list)
        for tid in drv.order:
            t = drv.trials[tid]
            sch = t["scheduler"]
            self.assertEqual(set(sch), {"bracket", "rung", "iteration"}, "doubling trial labels: %r" % t)
            by_label[(sch["iteration"], sch["rung"])].append(t)
        configs = sorted(t["config_id"] for t in by_label[(1, 0)])
        self.assertEqual(len(configs), n)
        trained = {}  # config_id -> its latest trial
        B, iteration, checked, seen_budgets = 8, 1, 0, []
        while True:
            members, cum = list(configs), 0
            round_budgets = []
            for k in range(K):
                cum += B // (len(members) * K)
                R = min(cum, r_max)
                round_budgets.append(R)
                need = sorted(c for c in members if c not in trained or trained[c]["budget"] < R)
                got = by_label.pop((iteration, k), [])
                self.assertEqual(sorted(t["config_id"] for t in got), need,
                                 "iteration %d round %d (R = %d): configs given a trial" % (iteration, k, R))
                for t in got:
                    self.assertEqual(t["budget"], R, "iteration %d round %d: %r" % (iteration, k, t))
                    prev = trained.get(t["config_id"])
                    self.assertEqual(t["resume_from"], prev["id"] if prev else None,
                                     "iteration %d round %d: resume_from of %r" % (iteration, k, t))
                    trained[t["config_id"]] = t
                    checked += 1
                members = sorted(members, key=lambda c: (trained[c]["loss"], c))[:len(members) // eta]
            seen_budgets.append(round_budgets)
            if round_budgets[0] >= r_max:
                break
            B, iteration = 2 * B, iteration + 1
        self.assertEqual(seen_budgets, [[1, 3], [2, 6], [4, 12], [8, 16], [16, 16]])
        self.assertEqual(dict(by_label), {}, "trials outside the doubling plan")
        self.assertEqual(checked, len(drv.order))
        later = [t for t in drv.trials.values() if t["scheduler"]["iteration"] > 1]
        self.assertTrue(later and all(t["resume_from"] for t in later),
                        "doubling rounds after the first must resume earlier trials: %r" % later)


class AshaVector(bdtest.DaemonTestCase):

    def test_rung0_losses_promote_1_and_2(self):
        d = bdtest.Daemon()
        self.addCleanup(d.cleanup)
        study = create_study(d, {"name": "asha", "options": {"eta": 3, "brackets": 1}},  # the one-bracket vector
                             {"name": "epochs", "min": 1, "max": 9, "integer": True}, seed=6)
        drv = driver(self, d, study["id"], workers=1, seed=6)
        first = []
        for _ in range(6):  # one at a time, nothing completed yet: all new rung-0 configs
            t = drv.ask("w1")
            self.assertIsInstance(t, dict, "ASHA never waits: %r" % t)
            drv.running.append(t["id"])
            first.append(t)
        for t in first:
            self.assertEqual((t["budget"], t["scheduler"], t["resume_from"], t["config_id"]),
                             (1, {"bracket": 0, "rung": 0}, None, t["id"]), "rung-0 trial %r" % t)
        losses = [5, 1, 4, 2, 6, 3]
        for t, loss in zip(first, losses):
            drv.complete(t["id"], loss)
        by_loss = {loss: t for t, loss in zip(first, losses)}
        promoted = [drv.ask("w1") for _ in range(2)]
        for t, loss in zip(promoted, (1, 2)):
            src = by_loss[loss]
            self.assertIsInstance(t, dict)
            self.assertEqual((t["config_id"], t["config"], t["budget"], t["scheduler"], t["resume_from"]),
                             (src["id"], src["config"], 3, {"bracket": 0, "rung": 1}, src["id"]),
                             "promotion %d should be the config with loss %d: %r" % (len(promoted), loss, t))
        fresh = [drv.ask("w1") for _ in range(3)]
        for t in fresh:
            self.assertEqual((t["budget"], t["scheduler"], t["resume_from"], t["config_id"]),
                             (1, {"bracket": 0, "rung": 0}, None, t["id"]),
                             "after promoting losses 1 and 2, new rung-0 configs: %r" % t)
        drv.running += [t["id"] for t in promoted + fresh]
        state = get_study(d, study["id"])["scheduler"]["state"]["brackets"][0]["rungs"]
        self.assertEqual([(r["budget"], r["created"], r["completed"], r["promoted"]) for r in state],
                         [(1, 9, 6, 2), (3, 2, 0, 0), (9, 0, 0, 0)], "ASHA rungs: %r" % state)
        self.assertEqual(state[0]["best"], {"config_id": by_loss[1]["id"], "loss": 1.0})
        # Seven rung-0 results: floor(7/3) = 2 candidates, both promoted: a new config.
        drv.complete(fresh[0]["id"], 7)
        t = drv.ask("w1")
        self.assertEqual((t["scheduler"], t["resume_from"]), ({"bracket": 0, "rung": 0}, None),
                         "7 results in rung 0 make no third candidate: %r" % t)
        # Nine: floor(9/3) = 3, the config with loss 3 is promoted.
        drv.complete(fresh[1]["id"], 8)
        drv.complete(fresh[2]["id"], 9)
        t = drv.ask("w1")
        self.assertEqual((t["config_id"], t["budget"], t["scheduler"], t["resume_from"]),
                         (by_loss[3]["id"], 3, {"bracket": 0, "rung": 1}, by_loss[3]["id"]),
                         "9 results in rung 0: the third best (loss 3) is promoted: %r" % t)


if __name__ == "__main__":
    unittest.main()
