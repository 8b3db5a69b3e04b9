"""The read views the users' tools need, against the real daemon: trials with
their measurements in one paged call (and its 50,000-measurement cut), best
trials first for both goals, the CSV export (round trip through Python's csv
module, a conditional space, hostile text, a 20,000-trial study), the history
for plots, get-or-create of studies (if_exists), the studies listing's paging,
name filter and last_activity_at, and that none of it shows another user's
study."""

import csv
import io
import os
import sys
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study, suggest  # noqa: E402

HOSTILE = "=cmd|' /C calc'!A0"
FIXED_COLUMNS = ["trial_id", "state", "budget", "value", "timeout", "instance_index", "instance_name", "worker",
                 "created_at", "finished_at", "steps", "last_step_value", "reason",
                 "user_attrs", "origin"]


def complete(d, tid, value, token=bdtest.ADMIN):
    return check_status_raw(d.request("POST", "/v1/trials/%d/complete" % tid, {"value": value}, token=token), 200)


def measure(d, tid, step, value, token=bdtest.ADMIN):
    return check_status_raw(d.request("POST", "/v1/trials/%d/measurements" % tid, {"step": step, "value": value},
                                      token=token), 200)


def check_status_raw(got, status):
    return bdtest.expect(got, status, "request")


def get_csv(d, sid, query="", token=bdtest.ADMIN):
    st, body, hdrs = d.request("GET", "/v1/studies/%d/trials.csv%s" % (sid, query), token=token)
    return st, body, hdrs


def parse_csv(text):
    return list(csv.reader(io.StringIO(text, newline="")))


