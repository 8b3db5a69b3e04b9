"""bdctl (clients/bdctl -> clients/python/banditd/cli.py) against a real banditd:
every command run as a person or a shell script would run it (a subprocess,
its stdout, stderr and exit code), checked against what the daemon holds.

Covers: create from YAML and JSON (and --if-exists), studies (paged), show
with the incumbent and the scheduler's view (Hyperband rungs, bo_bos
verdicts), trials as table/json/csv, export (CSV from the daemon's
trials.csv, JSON with measurements), tail following live changes and ending
on Ctrl-C, suggest/report/complete/fail with their exit codes (report's stop
from a real bo_bos decision), users and tokens, isolation between users, bad
input (missing file, invalid JSON/YAML, YAML without PyYAML, bad definitions,
unknown ids, usage errors, a dead URL), the example tuning loop
clients/examples/bdctl_loop.sh on a Hyperband study, and bdctl installed by
`cmake --install` with no pip.
"""

import csv
import io
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bdtest  # noqa: E402

SOURCE = os.environ.get("BD_SOURCE_DIR") or os.path.abspath(os.path.join(HERE, "..", ".."))
BDCTL = os.path.join(SOURCE, "clients", "bdctl")
PYTHON = "/usr/bin/python3"

HB_YAML = """\
# a Hyperband study in YAML; 1e-4 is a float here (YAML 1.2), not a string
name: %s
parameters:
  - name: lr
    type: float
    low: 1e-4
    high: 1
    log: true
  - {name: opt, type: categorical, choices: [sgd, adam]}
objective: {metric: val_loss, goal: minimize}
resource: {name: epochs, min: 1, max: 9, integer: true}
scheduler:
  name: hyperband
  options: {eta: 3}
seed: 5
"""


