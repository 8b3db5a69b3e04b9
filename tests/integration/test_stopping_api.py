"""The stopping type of the multi-fidelity schedulers over HTTP (issue 39,
item 2): {"name": "asha", "options": {"type": "stopping"}} hands each config
out once with budget resource.max; workers report every epoch, as an Optuna
objective that calls trial.report and should_prune does, and a measurement
that reaches a rung's budget may answer {"action": "stop", "reason": ...}.
No config is ever handed out again (nothing is retrained), a trial that
reaches resource.max completes, and every answer is checked against an
independent model of ASHA's rung rule (continue in the top floor(n/eta) of
the n results a rung has, itself included, or while n < eta), across a
daemon restart (the rebuilt rungs answer as the live ones did). Hyperband's
and Successive Halving's stopping type get the same checks of the trials
they hand out and the stops they answer."""

import os
import random
import sys
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bdtest  # noqa: E402
from bdtest import expect  # noqa: E402
from test_multifidelity_api import get_study, loss_of, study_body  # noqa: E402

EPOCHS = {"name": "epochs", "min": 1, "max": 9, "integer": True}


class Workers:
    """Virtual workers in this thread: each holds one trial and trains it
    one epoch per step (a seeded RNG picks whose turn it is), reporting
    every epoch and stopping when told to."""

    def __init__(self, test, daemon, sid, workers=3, seed=5):
        self.t, self.d, self.sid = test, daemon, sid
        self.rng = random.Random(seed)
        self.workers = workers
        self.running = {}  # trial id -> {"trial": ..., "epoch": epochs reported}
        self.handed = []  # every trial handed out
        self.answers = []  # (trial id, epoch, answer) for every measurement
        self.completed, self.stopped = [], []

    def post(self, path, body, status=200):
        return expect(self.d.request("POST", path, body), status, "POST %s" % path)

    def fill(self, limit):
        while len(self.running) < self.workers and len(self.handed) < limit:
            got = self.post("/v1/studies/%d/suggest" % self.sid, {"worker": "w", "count": 1})
            if not got.get("trials"):
                return
            tr = got["trials"][0]
            self.handed.append(tr)
            self.running[tr["id"]] = {"trial": tr, "epoch": 0}

    def step(self):
        """One epoch of one running trial; returns (trial, epoch, answer or None at completion)."""
        tid = self.rng.choice(sorted(self.running))
        r = self.running[tid]
        r["epoch"] += 1
        tr, e = r["trial"], r["epoch"]
        value = loss_of(tr["config"], e)
        if e >= tr["budget"]:
            done = self.post("/v1/trials/%d/complete" % tid, {"value": value})
            self.t.assertEqual(done["state"], "completed")
            self.completed.append(tid)
            del self.running[tid]
            return tr, e, None
        answer = self.post("/v1/trials/%d/measurements" % tid, {"step": e, "value": value})
        self.answers.append((tid, e, answer))
        if answer["action"] == "stop":
            self.stopped.append(tid)
            del self.running[tid]
        return tr, e, answer

    def run(self, limit, on_step=None):
        while True:
            self.fill(limit)
            if not self.running:
                return
            got = self.step()
            if on_step:
                on_step(*got)


class AshaRungModel:
    """ASHA's stopping rule, written again from its definition: rungs at
    budgets 1, 3 (eta 3, resource 1..9; the top at 9 judges nothing); a
    measurement reaching a rung's budget for the first time enters it, and
    the trial goes on when it ranks in the top floor(n/3) of the rung's n
    results (ties to the lower config id) or when n < 3."""

    def __init__(self):
        self.rungs = {1: [], 3: []}
        self.judged = {}  # trial id -> budgets judged

    def expect(self, tr, epoch, value):
        reached = [b for b in (1, 3) if epoch >= b]
        judged = self.judged.setdefault(tr["id"], set())
        if not reached or reached[-1] in judged:
            return "continue"
        judged.add(reached[-1])
        rung = self.rungs[reached[-1]]
        rung.append((value, tr["config_id"]))
        top = len(rung) // 3
        if top == 0:
            return "continue"
        return "continue" if sorted(rung).index((value, tr["config_id"])) < top else "stop"


