"""What a study may declare beyond its space: limits the engine enforces for
every scheduler, problem instances carried by trials, objective bounds, and
the bounds on a study's width and on one suggest's answer."""

import unittest

import bdtest
from bdtest import check_status

PARAMS = [{"name": "x", "type": "float", "low": 0.0, "high": 1.0}]


class StudyLimits(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def suggest(self, sid, count=1):
        return check_status(self, self.d.request("POST", "/v1/studies/%d/suggest" % sid,
                                                 {"worker": "w", "count": count}), 200)

    def complete(self, tid, **body):
        return check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % tid, body), 200)

    def get(self, sid):
        return check_status(self, self.d.request("GET", "/v1/studies/%d" % sid), 200)

    def test_trials_limit_answers_done_for_any_scheduler(self):
        for sched in ({"name": "random"}, {"name": "hyperband", "options": {"eta": 3}}):
            s = bdtest.create_study(self.d, scheduler=sched, limits={"trials": 5},
                                    resource={"name": "epochs", "min": 1, "max": 9, "integer": True})
            self.assertEqual(s["limits"], {"trials": 5})
            got = self.suggest(s["id"], count=8)
            self.assertEqual(len(got["trials"]), 5, sched)
            again = self.suggest(s["id"])
            self.assertEqual((again["trials"], again.get("done")), ([], True), sched)
            study = self.get(s["id"])
            self.assertEqual((study["state"], study["done"], study["used"]["trials"]), ("done", True, 5))
            for t in got["trials"]:  # running trials still report after the limit
                self.complete(t["id"], value=0.5)

    def test_resource_limit_counts_budget_handed_out(self):
        s = bdtest.create_study(self.d, limits={"resource": 25},
                                resource={"name": "epochs", "min": 1, "max": 10, "integer": True})
        got = self.suggest(s["id"], count=10)
        # random search hands out the full budget (10): 10 + 10 + 10 >= 25
        self.assertEqual(len(got["trials"]), 3)
        self.assertEqual(self.get(s["id"])["used"]["resource"], 30)
        self.assertTrue(self.suggest(s["id"]).get("done"))

    def test_seconds_limit_counts_reported_seconds(self):
        s = bdtest.create_study(self.d, limits={"seconds": 10})
        t1 = self.suggest(s["id"])["trials"][0]
        self.complete(t1["id"], value=0.3, elapsed_seconds=6)
        t2 = self.suggest(s["id"])["trials"][0]
        self.complete(t2["id"], value=0.2, elapsed_seconds=5)
        study = self.get(s["id"])
        self.assertEqual(study["used"]["seconds"], 11)
        self.assertEqual(study["state"], "done")
        self.assertTrue(self.suggest(s["id"]).get("done"))

    def test_limits_survive_a_restart(self):
        d = bdtest.Daemon()
        s = bdtest.create_study(d, limits={"trials": 3, "seconds": 100})
        for _ in range(2):
            t = check_status(self, d.request("POST", "/v1/studies/%d/suggest" % s["id"], {}), 200)["trials"][0]
            check_status(self, d.request("POST", "/v1/trials/%d/complete" % t["id"],
                                         {"value": 1, "elapsed_seconds": 7}), 200)
        before = check_status(self, d.request("GET", "/v1/studies/%d" % s["id"]), 200)
        d.restart()
        after = check_status(self, d.request("GET", "/v1/studies/%d" % s["id"]), 200)
        self.assertEqual(before["used"], after["used"])
        self.assertEqual(after["used"], {"trials": 2, "resource": 2, "seconds": 14})
        got = check_status(self, d.request("POST", "/v1/studies/%d/suggest" % s["id"], {"count": 5}), 200)
        self.assertEqual(len(got["trials"]), 1)
        d.cleanup()

    def test_instances_are_carried_by_trials_and_filterable(self):
        names = ["cnf/a.cnf", "cnf/b.cnf", "cnf/c.cnf"]
        s = bdtest.create_study(self.d, instances=names,
                                resource={"name": "seconds", "min": 1, "max": 60},
                                scheduler={"name": "test_sleep", "options": {"sleep_ms": 0, "instances": True}})
        self.assertEqual(s["instances"], names)
        got = self.suggest(s["id"], count=6)["trials"]
        self.assertEqual([t["instance"] for t in got],
                         [{"index": i % 3, "name": names[i % 3]} for i in range(6)])
        # a solver run that hit its cap completes as a timeout: its value is the cap (the budget)
        done = self.complete(got[0]["id"], status="timeout")
        self.assertEqual((done["timeout"], done["value"], done["instance"]["index"]), (True, 60, 0))
        one = check_status(self, self.d.request("GET", "/v1/trials/%d" % got[1]["id"]), 200)
        self.assertEqual(one["instance"], {"index": 1, "name": names[1]})
        listed = check_status(self, self.d.request("GET", "/v1/studies/%d/trials?instance=2" % s["id"]), 200)
        self.assertEqual([t["id"] for t in listed["trials"]], [got[2]["id"], got[5]["id"]])
        got = self.d.request("GET", "/v1/studies/%d/trials?instance=3" % s["id"])
        self.assertError(got, 400, "invalid_argument", "instance")
        got = self.d.request("GET", "/v1/studies/%d/trials?instance=-1" % s["id"])
        self.assertError(got, 400, "invalid_argument", "instance")

    def test_bounds_are_kept(self):
        s = bdtest.create_study(self.d, objective={"metric": "acc", "goal": "maximize", "bounds": [0, 1]})
        self.assertEqual(s["objective"], {"metric": "acc", "goal": "maximize", "bounds": [0, 1]})

    def test_wide_space_answers_are_cut_not_huge(self):
        """Regression: 10,000 parameters and count 100 answered 27 MB and
        stalled the daemon. Now a study has at most 1,000 parameters and one
        answer at most 20,000 parameter values."""
        wide = [{"name": "p%d" % i, "type": "float", "low": 0, "high": 1} for i in range(1001)]
        got = self.d.request("POST", "/v1/studies", bdtest.study_body(parameters=wide))
        self.assertError(got, 400, "invalid_argument", "parameters")
        s = bdtest.create_study(self.d, parameters=wide[:1000])
        got = self.suggest(s["id"], count=100)
        self.assertEqual(len(got["trials"]), 20)
        self.assertEqual(len(got["trials"][0]["config"]), 1000)


if __name__ == "__main__":
    unittest.main()
