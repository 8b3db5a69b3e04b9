"""auto (issue 40): a study that names no scheduler, or {"name": "auto"},
gets one chosen from its shape, stored with "chosen_by": "auto" and "why"
(server/auto_scheduler.h), and shown by GET:
- a resource: asha with "fidelity": "winners" and the random sampler, plus
  asha's new-study defaults; it runs (workers report every epoch), its
  state shows the measured levels, and after a restart the study is the
  same scheduler and answers the next suggestions as a twin study created
  with the stored definition spelled out, which never restarted;
- no resource: tpe; a define-by-run study (no parameters): tpe;
- "if_exists": "load" with the same body (no scheduler) finds the study;
- the stored definition, posted again as a new study, is accepted as is."""

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


def curve(config, epoch):
    """Slow learners (small lr) start worse and end better."""
    slow = config["lr"] < 0.01
    return (0.15 + 0.5 * epoch ** -0.7 if slow else 0.3 + 0.05 / epoch) + abs(config["units"] - 20) / 400


class Auto(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon()
        self.addCleanup(self.d.cleanup)

    def create(self, b, code=201):
        return expect(self.d.request("POST", "/v1/studies", b), code, "create")

    def get(self, sid):
        return expect(self.d.request("GET", "/v1/studies/%d" % sid), 200, "GET")

    def run_trials(self, sid, n):
        """n suggest/complete steps, one measurement per epoch; returns (config, budget) of each trial."""
        out = []
        for _ in range(n):
            ans = expect(self.d.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest")
            t = ans["trials"][0]
            out.append((t["config"], t["budget"]))
            for e in range(1, int(t["budget"])):
                expect(self.d.request("POST", "/v1/trials/%d/measurements" % t["id"],
                                      {"step": e, "value": curve(t["config"], e)}), 200, "measure")
            expect(self.d.request("POST", "/v1/trials/%d/complete" % t["id"],
                                  {"value": curve(t["config"], t["budget"])}), 200, "complete")
        return out

    def test_a_resource_gets_asha_measuring_its_fidelities(self):
        body = {"name": unique_name("auto"), "parameters": PARAMS, "resource": EPOCHS, "seed": 3,
                "objective": {"metric": "loss", "goal": "minimize"}}
        sid = self.create(body)["id"]
        s = self.get(sid)["scheduler"]
        self.assertEqual(s["name"], "asha")
        self.assertEqual(s["chosen_by"], "auto")
        self.assertIn("resource (epochs", s["why"])
        opts = s["options"]
        for k, v in {"fidelity": "winners", "sampler": "random", "type": "promotion", "promotion": "learned",
                     "promotion_fraction": "reliability", "asymptote": "nonnegative"}.items():
            self.assertEqual(opts.get(k), v, k)
        # the stored definition, spelled out, is a twin that never restarts
        twin_body = dict(body, name=unique_name("twin"),
                         scheduler={"name": "asha", "options": opts, "chosen_by": "auto", "why": s["why"]})
        twin = self.create(twin_body)["id"]
        self.assertEqual(self.get(twin)["scheduler"]["options"], opts)
        a = self.run_trials(sid, 60)
        b = self.run_trials(twin, 60)
        self.assertEqual(a, b, "the auto study and its spelled-out twin ran differently")
        levels = self.get(sid)["scheduler"]["state"]["fidelity_measured"]["levels"]
        self.assertEqual([lv["budget"] for lv in levels], [1, 3, 9])
        self.assertTrue(any(lv["pairs"] > 0 for lv in levels), levels)
        # the same body without a scheduler finds it with if_exists
        found = self.create(dict(body, if_exists="load"), code=200)
        self.assertEqual(found["id"], sid)
        self.d.restart()
        s2 = self.get(sid)["scheduler"]
        self.assertEqual((s2["name"], s2["chosen_by"], s2["why"], s2["options"]),
                         (s["name"], s["chosen_by"], s["why"], opts))
        self.assertEqual(self.run_trials(sid, 15), self.run_trials(twin, 15),
                         "after a restart the auto study and its twin differ")

    def test_no_resource_gets_tpe(self):
        for body, why in (({"parameters": PARAMS}, "no resource"),
                          ({"scheduler": {"name": "auto"}, "parameters": PARAMS}, "no resource"),
                          ({}, "no declared parameters")):
            b = dict(body, name=unique_name("auto"), objective={"metric": "loss", "goal": "minimize"})
            sid = self.create(b)["id"]
            s = self.get(sid)["scheduler"]
            self.assertEqual((s["name"], s["chosen_by"]), ("tpe", "auto"), b)
            self.assertIn(why, s["why"])
            ans = expect(self.d.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest")
            self.assertEqual(len(ans["trials"]), 1)


if __name__ == "__main__":
    unittest.main()
