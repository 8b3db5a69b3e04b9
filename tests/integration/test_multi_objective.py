"""Several objectives and constraints (issue 41), end to end over HTTP.

A study gives "objectives" (2 to 8, each minimized or maximized, with an optional
reference value) and "constraints" (min and/or max per metric); trials report
"values"; GET the study answers its Pareto front of feasible non-dominated
trials, the front's hypervolume and its reference point; history carries the
hypervolume over time, the CSV a column per value and a feasible column. The
numbers below are worked by hand in the comments. A restart rebuilds the same
front from the stored events, a one-objective study answers exactly as before,
and another user sees none of it."""

import csv
import io
import math
import unittest

import bdtest
from bdtest import check_status, create_user, study_body, suggest

# error (minimize, reference 1.0), throughput (maximize, reference 0),
# memory_mb <= 512.
OBJECTIVES = [{"metric": "error", "goal": "minimize", "reference": 1.0},
              {"metric": "throughput", "goal": "maximize", "reference": 0}]
CONSTRAINTS = [{"metric": "memory_mb", "max": 512}]

# (error, throughput, memory_mb) per trial, in completion order.
REPORTS = [
    (0.2, 2.0, 100),   # front
    (0.6, 5.0, 100),   # dominated by the next one (0.5, 6)
    (0.5, 6.0, 300),   # front
    (0.1, 9.0, 600),   # dominates all, but infeasible (600 > 512): never on the front
    (0.8, 8.0, 512),   # front (512 is within the bound)
]
FRONT = {0, 2, 4}
# Minimized: (0.2, -2), (0.5, -6), (0.8, -8) against (1, 0); by error the
# staircase is 0.3 * 2 + 0.3 * 6 + 0.2 * 8 = 0.6 + 1.8 + 1.6.
HYPERVOLUME = 4.0
# Without references (BoTorch's rule, model/pareto.h): nadir (0.8, -2), ideal
# (0.2, -8), moved by 10% of the range (0.6, 6): (0.86, -1.4), i.e. error 0.86
# and throughput 1.4; the staircase 0.3 * 0.6 + 0.3 * 4.6 + 0.06 * 6.6.
INFERRED_REF = {"error": 0.86, "throughput": 1.4}
INFERRED_HV = 0.18 + 1.38 + 0.396


def values_of(report):
    e, t, m = report
    return {"error": e, "throughput": t, "memory_mb": m}


def create_study(d, token=bdtest.ADMIN, **overrides):
    """bdtest's study (random search over x and k) with overrides; None removes a member."""
    body = {k: v for k, v in study_body(**overrides).items() if v is not None}
    st, answer, _ = d.request("POST", "/v1/studies", body, token=token)
    assert st == 201, (st, answer)
    return answer


def get(d, path, token=bdtest.ADMIN):
    st, body, _ = d.request("GET", path, token=token)
    assert st == 200, (path, st, body)
    return body


