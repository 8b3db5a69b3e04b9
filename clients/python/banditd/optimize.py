"""banditd.optimize: the tuning loop on a banditd.Client: a Study and
Study.optimize(fn), which asks the daemon for trials, runs the user's objective
fn(config, budget, report) on each, and reports what it returns.
banditd.client imports this module (Client.study returns a Study); this one
imports only banditd.errors of the package.

    study = client.study("demo", parameters, "hyperband", options={"eta": 3},
                         objective={"metric": "loss", "goal": "minimize"},
                         resource={"name": "epochs", "min": 1, "max": 27, "integer": True})
    result = study.optimize(fn, n_workers=2)

How the loop treats each answer and outcome:
- suggest answers retry_after_ms: the worker sleeps that long, at most
  MAX_RETRY_SLEEP seconds and never past the timeout; done: every worker ends.
- While fn runs, a heartbeat thread renews the trial's lease every
  lease_seconds / 3, so a trial longer than its lease is not taken away.
- report(step, value) sends a measurement. When the daemon answers "stop"
  (or no longer runs the trial) report raises TrialStopped, which fn may let
  propagate (the usual way) or catch; either way the loop sends nothing more
  for that trial. A NaN or infinite value passed to report ends the trial as
  diverged and raises TrialStopped too.
- fn's return value: a finite number completes the trial; NaN or +-inf
  completes it as diverged ({"value": null, "reason": ...}); a dict sends its
  value / status ("timeout") / runtime / elapsed_seconds / reason as the
  complete body (for instance-based studies such as spc); anything else, or an
  exception, fails the trial with the exception's text. After max_failures
  failed or lost trials the loop stops and raises TooManyFailures.
- KeyboardInterrupt fails the running trials ("interrupted") so the study can
  hand them out again, and is raised again from optimize().

Invariants: every trial the loop took ends on the daemon in a final state
(completed, stopped or failed) or was refused by it (its lease ran out and the
daemon expired it: counted as lost), except when the process is killed.
Only threads are used: the objective's heavy work (NumPy, scikit-learn) runs
in C and releases the GIL, and threads share one Client and its connections.
"""

import logging
import math
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from banditd.errors import BanditdError

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from typing import Protocol, Union

    class Client(Protocol):
        """What the loop calls of its client: these methods of banditd.Client,
        with their signatures (banditd.client imports this module for
        Client.study, so this one names no class of it)."""

        def create_study(self, name: str, parameters: List[Dict[str, Any]], scheduler: Union[str, Dict[str, Any]],
                         options: Optional[Dict[str, Any]] = ..., objective: Optional[Dict[str, Any]] = ...,
                         resource: Optional[Dict[str, Any]] = ..., seed: Optional[int] = ...,
                         lease_seconds: Optional[float] = ..., idempotency_key: Optional[str] = ...,
                         metadata: Optional[Dict[str, Any]] = ..., **extra: Any) -> Dict[str, Any]:
            ...

        def get_study(self, study_id: int) -> Dict[str, Any]:
            ...

        def suggest(self, study_id: int, worker: Optional[str] = ..., count: Optional[int] = ...,
                    idempotency_key: Optional[str] = ...) -> Dict[str, Any]:
            ...

        def measure(self, trial_id: int, step: float, value: float, elapsed_seconds: Optional[float] = ...,
                    idempotency_key: Optional[str] = ...) -> Dict[str, Any]:
            ...

        def complete(self, trial_id: int, value: Any = ..., status: Optional[str] = ...,
                     runtime: Optional[float] = ..., elapsed_seconds: Optional[float] = ...,
                     reason: Optional[str] = ..., idempotency_key: Optional[str] = ...,
                     user_attrs: Optional[Dict[str, Any]] = ...) -> Dict[str, Any]:
            ...

        def fail(self, trial_id: int, reason: Optional[str] = ...,
                 idempotency_key: Optional[str] = ...) -> Dict[str, Any]:
            ...

        def heartbeat(self, trial_id: int, idempotency_key: Optional[str] = ...) -> Dict[str, Any]:
            ...

        def close_thread(self) -> None:
            ...


