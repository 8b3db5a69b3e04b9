#!/usr/bin/python3
"""replay_daemon: replay NAS-Bench-NLP training runs against a live banditd.

W virtual workers share a discrete-event clock. A free worker asks
POST /v1/studies/{id}/suggest; for a trial (config arch=c, budget b,
resume_from r) it is charged the recorded seconds of epochs e0+1..b of row c,
where e0 is the epoch trial r reached (0 without resume_from), and finishes at
now + that time. Finishes are popped from a priority queue in simulated-time
order (ties: the order the trials started) and only then sent to the daemon:
one measurement (step b, the recorded val_loss, elapsed_seconds) and complete
({"value": loss} or {"value": null, "reason": "diverged"}). A worker answered
{"trials": [], "retry_after_ms": n} idles until the next finish in the
simulation and asks again then; no real time is spent waiting.

A run stops when the table's best config has been trained to 50 epochs (no
better value exists, so the anytime curve is flat from there on), when the
epochs trained reach the cap, or when the study is done. Methods that end
(successive_halving) are repeated with a fresh study (seed*1000+k) until then.

Usage: replay_daemon.py --url 127.0.0.1:PORT --token-file DB.admin-token
       --methods random,successive_halving,hyperband,asha --seeds 0-19
       --workers 1,8 --cap 50000 --out results.json
"""

import argparse
import heapq
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_common import MAX_EPOCHS, ApiError, Client, Table, Trace, study_body  # noqa: E402

# method label -> (scheduler name, options, repeat when the study is done)
METHODS = {
    "random": ("random", {}, False),
    # one bracket of 81 configs, eta 3: rounds at cumulative 2, 8, 26, 50 epochs
    # (r_k = floor(648 / (|S_k| * 4))); 558 epochs, 3 configs trained to 50.
    "successive_halving": ("successive_halving", {"n": 81, "eta": 3, "budget": 648}, True),
    # R = 50, eta = 3 (s_max = 3, rungs floor(50*3^(i-s))), brackets repeated forever
    "hyperband": ("hyperband", {"eta": 3, "iterations": 0}, False),
    # eta 3, r_min = resource.min: rungs 1, 3, 9 and, as asha.c documents, the top
    # rung at resource.max = 50 (not 27)
    "asha": ("asha", {"eta": 3}, False),
    # not run by default: r_min = 50/27, rungs 2, 5, 16, 50 (every promotion by ~3x)
    "asha_rmin2": ("asha", {"eta": 3, "r_min": 50.0 / 27.0}, False),
}


