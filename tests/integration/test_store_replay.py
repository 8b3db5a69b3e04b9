"""A study's decisions are the same on both stores for the same events (issue 16).

The same seeded studies (TPE, and successive halving with measurements, whose
answers carry stop decisions) are driven through the same requests on a
daemon with a SQLite file and on one with a PostgreSQL database, each killed
(SIGKILL) and restarted halfway so the rest of its decisions come from a study
rebuilt from the stored events. Every answer that shows a decision (the
suggested trials, the report answers, the scheduler state) must be the same
on both stores.

Needs BD_TEST_PG_URL (a postgresql:// URL; tests/pgcluster.sh makes a
throwaway cluster): without it the test is skipped and says so on stderr. The
PostgreSQL daemon uses a schema of its own in that database
(options=-csearch_path=...), which the store creates."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bdtest import Client, free_port  # noqa: E402

PG_URL = os.environ.get("BD_TEST_PG_URL", "")
ADMIN_TOKEN = "bdt_1_" + os.urandom(32).hex()  # the first token of a new database is id 1


def value_of(config):
    """The objective the workers report: a function of the config only."""
    return round((config["x"] - 0.3) ** 2 + {"a": 0.0, "b": 0.1, "c": 0.2}[config["k"]], 12)


class StoreDaemon:
    """A banditd on one database (a SQLite path or a PostgreSQL URL) whose
    admin token comes from --admin-token-file, as a PostgreSQL store needs."""

    def __init__(self, db, tmpdir):
        self.db = db
        self.tmpdir = tmpdir
        self.token_file = os.path.join(tmpdir, "admin-token")
        with open(self.token_file, "w") as f:
            f.write(ADMIN_TOKEN + "\n")
        os.chmod(self.token_file, 0o600)
        self.token = ADMIN_TOKEN
        self.log_path = os.path.join(tmpdir, "stderr.log")
        self.proc = None
        self.port = None
        self.client = None

    def _note(self, line):  # bdtest.Client logs each exchange here
        pass

    def start(self):
        self.port = free_port()
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [os.environ["BANDITD"], "--listen", "127.0.0.1:%d" % self.port, "--db", self.db,
             "--admin-token-file", self.token_file, "--lease-seconds", "300"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.tmpdir)
        log.close()
        self.client = Client(self)
        deadline = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("banditd on %s exited during start-up:\n%s" % (self.db, self.log()))
            try:
                if self.client.request("GET", "/healthz")[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("banditd on %s did not start:\n%s" % (self.db, self.log()))
            time.sleep(0.05)

    def kill(self):
        self.client.close()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.client.close()
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]

    def ok(self, method, path, body=None, status=200):
        st, got, _ = self.client.request(method, path, body)
        if st != status:
            raise AssertionError("%s %s on %s: %d %r" % (method, path, self.db, st, got))
        return got


STUDIES = [
    {"name": "replay-tpe",
     "parameters": [{"name": "x", "type": "float", "low": 0.0, "high": 1.0},
                    {"name": "k", "type": "categorical", "choices": ["a", "b", "c"]}],
     "objective": {"metric": "loss", "goal": "minimize"},
     "scheduler": {"name": "tpe", "options": {"max_trials": 60}},
     "seed": 11},
    {"name": "replay-sh",
     "parameters": [{"name": "x", "type": "float", "low": 0.0, "high": 1.0},
                    {"name": "k", "type": "categorical", "choices": ["a", "b", "c"]}],
     "objective": {"metric": "loss", "goal": "minimize"},
     "resource": {"name": "epochs", "min": 1, "max": 9},
     "scheduler": {"name": "successive_halving", "options": {"eta": 3, "n": 9}},
     "seed": 23},
]


def decisions(t):
    """What a suggested trial shows of the scheduler's decision."""
    return {k: t.get(k) for k in ("id", "config", "config_id", "budget", "resume_from", "scheduler")}