class Bdctl(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()
        cls.tmp = tempfile.mkdtemp(prefix="bd-bdctl-")
        bdtest._TMPDIRS.append(cls.tmp)
        cls.token_file = cls.d.token_file()

    # ---- helpers ----

    def env(self, token=None, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BANDITD_TOKEN", "BDCTL_"))}
        env["BANDITD_URL"] = "http://127.0.0.1:%d" % self.d.port
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if token is not None:
            env["BANDITD_TOKEN"] = token
        else:
            env["BANDITD_TOKEN_FILE"] = self.token_file
        env.update(extra)
        return env

    def run_bdctl(self, *args, token=None, env=None, stdin=None, timeout=60, cmd=None):
        """Runs bdctl; returns (exit code, stdout, stderr)."""
        p = subprocess.run((cmd or [PYTHON, BDCTL]) + [str(a) for a in args], input=stdin, capture_output=True,
                           text=True, env=env or self.env(token), timeout=timeout)
        self.assertNotIn("Traceback", p.stderr, "bdctl %s crashed:\n%s" % (args, p.stderr))
        return p.returncode, p.stdout, p.stderr

    def ok(self, *args, **kw):
        rc, out, err = self.run_bdctl(*args, **kw)
        self.assertEqual(rc, 0, "bdctl %s: exit %d\nstdout: %s\nstderr: %s" % (args, rc, out, err))
        return out

    def fails(self, rc_want, *args, **kw):
        rc, out, err = self.run_bdctl(*args, **kw)
        self.assertEqual(rc, rc_want, "bdctl %s: exit %d, wanted %d\nstdout: %s\nstderr: %s"
                         % (args, rc, rc_want, out, err))
        self.assertTrue(err.startswith("bdctl") or err.startswith("usage:"), "stderr: %r" % err)
        return err

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def study(self, sid, token=bdtest.ADMIN):
        return bdtest.expect(self.d.request("GET", "/v1/studies/%d" % sid, token=token), 200, "get study")

    def create_hb(self, name=None):
        path = self.write("hb-%s.yaml" % (name or bdtest.unique_name()), HB_YAML % (name or bdtest.unique_name("hb")))
        return int(self.ok("create", path).strip())

    def random_study(self, max_trials=1000, token=bdtest.ADMIN, **kw):
        return bdtest.create_study(self.d, token=token, scheduler={"name": "random",
                                                                   "options": {"max_trials": max_trials}}, **kw)

    def finish_trials(self, sid, values):
        """Suggests and completes one trial per value (through the API, not bdctl)."""
        ids = []
        for v in values:
            t = bdtest.suggest(self.d, sid)[0]
            bdtest.expect(self.d.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": v}), 200, "complete")
            ids.append(t["id"])
        return ids

    # ---- studies ----

    def test_create_yaml_then_show_reports_definition_incumbent_and_rungs(self):
        name = bdtest.unique_name("yaml")
        sid = self.create_hb(name)
        s = self.study(sid)
        self.assertEqual(s["name"], name)
        self.assertEqual(s["parameters"][0]["low"], 1e-4, "1e-4 must reach the daemon as a number")
        self.assertEqual(s["scheduler"]["name"], "hyperband")
        # Two completed trials through bdctl: the better one is the incumbent.
        got = []
        for value in (0.75, 0.25):
            t = json.loads(self.ok("suggest", sid, "--worker", "w1"))
            self.assertEqual(set(t) >= {"id", "budget", "config", "resume_from"}, True, t)
            self.ok("complete", t["id"], value)
            got.append(t)
        out = self.ok("show", sid)
        self.assertIn("Study %d: %s" % (sid, name), out)
        self.assertIn("hyperband (eta=3)", out)
        self.assertIn("lr float [0.0001, 1] log", out)
        self.assertIn("Incumbent:  0.25 (trial %d" % got[1]["id"], out)
        self.assertIn("lr=%s" % ("%.6g" % got[1]["config"]["lr"]), out)
        self.assertIn("Trials:     2: 2 ok", out)
        # The Hyperband view: the current bracket's rungs with their budgets.
        self.assertRegex(out, r"bracket s=2 iteration 1: running, active rung 0")
        self.assertRegex(out, r"\n\s+rung\s+budget\s+n\s+placed\s+running\s+finished")
        self.assertRegex(out, r"\n\s+0\s+1\s+9\s+2\s+0\s+2\s+0\s+-\n")
        self.assertEqual(json.loads(self.ok("show", sid, "--json"))["id"], sid)

    def test_show_rising_bandits_arms_and_spc_testers(self):
        rb = bdtest.create_study(
            self.d, parameters=[{"name": "algo", "type": "categorical", "choices": ["svm", "rf"]},
                                {"name": "C", "type": "float", "low": 0.1, "high": 10, "when": {"algo": ["svm"]}}],
            objective={"metric": "acc", "goal": "maximize"}, limits={"trials": 30},
            scheduler={"name": "rising_bandits", "options": {"arm_parameter": "algo", "inner": "random"}})
        for i in range(8):
            t = bdtest.suggest(self.d, rb["id"])[0]
            acc = (0.9 if t["config"]["algo"] == "svm" else 0.6) + 0.001 * i
            bdtest.expect(self.d.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": acc}), 200)
        arms = {a["arm"]: a for a in self.study(rb["id"])["scheduler"]["state"]["arms"]}
        out = self.ok("show", rb["id"])
        self.assertRegex(out, r"phase (rounds|thompson|last_arm), round \d+, pulls 8 / T 30")
        self.assertRegex(out, r"\n\s+arm\s+pulls\s+running\s+best\s+growth\s+lower\s+upper\s+eliminated\n")
        for name, a in arms.items():
            row = [ln.split() for ln in out.splitlines() if ln.split()[:1] == [name]]
            self.assertEqual(len(row), 1, out)
            self.assertEqual(row[0][1:3], [str(a["pulls"]), str(a["running"])])
            self.assertEqual(row[0][5:7], ["%.6g" % a["lower"], "%.6g" % a["upper"]])

        solvers = ["s%02d" % i for i in range(24)]
        spc = bdtest.create_study(
            self.d, parameters=[{"name": "solver", "type": "categorical", "choices": solvers}],
            objective={"metric": "runtime", "goal": "minimize"}, resource={"name": "seconds", "min": 0.5, "max": 16},
            instances=["i%d.cnf" % i for i in range(6)], scheduler={"name": "spc", "options": {"kappa0": 1}})
        for _ in range(40):
            t = bdtest.suggest(self.d, spc["id"])[0]
            rt = 0.2 + solvers.index(t["config"]["solver"]) * 0.1
            body = {"status": "timeout"} if rt > t["budget"] else {"value": rt}
            bdtest.expect(self.d.request("POST", "/v1/trials/%d/complete" % t["id"], body), 200)
        st = self.study(spc["id"])["scheduler"]["state"]
        out = self.ok("show", spc["id"])
        self.assertIn("testers by LCB (smallest first", out)
        self.assertIn("... and 4 other testers", out)
        rows = [ln.split() for ln in out.splitlines() if ln.strip().startswith(tuple("0123456789"))
                and "solver=" in ln]
        self.assertEqual(len(rows), 20, out)
        want = sorted(st["testers"], key=lambda t: (t["lcb"], t["tester"]))[:20]
        self.assertEqual([int(r[0]) for r in rows], [t["tester"] for t in want])
        self.assertEqual([r[-1] for r in rows], ["solver=" + t["config"]["solver"] for t in want])
        self.assertIn("Incumbent:  %.6g" % self.study(spc["id"])["incumbent"]["value"], out)

    def test_create_json_and_if_exists(self):
        body = bdtest.study_body()
        path = self.write("s.json", json.dumps(body))
        sid = int(self.ok("create", path).strip())
        self.assertEqual(self.study(sid)["name"], body["name"])
        self.assertEqual(self.ok("create", path, "--if-exists", "load").strip(), str(sid))
        self.assertIn("409", self.fails(1, "create", path))  # the daemon's default is error
        err = self.fails(1, "create", path, "--if-exists", "error")
        self.assertIn("field: name", err)
        self.assertIn("409", err)
        other = int(self.ok("create", path, "--if-exists", "create").strip())
        self.assertNotEqual(other, sid)
        # JSON from standard input, with --json printing the daemon's answer.
        body["name"] = bdtest.unique_name("stdin")
        got = json.loads(self.ok("create", "-", "--json", stdin=json.dumps(body)))
        self.assertEqual(got["name"], body["name"])

    def test_studies_table_pages_and_shows_best(self):
        ids, best = [], {}
        for i in range(5):
            s = self.random_study(name=bdtest.unique_name("list"))
            ids.append(s["id"])
            if i % 2 == 0:
                self.finish_trials(s["id"], [0.5 + i, 0.125 + i])
                best[s["id"]] = 0.125 + i
        out = self.ok("studies", env=self.env(BDCTL_PAGE_SIZE="2"))
        lines = out.splitlines()
        self.assertEqual(lines[0].split()[:5], ["id", "name", "scheduler", "state", "trials"])
        rows = {int(ln.split()[0]): ln for ln in lines[1:]}
        for sid in ids:
            self.assertIn(sid, rows, "study %d missing from:\n%s" % (sid, out))
            self.assertIn("random", rows[sid])
            if sid in best:
                self.assertIn("%g" % best[sid], rows[sid].split())
                self.assertIn("2: 2 ok", rows[sid])
        listed = json.loads(self.ok("studies", "--json", env=self.env(BDCTL_PAGE_SIZE="2")))
        self.assertEqual(len([s for s in listed if s["id"] in ids]), 5)
        self.assertEqual(len(listed), len({s["id"] for s in listed}), "a study listed twice")

    def test_delete(self):
        sid = self.random_study()["id"]
        self.ok("delete", sid)
        self.assertEqual(self.d.request("GET", "/v1/studies/%d" % sid)[0], 404)
        self.assertIn("not_found", self.fails(1, "delete", sid))

    # ---- trials and exports ----

    def test_other_users_text_cannot_drive_the_terminal_or_a_spreadsheet(self):
        # Issue 20: a study name cleared the screen and set the window title;
        # bdctl's CSV wrote =, @, +, - cells raw.
        name = "evil\x1b]0;owned\x07\x1b[2J\u202e" + bdtest.unique_name()
        s = self.random_study(name=name, parameters=[{"name": "c", "type": "categorical",
                                                      "choices": ["=1+1", "plain"]}])
        out = self.ok("studies")
        self.assertNotIn("\x1b", out)
        self.assertNotIn("\u202e", out)
        self.assertIn("evil\\x1b]0;owned\\x07\\x1b[2J\\u202e", out)
        t = bdtest.suggest(self.d, s["id"], worker="@w")[0]
        bdtest.expect(self.d.request("POST", "/v1/trials/%d/fail" % t["id"], {"reason": " =cmd|' /C calc'!A0"}), 200)
        rows = list(csv.DictReader(io.StringIO(self.ok("trials", s["id"], "--format", "csv"))))
        self.assertEqual(rows[0]["worker"], "'@w")
        self.assertEqual(rows[0]["reason"], "' =cmd|' /C calc'!A0")
        self.assertIn(rows[0]["params_c"], ("'=1+1", "plain"))

    def test_trials_table_json_csv_state_and_limit(self):
        s = self.random_study()
        done = self.finish_trials(s["id"], [0.5, 0.25, 0.75])
        running = bdtest.suggest(self.d, s["id"], worker="wx")[0]
        out = self.ok("trials", s["id"], env=self.env(BDCTL_PAGE_SIZE="2"))
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["id", "state", "budget", "value", "worker", "instance", "config"])
        self.assertEqual([int(ln.split()[0]) for ln in lines[1:]], done + [running["id"]])
        self.assertIn("completed", lines[2])
        self.assertIn("0.25", lines[2].split())
        self.assertIn("wx", lines[4].split())
        got = json.loads(self.ok("trials", s["id"], "--format", "json", "--state", "completed"))
        self.assertEqual([t["id"] for t in got], done)
        self.assertEqual(json.loads(self.ok("trials", s["id"], "--json", "--limit", "2",
                                            env=self.env(BDCTL_PAGE_SIZE="1")))[-1]["id"], done[1])
        rows = list(csv.DictReader(io.StringIO(self.ok("trials", s["id"], "--format", "csv"))))
        self.assertEqual([int(r["trial_id"]) for r in rows], done + [running["id"]])
        self.assertEqual([float(r["value"]) for r in rows[:3]], [0.5, 0.25, 0.75])
        self.assertEqual(rows[3]["value"], "")
        trial = bdtest.expect(self.d.request("GET", "/v1/trials/%d" % done[0]), 200)
        self.assertEqual(float(rows[0]["params_x"]), trial["config"]["x"])
        self.assertEqual(rows[0]["params_k"], trial["config"]["k"])

    def test_export_csv_streams_the_daemons_trials_csv(self):
        s = self.random_study()
        done = self.finish_trials(s["id"], [0.5, 0.25])
        st, _, _ = self.d.request("GET", "/v1/studies/%d/trials.csv" % s["id"])
        if st == 404:
            self.skipTest("this daemon has no GET /v1/studies/{id}/trials.csv yet (the api branch adds it)")
        path = os.path.join(self.tmp, "export.csv")
        self.ok("export", s["id"], "-o", path)
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([int(r["trial_id"]) for r in rows], done)
        self.assertEqual([float(r["value"]) for r in rows], [0.5, 0.25])
        self.assertEqual({r["state"] for r in rows}, {"completed"})
        self.assertIn("params_x", rows[0])
        self.assertEqual([f for f in os.listdir(self.tmp) if ".part" in f], [], "a temporary file was left")
        # to standard output, and an unknown study leaves no file
        self.assertEqual(list(csv.DictReader(io.StringIO(self.ok("export", s["id"]))))[1]["trial_id"], str(done[1]))
        missing = os.path.join(self.tmp, "missing.csv")
        self.assertIn("not_found", self.fails(1, "export", 99999, "-o", missing))
        self.assertFalse(os.path.exists(missing))

    def test_export_json_pages_with_measurements(self):
        s = self.random_study()
        t = bdtest.suggest(self.d, s["id"])[0]
        for step in (1, 2, 3):
            bdtest.expect(self.d.request("POST", "/v1/trials/%d/measurements" % t["id"],
                                         {"step": step, "value": 1.0 / step}), 200)
        bdtest.expect(self.d.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": 0.3}), 200)
        more = self.finish_trials(s["id"], [0.4, 0.5])
        path = os.path.join(self.tmp, "export.json")
        self.ok("export", s["id"], "--format", "json", "-o", path, env=self.env(BDCTL_PAGE_SIZE="1"))
        with open(path) as f:
            doc = json.load(f)
        self.assertEqual(doc["study"]["id"], s["id"])
        self.assertEqual([x["id"] for x in doc["trials"]], [t["id"]] + more)
        self.assertEqual(doc["trials"][0]["value"], 0.3)
        self.assertEqual([m["step"] for m in doc["trials"][0]["measurements"]], [1, 2, 3])

    # ---- tail ----

    def test_tail_follows_new_trials_changes_and_best_until_ctrl_c(self):
        s = self.random_study()
        first = self.finish_trials(s["id"], [0.5])[0]
        p = subprocess.Popen([PYTHON, BDCTL, "tail", str(s["id"]), "--interval", "0.1"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=self.env())
        try:
            seen, partial = [], [b""]

            def wait_for(text, timeout=20):
                # os.read, not readline: readline may take several lines into
                # the file object's buffer, where select() no longer sees them
                # (the test then waited 20 s for a line it had already read).
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    if any(text in ln for ln in seen):
                        return
                    r, _, _ = select.select([p.stdout], [], [], 0.2)
                    if r:
                        chunk = os.read(p.stdout.fileno(), 65536)
                        if not chunk:
                            break
                        *lines, partial[0] = (partial[0] + chunk).split(b"\n")
                        seen.extend(ln.decode() + "\n" for ln in lines)
                self.fail("tail never printed %r; got:\n%s" % (text, "".join(seen)))
            wait_for("following study %d" % s["id"])
            wait_for("trial %d completed" % first)
            wait_for("new best 0.5  trial %d" % first)
            t = bdtest.suggest(self.d, s["id"], worker="tailw")[0]
            wait_for("trial %d running" % t["id"])
            self.assertIn("tailw", [ln for ln in seen if "trial %d running" % t["id"] in ln][0])
            bdtest.expect(self.d.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": 0.125}), 200)
            wait_for("trial %d completed  budget" % t["id"])
            wait_for("new best 0.125  trial %d" % t["id"])
            t2 = bdtest.suggest(self.d, s["id"])[0]
            wait_for("trial %d running" % t2["id"])
            bdtest.expect(self.d.request("POST", "/v1/trials/%d/fail" % t2["id"], {"reason": "oom"}), 200)
            wait_for("trial %d failed" % t2["id"])
            self.assertIn("(oom)", seen[-1])
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=10)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(err, "")

    def test_tail_json_ends_when_the_study_is_done(self):
        s = self.random_study(max_trials=2)
        p = subprocess.Popen([PYTHON, BDCTL, "tail", str(s["id"]), "--interval", "0.1", "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env())
        try:
            time.sleep(0.5)
            ids = self.finish_trials(s["id"], [0.3, 0.2])
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        self.assertEqual(p.returncode, 0, err)
        events = [json.loads(ln) for ln in out.splitlines()]
        self.assertEqual(events[0]["event"], "study")
        self.assertEqual(events[-1]["event"], "done")
        finished = {e["trial"]["id"] for e in events if e["event"] in ("trial", "change")
                    and e["trial"]["state"] == "completed"}
        self.assertEqual(finished, set(ids))
        self.assertEqual([e["incumbent"]["value"] for e in events if e["event"] == "best"][-1], 0.2)

    # ---- the worker's commands and their exit codes ----

    def test_suggest_report_complete_exit_codes(self):
        s = self.random_study(max_trials=1)
        t = json.loads(self.ok("suggest", s["id"], "--worker", "w9"))
        self.assertEqual(bdtest.expect(self.d.request("GET", "/v1/trials/%d" % t["id"]), 200)["worker"], "w9")
        rc, out, _ = self.run_bdctl("suggest", s["id"])
        self.assertEqual(rc, 4, out)
        self.assertRegex(out, r"^wait \d+ ms\n$")
        rc, out, _ = self.run_bdctl("report", t["id"], 1, 0.5)
        self.assertEqual((rc, out), (0, "continue\n"))
        self.ok("complete", t["id"], 0.5)
        rc, out, _ = self.run_bdctl("suggest", s["id"])
        self.assertEqual((rc, out), (3, "done\n"))
        # reporting on a finished trial is the daemon's 409, exit 1
        self.assertIn("409", self.fails(1, "report", t["id"], 2, 0.4))

    def test_suggest_shell_output_evaluates_in_sh(self):
        s = self.random_study()
        script = ('eval "$(%s %s suggest %d --shell)" && printf "%%s|%%s|%%s|%%s|%%s\\n" '
                  '"$BD_TRIAL" "$BD_BUDGET" "$BD_P_x" "$BD_P_k" "$BD_CONFIG"' % (PYTHON, BDCTL, s["id"]))
        p = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=self.env(), timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        tid, budget, x, k, cfg = p.stdout.strip().split("|")
        trial = bdtest.expect(self.d.request("GET", "/v1/trials/%s" % tid), 200)
        self.assertEqual(float(x), trial["config"]["x"])
        self.assertEqual(k, trial["config"]["k"])
        self.assertEqual(json.loads(cfg), trial["config"])

    def test_complete_timeout_diverged_and_fail(self):
        s = self.random_study()
        a, b, c = (bdtest.suggest(self.d, s["id"])[0]["id"] for _ in range(3))
        self.ok("complete", a, "--timeout")
        self.ok("complete", b, "--diverged", "nan loss")
        self.ok("fail", c, "out of memory")
        ta, tb, tc = (bdtest.expect(self.d.request("GET", "/v1/trials/%d" % i), 200) for i in (a, b, c))
        self.assertTrue(ta.get("timeout"), ta)
        self.assertEqual((tb["state"], tb["value"], tb["reason"]), ("completed", None, "nan loss"))
        self.assertEqual((tc["state"], tc["reason"]), ("failed", "out of memory"))
        t = bdtest.suggest(self.d, s["id"])[0]["id"]
        self.assertIn("not both", self.fails(2, "complete", t, "0.5", "--timeout"))
        self.assertIn("VALUE", self.fails(2, "complete", t))
        self.fails(2, "complete", t, "nan")

    def test_report_exits_3_when_bo_bos_stops_the_trial(self):
        """A real stop: bo_bos (as tests/unit/test_bo_bos.c) stops a curve far
        worse than the incumbent soon after N0 = 8 of N = 50 epochs."""
        s = bdtest.create_study(self.d, parameters=[{"name": "x", "type": "float", "low": 0, "high": 1}],
                                scheduler={"name": "bo_bos", "options": {"n_init": 2}},
                                resource={"name": "epochs", "min": 1, "max": 50, "integer": True})
        first = bdtest.suggest(self.d, s["id"])[0]["id"]
        good = [0.05 + 0.5 * 2.718281828 ** (-0.3 * (n - 1)) for n in range(1, 51)]
        for n, v in enumerate(good, 1):
            bdtest.expect(self.d.request("POST", "/v1/trials/%d/measurements" % first, {"step": n, "value": v}), 200)
        bdtest.expect(self.d.request("POST", "/v1/trials/%d/complete" % first, {"value": good[-1]}), 200)
        t = json.loads(self.ok("suggest", s["id"]))
        stopped = None
        for n in range(1, 30):
            rc, out, err = self.run_bdctl("report", t["id"], n, 0.6 - 0.002 * n)
            if rc == 3:
                stopped = n
                self.assertTrue(out.startswith("stop: BOS: P(final error > incumbent"), out)
                break
            self.assertEqual((rc, out), (0, "continue\n"), err)
        self.assertIsNotNone(stopped, "bo_bos never stopped the bad curve")
        self.assertGreaterEqual(stopped, 9)
        self.assertEqual(bdtest.expect(self.d.request("GET", "/v1/trials/%d" % t["id"]), 200)["state"], "stopped")
        out = self.ok("show", s["id"])
        self.assertRegex(out, r"optimal stopping: triggered 2, stopped 1, epochs saved %d" % (50 - stopped))

    # ---- users, tokens, isolation ----

    def test_users_tokens_me_and_isolation(self):
        name = bdtest.unique_name("bob")
        self.assertIn(name, self.ok("users", "create", name))
        rc, token, err = self.run_bdctl("tokens", "create", name)
        token = token.strip()
        self.assertEqual(rc, 0, err)
        self.assertTrue(token.startswith("bdt_"), token)
        self.assertNotIn(token, err)
        token_id = int(err.split()[1])
        me = self.ok("me", token=token)
        self.assertRegex(me, r"name:\s+%s\n" % name)
        self.assertNotIn(token, me)
        self.assertFalse(json.loads(self.ok("me", "--json", token=token))["admin"])
        # A's study is invisible to B through every command.
        a = self.random_study(name=bdtest.unique_name("secret"))
        trial = self.finish_trials(a["id"], [0.5])[0]
        self.assertNotIn(a["name"], self.ok("studies", token=token))
        self.assertNotIn(a["id"], [s["id"] for s in json.loads(self.ok("studies", "--json", token=token))])
        for args in (("show", a["id"]), ("trials", a["id"]), ("export", a["id"]), ("tail", a["id"]),
                     ("suggest", a["id"]), ("delete", a["id"]), ("complete", trial, 0.1),
                     ("report", trial, 1, 0.1), ("fail", trial)):
            err = self.fails(1, *args, token=token)
            self.assertIn("404", err, args)
            self.assertNotIn(a["name"], err)
        self.assertEqual(self.study(a["id"])["trials"]["total"], 1)
        # B's own study, B's own listing; B may not create users.
        path = self.write("bob.json", json.dumps(bdtest.study_body(name="bobs")))
        bid = int(self.ok("create", path, token=token).strip())
        self.assertIn("bobs", self.ok("studies", token=token))
        self.assertEqual(self.study(bid, token=token)["owner"], name)
        self.assertIn("403", self.fails(1, "users", "create", bdtest.unique_name("x"), token=token))
        # Quotas (issue 20): the admin sets B's own, B reads them in me, B may not set them.
        self.assertIn("at most 1 studies", self.ok("users", "limits", name, "--studies", "1"))
        self.assertEqual(json.loads(self.ok("me", "--json", token=token))["limits"]["studies"], 1)
        err = self.fails(1, "create", self.write("bob2.json", json.dumps(bdtest.study_body(name="b2"))), token=token)
        self.assertIn("quota_exceeded", err)
        self.assertIn("limits.studies", err)
        self.assertIn("403", self.fails(1, "users", "limits", name, "--studies", "9", token=token))
        lim = json.loads(self.ok("users", "limits", name, "--studies", "default", "--json"))["limits"]
        self.assertGreater(lim["studies"], 1)
        self.assertIn("whole number", self.fails(2, "users", "limits", name, "--studies", "-3"))
        # Revoked: the token no longer works, with the daemon's message.
        self.ok("tokens", "revoke", token_id)
        self.assertIn("401", self.fails(1, "me", token=token))

    # ---- bad input ----

    def test_bad_input_gives_a_clear_message_and_exit_code(self):
        err = self.fails(1, "create", os.path.join(self.tmp, "nonexistent.json"))
        self.assertIn("nonexistent.json", err)
        self.assertIn("No such file", err)
        err = self.fails(1, "create", self.write("bad.json", '{"name": "x",\n "parameters": [}'))
        self.assertIn("bad.json is not valid JSON at line 2", err)
        err = self.fails(1, "create", self.write("bad.yaml", "name: x\nparameters: [1, 2\n"))
        self.assertIn("bad.yaml is not valid YAML at line", err)
        err = self.fails(1, "create", self.write("list.yaml", "- 1\n- 2\n"))
        self.assertIn("must hold one object", err)
        err = self.fails(1, "create", self.write("date.yaml", "name: x\nparameters: []\nscheduler: random\n"
                                                               "when: 2024-01-01\n"))
        self.assertIn("when: a date is not a JSON value", err)
        # The daemon's own refusal, naming the field.
        body = bdtest.study_body()
        body["parameters"][0]["low"] = 2.0
        err = self.fails(1, "create", self.write("inv.json", json.dumps(body)))
        self.assertIn("field: parameters[0]", err)
        self.assertIn("400 invalid_argument", err)
        # Unknown ids.
        self.assertIn("404 not_found", self.fails(1, "show", 987654))
        self.assertIn("404 not_found", self.fails(1, "trials", 987654))
        self.assertIn("404 not_found", self.fails(1, "report", 987654, 1, 0.5))
        # Usage errors: exit 2.
        self.assertIn("is not an integer", self.fails(2, "show", "abc"))
        self.fails(2, "trials", "1", "--state", "bogus")
        self.fails(2, "report", "1", "1", "inf")
        self.fails(2, "frobnicate")
        env = self.env()
        del env["BANDITD_TOKEN_FILE"]
        self.assertIn("no token", self.fails(2, "studies", env=env))
        self.assertIn("cannot read the token file", self.fails(2, "studies", "--token-file", "/nonexistent/tok"))
        # A wrong token, and a dead URL named in the message.
        self.assertIn("401", self.fails(1, "studies", token="bdt_wrong"))
        dead = "http://127.0.0.1:%d" % bdtest.free_port()
        err = self.fails(1, "studies", "--url", dead)
        self.assertIn("cannot talk to banditd at %s" % dead, err)

    def test_yaml_without_pyyaml_names_the_debian_package(self):
        fake = os.path.join(self.tmp, "noyaml")
        os.makedirs(fake, exist_ok=True)
        with open(os.path.join(fake, "yaml.py"), "w") as f:
            f.write("raise ImportError('No module named yaml')\n")
        path = self.write("ok.yaml", HB_YAML % bdtest.unique_name("noyaml"))
        err = self.fails(1, "create", path, env=self.env(PYTHONPATH=fake))
        self.assertIn("python3-yaml", err)
        # JSON still works without it.
        self.ok("create", self.write("ok.json", json.dumps(bdtest.study_body())), env=self.env(PYTHONPATH=fake))

    # ---- the example tuning loop ----

    def test_shell_tuning_loop_drives_a_hyperband_study_to_done(self):
        example = os.path.join(SOURCE, "clients", "examples")
        sid = int(self.ok("create", os.path.join(example, "bdctl_study.yaml")).strip())
        wrapper = os.path.join(self.tmp, "bin")
        os.makedirs(wrapper, exist_ok=True)
        with open(os.path.join(wrapper, "bdctl"), "w") as f:
            f.write("#!/bin/sh\nexec %s %s \"$@\"\n" % (PYTHON, BDCTL))
        os.chmod(os.path.join(wrapper, "bdctl"), 0o755)
        env = self.env(PATH=wrapper + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"))
        p = subprocess.run(["sh", os.path.join(example, "bdctl_loop.sh"), str(sid), "shw"], capture_output=True,
                           text=True, env=env, timeout=240)
        self.assertEqual(p.returncode, 0, "stdout:\n%s\nstderr:\n%s" % (p.stdout, p.stderr))
        self.assertTrue(p.stdout.endswith("study %d is done\n" % sid), p.stdout[-500:])
        s = self.study(sid)
        self.assertEqual(s["state"], "done")
        trials = bdtest.list_all_trials(self.d, sid)
        self.assertEqual(s["trials"]["completed"], len(trials))
        self.assertGreaterEqual(len(trials), 20)  # brackets s = 2, 1, 0 of R = 9, eta = 3
        budgets = {t["id"]: t["budget"] for t in trials}
        for t in trials:
            full = bdtest.expect(self.d.request("GET", "/v1/trials/%d" % t["id"]), 200)
            start = budgets[t["resume_from"]] if t["resume_from"] else 0
            steps = [m["step"] for m in full["measurements"]]
            self.assertEqual(steps, list(range(start + 1, t["budget"] + 1)),
                             "trial %d (resumes %s)" % (t["id"], t["resume_from"]))
            self.assertEqual(full["worker"], "shw")
            self.assertEqual(full["value"], full["measurements"][-1]["value"])
        self.assertEqual(s["incumbent"]["value"], min(t["value"] for t in trials))
        self.assertIn("Incumbent:  %.6g" % s["incumbent"]["value"], self.ok("show", sid))

    # ---- installed ----

    def test_cmake_install_gives_a_working_bdctl_without_pip(self):
        build = os.path.dirname(os.environ["BANDITD"])
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            self.skipTest("BANDITD is not in a CMake build directory")
        cmake = shutil.which("cmake")
        if cmake is None:
            self.skipTest("no cmake")
        prefix = os.path.join(self.tmp, "prefix")
        p = subprocess.run([cmake, "--install", build, "--prefix", prefix], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        installed = os.path.join(prefix, "bin", "bdctl")
        self.assertTrue(os.access(installed, os.X_OK))
        out = self.ok("me", cmd=[installed])
        self.assertRegex(out, r"name:\s+admin")
        for root, dirs, _ in os.walk(prefix):
            self.assertNotIn("__pycache__", dirs, root)


if __name__ == "__main__":
    unittest.main(verbosity=2)
