"""banditd.cli_tail: `bdctl tail ID` follows a study live.

Each poll (every --interval seconds) asks for:
- the trials after the highest id seen (pages of PAGE trials, at most
  MAX_PAGES pages per poll, so a burst is caught up over several polls):
  each is a "new trial" line;
- the study's running trials (the same bound): a trial bdctl saw running
  that is no longer among them has changed state; it is read with GET
  /v1/trials/{id} (at most MAX_CHANGED per poll, the rest next time) and
  printed with its new state and value;
- the study itself: a different incumbent is a "new best" line, and the
  study turning done ends the tail (exit 0).
Start-up shows the last --lines existing trials and the current best.
Ctrl-C ends it cleanly (exit 0). The work per poll is bounded whatever
the study's size; memory holds the ids of the running trials only.
"""

import collections
import json
import sys
import time

from .cli_format import config_text, num

PAGE = 1000  # trials per request (the daemon's maximum)
MAX_PAGES = 10
MAX_CHANGED = 200


class Tail:
    def __init__(self, client, study_id, out, as_json=False):
        self.c = client
        self.id = study_id
        self.out = out
        self.as_json = as_json
        self.after = 0            # highest trial id seen
        self.running = set()      # ids seen running, not yet seen finished
        self.best = None          # (trial_id, value) of the last incumbent printed

    # ---- output ----

    def emit(self, event, text, **fields):
        if self.as_json:
            doc = {"event": event, "at": round(time.time(), 3)}
            doc.update(fields)
            self.out.write(json.dumps(doc) + "\n")
        else:
            self.out.write("%s %s\n" % (time.strftime("%H:%M:%S"), text))
        self.out.flush()

    def trial_line(self, t, event="trial"):
        state = t.get("state", "?")
        if state == "running":
            text = "trial %s running  budget %s  worker %s  %s" % (
                t.get("id"), num(t.get("budget")), t.get("worker") or "-", config_text(t.get("config")))
            if t.get("resume_from"):
                text += "  (resumes %s)" % t["resume_from"]
        else:
            text = "trial %s %s  budget %s  value %s%s" % (
                t.get("id"), state, num(t.get("budget")), num(t.get("value")),
                "  timeout" if t.get("timeout") else "")
            if t.get("reason"):
                text += "  (%s)" % t["reason"]
            if event == "trial":
                text += "  " + config_text(t.get("config"))
        t = dict(t)
        t.pop("measurements", None)
        self.emit(event, text, trial=t)

    # ---- polling ----

    def new_trials(self, show=True, keep_last=None):
        """Reads trials past self.after; prints them (or keeps the last keep_last)."""
        last = collections.deque(maxlen=keep_last or 1)
        for _ in range(MAX_PAGES if show else 1 << 30):
            page = self.c.request("GET", "/v1/studies/%d/trials" % self.id,
                                  query={"after": self.after, "limit": PAGE})
            trials = page.get("trials") or []
            for t in trials:
                if t.get("state") == "running":
                    self.running.add(t["id"])
                if show:
                    self.trial_line(t)
                else:
                    last.append(t)
            if trials:
                self.after = max(self.after, max(t["id"] for t in trials))
            if page.get("next_after") is None or not trials:
                break
        return list(last) if keep_last else []

    def changes(self):
        """Prints the trials that left the running state since the last poll."""
        if not self.running:
            return
        still, after = set(), 0
        for _ in range(MAX_PAGES):
            page = self.c.request("GET", "/v1/studies/%d/trials" % self.id,
                                  query={"state": "running", "after": after, "limit": PAGE})
            trials = page.get("trials") or []
            still.update(t["id"] for t in trials)
            nxt = page.get("next_after")
            if nxt is None or not trials or nxt <= after:
                break
            after = nxt
        else:
            return  # more running trials than one poll reads: no conclusion this time
        for tid in sorted(self.running - still)[:MAX_CHANGED]:
            t = self.c.get_trial(tid)
            self.running.discard(tid)
            if t.get("state") != "running":
                self.trial_line(t, event="change")

    def study(self):
        """Prints a new incumbent; returns the study's state."""
        s = self.c.get_study(self.id)
        inc = s.get("incumbent")
        if isinstance(inc, dict):
            key = (inc.get("trial_id"), inc.get("value"))
            if key != self.best:
                self.best = key
                self.emit("best", "new best %s  trial %s  budget %s  %s" % (
                    num(inc.get("value")), inc.get("trial_id"), num(inc.get("budget")),
                    config_text(inc.get("config"))), incumbent=inc)
        return s.get("state")

    def run(self, interval, lines):
        s = self.c.get_study(self.id)  # a 404 here is the error, before any output
        self.emit("study", "following study %s (%s), %s" % (self.id, s.get("name"), s.get("state")),
                  study_id=self.id, state=s.get("state"))
        existing = self.new_trials(show=False, keep_last=max(lines, 1))
        for t in existing[-lines:] if lines > 0 else []:
            self.trial_line(t)
        while True:
            state = self.study()
            if state == "done":
                self.new_trials()
                self.changes()
                self.emit("done", "study %s is done" % self.id, study_id=self.id)
                return 0
            time.sleep(interval)
            self.new_trials()
            self.changes()


def tail(client, study_id, interval, lines, as_json, out=None):
    out = out or sys.stdout
    try:
        return Tail(client, study_id, out, as_json).run(interval, lines)
    except KeyboardInterrupt:
        out.flush()
        return 0
