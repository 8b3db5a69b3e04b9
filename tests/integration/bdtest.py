"""bdtest: helpers for banditd integration tests (Python 3 standard library only).

A `Daemon` runs the real banditd binary ($BANDITD) on a free 127.0.0.1 port with
a database in a temporary directory, waits for GET /healthz, reads the admin
token from `<db>.admin-token`, and talks JSON/HTTP to it through `Client`
objects (one persistent http.client connection each; a Client is not
thread-safe, so give every thread its own with `Daemon.client()`).

The daemon's stderr goes to a log file. `DaemonTestCase` prints the tail of the
log of every daemon that was alive during a test, and its last requests, when
that test fails or errors. Temporary directories are removed at exit unless
BD_KEEP_TMP=1.

The store is chosen by the environment, so the whole suite runs against both
(tests/run-all.sh runs it twice):
  BD_TEST_STORE=sqlite    (default) a database file in the daemon's temporary directory;
  BD_TEST_STORE=postgres  a fresh database, CREATE DATABASE bd_<pid>_<n>, per Daemon on the
                          cluster named by BD_TEST_PG_URL (tests/pgcluster.sh makes one), so
                          tests stay independent; a restart of the same Daemon keeps it. The
                          admin token comes from a file the fixture writes (--admin-token-file)
                          instead of <db>.admin-token, which has no place next to a URL.
A test about SQLite itself (its files, their modes, the WAL, the disk-fault
shim) is marked @sqlite_only("why"); on PostgreSQL it is skipped with that
reason printed. `Daemon.sql()` edits a stopped daemon's database in either
store, for the tests that plant old or bulk data.
"""

import atexit
import collections
import functools
import http.client
import itertools
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

ADMIN = object()  # token=ADMIN (the default): use the daemon's admin token; token=None: no header

_DAEMONS = []
_TMPDIRS = []
_PG_DATABASES = []  # (server URL, name) of every database this process created
_names = itertools.count(1)

STORE = os.environ.get("BD_TEST_STORE", "sqlite")
if STORE not in ("sqlite", "postgres"):
    raise SystemExit("BD_TEST_STORE must be sqlite or postgres, not %r" % STORE)


def sqlite_only(reason):
    """Marks a test method or class as being about SQLite itself: under
    BD_TEST_STORE=postgres it is skipped, and the reason printed on stderr
    (ctest's log keeps it) as well as in unittest's skip message."""
    msg = "SQLite only: " + reason

    def mark(obj):
        if STORE == "sqlite":
            return obj
        if isinstance(obj, type):
            def setUpClass(cls):
                sys.stderr.write("skipped %s.%s (%s)\n" % (cls.__module__, cls.__name__, msg))
                raise unittest.SkipTest(msg)
            obj.setUpClass = classmethod(setUpClass)
            return obj

        @functools.wraps(obj)
        def skipped(self, *args, **kwargs):
            sys.stderr.write("skipped %s (%s)\n" % (self.id(), msg))
            raise unittest.SkipTest(msg)
        return skipped
    return mark


# ---- PostgreSQL: one database per Daemon on the cluster of BD_TEST_PG_URL ----

def _pg_server_url():
    url = os.environ.get("BD_TEST_PG_URL")
    if not url:
        raise SystemExit("BD_TEST_STORE=postgres needs BD_TEST_PG_URL (tests/pgcluster.sh sets it)")
    return url


def _pg_url_for(server_url, dbname):
    """server_url with its database (the URL's path) replaced by dbname."""
    u = urllib.parse.urlsplit(server_url)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + dbname, u.query, u.fragment))


def _psql():
    for cand in (os.path.join(os.environ.get("BD_PG_BIN", "/usr/lib/postgresql/15/bin"), "psql"),
                 shutil.which("psql")):
        if cand and os.access(cand, os.X_OK):
            return cand
    raise SystemExit("no psql (docker/install-deps.sh --test installs postgresql-15)")


