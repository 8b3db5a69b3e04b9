"""Real Optuna 3.1 programs on banditd (issue 39, item 4): every program in
tests/integration/optuna_programs/ (conditional spaces, pruning with
report/should_prune under MedianPruner, Optuna's default pruner,
HyperbandPruner and SuccessiveHalvingPruner, callbacks, enqueue_trial,
n_jobs=2, ask/tell, trials_dataframe, optuna.importance, matplotlib
figures, OptunaSearchCV, XGBoost's pruning callback; several objectives
and constraints: directions=, constraints_func, best_trials, both
plot_pareto_front) runs twice from the
same file: as is on plain Optuna, and through run_on_banditd.py, which makes
optuna.create_study / load_study banditd.optuna's (url and token from the
environment) and changes nothing else.

Each program prints "key: value" lines. The two runs must print the same
keys in the same order, exit 0 and show no traceback; a value compares by
its kind:
- True/False, words and lists: equal (a program's own checks, e.g. "best is
  the best complete trial: True", and what it tried);
- a count whose key names pruned or complete trials: positive on banditd
  where it is positive on plain Optuna (the samplers differ, and 20 trials
  make a count chance on both: see MEDIAN_RULE_PROGRAMS for the closer
  check of the median rule's);
- any other whole number (trials, rows, callback calls): equal;
- a number with a decimal point (a best value): finite in both.
The runs go two at a time; at the end the test prints both outputs of each
program side by side."""

import concurrent.futures
import importlib.util
import math
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("BD_SOURCE_DIR") or os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
import bdtest  # noqa: E402

PROGRAMS = os.path.join(HERE, "optuna_programs")

#: The programs whose pruner is Optuna's median rule (MedianPruner, or the default pruner), which the
#: bridge maps to the same rule on the server (the option "stopping" of tpe). Each prints "pruned
#: trials: n" of 20, and their sum on banditd must lie within MEDIAN_RULE_TOLERANCE of the sum on
#: Optuna. Measured over 12 seeds each (tests/bench/optuna_pruned_counts.py, 2026-11-29): Optuna's
#: sum 15..29 (mean 21.6, sd 3.7), banditd's 19..32 (mean 24.1, sd 4.2), so the difference of two
#: runs has sd 5.6 about a mean of 2.5 and exceeds 18 with probability ~0.3% (none of the 144 pairs
#: did). One program alone is too noisy (sgd: Optuna 4..13, banditd 6..15). The bridge's earlier
#: mapping, ASHA's rung rule with eta 2, gave sums of 41..52 (mean 45.9): it fails this check about
#: 9 times in 10 (not always: in one run of this test on it, Optuna's sum was 31 and its 41).
MEDIAN_RULE_PROGRAMS = ("sgd_median_pruning.py", "mlp_layers_default_pruner.py", "xgboost_pruning.py")
MEDIAN_RULE_TOLERANCE = 18
RUNNER = "run_on_banditd.py"
PYTHON = "/usr/bin/python3"  # Debian's, with python3-optuna
TIMEOUT = 200  # seconds for one run (1 to 4 s of CPU each)

# The programs' modules, looked up without importing them here.
HAVE_DEPS = all(importlib.util.find_spec(m) for m in ("optuna", "sklearn", "pandas", "xgboost", "matplotlib",
                                                      "plotly"))


def programs():
    return sorted(f for f in os.listdir(PROGRAMS) if f.endswith(".py") and f != RUNNER)


def parse(stdout):
    """The "key: value" lines of a program's output, in order."""
    out = []
    for line in stdout.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            out.append((key, value.strip()))
    return out


def number(text):
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def differences(plain, ours):
    """What makes ours (banditd) mean something else than plain (Optuna), as sentences."""
    keys = [k for k, _ in plain]
    if keys != [k for k, _ in ours]:
        return ["the keys differ: %r against %r" % (keys, [k for k, _ in ours])]
    found = []
    for (key, a), (_, b) in zip(plain, ours):
        x, y = number(a), number(b)
        if isinstance(x, int) and isinstance(y, int):
            if "pruned" in key or "complete" in key:
                if x > 0 and y <= 0:
                    found.append("%s: %d on Optuna, %d on banditd" % (key, x, y))
            elif x != y:
                found.append("%s: %d on Optuna, %d on banditd" % (key, x, y))
        elif isinstance(x, float) or isinstance(y, float):
            if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
                found.append("%s: %r on Optuna, %r on banditd (finite numbers both)" % (key, a, b))
        elif key == "classifiers tried":
            # which choices a study happened to try is chance on both (20 trials may all take
            # one branch, rarely; seen once on banditd in CI's three passes): each must have tried some
            if b.strip() in ("", "[]") or a.strip() in ("", "[]"):
                found.append("%s: %r on Optuna, %r on banditd (some on both)" % (key, a, b))
        elif a != b:
            found.append("%s: %r on Optuna, %r on banditd" % (key, a, b))
    return found