class TrialViews(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def test_order_best_both_goals(self):
        for goal in ("minimize", "maximize"):
            with self.subTest(goal=goal):
                s = create_study(self.d, objective={"metric": "m", "goal": goal})
                trials = suggest(self.d, s["id"], count=8)
                ids = [t["id"] for t in trials]
                values = [3.0, 1.0, 2.0, 1.0, 5.0]
                for tid, v in zip(ids, values):
                    measure(self.d, tid, 1, v + 10)
                    complete(self.d, tid, v)
                # diverged (null value), failed and still running trials are left out
                check_status_raw(
                    self.d.request("POST", "/v1/trials/%d/complete" % ids[5], {"value": None, "reason": "nan"}),
                    200)
                check_status_raw(self.d.request("POST", "/v1/trials/%d/fail" % ids[6], {"reason": "oom"}), 200)
                ranked = sorted(zip(values, ids[:5]), key=lambda p: ((p[0] if goal == "minimize" else -p[0]), p[1]))
                want = [tid for _, tid in ranked]
                body = check_status(self, self.d.request(
                    "GET", "/v1/studies/%d/trials?order=best" % s["id"]), 200)
                self.assertEqual([t["id"] for t in body["trials"]], want)
                self.assertIsNone(body["next_after"])
                body = check_status(self, self.d.request(
                    "GET", "/v1/studies/%d/trials?order=best&limit=2&state=completed&include=measurements"
                    % s["id"]), 200)
                self.assertEqual([t["id"] for t in body["trials"]], want[:2])
                self.assertIsNone(body["next_after"], "order=best is top-N only")
                for t in body["trials"]:
                    self.assertEqual(len(t["measurements"]), 1)
                    self.assertEqual(t["measurements"][0]["value"], t["value"] + 10)
                body = check_status(self, self.d.request(
                    "GET", "/v1/studies/%d/trials?order=id&limit=3" % s["id"]), 200)
                self.assertEqual([t["id"] for t in body["trials"]], ids[:3])
                self.assertEqual(body["next_after"], ids[2])

    def test_include_measurements_matches_get_trial(self):
        s = create_study(self.d)
        trials = suggest(self.d, s["id"], count=3)
        for i, t in enumerate(trials):
            for step in range(i + 1):
                measure(self.d, t["id"], step + 1, 0.5 * step)
        page = check_status(self, self.d.request(
            "GET", "/v1/studies/%d/trials?include=measurements" % s["id"]), 200)
        self.assertEqual(len(page["trials"]), 3)
        for t in page["trials"]:
            one = check_status(self, self.d.request("GET", "/v1/trials/%d" % t["id"]), 200)
            self.assertEqual(t["measurements"], one["measurements"])
            self.assertEqual(t, one)
        plain = check_status(self, self.d.request("GET", "/v1/studies/%d/trials" % s["id"]), 200)
        self.assertNotIn("measurements", plain["trials"][0])

    def test_history_small_run(self):
        s = create_study(self.d, objective={"metric": "m", "goal": "minimize"})
        values = [5.0, 7.0, 3.0, 3.0, 4.0, 1.0]
        ids = []
        for v in values:
            t = suggest(self.d, s["id"])[0]
            ids.append(t["id"])
            time.sleep(0.01)
            complete(self.d, t["id"], v)
        h = check_status(self, self.d.request("GET", "/v1/studies/%d/history" % s["id"]), 200)
        self.assertEqual(h["completed"], 6)
        self.assertEqual(h["resource_total"], 6)
        self.assertEqual([p["trial_id"] for p in h["best"]], [ids[0], ids[2], ids[5]])
        self.assertEqual([p["value"] for p in h["best"]], [5.0, 3.0, 1.0])
        # one trial created per completion: by the i-th completion i+1 units were handed out
        self.assertEqual([p["resource"] for p in h["best"]], [1, 3, 6])
        for p in h["best"]:
            trial = check_status(self, self.d.request("GET", "/v1/trials/%d" % p["trial_id"]), 200)
            self.assertAlmostEqual(p["finished_at"], trial["finished_at"], places=3)
            self.assertAlmostEqual(p["elapsed_seconds"], trial["finished_at"] - s["created_at"], places=3)
        thin = check_status(self, self.d.request("GET", "/v1/studies/%d/history?points=2" % s["id"]), 200)
        self.assertEqual([p["trial_id"] for p in thin["best"]], [ids[0], ids[5]])

        m = create_study(self.d, objective={"metric": "acc", "goal": "maximize"})
        got = []
        for v in (0.5, 0.4, 0.9, 0.9, 0.95):
            t = suggest(self.d, m["id"])[0]
            complete(self.d, t["id"], v)
            got.append(t["id"])
        h = check_status(self, self.d.request("GET", "/v1/studies/%d/history" % m["id"]), 200)
        self.assertEqual([p["value"] for p in h["best"]], [0.5, 0.9, 0.95])
        self.assertEqual([p["trial_id"] for p in h["best"]], [got[0], got[2], got[4]])

        empty = create_study(self.d)
        h = check_status(self, self.d.request("GET", "/v1/studies/%d/history" % empty["id"]), 200)
        self.assertEqual(h, {"best": [], "completed": 0, "resource_total": 0})

    def test_history_counts_resumed_trials_by_their_increment(self):
        # Successive Halving resumes promoted trials: each promotion spends
        # its budget minus the budget of the trial it resumes, as the
        # study's own usage counts it (history reads the resumed budget from
        # an earlier trial of the same read, not from memory of every trial).
        s = create_study(self.d, resource={"name": "epochs", "min": 1, "max": 9, "integer": True},
                         scheduler={"name": "successive_halving", "options": {"n": 9, "budget": 54}})
        resumed = 0
        for _ in range(100):
            trials = suggest(self.d, s["id"])
            if not trials:
                break
            t = trials[0]
            resumed += t["resume_from"] is not None
            complete(self.d, t["id"], t["config"]["x"] + 1.0 / t["budget"])
        self.assertGreater(resumed, 0, "no trial was resumed: the test proves nothing")
        study = check_status(self, self.d.request("GET", "/v1/studies/%d" % s["id"]), 200)
        h = check_status(self, self.d.request("GET", "/v1/studies/%d/history" % s["id"]), 200)
        self.assertEqual(h["resource_total"], study["used"]["resource"])
        self.assertEqual(h["completed"], sum(1 for t in bdtest.list_all_trials(self.d, s["id"])
                                             if t["state"] == "completed"))
        self.assertEqual([p["resource"] for p in h["best"]], sorted(p["resource"] for p in h["best"]))
        self.assertLessEqual(h["best"][-1]["resource"], h["resource_total"])

    def test_csv_round_trip_conditional_hostile(self):
        body = bdtest.study_body(parameters=[
            {"name": "algo", "type": "categorical", "choices": ["svm", HOSTILE, 'rf,"q"\nx']},
            {"name": "C", "type": "float", "low": 0.01, "high": 100, "log": True, "when": {"algo": ["svm"]}},
            {"name": "n", "type": "int", "low": 1, "high": 9},
        ], seed=3)
        s = check_status(self, self.d.request("POST", "/v1/studies", body), 201)
        trials = suggest(self.d, s["id"], count=30, worker="-worker@1")
        self.assertEqual({t["config"]["algo"] for t in trials}, {"svm", HOSTILE, 'rf,"q"\nx'},
                         "seed 3 draws every choice in 30 trials")
        for i, t in enumerate(trials[:20]):
            for step in range(i % 3):
                measure(self.d, t["id"], step + 1, 10.0 + step)
            complete(self.d, t["id"], 0.25 * i)
        check_status_raw(self.d.request("POST", "/v1/trials/%d/fail" % trials[20]["id"],
                                        {"reason": "+SUM(1,2)"}), 200)
        st, text, hdrs = get_csv(self.d, s["id"])
        self.assertEqual(st, 200, text)
        self.assertEqual(hdrs["Content-Type"], "text/csv; charset=utf-8")
        self.assertEqual(hdrs["Content-Disposition"], 'attachment; filename="study-%d-trials.csv"' % s["id"])
        self.assertIn("\r\n", text)
        rows = parse_csv(text)
        self.assertEqual(rows[0], FIXED_COLUMNS + ["params_algo", "params_C", "params_n"])
        self.assertEqual(len(rows), 31)
        by_id = {t["id"]: t for t in trials}
        for r in rows[1:]:
            rec = dict(zip(rows[0], r))
            t = by_id[int(rec["trial_id"])]
            full = check_status(self, self.d.request("GET", "/v1/trials/%d" % t["id"]), 200)
            algo = t["config"]["algo"]
            self.assertEqual(rec["params_algo"], "'" + algo if algo == HOSTILE else algo)
            if algo == "svm":
                self.assertAlmostEqual(float(rec["params_C"]), t["config"]["C"], places=12)
            else:
                self.assertEqual(rec["params_C"], "", "an inactive parameter is an empty cell")
            self.assertEqual(int(rec["params_n"]), t["config"]["n"])
            self.assertEqual(rec["worker"], "'-worker@1")
            self.assertEqual(rec["state"], full["state"])
            self.assertEqual(float(rec["created_at"]), full["created_at"])
            self.assertEqual(rec["instance_index"], "")
            self.assertEqual(rec["steps"], str(len(full["measurements"])))
            if full["measurements"]:
                self.assertEqual(float(rec["last_step_value"]), full["measurements"][-1]["value"])
            else:
                self.assertEqual(rec["last_step_value"], "")
            if full["state"] == "completed":
                self.assertEqual(float(rec["value"]), full["value"])
                self.assertAlmostEqual(float(rec["finished_at"]), full["finished_at"], places=3)
                self.assertEqual(rec["timeout"], "false")
            elif full["state"] == "failed":
                self.assertEqual(rec["reason"], "'+SUM(1,2)")
            else:
                self.assertEqual((rec["value"], rec["finished_at"]), ("", ""))
        self.assertEqual([int(r[0]) for r in rows[1:]], sorted(by_id), "id order")

        st, text, _ = get_csv(self.d, s["id"], "?state=completed")
        self.assertEqual(st, 200, text)
        self.assertEqual(len(parse_csv(text)), 21)

    def test_csv_instances(self):
        s = create_study(self.d, instances=["@inst0", "plain"],
                         resource={"name": "seconds", "min": 0.1, "max": 10},
                         scheduler={"name": "spc", "options": {}})
        suggest(self.d, s["id"], count=4)
        st, text, _ = get_csv(self.d, s["id"])
        self.assertEqual(st, 200, text)
        rows = parse_csv(text)
        names = {r[6] for r in rows[1:]}
        self.assertTrue(names <= {"'@inst0", "plain"} and names, names)
        for r in rows[1:]:
            self.assertEqual(r[6], "'@inst0" if r[5] == "0" else "plain")
        st, text, _ = get_csv(self.d, s["id"], "?instance=1")
        self.assertEqual(st, 200, text)
        self.assertTrue(all(r[5] == "1" for r in parse_csv(text)[1:]))

    def test_csv_20000_trials(self):
        s = create_study(self.d, scheduler={"name": "random", "options": {"max_trials": 100000}})
        c = self.d.client(timeout=60)
        t0 = time.monotonic()
        for _ in range(200):
            st, body, _ = c.request("POST", "/v1/studies/%d/suggest" % s["id"], {"count": 100})
            self.assertEqual((st, len(body["trials"])), (200, 100))
        st, text, hdrs = c.request("GET", "/v1/studies/%d/trials.csv" % s["id"])
        self.assertEqual(st, 200)
        self.assertEqual(hdrs.get("Transfer-Encoding"), "chunked", "the export is streamed")
        rows = parse_csv(text)
        self.assertEqual(len(rows), 20001)
        ids = [int(r[0]) for r in rows[1:]]
        self.assertEqual(ids, sorted(set(ids)))
        self.assertLess(time.monotonic() - t0, 60)
        c.close()

    def test_csv_pages_end_by_bytes(self):
        """Rows of 20 kB (a long categorical value): the export's pages end
        at BD_CSV_PAGE_BYTES (1 MiB) instead of 1,000 rows, and no row is lost,
        repeated or split across the page boundaries."""
        choices = [c * 20000 for c in "abc"]
        s = create_study(self.d, parameters=[{"name": "blob", "type": "categorical", "choices": choices}],
                         scheduler={"name": "random", "options": {"max_trials": 1000}})
        trials = []
        for _ in range(3):
            trials += suggest(self.d, s["id"], count=100)
        st, text, _ = get_csv(self.d, s["id"])
        self.assertEqual(st, 200)
        self.assertGreater(len(text), 5 * (1 << 20), "spans several 1 MiB pages")
        rows = parse_csv(text)
        self.assertEqual([int(r[0]) for r in rows[1:]], [t["id"] for t in trials])
        blob = rows[0].index("params_blob")
        self.assertEqual([r[blob] for r in rows[1:]], [t["config"]["blob"] for t in trials])


class MeasurementPaging(bdtest.DaemonTestCase):
    """The 50,000-measurement cut: the measurements are written into the
    database while the daemon is stopped (160,000 HTTP reports would take
    minutes); the restarted daemon replays them and answers the pages."""

    def test_pages_cut_at_50000_measurements(self):
        d = bdtest.Daemon()
        try:
            s = create_study(d)
            ids = [t["id"] for t in suggest(d, s["id"], count=6)]
            measure(d, ids[0], 1, 0.5)
            one = check_status(self, d.request("GET", "/v1/trials/%d" % ids[0]), 200)["measurements"][0]
            d.stop()
            ((next_id,),) = d.sql("SELECT max(id) + 1 FROM events")
            next_id = int(next_id)
            rows = []
            for i, tid in enumerate(ids):
                n = 60000 if i == 0 else 20000
                for k in range(n - (1 if i == 0 else 0)):
                    rows.append((next_id, s["id"], tid, "measurement", k + 2, 1, float(k), None, one["created_at"]))
                    next_id += 1
            d.sql_insert_many("events", ("id", "study_id", "trial_id", "type", "step", "has_value", "value",
                                         "elapsed_seconds", "created_at"), rows)
            d.start()
            q = "/v1/studies/%d/trials?include=measurements&limit=1000" % s["id"]
            p1 = check_status(self, d.request("GET", q), 200)
            self.assertEqual([t["id"] for t in p1["trials"]], ids[:1], "one trial over the bound still comes")
            self.assertEqual(p1["next_after"], ids[0])
            self.assertEqual(len(p1["trials"][0]["measurements"]), 60000)
            self.assertEqual(p1["trials"][0]["measurements"][0], one)
            p2 = check_status(self, d.request("GET", q + "&after=%d" % ids[0]), 200)
            self.assertEqual([t["id"] for t in p2["trials"]], ids[1:4], "stops once it holds 50,000")
            self.assertEqual(p2["next_after"], ids[3])
            p3 = check_status(self, d.request("GET", q + "&after=%d" % ids[3]), 200)
            self.assertEqual([t["id"] for t in p3["trials"]], ids[4:])
            self.assertIsNone(p3["next_after"])
            self.assertEqual([len(t["measurements"]) for t in p2["trials"] + p3["trials"]], [20000] * 5)
            # the CSV's steps come from the same events
            st, text, _ = get_csv(d, s["id"])
            self.assertEqual(st, 200, text)
            self.assertEqual([r[10] for r in parse_csv(text)[1:]], ["60000"] + ["20000"] * 5)
        finally:
            d.cleanup()


class Studies(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()
        cls.alice = bdtest.create_user(cls.d, "alice")
        cls.bob = bdtest.create_user(cls.d, "bob")

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def post(self, body, token):
        return self.d.request("POST", "/v1/studies", body, token=token)

    def test_if_exists_modes(self):
        name = bdtest.unique_name("gc")
        body = bdtest.study_body(name=name)
        first = check_status(self, self.post(body, self.alice), 201)
        st, err, _ = self.post(body, self.alice)
        self.assertError((st, err, None), 409, "conflict", "name", what="default error")
        self.assertIn(str(first["id"]), err["error"]["message"])
        st, err, _ = self.post(dict(body, if_exists="error"), self.alice)
        self.assertError((st, err, None), 409, "conflict", "name", what="explicit error")

        loaded = check_status(self, self.post(dict(body, if_exists="load"), self.alice), 200)
        self.assertEqual(loaded["id"], first["id"])
        no_seed = dict(body, if_exists="load")
        del no_seed["seed"]
        self.assertEqual(check_status(self, self.post(no_seed, self.alice), 200)["id"], first["id"],
                         "a body without seed loads a study of any seed")
        st, err, _ = self.post(dict(body, if_exists="load", objective={"metric": "loss", "goal": "maximize"}),
                               self.alice)
        self.assertError((st, err, None), 409, "conflict", "objective", what="load with another objective")
        st, err, _ = self.post(dict(body, if_exists="load", seed=8), self.alice)
        self.assertError((st, err, None), 409, "conflict", "seed", what="load with another seed")
        st, err, _ = self.post(dict(body, if_exists="load", limits={"trials": 5}), self.alice)
        self.assertError((st, err, None), 409, "conflict", "limits", what="load with limits added")

        second = check_status(self, self.post(dict(body, if_exists="create"), self.alice), 201)
        self.assertNotEqual(second["id"], first["id"])
        listed = check_status(self, self.d.request("GET", "/v1/studies?name=%s" % name, token=self.alice), 200)
        self.assertEqual([s["id"] for s in listed["studies"]], [first["id"], second["id"]])
        # with two of that name, load answers the oldest live one
        self.assertEqual(check_status(self, self.post(dict(body, if_exists="load"), self.alice), 200)["id"],
                         first["id"])

        # another user may use the name; load never finds alice's study for bob
        check_status(self, self.post(dict(body, if_exists="load"), self.bob), 201)
        st, err, _ = self.post(body, self.bob)
        self.assertError((st, err, None), 409, "conflict", "name", what="bob's own duplicate")

        # deleting frees the name
        for sid in (first["id"], second["id"]):
            check_status(self, self.d.request("DELETE", "/v1/studies/%d" % sid, token=self.alice), 200)
        check_status(self, self.post(body, self.alice), 201)

    def test_load_after_restart_with_another_default_lease(self):
        """A body without lease_seconds loads the study although the daemon's
        --lease-seconds (the default it was filled with) changed since."""
        d = bdtest.Daemon(lease_seconds=300)
        try:
            body = bdtest.study_body(name=bdtest.unique_name("lease"))
            body.pop("lease_seconds", None)
            first = check_status(self, d.request("POST", "/v1/studies", body), 201)
            d.lease_seconds = 60
            d.restart()
            again = check_status(self, d.request("POST", "/v1/studies", dict(body, if_exists="load")), 200)
            self.assertEqual(again["id"], first["id"])
            st, err, _ = d.request("POST", "/v1/studies", dict(body, if_exists="load", lease_seconds=30))
            self.assertError((st, err, None), 409, "conflict", "lease_seconds", what="another explicit lease")
        finally:
            d.cleanup()

    def test_concurrent_creates_of_one_name(self):
        import threading
        body = bdtest.study_body(name=bdtest.unique_name("race"))
        results = []

        def create(i):
            c = self.d.client()
            mode = "error" if i % 2 else "load"
            st, b, _ = c.request("POST", "/v1/studies", dict(body, if_exists=mode), token=self.alice)
            results.append((st, b.get("id") if st in (200, 201) else b["error"]["field"]))
            c.close()
        threads = [threading.Thread(target=create, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        created = [r for r in results if r[0] == 201]
        self.assertEqual(len(created), 1, results)
        for st, what in results:
            self.assertIn(st, (200, 201, 409), results)
            if st == 200:
                self.assertEqual(what, created[0][1])
            if st == 409:
                self.assertEqual(what, "name")
        listed = check_status(self, self.d.request("GET", "/v1/studies?name=%s" % body["name"], token=self.alice),
                              200)
        self.assertEqual(len(listed["studies"]), 1)

    def test_paging_name_filter_and_activity(self):
        carol = bdtest.create_user(self.d, "carol")
        made = [create_study(self.d, token=carol)["id"] for _ in range(5)]
        create_study(self.d, token=self.bob)
        seen, after, pages = [], 0, 0
        while True:
            page = check_status(self, self.d.request("GET", "/v1/studies?limit=2&after=%d" % after, token=carol), 200)
            pages += 1
            seen += [s["id"] for s in page["studies"]]
            self.assertLessEqual(len(page["studies"]), 2)
            if page["next_after"] is None:
                break
            after = page["next_after"]
        self.assertEqual(seen, made)
        self.assertEqual(pages, 3)
        default = check_status(self, self.d.request("GET", "/v1/studies", token=carol), 200)
        self.assertEqual([s["id"] for s in default["studies"]], made)
        self.assertIsNone(default["next_after"])

        s = check_status(self, self.d.request("GET", "/v1/studies/%d" % made[0], token=carol), 200)
        self.assertEqual(s["last_activity_at"], s["created_at"])
        time.sleep(0.05)
        t = suggest(self.d, made[0], token=carol)[0]
        s1 = check_status(self, self.d.request("GET", "/v1/studies/%d" % made[0], token=carol), 200)
        self.assertAlmostEqual(s1["last_activity_at"], t["created_at"], places=3)
        time.sleep(0.05)
        measure(self.d, t["id"], 1, 0.3, token=carol)
        s2 = check_status(self, self.d.request("GET", "/v1/studies/%d" % made[0], token=carol), 200)
        self.assertGreater(s2["last_activity_at"], s1["last_activity_at"])
        time.sleep(0.05)
        complete(self.d, t["id"], 0.2, token=carol)
        s3 = check_status(self, self.d.request("GET", "/v1/studies/%d" % made[0], token=carol), 200)
        done = check_status(self, self.d.request("GET", "/v1/trials/%d" % t["id"], token=carol), 200)
        self.assertAlmostEqual(s3["last_activity_at"], done["finished_at"], places=3)
        listed = check_status(self, self.d.request("GET", "/v1/studies?limit=1", token=carol), 200)["studies"][0]
        self.assertEqual(listed["last_activity_at"], s3["last_activity_at"])
        self.d.restart()
        s4 = check_status(self, self.d.request("GET", "/v1/studies/%d" % made[0], token=carol), 200)
        self.assertAlmostEqual(s4["last_activity_at"], s3["last_activity_at"], places=3, msg="rebuilt on replay")

    def test_isolation_of_new_routes(self):
        s = create_study(self.d, token=self.alice)
        t = suggest(self.d, s["id"], token=self.alice)[0]
        complete(self.d, t["id"], 1.0, token=self.alice)
        for path in ("/v1/studies/%d/trials.csv", "/v1/studies/%d/history", "/v1/studies/%d/trials",
                     "/v1/studies/%d/trials?include=measurements", "/v1/studies/%d/trials?order=best",
                     "/v1/studies/%d/trials.csv?state=completed", "/v1/studies/%d/history?points=2"):
            with self.subTest(path=path):
                got = self.d.request("GET", path % s["id"], token=self.bob)
                self.assertError(got, 404, "not_found", None)
                check_status(self, self.d.request("GET", path % s["id"], token=self.alice), 200)
        for q in ("", "?name=%s" % s["name"], "?after=0&limit=1000"):
            listed = check_status(self, self.d.request("GET", "/v1/studies" + q, token=self.bob), 200)
            self.assertNotIn(s["id"], [x["id"] for x in listed["studies"]])
        st, err, _ = self.post(dict(bdtest.study_body(name=s["name"]), if_exists="load"), self.bob)
        self.assertEqual(st, 201, err)
        self.assertNotEqual(err["id"], s["id"])
        got = self.d.request("GET", "/v1/studies/%d/trials.csv" % s["id"], token=None)
        self.assertError(got, 401, "unauthenticated", None, check_field=False)


if __name__ == "__main__":
    unittest.main(verbosity=2)
