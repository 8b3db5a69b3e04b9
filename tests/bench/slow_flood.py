#!/usr/bin/python3
"""slow_flood.py: a slow-connection (slowloris) flood against a fresh banditd
while a normal client measures GET /healthz latency.

    tests/bench/slow_flood.py [--build build] [--connections 5000] [--duration 60] ...

Starts banditd (temporary database, free port, soft open-file limit 1024 as
under systemd, the daemon raises it itself) with its default connection
limits unless told otherwise. Opens --connections connections from
127.0.0.2, 127.0.0.3, ... (--per-ip each, under the per-IP limit); each
sends a request line and one header line, then one more header byte every
--trickle seconds. A connection the daemon closes (the header deadline) is
opened again at once, as an attacker would. Meanwhile one thread GETs
/healthz on a fresh connection every --probe seconds and another on one
kept-alive connection, both from 127.0.0.1, and a third samples
banditd_http_connections_open from /metrics every second. Prints p50, p99
and max latency of each probe kind, failures, and the open-connection
figures. Python standard library only; not a test and not a timing
comparison: the figures depend on the machine and its load.

Exit status: 0 done, 1 the daemon failed, 2 some probes failed."""

import argparse
import http.client
import os
import re
import resource
import select
import socket
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

SLOW_HEAD = b"GET /healthz HTTP/1.1\r\nHost: slow\r\nX-Slow: "


