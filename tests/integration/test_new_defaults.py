"""A default that changes is written into a new study's stored definition
(issue 14), so that a study stored before the change keeps its meaning:
- a new asha study without "promotion" is stored with "learned",
  without "promotion_fraction" with "reliability", and without "asymptote"
  with "nonnegative"; what the body names is kept;
- a study stored without the option (as every asha study before this
  change) is rebuilt on restart with the old meaning ("current"), and its
  next suggestions equal those of a twin study created with "promotion":
  "current" spelled out; one stored with "predicted" but without
  "promotion_fraction" (as stored before that option) runs "eta": its
  suggestions on noisy curves equal an "eta" twin's and differ from a
  "reliability" twin's;
- a new gp_ucb study is stored with "acquisition": "logei" (unless it names
  UCB's options); one stored without it runs UCB, as its twin with "ucb";
- "if_exists": "load" with the same body finds the stored study (an option
  the body does not give follows the stored one), both ways.
The old definition is made by editing the stored JSON (Daemon.sql: sqlite3 or psql)
while the daemon is stopped, as an upgrade from an earlier release finds it."""

import json
import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import expect, unique_name  # noqa: E402

PARAMS = [{"name": "lr", "type": "float", "low": 1e-4, "high": 1, "log": True},
          {"name": "units", "type": "int", "low": 4, "high": 64, "log": True}]
EPOCHS = {"name": "epochs", "min": 1, "max": 27, "integer": True}


def body(options=None, name=None):
    return {"name": name or unique_name("asha"), "parameters": PARAMS,
            "objective": {"metric": "loss", "goal": "minimize"}, "resource": EPOCHS,
            "scheduler": {"name": "asha", "options": options or {}}, "seed": 7}


def loss(config, epoch):
    """Learning curves of two shapes: still falling at epoch 3 (a small
    learning rate), or flat from the start."""
    slow = config["lr"] < 0.01
    return (0.2 + 0.3 * epoch ** -0.5 if slow else 0.36) + abs(config["units"] - 20) / 200