@unittest.skipUnless(HAVE_DEPS, "python3-optuna, -sklearn, -pandas, -xgboost, -matplotlib or -plotly is missing "
                                "(docker/install-deps.sh --test)")
class OptunaPrograms(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(lease_seconds=60)
        cls.token_file = os.path.join(cls.d.tmpdir, "optuna-programs-token")
        with open(cls.token_file, "w") as f:
            f.write(cls.d.token)
        started = time.monotonic()
        jobs = [(p, on) for p in programs() for on in ("optuna", "banditd")]
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            done = list(pool.map(lambda job: cls.run_program(*job), jobs))
        cls.results = {job: got for job, got in zip(jobs, done)}
        cls.seconds = time.monotonic() - started

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    @classmethod
    def run_program(cls, program, on):
        out = tempfile.mkdtemp(prefix="%s-%s-" % (program[:-3], on), dir=cls.d.tmpdir)
        env = dict(os.environ, OMP_NUM_THREADS="1", MPLCONFIGDIR=out, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)
        argv = [PYTHON, program, out]
        if on == "banditd":
            env.update(PYTHONPATH=os.path.join(SOURCE, "clients", "python"),
                       BANDITD_URL="http://127.0.0.1:%d" % cls.d.port, BANDITD_TOKEN_FILE=cls.token_file)
            argv = [PYTHON, RUNNER, program, out]
        started = time.monotonic()
        try:
            got = subprocess.run(argv, cwd=PROGRAMS, env=env, capture_output=True, text=True, timeout=TIMEOUT)
            return got.returncode, got.stdout, got.stderr, time.monotonic() - started
        except subprocess.TimeoutExpired as e:
            return "timeout", e.stdout or "", e.stderr or "", time.monotonic() - started

    def test_at_least_ten_programs(self):
        self.assertGreaterEqual(len(programs()), 10, programs())

    def test_programs_mean_the_same_on_banditd(self):
        for program in programs():
            with self.subTest(program=program):
                plain, ours = self.results[(program, "optuna")], self.results[(program, "banditd")]
                for on, (rc, stdout, stderr, _) in (("Optuna", plain), ("banditd", ours)):
                    self.assertEqual(rc, 0, "%s on %s: exit %s\n%s" % (program, on, rc, stderr[-3000:]))
                    self.assertNotIn("Traceback", stderr, "%s on %s:\n%s" % (program, on, stderr[-3000:]))
                    self.assertTrue(parse(stdout), "%s on %s printed nothing:\n%s" % (program, on, stdout))
                self.assertEqual(differences(parse(plain[1]), parse(ours[1])), [],
                                 "%s\n---- Optuna ----\n%s---- banditd ----\n%s" % (program, plain[1], ours[1]))

    def test_median_rule_prunes_as_optuna_does(self):
        counts = {"optuna": 0, "banditd": 0}
        for program in MEDIAN_RULE_PROGRAMS:
            for on in counts:
                got = dict(parse(self.results[(program, on)][1])).get("pruned trials")
                self.assertIsNotNone(got, "%s on %s printed no \"pruned trials\"" % (program, on))
                counts[on] += int(got)
        self.assertLessEqual(abs(counts["banditd"] - counts["optuna"]), MEDIAN_RULE_TOLERANCE,
                             "trials pruned by the median rule in %s: %d on Optuna, %d on banditd"
                             % (", ".join(MEDIAN_RULE_PROGRAMS), counts["optuna"], counts["banditd"]))

    def test_zz_print_side_by_side(self):
        """Not a check: both outputs of every program, for the log."""
        lines = ["%d runs in %.0f s" % (len(self.results), self.seconds)]
        for program in programs():
            plain, ours = self.results[(program, "optuna")], self.results[(program, "banditd")]
            lines.append("== %s (%.1f s on Optuna, %.1f s on banditd)" % (program, plain[3], ours[3]))
            b = dict(parse(ours[1]))
            for key, value in parse(plain[1]):
                lines.append("  %-45s %-22s %s" % (key, value, b.get(key, "-")))
        sys.stderr.write("\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    unittest.main()
