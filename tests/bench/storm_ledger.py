"""storm_ledger: the client-side ledger of acknowledged writes and its check
against the database, shared by the storms that kill daemons under load
(kill_storm.py: one daemon on SQLite; failover_storm.py: a cluster on
PostgreSQL). Standard library only.

A worker records a write only once a daemon acknowledged it (2xx), so after
the storm every ledger entry must be in the database as acknowledged (else it
is LOST), and the database must hold nothing a worker was not acknowledged
(else a retried request acted twice: a PHANTOM). verify() reads everything
back through a daemon's HTTP API, so the check is the same for both stores.
"""

import collections
import threading


class Ledger:
    """One worker's acknowledged writes (merged after the run; no locks)."""

    def __init__(self):
        self.trials = {}        # trial id -> (study id, config)
        self.measurements = {}  # trial id -> {step: value}
        self.completed = {}     # trial id -> value
        self.stopped = set()    # trials whose measurement answered "stop"
        self.abandoned = set()  # trials the worker dropped mid-flight ("died")
        self.lease_lost = set() # trials answered 409 (not running) on a measurement or completion
        self.unexpected = []    # (what, status, body) of answers neither 2xx nor 409
        self.retries = 0        # requests sent again after getting no answer
        self.calls = 0          # answered requests

    def merge(self, o):
        self.trials.update(o.trials)
        for tid, m in o.measurements.items():
            self.measurements.setdefault(tid, {}).update(m)
        self.completed.update(o.completed)
        self.stopped |= o.stopped
        self.abandoned |= o.abandoned
        self.lease_lost |= o.lease_lost
        self.unexpected += o.unexpected
        self.retries += o.retries
        self.calls += o.calls

    def writes(self):
        return len(self.trials) + sum(len(m) for m in self.measurements.values()) + len(self.completed)

    def n_measurements(self):
        return sum(len(m) for m in self.measurements.values())


def expected_state(ledger, tid):
    """The state an acknowledged trial must end in."""
    if tid in ledger.completed:
        return "completed"
    if tid in ledger.stopped:
        return "stopped"
    return "expired"  # abandoned, or its lease ran out while no daemon could take its measurements


def verify(d, ledger, studies, bdtest, threads=8):
    """Reads every acknowledged trial back through daemon d (a bdtest.Daemon).
    Returns (lost, phantoms, states, listed): lost and phantoms are lists of
    descriptions, states maps each ledger trial id -> stored state, listed maps
    every trial id the studies hold -> state (the trials as stored, with their
    "scheduler" fields, are in listed_trials, a list, as the fifth element)."""
    lost, phantom, states = [], [], {}
    tids = sorted(ledger.trials)
    lock = threading.Lock()

    def check(chunk):
        c = d.client(timeout=30)
        for tid in chunk:
            sid, config = ledger.trials[tid]
            st, t, _ = c.request("GET", "/v1/trials/%d" % tid)
            bad, extra = [], []
            if st != 200:
                bad.append("trial %d: GET -> %d %r (trial, %d measurement(s)%s lost)"
                           % (tid, st, t, len(ledger.measurements.get(tid, {})),
                              ", completion" if tid in ledger.completed else ""))
                with lock:
                    lost.extend(bad)
                continue
            if t["study_id"] != sid or t["config"] != config:
                bad.append("trial %d: study %r config %r, acknowledged study %d config %r"
                           % (tid, t["study_id"], t["config"], sid, config))
            stored = collections.defaultdict(list)
            for m in t.get("measurements", []):
                stored[m["step"]].append(m["value"])
            acked = ledger.measurements.get(tid, {})
            for step, value in acked.items():
                if stored.get(step) != [value]:
                    bad.append("trial %d step %r: acknowledged %r, stored %r" % (tid, step, value, stored.get(step)))
            for step in set(stored) - set(acked):
                extra.append("trial %d step %r: stored %r, never acknowledged" % (tid, step, stored[step]))
            if tid in ledger.completed and (t["state"] != "completed" or t.get("value") != ledger.completed[tid]):
                bad.append("trial %d: acknowledged completion %r, stored state %s value %r"
                           % (tid, ledger.completed[tid], t["state"], t.get("value")))
            with lock:
                lost.extend(bad)
                phantom.extend(extra)
                states[tid] = t["state"]
        c.close()

    per = max(1, (len(tids) + threads - 1) // threads)
    ts = [threading.Thread(target=check, args=(tids[i:i + per],)) for i in range(0, len(tids), per)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    listed, listed_trials = {}, []
    for s in studies:
        for t in bdtest.list_all_trials(d, s["id"], limit=1000):
            listed[t["id"]] = t["state"]
            listed_trials.append(t)
    for tid in sorted(set(listed) - set(ledger.trials)):
        phantom.append("trial %d (%s): in the database, never handed to a worker" % (tid, listed[tid]))
    return lost, phantom, states, listed, listed_trials
