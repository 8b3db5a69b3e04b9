"""Durability: what banditd acknowledged (a 2xx answer) survives SIGKILL and a
graceful SIGTERM. Worker threads loop suggest -> 3 measurements -> complete on
one study while the daemon is killed mid-flight; after a restart on the same
database every acknowledged trial, measurement and completion must be there,
and the study must go on (new trials, increasing ids, consistent counts)."""

import http.client
import os
import random
import signal
import sys
import threading
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study, suggest  # noqa: E402

THREADS = 8
STATES = ("running", "completed", "stopped", "failed", "expired")


class Acks:
    """Everything the daemon acknowledged, shared by the worker threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.trials = {}        # trial id -> config
        self.measurements = {}  # trial id -> {step: value}
        self.completed = {}     # trial id -> value
        self.statuses = {}      # status -> count (diagnostics)
        self.errors = []        # unexpected answers while the daemon was up

    def count(self, st):
        with self.lock:
            self.statuses[st] = self.statuses.get(st, 0) + 1


def worker(d, sid, acks, stop, wid, rng_seed):
    """Runs trial loops until stop is set or the daemon goes away."""
    c = d.client(timeout=5)
    rng = random.Random(rng_seed)
    try:
        while not stop.is_set():
            st, body, _ = c.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w%d" % wid, "count": 1})
            acks.count(st)
            if st != 200:
                if st != 503:
                    acks.errors.append(("suggest", st, body))
                return
            if not body["trials"]:
                time.sleep(0.01)
                continue
            t = body["trials"][0]
            with acks.lock:
                acks.trials[t["id"]] = t["config"]
            for step in (1, 2, 3):
                value = round(rng.random(), 6)
                st, body, _ = c.request("POST", "/v1/trials/%d/measurements" % t["id"],
                                        {"step": step, "value": value, "elapsed_seconds": step * 0.5})
                acks.count(st)
                if st != 200:
                    if st != 503:
                        acks.errors.append(("measure", t["id"], st, body))
                    return
                with acks.lock:
                    acks.measurements.setdefault(t["id"], {})[step] = value
            value = round(rng.random(), 6)
            st, body, _ = c.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": value})
            acks.count(st)
            if st != 200:
                if st != 503:
                    acks.errors.append(("complete", t["id"], st, body))
                return
            with acks.lock:
                acks.completed[t["id"]] = value
    except (OSError, http.client.HTTPException):
        return  # the daemon went away: this request was not acknowledged
    finally:
        c.close()


class CrashRestart(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon(lease_seconds=300)
        self.addCleanup(self.d.cleanup)
        self.sid = create_study(self.d, scheduler={"name": "random", "options": {"max_trials": 100000}})["id"]
        self.acks = Acks()
        self.max_id_seen = 0

    def hammer(self, seconds, end):
        """Starts THREADS workers, lets them run `seconds`, calls end() (kill or
        stop) while they are busy, and joins them."""
        stop = threading.Event()
        threads = [threading.Thread(target=worker, args=(self.d, self.sid, self.acks, stop, i,
                                                          self.max_id_seen * 100 + i))
                   for i in range(THREADS)]
        for t in threads:
            t.start()
        time.sleep(seconds)
        result = end()
        stop.set()
        for t in threads:
            t.join(30)
            self.assertFalse(t.is_alive(), "a worker thread hung")
        return result

    def verify(self, label):
        acks = self.acks
        self.assertEqual(acks.errors, [], "%s: unexpected answers while the daemon was up" % label)
        self.assertGreater(len(acks.trials), 0, "%s: no trial was acknowledged at all" % label)
        problems = []
        for tid in sorted(acks.trials):
            st, t, _ = self.d.request("GET", "/v1/trials/%d" % tid)
            if st != 200:
                problems.append("trial %d: GET -> %d %r" % (tid, st, t))
                continue
            if t["config"] != acks.trials[tid]:
                problems.append("trial %d: config %r, acknowledged %r" % (tid, t["config"], acks.trials[tid]))
            stored = {}
            for m in t.get("measurements", []):
                stored.setdefault(m["step"], []).append(m["value"])
            for step, value in acks.measurements.get(tid, {}).items():
                if stored.get(step) != [value]:
                    problems.append("trial %d step %d: acknowledged %r, stored %r" % (tid, step, value,
                                                                                       stored.get(step)))
            if tid in acks.completed:
                if t["state"] != "completed" or t.get("value") != acks.completed[tid]:
                    problems.append("trial %d: acknowledged completion %r, stored state %s value %r" % (
                        tid, acks.completed[tid], t["state"], t.get("value")))
        self.assertEqual(problems, [], "%s: acknowledged data lost (%d trials, %d completions acked)" % (
            label, len(acks.trials), len(acks.completed)))

        study = check_status(self, self.d.request("GET", "/v1/studies/%d" % self.sid), 200, label)
        listed = bdtest.list_all_trials(self.d, self.sid)
        ids = [t["id"] for t in listed]
        self.assertEqual(ids, sorted(set(ids)), "%s: listing is ordered by id without duplicates" % label)
        self.assertTrue(set(acks.trials) <= set(ids), "%s: acknowledged trials missing from the listing" % label)
        counts = study["trials"]
        self.assertEqual(counts["total"], len(ids), "%s: total vs listing %r" % (label, counts))
        self.assertEqual(sum(counts[s] for s in STATES), counts["total"], "%s: %r" % (label, counts))
        by_state = {s: 0 for s in STATES}
        for t in listed:
            by_state[t["state"]] += 1
        self.assertEqual({s: counts[s] for s in STATES}, by_state, label)
        self.assertGreaterEqual(counts["completed"], len(acks.completed), label)
        if ids:
            self.assertGreater(ids[-1], self.max_id_seen - 1, label)

        # The study goes on: new trials get larger ids and work end to end.
        new = suggest(self.d, self.sid, count=2, worker="after-%s" % label)
        self.assertEqual(len(new), 2, label)
        self.assertTrue(all(t["id"] > max(ids) for t in new), "%s: ids %r after %r" % (
            label, [t["id"] for t in new], max(ids)))
        for t in new:
            self.assertEqual(check_status(self, self.d.request(
                "POST", "/v1/trials/%d/measurements" % t["id"], {"step": 1, "value": 0.5}), 200, label),
                {"action": "continue"})
            check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": 0.5}),
                         200, label)
            self.acks.trials[t["id"]] = t["config"]
            self.acks.measurements[t["id"]] = {1: 0.5}
            self.acks.completed[t["id"]] = 0.5
        # A trial acknowledged before the crash and still running takes measurements.
        running = [tid for tid in sorted(self.acks.trials) if tid not in self.acks.completed]
        for tid in running[-3:]:
            st, t, _ = self.d.request("GET", "/v1/trials/%d" % tid)
            if st == 200 and t["state"] == "running":
                step = max([m["step"] for m in t["measurements"]] + [0]) + 1
                self.assertEqual(check_status(self, self.d.request(
                    "POST", "/v1/trials/%d/measurements" % tid, {"step": step, "value": 0.25}), 200,
                    "%s: measurement on a trial that survived the restart" % label)["action"], "continue")
                self.acks.measurements.setdefault(tid, {})[step] = 0.25
        self.max_id_seen = max(t["id"] for t in new)

    def test_sigkill_three_times(self):
        for cycle in range(3):
            busy = 0.6 + 0.3 * cycle
            rc = self.hammer(busy, lambda: self.d.kill(signal.SIGKILL))
            self.assertEqual(rc, -signal.SIGKILL)
            acked_before = len(self.acks.trials)
            self.d.start()
            self.verify("after SIGKILL #%d" % (cycle + 1))
            self.assertGreater(len(self.acks.trials), acked_before, "the study continues")
        self.assertGreater(len(self.acks.completed), 10, "the workers made progress: %r" % self.acks.statuses)

    def test_graceful_sigterm(self):
        def term():
            self.d.kill(signal.SIGTERM)
            return self.d.wait(15)
        rc = self.hammer(1.0, term)
        self.assertEqual(rc, 0, "SIGTERM is a graceful stop; exit status 0")
        self.d.start()
        self.verify("after SIGTERM")


if __name__ == "__main__":
    unittest.main()