def psql(url, sql, stdin=None):
    """Runs sql (one or more statements) with psql on url; returns its output
    (unaligned, tuples only, fields separated by tabs). Raises on any error."""
    p = subprocess.run([_psql(), "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d", url,
                        "-c", sql], input=stdin, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("psql %s: %s\n%s" % (sql[:200], p.returncode, p.stderr))
    return p.stdout


def new_db(directory, name="bd.db"):
    """A value for --db that no daemon has used yet, in the store of this run:
    directory/name for SQLite, the URL of a new, empty database for PostgreSQL."""
    if STORE == "sqlite":
        return os.path.join(directory, name)
    server = _pg_server_url()
    dbname = "bd_%d_%d" % (os.getpid(), next(_names))
    psql(server, "CREATE DATABASE %s" % dbname)
    _PG_DATABASES.append((server, dbname))
    return _pg_url_for(server, dbname)


def _sql_literal(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"  # standard_conforming_strings is on (the default)


def _csv_field(v):
    if v is None:
        return ""  # COPY ... CSV reads an unquoted empty field as NULL
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return '"' + str(v).replace('"', '""') + '"'


def unique_name(prefix="s"):
    return "%s-%d-%d" % (prefix, os.getpid(), next(_names))


def _strict_json(text):
    """Parses a response body; NaN/Infinity tokens are not JSON and make it fail."""
    def bad_constant(tok):
        raise ValueError("non-JSON constant %s" % tok)
    return json.loads(text, parse_constant=bad_constant)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def _decode_body(data):
    text = data.decode("utf-8", errors="replace")
    if not text:
        return text
    try:
        return _strict_json(text)
    except ValueError:
        return text


class Client:
    """One persistent HTTP/1.1 connection to a daemon. request() reconnects when
    the kept-alive connection turned out to be dead (and then retries once, only
    if the failure happened before any response byte arrived on a reused
    connection); any other connection error is raised (OSError or
    http.client.HTTPException)."""

    def __init__(self, daemon, timeout=10.0):
        self.daemon = daemon
        self.timeout = timeout
        self.conn = None
        self.used = False

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None
        self.used = False

    def _connect(self):
        self.close()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.daemon.port, timeout=self.timeout)

    def request(self, method, path, body=None, token=ADMIN, headers=None, raw_body=None):
        """Returns (status, json_or_text, headers). body is JSON-encoded; raw_body
        (bytes or str) is sent as is. A body gets Content-Type application/json
        unless headers set one. headers values of None remove that header."""
        hdrs = {}
        if token is ADMIN:
            token = self.daemon.token
        if token is not None:
            hdrs["Authorization"] = "Bearer " + token
        data = None
        if raw_body is not None:
            data = raw_body.encode("utf-8") if isinstance(raw_body, str) else raw_body
        elif body is not None:
            data = json.dumps(body).encode("utf-8")
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        for k, v in (headers or {}).items():
            for existing in [h for h in hdrs if h.lower() == k.lower()]:
                del hdrs[existing]
            if v is not None:
                hdrs[k] = v
        if data is None and method in ("POST", "PUT", "PATCH"):
            hdrs.setdefault("Content-Length", "0")
        for attempt in (0, 1):
            if self.conn is None:
                self._connect()
            reused = self.used
            try:
                try:
                    self.conn.request(method, path, body=data, headers=hdrs)
                except (BrokenPipeError, ConnectionResetError):
                    # A fresh connection: the server may have answered early
                    # (413) and closed while we were still sending; read it,
                    # unless http.client dropped the socket (a daemon killed
                    # mid-send): getresponse would then raise AttributeError.
                    if reused or self.conn.sock is None:
                        raise
                resp = self.conn.getresponse()
                payload = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                    http.client.CannotSendRequest, http.client.BadStatusLine) as e:
                self.close()
                self.daemon._note("%s %s -> connection error %r" % (method, path, e))
                if attempt == 0 and reused:
                    continue
                raise
            except Exception as e:
                self.close()
                self.daemon._note("%s %s -> error %r" % (method, path, e))
                raise
            self.used = True
            if resp.will_close:
                self.close()
            parsed = _decode_body(payload)
            self.daemon._note("%s %s %s -> %d %s" % (
                method, path, (data[:200] if data is not None else b"").decode("utf-8", "replace"),
                resp.status, payload[:300].decode("utf-8", "replace")))
            return resp.status, parsed, resp.headers
        raise AssertionError("unreachable")