class NewDefaults(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon()
        self.addCleanup(self.d.cleanup)

    def create(self, b):
        return expect(self.d.request("POST", "/v1/studies", b), 201, "create")

    def stored_options(self, sid):
        return expect(self.d.request("GET", "/v1/studies/%d" % sid), 200, "GET")["scheduler"]["options"]

    def test_a_new_study_stores_the_new_default(self):
        sid = self.create(body())["id"]
        self.assertEqual(self.stored_options(sid).get("promotion"), "learned")
        self.assertEqual(self.stored_options(sid).get("promotion_fraction"), "reliability")
        self.assertEqual(self.stored_options(sid).get("asymptote"), "nonnegative")
        sid = self.create(body({"promotion": "current", "promotion_fraction": "eta", "asymptote": "free"}))["id"]
        self.assertEqual(self.stored_options(sid).get("promotion"), "current")
        self.assertEqual(self.stored_options(sid).get("promotion_fraction"), "eta")
        self.assertEqual(self.stored_options(sid).get("asymptote"), "free")
        for sched in ("hyperband", "random"):  # no default of theirs changed: nothing added
            b = dict(body(), name=unique_name(sched), scheduler={"name": sched, "options": {}})
            if sched != "hyperband":
                b.pop("resource")
            self.assertEqual(self.stored_options(self.create(b)["id"]), {}, sched)

    def gp_body(self, options):
        b = dict(body(), name=unique_name("gp"), scheduler={"name": "gp_ucb", "options": options})
        b.pop("resource")
        return b

    def test_gp_ucb_new_studies_get_log_ei_and_stored_ones_keep_ucb(self):
        """Issue 14: a new gp_ucb study is stored with "acquisition": "logei" unless its body names the
        acquisition or UCB's own options (multiplier, delta); one stored without it (every gp_ucb study
        before) runs UCB: its suggestions equal those of a twin with "ucb" spelled out."""
        new = self.create(self.gp_body({}))["id"]
        self.assertEqual(self.stored_options(new), {"acquisition": "logei"})
        for named in ({"acquisition": "ucb"}, {"multiplier": "code"}, {"delta": 0.05}):
            self.assertEqual(self.stored_options(self.create(self.gp_body(named))["id"]), named, named)
        aged = self.create(self.gp_body({}))["id"]
        twin = self.create(self.gp_body({"acquisition": "ucb"}))["id"]
        self.d.stop()
        ((text,),) = self.d.sql("SELECT definition FROM studies WHERE id = ?", (aged,))
        definition = json.loads(text)
        definition["scheduler"]["options"] = {}  # as an earlier release stored it
        self.d.sql("UPDATE studies SET definition = ? WHERE id = ?", (json.dumps(definition), aged))
        self.d.start()
        def final(config, epoch):
            return loss(config, 27)
        runs = {sid: self.drive(sid, 12, final) for sid in (aged, twin, new)}
        self.assertEqual(runs[aged], runs[twin], "a gp_ucb study stored without the option behaves unlike UCB")
        self.assertNotEqual(runs[new], runs[twin], "log EI and UCB made the same 12 suggestions")

    def test_load_finds_a_study_created_with_the_same_body(self):
        b = body()
        first = self.create(b)
        again = expect(self.d.request("POST", "/v1/studies", dict(b, if_exists="load")), 200, "load")
        self.assertEqual(again["id"], first["id"])

    def drive(self, sid, n, curve=loss):
        """n suggest/complete steps, one measurement per epoch; returns (config, budget) of each trial."""
        out, reached = [], {}
        for _ in range(n):
            ans = expect(self.d.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest")
            if not ans["trials"]:
                break
            t = ans["trials"][0]
            out.append((json.dumps(t["config"], sort_keys=True), t["budget"]))
            start = reached.get(t.get("resume_from"), 0)
            for e in range(start + 1, int(t["budget"]) + 1):
                expect(self.d.request("POST", "/v1/trials/%d/measurements" % t["id"],
                                      {"step": e, "value": curve(t["config"], e)}), 200, "measure")
            reached[t["id"]] = int(t["budget"])
            expect(self.d.request("POST", "/v1/trials/%d/complete" % t["id"],
                                  {"value": curve(t["config"], t["budget"])}), 200, "complete")
        return out

    def test_a_study_stored_without_the_option_keeps_its_old_meaning(self):
        name = unique_name("old")
        aged = self.create(body(name=name))["id"]
        twin = self.create(body({"promotion": "current", "promotion_fraction": "eta"}))["id"]
        new = self.create(body({"promotion": "predicted"}))["id"]
        # as an earlier release stored it: without the options new studies get
        self.d.stop()
        ((text,),) = self.d.sql("SELECT definition FROM studies WHERE id = ?", (aged,))
        definition = json.loads(text)
        del definition["scheduler"]["options"]["promotion"]
        del definition["scheduler"]["options"]["promotion_fraction"]
        del definition["scheduler"]["options"]["asymptote"]
        self.d.sql("UPDATE studies SET definition = ? WHERE id = ?", (json.dumps(definition), aged))
        self.d.start()
        self.assertNotIn("promotion", self.stored_options(aged), "the stored definition gained the option")
        rule = {sid: expect(self.d.request("GET", "/v1/studies/%d" % sid), 200, "GET")["scheduler"]["state"]
                ["promotion"] for sid in (aged, twin, new)}
        self.assertEqual((rule[aged], rule[twin], rule[new]), ("current", "current", "predicted"))
        state = expect(self.d.request("GET", "/v1/studies/%d" % aged), 200, "GET")["scheduler"]["state"]
        self.assertEqual(state["asymptote"], "free", "a study stored before the option runs the free fit")
        self.assertEqual(self.drive(aged, 60), self.drive(twin, 60),
                         "a study stored without the option behaves unlike \"current\"")
        again = expect(self.d.request("POST", "/v1/studies", dict(body(name=name), if_exists="load")), 200,
                       "load the old study by its original body")
        self.assertEqual(again["id"], aged)

    def test_a_study_stored_without_promotion_fraction_keeps_eta(self):
        def noisy(config, epoch):  # the curves above with a zigzag of +-0.03: rankings partly noise
            return loss(config, epoch) + (0.03 if epoch % 2 else -0.03)
        name = unique_name("old")
        aged = self.create(body({"promotion": "predicted"}, name=name))["id"]  # the default when it was stored
        eta = self.create(body({"promotion": "predicted", "promotion_fraction": "eta"}))["id"]
        rel = self.create(body({"promotion": "predicted", "promotion_fraction": "reliability"}))["id"]
        self.d.stop()
        ((text,),) = self.d.sql("SELECT definition FROM studies WHERE id = ?", (aged,))
        definition = json.loads(text)
        del definition["scheduler"]["options"]["promotion_fraction"]  # as stored before the option
        self.d.sql("UPDATE studies SET definition = ? WHERE id = ?", (json.dumps(definition), aged))
        self.d.start()
        state = expect(self.d.request("GET", "/v1/studies/%d" % aged), 200, "GET")["scheduler"]["state"]
        self.assertEqual((state["promotion"], state["promotion_fraction"]), ("predicted", "eta"))
        runs = {sid: self.drive(sid, 80, noisy) for sid in (aged, eta, rel)}
        self.assertEqual(runs[aged], runs[eta], "a study stored without the option behaves unlike \"eta\"")
        self.assertNotEqual(runs[rel], runs[eta], "the test's curves do not tell the two rules apart")

    def test_rising_bandits_new_studies_get_the_tail_bound_and_retries(self):
        """Issue 15: new rising_bandits studies are stored with upper_bound "tail", max_retries 2,
        allocation "thompson" with draw_horizon "share" and, unless the study names an inner optimizer
        or a GP option, inner "tpe"; one stored without them (every study before) keeps the paper's bound, no retries,
        GP-UCB (or its named inner) and the rounds."""
        cash = {"name": unique_name("rb"),
                "parameters": [{"name": "algo", "type": "categorical", "choices": ["svm", "rf"]},
                               {"name": "C", "type": "float", "low": 0.1, "high": 10, "when": {"algo": ["svm"]}}],
                "objective": {"metric": "acc", "goal": "maximize"}, "limits": {"trials": 20},
                "scheduler": {"name": "rising_bandits", "options": {"inner": "random"}}, "seed": 3}
        sid = self.create(cash)["id"]
        self.assertEqual(self.stored_options(sid), {"inner": "random", "upper_bound": "tail", "max_retries": 2,
                                                    "allocation": "thompson", "draw_horizon": "share"})
        kept = self.create(dict(cash, name=unique_name("rb"),
                                scheduler={"name": "rising_bandits", "options": {"upper_bound": "paper"}}))["id"]
        self.assertEqual(self.stored_options(kept), {"upper_bound": "paper", "max_retries": 2, "inner": "tpe",
                                                     "allocation": "thompson", "draw_horizon": "share"})
        gp = self.create(dict(cash, name=unique_name("rb"),
                              scheduler={"name": "rising_bandits", "options": {"n_init": 2}}))["id"]
        self.assertEqual(self.stored_options(gp), {"n_init": 2, "upper_bound": "tail", "max_retries": 2,
                                                   "allocation": "thompson", "draw_horizon": "share"})
        state = expect(self.d.request("GET", "/v1/studies/%d" % kept), 200, "GET")["scheduler"]["state"]
        self.assertEqual((state["inner"], state["allocation"], state["draw_horizon"], state["phase"]),
                         ("tpe", "thompson", "share", "thompson"))
        self.d.stop()
        ((text,),) = self.d.sql("SELECT definition FROM studies WHERE id = ?", (sid,))
        definition = json.loads(text)
        definition["scheduler"]["options"] = {"inner": "random"}
        self.d.sql("UPDATE studies SET definition = ? WHERE id = ?", (json.dumps(definition), sid))
        self.d.start()
        state = expect(self.d.request("GET", "/v1/studies/%d" % sid), 200, "GET")["scheduler"]["state"]
        self.assertEqual((state["upper_bound"], state["max_retries"], state["inner"], state["allocation"]),
                         ("paper", 0, "random", "rounds"))


if __name__ == "__main__":
    unittest.main()