class MultiObjective(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon()
        self.addCleanup(self.d.cleanup)

    def run_study(self, objectives=OBJECTIVES, constraints=CONSTRAINTS, **kw):
        study = create_study(self.d, objectives=objectives, constraints=constraints, objective=None, **kw)
        sid = study["id"]
        trials = suggest(self.d, sid, count=len(REPORTS) + 1)
        self.assertEqual(len(trials), len(REPORTS) + 1)
        for t, report in zip(trials, REPORTS):
            check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"],
                                              {"values": values_of(report)}), 200)
        # a diverged run: every objective worst, infeasible, never on the front
        diverged = trials[len(REPORTS)]
        done = check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % diverged["id"],
                                                 {"value": None}), 200)
        self.assertIsNone(done["value"])
        self.assertIs(done["feasible"], False)
        return sid, [t["id"] for t in trials]

    def check_front(self, sid, ids, hypervolume=HYPERVOLUME, reference=None):
        s = get(self.d, "/v1/studies/%d" % sid)
        self.assertNotIn("objective", s)
        self.assertIsNone(s["incumbent"], "no single best")
        front = {p["trial_id"]: p for p in s["pareto_front"]}
        self.assertEqual(set(front), {ids[i] for i in FRONT})
        for i in FRONT:
            self.assertEqual(front[ids[i]]["values"], values_of(REPORTS[i]))
            self.assertIn("x", front[ids[i]]["config"])
        self.assertAlmostEqual(s["hypervolume"], hypervolume, places=9)
        self.assertEqual(s["reference_point"].keys(), {"error", "throughput"})
        for k, v in (reference or {"error": 1.0, "throughput": 0.0}).items():
            self.assertAlmostEqual(s["reference_point"][k], v, places=9)
        self.assertIs(s["pareto_front_truncated"], False)
        return s

    def test_front_hypervolume_trials_csv_history_and_a_restart(self):
        sid, ids = self.run_study()
        s = self.check_front(sid, ids)
        self.assertNotIn("pareto_front_size", s, "GET of one study lists the members")
        # the listing summarizes the front: its size, hypervolume and reference, no member
        entry = [x for x in get(self.d, "/v1/studies?limit=1000")["studies"] if x["id"] == sid]
        self.assertEqual(len(entry), 1)
        self.assertNotIn("pareto_front", entry[0])
        self.assertEqual(entry[0]["pareto_front_size"], len(FRONT))
        self.assertAlmostEqual(entry[0]["hypervolume"], HYPERVOLUME, places=9)
        self.assertEqual(entry[0]["reference_point"], s["reference_point"])
        self.assertIs(entry[0]["pareto_front_truncated"], False)
        self.assertIsNone(entry[0]["incumbent"])
        self.assertEqual(s["objectives"], OBJECTIVES, "stored as given")
        self.assertEqual(s["constraints"], CONSTRAINTS)
        self.assertEqual(s["trials"]["completed"], len(REPORTS) + 1)

        t = get(self.d, "/v1/trials/%d" % ids[3])
        self.assertEqual(t["values"], values_of(REPORTS[3]))
        self.assertEqual(t["value"], 0.1, "value is the first objective's")
        self.assertIs(t["feasible"], False)
        self.assertIs(get(self.d, "/v1/trials/%d" % ids[4])["feasible"], True)
        listed = get(self.d, "/v1/studies/%d/trials?limit=100" % sid)["trials"]
        self.assertEqual([x.get("feasible") for x in listed], [True, True, True, False, True, False])
        st, body, _ = self.d.request("GET", "/v1/studies/%d/trials?order=best" % sid)
        self.assertError((st, body, None), 400, "invalid_argument", "order")

        st, text, _ = self.d.request("GET", "/v1/studies/%d/trials.csv" % sid)
        self.assertEqual(st, 200)
        rows = list(csv.DictReader(io.StringIO(text)))
        self.assertEqual(len(rows), len(REPORTS) + 1)
        for row, report in zip(rows, REPORTS):
            self.assertEqual([float(row["value.error"]), float(row["value.throughput"]),
                              float(row["value.memory_mb"])], list(report))
        self.assertEqual([r["feasible"] for r in rows], ["true", "true", "true", "false", "true", "false"])
        self.assertEqual(rows[5]["value.error"], "", "a diverged run reported no values")

        h = get(self.d, "/v1/studies/%d/history" % sid)
        hvs = [p["hypervolume"] for p in h["best"]]
        self.assertEqual(hvs, sorted(hvs), "the front only grows its hypervolume")
        self.assertAlmostEqual(hvs[-1], HYPERVOLUME, places=9)
        # by hand: after trial 0 alone 0.8 * 2 = 1.6; trial 1 joins: + (1 - 0.6) * (5 - 2) = 2.8;
        # trial 2 replaces it: 4 - 1.6 = 2.4 more than 1.6 ... the last point is the whole front
        self.assertAlmostEqual(hvs[0], 1.6, places=9)
        self.assertEqual(h["best"][0]["trial_id"], ids[0])
        self.assertEqual(h["completed"], len(REPORTS) + 1)

        self.d.restart()
        self.check_front(sid, ids)
        again = get(self.d, "/v1/studies/%d/history" % sid)
        self.assertEqual([p["hypervolume"] for p in again["best"]], hvs)

    def test_a_killed_daemon_loses_no_value_of_any_objective(self):
        sid, ids = self.run_study()
        before = {t["id"]: t for t in get(self.d, "/v1/studies/%d/trials?limit=100" % sid)["trials"]}
        self.d.kill()  # SIGKILL: every answered report was on disk before its answer
        self.d.restart()
        after = {t["id"]: t for t in get(self.d, "/v1/studies/%d/trials?limit=100" % sid)["trials"]}
        for i, report in enumerate(REPORTS):
            self.assertEqual(after[ids[i]]["values"], values_of(report))
        self.assertEqual({k: (t.get("values"), t.get("feasible")) for k, t in after.items()},
                         {k: (t.get("values"), t.get("feasible")) for k, t in before.items()})
        self.check_front(sid, ids)
        # and the study goes on: the next report joins the rebuilt front
        (t,) = suggest(self.d, sid)
        check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"],
                                          {"values": {"error": 0.05, "throughput": 1, "memory_mb": 10}}), 200)
        s = get(self.d, "/v1/studies/%d" % sid)
        self.assertIn(t["id"], [p["trial_id"] for p in s["pareto_front"]])
        # (0.05, -1) adds (0.2 - 0.05) x 1 below trial 0's (0.2, -2): 4.0 + 0.15
        self.assertAlmostEqual(s["hypervolume"], HYPERVOLUME + 0.15, places=9)

    def test_the_reference_point_is_inferred_when_the_study_gives_none(self):
        objectives = [{k: v for k, v in o.items() if k != "reference"} for o in OBJECTIVES]
        sid, ids = self.run_study(objectives=objectives)
        self.check_front(sid, ids, INFERRED_HV, INFERRED_REF)

    def test_measurements_and_warm_starts_carry_values(self):
        sid = create_study(self.d, objectives=OBJECTIVES, constraints=CONSTRAINTS, objective=None,
                           resource={"name": "epochs", "min": 1, "max": 4})["id"]
        (t,) = suggest(self.d, sid)
        got = check_status(self, self.d.request("POST", "/v1/trials/%d/measurements" % t["id"],
                                                {"step": 1, "values": {"error": 0.7, "throughput": 3}}), 200)
        self.assertEqual(got["action"], "continue")
        m = get(self.d, "/v1/trials/%d" % t["id"])["measurements"]
        self.assertEqual(m[0]["values"], {"error": 0.7, "throughput": 3})
        self.assertEqual(m[0]["value"], 0.7)
        # a warm start with its values is a completed trial and may join the front
        w = check_status(self, self.d.request("POST", "/v1/studies/%d/trials" % sid,
                                              {"config": {"x": 0.5, "k": "a"},
                                               "values": values_of(REPORTS[0])}), 201)
        self.assertEqual((w["origin"], w["feasible"]), ("warm_start", True))
        s = get(self.d, "/v1/studies/%d" % sid)
        self.assertEqual([p["trial_id"] for p in s["pareto_front"]], [w["id"]])
        self.assertAlmostEqual(s["hypervolume"], 1.6, places=9)
        self.d.restart()
        self.assertEqual([p["trial_id"] for p in get(self.d, "/v1/studies/%d" % sid)["pareto_front"]], [w["id"]])

    def test_a_constrained_study_with_one_objective_recommends_its_best_feasible_trial(self):
        sid = create_study(self.d, constraints=CONSTRAINTS)["id"]
        trials = suggest(self.d, sid, count=3)
        for t, (value, memory) in zip(trials, [(0.3, 100), (0.1, 900), (0.2, 500)]):
            check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"],
                                              {"value": value, "values": {"memory_mb": memory}}), 200)
        s = get(self.d, "/v1/studies/%d" % sid)
        self.assertNotIn("pareto_front", s)
        self.assertEqual(s["incumbent"]["trial_id"], trials[2]["id"], "0.1 is infeasible: 0.2 is the best")
        best = get(self.d, "/v1/studies/%d/trials?order=best&limit=3" % sid)["trials"]
        self.assertEqual([t["id"] for t in best], [trials[2]["id"], trials[0]["id"], trials[1]["id"]],
                         "feasible first, then by value")
        self.assertEqual(best[0]["values"], {"loss": 0.2, "memory_mb": 500})
        h = get(self.d, "/v1/studies/%d/history" % sid)
        self.assertEqual([(p["trial_id"], p["value"]) for p in h["best"]],
                         [(trials[0]["id"], 0.3), (trials[2]["id"], 0.2)],
                         "the best so far is the best feasible, as the incumbent: 0.1 is infeasible")
        self.d.restart()
        self.assertEqual(get(self.d, "/v1/studies/%d" % sid)["incumbent"]["trial_id"], trials[2]["id"])

    def test_a_one_objective_study_answers_as_before(self):
        sid = create_study(self.d)["id"]
        (t,) = suggest(self.d, sid)
        done = check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": 0.25}), 200)
        for key in ("values", "feasible"):
            self.assertNotIn(key, done)
        s = get(self.d, "/v1/studies/%d" % sid)
        for key in ("pareto_front", "hypervolume", "reference_point", "objectives", "constraints"):
            self.assertNotIn(key, s)
        self.assertEqual(s["objective"], {"metric": "loss", "goal": "minimize"})
        self.assertEqual(s["incumbent"]["value"], 0.25)
        h = get(self.d, "/v1/studies/%d/history" % sid)
        self.assertEqual([p["value"] for p in h["best"]], [0.25])
        self.assertNotIn("hypervolume", h["best"][0])
        st, text, _ = self.d.request("GET", "/v1/studies/%d/trials.csv" % sid)
        header = next(csv.reader(io.StringIO(text)))
        self.assertFalse([c for c in header if c.startswith("value.") or c == "feasible"], header)

    def test_values_near_the_largest_double_keep_the_study_working(self):
        """Finite values whose differences overflow (1.7e308 and -1.7e308): gp_ucb's
        ParEGO normalization gave NaN (every later suggest 400 "output is not
        finite") and its feasibility GP overflowed (500); GET and history lost the
        "hypervolume" key (an infinite volume that JSON cannot hold): null now."""
        for constraints in (None, [{"metric": "m", "max": 0}]):
            sid = create_study(self.d, objectives=[{"metric": "a", "goal": "minimize"},
                                                   {"metric": "b", "goal": "maximize"}],
                               constraints=constraints, objective=None,
                               scheduler={"name": "gp_ucb", "options": {"n_init": 2}})["id"]
            for a, b, m in [(1, 2, 1.7e308), (1.7e308, -1.7e308, -1), (-1.7e308, 1.7e308, 0), (0, 0, 1e308),
                            (3, 3, 0)]:
                (t,) = suggest(self.d, sid)
                values = {"a": a, "b": b, "m": m} if constraints else {"a": a, "b": b}
                check_status(self, self.d.request("POST", "/v1/trials/%d/complete" % t["id"], {"values": values}),
                             200)
            suggest(self.d, sid, count=2)
            s = get(self.d, "/v1/studies/%d" % sid)
            self.assertIn("hypervolume", s)
            self.assertIsNone(s["hypervolume"], "an infinite volume is null")
            for p in get(self.d, "/v1/studies/%d/history" % sid)["best"]:
                self.assertIn("hypervolume", p)

    def test_another_user_sees_nothing(self):
        sid, ids = self.run_study()
        other = create_user(self.d, "mallory")
        for path in ("/v1/studies/%d" % sid, "/v1/studies/%d/history" % sid, "/v1/trials/%d" % ids[0],
                     "/v1/studies/%d/trials.csv" % sid):
            st, body, _ = self.d.request("GET", path, token=other)
            self.assertEqual(st, 404, (path, body))
        st, body, _ = self.d.request("POST", "/v1/studies/%d/suggest" % sid, {}, token=other)
        self.assertEqual(st, 404, body)
        self.check_front(sid, ids)


if __name__ == "__main__":
    unittest.main()
