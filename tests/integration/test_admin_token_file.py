"""The first admin's token from a secret file (--admin-token-file,
BANDITD_ADMIN_TOKEN_FILE), against the real daemon: the file's token
authenticates the admin over HTTP, <db>.admin-token is not written, the token
never appears in the log, later starts do not read the file, and a file the
daemon must not trust stops the start with exit status 1 and a message naming
the file."""

import os
import secrets
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study  # noqa: E402


def new_token():
    return "bdt_1_" + secrets.token_hex(32)


def write_secret(directory, name, text, mode=0o600):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BANDITD_") or k == "BANDITD"}
    env.update(extra)
    return env


class AdminTokenFile(bdtest.DaemonTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bd-secret-")
        bdtest._TMPDIRS.append(self.tmp)

    def test_flag_token_authenticates_and_no_token_file_is_written(self):
        token = new_token()
        path = write_secret(self.tmp, "admin-token", token + "\n")
        d = bdtest.Daemon(extra_args=["--admin-token-file", path], admin_token_file=path, env=clean_env())
        self.addCleanup(d.cleanup)
        self.assertEqual(d.token, token)
        me = check_status(self, d.request("GET", "/v1/me"), 200)
        self.assertEqual((me["name"], me["admin"]), ("admin", True))
        create_study(d)
        check_status(self, d.request("GET", "/v1/me", token=new_token()), 401, "another secret with id 1")
        if d.db_path:  # SQLite: nothing next to the database (PostgreSQL has no such place)
            self.assertFalse(os.path.exists(d.db_path + ".admin-token"), "<db>.admin-token was written")
        self.assertIn("created the admin user with the token in " + path, d.log_text())
        self.assertNotIn(token[6:], d.log_text(), "the secret is in the log")

    def test_environment_and_later_starts_do_not_read_the_file(self):
        token = new_token()
        path = write_secret(self.tmp, "admin-token", token)
        d = bdtest.Daemon(admin_token_file=path, env=clean_env(BANDITD_ADMIN_TOKEN_FILE=path))
        self.addCleanup(d.cleanup)
        check_status(self, d.request("GET", "/v1/me"), 200)
        study = create_study(d)
        d.stop()
        other = new_token()
        write_secret(self.tmp, "admin-token", other)  # the operator rotates the secret file
        d.admin_token_file = write_secret(self.tmp, "kept", token)  # where the test reads the admin's token
        d.start()
        self.assertEqual(d.token, token)
        self.assertEqual(check_status(self, d.request("GET", "/v1/studies/%d" % study["id"]), 200)["id"],
                         study["id"])
        check_status(self, d.request("GET", "/v1/me", token=other), 401, "a later start read the file")
        self.assertIn("was not read", d.log_text())
        self.assertNotIn(other[6:], d.log_text())

    def run_refused(self, path, secret_part):
        db = self.refused_db
        p = subprocess.run([os.environ["BANDITD"], "--listen", "127.0.0.1:%d" % bdtest.free_port(), "--db", db,
                            "--admin-token-file", path], env=clean_env(), stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10)
        out = p.stdout.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 1, out)
        self.assertIn(path, out)
        if secret_part:
            self.assertNotIn(secret_part, out, "the secret is in the error")
        if bdtest.STORE == "sqlite":
            self.assertFalse(os.path.exists(db + ".admin-token"))
        return out

    def test_untrusted_files_stop_the_start(self):
        self.refused_db = bdtest.new_db(self.tmp, "refused.db")  # every refused start, then the good one
        token = new_token()
        out = self.run_refused(write_secret(self.tmp, "group-writable", token, 0o660), token[6:])
        self.assertIn("may be written by group or others", out)
        out = self.run_refused(write_secret(self.tmp, "short", token[:-1]), token[6:-1])
        self.assertIn("bdt_<id>_<64 lowercase hex digits>", out)
        out = self.run_refused(write_secret(self.tmp, "placeholder", "bdt_1_" + "0" * 64), None)
        self.assertIn("not a random one", out)
        out = self.run_refused(write_secret(self.tmp, "id-two", "bdt_2_" + token[6:]), token[6:])
        self.assertIn("first token is 1", out)
        out = self.run_refused(self.tmp, None)
        self.assertIn("not a regular file", out)
        # Issue 20: a directory anyone may write to (not sticky) is refused.
        open_dir = os.path.join(self.tmp, "open")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        out = self.run_refused(write_secret(open_dir, "admin-token", token), token[6:])
        self.assertIn("a directory anyone may write to", out)
        # After all these, a good file still creates the admin (nothing was committed).
        path = write_secret(self.tmp, "good", token)
        d = bdtest.Daemon(db=self.refused_db, extra_args=["--admin-token-file", path],
                          admin_token_file=path, env=clean_env())
        self.addCleanup(d.cleanup)
        check_status(self, d.request("GET", "/v1/me"), 200)


if __name__ == "__main__":
    unittest.main()