__all__ = ["Study", "Reporter", "TrialStopped", "TooManyFailures", "OptimizeResult", "Objective",
           "MAX_RETRY_SLEEP"]

log = logging.getLogger("banditd")

MAX_RETRY_SLEEP = 10.0  # seconds: the longest nap on retry_after_ms, so a stop or a deadline is seen
MAX_REASON = 1000  # characters: the daemon refuses longer reasons (server/engine_trials.c)
MAX_WORKERS = 256  # a bound on the threads one call starts
_MIN_BEAT = 0.05  # seconds: the shortest heartbeat period, whatever lease_seconds says
_COMPLETE_KEYS = ("value", "status", "runtime", "elapsed_seconds", "reason")

#: The objective: fn(config, budget, report) -> a number, or a dict for complete.
Objective = Callable[[Dict[str, Any], Any, "Reporter"], Any]


class TrialStopped(Exception):
    """Raised by report() when the trial must end now: the scheduler stopped it
    (early stopping), the value was not finite (diverged), the run was
    interrupted, or the daemon no longer runs it (its lease ran out)."""

    def __init__(self, trial_id: int, step: Any, reason: str) -> None:
        super().__init__(trial_id, step, reason)
        self.trial_id = trial_id  #: the trial that ended
        self.step = step  #: the step of the report that ended it
        self.reason = reason  #: the daemon's reason, or why the loop ended it

    def __str__(self) -> str:
        return "trial %d stopped at step %s: %s" % (self.trial_id, self.step, self.reason)


@dataclass
class OptimizeResult:
    """What one optimize() call did, and the study's best trial afterwards.

    The counts are of this call's trials only; best_* come from the daemon's
    incumbent for the whole study (in the objective's own orientation)."""

    study_id: int
    trials: int = 0  #: trials this call ran
    completed: int = 0  #: completed with a value (timeouts and diverged runs included)
    diverged: int = 0  #: completed with value null (NaN or inf)
    timeouts: int = 0  #: completed with status "timeout"
    stopped: int = 0  #: stopped early by the scheduler
    failed: int = 0  #: failed (fn raised or returned something unusable, or interrupted)
    lost: int = 0  #: refused by the daemon (lease ran out, trial ended by someone else)
    stop_reason: str = ""  #: done, n_trials, timeout, max_failures, interrupted or error
    best_value: Optional[float] = None  #: the incumbent's value (None: no completed trial yet)
    best_config: Optional[Dict[str, Any]] = None  #: the incumbent's config
    best_trial_id: Optional[int] = None  #: the incumbent trial
    best: Optional[Dict[str, Any]] = None  #: the study's incumbent as the daemon describes it
    errors: List[str] = field(default_factory=list)  #: the last failure reasons (at most 20)


class TooManyFailures(RuntimeError):
    """optimize() stopped after max_failures failed trials; .result is its summary."""

    def __init__(self, result: OptimizeResult) -> None:
        last = result.errors[-1] if result.errors else "?"
        super().__init__("%d trials of study %d failed and %d were lost; the last: %s"
                         % (result.failed, result.study_id, result.lost, last))
        self.result = result  #: the OptimizeResult of the call


class _Run:
    """One trial while fn runs: who ends it on the daemon happens once, under lock."""

    def __init__(self, trial: Dict[str, Any]) -> None:
        self.trial = trial
        self.id = int(trial["id"])
        self.lock = threading.Lock()
        self.ended: Optional[str] = None  # stopped, diverged, lost, failed; None while running
        self.reason = ""
        self.started = time.monotonic()

    def claim(self, how: str, reason: str) -> bool:
        """Marks the trial ended; False when it already was (then the caller sends nothing)."""
        with self.lock:
            if self.ended is not None:
                return False
            self.ended, self.reason = how, reason
            return True


