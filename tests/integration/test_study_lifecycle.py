"""Issue 17 through HTTP and the Python client: pausing and resuming a study,
study metadata and trial user_attrs (merge, null removes, bounds), their
idempotency keys, that a paused study's running trials still report and
expire, that everything survives a restart (also for a study the daemon has
not loaded yet), that metadata is not part of the "if_exists": "load"
comparison, the CSV's user_attrs column, and that one user never reads or
changes another's."""

import csv
import io
import os
import sys
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("BD_SOURCE_DIR") or os.path.join(HERE, "..", ".."),
                                "clients", "python"))
import bdtest  # noqa: E402
from bdtest import check_status, create_study, study_body, suggest  # noqa: E402
from banditd import BanditdError, Client  # noqa: E402


class StudyLifecycle(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(lease_seconds=300)
        cls.alice = bdtest.create_user(cls.d, "alice")
        cls.bob = bdtest.create_user(cls.d, "bob")

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def client(self, token):
        c = Client("http://127.0.0.1:%d" % self.d.port, token, retries=2)
        self.addCleanup(c.close)
        return c

    def req(self, method, path, body=None, token=None, status=200, headers=None):
        return check_status(self, self.d.request(method, path, body, token=token or self.alice, headers=headers),
                            status, "%s %s" % (method, path))

    # ---- pause / resume ----

    def test_pause_stops_suggest_but_not_reports_and_resume_restores(self):
        s = create_study(self.d, token=self.alice)
        sid = s["id"]
        self.assertIs(s["paused"], False)
        self.assertEqual(s["metadata"], {})
        running = suggest(self.d, sid, count=2, token=self.alice)
        self.assertEqual(len(running), 2)

        p = self.req("POST", "/v1/studies/%d/pause" % sid)
        self.assertIs(p["paused"], True)
        self.assertEqual(p["state"], "paused")
        self.assertIs(p["done"], False)
        again = self.req("POST", "/v1/studies/%d/pause" % sid, {})  # a no-op, same answer
        self.assertIs(again["paused"], True)
        self.assertEqual(again["trials"], p["trials"])

        got = self.req("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w", "count": 3})
        self.assertEqual(got, {"trials": [], "retry_after_ms": 5000, "paused": True})
        listed = self.req("GET", "/v1/studies?name=%s" % s["name"])["studies"]
        self.assertEqual([(x["id"], x["paused"], x["state"]) for x in listed], [(sid, True, "paused")])

        # Running trials still report while paused.
        t0, t1 = running[0]["id"], running[1]["id"]
        self.assertEqual(self.req("POST", "/v1/trials/%d/measurements" % t0, {"step": 1, "value": 0.5})["action"],
                         "continue")
        self.req("POST", "/v1/trials/%d/heartbeat" % t0)
        done = self.req("POST", "/v1/trials/%d/complete" % t0, {"value": 0.4})
        self.assertEqual(done["state"], "completed")
        self.assertEqual(self.req("POST", "/v1/trials/%d/fail" % t1, {"reason": "oom"})["state"], "failed")
        st = self.req("GET", "/v1/studies/%d" % sid)
        self.assertEqual((st["trials"]["total"], st["trials"]["completed"], st["state"]), (2, 1, "paused"))

        r = self.req("POST", "/v1/studies/%d/resume" % sid)
        self.assertIs(r["paused"], False)
        self.assertEqual(r["state"], "running")
        self.assertEqual(self.req("POST", "/v1/studies/%d/resume" % sid)["paused"], False)  # no-op
        self.assertEqual(len(suggest(self.d, sid, count=1, token=self.alice)), 1)

    def test_paused_study_leases_still_expire(self):
        s = create_study(self.d, token=self.alice, lease_seconds=0.5)
        t = suggest(self.d, s["id"], token=self.alice)[0]
        self.req("POST", "/v1/studies/%d/pause" % s["id"])
        deadline = time.time() + 15
        while time.time() < deadline:
            state = self.req("GET", "/v1/trials/%d" % t["id"])["state"]
            if state == "expired":
                break
            time.sleep(0.2)
        self.assertEqual(state, "expired", "the lease reaper skips no paused study")
        self.assertEqual(self.req("GET", "/v1/studies/%d" % s["id"])["state"], "paused")

    def test_finished_paused_study_reads_done(self):
        s = create_study(self.d, token=self.alice, limits={"trials": 1})
        t = suggest(self.d, s["id"], token=self.alice)[0]
        self.req("POST", "/v1/trials/%d/complete" % t["id"], {"value": 1})
        p = self.req("POST", "/v1/studies/%d/pause" % s["id"])
        self.assertEqual((p["state"], p["done"], p["paused"]), ("done", True, True))
        self.assertEqual(self.req("POST", "/v1/studies/%d/suggest" % s["id"], {}), {"trials": [], "done": True})

    def test_idempotency_keys_on_pause_and_patch(self):
        s = create_study(self.d, token=self.alice)
        sid = s["id"]
        key = {"Idempotency-Key": bdtest.unique_name("pause")}
        first = self.req("POST", "/v1/studies/%d/pause" % sid, headers=key)
        self.req("POST", "/v1/studies/%d/resume" % sid)
        replay = self.req("POST", "/v1/studies/%d/pause" % sid, headers=key)
        self.assertEqual(replay["paused"], True, "the first answer, replayed")
        self.assertEqual(replay, first)
        self.assertIs(self.req("GET", "/v1/studies/%d" % sid)["paused"], False, "the retry did not act again")
        st, body, _ = self.d.request("POST", "/v1/studies/%d/resume" % sid, token=self.alice, headers=key)
        self.assertError((st, body, None), 409, "conflict", "Idempotency-Key")

        key = {"Idempotency-Key": bdtest.unique_name("patch")}
        a = self.req("PATCH", "/v1/studies/%d" % sid, {"metadata": {"n": 1}}, headers=key)
        self.req("PATCH", "/v1/studies/%d" % sid, {"metadata": {"n": 2}})
        self.assertEqual(self.req("PATCH", "/v1/studies/%d" % sid, {"metadata": {"n": 1}}, headers=key), a)
        self.assertEqual(self.req("GET", "/v1/studies/%d" % sid)["metadata"], {"n": 2})

    # ---- metadata ----

    def test_metadata_at_creation_merge_and_removal(self):
        meta = {"owner": "alice", "dataset": {"name": "cifar10", "split": [0.8, 0.2]}, "tags": ["a"]}
        s = create_study(self.d, token=self.alice, metadata=meta)
        sid = s["id"]
        self.assertEqual(s["metadata"], meta)
        self.assertNotIn("metadata", s["scheduler"])
        m = self.req("PATCH", "/v1/studies/%d" % sid, {"metadata": {"tags": None, "note": "x", "absent": None}})
        self.assertEqual(m["metadata"], {"owner": "alice", "dataset": meta["dataset"], "note": "x"})
        m = self.req("PATCH", "/v1/studies/%d" % sid, {"metadata": {"dataset": {"name": "mnist"}}})
        self.assertEqual(m["metadata"]["dataset"], {"name": "mnist"}, "a nested object is replaced whole")
        m = self.req("PATCH", "/v1/studies/%d" % sid, {"metadata": {}})
        self.assertEqual(m["metadata"], {"owner": "alice", "dataset": {"name": "mnist"}, "note": "x"})
        m = self.req("PATCH", "/v1/studies/%d" % sid, {"metadata": {"owner": None, "dataset": None, "note": None}})
        self.assertEqual(m["metadata"], {})
        # Creation with null values leaves them out; "metadata": null is none.
        s2 = create_study(self.d, token=self.alice, metadata={"a": 1, "b": None})
        self.assertEqual(s2["metadata"], {"a": 1})
        self.assertEqual(create_study(self.d, token=self.alice, metadata=None)["metadata"], {})

    def test_metadata_bounds_count_the_merged_result(self):
        s = create_study(self.d, token=self.alice, metadata={"k%02d" % i: i for i in range(64)})
        self.assertEqual(len(s["metadata"]), 64)
        st, body, _ = self.d.request("PATCH", "/v1/studies/%d" % s["id"], {"metadata": {"one_more": 1}},
                                     token=self.alice)
        self.assertError((st, body, None), 400, "invalid_argument", "metadata")
        self.assertEqual(len(self.req("GET", "/v1/studies/%d" % s["id"])["metadata"]), 64, "nothing changed")
        m = self.req("PATCH", "/v1/studies/%d" % s["id"], {"metadata": {"k00": None, "one_more": 1}})
        self.assertEqual(len(m["metadata"]), 64, "a removal makes room in the same patch")
        # 16 KiB in all: two halves fit alone, not together.
        s = create_study(self.d, token=self.alice, metadata={"a": "x" * 9000})
        st, body, _ = self.d.request("PATCH", "/v1/studies/%d" % s["id"], {"metadata": {"b": "y" * 9000}},
                                     token=self.alice)
        self.assertError((st, body, None), 400, "invalid_argument", "metadata")
        self.assertEqual(sorted(self.req("GET", "/v1/studies/%d" % s["id"])["metadata"]), ["a"])

    def test_metadata_is_not_part_of_the_definition_for_load(self):
        body = study_body(metadata={"v": 1})
        first = check_status(self, self.d.request("POST", "/v1/studies", body, token=self.alice), 201)
        body = dict(body, metadata={"v": 2}, if_exists="load")
        again = check_status(self, self.d.request("POST", "/v1/studies", body, token=self.alice), 200)
        self.assertEqual(again["id"], first["id"], "metadata does not make the definitions differ")
        self.assertEqual(again["metadata"], {"v": 1}, "load leaves the stored metadata as it is")
        body.pop("metadata")
        again = check_status(self, self.d.request("POST", "/v1/studies", body, token=self.alice), 200)
        self.assertEqual(again["id"], first["id"])
        # ... but a bad one is still refused.
        body["metadata"] = [1]
        st, b, _ = self.d.request("POST", "/v1/studies", body, token=self.alice)
        self.assertError((st, b, None), 400, "invalid_argument", "metadata")

    # ---- user_attrs ----

    def test_a_trial_page_ends_once_its_user_attrs_pass_256_kib(self):
        # 16,000 bytes of attrs a trial (a crafted array parses to ~20x that): 20 of them are
        # ~320 KB of text, so the page of limit 100 ends early and next_after goes on.
        sid = create_study(self.d, token=self.alice)["id"]
        trials = suggest(self.d, sid, count=20, token=self.alice)
        for t in trials:
            self.req("PATCH", "/v1/trials/%d" % t["id"], {"user_attrs": {"a": [0] * 7990}})
        page = self.req("GET", "/v1/studies/%d/trials?limit=100" % sid)
        self.assertLess(len(page["trials"]), 20)
        self.assertGreater(len(page["trials"]), 10)
        self.assertEqual(page["next_after"], page["trials"][-1]["id"])
        rest = self.req("GET", "/v1/studies/%d/trials?limit=100&after=%d" % (sid, page["next_after"]))
        self.assertEqual(len(page["trials"]) + len(rest["trials"]), 20, "nothing lost across the pages")

    def test_user_attrs_patch_in_any_state_complete_and_csv(self):
        s = create_study(self.d, token=self.alice)
        t = suggest(self.d, s["id"], count=2, token=self.alice)
        self.assertEqual(t[0]["user_attrs"], {})
        a = self.req("PATCH", "/v1/trials/%d" % t[0]["id"], {"user_attrs": {"gpu": "a100", "seed": 3}})
        self.assertEqual((a["user_attrs"], a["state"]), ({"gpu": "a100", "seed": 3}, "running"))
        done = self.req("POST", "/v1/trials/%d/complete" % t[0]["id"],
                        {"value": 0.25, "user_attrs": {"seed": None, "=cmd": "=1+1"}})
        self.assertEqual(done["user_attrs"], {"gpu": "a100", "=cmd": "=1+1"})
        a = self.req("PATCH", "/v1/trials/%d" % t[0]["id"], {"user_attrs": {"note": "after"}})
        self.assertEqual((a["state"], a["user_attrs"]["note"]), ("completed", "after"), "a finished trial too")
        got = self.req("GET", "/v1/trials/%d" % t[0]["id"])
        self.assertEqual(got["user_attrs"], {"gpu": "a100", "=cmd": "=1+1", "note": "after"})
        listed = self.req("GET", "/v1/studies/%d/trials" % s["id"])["trials"]
        self.assertEqual([x["user_attrs"] for x in listed], [got["user_attrs"], {}])

        # A bad user_attrs on complete refuses the whole completion.
        st, body, _ = self.d.request("POST", "/v1/trials/%d/complete" % t[1]["id"],
                                     {"value": 1, "user_attrs": {"": 1}}, token=self.alice)
        self.assertError((st, body, None), 400, "invalid_argument", "user_attrs")
        self.assertEqual(self.req("GET", "/v1/trials/%d" % t[1]["id"])["state"], "running")

        st, text, hdrs = self.d.request("GET", "/v1/studies/%d/trials.csv" % s["id"], token=self.alice)
        self.assertEqual(st, 200)
        rows = list(csv.DictReader(io.StringIO(text if isinstance(text, str) else text.decode())))
        self.assertIn("user_attrs", rows[0])
        self.assertEqual(rows[0]["user_attrs"], '{"gpu":"a100","=cmd":"=1+1","note":"after"}')
        self.assertEqual(rows[1]["user_attrs"], "")

    # ---- two users ----

    def test_another_users_study_and_trial_are_404_and_unchanged(self):
        s = create_study(self.d, token=self.alice, metadata={"secret": 1})
        t = suggest(self.d, s["id"], token=self.alice)[0]
        for method, path, body in (("POST", "/v1/studies/%d/pause" % s["id"], None),
                                   ("POST", "/v1/studies/%d/resume" % s["id"], None),
                                   ("PATCH", "/v1/studies/%d" % s["id"], {"metadata": {"x": 1}}),
                                   ("PATCH", "/v1/trials/%d" % t["id"], {"user_attrs": {"x": 1}}),
                                   ("POST", "/v1/trials/%d/complete" % t["id"], {"value": 1, "user_attrs": {}})):
            st, b, _ = self.d.request(method, path, body, token=self.bob)
            self.assertError((st, b, None), 404, "not_found", check_field=False, what=path)
        st = self.req("GET", "/v1/studies/%d" % s["id"])
        self.assertEqual((st["paused"], st["metadata"]), (False, {"secret": 1}))
        self.assertEqual(self.req("GET", "/v1/trials/%d" % t["id"])["user_attrs"], {})
        bob = self.client(self.bob)
        with self.assertRaises(BanditdError) as e:
            bob.pause_study(s["id"])
        self.assertEqual(e.exception.status, 404)
        self.assertNotIn(s["id"], [x["id"] for x in bob.list_studies()])

    # ---- Python client ----

    def test_python_client_methods(self):
        c = self.client(self.alice)
        s = c.create_study(bdtest.unique_name("py"), [{"name": "x", "type": "float", "low": 0, "high": 1}],
                           "random", objective={"metric": "loss", "goal": "minimize"},
                           metadata={"team": "vision"})
        self.assertEqual(s["metadata"], {"team": "vision"})
        self.assertEqual(c.pause_study(s["id"])["state"], "paused")
        self.assertEqual(c.suggest(s["id"]), {"trials": [], "retry_after_ms": 5000, "paused": True})
        self.assertIs(c.resume_study(s["id"])["paused"], False)
        m = c.set_study_metadata(s["id"], {"team": None, "owner": "alice"})
        self.assertEqual(m["metadata"], {"owner": "alice"})
        t = c.suggest(s["id"])["trials"][0]
        self.assertEqual(c.set_trial_user_attrs(t["id"], {"host": "n1"})["user_attrs"], {"host": "n1"})
        done = c.complete(t["id"], 0.5, user_attrs={"host": None, "ok": True})
        self.assertEqual(done["user_attrs"], {"ok": True})
        with self.assertRaises(BanditdError) as e:
            c.set_study_metadata(s["id"], {"k" * 65: 1})
        self.assertEqual((e.exception.status, e.exception.field), (400, "metadata." + "k" * 64))

    # ---- restart ----

    def test_everything_survives_a_restart_and_reads_right_before_the_study_is_loaded(self):
        d = bdtest.Daemon(lease_seconds=300)
        self.addCleanup(d.cleanup)
        token = bdtest.create_user(d, "carol")
        s1 = create_study(d, token=token, metadata={"m": 1})
        s2 = create_study(d, token=token)
        t = suggest(d, s1["id"], token=token)[0]
        check_status(self, d.request("PATCH", "/v1/trials/%d" % t["id"], {"user_attrs": {"u": [1, 2]}}, token=token),
                     200)
        check_status(self, d.request("POST", "/v1/studies/%d/pause" % s1["id"], token=token), 200)
        check_status(self, d.request("PATCH", "/v1/studies/%d" % s2["id"], {"metadata": {"z": None, "y": "2"}},
                                     token=token), 200)
        d.restart()
        # The listing is the first request: neither study is loaded before it.
        listed = {x["id"]: x for x in check_status(self, d.request("GET", "/v1/studies", token=token), 200)["studies"]}
        self.assertEqual((listed[s1["id"]]["paused"], listed[s1["id"]]["state"], listed[s1["id"]]["metadata"]),
                         (True, "paused", {"m": 1}))
        self.assertEqual((listed[s2["id"]]["paused"], listed[s2["id"]]["metadata"]), (False, {"y": "2"}))
        got = check_status(self, d.request("POST", "/v1/studies/%d/suggest" % s1["id"], {}, token=token), 200)
        self.assertEqual(got, {"trials": [], "retry_after_ms": 5000, "paused": True})
        self.assertEqual(check_status(self, d.request("GET", "/v1/trials/%d" % t["id"], token=token), 200)
                         ["user_attrs"], {"u": [1, 2]})
        d.restart()
        # A suggest as the first request after a restart loads the study paused.
        got = check_status(self, d.request("POST", "/v1/studies/%d/suggest" % s1["id"], {}, token=token), 200)
        self.assertIs(got.get("paused"), True)
        check_status(self, d.request("POST", "/v1/studies/%d/resume" % s1["id"], token=token), 200)
        d.restart()
        self.assertEqual(len(suggest(d, s1["id"], token=token)), 1, "the resume was stored too")


if __name__ == "__main__":
    unittest.main()
