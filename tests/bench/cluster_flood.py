#!/usr/bin/python3
"""cluster_flood.py: the medium defect of issue 42, measured.

    tests/bench/cluster_flood.py --build build            (~40 s; a throwaway PostgreSQL
                                                          cluster through tests/pgcluster.sh)

Three daemons in cluster mode (--advertise-url, --ownership-lease-seconds 2) on
one new database. Bob keeps his study hot on member 1 (one client reading it
every 50 ms there) and floods members 2 and 3 with --flood parallel
`GET /v1/studies/S` each (one connection per flooder, back to back). Alice
has a study of her own on every member (created and first used there) and
reads it on each member in turn, one request at a time, all through the run.
Prints, per member, alice's p50 / p95 / max and how many of bob's flood
requests were answered with which status, and one JSON line (the figures).
The issue's target: alice's p95 <= 100 ms on every member.

Before issue 42 a member holding no lease on bob's study waited the holder's
lease out for every such read, holding the study's lock and a handler thread
(then 503 "moved"), and alice's requests queued behind them.
"""

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Conn:
    def __init__(self, port, token):
        self.port, self.token = port, token
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def req(self, method, path, body=None):
        h = {"Authorization": "Bearer " + self.token}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        try:
            self.c.request(method, path, body=data, headers=h)
            r = self.c.getresponse()
            raw = r.read()
        except (OSError, http.client.HTTPException):
            self.c.close()
            self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            return 0, None
        try:
            return r.status, json.loads(raw) if raw else None
        except ValueError:
            return r.status, raw

    def close(self):
        self.c.close()


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--flood", type=int, default=10, help="bob's parallel readers per flooded member (10)")
    ap.add_argument("--duration", type=float, default=20, help="seconds of flood (20)")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    pg = os.environ.get("BD_TEST_PG_URL")
    if not pg:
        os.execv(os.path.join(ROOT, "tests", "pgcluster.sh"), [os.path.join(ROOT, "tests", "pgcluster.sh"),
                                                                 sys.executable] + sys.argv)
    banditd = os.path.join(a.build, "banditd")
    tmp = tempfile.mkdtemp(prefix="bd-flood-")
    dbname = "bd_flood_%d" % os.getpid()
    psql = "/usr/lib/postgresql/15/bin/psql"
    subprocess.run([psql, "-X", "-q", "-d", pg, "-c", "CREATE DATABASE " + dbname], check=True)
    p = urllib.parse.urlsplit(pg)
    db = urllib.parse.urlunsplit((p.scheme, p.netloc, "/" + dbname, p.query, p.fragment))
    admin = "bdt_1_" + os.urandom(32).hex()
    tf = os.path.join(tmp, "admin-token")
    with open(os.open(tf, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(admin + "\n")
    procs, ports = [], []
    try:
        for i in range(3):
            port = free_port()
            log = open(os.path.join(tmp, "banditd-%d.log" % i), "wb")
            procs.append(subprocess.Popen([banditd, "--listen", "127.0.0.1:%d" % port, "--db", db,
                                           "--admin-token-file", tf, "--log-level", "warn",
                                           "--advertise-url", "http://127.0.0.1:%d" % port,
                                           "--ownership-lease-seconds", "2"], stderr=log))
            ports.append(port)
            for _ in range(150):
                try:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                    c.request("GET", "/healthz")
                    if c.getresponse().status == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.1)
            else:
                raise SystemExit("daemon %d did not start" % i)
        adm = Conn(ports[0], admin)
        tokens = {}
        for user in ("bob", "alice"):
            adm.req("POST", "/v1/users", {"name": user})
            st, ans = adm.req("POST", "/v1/users/%s/tokens" % user, {})
            tokens[user] = ans["token"]
        study = {"parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
                 "objective": {"metric": "loss", "goal": "minimize"}, "scheduler": {"name": "random"}}
        bob1 = Conn(ports[0], tokens["bob"])
        st, ans = bob1.req("POST", "/v1/studies", dict(study, name="bob"))
        s_bob = ans["id"]
        bob1.req("GET", "/v1/studies/%d" % s_bob)
        s_alice = []
        for i, port in enumerate(ports):
            c = Conn(port, tokens["alice"])
            st, ans = c.req("POST", "/v1/studies", dict(study, name="alice-%d" % i))
            s_alice.append(ans["id"])
            c.req("GET", "/v1/studies/%d" % ans["id"])
            c.close()
        stop = threading.Event()
        flood = {1: {}, 2: {}}
        lock = threading.Lock()

        def hot():
            while not stop.is_set():
                bob1.req("GET", "/v1/studies/%d" % s_bob)
                time.sleep(0.05)

        def flooder(m):
            c = Conn(ports[m], tokens["bob"])
            while not stop.is_set():
                st, _ = c.req("GET", "/v1/studies/%d" % s_bob)
                with lock:
                    flood[m][st] = flood[m].get(st, 0) + 1
            c.close()

        times = {0: [], 1: [], 2: []}

        def alice():
            cs = [Conn(port, tokens["alice"]) for port in ports]
            while not stop.is_set():
                for m in range(3):
                    t0 = time.monotonic()
                    st, _ = cs[m].req("GET", "/v1/studies/%d" % s_alice[m])
                    times[m].append((time.monotonic() - t0, st))
                time.sleep(0.01)
            for c in cs:
                c.close()

        threads = [threading.Thread(target=hot), threading.Thread(target=alice)]
        threads += [threading.Thread(target=flooder, args=(m,)) for m in (1, 2) for _ in range(a.flood)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(a.duration)
        stop.set()
        for t in threads:
            t.join(60)
        elapsed = time.monotonic() - t0
        load = open("/proc/loadavg").read().split()[0]
        out = {"label": a.label, "date": time.strftime("%Y-%m-%d %H:%MZ", time.gmtime()), "load": load,
               "flood_per_member": a.flood, "seconds": round(elapsed, 1), "members": []}
        print("cluster_flood %s: %d s, bob floods members 2 and 3 with %d readers each; load average %s"
              % (a.label, elapsed, a.flood, load))
        print("%-8s %9s %9s %9s %9s %s" % ("member", "alice n", "p50 ms", "p95 ms", "max ms", "bob's flood answers"))
        for m in range(3):
            xs = [t for t, _ in times[m]]
            bad = sum(1 for _, st in times[m] if st != 200)
            fl = flood.get(m, {})
            row = {"member": m + 1, "alice_n": len(xs), "alice_not_200": bad, "p50_ms": round(pct(xs, 0.5) * 1e3, 1),
                   "p95_ms": round(pct(xs, 0.95) * 1e3, 1), "max_ms": round(max(xs) * 1e3, 1) if xs else None,
                   "flood": {str(k): v for k, v in sorted(fl.items())}}
            out["members"].append(row)
            print("%-8d %9d %9.1f %9.1f %9.1f %s%s" % (m + 1, len(xs), row["p50_ms"], row["p95_ms"], row["max_ms"] or 0,
                                                       row["flood"] or "(not flooded)",
                                                       "  alice not 200: %d" % bad if bad else ""))
        print(json.dumps(out))
    finally:
        for pr in procs:
            pr.terminate()
        for pr in procs:
            try:
                pr.wait(15)
            except subprocess.TimeoutExpired:
                pr.kill()
        subprocess.run([psql, "-X", "-q", "-d", pg, "-c", "DROP DATABASE IF EXISTS " + dbname])


if __name__ == "__main__":
    main()
