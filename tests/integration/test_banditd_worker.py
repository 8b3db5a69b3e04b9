"""clients/banditd-worker against a daemon: minisat configured by spc on real
SATLIB instances with CPU caps, a Hyperband-style study whose value comes
from the command's output, failures and template errors."""

import os
import shutil
import subprocess
import sys
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study  # noqa: E402

SOURCE = os.environ.get("BD_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WORKER = os.path.join(SOURCE, "clients", "banditd-worker")
SAT = os.path.join(SOURCE, "tests", "integration", "fixtures", "sat")


def worker(d, study_id, *args, command):
    token = os.path.join(d.tmpdir, "token")
    with open(token, "w") as f:
        f.write(d.token)
    argv = ["/usr/bin/python3", WORKER, "--url", "http://127.0.0.1:%d" % d.port, "--token-file", token,
            "--study", str(study_id)] + list(args) + ["--"] + command
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def trials(d, sid):
    return bdtest.list_all_trials(d, sid)


@unittest.skipUnless(shutil.which("minisat"), "minisat is not installed (docker/install-deps.sh --test installs it)")
class MinisatUnderSpc(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon(lease_seconds=30)
        self.addCleanup(self.d.cleanup)

    def test_minisat_runs_capped_and_reported(self):
        instances = sorted(f for f in os.listdir(SAT) if f.endswith(".cnf"))
        s = create_study(
            self.d,
            parameters=[{"name": "rnd_freq", "type": "float", "low": 0, "high": 0.5},
                        {"name": "var_decay", "type": "float", "low": 0.6, "high": 0.99},
                        {"name": "luby", "type": "categorical", "choices": ["-luby", "-no-luby"]}],
            objective={"metric": "runtime", "goal": "minimize"},
            resource={"name": "cpu_seconds", "min": 0.005, "max": 0.8},
            instances=instances,
            scheduler={"name": "spc", "options": {"kappa0": 0.05, "first_sample": 4, "max_configs": 12}})
        out = worker(self.d, s["id"], "--parallel", "2", "--max-runs", "40", "--instance-dir", SAT,
                     command=["minisat", "-verb=0", "-rnd-freq={rnd_freq}", "-var-decay={var_decay}", "{luby}",
                              "{instance}"])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("cpu-time caps", out.stdout.splitlines()[0], "the resource cpu_seconds says CPU time")
        ts = [t for t in trials(self.d, s["id"]) if t["state"] != "running"]
        self.assertGreaterEqual(len(ts), 40, out.stdout)
        timeouts = [t for t in ts if t.get("timeout")]
        solved = [t for t in ts if t["state"] == "completed" and not t.get("timeout")]
        self.assertTrue(timeouts, "caps from 0.05 s: some runs time out\n" + out.stdout)
        self.assertTrue(solved, "some runs finish under their caps\n" + out.stdout)
        for t in solved:
            self.assertLessEqual(t["value"], t["budget"] + 0.05, "a finished run is within its cap: %r" % t)
        for t in timeouts:
            self.assertEqual(t["value"], t["budget"], "a timeout counts its cap")
        self.assertTrue(all(t["state"] != "failed" for t in ts), "minisat exits 10/20: never a failure\n"
                        + out.stdout)
        st = check_status(self, self.d.request("GET", "/v1/studies/%d" % s["id"]), 200)
        self.assertIn("active_instances", st["incumbent"])


class AnyCommand(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon(lease_seconds=30)
        self.addCleanup(self.d.cleanup)

    def test_hyperband_value_from_stdout(self):
        s = create_study(self.d, parameters=[{"name": "x", "type": "float", "low": 0, "high": 1}],
                         resource={"name": "epochs", "min": 1, "max": 9},
                         scheduler={"name": "hyperband", "options": {"eta": 3}})
        out = worker(self.d, s["id"], "--max-runs", "12",
                     command=["sh", "-c", "echo training {x} for {budget} epochs; echo loss {x}"])
        self.assertEqual(out.returncode, 0, out.stderr)
        done = [t for t in trials(self.d, s["id"]) if t["state"] == "completed"]
        self.assertGreaterEqual(len(done), 12)
        for t in done:
            self.assertAlmostEqual(t["value"], t["config"]["x"], places=9, msg="the last number printed")

    def test_wall_time_caps_kill_the_process_group(self):
        s = create_study(self.d, parameters=[{"name": "nap", "type": "categorical", "choices": ["0.05", "30"]}],
                         objective={"metric": "seconds", "goal": "minimize"},
                         resource={"name": "wall_seconds", "min": 0.1, "max": 0.4}, instances=["i1"],
                         scheduler={"name": "spc", "options": {"kappa0": 0.4, "stream": "once"}})
        started = time.monotonic()
        # the shell's child sleeps: killing only the shell would leave it running past the cap
        out = worker(self.d, s["id"], "--max-runs", "2", command=["sh", "-c", "sleep {nap}; true"])
        # (a surviving sleep would hold the output pipe open: the worker waits 5 s for it)
        self.assertLess(time.monotonic() - started, 4, "the 30 s sleep was killed with its group at the 0.4 s cap")
        self.assertIn("wall-time caps", out.stdout.splitlines()[0])
        ts = {t["config"]["nap"]: t for t in trials(self.d, s["id"])}
        self.assertTrue(ts["30"].get("timeout"), out.stdout)
        self.assertFalse(ts["0.05"].get("timeout"), out.stdout)
        self.assertLess(ts["0.05"]["value"], 0.4)

    def test_a_refused_report_does_not_end_the_loop(self):
        s = create_study(self.d, parameters=[{"name": "x", "type": "float", "low": 0, "high": 1}],
                         scheduler={"name": "random", "options": {"max_trials": 2}})
        token = os.path.join(self.d.tmpdir, "token")
        with open(token, "w") as f:
            f.write(self.d.token)
        proc = subprocess.Popen(["/usr/bin/python3", WORKER, "--url", "http://127.0.0.1:%d" % self.d.port,
                                 "--token-file", token, "--study", str(s["id"]), "--max-runs", "2", "--",
                                 "sh", "-c", "sleep 1; echo {x}"], stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # someone else ends the first trial while it runs
            running = [t for t in trials(self.d, s["id"]) if t["state"] == "running"]
            if running:
                check_status(self, self.d.request("POST", "/v1/trials/%d/fail" % running[0]["id"], {}), 200)
                break
            time.sleep(0.05)
        out, _ = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, out)
        self.assertIn("the daemon refused the report", out)
        states = sorted(t["state"] for t in trials(self.d, s["id"]))
        self.assertEqual(states, ["completed", "failed"], "the loop went on to the second trial\n" + out)

    def test_a_crash_and_a_template_error_fail_the_trial(self):
        s = create_study(self.d, parameters=[{"name": "x", "type": "float", "low": 0, "high": 1}],
                         scheduler={"name": "random", "options": {"max_trials": 2}})
        out = worker(self.d, s["id"], "--max-runs", "1", command=["sh", "-c", "echo oops >&2; exit 3"])
        self.assertEqual(out.returncode, 0, out.stderr)
        out = worker(self.d, s["id"], "--max-runs", "1", command=["echo", "{nope}"])
        self.assertEqual(out.returncode, 0, out.stderr)
        failed = [t for t in trials(self.d, s["id"]) if t["state"] == "failed"]
        self.assertEqual(len(failed), 2, out.stdout)
        reasons = sorted(t.get("reason", "") for t in failed)
        self.assertIn("exit status 3: oops", reasons[0])
        self.assertIn("{nope}", reasons[1])


def load_worker_module():
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("banditd_worker", WORKER)
    spec = importlib.util.spec_from_loader("banditd_worker", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class StudyNamesAreConfined(unittest.TestCase):
    """Issue 20: a study's instance names and parameter names are data from
    the server; they must not pick files or options on the worker's host."""

    @classmethod
    def setUpClass(cls):
        cls.w = load_worker_module()

    def trial(self, instance=None, config=None):
        t = {"id": 7, "budget": 1.5, "config": config or {"x": 1}}
        if instance is not None:
            t["instance"] = {"name": instance, "index": 0}
        return t

    def refused(self, trial, *args):
        with self.assertRaises(self.w.TemplateError) as e:
            self.w.fill(["solver", "{instance}"], trial, *args)
        return str(e.exception)

    def test_names_that_leave_the_instance_dir_are_refused(self):
        self.assertIn("leaves", self.refused(self.trial("../../etc/passwd"), SAT))
        self.assertIn("leaves", self.refused(self.trial("sub/../../x.cnf"), SAT))

    def test_a_symlink_out_of_the_instance_dir_is_refused(self):
        import tempfile
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        os.symlink("/etc", os.path.join(d, "out"))
        self.assertIn("leaves", self.refused(self.trial("out/passwd"), d))

    def test_option_like_and_absolute_names_are_refused(self):
        self.assertIn("starts with '-'", self.refused(self.trial("-o/tmp/f"), SAT))
        self.assertIn("absolute", self.refused(self.trial("/etc/passwd"), SAT))
        self.assertEqual(self.w.fill(["solver", "{instance}"], self.trial("/etc/passwd"), SAT, True),
                         ["solver", "/etc/passwd"], "--allow-absolute-instances lets it through")

    def test_a_parameter_cannot_shadow_a_placeholder(self):
        for name in ("instance", "cap", "budget", "trial_id", "instance_name"):
            self.assertIn("rename the parameter", self.refused(self.trial("a.cnf", {name: 1}), SAT))

    def test_names_inside_the_dir_still_work(self):
        self.assertEqual(self.w.fill(["solver", "{instance}", "{cap}"], self.trial("sub/a.cnf"), SAT),
                         ["solver", os.path.join(SAT, "sub/a.cnf"), "1.5"])


if __name__ == "__main__":
    unittest.main()
