"""Slow clients (slowloris): thousands of connections that send a request line
and one header line, then trickle a byte now and then, must not stop the
service. With 2,000 of them open, GET /healthz from another address is
answered at once and an authenticated client works; a connection whose
request headers are not complete within the header deadline is closed even
though it keeps sending bytes (the idle timeout alone never fires for it),
while an idle keep-alive connection keeps the idle timeout; one address over
the per-IP connection limit is refused while others are served.

The daemon starts with the common soft open-file limit of 1024, as under
systemd or a default container: serving 2,000 connections needs it to raise
that limit itself. The slow connections come from 127.0.0.2, 127.0.0.3, ...
(Linux accepts any 127/8 source on loopback), so the per-IP limit does not
refuse them. The limits are set through BANDITD_* variables."""

import http.client
import os
import re
import resource
import select
import socket
import sys
import threading
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study, suggest  # noqa: E402

FLOOD = 2000
SLOW_HEAD = b"GET /healthz HTTP/1.1\r\nHost: slow\r\n"


def raise_own_nofile(needed):
    """Raises this process's soft open-file limit to its hard limit; skips the
    test when even the hard limit is too small for `needed` sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < needed:
        raise unittest.SkipTest("the hard open-file limit %d is below the %d sockets needed" % (hard, needed))


def connect_from(ip, port, timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.bind((ip, 0))
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        raise
    return s


def metric(daemon, name, source="127.0.0.1"):
    """The value of an unlabelled (or the first labelled) series `name` in GET /metrics."""
    st, text, _ = get_from(daemon, source, "/metrics")
    if st != 200:
        raise AssertionError("GET /metrics: %d %r" % (st, text))
    m = re.search(r"^%s(?:\{[^}]*\})? (\d+)$" % re.escape(name), text, re.M)
    if not m:
        raise AssertionError("GET /metrics has no %s:\n%s" % (name, text[-1500:]))
    return int(m.group(1))


def get_from(daemon, source, path, timeout=5.0):
    """GET path on a fresh connection from source address; (status, text, seconds)."""
    t0 = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=timeout, source_address=(source, 0))
    try:
        c.request("GET", path, headers={"Connection": "close"})
        r = c.getresponse()
        body = r.read().decode("utf-8", "replace")
        return r.status, body, time.monotonic() - t0
    finally:
        c.close()


def closed_by_peer(s):
    """Whether the server closed s (EOF or reset), without waiting; "answered"
    when the server sent something."""
    p = select.poll()
    p.register(s.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
    if not p.poll(0):
        return False
    try:
        data = s.recv(4096)
    except OSError:
        return True
    return True if data == b"" else "answered"


class Trickler:
    """`n` connections spread over 127.0.0.<first_ip>, ... (per_ip each). Each
    sends a request line and one header line, then (in a thread) one more byte
    of a never-ending header every `interval` seconds. Records when the server
    closed each one (relative to when it connected) and any answer it sent."""

    def __init__(self, port, n, per_ip, first_ip=2, interval=1.0):
        self.port, self.n, self.per_ip, self.first_ip, self.interval = port, n, per_ip, first_ip, interval
        self.socks = []       # (socket, connected_at)
        self.closed = {}      # index -> seconds after connect
        self.answered = []    # indexes the server sent bytes to
        self.connect_errors = []
        self.stop_event = threading.Event()
        self.thread = None
        self.poller = select.poll()  # select() cannot watch descriptors >= 1024

    def open(self):
        for i in range(self.n):
            ip = "127.0.0.%d" % (self.first_ip + i // self.per_ip)
            try:
                s = connect_from(ip, self.port)
                s.sendall(SLOW_HEAD + b"X-Slow: ")
            except OSError as e:
                self.connect_errors.append((ip, repr(e)))
                continue
            s.setblocking(False)
            self.poller.register(s.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
            self.socks.append((s, time.monotonic()))
        self.by_fd = {s.fileno(): i for i, (s, _) in enumerate(self.socks)}
        return self

    def start(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _mark(self, i, how):
        if i in self.closed:
            return
        s, t0 = self.socks[i]
        self.closed[i] = time.monotonic() - t0
        if how == "answered":
            self.answered.append(i)
        self.poller.unregister(s.fileno())

    def check(self):
        for fd, _ in self.poller.poll(0):
            i = self.by_fd[fd]
            how = closed_by_peer(self.socks[i][0])
            if how:
                self._mark(i, how)

    def _run(self):
        while not self.stop_event.is_set():
            for i, (s, _) in enumerate(self.socks):
                if i in self.closed:
                    continue
                try:
                    s.send(b"a", socket.MSG_DONTWAIT)
                except BlockingIOError:
                    pass
                except OSError:
                    self._mark(i, True)
            self.check()
            self.stop_event.wait(self.interval)

    def wait_closed(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.closed) < len(self.socks):
            time.sleep(0.05)
        return len(self.closed)

    def stop(self):
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(10)
        for s, _ in self.socks:
            s.close()
        self.socks = []


class SlowConnections(bdtest.DaemonTestCase):
    def trickler(self, daemon, n, per_ip, first_ip=2, interval=1.0):
        t = Trickler(daemon.port, n, per_ip, first_ip, interval)
        self.addCleanup(t.stop)
        return t.open()

    def test_2000_trickling_connections_do_not_stop_service(self):
        raise_own_nofile(FLOOD + 500)
        d = bdtest.Daemon(nofile=1024, env={"BANDITD_HEADER_TIMEOUT": "300"})
        self.addCleanup(d.cleanup)
        t = self.trickler(d, FLOOD, per_ip=100)
        self.assertEqual(t.connect_errors[:5], [], "%d of %d connections failed"
                         % (len(t.connect_errors), FLOOD))
        t.start()
        time.sleep(0.5)  # let the daemon accept and read every connection

        for i in range(10):
            try:
                st, body, took = get_from(d, "127.0.0.1", "/healthz")
            except (OSError, http.client.HTTPException) as e:
                self.fail("GET /healthz #%d got no answer with %d slow connections open: %r"
                          % (i, FLOOD, e))
            self.assertEqual(st, 200, body)
            self.assertLess(took, 1.0, "GET /healthz #%d took %.2f s" % (i, took))

        c = d.client(timeout=5)
        study = create_study(d)
        self.assertEqual(len(suggest(d, study["id"])), 1)
        self.assertEqual(check_status(self, c.request("GET", "/v1/me"), 200)["name"], "admin")
        c.close()

        t.check()
        self.assertEqual(len(t.closed), 0, "the daemon dropped %d of the %d slow connections"
                         % (len(t.closed), FLOOD))
        self.assertGreaterEqual(metric(d, "banditd_http_connections_open"), FLOOD)
        self.assertIn("raised the open-file limit", d.log_text())

        t.stop()
        deadline = time.monotonic() + 5
        while metric(d, "banditd_http_connections_open") > 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertLessEqual(metric(d, "banditd_http_connections_open"), 5,
                             "the open-connection gauge does not come down after the clients left")

    def test_header_deadline_closes_trickling_connections(self):
        d = bdtest.Daemon(env={"BANDITD_HEADER_TIMEOUT": "2"})
        self.addCleanup(d.cleanup)
        t = self.trickler(d, 40, per_ip=10, interval=0.25).start()

        # An idle keep-alive connection keeps the (longer) idle timeout.
        ka = http.client.HTTPConnection("127.0.0.1", d.port, timeout=5)
        self.addCleanup(ka.close)
        ka.request("GET", "/healthz")
        self.assertEqual(ka.getresponse().read(), b'{"status":"ok"}')
        sock, ka_idle_since = ka.sock, time.monotonic()

        # A keep-alive connection whose second request trickles is closed too.
        s2 = connect_from("127.0.0.1", d.port)
        self.addCleanup(s2.close)
        s2.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(s2.recv(4096).startswith(b"HTTP/1.1 200"))
        s2.sendall(SLOW_HEAD)
        s2_start, s2_closed = time.monotonic(), None

        self.assertEqual(t.wait_closed(1.2), 0, "closed before the deadline")
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline and (s2_closed is None or len(t.closed) < len(t.socks)):
            if s2_closed is None:
                try:
                    s2.send(b"a", socket.MSG_DONTWAIT)
                    if closed_by_peer(s2):
                        s2_closed = time.monotonic() - s2_start
                except OSError:
                    s2_closed = time.monotonic() - s2_start
            time.sleep(0.25)
        self.assertEqual(len(t.closed), 40, "trickling connections still open 8 s after a 2 s deadline")
        self.assertGreaterEqual(min(t.closed.values()), 1.5, t.closed)
        self.assertEqual(t.answered, [], "the daemon answered a request whose headers never ended")
        self.assertIsNotNone(s2_closed, "a trickled second request on a keep-alive connection stayed open")
        self.assertGreaterEqual(s2_closed, 1.5)

        time.sleep(max(0.0, ka_idle_since + 3 - time.monotonic()))
        ka.request("GET", "/healthz")  # after 3 s idle, longer than the header deadline
        self.assertEqual(ka.getresponse().read(), b'{"status":"ok"}')
        self.assertIs(ka.sock, sock, "the idle keep-alive connection was replaced")
        self.assertGreaterEqual(metric(d, "banditd_http_header_timeouts_total"), 41)

    def test_per_ip_limit_refuses_one_address_and_serves_others(self):
        d = bdtest.Daemon(env={"BANDITD_PER_IP_LIMIT": "16", "BANDITD_HEADER_TIMEOUT": "300"})
        self.addCleanup(d.cleanup)
        held = []
        for _ in range(16):
            s = connect_from("127.0.0.9", d.port)
            self.addCleanup(s.close)
            s.sendall(SLOW_HEAD)
            held.append(s)
        time.sleep(0.3)

        extra = connect_from("127.0.0.9", d.port, timeout=3)  # the kernel completes the handshake
        self.addCleanup(extra.close)
        try:
            extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            data = extra.recv(4096)
        except OSError:
            data = b""
        self.assertEqual(data, b"", "the 17th connection from one address was served")

        st, body, _ = get_from(d, "127.0.0.10", "/healthz")
        self.assertEqual(st, 200, body)
        check_status(self, d.request("GET", "/v1/me"), 200)
        self.assertGreaterEqual(metric(d, "banditd_http_connections_refused_total"), 1)
        for s in held:
            self.assertFalse(closed_by_peer(s), "a connection under the limit was closed")

        held.pop().close()
        deadline = time.monotonic() + 3
        while True:
            try:
                st, body, _ = get_from(d, "127.0.0.9", "/healthz", timeout=2)
                break
            except (OSError, http.client.HTTPException):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.assertEqual(st, 200, "a freed slot is usable again: %r" % body)


if __name__ == "__main__":
    unittest.main()
