"""replay_common: the NAS-Bench-NLP replay table, the virtual-worker cost model
and the per-run trace shared by replay_daemon.py and replay_optuna.py.

The study's single parameter "arch" (int 0..344) is a row of
shared/data/curves/nasbench-nlp-wikitext2.jsonl. Training row c from epoch e0
to epoch b costs sum(epoch_seconds[e0:b]) simulated seconds and yields
val_loss[b-1]. A row that diverged after L < 50 epochs stops at epoch L with
a null loss whenever b >= L (b < L still reports the recorded loss).

A Trace records, in simulated order, every finished trial: the simulated time,
the epochs trained so far (finished trials plus the whole epochs that running
trials have finished by that time) and the best epoch-50 val_loss among
configs trained to 50 epochs ("best_final"). Python 3 standard library only.
"""

import bisect
import http.client
import json
import math
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TABLE = os.path.normpath(
    os.path.join(HERE, "..", "..", "..", "shared", "data", "curves", "nasbench-nlp-wikitext2.jsonl"))
MAX_EPOCHS = 50


class Table:
    """The 345 learning curves, indexed by arch = line number (0-based)."""

    def __init__(self, path=DEFAULT_TABLE):
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        self.ids = [r["id"] for r in rows]
        self.val = [r["val_loss"] for r in rows]
        self.secs = [r["epoch_seconds"] for r in rows]
        self.cum = []
        for s in self.secs:
            c, acc = [0.0], 0.0
            for x in s:
                acc += x
                c.append(acc)
            self.cum.append(c)
        self.n = len(rows)
        finals = [v[MAX_EPOCHS - 1] for v in self.val if len(v) == MAX_EPOCHS and v[-1] is not None]
        self.best = min(finals)
        self.worst = max(finals)
        self.n_complete = len(finals)
        # thresholds on the epoch-50 val_loss: name -> value
        self.thresholds = {
            "1%": 1.01 * self.best,
            "5% of range": self.best + 0.05 * (self.worst - self.best),
        }
        self.threshold_rows = {k: sum(1 for f in finals if f <= v) for k, v in self.thresholds.items()}

    def length(self, c):
        """Epochs the run of row c lasted (50, or fewer when it diverged)."""
        return len(self.val[c])

    def train(self, c, e0, b):
        """Continue row c from epoch e0 to budget b.

        Returns (epochs_trained, seconds, reached, value): reached = the epoch the
        run stands at afterwards, value = val_loss there (None when diverged)."""
        b = int(round(b))
        L = self.length(c)
        stop = min(b, L)
        e0 = min(e0, stop)
        secs = self.cum[c][stop] - self.cum[c][e0]
        value = self.val[c][stop - 1] if stop >= 1 else None
        if stop < b:  # diverged before reaching b
            value = None
        return stop - e0, secs, stop, value

    def epochs_done_by(self, c, e0, start, t):
        """Whole epochs a trial of row c started at `start` from epoch e0 has finished by time t."""
        target = self.cum[c][e0] + (t - start)
        return max(0, bisect.bisect_right(self.cum[c], target + 1e-9) - 1 - e0)


class Trace:
    """Anytime record of one run (one method, seed, W)."""

    def __init__(self, table, workers, cap_epochs):
        self.table = table
        self.workers = workers
        self.cap = cap_epochs
        self.best = math.inf
        self.best_config = None
        self.points = []           # [t, epochs, best] whenever best changes
        self.hits = {}             # threshold name -> {"epochs", "time"}
        self.epochs_done = 0       # epochs of finished trials
        self.busy = 0.0            # worker-seconds of finished trials
        self.trials = 0
        self.trials_at_max = 0
        self.diverged = 0
        self.idle_waits = 0        # suggest answers "nothing now"
        self.notes = []
        self.end_time = 0.0
        self.end_epochs = 0
        self.stop_reason = None

    def finish_trial(self, t, epochs_now, config, budget, epochs, secs, value):
        """Record a trial that finished at simulated time t; epochs_now includes it."""
        self.trials += 1
        self.epochs_done += epochs
        self.busy += secs
        if value is None:
            self.diverged += 1
        if budget >= MAX_EPOCHS and value is not None:
            self.trials_at_max += 1
            if value < self.best:
                self.best = value
                self.best_config = config
                self.points.append([t, epochs_now, value])
                for name, thr in self.table.thresholds.items():
                    if name not in self.hits and value <= thr:
                        self.hits[name] = {"epochs": epochs_now, "time": t}

    def found_table_best(self):
        return self.best <= self.table.best

    def close(self, t, epochs_now, busy_running, reason):
        self.end_time = t
        self.end_epochs = epochs_now
        self.stop_reason = reason
        self.busy_total = self.busy + busy_running

    def to_json(self, **extra):
        util = None
        if self.end_time > 0:
            util = self.busy_total / (self.workers * self.end_time)
        d = {
            "workers": self.workers,
            "cap_epochs": self.cap,
            "points": self.points,
            "best": None if self.best == math.inf else self.best,
            "best_config": self.best_config,
            "hits": self.hits,
            "end_time": self.end_time,
            "end_epochs": self.end_epochs,
            "stop_reason": self.stop_reason,
            "utilisation": util,
            "trials": self.trials,
            "trials_at_max": self.trials_at_max,
            "diverged": self.diverged,
            "idle_waits": self.idle_waits,
            "notes": self.notes,
        }
        d.update(extra)
        return d


class Client:
    """One keep-alive HTTP/1.1 connection to banditd (not thread-safe)."""

    def __init__(self, url, token, timeout=60):
        hostport = url.split("://")[-1].rstrip("/")
        self.host, port = hostport.rsplit(":", 1)
        self.port = int(port)
        self.token = token
        self.timeout = timeout
        self.conn = None
        self.calls = 0

    def _connect(self):
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        self.conn.connect()
        import socket
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def call(self, method, path, body=None, ok=(200, 201)):
        data = None if body is None else json.dumps(body)
        headers = {"Authorization": "Bearer " + self.token}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(3):
            try:
                if self.conn is None:
                    self._connect()
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                raw = r.read()
                break
            except (http.client.HTTPException, ConnectionError, OSError):
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
                time.sleep(0.05)
        self.calls += 1
        out = json.loads(raw) if raw else None
        if r.status not in ok:
            raise ApiError(method, path, r.status, out)
        return out

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class ApiError(Exception):
    def __init__(self, method, path, status, body):
        super().__init__("%s %s -> %d %s" % (method, path, status, json.dumps(body)))
        self.status = status
        self.body = body


def study_body(name, scheduler, options, seed, lease_seconds=86400):
    return {
        "name": name,
        "parameters": [{"name": "arch", "type": "int", "low": 0, "high": 344}],
        "objective": {"metric": "val_loss", "goal": "minimize"},
        "resource": {"name": "epochs", "min": 1, "max": MAX_EPOCHS, "integer": True},
        "scheduler": {"name": scheduler, "options": options},
        "seed": seed,
        "lease_seconds": lease_seconds,
    }