class AshaStopping(bdtest.DaemonTestCase):

    def check_trials(self, w):
        """Each config handed out once, with resource.max, from scratch."""
        for tr in w.handed:
            self.assertEqual((tr["budget"], tr["resume_from"], tr["config_id"], tr["scheduler"]),
                             (9, None, tr["id"], {"bracket": 0, "rung": 0}), "handed out once: %r" % tr)
        self.assertEqual(len({tuple(sorted(tr["config"].items())) for tr in w.handed}), len(w.handed),
                         "a config was handed out twice (retrained)")

    def test_reports_each_epoch_some_stopped_none_retrained(self):
        d = bdtest.Daemon()
        self.addCleanup(d.cleanup)
        options = {"type": "stopping", "eta": 3, "promotion": "current", "promotion_fraction": "eta"}
        study = expect(d.request("POST", "/v1/studies", study_body({"name": "asha", "options": options}, EPOCHS,
                                                                  seed=7)), 201, "create")
        sid = study["id"]
        self.assertEqual(study["scheduler"]["options"]["type"], "stopping")
        model = AshaRungModel()
        w = Workers(self, d, sid)

        def check(tr, epoch, answer):
            if answer is None:  # completed at resource.max
                return
            want = model.expect(tr, epoch, loss_of(tr["config"], epoch))
            self.assertEqual(answer["action"], want, "trial %d epoch %d: %r" % (tr["id"], epoch, answer))
            if want == "stop":
                self.assertIn("not in the top", answer["reason"])

        w.run(40, check)
        self.check_trials(w)
        self.assertGreater(len(w.stopped), 10, "the rungs stopped trials: %d" % len(w.stopped))
        self.assertGreater(len(w.completed), 3, "trials reached resource.max: %d" % len(w.completed))
        self.assertEqual(len(w.stopped) + len(w.completed), 40)
        tid = w.stopped[0]
        t = expect(d.request("GET", "/v1/trials/%d" % tid), 200, "GET trial")
        self.assertEqual(t["state"], "stopped")
        self.assertIn("not in the top", t.get("reason") or "")
        expect(d.request("POST", "/v1/trials/%d/measurements" % tid, {"step": 5, "value": 0.1}), 409,
               "a stopped trial reports no more")
        for tid in w.completed[:3]:
            t = expect(d.request("GET", "/v1/trials/%d" % tid), 200, "GET trial")
            self.assertEqual((t["state"], t["value"]), ("completed", loss_of(t["config"], 9)))
        state = get_study(d, sid)["scheduler"]["state"]
        self.assertEqual(state["type"], "stopping")
        rungs = state["brackets"][0]["rungs"]
        self.assertEqual([r["stopped"] for r in rungs][:2],
                         [sum(1 for tid, e, a in w.answers if a["action"] == "stop" and e == b) for b in (1, 3)])
        self.assertEqual(rungs[2]["completed"], len(w.completed))

        # A restart rebuilds the rungs from the stored events: the next
        # answers still follow the same rungs.
        d.restart()
        w.run(70, check)
        self.check_trials(w)
        self.assertEqual(len(w.stopped) + len(w.completed), 70)

    def test_defaults_of_a_new_study_apply_to_the_stopping_type(self):
        d = bdtest.Daemon()
        self.addCleanup(d.cleanup)
        study = expect(d.request("POST", "/v1/studies", study_body({"name": "asha", "options": {"type": "stopping"}},
                                                                  EPOCHS, seed=3)), 201, "create")
        opts = study["scheduler"]["options"]
        self.assertEqual((opts["type"], opts["promotion"], opts["promotion_fraction"]),
                         ("stopping", "learned", "reliability"))
        w = Workers(self, d, study["id"], workers=4, seed=9)
        w.run(45)
        self.check_trials(w)
        self.assertTrue(w.stopped and w.completed, "stopped %d, completed %d" % (len(w.stopped), len(w.completed)))


class BracketStopping(bdtest.DaemonTestCase):

    def test_hyperband_and_successive_halving(self):
        d = bdtest.Daemon()
        self.addCleanup(d.cleanup)
        # Hyperband, R = 9: brackets of 9, 5 and 3 configs, each trained towards 9. Successive
        # Halving, n = 9, eta = 3: B = 18, rounds at 1 and 1 + 3 = 4, so each config gets 4.
        for scheduler, budget, configs in (({"name": "hyperband", "options": {"type": "stopping"}}, 9, 17),
                                           ({"name": "successive_halving",
                                             "options": {"type": "stopping", "n": 9, "eta": 3}}, 4, 9)):
            study = expect(d.request("POST", "/v1/studies", study_body(scheduler, EPOCHS, seed=4)), 201, "create")
            w = Workers(self, d, study["id"], workers=3, seed=2)
            w.run(100)
            state = get_study(d, study["id"])["scheduler"]["state"]
            self.assertEqual(state["type"], "stopping")
            for tr in w.handed:
                self.assertEqual((tr["resume_from"], tr["config_id"]), (None, tr["id"]), "%r" % tr)
            self.assertEqual({tr["budget"] for tr in w.handed}, {budget}, "the bracket's last budget")
            self.assertEqual(len(w.handed), configs, "each config of the plan once")
            self.assertTrue(w.stopped, "%s stopped nothing" % scheduler["name"])
            self.assertEqual(len(w.stopped) + len(w.completed), len(w.handed))
            judged = sum(r["judged"] for b in state["brackets"] for r in b["rungs"][:-1])
            stopped = sum(r["stopped"] for b in state["brackets"] for r in b["rungs"])
            self.assertEqual(stopped, len(w.stopped))
            self.assertGreaterEqual(judged, stopped)


class BadType(bdtest.DaemonTestCase):

    def test_bad_type_is_a_400_naming_the_field(self):
        d = bdtest.Daemon()
        self.addCleanup(d.cleanup)
        for scheduler in ({"name": "asha", "options": {"type": "pause"}},
                          {"name": "hyperband", "options": {"type": 3}},
                          {"name": "successive_halving", "options": {"type": "stopping", "doubling": True}}):
            got = d.request("POST", "/v1/studies", study_body(scheduler, EPOCHS))
            self.assertError(got, 400, "invalid_argument", "scheduler.options.type", what=repr(scheduler))


if __name__ == "__main__":
    unittest.main()