class Flood:
    """Keeps n trickling connections open, reopening those the server closes."""

    def __init__(self, port, n, per_ip, trickle):
        self.port, self.n, self.per_ip, self.trickle = port, n, per_ip, trickle
        self.socks = [None] * n
        self.poller = select.poll()
        self.by_fd = {}
        self.opened = self.closed_by_server = self.connect_errors = 0
        self.stop_event = threading.Event()

    def _open(self, i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.settimeout(5)
            s.bind(("127.0.0.%d" % (2 + i // self.per_ip), 0))
            s.connect(("127.0.0.1", self.port))
            s.sendall(SLOW_HEAD)
        except OSError:
            s.close()
            self.connect_errors += 1
            return
        s.setblocking(False)
        self.socks[i] = s
        self.by_fd[s.fileno()] = i
        self.poller.register(s.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
        self.opened += 1

    def _drop(self, i):
        s = self.socks[i]
        self.poller.unregister(s.fileno())
        del self.by_fd[s.fileno()]
        s.close()
        self.socks[i] = None
        self.closed_by_server += 1

    def open_all(self):
        for i in range(self.n):
            self._open(i)

    def run(self):
        while not self.stop_event.is_set():
            t0 = time.monotonic()
            for fd, _ in self.poller.poll(0):
                i = self.by_fd.get(fd)
                if i is not None:
                    self._drop(i)
            for i in range(self.n):
                s = self.socks[i]
                if s is None:
                    self._open(i)
                    continue
                try:
                    s.send(b"a")
                except BlockingIOError:
                    pass
                except OSError:
                    self._drop(i)
            self.stop_event.wait(max(0.0, self.trickle - (time.monotonic() - t0)))

    def close(self):
        for s in self.socks:
            if s is not None:
                s.close()


def probe_fresh(port, interval, until, out, failures):
    while time.monotonic() < until:
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/healthz")
            r = c.getresponse()
            r.read()
            c.close()
            if r.status == 200:
                out.append(time.monotonic() - t0)
            else:
                failures.append("status %d" % r.status)
        except (OSError, http.client.HTTPException) as e:
            failures.append(repr(e))
        time.sleep(max(0.0, interval - (time.monotonic() - t0)))


def probe_keepalive(port, interval, until, out, failures):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    while time.monotonic() < until:
        t0 = time.monotonic()
        try:
            c.request("GET", "/healthz")
            r = c.getresponse()
            r.read()
            if r.status == 200:
                out.append(time.monotonic() - t0)
            else:
                failures.append("status %d" % r.status)
        except (OSError, http.client.HTTPException) as e:
            failures.append(repr(e))
            c.close()
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        time.sleep(max(0.0, interval - (time.monotonic() - t0)))
    c.close()


def sample_open(port, until, out):
    while time.monotonic() < until:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/metrics")
            text = c.getresponse().read().decode()
            c.close()
            m = re.search(r"^banditd_http_connections_open (\d+)$", text, re.M)
            if m:
                out.append(int(m.group(1)))
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(1.0)


def ms(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return 1e3 * xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="build directory with banditd (default build)")
    ap.add_argument("--connections", type=int, default=5000)
    ap.add_argument("--per-ip", type=int, default=200, help="slow connections per source address (default 200)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds measured after the flood is open")
    ap.add_argument("--trickle", type=float, default=2.0, help="seconds between bytes of a slow connection")
    ap.add_argument("--probe", type=float, default=0.05, help="seconds between probes of each kind")
    ap.add_argument("--header-timeout", type=int, help="daemon --header-timeout (default: the daemon's)")
    ap.add_argument("--threads", type=int, help="daemon --threads (default: the daemon's)")
    args = ap.parse_args()

    need = args.connections + 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < need:
        sys.exit("slow_flood: the open-file hard limit %d is below the %d needed" % (hard, need))
    os.environ["BANDITD"] = os.path.abspath(os.path.join(args.build, "banditd"))
    import bdtest  # after BANDITD is set

    extra = ["--log-level", "warn"]
    if args.header_timeout:
        extra += ["--header-timeout", str(args.header_timeout)]
    if args.threads:
        extra += ["--threads", str(args.threads)]
    d = bdtest.Daemon(extra_args=extra, nofile=1024)
    print("banditd on port %d (%s), started with a soft open-file limit of 1024" % (d.port, " ".join(extra)))
    flood = Flood(d.port, args.connections, args.per_ip, args.trickle)
    t0 = time.monotonic()
    flood.open_all()
    print("opened %d slow connections from %d addresses in %.1f s (%d connect errors)"
          % (flood.opened, (args.connections + args.per_ip - 1) // args.per_ip, time.monotonic() - t0,
             flood.connect_errors))
    trickler = threading.Thread(target=flood.run, daemon=True)
    trickler.start()

    until = time.monotonic() + args.duration
    fresh, kept, opened, fails_f, fails_k = [], [], [], [], []
    threads = [threading.Thread(target=probe_fresh, args=(d.port, args.probe, until, fresh, fails_f)),
               threading.Thread(target=probe_keepalive, args=(d.port, args.probe, until, kept, fails_k)),
               threading.Thread(target=sample_open, args=(d.port, until, opened))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    flood.stop_event.set()
    trickler.join(10)
    alive = d.running()
    flood.close()
    rc = d.stop() if alive else None

    print("=== slow flood: %d trickling connections (a byte every %.1f s), %.0f s, %s"
          % (args.connections, args.trickle, args.duration, time.strftime("%Y-%m-%d %H:%M %Z")))
    print("load average: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    print("                          probes    p50 ms    p99 ms    max ms  failures")
    for name, xs, fails in (("GET /healthz, new conn", fresh, fails_f), ("GET /healthz, keep-alive", kept, fails_k)):
        print("%-24s %8d %9.2f %9.2f %9.2f %9d" % (name, len(xs), ms(xs, 0.5), ms(xs, 0.99),
                                                  1e3 * max(xs) if xs else float("nan"), len(fails)))
    if opened:
        print("open connections (daemon's gauge, 1/s): min %d, median %d, max %d"
              % (min(opened), statistics.median(opened), max(opened)))
    print("slow connections opened %d, closed by the daemon %d (header deadline), connect errors %d"
          % (flood.opened, flood.closed_by_server, flood.connect_errors))
    for f in (fails_f + fails_k)[:5]:
        print("  failure: %s" % f)
    if not alive or rc != 0:
        print("banditd failed (running: %s, exit status %r); log tail:\n%s" % (alive, rc, d.log_tail(40)))
        return 1
    return 2 if fails_f or fails_k else 0


if __name__ == "__main__":
    sys.exit(main())
