"""Study.optimize (clients/python/banditd/optimize.py) against a real banditd:
how the loop sends each outcome of the objective and each answer of the daemon.
NaN or inf (returned or reported) -> completed with value null (diverged); an
exception -> failed with its text, the loop goes on, max_failures ends it;
heartbeats keep a trial longer than its lease alive (and without them the same
trial expires); retry_after_ms when the study has no free work; done, n_trials
and timeout end the loop; KeyboardInterrupt fails the running trials; a dict
with status "timeout" for an instance-based study; Client.study create / load."""

import os
import signal
import sys
import threading
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("BD_SOURCE_DIR") or os.path.join(HERE, "..", ".."),
                                "clients", "python"))
import bdtest  # noqa: E402
from banditd import BanditdError, Client, TooManyFailures, TrialStopped  # noqa: E402

PARAMS = [{"name": "x", "type": "float", "low": 0.0, "high": 1.0}]
LOSS = {"metric": "loss", "goal": "minimize"}


class Optimize(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(lease_seconds=60)
        cls.c = Client("http://127.0.0.1:%d" % cls.d.port, cls.d.token, timeout=10, backoff=0.05)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.d.cleanup()

    def random_study(self, max_trials, **kw):
        return self.c.study(bdtest.unique_name("opt"), PARAMS, "random", options={"max_trials": max_trials},
                            objective=LOSS, seed=4, **kw)

    def trials(self, study):
        return list(self.c.list_trials(study.id))

    def test_done_ends_the_loop(self):
        study = self.random_study(7)
        seen = []
        lock = threading.Lock()

        def fn(config, budget, report):
            with lock:
                seen.append(report.trial["id"])
            return (config["x"] - 0.25) ** 2
        r = study.optimize(fn, n_workers=3, worker_name="w")
        self.assertEqual((r.stop_reason, r.trials, r.completed, r.failed), ("done", 7, 7, 0), r)
        ts = self.trials(study)
        self.assertEqual(sorted(seen), sorted(t["id"] for t in ts))
        self.assertEqual({t["state"] for t in ts}, {"completed"})
        best = min(ts, key=lambda t: t["value"])
        self.assertEqual((r.best_trial_id, r.best_value, r.best_config), (best["id"], best["value"], best["config"]))
        self.assertTrue(all(t["worker"] in ("w-0", "w-1", "w-2") for t in ts), ts)
        # A second call on the finished study ends at once.
        again = study.optimize(fn, n_workers=2)
        self.assertEqual((again.stop_reason, again.trials), ("done", 0))

    def test_n_trials_and_timeout_bound_the_loop(self):
        study = self.random_study(1000)
        r = study.optimize(lambda config, budget, report: config["x"], n_workers=2, n_trials=5)
        self.assertEqual((r.stop_reason, r.trials, r.completed), ("n_trials", 5, 5), r)
        self.assertEqual(len(self.trials(study)), 5)

        t0 = time.monotonic()

        def slow(config, budget, report):
            time.sleep(0.2)
            return config["x"]
        r = study.optimize(slow, n_workers=2, timeout=1.0)
        took = time.monotonic() - t0
        self.assertEqual(r.stop_reason, "timeout", r)
        self.assertLess(took, 10.0)
        self.assertGreater(r.trials, 0)
        self.assertEqual(r.completed, r.trials)
        self.assertEqual({t["state"] for t in self.trials(study)}, {"completed"}, "running trials finish")

    def test_nan_and_inf_are_diverged(self):
        study = self.random_study(4)

        def fn(config, budget, report):
            n = report.trial["id"] % 4
            if n == 0:
                return float("nan")
            if n == 1:
                return {"value": float("inf")}
            if n == 2:
                report(1, 0.5)
                report(2, float("nan"))  # raises TrialStopped: the trial is over
                raise AssertionError("report(nan) returned")
            return 0.5
        r = study.optimize(fn)
        self.assertEqual((r.trials, r.completed, r.diverged, r.failed), (4, 4, 3, 0), r)
        ts = {t["id"] % 4: self.c.get_trial(t["id"]) for t in self.trials(study)}
        for n in (0, 1, 2):
            self.assertEqual(ts[n]["state"], "completed", ts[n])
            self.assertIsNone(ts[n].get("value"), ts[n])
            self.assertIn("diverged", ts[n]["reason"])
        self.assertIn("nan", ts[0]["reason"])
        self.assertIn("inf", ts[1]["reason"])
        self.assertEqual([m["step"] for m in ts[2]["measurements"]], [1], "the nan was not sent as a measurement")
        self.assertEqual(ts[3]["value"], 0.5)
        self.assertEqual(r.best_value, 0.5)

    def test_exception_fails_the_trial_and_the_loop_goes_on(self):
        study = self.random_study(6)

        def fn(config, budget, report):
            if report.trial["id"] % 2:
                raise ValueError("bad config %d" % report.trial["id"])
            if report.trial["id"] % 3 == 0:
                return "not a number"
            return config["x"]
        # random search hands out new trials until 6 have completed: the failures come on top.
        r = study.optimize(fn, n_workers=2, max_failures=100)
        ts = self.trials(study)
        failed = [t for t in ts if t["state"] == "failed"]
        self.assertEqual(r.failed, len(failed))
        self.assertEqual((r.completed, r.completed + r.failed, r.stop_reason), (6, r.trials, "done"), r)
        for t in failed:
            if t["id"] % 2:
                self.assertEqual(t["reason"], "ValueError: bad config %d" % t["id"])
            else:
                self.assertIn("fn returned 'not a number'", t["reason"])
        self.assertGreater(r.completed, 0)
        self.assertGreater(r.failed, 0)

    def test_max_failures_ends_the_loop(self):
        study = self.random_study(100)

        def fn(config, budget, report):
            report(1, 0.3)
            raise RuntimeError("always")
        with self.assertRaises(TooManyFailures) as ctx:
            study.optimize(fn, n_workers=2, max_failures=3)
        r = ctx.exception.result
        self.assertEqual(r.stop_reason, "max_failures")
        ts = self.trials(study)
        self.assertEqual({t["state"] for t in ts}, {"failed"})
        # Both workers may have had a trial running when the third failed.
        self.assertIn(len(ts), (3, 4))
        self.assertEqual(r.failed, len(ts))
        self.assertIn("RuntimeError: always", str(ctx.exception))

    def test_heartbeats_keep_a_trial_past_its_lease(self):
        study = self.random_study(2, lease_seconds=1)
        self.assertEqual(study.doc["lease_seconds"], 1)

        def fn(config, budget, report):
            time.sleep(3.0)  # three leases without a report
            return 0.125
        r = study.optimize(fn, n_trials=1)
        self.assertEqual((r.completed, r.lost), (1, 0), r)
        (t,) = self.trials(study)
        self.assertEqual((t["state"], t["value"]), ("completed", 0.125))
        # The same run without heartbeats: the reaper expires the trial, complete is refused.
        (u,) = self.c.suggest(study.id)["trials"]
        time.sleep(3.0)
        with self.assertRaises(BanditdError) as ctx:
            self.c.complete(u["id"], value=0.125)
        self.assertEqual(ctx.exception.status, 409)
        self.assertEqual(self.c.get_trial(u["id"])["state"], "expired")

    def test_lost_trial_ends_fn_with_trial_stopped(self):
        study = self.random_study(1)
        seen = []

        def fn(config, budget, report):
            self.c.fail(report.trial["id"], reason="taken away")  # as if the lease had run out
            try:
                report(1, 0.5)
            except TrialStopped as e:
                seen.append(e.reason)
                raise
        r = study.optimize(fn, n_trials=1)  # random search would re-offer the failed slot forever
        self.assertEqual((r.trials, r.lost, r.completed, r.failed), (1, 1, 0, 0), r)
        self.assertEqual(len(seen), 1)
        self.assertIn("no longer runs", seen[0])

    def test_retry_after_when_no_work_is_free(self):
        study = self.random_study(2)
        held = self.c.suggest(study.id, count=2)["trials"]
        self.assertEqual(len(held), 2)
        self.assertGreater(self.c.suggest(study.id).get("retry_after_ms", 0), 0)
        r = study.optimize(lambda config, budget, report: 1.0, timeout=0.8)
        self.assertEqual((r.stop_reason, r.trials), ("timeout", 0), r)

        def release():
            for t in held:
                self.c.complete(t["id"], value=0.5)
        timer = threading.Timer(0.7, release)
        timer.start()
        self.addCleanup(timer.cancel)
        t0 = time.monotonic()
        r = study.optimize(lambda config, budget, report: 1.0, n_workers=2)
        self.assertGreater(time.monotonic() - t0, 0.6, "the loop waited for the held trials")
        self.assertEqual((r.stop_reason, r.trials), ("done", 0), r)
        self.assertEqual(r.best_value, 0.5)

    def test_keyboard_interrupt_fails_running_trials(self):
        study = self.random_study(100)
        started = threading.Barrier(2, timeout=10)
        stops = []

        def fn(config, budget, report):
            started.wait()  # both workers hold a trial
            if threading.current_thread().name.endswith("-0"):
                os.kill(os.getpid(), signal.SIGINT)
            try:
                for step in range(1, 200):
                    report(step, 0.5)
                    time.sleep(0.05)
            except TrialStopped as e:
                stops.append(e.reason)
                raise
            return 0.5
        with self.assertRaises(KeyboardInterrupt):
            study.optimize(fn, n_workers=2)
        ts = self.trials(study)
        self.assertEqual(len(ts), 2, ts)
        self.assertEqual({t["state"] for t in ts}, {"failed"})
        self.assertTrue(all("interrupted" in t["reason"] for t in ts), ts)
        self.assertEqual(len(stops), 2, "each fn saw TrialStopped at its next report")

        # One worker: the interrupt reaches fn itself.
        def fn1(config, budget, report):
            report(1, 0.5)
            raise KeyboardInterrupt
        with self.assertRaises(KeyboardInterrupt):
            study.optimize(fn1)
        ts = self.trials(study)
        self.assertEqual(len(ts), 3)
        self.assertEqual({t["state"] for t in ts}, {"failed"})

    def test_timeout_status_for_an_instance_study(self):
        study = self.c.study(bdtest.unique_name("spc"),
                             [{"name": "c", "type": "categorical", "choices": ["fast", "slow"]}],
                             {"name": "spc", "options": {"kappa0": 0.1}},
                             objective={"metric": "runtime", "goal": "minimize"},
                             resource={"name": "seconds", "min": 0.01, "max": 1.0},
                             instances=["a", "b", "c"])

        def fn(config, budget, report):
            self.assertIn(report.trial["instance"]["name"], ("a", "b", "c"))
            runtime = 0.005 if config["c"] == "fast" else 10.0  # a pretend solver's runtime
            if runtime >= budget:
                return {"status": "timeout"}
            return {"value": runtime, "runtime": runtime}
        r = study.optimize(fn, n_trials=20)
        # spc's finite stream settles every (config, instance) once and then is
        # done: "fast" solves a, b, c; "slow" times out at 0.1, 0.2, 0.4, 0.8
        # and 1.0 s on each: 3 + 15 runs, and optimize stops with the study.
        self.assertEqual((r.trials, r.completed, r.failed), (18, 18, 0), r)
        ts = self.trials(study)
        timeouts = [t for t in ts if t.get("timeout")]
        self.assertEqual(r.timeouts, len(timeouts))
        self.assertGreater(len(timeouts), 0)
        self.assertTrue(all(t["config"]["c"] == "slow" for t in timeouts), timeouts)
        self.assertEqual(r.best_config, {"c": "fast"})

    def test_study_create_and_load(self):
        name = bdtest.unique_name("load")
        a = self.c.study(name, PARAMS, "random", objective=LOSS, if_exists="load")
        b = self.c.study(name, PARAMS, "random", objective=LOSS, if_exists="load")
        self.assertEqual(a.id, b.id)
        self.assertEqual(self.c.study(study_id=a.id).name, name)
        with self.assertRaises(BanditdError) as ctx:  # the daemon's default: one study per name
            self.c.study(name, PARAMS, "random", objective=LOSS)
        self.assertEqual((ctx.exception.status, ctx.exception.field), (409, "name"))
        with self.assertRaises(BanditdError) as ctx:  # load with another definition
            self.c.study(name, PARAMS, "gp_ucb", objective=LOSS, if_exists="load")
        self.assertEqual(ctx.exception.status, 409)
        c = self.c.study(name, PARAMS, "random", objective=LOSS, if_exists="create")
        self.assertNotEqual(c.id, a.id, "if_exists=create makes a second study")
        with self.assertRaises(ValueError):
            self.c.study(name)
        with self.assertRaises(BanditdError) as ctx:
            self.c.study(study_id=10 ** 9)
        self.assertEqual(ctx.exception.status, 404)
        for bad in ({"n_workers": 0}, {"n_workers": 10 ** 6}, {"n_trials": 0}, {"timeout": -1},
                    {"max_failures": 0}):
            with self.assertRaises(ValueError, msg=repr(bad)):
                a.optimize(lambda config, budget, report: 0.0, **bad)



class PublicNamesDocumented(unittest.TestCase):
    """Every public name of the package has a docstring, and every public
    function and method has type hints on its parameters and its return."""

    def test_docstrings_and_hints(self):
        import inspect

        import banditd
        missing = []
        for name in banditd.__all__:
            obj = getattr(banditd, name)
            if name == "__version__" or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            members = [(name, obj)]
            if inspect.isclass(obj):
                members += [("%s.%s" % (name, m), f) for m, f in vars(obj).items()
                            if (not m.startswith("_") or m in ("__init__", "__call__"))
                            and (inspect.isfunction(f) or isinstance(f, (classmethod, property)))]
            for label, f in members:
                f = f.__func__ if isinstance(f, classmethod) else f.fget if isinstance(f, property) else f
                if not (f.__doc__ or "").strip() and not label.endswith("__init__"):
                    missing.append("%s: no docstring" % label)
                if inspect.isfunction(f):
                    sig = inspect.signature(f)
                    for p in sig.parameters.values():
                        if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty:
                            missing.append("%s: parameter %s has no type hint" % (label, p.name))
                    if sig.return_annotation is inspect.Signature.empty:
                        missing.append("%s: no return type hint" % label)
        self.assertEqual(missing, [])


if __name__ == "__main__":
    unittest.main()