class Daemon:
    """A banditd process with its own temporary database directory."""

    def __init__(self, extra_args=(), lease_seconds=300, env=None, start=True, db_path=None, umask=None,
                 nofile=None, admin_token_file=None, db=None):
        """db: the --db value (default: new_db() in the store of this run);
        db_path: an SQLite file to use instead (a test about SQLite files only)."""
        binary = os.environ.get("BANDITD")
        if not binary:
            raise unittest.SkipTest("BANDITD is not set (run through ctest)")
        self.binary = binary
        self.tmpdir = tempfile.mkdtemp(prefix="bd-it-")
        _TMPDIRS.append(self.tmpdir)
        if db_path is not None and STORE != "sqlite":
            raise AssertionError("Daemon(db_path=...) names an SQLite file: mark the test @sqlite_only "
                                 "or pass db=new_db(...)")
        self.db = db_path or db or new_db(self.tmpdir)
        self.is_pg = self.db.startswith(("postgresql://", "postgres://"))
        # The SQLite file (None on PostgreSQL), and where the daemon writes the
        # admin token it makes (None when it is given one).
        self.db_path = None if self.is_pg else self.db
        self.token_path = None if self.is_pg else self.db + ".admin-token"
        if self.is_pg and admin_token_file is None:
            admin_token_file = os.path.join(self.tmpdir, "admin-token")
            with open(os.open(admin_token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                f.write("bdt_1_%s\n" % os.urandom(32).hex())
            extra_args = ["--admin-token-file", admin_token_file] + list(extra_args)
        self.log_path = os.path.join(self.tmpdir, "stderr.log")
        self.port = free_port()
        self.lease_seconds = lease_seconds
        self.extra_args = list(extra_args)
        self.env = env
        self.umask = umask
        self.nofile = nofile  # soft RLIMIT_NOFILE the daemon starts with (e.g. 1024, a common default)
        self.admin_token_file = admin_token_file  # where the admin token is read from (default <db>.admin-token)
        self.proc = None
        self.token = None
        self.history = collections.deque(maxlen=40)
        self.alive_from = time.time()
        self.alive_until = None
        self.starts = 0
        self._log = None
        self._client = None
        _DAEMONS.append(self)
        if start:
            self.start()

    # ---- process control ----
    def args(self):
        a = [self.binary, "--listen", "127.0.0.1:%d" % self.port, "--db", self.db]
        if self.lease_seconds is not None:
            a += ["--lease-seconds", str(self.lease_seconds)]
        return a + self.extra_args

    def start(self, timeout=10.0):
        assert self.proc is None or self.proc.poll() is not None, "daemon already running"
        self.alive_until = None
        self.starts += 1
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        self._log = open(self.log_path, "ab")
        self._log.write(("==== start #%d: %s\n" % (self.starts, " ".join(self.args()))).encode())
        self._log.flush()
        umask, nofile = self.umask, self.nofile

        def preexec():
            if umask is not None:
                os.umask(umask)
            if nofile is not None:
                hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(nofile, hard), hard))
        self.proc = subprocess.Popen(self.args(), stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=self._log, env=env, cwd=self.tmpdir,
                                     preexec_fn=preexec if umask is not None or nofile is not None else None)
        deadline = time.monotonic() + timeout
        last = None
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("banditd exited with %s during start-up; stderr:\n%s"
                                     % (self.proc.returncode, self.log_tail()))
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/healthz")
                r = c.getresponse()
                r.read()
                c.close()
                if r.status == 200:
                    break
                last = "status %d" % r.status
            except OSError as e:
                last = repr(e)
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("banditd did not answer GET /healthz within %.0f s (last: %s); "
                                     "stderr:\n%s" % (timeout, last, self.log_tail()))
            time.sleep(0.05)
        token_path = self.admin_token_file or self.token_path
        try:
            with open(token_path) as f:
                self.token = f.read().strip()
        except OSError as e:
            raise AssertionError("cannot read admin token %s: %s" % (token_path, e))
        if not self.token:
            raise AssertionError("admin token file %s is empty" % token_path)
        return self

    def token_file(self):
        """The file the admin token was read from."""
        return self.admin_token_file or self.token_path

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL):
        """Sends sig. For SIGKILL also waits and returns the exit status."""
        if not self.running():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        if sig == signal.SIGKILL:
            return self.wait(10)
        return None

    def wait(self, timeout=10.0):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("banditd did not exit within %.0f s" % timeout)
        self._closed()
        return rc

    def stop(self, timeout=10.0):
        """Graceful stop (SIGTERM); returns the exit code."""
        if not self.running():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def restart(self, timeout=10.0):
        """Stops (gracefully) if still running, then starts again: same db, same port."""
        if self.running():
            self.stop()
        if self._client is not None:
            self._client.close()
        return self.start(timeout)

    def cleanup(self):
        if self.running():
            self.proc.kill()
            self.proc.wait()
        self._closed()
        if self._client is not None:
            self._client.close()

    def _closed(self):
        if self.alive_until is None:
            self.alive_until = time.time()
        if self._log is not None:
            self._log.close()
            self._log = None

    # ---- HTTP ----
    def client(self, timeout=10.0):
        return Client(self, timeout)

    def request(self, method, path, body=None, token=ADMIN, headers=None, raw_body=None):
        if self._client is None:
            self._client = Client(self)
        return self._client.request(method, path, body=body, token=token, headers=headers,
                                    raw_body=raw_body)

    def stream_request(self, method, path, headers, body, timeout=10.0):
        """Sends a (large) body from a second thread while reading the answer, on a
        fresh socket, so a server that answers before reading the whole body (413)
        is still heard. Returns (status, json_or_text, headers)."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        try:
            head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n" % (
                method, path, self.port, len(body))
            for k, v in headers.items():
                head += "%s: %s\r\n" % (k, v)
            head += "Connection: close\r\n\r\n"
            sock.sendall(head.encode("latin-1"))

            def send_body():
                try:
                    sock.sendall(body)
                except OSError:
                    pass
            sender = threading.Thread(target=send_body, daemon=True)
            sender.start()
            resp = http.client.HTTPResponse(sock, method=method)
            resp.begin()
            payload = resp.read()
            self._note("%s %s <%d bytes streamed> -> %d %s" % (
                method, path, len(body), resp.status, payload[:300].decode("utf-8", "replace")))
            return resp.status, _decode_body(payload), resp.headers
        finally:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    # ---- the database of a stopped daemon, in either store ----
    def sql(self, query, params=()):
        """Runs one statement on this daemon's database (stop the daemon first:
        SQLite is locked while it runs, and neither store's daemon expects
        changes behind its back). `?` marks a parameter. Returns the rows as
        tuples of text (None for NULL) in both stores, so a test reads them the
        same way whichever store ran it."""
        assert not self.running(), "Daemon.sql() on a running daemon"
        if not self.is_pg:
            import sqlite3
            db = sqlite3.connect(self.db)
            try:
                rows = db.execute(query, params).fetchall()
                db.commit()
            finally:
                db.close()
            return [tuple(None if v is None else str(v) for v in r) for r in rows]
        parts = query.split("?")
        if len(parts) != len(params) + 1:
            raise AssertionError("%d parameters for %d ? in %r" % (len(params), len(parts) - 1, query))
        text = parts[0] + "".join(_sql_literal(v) + rest for v, rest in zip(params, parts[1:]))
        null = "\\N"  # psql prints NULL as this (-P null=...); no stored value is these two characters
        p = subprocess.run([_psql(), "-X", "-q", "-A", "-t", "-F", "\t", "-P", "null=" + null, "-v",
                            "ON_ERROR_STOP=1", "-d", self.db, "-c", text],
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise AssertionError("psql %s: %s\n%s" % (text[:200], p.returncode, p.stderr))
        return [tuple(None if v == null else v for v in line.split("\t"))
                for line in p.stdout.splitlines() if line]

    def sql_insert_many(self, table, columns, rows):
        """Inserts rows (sequences matching columns) into table of a stopped
        daemon's database: executemany on SQLite, COPY on PostgreSQL."""
        assert not self.running(), "Daemon.sql_insert_many() on a running daemon"
        if not self.is_pg:
            import sqlite3
            db = sqlite3.connect(self.db)
            try:
                db.executemany("INSERT INTO %s (%s) VALUES (%s)" % (table, ", ".join(columns),
                                                                    ", ".join("?" * len(columns))), rows)
                db.commit()
            finally:
                db.close()
            return
        data = "".join(",".join(_csv_field(v) for v in r) + "\n" for r in rows)
        psql(self.db, "COPY %s (%s) FROM STDIN WITH (FORMAT csv)" % (table, ", ".join(columns)), stdin=data)

    # ---- diagnostics ----
    def _note(self, line):
        self.history.append("%.3f %s" % (time.time(), line))

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines=150):
        return "\n".join(self.log_text().splitlines()[-lines:])


