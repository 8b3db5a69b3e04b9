"""caps_race through the daemon: a race of solvers on instances answered with
runtimes and timeouts until the study is done, the racers and the incumbent
in GET /v1/studies/{id}, and the same state after a SIGKILL and restart."""

import os
import signal
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study, suggest  # noqa: E402

INSTANCES = ["uf175-%02d.cnf" % i for i in range(10)]
SPEED = {"glucose": 2.5, "minisat": 0.8, "slow": 30.0}


def runtime(config, instance_index):
    """A fixed runtime table: solver speed times an instance factor."""
    return SPEED[config["solver"]] * (1 + instance_index % 4)


class CapsRaceThroughTheDaemon(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon(lease_seconds=300)
        self.addCleanup(self.d.cleanup)
        self.study = create_study(
            self.d,
            parameters=[{"name": "solver", "type": "categorical", "choices": list(SPEED)}],
            objective={"metric": "runtime", "goal": "minimize"},
            resource={"name": "seconds", "min": 0.5, "max": 64},
            instances=INSTANCES,
            scheduler={"name": "caps_race", "options": {"first_cap": 4}})

    def run_one(self):
        ts = suggest(self.d, self.study["id"])
        if not ts:
            return None
        (t,) = ts
        self.assertEqual(t["instance"]["name"], INSTANCES[t["instance"]["index"]])
        self.assertTrue(0.5 <= t["budget"] <= 64)
        rt = runtime(t["config"], t["instance"]["index"])
        body = {"status": "timeout"} if rt > t["budget"] else {"value": rt}
        check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"], body), 200)
        return t

    def test_the_race_ends_with_the_fastest_solver(self):
        runs = []
        for _ in range(400):
            t = self.run_one()
            if t is None:
                break
            runs.append(t)
        st = check_status(self, self.d.request("GET", "/v1/studies/%d" % self.study["id"]), 200)
        self.assertTrue(st["done"], "the race ends after %d runs" % len(runs))
        state = st["scheduler"]["state"]
        self.assertEqual(state["cap"], 64, "the caps doubled from 4 to resource.max")
        self.assertEqual(state["racers_total"], 3)
        for r in state["racers"]:
            for key in ("config", "alive", "instances", "compared", "mean", "gap", "width", "runs", "seconds"):
                self.assertIn(key, r)
        self.assertEqual(st["incumbent"]["config"], {"solver": "minisat"})
        self.assertAlmostEqual(st["incumbent"]["value"], sum(runtime({"solver": "minisat"}, j)
                                                             for j in range(10)) / 10)
        self.assertEqual(st["incumbent"]["instances"], 10)
        timed_out_at, solved = {}, set()
        for r in runs:  # nothing re-run at a cap at or below one it timed out at, nothing solved twice
            key = (r["config"]["solver"], r["instance"]["index"])
            self.assertNotIn(key, solved)
            self.assertGreater(r["budget"], timed_out_at.get(key, 0))
            if runtime(r["config"], r["instance"]["index"]) <= r["budget"]:
                solved.add(key)
            else:
                timed_out_at[key] = r["budget"]

    def test_the_race_is_rebuilt_after_a_crash(self):
        for _ in range(20):
            self.run_one()
        pending = suggest(self.d, self.study["id"], count=2)
        path = "/v1/studies/%d" % self.study["id"]
        before = check_status(self, self.d.request("GET", path), 200)["scheduler"]["state"]
        self.assertEqual(before["running"], len(pending))
        self.assertEqual(self.d.kill(signal.SIGKILL), -signal.SIGKILL)
        self.d.start()
        after = check_status(self, self.d.request("GET", path), 200)["scheduler"]["state"]
        self.assertEqual(after, before, "every racer's cells, sums and the leader replayed from the events")
        for t in pending:  # the runs in flight at the crash still complete
            check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"], {"status": "timeout"}), 200)
        self.assertEqual(check_status(self, self.d.request("GET", path), 200)["scheduler"]["state"]["running"], 0)


if __name__ == "__main__":
    unittest.main()
