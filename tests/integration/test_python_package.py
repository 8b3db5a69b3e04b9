"""The banditd Python package (clients/python) as a user installs it: a venv made
by Debian's python3-venv, pip install offline (--no-index --no-build-isolation,
the command in clients/README.md), then the venv's python imports banditd from
the venv and runs an optimize loop against a real daemon. Also `cmake --install`:
the installed banditd-worker and the banditd_client shim find the package."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bdtest  # noqa: E402

SOURCE = os.environ.get("BD_SOURCE_DIR") or os.path.join(HERE, "..", "..")
PACKAGE = os.path.join(SOURCE, "clients", "python")
PYTHON = "/usr/bin/python3"


def have_venv():
    # Debian splits ensurepip (and so `python3 -m venv`) into python3-venv.
    return subprocess.run([PYTHON, "-c", "import ensurepip, venv"], capture_output=True).returncode == 0


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PIP_NO_INDEX"] = "1"  # belt and braces: nothing may come from the network
    return env


# Run by the venv's python: a whole tuning loop, printing what it saw as JSON.
LOOP = textwrap.dedent("""
    import json, sys
    import banditd, banditd_client
    from banditd import Client, TrialStopped
    url, token = sys.argv[1], sys.argv[2]
    client = Client(url, token)
    study = client.study("venv-loop", [{"name": "x", "type": "float", "low": 0, "high": 1}], "hyperband",
                         options={"eta": 3}, objective={"metric": "loss", "goal": "minimize"},
                         resource={"name": "epochs", "min": 1, "max": 9, "integer": True},
                         seed=2, if_exists="load")
    steps = []
    def fn(config, budget, report):
        loss = None
        for epoch in range(1, int(budget) + 1):
            loss = (config["x"] - 0.3) ** 2 + 1.0 / epoch
            steps.append(epoch)
            report(epoch, loss)
        return loss
    result = study.optimize(fn, n_workers=2)
    print(json.dumps({"file": banditd.__file__, "shim": banditd_client.Client is Client,
                      "study": study.id, "trials": result.trials, "completed": result.completed,
                      "stop_reason": result.stop_reason, "best_value": result.best_value,
                      "best_trial_id": result.best_trial_id, "steps": len(steps)}))
""")


@unittest.skipUnless(have_venv(), "python3-venv is not installed, so no venv can be made "
                                  "(docker/install-deps.sh --test installs it)")
class VenvInstall(bdtest.DaemonTestCase):
    def setUp(self):
        self.d = bdtest.Daemon(lease_seconds=60)
        self.addCleanup(self.d.cleanup)
        self.tmp = tempfile.mkdtemp(prefix="bd-venv-")
        if os.environ.get("BD_KEEP_TMP") != "1":
            self.addCleanup(shutil.rmtree, self.tmp, True)

    def run_ok(self, argv, **kw):
        got = subprocess.run(argv, capture_output=True, text=True, env=clean_env(), cwd=self.tmp, timeout=240, **kw)
        self.assertEqual(got.returncode, 0, "%s\nstdout:\n%s\nstderr:\n%s" % (" ".join(argv), got.stdout,
                                                                              got.stderr[-4000:]))
        return got.stdout

    def test_offline_install_and_optimize_from_the_venv(self):
        # pip builds in the source directory (build/, *.egg-info): build a copy.
        src = os.path.join(self.tmp, "src")
        shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        venv = os.path.join(self.tmp, "v")
        self.run_ok([PYTHON, "-m", "venv", "--system-site-packages", venv])
        self.run_ok([os.path.join(venv, "bin", "pip"), "install", "--no-index", "--no-build-isolation", src])

        py = os.path.join(venv, "bin", "python")
        site = self.run_ok([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
        self.assertTrue(site.startswith(venv), site)
        for f in ("banditd/__init__.py", "banditd/client.py", "banditd/optimize.py", "banditd/py.typed",
                  "banditd_client.py"):
            self.assertTrue(os.path.isfile(os.path.join(site, f)), "not installed: %s" % f)
        with open(os.path.join(venv, "bin", "bdctl")) as f:
            self.assertIn("banditd.cli", f.read(), "the bdctl console script points at banditd.cli:main")

        out = self.run_ok([py, "-c", LOOP, "http://127.0.0.1:%d" % self.d.port, self.d.token])
        got = json.loads(out.strip().splitlines()[-1])
        self.assertTrue(got["file"].startswith(site), "banditd was imported from %s, not the venv" % got["file"])
        self.assertTrue(got["shim"], "banditd_client re-exports banditd's Client")
        self.assertEqual(got["stop_reason"], "done", got)
        trials = bdtest.list_all_trials(self.d, got["study"])
        self.assertEqual(len(trials), got["trials"])
        self.assertEqual({t["state"] for t in trials}, {"completed"})
        self.assertEqual(got["completed"], len(trials))
        best = min(trials, key=lambda t: t["value"])
        self.assertEqual((got["best_trial_id"], got["best_value"]), (best["id"], best["value"]))
        measurements = sum(len(self.d.request("GET", "/v1/trials/%d" % t["id"])[1]["measurements"])
                           for t in trials)
        self.assertEqual(measurements, got["steps"], "one measurement per reported epoch")

        # Run again with if_exists="load": the same (finished) study, nothing more to do.
        again = json.loads(self.run_ok([py, "-c", LOOP, "http://127.0.0.1:%d" % self.d.port,
                                        self.d.token]).strip().splitlines()[-1])
        self.assertEqual((again["study"], again["trials"], again["stop_reason"]), (got["study"], 0, "done"))


@unittest.skipUnless(shutil.which("cmake"), "cmake is not installed")
class CmakeInstall(bdtest.DaemonTestCase):
    def test_installed_worker_and_shim_find_the_package(self):
        binary = os.environ.get("BANDITD")
        if not binary:
            raise unittest.SkipTest("BANDITD is not set (run through ctest)")
        build = os.path.dirname(binary)
        prefix = tempfile.mkdtemp(prefix="bd-inst-")
        self.addCleanup(shutil.rmtree, prefix, True)
        got = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(got.returncode, 0, got.stdout + got.stderr)
        pydir = os.path.join(prefix, "share", "banditd", "python")
        self.assertEqual(sorted(os.listdir(os.path.join(pydir, "banditd"))),
                         sorted(f for f in os.listdir(os.path.join(PACKAGE, "banditd"))
                                if f != "__pycache__"))
        code = "import banditd_client, banditd; assert banditd_client.Client is banditd.Client; print(banditd.__file__)"
        got = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, cwd=prefix, env=dict(
            clean_env(), PYTHONPATH=pydir))
        self.assertEqual(got.returncode, 0, got.stderr)
        self.assertTrue(got.stdout.strip().startswith(pydir), got.stdout)
        got = subprocess.run([PYTHON, os.path.join(prefix, "bin", "banditd-worker"), "--help"], capture_output=True,
                             text=True, cwd=prefix, env=clean_env())
        self.assertEqual(got.returncode, 0, got.stderr)
        self.assertIn("--study", got.stdout)


if __name__ == "__main__":
    unittest.main()
