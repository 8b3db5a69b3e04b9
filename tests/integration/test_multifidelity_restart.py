"""Multi-fidelity schedulers across restarts and vanishing workers, through
the HTTP API (issue 3):
- replay: a Hyperband study driven partway, then the daemon restarted
  (SIGTERM, or SIGKILL in the middle of a bracket); GET /v1/studies/{id}
  scheduler.state is identical before and after, acknowledged completions
  survive, and every later answer equals that of a twin study (same seed and
  definition, driven identically on a second daemon that is never restarted);
  the run still reproduces the R = 81 table;
- a worker that disappears mid-rung: with short leases its trial expires and
  the same work (config_id, budget, resume_from) goes to another worker; after
  max_retries disappearances the config counts as the worst loss and the rung
  completes without it.
The fake workers are test_multifidelity_api.Driver."""

import os
import signal
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
import test_multifidelity_api as mf  # noqa: E402
from bdtest import unique_name  # noqa: E402

HB81 = ({"name": "hyperband", "options": {"eta": 3}}, {"name": "epochs", "min": 1, "max": 81, "integer": True})
SH4 = {"name": "epochs", "min": 1, "max": 4, "integer": True}  # n = 4, eta 2: rounds at R = 1, 3


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "entry %d: %r != %r" % (i, x, y)
    return "lengths %d != %d" % (len(a), len(b))


class Replay(bdtest.DaemonTestCase):
    """Restart vs. a never-restarted twin."""

    def restart_against_twin(self, how, completions):
        plan = mf.hyperband_plan(81, 3)
        live, twin = bdtest.Daemon(), bdtest.Daemon()
        self.addCleanup(live.cleanup)
        self.addCleanup(twin.cleanup)
        name = unique_name("replay")
        studies = [mf.create_study(dm, *HB81, seed=2024, name=name) for dm in (live, twin)]
        a = mf.driver(self, live, studies[0]["id"], workers=5, seed=99)
        b = mf.driver(self, twin, studies[1]["id"], workers=5, seed=99)
        a.run(completions)
        b.run(completions)
        self.assertEqual(a.transcript, b.transcript, "twins diverged before any restart: %s"
                         % first_difference(a.transcript, b.transcript))
        self.assertEqual(a.order, b.order, "twin daemons gave different trial ids")
        partial = sorted((s, i) for (s, i), ts in a.by_rung(completed_only=False).items()
                         if 0 < sum("loss" in t for t in ts) < plan[s][i][0])
        self.assertTrue(partial and a.running, "precondition: stop in the middle of a rung")
        self.assertTrue(any(i > 0 for _, i in partial) or len({s for s, _ in partial}) > 1,
                        "precondition: promotions or several brackets under way: %r" % partial)

        before = mf.get_study(live, studies[0]["id"])
        if how == "sigkill":
            self.assertEqual(live.kill(signal.SIGKILL), -signal.SIGKILL)
            live.start()
        else:
            live.restart()
        a.reconnect()
        after = mf.get_study(live, studies[0]["id"])
        self.assertEqual(after["scheduler"]["state"], before["scheduler"]["state"],
                         "%s: scheduler.state changed across the restart" % how)
        for key in ("trials", "incumbent", "done"):
            self.assertEqual(after[key], before[key], "%s: study %s changed across the restart" % (how, key))
        self.assertEqual(after["scheduler"]["state"], mf.get_study(twin, studies[1]["id"])["scheduler"]["state"],
                         "%s: restarted study's state differs from its twin's" % how)

        stored = {t["id"]: t for t in bdtest.list_all_trials(live, studies[0]["id"])}
        self.assertEqual(sorted(stored), sorted(a.order), "%s: stored trials vs acknowledged ones" % how)
        lost = ["trial %d: acknowledged completion %r, stored %s %r" % (tid, a.trials[tid]["value"],
                                                                        stored[tid]["state"], stored[tid].get("value"))
                for tid in a.completed
                if stored[tid]["state"] != "completed" or stored[tid].get("value") != a.trials[tid]["value"]]
        self.assertEqual(lost, [], "%s: acknowledged completions lost" % how)
        for tid in a.running:
            self.assertEqual(stored[tid]["state"], "running", "%s: trial %d was running" % (how, tid))

        mark = len(a.transcript)
        a.run()
        b.run()
        self.assertEqual(a.transcript[mark:mark + 10], b.transcript[mark:mark + 10],
                         "%s: the first answers after the restart differ from the twin's" % how)
        self.assertEqual(a.transcript, b.transcript, "%s: restarted study diverged from its twin: %s"
                         % (how, first_difference(a.transcript, b.transcript)))
        final = mf.get_study(live, studies[0]["id"])
        mf.check_hyperband_run(self, a, plan, how, final["scheduler"]["state"])
        self.assertIs(final["done"], True)
        self.assertEqual(final["scheduler"]["state"], mf.get_study(twin, studies[1]["id"])["scheduler"]["state"])

    def test_graceful_restart_mid_bracket(self):
        self.restart_against_twin("graceful", completions=90)

    def test_sigkill_mid_bracket(self):
        self.restart_against_twin("sigkill", completions=120)


