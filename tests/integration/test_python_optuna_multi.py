"""banditd.optuna with several objectives and constraints (issue 41, item 4),
against a real banditd: directions=[...] -> a study with "objectives"
(metrics objective_0, ... or the names given), each Optuna trial's values
stored as banditd's "values" and read back by trial.values (this process
and another one: load_study); study.directions; study.best_trials is
banditd's pareto_front (feasible, non-dominated); trial.report refused as
Optuna refuses it; a diverged objective reads back as the worst values;
trials_dataframe's values_0, ... A sampler's constraints_func is called
after the objective and sent as the study's constraints: "c_0", ... with
n_constraints=, else one aggregate "c" (feasible exactly by Optuna's rule,
banditd's violation Optuna's sum of positive values); the stored values
read back as the system attribute "constraints"; no infeasible trial is
ever a best trial (one objective: best_trial is the best feasible, once
there is one); a
constraints_func that fails or whose count does not fit raises, its trial
completed as diverged. A define-by-run study whose sampler maps to nsga2
gets tpe or random, with a warning. The
sampler table: NSGAIISampler -> nsga2, TPESampler / MOTPESampler -> tpe,
RandomSampler -> random, and the default for several objectives (nsga2, no
pruner). Optuna's plot_pareto_front (plotly and matplotlib) on a bridged
study. tests/integration/optuna_programs/mo_*.py and constrained_svc.py run
whole programs."""

import math
import os
import sys
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("BD_SOURCE_DIR") or os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SOURCE, "clients", "python"))
import bdtest  # noqa: E402
from banditd import Client  # noqa: E402

try:
    import warnings

    import optuna
    from optuna.trial import TrialState

    import banditd.optuna
    HAVE_OPTUNA = True
except ImportError:
    HAVE_OPTUNA = False

if HAVE_OPTUNA:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)


def two(trial):
    """Schaffer's two objectives of x, and a second parameter that only shifts the first."""
    x = trial.suggest_float("x", -2.0, 4.0)
    k = trial.suggest_categorical("k", ["a", "b"])
    return x * x + (0.5 if k == "b" else 0.0), (x - 2.0) ** 2


def bnh(trial):
    """Binh and Korn with its two constraints (Optuna's FAQ example), kept as a user attribute."""
    x = trial.suggest_float("x", 0.0, 5.0)
    y = trial.suggest_float("y", 0.0, 3.0)
    trial.set_user_attr("constraint", ((x - 5) ** 2 + y ** 2 - 25, -((x - 8) ** 2) - (y + 3) ** 2 + 7.7,
                                       x - 2.5))
    return 4 * x * x + 4 * y * y, (x - 5) ** 2 + (y - 5) ** 2


def bnh_constraints(trial):
    return trial.user_attrs["constraint"]


def dominates(a, b, signs):
    a = [s * v for s, v in zip(signs, a)]
    b = [s * v for s, v in zip(signs, b)]
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