def _cleanup_all():
    for d in _DAEMONS:
        try:
            d.cleanup()
        except Exception:
            pass
    if os.environ.get("BD_KEEP_TMP") != "1":
        for t in _TMPDIRS:
            shutil.rmtree(t, ignore_errors=True)
        # A database is ~8 MB: a suite run would leave gigabytes in the cluster.
        for server, name in _PG_DATABASES:
            try:
                psql(server, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % name)
            except Exception as e:
                sys.stderr.write("bdtest: cannot drop database %s: %s\n" % (name, e))


atexit.register(_cleanup_all)


# ---- API helpers ----

def check_status(test, got, status, what=""):
    """Asserts an answer's status, showing the body when it differs."""
    test.assertEqual(got[0], status, "%s: expected HTTP %d, got %d: %r" % (what, status, got[0], got[1]))
    return got[1]


def expect(got, status, what=""):
    """Like check_status, for code without a TestCase (setUpClass): returns the body."""
    if got[0] != status:
        raise AssertionError("%s: expected HTTP %d, got %d: %r" % (what, status, got[0], got[1]))
    return got[1]


def create_user(daemon, name, admin=False, token=ADMIN):
    """Admin creates user `name`, then a token for them; returns the token."""
    st, body, _ = daemon.request("POST", "/v1/users", {"name": name, "admin": admin}, token=token)
    if st != 201:
        raise AssertionError("POST /v1/users %s: %d %r" % (name, st, body))
    return create_token(daemon, name, token=token)[0]


