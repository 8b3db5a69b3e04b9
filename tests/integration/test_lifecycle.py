"""Study and trial lifecycle through the HTTP API of a real banditd: create, get,
list, suggest, measurements, heartbeat, complete (value / diverged), fail,
counts and incumbent (minimize and maximize), trial listing with filters and
pagination, done / retry_after_ms, idempotency keys, 409 on finished trials,
lease expiry, delete, /metrics, /healthz and the daemon's lease flag/env."""

import os
import sys
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study, suggest  # noqa: E402

STATES = ("running", "completed", "stopped", "failed", "expired")


class Lifecycle(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(lease_seconds=300, extra_args=["--log-level", "debug"])

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def req(self, *a, **kw):
        return self.d.request(*a, **kw)

    def get_study(self, sid):
        return check_status(self, self.req("GET", "/v1/studies/%d" % sid), 200, "GET study")

    def get_trial(self, tid):
        return check_status(self, self.req("GET", "/v1/trials/%d" % tid), 200, "GET trial")

    def measure(self, tid, step, value, **extra):
        body = dict(step=step, value=value, **extra)
        return check_status(self, self.req("POST", "/v1/trials/%d/measurements" % tid, body), 200,
                            "measurement %d" % tid)

    def complete(self, tid, body):
        return check_status(self, self.req("POST", "/v1/trials/%d/complete" % tid, body), 200,
                            "complete %d" % tid)

    def assert_counts(self, study, **expected):
        counts = study["trials"]
        want = {s: expected.get(s, 0) for s in STATES}
        want["total"] = sum(want.values())
        self.assertEqual({k: counts.get(k) for k in want}, want, "trial counts of %r" % study)

    def check_trial(self, t, study_id, worker, budget=1):
        for k in ("id", "study_id", "config_id", "config", "budget", "resume_from", "state",
                  "worker", "created_at", "lease_expires_at"):
            self.assertIn(k, t, "trial lacks %r: %r" % (k, t))
        self.assertEqual(t["study_id"], study_id)
        self.assertEqual(t["state"], "running")
        self.assertEqual(t["worker"], worker)
        self.assertIsNone(t["resume_from"])
        self.assertEqual(t["budget"], budget)
        self.assertEqual(set(t["config"]), {"x", "k"}, t)
        self.assertTrue(0.0 <= t["config"]["x"] <= 1.0, t)
        self.assertIn(t["config"]["k"], ("a", "b", "c"))
        self.assertGreater(t["lease_expires_at"], t["created_at"])

    # ---- tests ----

    def test_healthz_and_metrics(self):
        st, body, _ = self.req("GET", "/healthz", token=None)
        self.assertEqual((st, body), (200, {"status": "ok"}))
        s = create_study(self.d)
        suggest(self.d, s["id"])
        st, text, hdrs = self.req("GET", "/metrics", token=None)
        self.assertEqual(st, 200, text)
        self.assertIsInstance(text, str)
        self.assertTrue((hdrs.get("Content-Type") or "").startswith("text/plain"), hdrs.get("Content-Type"))
        self.assertIn("banditd_http_requests_total", text)
        self.assertIn("banditd_trials", text)
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name_labels, _, value = line.rpartition(" ")
                self.assertTrue(name_labels, "bad metrics line %r" % line)
                float(value)  # every sample line ends with a number

    def test_me(self):
        st, me, _ = self.req("GET", "/v1/me")
        self.assertEqual(st, 200, me)
        self.assertTrue(me["admin"])
        self.assertIn("name", me)
        self.assertIn("id", me)

    def test_request_log(self):
        self.req("GET", "/healthz", token=None)
        self.req("GET", "/v1/studies/987654")
        deadline = time.time() + 2
        while "/v1/studies/987654" not in self.d.log_text() and time.time() < deadline:
            time.sleep(0.05)
        self.assertIn("/v1/studies/987654", self.d.log_text(),
                      "contract: one log line per request on stderr at --log-level debug")

    def test_create_get_list(self):
        body = bdtest.study_body(scheduler={"name": "random", "options": {"max_trials": 5}}, seed=42)
        st, s, hdrs = self.req("POST", "/v1/studies", body)
        self.assertEqual(st, 201, s)
        self.assertTrue((hdrs.get("Content-Type") or "").startswith("application/json"))
        for k in ("id", "name", "owner", "created_at", "parameters", "objective", "resource", "scheduler",
                  "seed", "lease_seconds", "trials", "incumbent", "done"):
            self.assertIn(k, s, "study lacks %r" % k)
        self.assertEqual(s["name"], body["name"])
        self.assertEqual(s["seed"], 42)
        self.assertEqual([p["name"] for p in s["parameters"]], ["x", "k"])
        self.assertEqual(s["parameters"][1]["choices"], ["a", "b", "c"])
        self.assertEqual(s["objective"], {"metric": "loss", "goal": "minimize"})
        self.assertEqual(s["resource"], {"name": "units", "min": 1, "max": 1, "integer": False})
        self.assertEqual(s["scheduler"]["name"], "random")
        self.assertEqual(s["scheduler"]["options"], {"max_trials": 5})
        self.assertIsInstance(s["scheduler"]["state"], dict)
        self.assertEqual(s["lease_seconds"], 300, "daemon --lease-seconds 300 is the default")
        self.assert_counts(s)
        self.assertIsNone(s["incumbent"])
        self.assertIs(s["done"], False)
        me = check_status(self, self.req("GET", "/v1/me"), 200)
        self.assertIn(s["owner"], (me["name"], me["id"]))

        g = self.get_study(s["id"])
        for k in ("id", "name", "owner", "created_at", "parameters", "objective", "resource", "seed",
                  "lease_seconds", "trials", "incumbent", "done"):
            self.assertEqual(g[k], s[k], k)
        self.assertEqual(g["scheduler"]["name"], "random")

        s2 = create_study(self.d, lease_seconds=30, objective={"metric": "acc", "goal": "maximize"},
                          resource={"name": "epochs", "min": 1, "max": 9, "integer": True})
        self.assertEqual(s2["lease_seconds"], 30)
        self.assertEqual(s2["objective"], {"metric": "acc", "goal": "maximize"})
        self.assertEqual(s2["resource"], {"name": "epochs", "min": 1, "max": 9, "integer": True})
        self.assertGreater(s2["id"], s["id"])
        lst = check_status(self, self.req("GET", "/v1/studies"), 200, "list studies")
        ids = [x["id"] for x in lst["studies"]]
        self.assertIn(s["id"], ids)
        self.assertIn(s2["id"], ids)
        self.assertEqual(len(ids), len(set(ids)))

    def test_trial_flow_counts_incumbent(self):
        s = create_study(self.d, scheduler={"name": "random", "options": {"max_trials": 5}})
        sid = s["id"]
        t1, t2 = suggest(self.d, sid, count=2, worker="w1")
        for t in (t1, t2):
            self.check_trial(t, sid, "w1")
        self.assertLess(t1["id"], t2["id"])
        self.assertNotEqual(t1["config_id"], t2["config_id"])

        self.assertEqual(self.measure(t1["id"], 1, 0.5, elapsed_seconds=12.5)["action"], "continue")
        self.assertEqual(self.measure(t1["id"], 2, 0.4)["action"], "continue")
        st, hb, _ = self.req("POST", "/v1/trials/%d/heartbeat" % t1["id"])
        self.assertEqual(st, 200, hb)
        self.assertGreaterEqual(hb["lease_expires_at"], t1["lease_expires_at"])
        st, hb2, _ = self.req("POST", "/v1/trials/%d/heartbeat" % t1["id"], {})
        self.assertEqual(st, 200, hb2)

        c1 = self.complete(t1["id"], {"value": 0.3, "runtime": 1.5})
        self.assertEqual(c1["id"], t1["id"])
        self.assertEqual(c1["state"], "completed")
        self.assertEqual(c1["value"], 0.3)
        self.assertIn("finished_at", c1)
        c2 = self.complete(t2["id"], {"value": None, "reason": "diverged"})
        self.assertEqual(c2["state"], "completed")
        self.assertIsNone(c2["value"])

        t3, t4 = suggest(self.d, sid, count=2, worker="w2")
        self.assertGreater(t3["id"], t2["id"])
        st, f3, _ = self.req("POST", "/v1/trials/%d/fail" % t3["id"], {"reason": "OOM"})
        self.assertEqual(st, 200, f3)
        self.assertEqual(f3["state"], "failed")

        s = self.get_study(sid)
        self.assert_counts(s, running=1, completed=2, failed=1)
        inc = s["incumbent"]
        self.assertIsNotNone(inc, "a completed trial with a value exists")
        self.assertEqual(inc["trial_id"], t1["id"])
        self.assertEqual(inc["config_id"], t1["config_id"])
        self.assertEqual(inc["config"], t1["config"])
        self.assertEqual(inc["value"], 0.3)
        self.assertEqual(inc["budget"], 1)

        self.complete(t4["id"], {"value": 0.1})
        s = self.get_study(sid)
        self.assert_counts(s, completed=3, failed=1)
        self.assertEqual(s["incumbent"]["trial_id"], t4["id"])
        self.assertEqual(s["incumbent"]["value"], 0.1)
        self.assertEqual(s["incumbent"]["config"], t4["config"])

        g = self.get_trial(t1["id"])
        self.assertEqual(g["state"], "completed")
        self.assertEqual(g["value"], 0.3)
        self.assertEqual(g["config"], t1["config"])
        ms = g["measurements"]
        self.assertEqual([(m["step"], m["value"]) for m in ms], [(1, 0.5), (2, 0.4)])
        self.assertEqual(ms[0]["elapsed_seconds"], 12.5)
        for m in ms:
            self.assertIn("created_at", m)
            self.assertIn("elapsed_seconds", m)
        self.assertEqual(self.get_trial(t2["id"])["measurements"], [])
        self.assertEqual(self.get_trial(t3["id"])["state"], "failed")

    def test_maximize_incumbent(self):
        s = create_study(self.d, objective={"metric": "acc", "goal": "maximize"})
        trials = suggest(self.d, s["id"], count=4)
        for t, v in zip(trials, (0.3, 0.9, None, 0.5)):
            body = {"value": v} if v is not None else {"value": None, "reason": "diverged"}
            self.complete(t["id"], body)
        inc = self.get_study(s["id"])["incumbent"]
        self.assertIsNotNone(inc)
        self.assertEqual(inc["trial_id"], trials[1]["id"], "maximize: 0.9 is best: %r" % inc)
        self.assertEqual(inc["value"], 0.9, "incumbent value is reported as the worker sent it")

        s2 = create_study(self.d)  # minimize: a diverged run is never the incumbent
        a, b = suggest(self.d, s2["id"], count=2)
        self.complete(a["id"], {"value": None, "reason": "diverged"})
        self.assertIsNone(self.get_study(s2["id"])["incumbent"])
        self.complete(b["id"], {"value": 7.0})
        self.assertEqual(self.get_study(s2["id"])["incumbent"]["trial_id"], b["id"])

    def test_list_trials_filter_and_pagination(self):
        s = create_study(self.d)
        sid = s["id"]
        trials = suggest(self.d, sid, count=5)
        ids = [t["id"] for t in trials]
        self.assertEqual(ids, sorted(ids))
        self.complete(ids[0], {"value": 1.0})
        self.complete(ids[3], {"value": 2.0})
        check_status(self, self.req("POST", "/v1/trials/%d/fail" % ids[4], {"reason": "x"}), 200)

        def page(q):
            return check_status(self, self.req("GET", "/v1/studies/%d/trials?%s" % (sid, q)), 200, q)

        everything = page("")
        self.assertEqual([t["id"] for t in everything["trials"]], ids)
        self.assertIsNone(everything["next_after"])
        running = page("state=running")
        self.assertEqual([t["id"] for t in running["trials"]], [ids[1], ids[2]])
        self.assertTrue(all(t["state"] == "running" for t in running["trials"]))
        self.assertEqual([t["id"] for t in page("state=completed")["trials"]], [ids[0], ids[3]])
        self.assertEqual([t["id"] for t in page("state=failed")["trials"]], [ids[4]])
        self.assertEqual(page("state=expired")["trials"], [])

        p1 = page("after=0&limit=2")
        self.assertEqual([t["id"] for t in p1["trials"]], ids[:2])
        self.assertEqual(p1["next_after"], ids[1])
        p2 = page("after=%d&limit=2" % p1["next_after"])
        self.assertEqual([t["id"] for t in p2["trials"]], ids[2:4])
        self.assertEqual(p2["next_after"], ids[3])
        p3 = page("after=%d&limit=2" % p2["next_after"])
        self.assertEqual([t["id"] for t in p3["trials"]], ids[4:])
        self.assertIsNone(p3["next_after"], "a short last page ends the listing")
        self.assertEqual(page("after=%d&limit=2" % ids[4])["trials"], [])

        pc = page("state=completed&limit=1")
        self.assertEqual([t["id"] for t in pc["trials"]], [ids[0]])
        self.assertEqual(pc["next_after"], ids[0])
        pc2 = page("state=completed&limit=1&after=%d" % ids[0])
        self.assertEqual([t["id"] for t in pc2["trials"]], [ids[3]])

    def test_done_and_retry_after(self):
        s = create_study(self.d, scheduler={"name": "random", "options": {"max_trials": 5}})
        sid = s["id"]
        first = suggest(self.d, sid, count=3)
        rest = suggest(self.d, sid, count=5)
        self.assertEqual(len(rest), 2, "max_trials 5 caps a count-5 suggest after 3 trials")
        trials = first + rest
        for t in trials[:4]:
            self.complete(t["id"], {"value": 0.5})
        st, body, _ = self.req("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w9"})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["trials"], [])
        self.assertIsInstance(body.get("retry_after_ms"), int, "one trial still runs: %r" % body)
        self.assertGreater(body["retry_after_ms"], 0)
        self.assertFalse(body.get("done", False), body)
        self.assertIs(self.get_study(sid)["done"], False)

        self.complete(trials[4]["id"], {"value": 0.25})
        st, body, _ = self.req("POST", "/v1/studies/%d/suggest" % sid, {})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["trials"], [])
        self.assertIs(body.get("done"), True, body)
        g = self.get_study(sid)
        self.assertIs(g["done"], True)
        self.assert_counts(g, completed=5)
        self.assertEqual(g["incumbent"]["trial_id"], trials[4]["id"])

    def test_idempotent_suggest(self):
        s = create_study(self.d)
        sid = s["id"]
        key = bdtest.unique_name("idem")
        path = "/v1/studies/%d/suggest" % sid
        st1, b1, _ = self.req("POST", path, {"worker": "w", "count": 2}, headers={"Idempotency-Key": key})
        st2, b2, _ = self.req("POST", path, {"worker": "w", "count": 2}, headers={"Idempotency-Key": key})
        self.assertEqual(st1, 200, b1)
        self.assertEqual(st2, 200, b2)
        self.assertEqual(len(b1["trials"]), 2)
        self.assertEqual(b1, b2, "a retry returns the first answer")
        self.assertEqual(self.get_study(sid)["trials"]["total"], 2, "the retry created no trial")
        self.assertEqual(len(bdtest.list_all_trials(self.d, sid)), 2)

        got = self.req("POST", path, {"worker": "w", "count": 3}, headers={"Idempotency-Key": key})
        self.assertError(got, 409, "conflict", check_field=False, what="same key, other body")
        self.assertEqual(self.get_study(sid)["trials"]["total"], 2)

        other = suggest(self.d, sid, count=1, worker="w", headers={"Idempotency-Key": key + "-2"})
        self.assertGreater(other[0]["id"], b1["trials"][1]["id"], "a new key acts")

    def test_idempotent_measurement_and_complete(self):
        s = create_study(self.d)
        (t,) = suggest(self.d, s["id"])
        tid = t["id"]
        hk = {"Idempotency-Key": bdtest.unique_name("m")}
        mpath = "/v1/trials/%d/measurements" % tid
        a = self.req("POST", mpath, {"step": 1, "value": 0.7}, headers=hk)
        b = self.req("POST", mpath, {"step": 1, "value": 0.7}, headers=hk)
        self.assertEqual(a[:2], b[:2])
        self.assertEqual(a[0], 200, a[1])
        self.assertEqual(len(self.get_trial(tid)["measurements"]), 1, "the retried measurement is stored once")

        ck = {"Idempotency-Key": bdtest.unique_name("c")}
        cpath = "/v1/trials/%d/complete" % tid
        c1 = self.req("POST", cpath, {"value": 0.6}, headers=ck)
        c2 = self.req("POST", cpath, {"value": 0.6}, headers=ck)
        self.assertEqual(c1[0], 200, c1[1])
        self.assertEqual(c2[0], 200, "a retried complete answers like the first, not 409: %r" % (c2[1],))
        self.assertEqual(c1[1], c2[1])
        self.assertEqual(self.get_study(s["id"])["trials"]["completed"], 1)

    def test_finished_trials_conflict(self):
        s = create_study(self.d)
        t1, t2 = suggest(self.d, s["id"], count=2)
        self.complete(t1["id"], {"value": 0.2})
        self.assertError(self.req("POST", "/v1/trials/%d/measurements" % t1["id"], {"step": 5, "value": 0.1}),
                         409, "conflict", check_field=False, what="measurement on completed")
        self.assertError(self.req("POST", "/v1/trials/%d/complete" % t1["id"], {"value": 0.1}),
                         409, "conflict", check_field=False, what="second complete")
        self.assertError(self.req("POST", "/v1/trials/%d/heartbeat" % t1["id"]),
                         409, "conflict", check_field=False, what="heartbeat on completed")
        check_status(self, self.req("POST", "/v1/trials/%d/fail" % t2["id"], {"reason": "bad"}), 200)
        self.assertError(self.req("POST", "/v1/trials/%d/measurements" % t2["id"], {"step": 1, "value": 0.1}),
                         409, "conflict", check_field=False, what="measurement on failed")
        self.assertError(self.req("POST", "/v1/trials/%d/complete" % t2["id"], {"value": 0.1}),
                         409, "conflict", check_field=False, what="complete on failed")
        g = self.get_trial(t1["id"])
        self.assertEqual((g["state"], g["value"], g["measurements"]), ("completed", 0.2, []))

    def test_timeout_completion(self):
        s = create_study(self.d)
        (t,) = suggest(self.d, s["id"])
        c = self.complete(t["id"], {"status": "timeout"})
        self.assertEqual(c["state"], "completed")
        self.assertEqual(self.get_study(s["id"])["trials"]["completed"], 1)

    def test_lease_expiry(self):
        s = create_study(self.d, lease_seconds=1)
        self.assertEqual(s["lease_seconds"], 1)
        a, b = suggest(self.d, s["id"], count=2)
        self.assertAlmostEqual(a["lease_expires_at"] - a["created_at"], 1.0, delta=0.5)
        # b is kept alive by heartbeats and measurements; a is abandoned.
        deadline = time.time() + 2.5
        step = 0
        while time.time() < deadline:
            time.sleep(0.3)
            step += 1
            if step % 2:
                check_status(self, self.req("POST", "/v1/trials/%d/heartbeat" % b["id"]), 200, "heartbeat")
            else:
                self.measure(b["id"], step, 0.5)
        ga = self.get_trial(a["id"])
        waited = 2.5
        while ga["state"] == "running" and waited < 5.0:  # allow a slow reaper, but not forever
            time.sleep(0.25)
            waited += 0.25
            ga = self.get_trial(a["id"])
        self.assertEqual(ga["state"], "expired", "lease of 1 s ended %.1f s ago" % (waited - 1))
        self.assertEqual(self.get_trial(b["id"])["state"], "running", "heartbeats renew the lease")
        self.assertError(self.req("POST", "/v1/trials/%d/measurements" % a["id"], {"step": 1, "value": 0.3}),
                         409, "conflict", check_field=False, what="measurement on expired")
        self.assertError(self.req("POST", "/v1/trials/%d/complete" % a["id"], {"value": 0.3}),
                         409, "conflict", check_field=False, what="complete on expired")
        g = self.get_study(s["id"])
        self.assertEqual(g["trials"]["expired"], 1)
        self.assertEqual(g["trials"]["running"], 1)
        exp = check_status(self, self.req("GET", "/v1/studies/%d/trials?state=expired" % s["id"]), 200)
        self.assertEqual([t["id"] for t in exp["trials"]], [a["id"]])
        self.complete(b["id"], {"value": 0.4})

    def test_late_measurement_after_lease_end(self):
        # The lease has run out: the trial is expired even if no sweep ran yet.
        s = create_study(self.d, lease_seconds=1)
        (t,) = suggest(self.d, s["id"])
        time.sleep(max(0.0, t["lease_expires_at"] - time.time()) + 0.15)
        self.assertError(self.req("POST", "/v1/trials/%d/measurements" % t["id"], {"step": 1, "value": 0.3}),
                         409, "conflict", check_field=False, what="measurement 0.15 s after the lease ended")
        self.assertError(self.req("POST", "/v1/trials/%d/heartbeat" % t["id"]), 409, "conflict",
                         check_field=False, what="heartbeat after the lease ended")
        self.assertEqual(self.get_trial(t["id"])["measurements"], [])

    def test_idempotent_delete(self):
        # api/openapi.yaml: "Any POST or DELETE may carry Idempotency-Key".
        s = create_study(self.d)
        key = {"Idempotency-Key": bdtest.unique_name("del")}
        a = self.req("DELETE", "/v1/studies/%d" % s["id"], headers=key)
        b = self.req("DELETE", "/v1/studies/%d" % s["id"], headers=key)
        self.assertEqual(a[:2], (200, {"deleted": True, "id": s["id"]}))
        self.assertEqual(b[:2], a[:2], "a retried DELETE returns the first answer")

    def test_delete_study(self):
        s = create_study(self.d)
        sid = s["id"]
        (t,) = suggest(self.d, sid)
        st, body, _ = self.req("DELETE", "/v1/studies/%d" % sid)
        self.assertEqual((st, body), (200, {"deleted": True, "id": sid}))
        self.assertError(self.req("GET", "/v1/studies/%d" % sid), 404, "not_found", check_field=False,
                         what="GET deleted study")
        self.assertError(self.req("GET", "/v1/studies/%d/trials" % sid), 404, "not_found", check_field=False,
                         what="trials of deleted study")
        self.assertError(self.req("POST", "/v1/studies/%d/suggest" % sid, {}), 404, "not_found",
                         check_field=False, what="suggest on deleted study")
        self.assertError(self.req("GET", "/v1/trials/%d" % t["id"]), 404, "not_found", check_field=False,
                         what="trial of deleted study")
        self.assertError(self.req("POST", "/v1/trials/%d/measurements" % t["id"], {"step": 1, "value": 1}),
                         404, "not_found", check_field=False, what="measurement on deleted study's trial")
        self.assertError(self.req("DELETE", "/v1/studies/%d" % sid), 404, "not_found", check_field=False,
                         what="second DELETE")
        ids = [x["id"] for x in check_status(self, self.req("GET", "/v1/studies"), 200)["studies"]]
        self.assertNotIn(sid, ids)


