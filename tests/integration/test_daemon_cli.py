"""The daemon's command line and environment (contract "The daemon"): flags and
BANDITD_* variables (flags win), refusal of invalid settings with a non-zero
exit, a port already in use, log levels, and the admin token file and the
database created private whatever the umask, the token file never written
through a symbolic link."""

import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study  # noqa: E402

TOKEN_NEXT_TO_DB = ("<db>.admin-token, the token file a first start writes next to an SQLite database; "
                    "on PostgreSQL the fixture gives the token (--admin-token-file)")
FLAGS = ("--listen", "--db", "--threads", "--log-level", "--lease-seconds", "--sync", "--max-body-bytes")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BANDITD_") or k == "BANDITD"}
    env.update(extra)
    return env


class EnvDaemon(bdtest.Daemon):
    """A daemon configured through BANDITD_* variables only (no flags)."""

    def args(self):
        return [self.binary] + self.extra_args


class CommandLine(bdtest.DaemonTestCase):
    def setUp(self):
        self.binary = os.environ.get("BANDITD")
        if not self.binary:
            self.skipTest("BANDITD is not set")
        self.tmp = tempfile.mkdtemp(prefix="bd-cli-")
        bdtest._TMPDIRS.append(self.tmp)

    def run_daemon(self, args, env=None, timeout=5):
        """Runs banditd expecting it to exit by itself; returns (code, stdout+stderr)."""
        try:
            p = subprocess.run([self.binary] + args, env=clean_env(**(env or {})), cwd=self.tmp,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail("banditd %s did not exit within %d s" % (" ".join(args), timeout))
        return p.returncode, p.stdout.decode("utf-8", "replace")

    def base(self, port=None):
        return ["--listen", "127.0.0.1:%d" % (port or bdtest.free_port()), "--db", bdtest.new_db(self.tmp, "x.db")]

    def test_help_lists_every_flag(self):
        code, out = self.run_daemon(["--help"])
        self.assertEqual(code, 0, out)
        for flag in FLAGS:
            self.assertIn(flag, out, "--help does not mention %s" % flag)

    def test_invalid_settings_exit_non_zero(self):
        cases = [
            (["--threads", "0"], {}, "--threads"),
            (["--threads", "many"], {}, "--threads"),
            (["--log-level", "loud"], {}, "--log-level"),
            (["--sync", "sometimes"], {}, "--sync"),
            (["--lease-seconds", "-1"], {}, "--lease-seconds"),
            (["--lease-seconds", "abc"], {}, "--lease-seconds"),
            (["--max-body-bytes", "0"], {}, "--max-body-bytes"),
            (["--no-such-flag"], {}, "--no-such-flag"),
            (["--listen", "not-an-address"], {}, "--listen"),
            (["--threads"], {}, "--threads"),  # flag without its value
            ([], {"BANDITD_THREADS": "abc"}, "BANDITD_THREADS"),
            ([], {"BANDITD_LEASE_SECONDS": "-3"}, "BANDITD_LEASE_SECONDS"),
        ]
        for args, env, culprit in cases:
            with self.subTest(args=args, env=env):
                code, out = self.run_daemon(self.base() + args, env)
                self.assertNotEqual(code, 0, "banditd accepted %r %r:\n%s" % (args, env, out))
                self.assertGreater(code, 0, "exit by a signal (%d), not an error exit:\n%s" % (code, out))
                self.assertIn(culprit, out, "the error does not name %s:\n%s" % (culprit, out))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.db.admin-token")),
                         "a refused configuration still created the database")

    @bdtest.sqlite_only("a database file in a directory that does not exist")
    def test_db_in_missing_directory(self):
        code, out = self.run_daemon(["--listen", "127.0.0.1:%d" % bdtest.free_port(),
                                     "--db", os.path.join(self.tmp, "no", "such", "dir", "x.db")])
        self.assertGreater(code, 0, out)

    def test_port_in_use(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        self.addCleanup(s.close)
        code, out = self.run_daemon(self.base(s.getsockname()[1]))
        self.assertGreater(code, 0, "banditd started on a port in use:\n%s" % out)

    def test_environment_configures_everything(self):
        port = bdtest.free_port()
        db = bdtest.new_db(self.tmp, "env.db")
        d = EnvDaemon(lease_seconds=None, env=clean_env(
            BANDITD_LISTEN="127.0.0.1:%d" % port, BANDITD_DB=db, BANDITD_THREADS="3",
            BANDITD_LOG_LEVEL="info", BANDITD_LEASE_SECONDS="42", BANDITD_SYNC="full",
            BANDITD_MAX_BODY_BYTES="4096"), start=False)
        d.port, d.db = port, db
        if not d.is_pg:
            d.db_path, d.token_path = db, db + ".admin-token"
        self.addCleanup(d.cleanup)
        d.start()
        if d.is_pg:
            tables = bdtest.psql(db, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
            self.assertGreater(int(tables), 0, "BANDITD_DB was not used: no tables in its database")
        else:
            self.assertTrue(os.path.exists(db), "BANDITD_DB was not used")
        self.assertEqual(create_study(d)["lease_seconds"], 42)
        st, body, _ = d.request("POST", "/v1/studies", raw_body=json.dumps(bdtest.study_body(
            name="n" * 5000)))
        self.assertEqual(st, 413, "BANDITD_MAX_BODY_BYTES=4096: %r" % (body,))

    def test_flags_win_over_environment(self):
        d = bdtest.Daemon(lease_seconds=7, extra_args=["--max-body-bytes", "100000"],
                          env=clean_env(BANDITD_LISTEN="127.0.0.1:1", BANDITD_DB="/nonexistent/dir/x.db",
                                        BANDITD_LEASE_SECONDS="99", BANDITD_MAX_BODY_BYTES="10"))
        self.addCleanup(d.cleanup)
        self.assertEqual(create_study(d)["lease_seconds"], 7)

    def test_empty_environment_variable_is_unset(self):
        # server/config.h: "An empty environment variable counts as unset."
        d = bdtest.Daemon(lease_seconds=None, env=clean_env(BANDITD_LEASE_SECONDS="", BANDITD_THREADS=""))
        self.addCleanup(d.cleanup)
        self.assertEqual(create_study(d)["lease_seconds"], 300, "the built-in default lease is 300 s")

    def test_log_levels(self):
        quiet = bdtest.Daemon(extra_args=["--log-level", "error"])
        self.addCleanup(quiet.cleanup)
        default = bdtest.Daemon(extra_args=["--log-level", "info"])
        self.addCleanup(default.cleanup)
        loud = bdtest.Daemon(extra_args=["--log-level", "debug"])
        self.addCleanup(loud.cleanup)
        for d in (quiet, default, loud):
            check_status(self, d.request("GET", "/v1/studies/424242"), 404)
        time.sleep(0.2)
        self.assertNotIn("/v1/studies/424242", quiet.log_text(), "request lines at --log-level error")
        # Issue 20: a line per request at info was most of the log (981 MB in an hour).
        self.assertNotIn("/v1/studies/424242", default.log_text(), "request lines at the default level, info")
        self.assertIn("listening on", default.log_text(), "info keeps what an operator reads")
        self.assertIn("/v1/studies/424242", loud.log_text(), "no request line at --log-level debug")

    @bdtest.sqlite_only("the modes of the SQLite file, its WAL and the token file written next to them")
    def test_admin_token_and_database_private_whatever_the_umask(self):
        d = bdtest.Daemon(umask=0)
        self.addCleanup(d.cleanup)
        create_study(d)  # a write: the WAL file exists now
        for suffix in (".admin-token", "", "-wal", "-shm"):
            path = d.db_path + suffix
            if suffix == "-shm" and not os.path.exists(path):
                continue  # exclusive locking mode keeps the WAL index in memory
            self.assertTrue(os.path.exists(path), "%s missing" % path)
            mode = stat.S_IMODE(os.stat(path).st_mode)
            self.assertEqual(mode, 0o600, "%s mode %o under umask 000" % (path, mode))

    @bdtest.sqlite_only("symbolic links and file: URIs as SQLite database paths")
    def test_database_paths_sqlite_would_create_world_readable_are_refused(self):
        # Issue 20: through a symbolic link or a file: URI, SQLite created the
        # database and its WAL 0644; both are refused, and nothing is created.
        d = bdtest.Daemon(start=False)
        self.addCleanup(d.cleanup)
        target = os.path.join(d.tmpdir, "target.db")
        link = os.path.join(d.tmpdir, "link.db")
        os.symlink(target, link)
        for db, why in ((link, "symbolic link"), ("file:" + target + "?mode=rwc", "file: URI")):
            p = subprocess.run([os.environ["BANDITD"], "--db", db, "--listen", "127.0.0.1:0"], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(why, p.stderr)
            self.assertFalse(os.path.exists(target), "%s was created" % target)

    @bdtest.sqlite_only(TOKEN_NEXT_TO_DB)
    def test_symlink_at_admin_token_path_is_not_followed(self):
        """Whoever can write the directory may plant a link at PATH.admin-token
        (to a file of the daemon's user, or to where it should not create
        one): the first start replaces the link, never writes through it."""
        for dangling in (False, True):
            with self.subTest(dangling=dangling):
                d = bdtest.Daemon(start=False)
                self.addCleanup(d.cleanup)
                victim = os.path.join(d.tmpdir, "victim")
                if not dangling:
                    with open(victim, "w") as f:
                        f.write("precious\n")
                    os.chmod(victim, 0o644)
                token_path = d.db_path + ".admin-token"
                os.symlink(victim, token_path)
                d.start()
                if dangling:
                    self.assertFalse(os.path.lexists(victim), "the token was written through a dangling link")
                else:
                    self.assertEqual(open(victim).read(), "precious\n", "the link's target was overwritten")
                    self.assertEqual(stat.S_IMODE(os.stat(victim).st_mode), 0o644)
                self.assertFalse(os.path.islink(token_path), "the link is still there")
                self.assertEqual(stat.S_IMODE(os.lstat(token_path).st_mode), 0o600)
                check_status(self, d.request("GET", "/v1/me"), 200)
                leftovers = [n for n in os.listdir(d.tmpdir) if "admin-token" in n and n != "bd.db.admin-token"]
                self.assertEqual(leftovers, [], "temporary token files left behind")

    @bdtest.sqlite_only(TOKEN_NEXT_TO_DB)
    def test_token_file_left_by_a_start_that_crashed_before_its_commit(self):
        """A start that wrote the token file but died before committing the admin
        leaves the file without a database: the next start must still work and
        write a token that works."""
        d = bdtest.Daemon(start=False)
        self.addCleanup(d.cleanup)
        token_path = d.db_path + ".admin-token"
        with open(token_path, "w") as f:
            f.write("bdt_1_" + "0" * 64 + "\n")
        os.chmod(token_path, 0o600)
        d.start()
        self.assertNotEqual(d.token, "bdt_1_" + "0" * 64)
        check_status(self, d.request("GET", "/v1/me"), 200)

    @bdtest.sqlite_only(TOKEN_NEXT_TO_DB)
    def test_admin_token_file_not_overwritten(self):
        d = bdtest.Daemon()
        self.addCleanup(d.cleanup)
        path = d.db_path + ".admin-token"
        first = open(path).read()
        d.restart()
        self.assertEqual(open(path).read(), first)
        check_status(self, d.request("GET", "/v1/me", token=first.strip()), 200)


if __name__ == "__main__":
    unittest.main()
