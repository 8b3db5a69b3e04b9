"""banditd.optuna (clients/python/banditd/optuna*.py) against a real banditd,
with Optuna's pruning example: clients/examples/optuna_pruning.py's objective
(an SGDClassifier trained epoch by epoch with partial_fit on the bundled
digits, trial.report / trial.should_prune), the same text as on plain Optuna
(optuna_pruning_plain.py; only the imports and the create_study line differ).

For hyperband, asha, tpe and gp_ucb: every Optuna trial is a banditd trial
with the measurements reported (banditd step = Optuna step + 1); the
multi-fidelity ones stop each trial exactly at its budget and complete it
with the value there; study.best_params / best_value / best_trial are
banditd's incumbent and the best completed value; trials_dataframe() has a
row per trial. Also: n_jobs=2 (two banditd workers), a define-by-run study
(no search_space: each trial asks for its parameters), bo_bos stops as
PRUNED, the objective's own TrialPruned, exceptions (propagated, catch=),
user attributes, ask/tell, a stepped int, enqueue_trial, sampler= and
pruner= mapped to schedulers (and refused where banditd has no
counterpart), stopping-type pruning read back as PRUNED, load_study, and the
example run as a user runs it. tests/integration/test_optuna_programs.py runs
whole Optuna programs."""

import ast
import difflib
import importlib.util
import math
import os
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("BD_SOURCE_DIR") or os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SOURCE, "clients", "python"))
import bdtest  # noqa: E402
from banditd import BanditdError, Client  # noqa: E402

try:
    import warnings

    import numpy as np
    import optuna
    import sklearn.datasets
    import sklearn.linear_model
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
    from optuna.trial import TrialState

    import banditd.optuna
    from banditd.optuna_space import to_parameters
    HAVE_OPTUNA = True
except ImportError:
    HAVE_OPTUNA = False

EXAMPLES = os.path.join(SOURCE, "clients", "examples")


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if HAVE_OPTUNA:
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # the failure cases log tracebacks
    objective = load_example("optuna_pruning").objective  # the example's own, unchanged
    SPACE = {"alpha": FloatDistribution(1e-6, 1e-1, log=True), "eta0": FloatDistribution(1e-4, 1.0, log=True),
             "loss": CategoricalDistribution(["hinge", "log_loss", "modified_huber"])}
    EPOCHS = 27  # the example's loop: for step in range(27)


def quick(trial):
    """A cheap objective with a pruning loop, for the failure cases."""
    x = trial.suggest_float("x", 0.0, 1.0)
    for step in range(3):
        trial.report((x - 0.3) ** 2 + 1.0 / (step + 1), step)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return (x - 0.3) ** 2


