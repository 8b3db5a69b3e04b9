"""fair_common: what the shared-server fairness benchmarks of issue 20
(fair_flood.py, many_studies.py, soak_studies.py) share. Python 3 standard
library only.

- start_daemon(binary, extra): the real daemon through
  tests/integration/bdtest.py's Daemon (free port, temporary database).
- Api: one keep-alive HTTP/1.1 connection speaking JSON with a bearer token.
  A 429 is counted and, for a benign client, the same request is sent again
  after its Retry-After; the time of a call runs from its first send to its
  final answer. A connection that fails answers status 0 (counted as an
  error by the callers), never an exception.
- make_user(daemon, name): a non-admin user created by the admin, and its token.
- rss_kb(pid) / hwm_kb(pid): VmRSS / VmHWM from /proc/<pid>/status.
- header(binary, note): date, machine, load average and the commit of the
  tree the binary was built in, the first fields of every JSON result.
"""

import http.client
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)

import bench_common  # noqa: E402

RETRY_AFTER_CAP = 60.0  # seconds a benign client waits at most on one Retry-After


def start_daemon(binary, extra=(), timeout=60.0):
    """Starts `binary` with `extra` flags; returns the bdtest.Daemon."""
    binary = os.path.abspath(binary)
    if not os.access(binary, os.X_OK):
        sys.exit("%s is not an executable" % binary)
    os.environ["BANDITD"] = binary
    import bdtest  # noqa: E402 - after BANDITD is set
    d = bdtest.Daemon(extra_args=tuple(extra), start=False)
    d.start(timeout)
    return d


def retry_after(headers):
    try:
        return max(0.0, float(headers.get("Retry-After", "1")))
    except (TypeError, ValueError):
        return 1.0


class Api:
    """One keep-alive connection; not thread-safe (one per thread)."""

    def __init__(self, port, token, timeout=60.0, benign=True):
        self.port, self.token, self.timeout, self.benign = port, token, timeout, benign
        self.conn = None
        self.used = False
        self.n429 = 0       # 429 answers seen
        self.waited = 0.0   # seconds slept on Retry-After

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.conn, self.used = None, False

    def _once(self, method, path, data, token):
        hdrs = {"Authorization": "Bearer " + (token or self.token)}
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        elif method == "POST":
            hdrs["Content-Length"] = "0"
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            reused = self.used
            try:
                self.conn.request(method, path, body=data, headers=hdrs)
                resp = self.conn.getresponse()
                payload = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                    http.client.CannotSendRequest) as e:
                self.close()
                if attempt == 0 and reused:
                    continue  # a kept-alive connection the server had closed
                return 0, repr(e), {}
            except (OSError, http.client.HTTPException, AttributeError) as e:
                self.close()
                return 0, repr(e), {}
            self.used = True
            if resp.will_close:
                self.close()
            try:
                parsed = json.loads(payload) if payload else None
            except ValueError:
                parsed = payload[:200].decode("utf-8", "replace")
            return resp.status, parsed, resp.headers
        return 0, "unreachable", {}

    def call(self, method, path, body=None, token=None, raw=None):
        """Returns (status, parsed body, headers, seconds). 429s are counted;
        a benign client sleeps Retry-After and sends again."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        t0 = time.monotonic()
        while True:
            st, parsed, hdrs = self._once(method, path, data, token)
            if st != 429:
                return st, parsed, hdrs, time.monotonic() - t0
            self.n429 += 1
            if not self.benign:
                return st, parsed, hdrs, time.monotonic() - t0
            wait = min(RETRY_AFTER_CAP, retry_after(hdrs))
            self.waited += wait
            time.sleep(wait)


def make_user(daemon, name):
    """The admin creates non-admin user `name` and a token for it; returns the token."""
    api = Api(daemon.port, daemon.token)
    st, body, _, _ = api.call("POST", "/v1/users", {"name": name, "admin": False})
    if st != 201:
        raise SystemExit("POST /v1/users %s: %d %r" % (name, st, body))
    st, body, _, _ = api.call("POST", "/v1/users/%s/tokens" % name)
    if st != 201:
        raise SystemExit("POST /v1/users/%s/tokens: %d %r" % (name, st, body))
    api.close()
    return body["token"]


def _status_kb(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_kb(pid):
    return _status_kb(pid, "VmRSS")


def hwm_kb(pid):
    return _status_kb(pid, "VmHWM")


def mb(kb):
    return None if kb is None else round(kb / 1024.0, 1)


def q_ms(xs, q):
    """The q-quantile of xs (seconds) in ms, None when empty."""
    if not xs:
        return None
    return round(1e3 * bench_common.quantile(xs, q), 2)


def lat_summary(xs):
    return {"n": len(xs), "p50_ms": q_ms(xs, 0.5), "p95_ms": q_ms(xs, 0.95), "p99_ms": q_ms(xs, 0.99),
            "max_ms": round(1e3 * max(xs), 2) if xs else None}


def binary_commit(binary):
    d = os.path.dirname(os.path.abspath(binary))
    try:
        out = subprocess.run(["git", "-C", d, "log", "-1", "--format=%h %s"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", d, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    if not out:
        return "?"
    return (out[:70] + "...") if len(out) > 73 else out + (" + uncommitted changes" if dirty else "")


def header(bench, binary, note=None):
    h = {"bench": bench, "date": time.strftime("%Y-%m-%d %H:%MZ", time.gmtime()),
         "machine": bench_common.machine(), "binary": os.path.abspath(binary),
         "binary_commit": binary_commit(binary), "load_before": round(os.getloadavg()[0], 2)}
    if note:
        h["note"] = note
    return h


def db_bytes(path):
    return sum(os.path.getsize(p) for p in (path, path + "-wal", path + "-shm") if os.path.exists(p))
