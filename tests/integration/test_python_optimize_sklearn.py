"""Study.optimize (clients/python/banditd/optimize.py) on real training against
a real banditd: scikit-learn's SGDClassifier trained with partial_fit on the
bundled digits dataset, one report per epoch, two worker threads.

- Hyperband: promotions resume the parent's model (report.trial's
  resume_from), configs the brackets drop stop below resource.max epochs, and
  every trial ends completed with one measurement per epoch it trained.
- BO-BOS: the scheduler answers "stop" to measurements of trials it judges
  worse than the incumbent; report() raises TrialStopped in the objective,
  which ends there, and the daemon records those trials as stopped.
- clients/examples/optimize_digits.py, the README's complete tuning loop, as
  a user runs it (and the README shows that file verbatim)."""

import copy
import os
import subprocess
import sys
import threading
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("BD_SOURCE_DIR") or os.path.join(HERE, "..", ".."),
                                "clients", "python"))
import bdtest  # noqa: E402
from banditd import Client, TrialStopped  # noqa: E402

try:
    import warnings

    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDClassifier
    HAVE_SKLEARN = True
except ImportError:
    HAVE_SKLEARN = False

SPACE = [{"name": "alpha", "type": "float", "low": 1e-6, "high": 1e-1, "log": True},
         {"name": "eta0", "type": "float", "low": 1e-5, "high": 1.0, "log": True},
         {"name": "loss", "type": "categorical", "choices": ["hinge", "log_loss", "modified_huber"]}]


class DigitsObjective:
    """fn(config, budget, report): trains up to `budget` epochs (cumulative),
    reporting the validation error after each; a promoted trial resumes its
    parent's model from an in-memory checkpoint. Records what it did."""

    def __init__(self):
        digits = load_digits()
        x = digits.data / 16.0
        rng = np.random.RandomState(0)
        order = rng.permutation(len(x))
        x, y = x[order], digits.target[order]
        self.xt, self.yt, self.xv, self.yv = x[:1200], y[:1200], x[1200:], y[1200:]
        self.classes = np.unique(y)
        self.lock = threading.Lock()
        self.checkpoints = {}  # trial id -> (model, epochs)
        self.steps = {}  # trial id -> epochs reported
        self.resumed = 0
        self.stopped_in_fn = []  # (trial id, step, reason) seen by fn

    def __call__(self, config, budget, report):
        tid, parent = report.trial["id"], report.trial.get("resume_from")
        with self.lock:
            ckpt = self.checkpoints.get(parent) if parent else None
        if ckpt is not None:
            model, epochs = copy.deepcopy(ckpt[0]), ckpt[1]
            with self.lock:
                self.resumed += 1
        else:
            model = SGDClassifier(loss=config["loss"], alpha=config["alpha"], eta0=config["eta0"],
                                  learning_rate="constant", random_state=report.trial["config_id"])
            epochs = 0
        error = None
        try:
            while epochs < int(budget):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model.partial_fit(self.xt, self.yt, classes=self.classes)
                epochs += 1
                error = 1.0 - float(model.score(self.xv, self.yv))
                with self.lock:
                    self.steps.setdefault(tid, []).append(epochs)
                report(epochs, error)
        except TrialStopped as e:
            with self.lock:
                self.stopped_in_fn.append((tid, e.step, e.reason))
            raise
        finally:
            with self.lock:
                self.checkpoints[tid] = (model, epochs)
        return error


