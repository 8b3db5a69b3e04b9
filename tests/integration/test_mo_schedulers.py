"""nsga2 and tpe with several objectives and constraints (issue 41) behind
the real daemon: a study created over HTTP gets its trials from the
scheduler (nsga2's "scheduler" field names the generation; tpe proposes from its split
once n_startup_trials completed), the front never holds an infeasible
trial, the schedulers that cannot take several objectives are refused, and
after a restart (the scheduler rebuilt from the stored events) the next
suggestions are those of a twin study that never restarted."""

import math
import unittest

import bdtest
from bdtest import check_status, suggest

PARAMETERS = [{"name": "x", "type": "float", "low": 0.0, "high": 1.0},
              {"name": "y", "type": "float", "low": 0.0, "high": 1.0},
              {"name": "k", "type": "categorical", "choices": ["a", "b", "c"]}]
OBJECTIVES = [{"metric": "f1", "goal": "minimize"}, {"metric": "f2", "goal": "minimize"},
              {"metric": "score", "goal": "maximize"}]
CONSTRAINTS = [{"metric": "budget", "max": 1.2}]


def values_of(config):
    """ZDT1 in (x, y) plus a maximized score from k, and a constraint x + y <= 1.2."""
    x, y = config["x"], config["y"]
    g = 1 + 9 * y
    return {"f1": x, "f2": g * (1 - math.sqrt(x / g)), "score": {"a": 1, "b": 2, "c": 3}[config["k"]],
            "budget": x + y}


class MultiObjectiveSchedulers(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon()
        self.addCleanup(self.d.cleanup)

    def create(self, scheduler):
        body = {"name": bdtest.unique_name("mo"), "parameters": PARAMETERS, "objectives": OBJECTIVES,
                "constraints": CONSTRAINTS, "scheduler": scheduler, "seed": 11}
        return check_status(self, self.d.request("POST", "/v1/studies", body), 201)["id"]

    def run_trials(self, sid, n, workers=3):
        """n trials, `workers` at a time, completed oldest first; returns them."""
        done = []
        while len(done) < n:
            batch = suggest(self.d, sid, count=min(workers, n - len(done)))
            for t in batch:
                check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"],
                                                  {"values": values_of(t["config"])}), 200)
            done += batch
        return done

    def next_configs(self, sid, k):
        """The next k configs, each completed before the next is asked for."""
        out = []
        for t in self.run_trials(sid, k, workers=1):
            out.append(t["config"])
        return out

    def check_scheduler(self, scheduler, n):
        a = self.create(scheduler)
        trials = self.run_trials(a, n)
        study = check_status(self, self.d.request("GET", "/v1/studies/%d" % a), 200)
        front = study["pareto_front"]
        self.assertTrue(front, "%s: an empty front after %d trials" % (scheduler["name"], n))
        for p in front:
            self.assertLessEqual(p["values"]["budget"], 1.2, "an infeasible trial on the front: %r" % p)
        self.assertGreater(study["hypervolume"], 0)
        self.d.restart()
        b = self.create(scheduler)  # created after the restart: never rebuilt from storage
        self.assertEqual([t["config"] for t in self.run_trials(b, n)], [t["config"] for t in trials],
                         "%s: the same seed and results gave other trials" % scheduler["name"])
        self.assertEqual(self.next_configs(a, 8), self.next_configs(b, 8),
                         "%s: after a restart the next suggestions differ from the twin's" % scheduler["name"])
        return trials

    def test_nsga2_generations_and_restart(self):
        trials = self.check_scheduler({"name": "nsga2", "options": {"population_size": 10}}, 45)
        generations = [(t.get("scheduler") or {}).get("generation") for t in trials]
        self.assertEqual(generations[0], 0)
        self.assertGreaterEqual(max(g for g in generations if g is not None), 3,
                                "45 trials of population 10 reach generation 3: %r" % generations)

    def test_tpe_several_objectives_and_restart(self):
        self.check_scheduler({"name": "tpe", "options": {"n_startup_trials": 8}}, 30)

    def test_schedulers_without_several_objectives_are_refused(self):
        body = {"name": bdtest.unique_name("mo"), "parameters": PARAMETERS, "objectives": OBJECTIVES,
                "scheduler": {"name": "bo_bos"}}
        err = check_status(self, self.d.request("POST", "/v1/studies", body), 400)["error"]
        self.assertEqual(err["field"], "objectives")
        self.assertIn("nsga2", err["message"])


if __name__ == "__main__":
    unittest.main()
