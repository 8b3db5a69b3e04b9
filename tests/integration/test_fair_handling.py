"""One user's flood of a slow study must not stall the other users (issue 20).

The flooder's studies use the test-only scheduler `test_sleep`
(server/sched/test_sleep.c: random search whose suggest() and observe() each
sleep sleep_ms), so only the test daemon (banditd-test) runs this file. The
daemon gets few handler threads (--handlers 8), fewer than the flood's
concurrent requests: before study gates (server/admission.h) every handler
ended up asleep on the flooded study's mutex and another user's GET /v1/me
waited seconds. Now a request that would wait for a busy study is answered
429 at once, with Retry-After.

Bounds are functional checks with wide margins, not benchmarks
(tests/bench/fair_flood.py measures).
"""

import signal
import statistics
import threading
import time
import unittest

import bdtest
from bdtest import check_status

HANDLERS = 8
FLOOD_THREADS = 16


def slow_study(d, token, sleep_ms, **overrides):
    return bdtest.create_study(d, token=token,
                               scheduler={"name": "test_sleep", "options": {"sleep_ms": sleep_ms}}, **overrides)


class Flood:
    """threads that keep sending suggests to study_ids (in turn) as user token,
    ignoring Retry-After as a hostile client would; statuses are counted."""

    def __init__(self, d, token, study_ids, threads):
        self.d, self.token, self.study_ids = d, token, study_ids
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.statuses = {}
        self.busy_answers = []  # (headers, body) of some 429s
        self.threads = [threading.Thread(target=self._run, args=(i,)) for i in range(threads)]

    def _run(self, i):
        c = self.d.client(timeout=60)
        sid = self.study_ids[i % len(self.study_ids)]
        while not self.stop.is_set():
            try:
                st, body, headers = c.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "flood"},
                                              token=self.token)
            except OSError:
                st, body, headers = -1, None, None  # the daemon stopping
                time.sleep(0.05)
            with self.lock:
                self.statuses[st] = self.statuses.get(st, 0) + 1
                if st == 429 and len(self.busy_answers) < 5:
                    self.busy_answers.append((headers, body))
            if st == 429:
                time.sleep(0.02)
        c.close()

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(60)


class FairHandling(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(extra_args=("--handlers", str(HANDLERS), "--user-concurrency", "2"))
        cls.flooder = bdtest.create_user(cls.d, bdtest.unique_name("flooder"))
        cls.bystander = bdtest.create_user(cls.d, bdtest.unique_name("bystander"))

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def bystander_calls(self, seconds):
        """Latencies of the bystander's calls (me, list, suggest + complete) for seconds."""
        own = bdtest.create_study(self.d, token=self.bystander)
        c = self.d.client(timeout=60)
        times = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            check_status(self, c.request("GET", "/v1/me", token=self.bystander), 200)
            check_status(self, c.request("GET", "/v1/studies", token=self.bystander), 200)
            body = check_status(self, c.request("POST", "/v1/studies/%d/suggest" % own["id"], {},
                                                token=self.bystander), 200)
            check_status(self, c.request("POST", "/v1/trials/%d/complete" % body["trials"][0]["id"],
                                         {"value": 0.3}, token=self.bystander), 200)
            times.append(time.monotonic() - t0)
            time.sleep(0.1)
        c.close()
        return times

    def test_a_flooded_study_answers_429_and_other_users_stay_fast(self):
        study = slow_study(self.d, self.flooder, 1000)
        bdtest.suggest(self.d, study["id"], token=self.flooder)  # the gate learns that it is slow
        with Flood(self.d, self.flooder, [study["id"]], FLOOD_THREADS) as flood:
            time.sleep(0.5)
            times = self.bystander_calls(4.0)
        self.assertLess(statistics.median(times), 0.1, sorted(times)[-5:])
        self.assertLess(max(times), 0.5, sorted(times)[-5:])
        self.assertGreater(flood.statuses.get(200, 0), 0, flood.statuses)  # the flooder's study still answers
        self.assertGreater(flood.statuses.get(429, 0), 0, flood.statuses)
        headers, body = flood.busy_answers[0]
        self.assertGreaterEqual(int(headers["Retry-After"]), 1)
        self.assertEqual(body["error"]["code"], "busy")
        self.assertEqual(body["error"]["field"], "study")
        self.assertGreaterEqual(body["error"]["retry_after_seconds"], 1)

    def test_a_user_flooding_several_slow_studies_gets_its_share_of_handlers(self):
        studies = [slow_study(self.d, self.flooder, 500) for _ in range(4)]
        for s in studies:
            bdtest.suggest(self.d, s["id"], token=self.flooder)
        with Flood(self.d, self.flooder, [s["id"] for s in studies], 4) as flood:
            time.sleep(0.3)
            times = self.bystander_calls(2.0)
        fields = {b["error"]["field"] for _, b in flood.busy_answers}
        self.assertIn("user", fields, flood.busy_answers)  # --user-concurrency 2 of 4 studies
        self.assertLess(max(times), 0.5, sorted(times)[-5:])

    def test_a_busy_study_does_not_hold_up_other_users_lease_expiry(self):
        """The reaper skips a study it would have to wait for (and comes back
        to it), so the flood does not delay the bystander's expiry."""
        study = slow_study(self.d, self.flooder, 1000, lease_seconds=1)
        bdtest.suggest(self.d, study["id"], token=self.flooder)  # expires during the flood
        own = bdtest.create_study(self.d, token=self.bystander, lease_seconds=1)
        with Flood(self.d, self.flooder, [study["id"]], FLOOD_THREADS):
            time.sleep(1.5)  # the flooder's trial is past its lease
            trial = bdtest.suggest(self.d, own["id"], token=self.bystander)[0]
            c = self.d.client()
            state = None
            while True:
                body = check_status(self, c.request("GET", "/v1/trials/%d" % trial["id"], token=self.bystander),
                                    200)
                state = body["state"]
                late = time.time() - trial["lease_expires_at"]
                if state == "expired" or late > 10:
                    break
                time.sleep(0.05)
            c.close()
        self.assertEqual(state, "expired")
        self.assertLess(late, 3.0)


class BoundedStop(bdtest.DaemonTestCase):
    def test_sigterm_under_a_flood_exits_in_bounded_time(self):
        """Before: every request queued at the grace's end still ran, 2 s
        each, one after another. Now they are answered 503."""
        d = bdtest.Daemon(extra_args=("--handlers", str(HANDLERS)))
        try:
            user = bdtest.create_user(d, bdtest.unique_name("flooder"))
            studies = [slow_study(d, user, 2000) for _ in range(2)]
            with Flood(d, user, [s["id"] for s in studies], 40):
                time.sleep(1.0)
                t0 = time.monotonic()
                d.kill(signal.SIGTERM)
                rc = d.wait(30)
                took = time.monotonic() - t0
            self.assertEqual(rc, 0)
            self.assertLess(took, 15.0)
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main()
