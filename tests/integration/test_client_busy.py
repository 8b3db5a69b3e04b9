"""The clients against a busy daemon (429 + Retry-After) and a quota refusal
(403 quota_exceeded), on a small local HTTP server that answers what each
test scripts (no daemon needed):

- the Python client (banditd.Client: every method, export_csv included),
  bdctl and banditd-worker, which go through it, and the C client
  (clients/c, through c_client_cli) re-send a 429 with the same
  Idempotency-Key, waiting at least Retry-After, and return the 200 that
  follows; the 429 waits do not use up the network/503 retries;
- a 403 quota_exceeded is raised (returned) at once, never re-sent;
- they give up within the configured total wait (retry_429_seconds,
  bd_client_set_busy_wait), raising the server's 429 error (code busy, its
  field); 0 disables the retry;
- a Retry-After larger than the wait allowed gives up at once (no long
  sleep), one that is not a number falls back to the backoff.
"""

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("BD_SOURCE_DIR") or os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "clients", "python"))
from banditd import BanditdError, Client  # noqa: E402

CLI = os.environ.get("BD_C_CLIENT_CLI")
PYTHON = "/usr/bin/python3"
EHTTP = -2

BUSY = (429, {"Retry-After": "1"}, {"error": {"code": "busy", "message": "study 7 is busy", "field": "study"}})
QUOTA = (403, {}, {"error": {"code": "quota_exceeded", "message": "at most 2 studies", "field": "limits.studies"}})
DONE = (200, {}, {"trials": [], "done": True})
STUDY = (200, {}, {"id": 7, "name": "s"})


