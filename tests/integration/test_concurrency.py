"""Races between clients: the same Idempotency-Key sent at once, several
completes of one trial, suggest against max_trials, measurements racing a
complete, and a study deleted under busy workers. Each race must end in one
consistent outcome with no 5xx answer."""

import os
import sys
import threading
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study, suggest  # noqa: E402

N = 8


def race(d, n, fn):
    """Runs fn(client, i) in n threads released together; returns their results
    in thread order."""
    barrier = threading.Barrier(n)
    results = [None] * n

    def run(i):
        c = d.client()
        try:
            c.request("GET", "/healthz", token=None)  # connect before the start line
            barrier.wait()
            results[i] = fn(c, i)
        except Exception as e:  # reported by the caller's assertions
            results[i] = ("exception", repr(e))
        finally:
            c.close()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


class Races(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(extra_args=["--threads", "4"])

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def req(self, *a, **kw):
        return self.d.request(*a, **kw)

    def study(self, sid):
        return check_status(self, self.req("GET", "/v1/studies/%d" % sid), 200)

    def test_same_idempotency_key_at_once(self):
        for round_ in range(3):
            s = create_study(self.d)
            key = bdtest.unique_name("race")
            path = "/v1/studies/%d/suggest" % s["id"]
            res = race(self.d, N, lambda c, i: c.request("POST", path, {"worker": "w", "count": 2},
                                                         headers={"Idempotency-Key": key})[:2])
            statuses = [r[0] for r in res]
            self.assertEqual(statuses, [200] * N, "round %d: %r" % (round_, res))
            self.assertTrue(all(r[1] == res[0][1] for r in res), "round %d: answers differ: %r" % (round_, res))
            self.assertEqual(self.study(s["id"])["trials"]["total"], 2, "round %d: one suggest acted" % round_)

    def test_same_idempotency_key_on_different_studies_at_once(self):
        """Requests to different studies hold different locks, so the key is
        claimed at the commit: exactly one acts, the others answer 409 naming
        Idempotency-Key, and the losers' studies are unchanged."""
        for round_ in range(3):
            studies = [create_study(self.d) for _ in range(N)]
            key = bdtest.unique_name("cross")
            res = race(self.d, N, lambda c, i: c.request("POST", "/v1/studies/%d/suggest" % studies[i]["id"],
                                                         {"worker": "w"}, headers={"Idempotency-Key": key})[:2])
            ok = [i for i, r in enumerate(res) if r[0] == 200]
            self.assertEqual(len(ok), 1, "round %d: %r" % (round_, res))
            for i, (st, body) in enumerate(res):
                if i == ok[0]:
                    continue
                self.assertEqual((st, body["error"]["field"]), (409, "Idempotency-Key"), "round %d: %r" % (round_, res))
                self.assertEqual(self.study(studies[i]["id"])["trials"]["total"], 0, "a losing request acted")

    def test_concurrent_completes_of_one_trial(self):
        for round_ in range(3):
            s = create_study(self.d)
            (t,) = suggest(self.d, s["id"])
            path = "/v1/trials/%d/complete" % t["id"]
            res = race(self.d, N, lambda c, i: c.request("POST", path, {"value": float(i)})[:2])
            statuses = sorted(r[0] for r in res)
            self.assertEqual(statuses, [200] + [409] * (N - 1), "round %d: %r" % (round_, res))
            winner = [i for i, r in enumerate(res) if r[0] == 200][0]
            g = check_status(self, self.req("GET", "/v1/trials/%d" % t["id"]), 200)
            self.assertEqual((g["state"], g["value"]), ("completed", float(winner)))
            self.assertEqual(self.study(s["id"])["trials"]["completed"], 1)

    def test_complete_against_fail(self):
        s = create_study(self.d)
        (t,) = suggest(self.d, s["id"])
        res = race(self.d, N, lambda c, i: c.request(
            "POST", "/v1/trials/%d/%s" % (t["id"], "complete" if i % 2 else "fail"),
            {"value": 1.0} if i % 2 else {"reason": "x"})[:2])
        self.assertEqual(sorted(r[0] for r in res), [200] + [409] * (N - 1), res)
        won = [i for i, r in enumerate(res) if r[0] == 200][0]
        g = check_status(self, self.req("GET", "/v1/trials/%d" % t["id"]), 200)
        self.assertEqual(g["state"], "completed" if won % 2 else "failed")
        counts = self.study(s["id"])["trials"]
        self.assertEqual((counts["completed"], counts["failed"], counts["running"]),
                         (1, 0, 0) if won % 2 else (0, 1, 0))

    def test_suggest_respects_max_trials(self):
        s = create_study(self.d, scheduler={"name": "random", "options": {"max_trials": 20}})
        path = "/v1/studies/%d/suggest" % s["id"]

        def grab(c, i):
            got = []
            for _ in range(5):
                st, body, _ = c.request("POST", path, {"worker": "w%d" % i, "count": 3})
                if st != 200:
                    return ("status", st, body)
                got += [t["id"] for t in body["trials"]]
            return got
        res = race(self.d, N, grab)
        for r in res:
            self.assertIsInstance(r, list, r)
        ids = [i for r in res for i in r]
        self.assertEqual(len(ids), 20, "max_trials 20 with %d trials handed out" % len(ids))
        self.assertEqual(len(set(ids)), 20, "a trial was handed out twice")
        self.assertEqual(self.study(s["id"])["trials"]["total"], 20)

    def test_measurements_racing_complete(self):
        s = create_study(self.d)
        (t,) = suggest(self.d, s["id"])
        tid = t["id"]

        def act(c, i):
            if i == 0:
                return c.request("POST", "/v1/trials/%d/complete" % tid, {"value": 0.5})[:2]
            out = []
            for k in range(10):
                step = i * 100 + k
                st, body, _ = c.request("POST", "/v1/trials/%d/measurements" % tid, {"step": step, "value": 0.1})
                out.append((step, st))
            return out
        res = race(self.d, N, act)
        self.assertEqual(res[0][0], 200, res[0])
        acked = set()
        for r in res[1:]:
            self.assertIsInstance(r, list, r)
            for step, st in r:
                self.assertIn(st, (200, 409), r)
                if st == 200:
                    acked.add(step)
        g = check_status(self, self.req("GET", "/v1/trials/%d" % tid), 200)
        stored = [m["step"] for m in g["measurements"]]
        self.assertEqual(sorted(stored), sorted(acked), "stored measurements are exactly the acknowledged ones")
        self.assertEqual(g["state"], "completed")

    def test_delete_under_busy_workers(self):
        s = create_study(self.d)
        sid = s["id"]
        trials = suggest(self.d, sid, count=N)

        def act(c, i):
            if i == 0:
                return [c.request("DELETE", "/v1/studies/%d" % sid)[0]]
            seen = []
            tid = trials[i]["id"]
            for k in range(30):
                seen.append(c.request("POST", "/v1/trials/%d/measurements" % tid, {"step": k, "value": 1})[0])
                seen.append(c.request("POST", "/v1/studies/%d/suggest" % sid, {})[0])
            return seen
        res = race(self.d, N, act)
        self.assertEqual(res[0], [200], res[0])
        for r in res[1:]:
            self.assertIsInstance(r, list, r)
            self.assertTrue(set(r) <= {200, 404}, "only 200 before and 404 after the delete: %r" % r)
            first = r.index(404) if 404 in r else len(r)
            self.assertEqual(r[first:], [404] * (len(r) - first), "a 200 after a 404: %r" % r)
            self.assertEqual(r[-2:], [404, 404], "after the delete everything is 404: %r" % r)
        self.assertError(self.req("GET", "/v1/studies/%d" % sid), 404, "not_found", check_field=False)
        for t in trials:
            self.assertEqual(self.req("GET", "/v1/trials/%d" % t["id"])[0], 404)

    def test_many_users_many_studies(self):
        tokens = [bdtest.create_user(self.d, bdtest.unique_name("u")) for _ in range(N)]

        def act(c, i):
            made = []
            for _ in range(5):
                st, body, _ = c.request("POST", "/v1/studies", bdtest.study_body(), token=tokens[i])
                if st != 201:
                    return ("status", st, body)
                made.append(body["id"])
                st, body, _ = c.request("POST", "/v1/studies/%d/suggest" % made[-1], {"count": 3}, token=tokens[i])
                if st != 200:
                    return ("status", st, body)
            return made
        res = race(self.d, N, act)
        all_ids = []
        for i, r in enumerate(res):
            self.assertIsInstance(r, list, r)
            listed = [x["id"] for x in check_status(self, self.req("GET", "/v1/studies", token=tokens[i]),
                                                    200)["studies"]]
            self.assertEqual(sorted(listed), sorted(r), "user %d sees exactly their studies" % i)
            for sid in r:
                self.assertEqual(check_status(self, self.req("GET", "/v1/studies/%d" % sid, token=tokens[i]),
                                              200)["trials"]["total"], 3)
            all_ids += r
        self.assertEqual(len(all_ids), len(set(all_ids)))


if __name__ == "__main__":
    unittest.main()
