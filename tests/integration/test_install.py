"""`cmake --install` of the build under test into a temporary prefix: the
daemon, the man page (made from --help), the systemd unit (ExecStart naming
the installed daemon, accepted by `systemd-analyze verify`, and hardened:
`systemd-analyze security --offline` exposure at most 2.0 of 10), README and
LICENSE; then the installed daemon runs (--help, --version, and a start that
answers /healthz)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status  # noqa: E402


def run(args, env=None, timeout=120):
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=timeout, env=env)
    return p.returncode, p.stdout.decode("utf-8", "replace")


class Install(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        binary = os.environ.get("BANDITD")
        if not binary:
            raise unittest.SkipTest("BANDITD is not set (run through ctest)")
        # ctest gives the daemon at the top of its build tree.
        cls.build = os.path.dirname(binary)
        if not os.path.exists(os.path.join(cls.build, "cmake_install.cmake")):
            raise AssertionError("%s is not a CMake build directory" % cls.build)
        cls.prefix = tempfile.mkdtemp(prefix="bd-install-")
        bdtest._TMPDIRS.append(cls.prefix)
        code, cls.install_log = run(["cmake", "--install", cls.build, "--prefix", cls.prefix])
        if code != 0:
            raise AssertionError("cmake --install failed (%d):\n%s" % (code, cls.install_log))

    def path(self, rel):
        return os.path.join(self.prefix, rel)

    def test_expected_files(self):
        for rel in ("bin/banditd", "bin/banditd-worker", "share/banditd/openapi.yaml",
                    "share/man/man1/banditd.1", "share/doc/banditd/README.md", "share/doc/banditd/LICENSE",
                    "lib/systemd/system/banditd.service"):
            self.assertTrue(os.path.isfile(self.path(rel)), "%s not installed:\n%s" % (rel, self.install_log))
        self.assertTrue(os.access(self.path("bin/banditd"), os.X_OK))
        with open(self.path("share/doc/banditd/LICENSE")) as f:
            self.assertIn("MIT License", f.read())

    def test_man_page_has_the_sections_of_help(self):
        with open(self.path("share/man/man1/banditd.1")) as f:
            man = f.read()
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "FILES"):
            self.assertRegex(man, r"(?m)^\.SH \"?%s\"?$" % section, "no %s section" % section)
        for name in ("admin\\-token\\-file", "BANDITD_ADMIN_TOKEN_FILE", "header\\-timeout", "BANDITD_LISTEN"):
            self.assertIn(name, man)

    def test_installed_daemon_runs(self):
        exe = self.path("bin/banditd")
        code, out = run([exe, "--help"])
        self.assertEqual(code, 0, out)
        self.assertIn("--admin-token-file", out)
        code, out = run([exe, "--version"])
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"^banditd \d+\.\d+\.\d+")
        d = bdtest.Daemon(start=False)
        d.binary = exe
        self.addCleanup(d.cleanup)
        d.start()
        check_status(self, d.request("GET", "/v1/me"), 200)

    def test_systemd_unit(self):
        unit = self.path("lib/systemd/system/banditd.service")
        with open(unit) as f:
            text = f.read()
        self.assertIn("ExecStart=%s --db %%S/banditd/banditd.db\n" % self.path("bin/banditd"), text)
        for line in ("DynamicUser=yes", "StateDirectory=banditd", "NoNewPrivileges=yes", "ProtectSystem=strict",
                     "ProtectHome=yes", "PrivateTmp=yes", "PrivateDevices=yes", "ProtectKernelTunables=yes",
                     "ProtectKernelModules=yes", "ProtectKernelLogs=yes",
                     "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "SystemCallFilter=@system-service",
                     "MemoryDenyWriteExecute=yes", "LockPersonality=yes", "RestrictNamespaces=yes",
                     "CapabilityBoundingSet=", "UMask=0077", "Restart=on-failure"):
            self.assertRegex(text, r"(?m)^%s$" % re.escape(line))
        analyze = shutil.which("systemd-analyze")
        self.assertIsNotNone(analyze, "systemd-analyze is missing (docker/install-deps.sh --test installs systemd)")
        # verify checks that ExecStart is executable and that man:banditd(1) exists.
        env = dict(os.environ, MANPATH=self.path("share/man"), SYSTEMD_LOG_COLOR="0")
        code, out = run([analyze, "verify", unit], env=env)
        self.assertEqual(code, 0, "systemd-analyze verify:\n" + out)
        self.assertNotIn("banditd.service:", out, "systemd-analyze verify warns:\n" + out)
        code, out = run([analyze, "security", "--offline=yes", "--threshold=20", unit], env=env)
        self.assertEqual(code, 0, "exposure above 2.0:\n" + out)
        self.assertRegex(out, r"Overall exposure level for banditd\.service: [01]\.\d")


if __name__ == "__main__":
    unittest.main()