class SpacesAndSemantics(bdtest.DaemonTestCase):
    """What suggestions look like for richer spaces, timestamps, idempotency edge
    cases and metrics values."""

    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def req(self, *a, **kw):
        return self.d.request(*a, **kw)

    def test_configs_follow_the_space(self):
        params = [
            {"name": "algo", "type": "categorical", "choices": ["svm", 3, True]},
            {"name": "C", "type": "float", "low": 0.01, "high": 100, "log": True, "when": {"algo": ["svm"]}},
            {"name": "layers", "type": "int", "low": 1, "high": 8},
            {"name": "width", "type": "int", "low": 2, "high": 1024, "log": True, "when": {"algo": [3]}},
            {"name": "lr", "type": "float", "low": 1e-5, "high": 1, "log": True},
        ]
        s = create_study(self.d, name="espace 日本 ✓", parameters=params,
                         resource={"name": "epochs", "min": 1, "max": 81, "integer": True})
        self.assertEqual(s["name"], "espace 日本 ✓", "UTF-8 names round-trip")
        self.assertEqual(s["parameters"][0]["choices"], ["svm", 3, True])
        self.assertEqual(s["parameters"][1]["when"], {"algo": ["svm"]})
        trials = suggest(self.d, s["id"], count=100)
        self.assertEqual(len(trials), 100)
        seen_algo = set()
        for t in trials:
            c = t["config"]
            self.assertEqual(t["budget"], 81, "random search runs every trial at resource.max")
            algo = c["algo"]
            kind = {"'svm'": "svm", "3": "3", "True": "true"}.get(repr(algo))
            self.assertIsNotNone(kind, "choice %r is not one of the declared (types kept)" % (algo,))
            seen_algo.add(kind)
            want = {"algo", "layers", "lr"} | ({"C"} if kind == "svm" else set()) | \
                ({"width"} if kind == "3" else set())
            self.assertEqual(set(c), want, "exactly the active parameters: %r" % c)
            self.assertIs(type(c["layers"]), int, c)
            self.assertTrue(1 <= c["layers"] <= 8, c)
            self.assertTrue(1e-5 <= c["lr"] <= 1, c)
            if "C" in c:
                self.assertTrue(0.01 <= c["C"] <= 100, c)
            if "width" in c:
                self.assertIs(type(c["width"]), int, c)
                self.assertTrue(2 <= c["width"] <= 1024, c)
        self.assertEqual(len(seen_algo), 3, "100 draws cover all three choices")
        lrs = sorted(t["config"]["lr"] for t in trials)
        self.assertLess(lrs[50], 0.05, "log-uniform over [1e-5, 1]: the median is near 3e-3, got %g" % lrs[50])

    def test_timestamps_are_unix_seconds(self):
        before = time.time()
        s = create_study(self.d, lease_seconds=60)
        (t,) = suggest(self.d, s["id"])
        after = time.time()
        for what, v in (("study created_at", s["created_at"]), ("trial created_at", t["created_at"])):
            self.assertTrue(before - 2 <= v <= after + 2, "%s %r not within [%r, %r]" % (what, v, before, after))
        self.assertAlmostEqual(t["lease_expires_at"] - t["created_at"], 60, delta=1)
        c = check_status(self, self.req("POST", "/v1/trials/%d/complete" % t["id"], {"value": 1}), 200)
        self.assertTrue(c["created_at"] <= c["finished_at"] <= time.time() + 2, c)

    def test_measurement_renews_lease(self):
        s = create_study(self.d, lease_seconds=20)
        (t,) = suggest(self.d, s["id"])
        time.sleep(0.3)
        check_status(self, self.req("POST", "/v1/trials/%d/measurements" % t["id"], {"step": 1, "value": 1}), 200)
        g = check_status(self, self.req("GET", "/v1/trials/%d" % t["id"]), 200)
        self.assertGreater(g["lease_expires_at"], t["lease_expires_at"] + 0.2, "a measurement renews the lease")

    def test_idempotent_create_study(self):
        key = {"Idempotency-Key": bdtest.unique_name("create")}
        body = bdtest.study_body()
        a = self.req("POST", "/v1/studies", body, headers=key)
        b = self.req("POST", "/v1/studies", body, headers=key)
        self.assertEqual(a[0], 201, a[1])
        self.assertEqual(b[:2], a[:2], "a retried create returns the first answer")
        named = [x for x in check_status(self, self.req("GET", "/v1/studies"), 200)["studies"]
                 if x["name"] == body["name"]]
        self.assertEqual(len(named), 1, "the retry created no second study")

    def test_idempotency_key_after_an_error_answer(self):
        # engine.h: "the first *successful* response is stored"; a request that was
        # refused did not act, so fixing it and retrying with the same key acts.
        s = create_study(self.d)
        key = {"Idempotency-Key": bdtest.unique_name("fixme")}
        path = "/v1/studies/%d/suggest" % s["id"]
        self.assertError(self.req("POST", path, {"count": 0}, headers=key), 400, "invalid_argument", "count")
        st, body, _ = self.req("POST", path, {"count": 1}, headers=key)
        self.assertEqual(st, 200, body)
        self.assertEqual(len(body["trials"]), 1)

    def test_idempotency_key_on_another_route(self):
        s = create_study(self.d)
        (t,) = suggest(self.d, s["id"])
        key = {"Idempotency-Key": bdtest.unique_name("route")}
        check_status(self, self.req("POST", "/v1/trials/%d/measurements" % t["id"], {"step": 1, "value": 1},
                                    headers=key), 200)
        self.assertError(self.req("POST", "/v1/trials/%d/heartbeat" % t["id"], {}, headers=key), 409, "conflict",
                         check_field=False, what="same key on another route")
        self.assertError(self.req("POST", "/v1/studies/%d/suggest" % s["id"], {}, headers=key), 409, "conflict",
                         check_field=False, what="same key on another route")
        self.assertEqual(check_status(self, self.req("GET", "/v1/studies/%d" % s["id"]), 200)["trials"]["total"], 1)

    def test_large_listing(self):
        s = create_study(self.d)
        made = []
        for _ in range(3):
            made += [t["id"] for t in suggest(self.d, s["id"], count=100)]
        got = check_status(self, self.req("GET", "/v1/studies/%d/trials?limit=1000" % s["id"]), 200)
        self.assertEqual([t["id"] for t in got["trials"]], made)
        self.assertIsNone(got["next_after"])
        self.assertEqual([t["id"] for t in bdtest.list_all_trials(self.d, s["id"], limit=7)], made)

    def test_metrics_values(self):
        d = bdtest.Daemon()
        self.addCleanup(d.cleanup)
        s = create_study(d)
        a, b, c, _ = suggest(d, s["id"], count=4)
        check_status(self, d.request("POST", "/v1/trials/%d/complete" % a["id"], {"value": 1}), 200)
        check_status(self, d.request("POST", "/v1/trials/%d/fail" % b["id"], {}), 200)

        def metrics():
            st, text, _ = d.request("GET", "/metrics", token=None)
            self.assertEqual(st, 200)
            samples = {}
            for line in text.splitlines():
                if line and not line.startswith("#"):
                    k, _, v = line.rpartition(" ")
                    samples[k] = float(v)
            return samples
        m = metrics()
        by_state = {}
        for k, v in m.items():
            if k.startswith("banditd_trials{"):
                for st in STATES:
                    if '"%s"' % st in k:
                        by_state[st] = v
        self.assertEqual(by_state, {"running": 2, "completed": 1, "stopped": 0, "failed": 1, "expired": 0},
                         "banditd_trials by state: %r" % {k: v for k, v in m.items() if "trials" in k})

        def total_requests(samples):
            return sum(v for k, v in samples.items() if k.startswith("banditd_http_requests_total"))
        before = total_requests(m)
        for _ in range(5):
            d.request("GET", "/v1/studies/%d" % s["id"])
        self.assertGreaterEqual(total_requests(metrics()) - before, 5)


class LeaseDefaults(bdtest.DaemonTestCase):
    """--lease-seconds and BANDITD_LEASE_SECONDS set the default study lease; the flag wins."""

    def lease_of_new_study(self, d):
        try:
            return create_study(d)["lease_seconds"]
        finally:
            d.cleanup()

    def test_env_sets_default(self):
        d = bdtest.Daemon(lease_seconds=None, env={"BANDITD_LEASE_SECONDS": "123"})
        self.assertEqual(self.lease_of_new_study(d), 123)

    def test_flag_wins_over_env(self):
        d = bdtest.Daemon(lease_seconds=77, env={"BANDITD_LEASE_SECONDS": "123"})
        self.assertEqual(self.lease_of_new_study(d), 77)


if __name__ == "__main__":
    unittest.main()