class FakeServer:
    """Answers each request with the next of answers, (status, headers, body:
    JSON-able or bytes), the last one repeating; records (time, method, path,
    headers) of every request."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                fake.requests.append((time.monotonic(), self.command, self.path, dict(self.headers)))
                status, headers, body = fake.answers[0] if len(fake.answers) == 1 else fake.answers.pop(0)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                headers = dict(headers)
                headers.setdefault("Content-Type", "application/json")
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _any

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def keys(self):
        return [r[3].get("Idempotency-Key") for r in self.requests]

    def gaps(self):
        """Seconds between consecutive requests."""
        return [b[0] - a[0] for a, b in zip(self.requests, self.requests[1:])]


class Base(unittest.TestCase):
    def fake(self, *answers):
        f = FakeServer(answers)
        self.addCleanup(f.close)
        return f


class PythonClient(Base):
    def client(self, fake, **kw):
        c = Client(fake.url, "bdt_x", **kw)
        self.addCleanup(c.close)
        return c

    def test_429_is_retried_after_retry_after_with_the_same_key(self):
        answer = {"trials": [{"id": 3, "config": {"x": 0.5}, "budget": 1}]}
        fake = self.fake(BUSY, BUSY, (200, {}, answer))
        # retries=0: the 429 waits are not the network/503 retries.
        got = self.client(fake, retries=0).suggest(7, worker="w")
        self.assertEqual(got, answer)
        self.assertEqual(len(fake.requests), 3)
        self.assertEqual({(r[1], r[2]) for r in fake.requests}, {("POST", "/v1/studies/7/suggest")})
        keys = set(fake.keys())
        self.assertEqual(len(keys), 1, keys)
        self.assertIsNotNone(keys.pop())
        for gap in fake.gaps():  # Retry-After: 1 (not the 0.25 s backoff), plus at most 10% jitter
            self.assertGreaterEqual(gap, 0.99)
            self.assertLess(gap, 3.0)

    def test_callers_key_is_kept_and_gets_are_retried(self):
        fake = self.fake(BUSY, STUDY)
        c = self.client(fake)
        self.assertEqual(c.get_study(7), STUDY[2])
        self.assertEqual(len(fake.requests), 2)
        fake.answers = [BUSY, (200, {}, {"deleted": True, "id": 7})]
        self.assertEqual(c.delete_study(7, idempotency_key="mine-1"), {"deleted": True, "id": 7})
        self.assertEqual(fake.keys()[2:], ["mine-1", "mine-1"])

    def test_export_csv_is_retried_before_any_byte(self):
        csv = b"trial_id,state\n1,completed\n"
        fake = self.fake(BUSY, (200, {"Content-Type": "text/csv"}, csv))
        got = []

        class Sink:
            def write(self, b):
                got.append(b)

        self.assertEqual(self.client(fake).export_csv(7, Sink()), len(csv))
        self.assertEqual(b"".join(got), csv)
        self.assertEqual(len(fake.requests), 2)

    def test_quota_exceeded_is_raised_at_once(self):
        fake = self.fake(QUOTA)
        started = time.monotonic()
        with self.assertRaises(BanditdError) as cm:
            self.client(fake, retries=5).create_study("s", [{"name": "x", "type": "float", "low": 0, "high": 1}],
                                                      "random")
        e = cm.exception
        self.assertEqual((e.status, e.code, e.field, e.message),
                         (403, "quota_exceeded", "limits.studies", "at most 2 studies"))
        self.assertEqual(len(fake.requests), 1)
        self.assertLess(time.monotonic() - started, 1.0)

    def test_gives_up_within_retry_429_seconds(self):
        fake = self.fake(BUSY)
        started = time.monotonic()
        with self.assertRaises(BanditdError) as cm:
            self.client(fake, retry_429_seconds=2.5).suggest(7)
        took = time.monotonic() - started
        e = cm.exception
        self.assertEqual((e.status, e.code, e.field, e.message), (429, "busy", "study", "study 7 is busy"))
        # Waits of 1..1.1 s each: two fit in 2.5 s; the 0.3..0.5 s left are less
        # than the Retry-After, so the third 429 is raised without a third wait.
        self.assertEqual(len(fake.requests), 3)
        self.assertGreaterEqual(took, 1.98)
        self.assertLess(took, 2.5 + 1.0)
        self.assertEqual(len(set(fake.keys())), 1)

    def test_zero_disables_the_retry(self):
        fake = self.fake(BUSY)
        with self.assertRaises(BanditdError) as cm:
            self.client(fake, retry_429_seconds=0).get_study(7)
        self.assertEqual(cm.exception.status, 429)
        self.assertEqual(len(fake.requests), 1)
        with self.assertRaises(ValueError):
            Client(fake.url, "t", retry_429_seconds=-1)
        with self.assertRaises(ValueError):
            Client(fake.url, "t", retry_429_seconds=float("inf"))

    def test_huge_or_malformed_retry_after_is_bounded(self):
        for value in ("99999999999999999999999999", "31"):
            # Clamped to 30 s, which is more than the 5 s allowed: given up at once.
            fake = self.fake((429, {"Retry-After": value}, BUSY[2]), DONE)
            started = time.monotonic()
            with self.assertRaises(BanditdError) as cm:
                self.client(fake, retry_429_seconds=5).suggest(7)
            self.assertEqual(cm.exception.status, 429)
            self.assertEqual(len(fake.requests), 1, value)
            self.assertLess(time.monotonic() - started, 1.0)
        for value in ("soon", "-3", "1.5", ""):
            # Not a number of seconds: the backoff (0.25 s first) decides.
            fake = self.fake((429, {"Retry-After": value} if value else {}, BUSY[2]), DONE)
            started = time.monotonic()
            self.assertEqual(self.client(fake).suggest(7), DONE[2])
            self.assertEqual(len(fake.requests), 2, value)
            self.assertGreaterEqual(fake.gaps()[0], 0.24)
            self.assertLess(time.monotonic() - started, 1.5, value)


class Tools(Base):
    """bdctl and banditd-worker go through banditd.Client."""

    def run_tool(self, argv, timeout=60):
        env = dict(os.environ, BANDITD_TOKEN="bdt_x")
        env.pop("BANDITD_TOKEN_FILE", None)
        return subprocess.run([PYTHON] + argv, capture_output=True, text=True, timeout=timeout, env=env)

    def test_bdctl_waits_for_a_busy_daemon(self):
        fake = self.fake(BUSY, DONE)
        p = self.run_tool([os.path.join(SOURCE, "clients", "bdctl"), "--url", fake.url, "suggest", "7"])
        self.assertEqual(p.returncode, 3, p.stderr)  # 3: done
        self.assertEqual(len(fake.requests), 2)
        self.assertEqual(len(set(fake.keys())), 1)

    def test_bdctl_shows_a_quota_refusal(self):
        fake = self.fake(QUOTA)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"name": "s", "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
                       "objective": {"metric": "loss", "goal": "minimize"}, "scheduler": {"name": "random"}}, f)
        self.addCleanup(os.unlink, f.name)
        p = self.run_tool([os.path.join(SOURCE, "clients", "bdctl"), "--url", fake.url, "create", f.name])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("at most 2 studies (field: limits.studies) [HTTP 403 quota_exceeded]", p.stderr)
        self.assertEqual(len(fake.requests), 1)

    def test_worker_waits_for_a_busy_daemon(self):
        study = {"id": 7, "name": "s", "lease_seconds": 300, "resource": None}
        fake = self.fake((200, {}, study), BUSY, DONE)
        p = self.run_tool([os.path.join(SOURCE, "clients", "banditd-worker"), "--url", fake.url, "--study", "7",
                           "--", "true"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([(r[1], r[2]) for r in fake.requests],
                         [("GET", "/v1/studies/7")] + [("POST", "/v1/studies/7/suggest")] * 2)
        self.assertEqual(fake.keys()[1], fake.keys()[2])
        self.assertIn("done: 0 run(s)", p.stdout)

    def test_worker_ends_on_a_quota_refusal(self):
        study = {"id": 7, "name": "s", "lease_seconds": 300, "resource": None}
        fake = self.fake((200, {}, study), QUOTA)
        p = self.run_tool([os.path.join(SOURCE, "clients", "banditd-worker"), "--url", fake.url, "--study", "7",
                           "--", "true"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(fake.requests), 2)
        self.assertIn("quota_exceeded", p.stdout)
        self.assertNotIn("Traceback", p.stderr)


class CClient(Base):
    def cli(self, fake, *args, opts=()):
        if not CLI:
            raise unittest.SkipTest("BD_C_CLIENT_CLI is not set (run through ctest)")
        cmd = [CLI, fake.url, "-"] + list(opts) + [str(a) for a in args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def assertCError(self, got, status, code, field):
        self.assertEqual((got["rc"], got["status"], got["code"], got["field"]), (EHTTP, status, code, field), got)

    def test_429_is_retried_after_retry_after_with_the_same_key(self):
        fake = self.fake(BUSY, BUSY, DONE)
        got = self.cli(fake, "suggest", 7, "w", 1, opts=["--retries", "0"])
        self.assertEqual((got["rc"], got["answer"]), (0, DONE[2]), got)
        self.assertEqual(len(fake.requests), 3)
        self.assertEqual(len(set(fake.keys())), 1)
        self.assertRegex(fake.keys()[0], r"^[0-9a-f]{32}$")
        for gap in fake.gaps():
            self.assertGreaterEqual(gap, 0.99)
            self.assertLess(gap, 3.0)
        # A GET and the CSV export go through the same loop.
        fake.answers = [BUSY, (200, {}, {"id": 7})]
        self.assertEqual(self.cli(fake, "get_study", 7)["answer"], {"id": 7})
        csv = b"trial_id\n1\n"
        fake.answers = [BUSY, (200, {"Content-Type": "text/csv"}, csv)]
        with tempfile.NamedTemporaryFile(suffix=".csv") as out:
            self.assertEqual(self.cli(fake, "export_csv", 7, out.name)["rc"], 0)
            self.assertEqual(open(out.name, "rb").read(), csv)

    def test_quota_exceeded_is_returned_at_once(self):
        fake = self.fake(QUOTA)
        started = time.monotonic()
        got = self.cli(fake, "create_study", json.dumps({"name": "s"}), opts=["--retries", "4"])
        self.assertCError(got, 403, "quota_exceeded", "limits.studies")
        self.assertEqual(got["message"], "at most 2 studies")
        self.assertEqual(len(fake.requests), 1)
        self.assertLess(time.monotonic() - started, 1.0)

    def test_gives_up_within_the_busy_wait(self):
        fake = self.fake(BUSY)
        started = time.monotonic()
        got = self.cli(fake, "suggest", 7, "w", 1, opts=["--busy-wait-ms", "2500"])
        took = time.monotonic() - started
        self.assertCError(got, 429, "busy", "study")
        self.assertEqual(got["message"], "study 7 is busy")
        self.assertEqual(len(fake.requests), 3)
        self.assertGreaterEqual(took, 1.98)
        self.assertLess(took, 2.5 + 1.0)
        fake.requests.clear()
        self.assertCError(self.cli(fake, "get_study", 7, opts=["--busy-wait-ms", "0"]), 429, "busy", "study")
        self.assertEqual(len(fake.requests), 1)
        self.assertEqual(self.cli(fake, "get_study", 7, opts=["--busy-wait-ms", "-1"])["rc"], -1)

    def test_huge_or_malformed_retry_after_is_bounded(self):
        fake = self.fake((429, {"Retry-After": "9999999999"}, BUSY[2]), STUDY)
        started = time.monotonic()
        got = self.cli(fake, "get_study", 7, opts=["--busy-wait-ms", "5000"])
        self.assertCError(got, 429, "busy", "study")
        self.assertEqual(len(fake.requests), 1)
        self.assertLess(time.monotonic() - started, 1.0)
        # A number past curl_off_t: libcurl reads no Retry-After (the backoff
        # decides) or clamps it (given up at once); either way no long sleep.
        fake = self.fake((429, {"Retry-After": "9" * 40}, BUSY[2]), STUDY)
        started = time.monotonic()
        got = self.cli(fake, "get_study", 7, opts=["--busy-wait-ms", "5000"])
        self.assertIn(got["rc"], (0, EHTTP), got)
        self.assertLess(time.monotonic() - started, 1.5)
        for value in ("soon", "-3"):
            fake = self.fake((429, {"Retry-After": value}, BUSY[2]), STUDY)
            started = time.monotonic()
            self.assertEqual(self.cli(fake, "get_study", 7)["answer"], STUDY[2])
            self.assertEqual(len(fake.requests), 2, value)
            self.assertGreaterEqual(fake.gaps()[0], 0.24)
            self.assertLess(time.monotonic() - started, 1.5, value)


if __name__ == "__main__":
    unittest.main(verbosity=2)