class VanishingWorker(bdtest.DaemonTestCase):
    """Short leases (1 s): work whose worker went silent is offered again."""

    def setUp(self):
        self.d = bdtest.Daemon()
        self.addCleanup(self.d.cleanup)

    def sh_study(self, max_retries=2):
        return mf.create_study(self.d, {"name": "successive_halving", "options": {"n": 4, "max_retries": max_retries}},
                               SH4, seed=31, lease_seconds=1.0)

    def take(self, drv, worker):
        t = drv.ask(worker)
        self.assertIsInstance(t, dict, "%s expected a trial" % worker)
        drv.running.append(t["id"])
        return t

    def restart_keeps_state(self, drv, sid):
        """A graceful restart rebuilds the study from its events (EXPIRED ones included) unchanged."""
        before = mf.get_study(self.d, sid)
        self.d.restart()
        drv.reconnect()
        after = mf.get_study(self.d, sid)
        for key in ("scheduler", "trials", "done"):
            self.assertEqual(after[key], before[key], "study %s changed across a restart" % key)

    def same_work(self, again, lost, worker):
        self.assertNotEqual(again["id"], lost["id"])
        self.assertEqual((again["config_id"], again["config"], again["budget"], again["resume_from"],
                          again["scheduler"], again["worker"]),
                         (lost["config_id"], lost["config"], lost["budget"], lost["resume_from"],
                          lost["scheduler"], worker),
                         "the expired trial's work offered again: %r, lost %r" % (again, lost))

    def test_expired_promotion_is_offered_again(self):
        sid = self.sh_study()["id"]
        drv = mf.driver(self, self.d, sid, workers=0)
        rung0 = [self.take(drv, "w%d" % i) for i in range(4)]
        for t in rung0:
            drv.complete(t["id"])
        best = sorted((drv.trials[t["id"]] for t in rung0), key=mf.rank_key)[:2]
        p1 = self.take(drv, "w1")
        self.assertEqual((p1["config_id"], p1["budget"], p1["scheduler"], p1["resume_from"]),
                         (best[0]["config_id"], 3, {"bracket": 0, "rung": 1}, best[0]["id"]), "promotion %r" % p1)
        # w1 vanishes; nobody asks until its lease has run out.
        mf.wait_until_expired(self.d, p1["id"])
        drv.running.remove(p1["id"])
        # The retry goes before the rung's other, never started promotion.
        again = self.take(drv, "w2")
        self.same_work(again, p1, "w2")
        p2 = self.take(drv, "w3")
        self.assertEqual((p2["config_id"], p2["budget"], p2["resume_from"]), (best[1]["config_id"], 3, best[1]["id"]))
        self.assertEqual(drv.ask("w4"), "wait", "SH's only rung waits on its running trials")
        # The vanished worker comes back too late.
        late = self.d.request("POST", "/v1/trials/%d/complete" % p1["id"], {"value": 0.1})
        self.assertEqual(late[0], 409, "completing an expired trial: %r" % (late,))
        drv.complete(p2["id"])
        drv.complete(again["id"])
        self.assertEqual(drv.ask("w3"), "done")
        study = mf.get_study(self.d, sid)
        self.assertEqual({k: study["trials"][k] for k in ("completed", "expired", "running", "total")},
                         {"completed": 6, "expired": 1, "running": 0, "total": 7})
        bracket = study["scheduler"]["state"]["brackets"][0]
        rung1 = bracket["rungs"][1]
        self.assertEqual((rung1["created"], rung1["failed"], rung1["finished"]), (3, 1, 2), "rung 1: %r" % rung1)
        winner = min((drv.trials[p2["id"]], drv.trials[again["id"]]), key=mf.rank_key)
        self.assertEqual(bracket["winner"]["config_id"], winner["config_id"])

    def test_repeatedly_vanishing_config_counts_as_worst(self):
        sid = self.sh_study(max_retries=2)["id"]
        drv = mf.driver(self, self.d, sid, workers=0)
        rung0 = [self.take(drv, "w%d" % i) for i in range(3)]  # the 4th config is not started yet
        # The config that would rank first is the one whose workers keep vanishing.
        lost = min(rung0, key=lambda t: (mf.loss_of(t["config"], 1), t["config_id"]))
        others = [t for t in rung0 if t is not lost]
        for t in others:
            drv.complete(t["id"])
        mf.wait_until_expired(self.d, lost["id"])
        drv.running.remove(lost["id"])
        self.restart_keeps_state(drv, sid)
        # A retry goes before the bracket's other work (the 4th, unstarted config).
        attempts = [lost, self.take(drv, "v1")]
        self.same_work(attempts[1], lost, "v1")
        fourth = self.take(drv, "w3")
        self.assertEqual((fourth["config_id"], fourth["resume_from"], fourth["scheduler"]),
                         (fourth["id"], None, {"bracket": 0, "rung": 0}), "the 4th config: %r" % fourth)
        drv.complete(fourth["id"])
        others.append(fourth)
        self.assertEqual(drv.ask("x"), "wait", "rung 0 waits on attempt 2")
        mf.wait_until_expired(self.d, attempts[-1]["id"])
        drv.running.remove(attempts[-1]["id"])
        attempts.append(self.take(drv, "v2"))
        self.same_work(attempts[-1], lost, "v2")
        self.assertEqual(drv.ask("x"), "wait", "rung 0 waits on attempt 3")
        mf.wait_until_expired(self.d, attempts[-1]["id"])
        drv.running.remove(attempts[-1]["id"])
        # Three attempts (max_retries 2) are used up: the config ranks last and the rung completes.
        promoted = [self.take(drv, "w%d" % i) for i in range(2)]
        best = sorted((drv.trials[t["id"]] for t in others), key=mf.rank_key)[:2]
        self.assertEqual([(t["config_id"], t["budget"], t["resume_from"]) for t in promoted],
                         [(t["config_id"], 3, t["id"]) for t in best],
                         "rung 1 = the best two of the three configs that reported")
        for t in promoted:
            drv.complete(t["id"])
        self.assertEqual(drv.ask("w1"), "done")
        self.restart_keeps_state(drv, sid)
        offered = [t for t in drv.trials.values() if t["config_id"] == lost["config_id"]]
        self.assertEqual(len(offered), 3, "the vanishing config was offered %d times" % len(offered))
        study = mf.get_study(self.d, sid)
        self.assertEqual({k: study["trials"][k] for k in ("completed", "expired", "total")},
                         {"completed": 5, "expired": 3, "total": 8})
        rung0_state = study["scheduler"]["state"]["brackets"][0]["rungs"][0]
        self.assertEqual((rung0_state["created"], rung0_state["failed"], rung0_state["finished"],
                          rung0_state["survivors"]), (6, 3, 4, [t["config_id"] for t in best]), "%r" % rung0_state)

    def test_hyperband_rung_completes_after_a_worker_vanishes(self):
        plan = mf.hyperband_plan(9, 3)  # s=2: 9@1 3@3 1@9; s=1: 5@3 1@9; s=0: 3@9
        study = mf.create_study(self.d, {"name": "hyperband", "options": {"eta": 3}},
                                {"name": "epochs", "min": 1, "max": 9, "integer": True}, seed=12, lease_seconds=1.0)

        def drop(drv, t):  # the first trial of bracket 2's second rung
            return not drv.dropped and t["scheduler"] == {"bracket": 2, "rung": 1}

        drv = mf.driver(self, self.d, study["id"], workers=3, seed=12, drop=drop)
        drv.run()
        self.assertEqual(len(drv.dropped), 1)
        lost = drv.trials[drv.dropped[0]]
        mf.check_hyperband_run(self, drv, plan, "R = 9, one vanished worker",
                               mf.get_study(self.d, study["id"])["scheduler"]["state"])
        created = mf.table_of(plan)
        created[(2, 3)] += 1
        self.assertEqual(sorted(drv.counts(completed_only=False).items()), sorted(created.items()),
                         "created trials per (bracket, budget): one retry at (2, 3)")
        i = drv.transcript.index(("expired", drv.ordinal[lost["id"]]))
        retry = drv.transcript[i + 1]
        self.assertEqual(retry[0], "trial", "after the expiry: %r" % (drv.transcript[i:i + 3],))
        again = drv.trials[drv.order[retry[1]["n"]]]
        self.assertNotEqual(again["worker"], lost["worker"])
        self.same_work(again, lost, again["worker"])
        # While the lease ran, the other brackets were served, not made to wait.
        during = [drv.trials[tid]["scheduler"]["bracket"] for tid in drv.order
                  if lost["created_seq"] < drv.trials[tid]["created_seq"] < again["created_seq"]]
        self.assertTrue({1, 0} <= set(during), "brackets served while the lease ran: %r" % during)
        self.restart_keeps_state(drv, study["id"])
        state = mf.get_study(self.d, study["id"])
        self.assertIs(state["done"], True)
        rung = state["scheduler"]["state"]["brackets"][0]["rungs"][1]
        self.assertEqual((rung["created"], rung["failed"], rung["finished"]), (4, 1, 3), "%r" % rung)


if __name__ == "__main__":
    unittest.main()
