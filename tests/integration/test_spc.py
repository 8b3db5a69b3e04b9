"""spc through the daemon: a study of solvers on instances, runs answered
with runtimes and timeouts, the testers in GET /v1/studies/{id}, and the same
next runs after a SIGKILL and restart."""

import os
import signal
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study, suggest  # noqa: E402

INSTANCES = ["uf175-%02d.cnf" % i for i in range(12)]
SPEED = {"minisat": 0.8, "glucose": 2.5, "slow": 30.0}


def runtime(config, instance_index):
    """A fixed runtime table: solver speed times an instance factor."""
    return SPEED[config["solver"]] * (1 + instance_index % 4)


class SpcThroughTheDaemon(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon(lease_seconds=300)
        self.addCleanup(self.d.cleanup)
        self.study = create_study(
            self.d,
            parameters=[{"name": "solver", "type": "categorical", "choices": list(SPEED)}],
            objective={"metric": "runtime", "goal": "minimize"},
            resource={"name": "seconds", "min": 0.5, "max": 16},
            instances=INSTANCES,
            scheduler={"name": "spc", "options": {"kappa0": 1}})

    def run_one(self):
        (t,) = suggest(self.d, self.study["id"])
        self.assertEqual(t["instance"]["name"], INSTANCES[t["instance"]["index"]])
        self.assertIn(t["budget"], (1, 2, 4, 8, 16), "caps double from kappa0 = 1 up to resource.max")
        rt = runtime(t["config"], t["instance"]["index"])
        body = {"status": "timeout"} if rt > t["budget"] else {"value": rt}
        check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"], body), 200)
        return t

    def test_runs_timeouts_testers_and_the_incumbent(self):
        runs = [self.run_one() for _ in range(60)]
        self.assertEqual({r["config"]["solver"] for r in runs[:3]}, set(SPEED), "untested configs run first")
        timed_out = [r for r in runs if runtime(r["config"], r["instance"]["index"]) > r["budget"]]
        self.assertTrue(timed_out, "the table has runs above the first caps")
        st = check_status(self, self.d.request("GET", "/v1/studies/%d" % self.study["id"]), 200)
        testers = st["scheduler"]["state"]["testers"]
        self.assertEqual(len(testers), 3)
        for t in testers:
            for key in ("active_instances", "queue_bound", "queue_length", "cap", "lcb", "solved"):
                self.assertIn(key, t)
        self.assertEqual(st["incumbent"]["config"], {"solver": "minisat"}, "the fastest solver has most instances")
        self.assertIn("active_instances", st["incumbent"])
        # A timed-out run is stored as such, with the cap as its value.
        tr = check_status(self, self.d.request("GET", "/v1/trials/%d" % timed_out[0]["id"]), 200)
        self.assertTrue(tr.get("timeout"))
        self.assertEqual(tr["value"], timed_out[0]["budget"])

    def test_the_testers_are_rebuilt_after_a_crash(self):
        for _ in range(25):
            self.run_one()
        pending = suggest(self.d, self.study["id"], count=2)
        path = "/v1/studies/%d" % self.study["id"]
        before = check_status(self, self.d.request("GET", path), 200)["scheduler"]["state"]
        self.assertEqual(before["running"], 2)
        self.assertEqual(self.d.kill(signal.SIGKILL), -signal.SIGKILL)
        self.d.start()
        after = check_status(self, self.d.request("GET", path), 200)["scheduler"]["state"]
        self.assertEqual(after, before, "every tester's r, q, queue, cap and LCB replayed from the events")
        for t in pending:  # the runs in flight at the crash still complete
            check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"], {"status": "timeout"}), 200)
        self.assertEqual(check_status(self, self.d.request("GET", path), 200)["scheduler"]["state"]["running"], 0)

if __name__ == "__main__":
    unittest.main()