def create_token(daemon, user, token=ADMIN):
    """Returns (token, token_id) of a new token for `user`."""
    st, body, _ = daemon.request("POST", "/v1/users/%s/tokens" % user, token=token)
    if st != 201 or not isinstance(body, dict) or "token" not in body:
        raise AssertionError("POST /v1/users/%s/tokens: %d %r" % (user, st, body))
    return body["token"], body["token_id"]


def study_body(**overrides):
    """A small random-search study (two parameters); top-level keys overridden."""
    body = {
        "name": unique_name("study"),
        "parameters": [
            {"name": "x", "type": "float", "low": 0.0, "high": 1.0},
            {"name": "k", "type": "categorical", "choices": ["a", "b", "c"]},
        ],
        "objective": {"metric": "loss", "goal": "minimize"},
        "scheduler": {"name": "random", "options": {"max_trials": 1000}},
        "seed": 7,
    }
    body.update(overrides)
    return body


def create_study(daemon, token=ADMIN, **overrides):
    """Creates study_body(**overrides) and returns the study object (asserts 201)."""
    st, body, _ = daemon.request("POST", "/v1/studies", study_body(**overrides), token=token)
    if st != 201 or not isinstance(body, dict):
        raise AssertionError("POST /v1/studies: %d %r" % (st, body))
    return body