@unittest.skipUnless(HAVE_OPTUNA, "python3-optuna is missing (docker/install-deps.sh --test)")
class OptunaSeveralObjectives(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(lease_seconds=60)
        cls.url = "http://127.0.0.1:%d" % cls.d.port
        cls.c = Client(cls.url, cls.d.token, timeout=30)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.d.cleanup()

    def create(self, **kwargs):
        kwargs.setdefault("seed", 7)
        return banditd.optuna.create_study(url=self.url, token=self.d.token, study_name=bdtest.unique_name("mo"),
                                           **kwargs)

    def load(self, study, **kwargs):
        return banditd.optuna.load_study(url=self.url, token=self.d.token, study_name=study.study_name, **kwargs)

    def test_sampler_table(self):
        nsga2 = optuna.samplers.NSGAIISampler(population_size=20, crossover_prob=0.8, swapping_prob=0.4,
                                              mutation_prob=0.1)
        cases = [
            ((None, None, 2), {"name": "nsga2", "options": {}}),  # Optuna's default for several objectives
            ((optuna.samplers.NSGAIISampler(), None, 2), {"name": "nsga2", "options": {}}),
            ((nsga2, None, 3), {"name": "nsga2", "options": {"population_size": 20, "crossover_prob": 0.8,
                                                              "swapping_prob": 0.4, "mutation_prob": 0.1}}),
            ((optuna.samplers.TPESampler(n_startup_trials=5), None, 2),
             {"name": "tpe", "options": {"n_startup_trials": 5}}),
            ((optuna.samplers.MOTPESampler(), None, 2), {"name": "tpe", "options": {}}),
            ((optuna.samplers.RandomSampler(), None, 2), {"name": "random", "options": {}}),
            # Several objectives: no pruner is used (Optuna's report() refuses them), so no resource.
            ((optuna.samplers.TPESampler(), optuna.pruners.MedianPruner(), 2), {"name": "tpe", "options": {}}),
            # constraints_func is the bridge's, never a scheduler option.
            ((optuna.samplers.TPESampler(constraints_func=bnh_constraints), optuna.pruners.NopPruner(), 1),
             {"name": "tpe", "options": {}}),
        ]
        for args, want in cases:
            self.assertEqual(banditd.optuna.scheduler_for(*args), (want, None), args)

    def test_refused(self):
        refused = [
            (dict(directions=["minimize"] * 9), ValueError, "at most 8 objectives"),
            (dict(directions=[]), ValueError, "non-empty list"),
            (dict(directions=["minimize", "up"]), ValueError, "\"minimize\" or \"maximize\", not 'up'"),
            (dict(direction="minimize", directions=["minimize", "minimize"]), ValueError, "only one of"),
            (dict(directions=["minimize", "minimize"], metric=["a"]), ValueError, "2 distinct names"),
            (dict(directions=["minimize", "minimize"], metric=["a", "a"]), ValueError, "2 distinct names"),
            (dict(directions=["minimize", "minimize"],
                  sampler=optuna.samplers.NSGAIISampler(crossover=optuna.samplers.nsgaii.SPXCrossover())),
             ValueError, r"crossover=SPXCrossover\(\)"),
            (dict(directions=["minimize", "minimize"], pruner=optuna.pruners.ThresholdPruner(upper=1.0)), ValueError,
             "pruner=ThresholdPruner"),
            (dict(sampler=optuna.samplers.TPESampler(constraints_func=bnh_constraints), n_constraints=17),
             ValueError, "n_constraints must be a whole number from 1 to 16"),
        ]
        for extra, error, message in refused:
            with self.assertRaisesRegex(error, message, msg=extra):
                self.create(**extra)

    def test_two_objectives(self):
        study = self.create(directions=["minimize", "maximize"], sampler=optuna.samplers.RandomSampler())
        doc = self.c.get_study(study.banditd_id)
        self.assertEqual([(o["metric"], o["goal"]) for o in doc["objectives"]],
                         [("objective_0", "minimize"), ("objective_1", "maximize")])
        self.assertEqual(doc["scheduler"]["name"], "random")
        self.assertNotIn("max_steps", str(doc.get("resource")))  # not multi-fidelity
        self.assertEqual(study.directions, [optuna.study.StudyDirection.MINIMIZE,
                                            optuna.study.StudyDirection.MAXIMIZE])
        seen = []
        study.optimize(two, n_trials=16, callbacks=[lambda s, t: seen.append(tuple(t.values))])
        trials = list(self.c.list_trials(study.banditd_id))
        self.assertEqual(len(trials), 16)
        self.assertEqual([t["state"] for t in trials], ["completed"] * 16)
        # Each value as the objective returned it, under its metric; "value" is the first objective's.
        for t, o, v in zip(trials, study.trials, seen):
            self.assertEqual(o.values, list(v))
            self.assertEqual(t["values"], {"objective_0": v[0], "objective_1": v[1]}, t)
            self.assertEqual(t["value"], v[0])
            self.assertNotIn("feasible", t)  # no constraints
        # Another process reads the same values.
        other = self.load(study)
        self.assertEqual([t.values for t in other.trials], [list(v) for v in seen])
        self.assertEqual(other.directions, study.directions)
        # best_trials: banditd's front, non-dominated, and every non-dominated value pair is on it.
        signs = [1, -1]
        front = study.best_trials
        doc = self.c.get_study(study.banditd_id)
        self.assertEqual(sorted(t._trial_id for t in front), sorted(p["trial_id"] for p in doc["pareto_front"]))
        self.assertTrue(front)
        complete = study.get_trials(states=(TrialState.COMPLETE,))
        for b in front:
            self.assertFalse(any(dominates(o.values, b.values, signs) for o in complete), b)
        undominated = {tuple(o.values) for o in complete
                       if not any(dominates(p.values, o.values, signs) for p in complete)}
        self.assertEqual({tuple(b.values) for b in front}, undominated)
        self.assertIsInstance(doc.get("hypervolume"), float)
        # A front longer than the daemon lists (pareto_front_truncated) is computed by the bridge.
        client = study._storage.client
        real = client.get_study

        def truncated(study_id):
            got = real(study_id)
            got.update(pareto_front=got["pareto_front"][:1], pareto_front_truncated=True)
            return got

        client.get_study = truncated
        self.assertGreater(len(front), 1)  # the truncated list alone would miss members
        try:
            self.assertEqual([t.number for t in study.best_trials], sorted(t.number for t in front))
        finally:
            del client.get_study
        with self.assertRaises(RuntimeError):
            study.best_trial
        df = study.trials_dataframe()
        self.assertEqual(list(df["values_0"]), [v[0] for v in seen])
        self.assertEqual(list(df["values_1"]), [v[1] for v in seen])

        # Optuna refuses report() and should_prune() with several objectives; so does the bridge's study.
        def reports(trial):
            trial.report(1.0, 0)
            return 1.0, 1.0

        with self.assertRaisesRegex(NotImplementedError, "multi-objective"):
            study.optimize(reports, n_trials=1)
        self.assertEqual(self.c.get_trial(study.trials[-1]._trial_id)["state"], "failed")

    def test_three_named_objectives_nsga2_and_divergence(self):
        study = self.create(directions=["minimize", "minimize", "maximize"], metric=["err", "ms", "acc"],
                            sampler=optuna.samplers.NSGAIISampler(population_size=6),
                            search_space={"x": optuna.distributions.FloatDistribution(0.0, 1.0)})
        doc = self.c.get_study(study.banditd_id)
        self.assertEqual([(o["metric"], o["goal"]) for o in doc["objectives"]],
                         [("err", "minimize"), ("ms", "minimize"), ("acc", "maximize")])
        self.assertEqual((doc["scheduler"]["name"], doc["scheduler"]["options"]), ("nsga2", {"population_size": 6}))

        def three(trial):
            x = trial.suggest_float("x", 0.0, 1.0)
            if trial.number == 3:
                return math.inf, 1.0, 1.0  # diverged (Optuna: COMPLETE; NaN would be FAIL): every objective the worst
            return x, 1.0 - x, x * (1.0 - x)

        study.optimize(three, n_trials=14)
        t3 = self.c.get_trial(study.trials[3]._trial_id)
        self.assertEqual((t3["state"], t3.get("value")), ("completed", None))
        for o in (study.trials[3], self.load(study).trials[3]):
            self.assertEqual(o.state, TrialState.COMPLETE)
            self.assertEqual(o.values, [math.inf, math.inf, -math.inf])
        self.assertNotIn(study.trials[3].number, [t.number for t in study.best_trials])
        good = [t for t in study.trials if t.number != 3]
        self.assertEqual(self.c.get_trial(good[0]._trial_id)["values"],
                         dict(zip(["err", "ms", "acc"], good[0].values)))

    def test_define_by_run_nsga2_falls_back(self):
        """nsga2 needs declared parameters; a define-by-run study (an Optuna program's) that would get it
        gets the first of tpe, random that takes its shape, with a warning naming both."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            study = self.create(directions=["minimize", "minimize"],
                                sampler=optuna.samplers.NSGAIISampler(constraints_func=bnh_constraints))
        doc = self.c.get_study(study.banditd_id)
        self.assertIn(doc["scheduler"]["name"], ("tpe", "random"))
        said = [str(w.message) for w in caught if "nsga2" in str(w.message)]
        self.assertEqual(len(said), 1, [str(w.message) for w in caught])
        self.assertIn("uses %s instead of nsga2" % doc["scheduler"]["name"], said[0])
        study.optimize(bnh, n_trials=4)
        self.assertEqual([t.state for t in study.trials], [TrialState.COMPLETE] * 4)
        # A scheduler= the caller named is never replaced.
        with self.assertRaisesRegex(Exception, "nsga2 needs its parameters declared"):
            self.create(directions=["minimize", "minimize"], scheduler="nsga2")

    def test_constraints_one_metric_each(self):
        """n_constraints=3: c_0, c_1, c_2, each {"max": 0}, as constraints_func returned them."""
        sampler = optuna.samplers.NSGAIISampler(population_size=8, constraints_func=bnh_constraints)
        space = {"x": optuna.distributions.FloatDistribution(0.0, 5.0),
                 "y": optuna.distributions.FloatDistribution(0.0, 3.0)}
        study = self.create(directions=["minimize", "minimize"], sampler=sampler, n_constraints=3, search_space=space)
        doc = self.c.get_study(study.banditd_id)
        self.assertEqual(doc["scheduler"]["name"], "nsga2")  # declared parameters: banditd's own NSGA-II
        self.assertEqual([(c["metric"], c.get("min"), c["max"]) for c in doc["constraints"]],
                         [("c_0", None, 0), ("c_1", None, 0), ("c_2", None, 0)])
        study.optimize(bnh, n_trials=24)
        trials = {t["id"]: t for t in self.c.list_trials(study.banditd_id)}
        feasible = 0
        for o in study.trials:
            t = trials[o._trial_id]
            cons = o.user_attrs["constraint"]
            want = all(c <= 0 for c in cons)
            feasible += want
            self.assertEqual(t["values"], {"objective_0": o.values[0], "objective_1": o.values[1], "c_0": cons[0],
                                           "c_1": cons[1], "c_2": cons[2]})
            self.assertIs(t["feasible"], want, t)
            self.assertEqual(o.system_attrs["constraints"], tuple(cons))
        self.assertTrue(0 < feasible < 24, feasible)  # x > 2.5 cuts about half
        # Read back in another process: from banditd's values.
        for o, l in zip(study.trials, self.load(study).trials):
            self.assertEqual(l.system_attrs["constraints"], o.system_attrs["constraints"])
            self.assertEqual(l.system_attrs["banditd_feasible"], all(c <= 0 for c in o.user_attrs["constraint"]))
        front = study.best_trials
        self.assertTrue(front)
        self.assertTrue(all(all(c <= 0 for c in t.user_attrs["constraint"]) for t in front))
        feasible_trials = [t for t in study.trials if all(c <= 0 for c in t.user_attrs["constraint"])]
        for b in front:
            self.assertFalse(any(dominates(o.values, b.values, [1, 1]) for o in feasible_trials))
        # Optuna's plots on the bridged study, infeasible trials apart.
        fig = optuna.visualization.plot_pareto_front(study, constraints_func=bnh_constraints)
        apart = [tr for tr in fig.data if "Infeasible Trial" in (tr.hovertemplate or "")]
        self.assertEqual(len(apart[0].x), 24 - feasible)
        import matplotlib
        matplotlib.use("Agg")
        ax = optuna.visualization.matplotlib.plot_pareto_front(study, constraints_func=bnh_constraints)
        self.assertEqual(sum(len(c.get_offsets()) for c in ax.collections), 24)

    def test_constraints_aggregate(self):
        """Without n_constraints: one constraint "c", the largest value when none is positive, else the
        sum of the positive ones; this process keeps the full tuples, another reads the aggregate."""
        sampler = optuna.samplers.TPESampler(n_startup_trials=4, constraints_func=bnh_constraints)
        study = self.create(directions=["minimize", "minimize"], sampler=sampler)
        doc = self.c.get_study(study.banditd_id)
        self.assertEqual([(c["metric"], c["max"]) for c in doc["constraints"]], [("c", 0)])
        study.optimize(bnh, n_trials=16)
        trials = {t["id"]: t for t in self.c.list_trials(study.banditd_id)}
        loaded = self.load(study).trials
        for o, l in zip(study.trials, loaded):
            cons = o.user_attrs["constraint"]
            positive = [c for c in cons if c > 0]
            want = math.fsum(positive) if positive else max(cons)
            t = trials[o._trial_id]
            self.assertAlmostEqual(t["values"]["c"], want, places=12)
            self.assertIs(t["feasible"], not positive)
            self.assertEqual(o.system_attrs["constraints"], tuple(cons))
            self.assertEqual(l.system_attrs["constraints"], (t["values"]["c"],))
        self.assertTrue(all(not any(c > 0 for c in t.user_attrs["constraint"]) for t in study.best_trials))

    def test_one_objective_with_constraints(self):
        """best_trial / best_value / best_trials: the best feasible trial; none feasible yet: best_trial
        by Optuna 3.1's rule (the best of all), best_trials empty."""
        def constraints(trial):
            return [trial.params["x"] - 0.5]

        study = self.create(direction="minimize", pruner=optuna.pruners.NopPruner(),
                            sampler=optuna.samplers.TPESampler(n_startup_trials=20, constraints_func=constraints))
        doc = self.c.get_study(study.banditd_id)
        self.assertEqual(doc["objective"]["metric"], "value")
        self.assertEqual([c["metric"] for c in doc["constraints"]], ["c"])

        def f(trial):
            x = trial.suggest_float("x", 0.0, 1.0)
            return (x - 1.0) ** 2  # the unconstrained best, x = 1, is infeasible

        study.optimize(f, n_trials=12)
        trials = study.get_trials(states=(TrialState.COMPLETE,))
        feasible = [t for t in trials if t.params["x"] <= 0.5]
        self.assertTrue(feasible and len(feasible) < len(trials))
        best = min(feasible, key=lambda t: t.value)
        self.assertEqual(study.best_trial.number, best.number)
        self.assertEqual(study.best_value, best.value)
        self.assertEqual([t.number for t in study.best_trials], [best.number])
        self.assertEqual(self.c.get_trial(best._trial_id)["values"], {"value": best.value, "c": best.params["x"] - 0.5})

        never = self.create(direction="minimize", pruner=optuna.pruners.NopPruner(),
                            sampler=optuna.samplers.TPESampler(constraints_func=lambda t: [1.0]))
        never.optimize(f, n_trials=3)  # Optuna logs the best trial after each one: there is one
        self.assertEqual(never.best_value, min(t.value for t in never.trials))  # Optuna 3.1's rule, none feasible
        self.assertEqual(never.best_trials, [])

    def test_constraints_that_do_not_fit(self):
        """constraints_func returning 3 values to a study of 2 constraints, or raising: the error
        propagates from optimize() as Optuna's does, and the trial, which banditd cannot take with
        those values, is COMPLETE as diverged (every objective the worst, infeasible) with the reason,
        as Optuna stores a COMPLETE trial then. A study with constraints loaded without a
        constraints_func does the same; given again at load_study, it computes them."""
        sampler = optuna.samplers.NSGAIISampler(constraints_func=bnh_constraints)
        study = self.create(directions=["minimize", "minimize"], sampler=sampler, n_constraints=2)
        with self.assertRaisesRegex(ValueError, "constraints_func returned 3 values.*2 constraints"):
            study.optimize(bnh, n_trials=3)

        def diverged(o, why):
            t = self.c.get_trial(o._trial_id)
            self.assertEqual((t["state"], t.get("value"), t.get("feasible")), ("completed", None, False), t)
            self.assertIn(why, t["reason"])
            self.assertEqual((o.state, o.values), (TrialState.COMPLETE, [math.inf, math.inf]))

        diverged(study.trials[0], "constraints_func returned 3 values")
        self.assertEqual(len(study.trials), 1)

        def broken(trial):
            raise KeyError("constraint")

        other = self.create(directions=["minimize", "minimize"], n_constraints=2,
                            sampler=optuna.samplers.NSGAIISampler(constraints_func=broken))
        with self.assertRaises(KeyError):
            other.optimize(bnh, n_trials=2)
        diverged(other.trials[0], "KeyError")
        plain = self.load(study)  # no sampler: no constraints_func
        with self.assertRaisesRegex(ValueError, "no constraints_func gave values"):
            plain.optimize(bnh, n_trials=1)
        diverged(plain.trials[-1], "no constraints_func gave values")
        again = self.load(study, sampler=optuna.samplers.NSGAIISampler(
            constraints_func=lambda t: bnh_constraints(t)[:2]))
        again.optimize(bnh, n_trials=2)
        for o in again.trials[-2:]:
            t = self.c.get_trial(o._trial_id)
            self.assertEqual((o.state, t["state"]), (TrialState.COMPLETE, "completed"))
            self.assertEqual(o.values, [t["values"]["objective_0"], t["values"]["objective_1"]])
            self.assertEqual([t["values"]["c_0"], t["values"]["c_1"]], list(o.user_attrs["constraint"][:2]))


if __name__ == "__main__":
    unittest.main()