class Reporter:
    """The report function handed to the objective: report(step, value,
    elapsed_seconds=None) sends an intermediate value and returns the daemon's
    answer ({"action": "continue", ...}); it raises TrialStopped when the trial
    must end. `trial` is the trial as suggest returned it (id, config, budget,
    resume_from for checkpoints, instance for instance-based studies)."""

    def __init__(self, loop: "_Loop", run: _Run) -> None:
        self._loop = loop
        self._run = run
        self.trial: Dict[str, Any] = run.trial  #: the trial as suggest returned it

    def __call__(self, step: Any, value: float, elapsed_seconds: Optional[float] = None) -> Dict[str, Any]:
        """Sends value at step (epochs so far, in the study's resource units);
        returns the daemon's answer or raises TrialStopped."""
        run, client = self._run, self._loop.client
        if run.ended is not None:
            raise TrialStopped(run.id, step, run.reason)
        v = float(value)
        if not math.isfinite(v):
            reason = _cut("diverged: value %r at step %s" % (v, step))
            if run.claim("diverged", reason) and self._loop.finish(
                    run, lambda: client.complete(run.id, value=None, reason=reason,
                                                 elapsed_seconds=self._loop.elapsed(run))):
                self._loop.count("completed")
                self._loop.count("diverged")
            raise TrialStopped(run.id, step, run.reason)
        try:
            answer = client.measure(run.id, step, v, elapsed_seconds=elapsed_seconds)
        except BanditdError as e:
            if e.status not in (404, 409):
                raise
            # Ended on the daemon: by someone else (lost), or by this loop meanwhile (an interrupt).
            if run.claim("lost", "the daemon no longer runs this trial: %s" % e):
                self._loop.count("lost", str(e))
            raise TrialStopped(run.id, step, run.reason) from None
        if answer.get("action") == "stop":
            reason = answer.get("reason") or "stopped by the scheduler"
            # The daemon has already marked the trial stopped: nothing more to send.
            if run.claim("stopped", reason):
                self._loop.count("stopped")
            raise TrialStopped(run.id, step, reason)
        return answer


class _Heartbeat(threading.Thread):
    """Renews one trial's lease every `every` seconds until stopped."""

    def __init__(self, client: "Client", trial_id: int, every: float) -> None:
        super().__init__(name="banditd-heartbeat-%d" % trial_id, daemon=True)
        self.client, self.trial_id, self.every = client, trial_id, every
        self.halt = threading.Event()
        self.beats = 0

    def run(self) -> None:
        try:
            while not self.halt.wait(self.every):
                try:
                    self.client.heartbeat(self.trial_id)
                    self.beats += 1
                except BanditdError as e:
                    if e.status in (404, 409):  # the trial ended: nothing left to keep alive
                        return
                    log.warning("heartbeat of trial %d: %s", self.trial_id, e)
                except OSError as e:  # the client already retried; try again next period
                    log.warning("heartbeat of trial %d: %s", self.trial_id, e)
        finally:
            self.client.close_thread()


