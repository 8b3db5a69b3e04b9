#!/usr/bin/python3
"""wide_study.py: what one user's very wide study costs the others.

    tests/bench/wide_study.py BANDITD [daemon flags...]

Starts the daemon (tests/integration/bdtest.py), checks that a study of
10,000 parameters is refused, creates one of 1,000 float parameters (the
limit) and another small study, then asks the wide study 20 times for
count=100 trials while a second client keeps calling suggest on the small
study. Prints the wide answers' size and time, the small study's latency
meanwhile, and the daemon's RSS before, right after and 12 s after (the
reaper gives freed heap back every 10 s). Python standard library only."""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import bdtest  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    os.environ["BANDITD"] = sys.argv[1]
    d = bdtest.Daemon(extra_args=tuple(sys.argv[2:]))

    def rss():
        with open("/proc/%d/status" % d.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return line.split()[1] + " kB"

    print("RSS at start", rss())
    wide = [{"name": "p%d" % i, "type": "float", "low": 0, "high": 1} for i in range(10000)]
    st, body, _ = d.request("POST", "/v1/studies", bdtest.study_body(parameters=wide))
    print("10,000 parameters:", st, body["error"]["message"] if st >= 400 else "accepted")
    w = bdtest.create_study(d, parameters=wide[:1000], scheduler={"name": "random", "options": {}})
    other = bdtest.create_study(d, scheduler={"name": "random", "options": {}})
    lat, stop = [], threading.Event()

    def probe():
        c = d.client()
        while not stop.is_set():
            t0 = time.monotonic()
            c.request("POST", "/v1/studies/%d/suggest" % other["id"], {})
            lat.append(time.monotonic() - t0)
            time.sleep(0.005)

    th = threading.Thread(target=probe)
    th.start()
    c = d.client()
    times, sizes, n = [], [], 0
    for _ in range(20):
        t0 = time.monotonic()
        st, body, _ = c.request("POST", "/v1/studies/%d/suggest" % w["id"], {"count": 100})
        times.append(time.monotonic() - t0)
        sizes.append(len(json.dumps(body)))
        n = len(body["trials"])
    stop.set()
    th.join()
    lat.sort()
    times.sort()
    print("1,000-parameter suggest count=100: %d trials, answer %.0f kB, median %.1f ms, max %.1f ms"
          % (n, sizes[0] / 1024, times[len(times) // 2] * 1e3, times[-1] * 1e3))
    print("small study's suggest meanwhile: n=%d p50 %.2f ms p99 %.2f ms max %.2f ms"
          % (len(lat), lat[len(lat) // 2] * 1e3, lat[int(len(lat) * 0.99)] * 1e3, lat[-1] * 1e3))
    print("RSS right after", rss())
    time.sleep(12)
    print("RSS 12 s later", rss())
    d.cleanup()


if __name__ == "__main__":
    main()