class Run:
    def __init__(self, client, table, method, seed, workers, cap, log=None):
        self.c = client
        self.table = table
        self.method = method
        self.sched, self.options, self.repeat = METHODS[method]
        self.seed = seed
        self.W = workers
        self.cap = cap
        self.trace = Trace(table, workers, cap)
        self.heap = []            # (finish_t, seq, worker)
        self.seq = 0
        self.now = 0.0
        self.running = {}         # worker -> job dict
        self.waiting = []         # workers told "retry later"
        self.finished = set()     # workers told "done" by the current study
        self.reached = {}         # trial id -> epoch its run stands at (for resume_from)
        self.trial_config = {}    # trial id -> arch
        self.studies = []
        self.study_id = None
        self.new_configs = 0      # trials without resume_from: configs started from scratch
        self.problems = []
        self.log = log

    # -- daemon side -------------------------------------------------------
    def new_study(self):
        k = len(self.studies)
        seed = self.seed * 1000 + k if self.repeat else self.seed
        name = "replay-%s-w%d-s%d-%d-%d" % (self.method, self.W, self.seed, k, os.getpid())
        s = self.c.call("POST", "/v1/studies", study_body(name, self.sched, self.options, seed))
        self.study_id = s["id"]
        self.studies.append(s["id"])
        self.finished.clear()

    def ask(self, w):
        """Worker w asks for work at self.now; returns True when it got a trial."""
        r = self.c.call("POST", "/v1/studies/%d/suggest" % self.study_id, {"worker": "w%d" % w, "count": 1})
        trials = r.get("trials") or []
        if not trials:
            if r.get("done"):
                self.finished.add(w)
            else:
                self.trace.idle_waits += 1
                if w not in self.waiting:
                    self.waiting.append(w)
            return False
        tr = trials[0]
        tid = tr["id"]
        arch = tr["config"]["arch"]
        budget = tr["budget"]
        if abs(budget - round(budget)) > 1e-9 or not (1 <= budget <= MAX_EPOCHS):
            self.problem("trial %d: budget %r is not an integer in [1, 50]" % (tid, budget))
        rf = tr.get("resume_from")
        e0 = 0
        if rf is None:
            self.new_configs += 1
        if rf is not None:
            if rf not in self.reached:
                self.problem("trial %d: resume_from %r is not a finished trial of this run" % (tid, rf))
            else:
                if self.trial_config[rf] != arch:
                    self.problem("trial %d (arch %d): resume_from %d has arch %d" % (tid, arch, rf,
                                                                                   self.trial_config[rf]))
                e0 = self.reached[rf]
                if e0 > budget:
                    self.problem("trial %d: budget %r below the %d epochs of resume_from %d" % (tid, budget, e0, rf))
        epochs, secs, reached, value = self.table.train(arch, e0, budget)
        job = {"id": tid, "arch": arch, "budget": int(round(budget)), "e0": min(e0, reached), "start": self.now,
               "epochs": epochs, "secs": secs, "reached": reached, "value": value, "sched": tr.get("scheduler")}
        self.running[w] = job
        self.trial_config[tid] = arch
        heapq.heappush(self.heap, (self.now + secs, self.seq, w))
        self.seq += 1
        return True

    def report(self, job):
        tid = job["id"]
        if job["value"] is None:
            self.c.call("POST", "/v1/trials/%d/complete" % tid,
                        {"value": None, "reason": "diverged", "elapsed_seconds": job["secs"]})
            return
        m = self.c.call("POST", "/v1/trials/%d/measurements" % tid,
                        {"step": job["reached"], "value": job["value"], "elapsed_seconds": job["secs"]})
        if m.get("action") == "stop":
            self.problem("trial %d: measurement at its own budget answered stop (%s)" % (tid, m.get("reason")))
        self.c.call("POST", "/v1/trials/%d/complete" % tid, {"value": job["value"], "elapsed_seconds": job["secs"]})

    def problem(self, msg):
        if len(self.problems) < 20:
            self.problems.append(msg)

    # -- simulation --------------------------------------------------------
    def epochs_now(self):
        n = self.trace.epochs_done
        for j in self.running.values():
            n += self.table.epochs_done_by(j["arch"], j["e0"], j["start"], self.now)
        return n

    def busy_running(self):
        return sum(min(self.now - j["start"], j["secs"]) for j in self.running.values())

    def wake_waiting(self):
        for w in list(self.waiting):
            self.waiting.remove(w)
            self.ask(w)

    def run(self):
        t0 = time.time()
        calls0 = self.c.calls
        self.new_study()
        for w in range(self.W):
            self.ask(w)
        reason = None
        while True:
            if not self.heap:
                if self.repeat and len(self.finished) + len(self.waiting) == self.W and self.finished:
                    self.waiting.clear()
                    self.new_study()
                    for w in range(self.W):
                        self.ask(w)
                    if self.heap:
                        continue
                if self.finished and not self.waiting:
                    reason = "study_done"
                elif self.waiting:
                    reason = "stalled"
                    self.problem("stalled at t=%.0f: %d workers told to retry while no trial runs" %
                                 (self.now, len(self.waiting)))
                else:
                    reason = "study_done"
                break
            t, _, w = heapq.heappop(self.heap)
            self.now = t
            job = self.running.pop(w)
            self.report(job)
            self.reached[job["id"]] = job["reached"]
            epochs = self.epochs_now() + job["epochs"]
            self.trace.finish_trial(t, epochs, job["arch"], job["budget"], job["epochs"], job["secs"], job["value"])
            if self.trace.found_table_best():
                reason = "found_best"
                break
            if epochs >= self.cap:
                reason = "cap"
                break
            self.ask(w)
            self.wake_waiting()
        self.trace.close(self.now, self.epochs_now() + 0, self.busy_running(), reason)
        # leave the study's trials as they are; delete to keep the database small
        for sid in self.studies:
            try:
                self.c.call("DELETE", "/v1/studies/%d" % sid)
            except ApiError as e:
                self.problem("DELETE study %d: %s" % (sid, e))
        return self.trace.to_json(method=self.method, source="banditd", seed=self.seed, scheduler=self.sched,
                                  options=self.options, studies=len(self.studies), problems=self.problems,
                                  new_configs=self.new_configs,
                                  http_calls=self.c.calls - calls0, real_seconds=time.time() - t0)


def available(client, method):
    """Does the daemon know this scheduler (and accept its options)?"""
    sched, options, _ = METHODS[method]
    try:
        s = client.call("POST", "/v1/studies", study_body("replay-probe-%s-%d" % (method, os.getpid()), sched,
                                                          options, 1))
    except ApiError as e:
        if e.status == 400:
            print("  %s: %s" % (method, e), file=sys.stderr)
            return False
        raise
    client.call("DELETE", "/v1/studies/%d" % s["id"])
    return True


def parse_list(s, conv=str):
    out = []
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        if conv is int and "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(conv(part))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--methods", default="random,successive_halving,hyperband,asha")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--workers", default="1,8")
    ap.add_argument("--cap", type=int, default=50000, help="epochs per run")
    ap.add_argument("--table", default=None)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    table = Table(a.table) if a.table else Table()
    token = open(a.token_file).read().strip()
    client = Client(a.url, token)
    results = []
    unavailable = []
    for method in parse_list(a.methods):
        if method not in METHODS:
            sys.exit("unknown method %r (known: %s)" % (method, ", ".join(METHODS)))
        if not available(client, method):
            print("banditd %-19s not available in this daemon: skipped" % method, file=sys.stderr)
            unavailable.append(method)
            continue
        for W in parse_list(a.workers, int):
            t0 = time.time()
            for seed in parse_list(a.seeds, int):
                try:
                    res = Run(client, table, method, seed, W, a.cap).run()
                except ApiError as e:
                    res = {"method": method, "source": "banditd", "seed": seed, "workers": W, "error": str(e)}
                    print("  %s W=%d seed=%d: %s" % (method, W, seed, e), file=sys.stderr)
                results.append(res)
            done = [r for r in results if r["method"] == method and r["workers"] == W]
            errs = sum(1 for r in done if "error" in r)
            probs = sum(len(r.get("problems", [])) for r in done)
            print("banditd %-19s W=%d: %d runs in %.1f s, %d errors, %d problems" %
                  (method, W, len(done), time.time() - t0, errs, probs), file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump({"table_best": table.best, "thresholds": table.thresholds, "runs": results,
                   "unavailable": unavailable}, f)


if __name__ == "__main__":
    main()