class _Loop:
    """The shared state of one optimize() call and its workers."""

    def __init__(self, study: "Study", fn: Objective, n_workers: int, n_trials: Optional[int],
                 timeout: Optional[float], worker_name: str, max_failures: Optional[int]) -> None:
        self.study, self.client, self.fn = study, study.client, fn
        self.n_workers, self.n_trials, self.worker_name = n_workers, n_trials, worker_name
        self.max_failures = max_failures
        self.deadline = None if timeout is None else time.monotonic() + timeout
        lease = float(study.doc.get("lease_seconds") or 300)
        self.beat_every = max(_MIN_BEAT, lease / 3.0)
        self.lock = threading.Lock()
        self.halted = threading.Event()
        self.result = OptimizeResult(study_id=study.id)
        self.taken = 0  # trials asked for or running (n_trials slots)
        self.running: Dict[int, _Run] = {}
        self.error: Optional[BaseException] = None
        self.active = 0  # worker threads still running
        self.all_ended = threading.Event()  # set when the last worker thread ends

    # ---- bookkeeping ----

    def halt(self, reason: str) -> None:
        with self.lock:
            if not self.result.stop_reason:
                self.result.stop_reason = reason
        self.halted.set()

    def count(self, what: str, reason: Optional[str] = None) -> None:
        with self.lock:
            setattr(self.result, what, getattr(self.result, what) + 1)
            if reason is not None:
                self.result.errors = (self.result.errors + [reason])[-20:]
            # Lost trials count too: a loop whose every trial expires must end as well.
            over = (what in ("failed", "lost") and self.max_failures is not None
                    and self.result.failed + self.result.lost >= self.max_failures)
        if over:
            self.halt("max_failures")

    def take_slot(self) -> bool:
        """Claims one of n_trials before asking, so no trial is taken and then dropped."""
        with self.lock:
            if self.n_trials is not None and self.taken >= self.n_trials:
                return False
            self.taken += 1
            return True

    def give_back_slot(self) -> None:
        with self.lock:
            self.taken -= 1

    def elapsed(self, run: _Run) -> float:
        return time.monotonic() - run.started

    def finish(self, run: _Run, send: Callable[[], Any]) -> bool:
        """Sends a trial's final report; False when the daemon no longer runs the
        trial (409: its lease ran out), which is then counted as lost."""
        try:
            send()
        except BanditdError as e:
            if e.status != 409:
                raise
            with run.lock:
                run.ended, run.reason = "lost", str(e)
            self.count("lost", str(e))
            log.warning("trial %d: the daemon refused the final report: %s", run.id, e)
            return False
        return True

    # ---- workers ----

    def worker(self, index: int) -> None:
        """One worker's loop: suggest, run, report, until done or told to stop."""
        name = self.worker_name if self.n_workers == 1 else "%s-%d" % (self.worker_name, index)
        while not self.halted.is_set():
            if self.deadline is not None and time.monotonic() >= self.deadline:
                self.halt("timeout")
                return
            if not self.take_slot():
                self.halt("n_trials")
                return
            try:
                answer = self.client.suggest(self.study.id, worker=name)
            except BaseException:
                self.give_back_slot()
                raise
            trials = answer.get("trials") or []
            if not trials:
                self.give_back_slot()
                if answer.get("done"):
                    self.halt("done")
                    return
                nap = min(max(float(answer.get("retry_after_ms") or 500), 1.0) / 1000.0, MAX_RETRY_SLEEP)
                if self.deadline is not None:
                    nap = min(nap, max(0.0, self.deadline - time.monotonic()))
                self.halted.wait(nap)
                continue
            for extra in trials[1:]:  # suggest without count answers one; never leave one running
                self.client.fail(int(extra["id"]), reason="not run: the loop asked for one trial")
            self.run_trial(trials[0])

    def run_trial(self, trial: Dict[str, Any]) -> None:
        run = _Run(trial)
        with self.lock:
            self.running[run.id] = run
            self.result.trials += 1
        beat = _Heartbeat(self.client, run.id, self.beat_every)
        beat.start()
        try:
            self.call(run)
        finally:
            beat.halt.set()
            beat.join(1.0)
            with self.lock:
                self.running.pop(run.id, None)

    def call(self, run: _Run) -> None:
        """Runs fn on the trial and sends its outcome."""
        report = Reporter(self, run)
        try:
            out = self.fn(dict(run.trial.get("config") or {}), run.trial.get("budget"), report)
        except TrialStopped:
            if run.ended is None:  # fn raised it for a trial report() did not end
                self.fail(run, "fn raised TrialStopped for a trial the daemon did not stop")
            return
        except KeyboardInterrupt:
            self.halt("interrupted")
            self.fail(run, "interrupted (KeyboardInterrupt)")
            raise
        except Exception as e:  # the objective's own error: fail the trial, the loop goes on
            self.fail(run, "%s: %s" % (type(e).__name__, e))
            log.warning("trial %d failed: %s: %s", run.id, type(e).__name__, e)
            return
        if run.ended is not None:  # stopped, diverged or lost while fn ran: its return is moot
            return
        try:
            body = _complete_body(out, self.elapsed(run))
        except (TypeError, ValueError) as e:
            self.fail(run, str(e))
            return
        diverged = "value" in body and body["value"] is None
        if not run.claim("diverged" if diverged else "completed", body.get("reason", "")):
            return  # interrupted meanwhile: already failed
        try:
            sent = self.finish(run, lambda: self.client.complete(run.id, **body))
        except BanditdError as e:
            if e.status != 400:
                raise
            # The daemon refused what fn returned (say a negative runtime): say so, end the trial.
            with run.lock:
                run.ended = None
            self.fail(run, "the daemon refused fn's result %r: %s" % (out, e))
            return
        if sent:
            self.count("completed")
            if diverged:
                self.count("diverged")
            if body.get("status") == "timeout":
                self.count("timeouts")

    def fail(self, run: _Run, reason: str) -> None:
        """Fails a running trial once (from its worker or from an interrupt)."""
        reason = _cut(reason)
        if not run.claim("failed", reason):
            return
        if self.finish(run, lambda: self.client.fail(run.id, reason=reason)):
            self.count("failed", "trial %d: %s" % (run.id, reason))

    def interrupt(self) -> None:
        """KeyboardInterrupt in the calling thread: fail every running trial so the
        study can hand it out again; their fn sees TrialStopped at its next report."""
        self.halt("interrupted")
        with self.lock:
            runs = list(self.running.values())
        for run in runs:
            try:
                self.fail(run, "interrupted (KeyboardInterrupt)")
            except (BanditdError, OSError) as e:
                log.warning("trial %d: could not fail it after the interrupt: %s", run.id, e)

    def thread_main(self, index: int) -> None:
        try:
            self.worker(index)
        except BaseException as e:  # handed to the calling thread, which raises it
            with self.lock:
                if self.error is None:
                    self.error = e
            self.halt("interrupted" if isinstance(e, KeyboardInterrupt) else "error")
        finally:
            self.client.close_thread()
            with self.lock:
                self.active -= 1
                if self.active == 0:
                    self.all_ended.set()