@unittest.skipUnless(HAVE_SKLEARN, "python3-sklearn is not installed (docker/install-deps.sh --test installs it)")
class OptimizeSklearn(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(lease_seconds=60)
        cls.c = Client("http://127.0.0.1:%d" % cls.d.port, cls.d.token, timeout=30)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.d.cleanup()

    def final_states(self, study, result):
        trials = list(self.c.list_trials(study.id))
        self.assertEqual(len(trials), result.trials, "the loop ran every trial of the study")
        states = {}
        for t in trials:
            states[t["state"]] = states.get(t["state"], 0) + 1
        self.assertNotIn("running", states, trials)
        self.assertNotIn("expired", states, trials)
        return trials, states

    def test_hyperband_two_workers(self):
        fn = DigitsObjective()
        study = self.c.study(bdtest.unique_name("hb"), SPACE, "hyperband", options={"eta": 3}, seed=5,
                             objective={"metric": "val_error", "goal": "minimize"},
                             resource={"name": "epochs", "min": 1, "max": 9, "integer": True})
        result = study.optimize(fn, n_workers=2, worker_name="hb")
        self.assertEqual(result.stop_reason, "done", result)
        trials, states = self.final_states(study, result)
        self.assertEqual(states, {"completed": len(trials)}, "fn never fails and Hyperband never stops")
        self.assertEqual((result.completed, result.failed, result.lost), (len(trials), 0, 0), result)
        self.assertEqual({t["worker"] for t in trials}, {"hb-0", "hb-1"}, "both workers ran trials")
        # The brackets stop most configs early: they end below resource.max.
        reached = {}
        for t in trials:
            reached[t["config_id"]] = max(reached.get(t["config_id"], 0), t["budget"])
        dropped = [c for c, b in reached.items() if b < 9]
        self.assertGreater(len(dropped), len(reached) // 2, reached)
        self.assertTrue(any(b == 9 for b in reached.values()), reached)
        # Each trial reported one measurement per epoch it trained, up to its budget.
        for t in trials:
            got = [m["step"] for m in self.c.get_trial(t["id"])["measurements"]]
            first = 1
            if t["resume_from"]:
                first = int(self.c.get_trial(t["resume_from"])["budget"]) + 1
            self.assertEqual(got, list(range(first, int(t["budget"]) + 1)), t)
            self.assertEqual(fn.steps.get(t["id"], []), got, t)
        self.assertGreater(fn.resumed, 0, "promotions resumed a checkpoint")
        self.assertEqual(fn.stopped_in_fn, [])
        best = self.c.get_study(study.id)["incumbent"]
        self.assertEqual((result.best_trial_id, result.best_value, result.best_config),
                         (best["trial_id"], best["value"], best["config"]))
        self.assertEqual(result.best_value, min(t["value"] for t in trials))
        self.assertLess(result.best_value, 0.2, "a tuned linear model on digits")

    def test_bo_bos_stops_trials_through_report(self):
        fn = DigitsObjective()
        study = self.c.study(bdtest.unique_name("bos"), SPACE, "bo_bos", seed=3,
                             options={"max_trials": 16, "n_init": 4, "paths": 2000},
                             objective={"metric": "val_error", "goal": "minimize"},
                             resource={"name": "epochs", "min": 1, "max": 20, "integer": True})
        result = study.optimize(fn, n_workers=2)
        self.assertEqual(result.stop_reason, "done", result)
        trials, states = self.final_states(study, result)
        self.assertEqual(result.trials, 16)
        stopped = [t for t in trials if t["state"] == "stopped"]
        self.assertGreater(len(stopped), 0, "BO-BOS stopped no trial: %r" % states)
        self.assertEqual(result.stopped, len(stopped))
        self.assertEqual(result.completed, states.get("completed", 0))
        self.assertEqual(states.get("completed", 0) + len(stopped), 16, states)
        # fn saw each stop as TrialStopped at the measurement the daemon answered "stop".
        seen = {tid: step for tid, step, _ in fn.stopped_in_fn}
        self.assertEqual(sorted(seen), sorted(t["id"] for t in stopped))
        for t in stopped:
            full = self.c.get_trial(t["id"])
            self.assertEqual(full["measurements"][-1]["step"], seen[t["id"]], full)
            self.assertLess(seen[t["id"]], 20, "stopped early, before the last epoch")
            self.assertTrue(full.get("reason"), full)

    def test_readme_tuning_loop(self):
        """clients/examples/optimize_digits.py, the complete loop shown in
        clients/README.md (the same text), run as a user runs it."""
        source = os.environ.get("BD_SOURCE_DIR") or os.path.join(HERE, "..", "..")
        path = os.path.join(source, "clients", "examples", "optimize_digits.py")
        with open(path) as f:
            program = f.read()
        with open(os.path.join(source, "clients", "README.md")) as f:
            readme = f.read()
        self.assertIn("```python\n" + program + "```\n", readme, "the README shows optimize_digits.py verbatim")
        token = os.path.join(self.d.tmpdir, "example-token")
        with open(token, "w") as f:
            f.write(self.d.token)
        env = dict(os.environ, PYTHONPATH=os.path.join(source, "clients", "python"), PYTHONDONTWRITEBYTECODE="1")
        got = subprocess.run(["/usr/bin/python3", path, "http://127.0.0.1:%d" % self.d.port, token],
                             capture_output=True, text=True, env=env, cwd=self.d.tmpdir, timeout=240)
        self.assertEqual(got.returncode, 0, got.stderr[-3000:])
        (study,) = [s for s in self.c.list_studies() if s["name"] == "digits-sgd"]
        study = self.c.get_study(study["id"])
        self.assertTrue(study["done"], study["trials"])
        self.assertEqual(study["trials"]["total"], study["trials"]["completed"], study["trials"])
        best = study["incumbent"]
        self.assertEqual(got.stdout.strip(), "best validation error %.4f with %s" % (best["value"], best["config"]))
        self.assertLess(best["value"], 0.2, got.stdout)


if __name__ == "__main__":
    unittest.main()