def drive(d, sid, rounds, transcript):
    """rounds x (suggest 2, report a measurement, complete): appends every
    decision the daemon shows to transcript."""
    for _ in range(rounds):
        got = d.ok("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w", "count": 2})
        transcript.append(("suggest", [decisions(t) for t in got["trials"]], got.get("done")))
        for t in got["trials"]:
            v = value_of(t["config"])
            st, m, _ = d.client.request("POST", "/v1/trials/%d/measurements" % t["id"],
                                        {"step": 1, "value": v})
            transcript.append(("measure", t["id"], st, m.get("action") if isinstance(m, dict) else m))
            st, c, _ = d.client.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": v})
            transcript.append(("complete", t["id"], st, c.get("state") if isinstance(c, dict) else c))


def run_on(db, tmpdir):
    d = StoreDaemon(db, tmpdir)
    transcript = []
    d.start()
    try:
        ids = [d.ok("POST", "/v1/studies", body, 201)["id"] for body in STUDIES]
        for sid in ids:
            drive(d, sid, 6, transcript)
        before = [d.ok("GET", "/v1/studies/%d" % sid)["scheduler"]["state"] for sid in ids]
        d.kill()  # the rest is decided by studies rebuilt from the stored events
        d.start()
        after = [d.ok("GET", "/v1/studies/%d" % sid)["scheduler"]["state"] for sid in ids]
        transcript.append(("state kept across the restart", before == after))
        for sid in ids:
            drive(d, sid, 6, transcript)
            transcript.append(("state", d.ok("GET", "/v1/studies/%d" % sid)["scheduler"]["state"]))
            trials = d.ok("GET", "/v1/studies/%d/trials?limit=1000" % sid)["trials"]
            transcript.append(("trials", [(t["id"], t["state"], t.get("value"), t["config"]) for t in trials]))
    except BaseException:
        sys.stderr.write("daemon on %s:\n%s\n" % (db, d.log()))
        raise
    finally:
        d.stop()
    return transcript


def pg_url_with_schema(url, schema):
    u = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qsl(u.query, keep_blank_values=True)
    q.append(("options", "-csearch_path=%s" % schema))
    return urllib.parse.urlunsplit((u.scheme, u.netloc, u.path, urllib.parse.urlencode(q), u.fragment))


@unittest.skipUnless(os.environ.get("BANDITD"), "BANDITD is not set (run through ctest)")
class SameDecisionsOnBothStores(unittest.TestCase):
    def setUp(self):
        if not PG_URL.startswith(("postgresql://", "postgres://")):
            sys.stderr.write("test_store_replay: skipped: BD_TEST_PG_URL does not name a PostgreSQL database "
                             "(tests/pgcluster.sh makes one)\n")
            self.skipTest("BD_TEST_PG_URL is not a postgresql:// URL")

    def test_seeded_studies_decide_alike_on_sqlite_and_postgresql_across_a_restart(self):
        with tempfile.TemporaryDirectory(prefix="bd-replay-") as tmp:
            os.mkdir(os.path.join(tmp, "sqlite"))
            os.mkdir(os.path.join(tmp, "pg"))
            lite = run_on(os.path.join(tmp, "sqlite", "bd.db"), os.path.join(tmp, "sqlite"))
            schema = "bd_replay_%d_%d" % (os.getpid(), int(time.time()))
            pg = run_on(pg_url_with_schema(PG_URL, schema), os.path.join(tmp, "pg"))
        self.assertIn(("state kept across the restart", True), lite)
        self.assertGreater(sum(1 for e in lite if e[0] == "suggest" and e[1]), 10, "the studies handed out trials")
        for i, (a, b) in enumerate(zip(lite, pg)):
            self.assertEqual(a, b, "answer %d differs between SQLite and PostgreSQL" % i)
        self.assertEqual(len(lite), len(pg))


if __name__ == "__main__":
    unittest.main(verbosity=2)