def _cut(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON else reason[:MAX_REASON - 3] + "..."


def _complete_body(out: Any, elapsed: float) -> Dict[str, Any]:
    """The body of POST /v1/trials/{id}/complete for what fn returned."""
    if isinstance(out, dict):
        unknown = sorted(set(out) - set(_COMPLETE_KEYS))
        if unknown:
            raise ValueError("fn returned a dict with unknown keys %s (known: %s)"
                             % (", ".join(unknown), ", ".join(_COMPLETE_KEYS)))
        body = dict(out)
        if "value" not in body and body.get("status") != "timeout":
            raise ValueError("fn returned a dict without a value (and without status \"timeout\")")
    elif isinstance(out, (int, float)) and not isinstance(out, bool):
        body = {"value": out}
    else:
        raise TypeError("fn returned %r: it must return a number, or a dict with value, status, runtime, "
                        "elapsed_seconds, reason" % (out,))
    v = body.get("value")
    if v is not None:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError("fn returned the value %r: it must be a number" % (v,))
        if not math.isfinite(v):
            body["value"] = None
            body.setdefault("reason", "diverged: fn returned %r" % (v,))
    elif "value" in body:
        body.setdefault("reason", "diverged")
    body.setdefault("elapsed_seconds", elapsed)
    return body


class Study:
    """A study on the daemon: create or load it with Client.study() (or
    Study.create / Study.load), then run optimize()."""

    def __init__(self, client: "Client", doc: Dict[str, Any]) -> None:
        self.client = client  #: the Client every request goes through
        self.doc: Dict[str, Any] = doc  #: the study as the daemon last described it
        self.id: int = int(doc["id"])  #: the study's id

    @property
    def name(self) -> str:
        """The study's name."""
        return str(self.doc["name"])

    def __repr__(self) -> str:
        return "Study(id=%d, name=%r)" % (self.id, self.doc.get("name"))

    @classmethod
    def create(cls, client: "Client", name: str, parameters: List[Dict[str, Any]], scheduler: Any,
               if_exists: Optional[str] = None, **kwargs: Any) -> "Study":
        """Creates a study (the arguments of Client.create_study). if_exists:
        None or "error" (the daemon's default: a study of the caller with that
        name is a 409 naming "name"), "load" (answers that study when its
        definition is the same; a different one is a 409 naming the field) or
        "create" (another study of the same name). The daemon decides
        atomically, so two clients loading at once get one study."""
        if if_exists is None:
            return cls(client, client.create_study(name, parameters, scheduler, **kwargs))
        return cls(client, client.create_study(name, parameters, scheduler, if_exists=if_exists, **kwargs))

    @classmethod
    def load(cls, client: "Client", study_id: int) -> "Study":
        """Loads an existing study of the caller by id."""
        return cls(client, client.get_study(study_id))

    def refresh(self) -> Dict[str, Any]:
        """Fetches the study again (trial counts, incumbent, state); returns it."""
        self.doc = self.client.get_study(self.id)
        return self.doc

    @property
    def best(self) -> Optional[Dict[str, Any]]:
        """The daemon's incumbent as last fetched ({trial_id, config, value, budget} or None)."""
        return self.doc.get("incumbent")

    def optimize(self, fn: Objective, n_workers: int = 1, n_trials: Optional[int] = None,
                 timeout: Optional[float] = None, worker_name: Optional[str] = None,
                 max_failures: Optional[int] = 10) -> OptimizeResult:
        """Runs fn(config, budget, report) on the study's trials until the study is
        done, n_trials trials were run, timeout seconds passed (no new trial
        starts after it; running ones finish) or max_failures trials failed or
        were lost (then raises TooManyFailures). n_workers threads each run their own
        loop, named worker_name-<i> (default host-pid). Returns an
        OptimizeResult. See the module's docstring for how each outcome is sent."""
        if isinstance(n_workers, bool) or not isinstance(n_workers, int) or not 1 <= n_workers <= MAX_WORKERS:
            raise ValueError("n_workers must be an integer in 1..%d" % MAX_WORKERS)
        if n_trials is not None and (isinstance(n_trials, bool) or not isinstance(n_trials, int) or n_trials < 1):
            raise ValueError("n_trials must be None or an integer >= 1")
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError("timeout must be None or a number of seconds > 0")
        if max_failures is not None and (isinstance(max_failures, bool) or not isinstance(max_failures, int)
                                         or max_failures < 1):
            raise ValueError("max_failures must be None or an integer >= 1")
        if not callable(fn):
            raise TypeError("fn must be callable as fn(config, budget, report)")
        name = worker_name or "%s-%d" % (socket.gethostname(), os.getpid())
        loop = _Loop(self, fn, n_workers, n_trials, timeout, name, max_failures)
        if n_workers == 1:
            # In the calling thread, so Ctrl-C interrupts fn itself.
            try:
                loop.worker(0)
            except KeyboardInterrupt:
                loop.interrupt()
                raise
        else:
            threads = [threading.Thread(target=loop.thread_main, args=(i,), daemon=True,
                                        name="banditd-worker-%d" % i) for i in range(n_workers)]
            loop.active = n_workers
            for t in threads:
                t.start()
            # An Event, not Thread.join: after a join interrupted by Ctrl-C, later
            # joins of that thread returned at once here (CPython 3.11) while it ran on.
            try:
                while not loop.all_ended.wait(0.2):
                    pass
            except KeyboardInterrupt:
                loop.interrupt()
                # The failed trials' fn end at their next report; wait a little for them.
                loop.all_ended.wait(5.0)
                raise
            if loop.error is not None:
                if isinstance(loop.error, KeyboardInterrupt):
                    loop.interrupt()
                raise loop.error
        result = loop.result
        self.refresh()
        inc = self.best
        if isinstance(inc, dict):
            result.best = inc
            result.best_value = inc.get("value")
            result.best_config = inc.get("config")
            result.best_trial_id = inc.get("trial_id")
        if result.stop_reason == "max_failures":
            raise TooManyFailures(result)
        return result
