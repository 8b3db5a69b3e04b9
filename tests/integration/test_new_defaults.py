"""New defaults are written into a new study's stored definition (issue 14),
so that a study stored before a default changed keeps its meaning:
- a new hyperband / asha / successive_halving study without "sampler" is
  stored with the sampler new studies get ("tpe"), asha also with its
  hedged brackets, gp_ucb / bo_bos with "acquisition": "logei"; what the
  body names is kept;
- a study stored without those options (as every study before this change)
  is rebuilt on restart with the old meaning (random sampler, one ASHA
  bracket, UCB), and its next suggestions equal those of a twin study
  created with the old options spelled out;
- "if_exists": "load" with the same body finds the stored study (a default
  the body does not give follows the stored one) both ways.
The old definition is made by editing the stored JSON with Python's sqlite3
while the daemon is stopped, as an upgrade from an earlier release finds it."""

import json
import os
import sqlite3
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import expect, unique_name  # noqa: E402

PARAMS = [{"name": "lr", "type": "float", "low": 1e-4, "high": 1, "log": True},
          {"name": "units", "type": "int", "low": 4, "high": 64, "log": True}]
EPOCHS = {"name": "epochs", "min": 1, "max": 27, "integer": True}


def body(scheduler, options=None, name=None, resource=EPOCHS):
    b = {"name": name or unique_name(scheduler), "parameters": PARAMS,
         "objective": {"metric": "loss", "goal": "minimize"},
         "scheduler": {"name": scheduler, "options": options or {}}, "seed": 7}
    if resource:
        b["resource"] = resource
    return b


def loss(config, budget):
    return abs(config["lr"] - 0.01) * 10 + 1.0 / config["units"] + 1.0 / budget


class NewDefaults(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon()
        self.addCleanup(self.d.cleanup)

    def create(self, b):
        return expect(self.d.request("POST", "/v1/studies", b), 201, "create %s" % b["scheduler"])

    def stored_options(self, sid):
        return expect(self.d.request("GET", "/v1/studies/%d" % sid), 200, "GET")["scheduler"]["options"]

    def test_new_studies_store_the_new_defaults(self):
        cases = [("hyperband", {}, {"sampler": "tpe"}),
                 ("successive_halving", {}, {"sampler": "tpe"}),
                 ("asha", {}, {"sampler": "tpe", "brackets": 4}),  # R = 27, eta 3: brackets s = 0..3
                 ("asha", {"sampler": "random", "brackets": 1}, {"sampler": "random", "brackets": 1}),
                 ("gp_ucb", {}, {"acquisition": "logei"}),
                 ("gp_ucb", {"acquisition": "ucb"}, {"acquisition": "ucb"})]
        for sched, given, want in cases:
            sid = self.create(body(sched, given, resource=None if sched == "gp_ucb" else EPOCHS))["id"]
            opts = self.stored_options(sid)
            for k, v in want.items():
                self.assertEqual(opts.get(k), v, "%s %r: stored options %r" % (sched, given, opts))

    def test_load_finds_a_study_created_with_the_same_body(self):
        b = body("hyperband")
        first = self.create(b)
        b2 = dict(b, if_exists="load")
        again = expect(self.d.request("POST", "/v1/studies", b2), 200, "load the same body")
        self.assertEqual(again["id"], first["id"])

    def drive(self, sid, n):
        """n suggest/complete steps; returns the transcript of (config, budget)."""
        out = []
        for _ in range(n):
            ans = expect(self.d.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest")
            if not ans["trials"]:
                break
            t = ans["trials"][0]
            out.append((json.dumps(t["config"], sort_keys=True), t["budget"]))
            expect(self.d.request("POST", "/v1/trials/%d/complete" % t["id"],
                                  {"value": loss(t["config"], t["budget"])}), 200, "complete")
        return out

    def test_a_study_stored_without_the_new_options_keeps_its_old_meaning(self):
        for sched, old in [("asha", {"sampler": "random", "brackets": 1}),
                           ("hyperband", {"sampler": "random"}),
                           ("gp_ucb", {"acquisition": "ucb"})]:
            res = None if sched == "gp_ucb" else EPOCHS
            name = unique_name("old-" + sched)
            aged = self.create(body(sched, {"n_init": 3} if sched == "gp_ucb" else {}, name=name, resource=res))["id"]
            twin = self.create(body(sched, dict(old, **({"n_init": 3} if sched == "gp_ucb" else {})), resource=res))["id"]
            # as an earlier release stored it: without the options new studies get
            self.d.stop()
            db = sqlite3.connect(self.d.db_path)
            (text,) = db.execute("SELECT definition FROM studies WHERE id = ?", (aged,)).fetchone()
            definition = json.loads(text)
            for k in old:
                definition["scheduler"]["options"].pop(k, None)
            db.execute("UPDATE studies SET definition = ? WHERE id = ?", (json.dumps(definition), aged))
            db.commit()
            db.close()
            self.d.start()
            opts = self.stored_options(aged)
            for k in old:
                self.assertNotIn(k, opts, "%s: the stored definition gained %s on restart" % (sched, k))
            a, b = self.drive(aged, 40), self.drive(twin, 40)
            self.assertEqual(a, b, "%s: a study stored without the options behaves unlike %r" % (sched, old))
            # and loading it by its original body finds it
            again = expect(self.d.request("POST", "/v1/studies",
                                          dict(body(sched, {"n_init": 3} if sched == "gp_ucb" else {}, name=name,
                                                    resource=res), if_exists="load")), 200, "load %s" % sched)
            self.assertEqual(again["id"], aged)


if __name__ == "__main__":
    unittest.main()