@unittest.skipUnless(HAVE_OPTUNA, "python3-optuna or python3-sklearn is missing (docker/install-deps.sh --test)")
class OptunaBridge(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(lease_seconds=60)
        cls.url = "http://127.0.0.1:%d" % cls.d.port
        cls.c = Client(cls.url, cls.d.token, timeout=30)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.d.cleanup()

    def create(self, scheduler, **kwargs):
        kwargs.setdefault("direction", "maximize")
        kwargs.setdefault("search_space", SPACE)
        return banditd.optuna.create_study(url=self.url, token=self.d.token, study_name=bdtest.unique_name("opt"),
                                           scheduler=scheduler, seed=11, **kwargs)

    def check(self, study, multi_fidelity):
        """The Optuna view against banditd's; returns banditd's trials."""
        self.assertIsInstance(study, optuna.Study)
        bid = study.banditd_id
        trials = list(self.c.list_trials(bid, measurements=True))
        seen = study.trials
        self.assertEqual([t._trial_id for t in seen], [t["id"] for t in trials])
        self.assertEqual([t.number for t in seen], list(range(len(trials))))
        self.assertGreater(len(trials), 3)
        for t, o in zip(trials, seen):
            what = "trial %d: %r" % (t["id"], t)
            self.assertEqual(o.params, t["config"], what)
            self.assertEqual(o.state, TrialState.COMPLETE, what)
            self.assertEqual(t["state"], "completed", what)
            steps = [m["step"] for m in t["measurements"]]
            # One measurement per epoch, banditd's step = epochs done = Optuna's step + 1.
            self.assertEqual(steps, list(range(1, len(steps) + 1)), what)
            self.assertEqual(o.intermediate_values, {m["step"] - 1: m["value"] for m in t["measurements"]}, what)
            # The budget banditd gave is where the loop stopped (or the loop's own end).
            self.assertEqual(len(steps), min(int(t["budget"]), EPOCHS) if multi_fidelity else EPOCHS, what)
            self.assertEqual(t["value"], t["measurements"][-1]["value"], what)
            self.assertEqual(o.value, t["value"], what)
            self.assertEqual(o.system_attrs["banditd_budget"], t["budget"], what)
        doc = self.c.get_study(bid)
        inc = doc["incumbent"]
        self.assertEqual(study.best_params, inc["config"])
        self.assertEqual(study.best_value, inc["value"])
        self.assertEqual(study.best_trial._trial_id, inc["trial_id"])
        self.assertEqual(study.best_value, max(t.value for t in seen))
        df = study.trials_dataframe()
        self.assertEqual(len(df), len(trials))
        self.assertEqual(list(df["number"]), list(range(len(trials))))
        self.assertEqual(list(df["params_alpha"]), [t["config"]["alpha"] for t in trials])
        self.assertEqual(list(df["value"]), [t["value"] for t in trials])
        self.assertEqual(set(df["state"]), {"COMPLETE"})
        self.assertEqual(list(df["system_attrs_banditd_budget"]), [t["budget"] for t in trials])
        return trials, doc

    def test_hyperband_until_done(self):
        study = self.create({"name": "hyperband", "options": {"eta": 3}},
                            resource={"name": "epochs", "min": 1, "max": 9, "integer": True})
        study.optimize(objective)  # no n_trials: until banditd says done
        trials, doc = self.check(study, multi_fidelity=True)
        self.assertTrue(doc["done"], doc["trials"])
        self.assertEqual(sorted({t["budget"] for t in trials}), [1, 3, 9])
        # A promotion is a new trial of the same config at a larger budget (retrained from scratch).
        promoted = [t for t in trials if t["resume_from"]]
        self.assertTrue(promoted)
        self.assertEqual(doc["objective"]["goal"], "maximize")

    def test_hyperband_two_jobs_wait_for_rungs(self):
        """Two threads on synchronous brackets: a thread that suggest tells to
        wait (retry_after_ms) waits in ask(); both end when the study is done."""
        study = self.create({"name": "hyperband", "options": {"eta": 3}},
                            resource={"name": "epochs", "min": 1, "max": 3, "integer": True})
        study.optimize(objective, n_jobs=2)
        trials, doc = self.check(study, multi_fidelity=True)
        self.assertTrue(doc["done"], doc["trials"])
        self.assertEqual(sorted({t["budget"] for t in trials}), [1, 3])

    def test_timeout_and_heartbeat(self):
        """optimize(timeout=) starts no trial after it; a trial longer than its
        lease completes, its lease renewed by the bridge's heartbeat."""
        import time
        study = self.create("random", direction="minimize", search_space={"x": FloatDistribution(0.0, 1.0)},
                            lease_seconds=0.5)

        def slow(trial):
            time.sleep(1.2)  # more than two leases, without a report
            return trial.suggest_float("x", 0.0, 1.0)

        started = time.monotonic()
        study.optimize(slow, timeout=2.0, n_jobs=2)
        self.assertLess(time.monotonic() - started, 6.0)
        trials = list(self.c.list_trials(study.banditd_id))
        self.assertTrue(2 <= len(trials) <= 6, trials)
        self.assertEqual({t["state"] for t in trials}, {"completed"}, "no lease ran out")
        self.assertEqual([t.state for t in study.trials], [TrialState.COMPLETE] * len(trials))

    def test_asha_two_jobs(self):
        study = self.create({"name": "asha", "options": {"eta": 3, "max_trials": 24}},
                            resource={"name": "epochs", "min": 1, "max": 9, "integer": True})
        study.optimize(objective, n_jobs=2)
        trials, doc = self.check(study, multi_fidelity=True)
        self.assertEqual(len(trials), 24)
        self.assertTrue(doc["done"])
        self.assertEqual(len({t["worker"] for t in trials}), 2, "two threads, two banditd workers")
        self.assertGreater(max(t["budget"] for t in trials), 1, "ASHA promoted configs")

    def test_tpe_define_by_run(self):
        study = self.create({"name": "tpe", "options": {"max_trials": 12, "n_startup_trials": 5}},
                            search_space=None)
        doc = self.c.get_study(study.banditd_id)  # created by create_study, with no parameters
        self.assertEqual((doc["parameters"], doc.get("asked_parameters", [])), ([], []))
        study.optimize(objective, n_trials=30)
        doc = self.c.get_study(study.banditd_id)
        self.assertEqual(doc["asked_parameters"], to_parameters(SPACE), "in the order the objective asks")
        trials, doc = self.check(study, multi_fidelity=False)
        self.assertEqual(len(trials), 12, "max_trials ends the study before n_trials")
        self.assertEqual([t.distributions for t in study.trials], [SPACE] * 12)

    def test_gp_ucb_n_trials(self):
        study = self.create({"name": "gp_ucb", "options": {"n_init": 4}})
        study.optimize(objective, n_trials=7, n_jobs=2)
        trials, doc = self.check(study, multi_fidelity=False)
        self.assertEqual(len(trials), 7)
        self.assertFalse(doc["done"])

    def test_bo_bos_stops_are_pruned(self):
        """A scheduler that stops trials on a measurement: should_prune() is
        true after the stop, and the trial reads back PRUNED (banditd: stopped)."""
        digits = sklearn.datasets.load_digits()
        x, y = digits.data / 16.0, digits.target
        order = np.random.RandomState(0).permutation(len(x))
        x, y = x[order], y[order]

        def error(trial):  # the same pattern, minimizing the validation error
            clf = sklearn.linear_model.SGDClassifier(
                alpha=trial.suggest_float("alpha", 1e-6, 1e-1, log=True),
                eta0=trial.suggest_float("eta0", 1e-5, 1.0, log=True),
                loss=trial.suggest_categorical("loss", ["hinge", "log_loss", "modified_huber"]),
                learning_rate="constant", random_state=trial.number)
            for step in range(20):
                clf.partial_fit(x[:1200], y[:1200], classes=np.unique(y))
                trial.report(1.0 - clf.score(x[1200:], y[1200:]), step)
                if trial.should_prune():
                    raise optuna.TrialPruned()
            return 1.0 - clf.score(x[1200:], y[1200:])

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            study = self.create({"name": "bo_bos", "options": {"max_trials": 16, "n_init": 4, "paths": 2000}},
                                direction="minimize", search_space={
                                    "alpha": FloatDistribution(1e-6, 1e-1, log=True),
                                    "eta0": FloatDistribution(1e-5, 1.0, log=True),
                                    "loss": CategoricalDistribution(["hinge", "log_loss", "modified_huber"])},
                                resource={"name": "epochs", "min": 1, "max": 20, "integer": True})
            study.optimize(error, n_jobs=2)
        trials = list(self.c.list_trials(study.banditd_id, measurements=True))
        stopped = [t for t in trials if t["state"] == "stopped"]
        self.assertTrue(stopped, "BO-BOS stopped no trial")
        pruned = study.get_trials(states=(TrialState.PRUNED,))
        self.assertEqual(sorted(t._trial_id for t in pruned), sorted(t["id"] for t in stopped))
        for t in stopped:
            o = study.trials[[x._trial_id for x in study.trials].index(t["id"])]
            self.assertLess(len(t["measurements"]), 20, "stopped before its budget")
            self.assertEqual(o.value, t["measurements"][-1]["value"], "a pruned trial's value is its last")
            self.assertTrue(o.system_attrs["banditd_reason"])
        self.assertIn("PRUNED", set(study.trials_dataframe()["state"]))
        self.assertEqual(study.best_value, min(t.value for t in study.trials if t.state == TrialState.COMPLETE))

    def test_failures_pruning_and_attributes(self):
        study = self.create("random", direction="minimize", search_space={"x": FloatDistribution(0.0, 1.0)})

        def fn(trial):
            trial.set_user_attr("seen", trial.number)
            self.assertEqual(banditd.optuna.banditd_trial(trial)["id"], trial._trial_id)
            if trial.number == 1:
                raise ValueError("boom in trial 1")
            if trial.number == 2:
                trial.report(0.5, 0)
                raise optuna.TrialPruned()  # the objective's own decision, banditd did not stop it
            return quick(trial)

        with self.assertRaisesRegex(ValueError, "boom in trial 1"):
            study.optimize(fn, n_trials=5)
        study.optimize(fn, n_trials=4, catch=(ValueError,))
        study.set_user_attr("owner", "test")
        trials = list(self.c.list_trials(study.banditd_id))
        states = [t.state for t in study.trials]
        self.assertEqual(states, [TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED, TrialState.COMPLETE,
                                  TrialState.COMPLETE, TrialState.COMPLETE])
        self.assertEqual([t["state"] for t in trials], ["completed", "failed", "failed", "completed", "completed",
                                                          "completed"])
        self.assertEqual(trials[1]["reason"], "ValueError: boom in trial 1")
        self.assertEqual(trials[2]["reason"], banditd.optuna.PRUNED_REASON)
        self.assertEqual(study.trials[2].value, 0.5)
        self.assertEqual([t.user_attrs for t in study.trials], [{"seen": i} for i in range(6)])
        self.assertEqual(study.user_attrs, {"owner": "test"})
        self.assertEqual(set(study.trials_dataframe()["state"]), {"COMPLETE", "FAIL", "PRUNED"})
        with self.assertRaises(RuntimeError):
            study._storage.set_trial_user_attr(trials[0]["id"], "late", 1)

        # ask / tell, and a value the daemon cannot store (inf: completed as diverged).
        trial = study.ask()
        self.assertEqual(trial.suggest_float("x", 0.0, 1.0), trial.params["x"])
        study.tell(trial, 0.25)
        trial = study.ask()
        study.tell(trial, math.inf)
        last = list(self.c.list_trials(study.banditd_id))[-2:]
        self.assertEqual([(t["state"], t["value"]) for t in last], [("completed", 0.25), ("completed", None)])
        self.assertEqual(study.trials[-1].value, math.inf)

        # A parameter the study did not declare is asked for (define-by-run); the same name
        # with another distribution is refused, naming the key that differs.
        trial = study.ask()
        y = trial.suggest_float("y", 0.0, 1.0)
        self.assertEqual(trial.params, {"x": trial.params["x"], "y": y})
        self.assertEqual(self.c.get_trial(trial._trial_id)["config"], trial.params)
        other = study.ask()
        with self.assertRaisesRegex(ValueError, "another high.*field high"):
            other.suggest_float("y", 0.0, 2.0)
        study.tell(other, state=TrialState.FAIL)
        study.tell(trial, state=TrialState.FAIL)

    def test_stepped_int_and_single_values(self):
        space = {"n": IntDistribution(2, 10, step=2), "q": FloatDistribution(0.0, 1.0, step=0.25),
                 "c": CategoricalDistribution([True, False]), "one": IntDistribution(3, 3)}
        self.assertEqual(to_parameters(space), [
            {"name": "n", "type": "categorical", "choices": [2, 4, 6, 8, 10]},
            {"name": "q", "type": "categorical", "choices": [0.0, 0.25, 0.5, 0.75, 1.0]},
            {"name": "c", "type": "categorical", "choices": [True, False]},
            {"name": "one", "type": "categorical", "choices": [3]}])
        with self.assertRaisesRegex(ValueError, "not None"):
            to_parameters({"c": CategoricalDistribution([None, "a"])})
        study = self.create({"name": "random", "options": {"max_trials": 6}}, direction="minimize",
                            search_space=space)
        got = []

        def fn(trial):
            n = trial.suggest_int("n", 2, 10, step=2)
            q = trial.suggest_float("q", 0.0, 1.0, step=0.25)
            c = trial.suggest_categorical("c", [True, False])
            one = trial.suggest_int("one", 3, 3)
            got.append((n, q, c, one))
            return n * q

        study.optimize(fn)
        self.assertEqual(len(got), 6)
        for n, q, c, one in got:
            self.assertIs(type(n), int)
            self.assertIn(n, (2, 4, 6, 8, 10))
            self.assertIn(q, (0.0, 0.25, 0.5, 0.75, 1.0))
            self.assertIs(type(c), bool)
            self.assertEqual(one, 3)
        self.assertEqual([tuple(t.params[k] for k in ("n", "q", "c", "one")) for t in study.trials], got)

    def test_enqueue_trial_and_add_trial(self):
        study = self.create("tpe", direction="minimize", search_space={"x": FloatDistribution(0.0, 1.0)})
        study.add_trial(optuna.trial.create_trial(params={"x": 0.3}, distributions={"x": FloatDistribution(0.0, 1.0)},
                                                  value=0.0))
        study.enqueue_trial({"x": 0.125})
        study.enqueue_trial({"x": 0.875})
        study.optimize(quick, n_trials=3)
        xs = [t.params.get("x") for t in study.trials]
        self.assertEqual(xs[:3], [0.3, 0.125, 0.875], "the warm start first, then the enqueued ones in order")
        self.assertEqual(study.best_params, {"x": 0.3}, "the added trial (value 0) is the best")
        trials = bdtest.list_all_trials(self.d, study.banditd_id)
        self.assertEqual([t["origin"] for t in trials[:3]], ["warm_start", "enqueued", "enqueued"])

    def test_enqueue_on_a_step_grid_snaps_to_it(self):
        # 0.1 * 3 computed is 0.30000000000000004: banditd's grid holds the computed value
        study = self.create("random", direction="minimize", search_space={"x": FloatDistribution(0.0, 1.0, step=0.1)})
        study.enqueue_trial({"x": 0.3})
        with self.assertRaisesRegex(ValueError, "'x': 0.36 is not on its grid"):
            study.enqueue_trial({"x": 0.36})
        study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0, step=0.1), n_trials=1)
        self.assertAlmostEqual(study.trials[0].params["x"], 0.3, places=12)

    def test_load_if_exists_and_duplicates(self):
        name = bdtest.unique_name("dup")
        kwargs = dict(url=self.url, token=self.d.token, study_name=name, scheduler="random",
                      search_space={"x": FloatDistribution(0.0, 1.0)})
        first = banditd.optuna.create_study(**kwargs)
        with self.assertRaises(optuna.exceptions.DuplicatedStudyError):
            banditd.optuna.create_study(**kwargs)
        again = banditd.optuna.create_study(load_if_exists=True, **kwargs)
        self.assertEqual(again.banditd_id, first.banditd_id)
        with self.assertRaises(BanditdError):
            banditd.optuna.create_study(url=self.url, token="bdt_wrong", study_name=bdtest.unique_name("x"),
                                        scheduler="random", search_space={"x": FloatDistribution(0.0, 1.0)})

    def test_the_study_exists_when_create_study_returns(self):
        """ask, tell and enqueue_trial at once; a taken name is refused by
        create_study itself; load_if_exists=True and load_study load the
        stored study with its trials, whatever its definition; trial numbers
        count from 0 in each study."""
        name = bdtest.unique_name("now")
        first = banditd.optuna.create_study(url=self.url, token=self.d.token, study_name=name)
        other = banditd.optuna.create_study(url=self.url, token=self.d.token, study_name=bdtest.unique_name("o"))
        first.enqueue_trial({"x": 0.5})
        for study, value in ((first, 1.0), (other, 2.0), (first, 3.0), (other, 4.0)):
            trial = study.ask()
            study.tell(trial, trial.suggest_float("x", 0.0, 1.0) + value)
        self.assertEqual([t.number for t in first.trials], [0, 1])
        self.assertEqual([t.number for t in other.trials], [0, 1])
        self.assertEqual(first.trials[0].params, {"x": 0.5})
        self.assertEqual(first.trials[0].value, 1.5)
        with self.assertRaisesRegex(optuna.exceptions.DuplicatedStudyError, "already exists"):
            banditd.optuna.create_study(url=self.url, token=self.d.token, study_name=name)
        again = banditd.optuna.create_study(url=self.url, token=self.d.token, study_name=name, load_if_exists=True,
                                            direction="maximize", pruner=optuna.pruners.NopPruner())
        self.assertEqual(again.banditd_id, first.banditd_id)
        self.assertEqual(again.direction, optuna.study.StudyDirection.MINIMIZE, "as stored, as Optuna does")
        self.assertEqual([(t.number, t.params, t.value) for t in again.trials],
                         [(t.number, t.params, t.value) for t in first.trials])
        loaded = banditd.optuna.load_study(study_name=name, url=self.url, token=self.d.token)
        self.assertEqual(loaded.best_trial.number, 0)
        self.assertEqual(loaded.trials[1].distributions, {"x": FloatDistribution(0.0, 1.0)})
        loaded.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=2)
        self.assertEqual([t.number for t in first.trials], [0, 1, 2, 3])
        with self.assertRaisesRegex(KeyError, "no banditd study named"):
            banditd.optuna.load_study(study_name=bdtest.unique_name("none"), url=self.url, token=self.d.token)

    def test_sampler_and_pruner_map_to_schedulers(self):
        mf = {"name": "steps", "min": 1, "max": banditd.optuna.DEFAULT_MAX_STEPS, "integer": True}
        rule = {"type": "stopping", "promotion": "current", "promotion_fraction": "eta"}
        median = {"rule": "median", "startup_trials": 5, "warmup_steps": 0, "interval_steps": 1, "min_trials": 1}
        cases = [
            ((None, None), ({"name": "tpe", "options": {"stopping": median}}, None)),
            ((None, optuna.pruners.NopPruner()), ({"name": "tpe", "options": {}}, None)),
            ((optuna.samplers.RandomSampler(seed=1), optuna.pruners.NopPruner()), ({"name": "random", "options": {}},
                                                                                  None)),
            ((optuna.samplers.TPESampler(n_startup_trials=4, multivariate=True), optuna.pruners.NopPruner()),
             ({"name": "tpe", "options": {"n_startup_trials": 4, "multivariate": True}}, None)),
            ((optuna.samplers.RandomSampler(), optuna.pruners.MedianPruner(n_warmup_steps=4)),
             ({"name": "random", "options": {"stopping": dict(median, warmup_steps=4)}}, None)),
            ((None, optuna.pruners.PercentilePruner(25.0, n_startup_trials=2, interval_steps=3, n_min_trials=4)),
             ({"name": "tpe", "options": {"stopping": dict(median, rule="percentile", percentile=25.0,
                                                           startup_trials=2, interval_steps=3, min_trials=4)}},
              None)),
            ((None, optuna.pruners.SuccessiveHalvingPruner(min_resource=2, reduction_factor=3,
                                                            min_early_stopping_rate=1)),
             ({"name": "asha", "options": dict(rule, eta=3, s=1, sampler="tpe")}, dict(mf, min=2))),
            ((None, optuna.pruners.HyperbandPruner(min_resource=1, max_resource=27, reduction_factor=3)),
             ({"name": "hyperband", "options": {"type": "stopping", "eta": 3, "iterations": 0, "sampler": "tpe"}},
              dict(mf, max=27))),
            ((None, optuna.pruners.HyperbandPruner()),  # 3^13: rungs at 1, 3, 9, ... as Optuna's
             ({"name": "hyperband", "options": {"type": "stopping", "eta": 3, "iterations": 0, "sampler": "tpe"}},
              dict(mf, max=3 ** 13))),
        ]
        for (sampler, pruner), want in cases:
            self.assertEqual(banditd.optuna.scheduler_for(sampler, pruner), want, (sampler, pruner))
        kwargs = dict(url=self.url, token=self.d.token)
        refused = [
            (dict(sampler=optuna.samplers.CmaEsSampler()), ValueError, r"sampler=CmaEsSampler\(\): .*TPESampler"),
            (dict(sampler=optuna.samplers.GridSampler({"x": [0, 1]})), ValueError, "sampler=GridSampler.*enqueue"),
            (dict(pruner=optuna.pruners.PatientPruner(None, 3)), ValueError, "pruner=PatientPruner.*MedianPruner"),
            (dict(pruner=optuna.pruners.ThresholdPruner(upper=1.0)), ValueError, "pruner=ThresholdPruner"),
            (dict(sampler=optuna.pruners.MedianPruner()), ValueError, "that is a pruner, not a sampler"),
            (dict(n_constraints=2), ValueError, "n_constraints=2 without a sampler with constraints_func"),
            (dict(storage="sqlite:///x.db"), ValueError, "storage=.*url="),
            (dict(scheduler="tpe", sampler=optuna.samplers.RandomSampler()), ValueError, "not both"),
        ]
        for extra, error, message in refused:
            with self.assertRaisesRegex(error, message, msg=extra):
                banditd.optuna.create_study(study_name=bdtest.unique_name("refused"), **kwargs, **extra)
        # A study with Optuna's defaults is created as the table says (the warm-up counts banditd's
        # steps: Optuna's step + step_offset, 1 by default).
        study = banditd.optuna.create_study(directions=["maximize"], **kwargs)
        doc = self.c.get_study(study.banditd_id)
        self.assertEqual((doc["scheduler"]["name"], doc["scheduler"]["options"]["stopping"],
                          doc["resource"]["name"], doc["objective"]["goal"]),
                         ("tpe", dict(median, warmup_steps=1), "units", "maximize"))  # units: none given

    def test_median_pruner_stops_and_best_is_complete(self):
        """The pruning example with MedianPruner (tpe with the median rule): a
        stopped trial is PRUNED (at its last epoch too, as Optuna asks the
        pruner after every report; which trial is pruned where depends on the
        two threads' timing), no trial is retrained,
        the others run all epochs and complete, and best_trial is the best of
        those (Optuna's rule)."""
        study = banditd.optuna.create_study(url=self.url, token=self.d.token, direction="maximize",
                                            pruner=optuna.pruners.MedianPruner(), seed=5)
        study.optimize(objective, n_trials=14, n_jobs=2)
        trials = list(self.c.list_trials(study.banditd_id, measurements=True))
        self.assertEqual(len(trials), 14)
        self.assertEqual([t["resume_from"] for t in trials], [None] * 14, "nothing retrained")
        stopped = [t for t in trials if t["state"] == "stopped"]
        completed = [t for t in trials if t["state"] == "completed"]
        self.assertTrue(stopped and completed, [t["state"] for t in trials])
        self.assertEqual(len(stopped) + len(completed), 14)
        for t in stopped:
            self.assertLessEqual(len(t["measurements"]), EPOCHS, t)
            self.assertTrue(t["reason"].startswith("median rule"), t)
        for t in completed:
            self.assertEqual(len(t["measurements"]), EPOCHS, t)
        pruned = study.get_trials(states=(TrialState.PRUNED,))
        self.assertEqual(sorted(t._trial_id for t in pruned), sorted(t["id"] for t in stopped))
        self.assertEqual(study.best_trial.state, TrialState.COMPLETE)
        self.assertEqual(study.best_value, max(t["value"] for t in completed))
        self.assertEqual(sorted(t.number for t in study.trials), list(range(14)))

    def test_conditional_params_hold_what_the_trial_asked(self):
        study = banditd.optuna.create_study(url=self.url, token=self.d.token, sampler=optuna.samplers.TPESampler(),
                                            pruner=optuna.pruners.NopPruner())

        def fn(trial):
            if trial.suggest_categorical("kind", ["a", "b"]) == "a":
                return (trial.suggest_float("a_x", -1.0, 1.0) - 0.25) ** 2
            return 0.5 + trial.suggest_int("b_n", 1, 4)

        study.optimize(fn, n_trials=12)
        kinds = {t.params["kind"] for t in study.trials}
        self.assertEqual(kinds, {"a", "b"})
        for t in study.trials:
            self.assertEqual(set(t.params), {"kind", "a_x"} if t.params["kind"] == "a" else {"kind", "b_n"})
            self.assertEqual(set(t.distributions), set(t.params))
        best = study.best_trial
        self.assertEqual(set(best.params), {"kind", "a_x"} if best.params["kind"] == "a" else {"kind", "b_n"})
        doc = self.c.get_study(study.banditd_id)
        self.assertEqual([p["name"] for p in doc["asked_parameters"]][:1], ["kind"])
        self.assertEqual({p["name"] for p in doc["asked_parameters"]}, {"kind", "a_x", "b_n"})

    def test_example_as_a_user_runs_it(self):
        plain = os.path.join(EXAMPLES, "optuna_pruning_plain.py")
        ours = os.path.join(EXAMPLES, "optuna_pruning.py")
        self.assertEqual(changed_lines(plain, ours), {"docstring", "import", "create_study"})
        token = os.path.join(self.d.tmpdir, "example-token")
        with open(token, "w") as f:
            f.write(self.d.token)
        env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "clients", "python"), PYTHONDONTWRITEBYTECODE="1")
        got = subprocess.run(["/usr/bin/python3", ours, self.url, token], capture_output=True, text=True, env=env,
                             cwd=self.d.tmpdir, timeout=240)
        self.assertEqual(got.returncode, 0, got.stderr[-3000:])
        (study,) = self.c.list_studies(name="optuna-pruning")
        study = self.c.get_study(study["id"])
        self.assertTrue(study["done"], study["trials"])
        self.assertEqual(study["trials"]["total"], study["trials"]["completed"])
        inc = study["incumbent"]
        self.assertEqual(got.stdout.strip().splitlines()[-1],
                         "best accuracy %.4f with %s" % (inc["value"], inc["config"]))


def changed_lines(a_path, b_path):
    """What kind of statement each line that differs between the two files
    belongs to (docstring, import, create_study, other)."""
    kinds = set()
    files = []
    for path in (a_path, b_path):
        with open(path) as f:
            text = f.read()
        where = {}
        for node in ast.walk(ast.parse(text)):
            kind = None
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node.lineno == 1:
                kind = "docstring"
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                kind = "import"
            elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                  and getattr(node.value.func, "attr", None) == "create_study"):
                kind = "create_study"
            if kind:
                for line in range(node.lineno, node.end_lineno + 1):
                    where[line] = kind
        files.append((text.splitlines(), where))
    (a, wa), (b, wb) = files
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for i in range(i1, i2):
            kinds.add(wa.get(i + 1, "other") if a[i].strip() else "blank")
        for j in range(j1, j2):
            kinds.add(wb.get(j + 1, "other") if b[j].strip() else "blank")
    kinds.discard("blank")
    return kinds


if __name__ == "__main__":
    unittest.main()