def suggest(daemon, study_id, count=1, worker="w1", token=ADMIN, headers=None):
    """Returns the list of suggested trials (asserts 200)."""
    st, body, _ = daemon.request("POST", "/v1/studies/%d/suggest" % study_id,
                                 {"worker": worker, "count": count}, token=token, headers=headers)
    if st != 200 or not isinstance(body, dict):
        raise AssertionError("suggest on study %d: %d %r" % (study_id, st, body))
    return body["trials"]


def list_all_trials(daemon, study_id, token=ADMIN, state=None, limit=100):
    """Follows next_after through every page; returns all trials."""
    out, after = [], 0
    for _ in range(10000):
        q = "after=%d&limit=%d" % (after, limit)
        if state:
            q += "&state=" + state
        st, body, _ = daemon.request("GET", "/v1/studies/%d/trials?%s" % (study_id, q), token=token)
        if st != 200:
            raise AssertionError("list trials: %d %r" % (st, body))
        out += body["trials"]
        if body.get("next_after") is None:
            return out
        if body["next_after"] <= after:
            raise AssertionError("next_after does not advance: %r after %d" % (body["next_after"], after))
        after = body["next_after"]
    raise AssertionError("pagination does not end")


class DaemonTestCase(unittest.TestCase):
    """Prints the daemon log tails and recent requests when a test fails."""

    maxDiff = 4000

    def run(self, result=None):
        if result is None:
            return super().run(result)
        before = len(result.failures) + len(result.errors)
        started = time.time()
        out = super().run(result)
        if len(result.failures) + len(result.errors) > before:
            ended = time.time()
            for d in _DAEMONS:
                if d.alive_from <= ended and (d.alive_until is None or d.alive_until >= started):
                    sys.stderr.write("\n---- %s: banditd on port %d, db %s: last requests ----\n%s\n"
                                     "---- stderr tail ----\n%s\n---- end ----\n"
                                     % (self.id(), d.port, d.db, "\n".join(d.history), d.log_tail()))
            # The failure again, last: CI often shows only the end of a long output.
            failure = (result.failures + result.errors)[-1][1]
            sys.stderr.write("---- %s failed ----\n%s\n" % (self.id(), failure[-3000:]))
        return out

    def assertError(self, got, status, code, field=None, check_field=True, what=""):
        """Asserts an error answer: status, {"error": {"code", "message", "field"}} and
        (when check_field) the field value."""
        st, body, hdrs = got
        self.assertEqual(st, status, "%s: expected %d, got %d %r" % (what, status, st, body))
        assert_error_shape(self, body, what)
        self.assertEqual(body["error"]["code"], code, "%s: %r" % (what, body))
        if check_field:
            self.assertEqual(body["error"]["field"], field, "%s: %r" % (what, body))


def assert_error_shape(test, body, what=""):
    test.assertIsInstance(body, dict, "%s: error body is not JSON: %r" % (what, body))
    test.assertIn("error", body, "%s: %r" % (what, body))
    err = body["error"]
    test.assertIsInstance(err, dict, "%s: %r" % (what, body))
    for k in ("code", "message", "field"):
        test.assertIn(k, err, "%s: error lacks %r: %r" % (what, k, body))
    test.assertIsInstance(err["code"], str, what)
    test.assertIsInstance(err["message"], str, what)
    test.assertTrue(err["message"], "%s: empty message: %r" % (what, body))
    test.assertTrue(err["field"] is None or isinstance(err["field"], str),
                    "%s: field must be a string or null: %r" % (what, body))
