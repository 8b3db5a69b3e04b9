"""banditd.optuna_storage: an Optuna storage whose one study is a banditd study.

Optuna's trials are banditd's trials: the trial id is banditd's, and the trial
number is the trial's position in the study's id order, from 0 (trials are
never removed one by one, so positions never change). banditd is the one
source of truth for every trial except those this process is running: until
Optuna tells a trial's end, its record (_Run) is local (Optuna requires
RUNNING until then, while banditd may already have stopped it).

- create_new_trial asks banditd's suggest for a trial (waiting out
  retry_after_ms; "done" raises StudyDone) and keeps its lease alive with a
  heartbeat thread; the trial's params start as its banditd config (the
  parameters the study declared, or an enqueued config), and each
  trial.suggest_*() of a name it lacks asks the daemon (ask_param: POST
  /v1/trials/{id}/parameters), so params hold what the trial asked for.
- set_trial_intermediate_value sends a measurement at banditd step = Optuna
  step + step_offset; an answer "stop" (or a lost lease) makes should_prune()
  true. So does the trial's budget, once reached, on a study whose scheduler
  promotes (a multi-fidelity one without "type": "stopping", or bo_bos).
- set_trial_state_values ends the trial on banditd: COMPLETE -> complete
  (with "values": every objective's of a study with several, and the
  constraint values that BanditdSampler.after_trial had constraints_func
  compute, of a study with constraints);
  PRUNED -> nothing after a stop, complete with the last value at the budget,
  else fail with PRUNED_REASON (banditd has no worker-side stop); FAIL -> fail.
- State read back: running -> RUNNING (FAIL when this process ended it and
  banditd refused the report: its lease ran out), completed -> COMPLETE (a
  diverged value null -> the worst infinity), stopped -> PRUNED, failed ->
  FAIL (PRUNED with PRUNED_REASON), expired -> FAIL, any other -> WAITING.
- A parameter's distribution: the one this process gave (search_space=) or
  asked with, else the study's definition of it on the daemon
  (optuna_space.from_parameter).
- get_best_trial is Optuna's rule: the best COMPLETE trial (banditd's best
  completed trial, GET .../trials?order=best); with constraints, the best
  feasible one (banditd's incumbent) once there is one. pareto_front() is
  banditd's front.
- Several objectives: the study's "objectives" are Optuna's directions in
  order, a trial's values its "values" by metric; constraints: the study's
  "constraints" (each {"max": 0}) are the values of constraints_func, read
  back as the system attribute "constraints" (constraint_values()).
- User attributes go to PATCH /v1/trials/{id} {"user_attrs"} and PATCH
  /v1/studies/{id} {"metadata"} (merge); a daemon that answers 404/405 to the
  route keeps them in this process only. System attributes are always local.
"""

import datetime
import logging
import math
import os
import socket
import threading
import time
from typing import Any, Container, Dict, List, Optional, Sequence

import optuna
from optuna.distributions import BaseDistribution
from optuna.study import StudyDirection
from optuna.study._frozen import FrozenStudy
from optuna.study._multi_objective import _get_pareto_front_trials_by_trials
from optuna.trial import FrozenTrial, TrialState

from banditd.client import Client
from banditd.errors import BanditdError
from banditd.optimize import MAX_RETRY_SLEEP, _cut, _Heartbeat
from banditd.optuna_space import from_parameter, grid_of, to_parameter, value_from_banditd

__all__ = ["BanditdStorage", "StudyDone", "PRUNED_REASON", "STUDY_ID"]

log = logging.getLogger("banditd")

_CONSTRAINTS_KEY = "constraints"  # the system attribute Optuna's samplers keep constraints_func's values in
STUDY_ID = 0  # the Optuna study id of a storage's one study (banditd's id is BanditdStorage.banditd_id)
#: The reason of a failed banditd trial that the objective pruned itself (read back as PRUNED).
PRUNED_REASON = "pruned by the objective (optuna.TrialPruned without a stop from banditd)"
_PAGE = 1000  # trials per listing page (the daemon's largest)
#: The schedulers whose trials train to a budget below resource.max (api/openapi.yaml: those that
#: need a resource), unless "type": "stopping" gives each trial the whole resource.
_BUDGETED = ("successive_halving", "hyperband", "asha", "bo_bos")
_STATES = {"running": TrialState.RUNNING, "completed": TrialState.COMPLETE, "stopped": TrialState.PRUNED,
           "failed": TrialState.FAIL, "expired": TrialState.FAIL}


class StudyDone(Exception):
    """The banditd study hands out no more trials (its scheduler is done or a
    limit was reached), or optimize()'s timeout passed while waiting for one.
    BanditdStudy.optimize() ends quietly on it; study.ask() raises it."""


class _Run:
    """A trial this process runs, until Optuna tells its end."""

    def __init__(self, trial: Dict[str, Any], number: int, params: Dict[str, Any],
                 distributions: Dict[str, BaseDistribution]) -> None:
        self.trial = trial  # as suggest answered it
        self.id = int(trial["id"])
        self.number = number
        self.budget = float(trial.get("budget") or 0)
        self.params, self.distributions = params, distributions
        self.started = datetime.datetime.now()
        self.clock = time.monotonic()
        self.intermediate: Dict[int, float] = {}
        self.user_attrs: Dict[str, Any] = {}
        self.system_attrs: Dict[str, Any] = _banditd_attrs(trial)
        self.ended: Optional[str] = None  # why banditd no longer runs it: stopped, diverged, lost
        self.fail_reason: Optional[str] = None  # the objective's exception, for fail
        self.constraints_error: Optional[str] = None  # constraints_func raised, or its values do not fit
        self.heartbeat: Optional[_Heartbeat] = None
        self.lock = threading.Lock()  # one ask at a time (a retried ask answers the same value anyway)


def _banditd_attrs(t: Dict[str, Any]) -> Dict[str, Any]:
    """What banditd says of a trial beyond Optuna's fields, as system attributes
    (so trials_dataframe() shows the budget and the config's lineage)."""
    out = {"banditd_trial_id": t.get("id"), "banditd_config_id": t.get("config_id"),
           "banditd_budget": t.get("budget"), "banditd_resume_from": t.get("resume_from"),
           "banditd_state": t.get("state")}
    if t.get("reason"):
        out["banditd_reason"] = t["reason"]
    if t.get("scheduler"):
        out["banditd_scheduler"] = t["scheduler"]
    if "feasible" in t:  # a study with constraints
        out["banditd_feasible"] = t["feasible"]
    return out


def _worst(direction: StudyDirection) -> float:
    """A diverged run's value (banditd's value null) in Optuna's terms."""
    return math.inf if direction == StudyDirection.MINIMIZE else -math.inf


def _when(ts: Any) -> Optional[datetime.datetime]:
    return datetime.datetime.fromtimestamp(ts) if isinstance(ts, (int, float)) else None


def _step_key(step: float) -> Any:
    return int(step) if float(step).is_integer() else step


def _only_waiting(states: Optional[Container[TrialState]]) -> bool:
    return states is not None and TrialState.WAITING in states and not any(
        s in states for s in TrialState if s is not TrialState.WAITING)


class BanditdStorage(optuna.storages.BaseStorage):
    """One banditd study as an Optuna storage; made by banditd.optuna.create_study()
    and load_study() from the study as the daemon describes it (doc).

    space: the distributions given up front (search_space=), or None."""

    def __init__(self, client: Client, doc: Dict[str, Any], space: Optional[Dict[str, BaseDistribution]],
                 step_offset: float, worker: Optional[str]) -> None:
        self.client = client
        self.banditd_id = int(doc["id"])  #: the banditd study's id
        self.name = str(doc["name"])
        objectives = doc.get("objectives") or [doc.get("objective") or {}]
        self.objective_names: List[str] = [str(o.get("metric") or "value") for o in objectives]
        self.directions: List[StudyDirection] = [StudyDirection.MAXIMIZE if o.get("goal") == "maximize"
                                                 else StudyDirection.MINIMIZE for o in objectives]
        self.direction = self.directions[0]
        #: the study's constraint metrics, in order (constraints_func's values map onto them)
        self.constraint_names: List[str] = [str(c["metric"]) for c in doc.get("constraints") or []]
        scheduler = doc.get("scheduler") or {}
        stopping = (scheduler.get("options") or {}).get("type") == "stopping"
        # A promoting scheduler's trial ends at its budget; a stopping-type one judges at its rungs
        # and lets the objective's loop decide where the trial ends, as Optuna's pruners do.
        self.budget_stop = scheduler.get("name") in _BUDGETED and not stopping
        self.step_offset = step_offset
        self.worker = worker or "%s-%d" % (socket.gethostname(), os.getpid())
        self.deadline: Optional[float] = None  # time.monotonic() after which no new trial is waited for
        self._lock = threading.RLock()
        self._space: Dict[str, BaseDistribution] = dict(space or {})  # given or asked in this process
        self._defined: Dict[str, BaseDistribution] = {}  # the daemon's definitions (from_parameter)
        self._learn_definitions(doc)
        self._runs: Dict[int, _Run] = {}
        self._ids: List[int] = []  # trial ids in id order: the index is the Optuna number
        self._numbers: Dict[int, int] = {}
        self._trial_user_attrs: Dict[int, Dict[str, Any]] = {}  # set here (kept when PATCH is missing)
        self._trial_system_attrs: Dict[int, Dict[str, Any]] = {}
        self._study_user_attrs: Dict[str, Any] = {}
        self._study_system_attrs: Dict[str, Any] = {}
        self._refused: set = set()  # trials ended here whose final report banditd refused
        self._patch = {"trials": True, "studies": True}  # False once the daemon lacks the PATCH route
        self._lease = float(doc.get("lease_seconds") or 300)

    # ---- the search space ----

    def _learn_definitions(self, doc: Dict[str, Any]) -> None:
        defined = {}
        for p in (doc.get("parameters") or []) + (doc.get("asked_parameters") or []):
            try:
                defined[p["name"]] = from_parameter(p)
            except (KeyError, TypeError, ValueError) as e:
                log.warning("banditd study %d: parameter %r: %s", self.banditd_id, p.get("name"), e)
        with self._lock:
            self._defined = defined

    def _dist(self, name: str) -> Optional[BaseDistribution]:
        with self._lock:
            return self._space.get(name) or self._defined.get(name)

    def _dists(self, names: Sequence[str], fetch: bool = True) -> Dict[str, BaseDistribution]:
        """The distribution of each name that has one, reading the study's
        definition again (fetch) when a name is new to this process (another
        worker's trial asked for it)."""
        if fetch and any(self._dist(n) is None for n in names):
            self._learn_definitions(self.client.get_study(self.banditd_id))
        out = {}
        for n in names:
            dist = self._dist(n)
            if dist is not None:
                out[n] = dist
        return out

    @property
    def space(self) -> Dict[str, BaseDistribution]:
        """Every parameter known: the daemon's definitions as last read, then
        this process's own distributions over them."""
        with self._lock:
            return dict(self._defined, **self._space)

    # ---- the banditd study ----

    def _bid(self) -> int:
        return self.banditd_id

    def _check_study(self, study_id: int) -> None:
        if study_id != STUDY_ID:
            raise KeyError("no study with id %r in this banditd storage" % (study_id,))

    def _patch_attr(self, what: str, ident: int, member: str, key: str, value: Any) -> None:
        """PATCH /v1/<what>/<id> {member: {key: value}}, unless the daemon lacks the route."""
        if not self._patch[what]:
            return
        try:
            self.client.request("PATCH", "/v1/%s/%d" % (what, ident), {member: {key: value}})
        except BanditdError as e:
            if e.status not in (404, 405):
                raise
            log.info("PATCH /v1/%s: %s; %s attributes stay in this process", what, e, what[:-1])
            self._patch[what] = False

    # ---- studies (one per storage) ----

    def create_new_study(self, directions: Sequence[StudyDirection], study_name: Optional[str] = None) -> int:
        raise NotImplementedError("a BanditdStorage holds the one study banditd.optuna.create_study() made")

    def delete_study(self, study_id: int) -> None:
        self._check_study(study_id)
        self.client.delete_study(self.banditd_id)

    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        self._check_study(study_id)
        with self._lock:
            self._study_user_attrs[key] = value
        self._patch_attr("studies", self.banditd_id, "metadata", key, value)

    def set_study_system_attr(self, study_id: int, key: str, value: Any) -> None:
        self._check_study(study_id)
        with self._lock:
            self._study_system_attrs[key] = value

    def get_study_id_from_name(self, study_name: str) -> int:
        if study_name != self.name:
            raise KeyError("no study named %r in this banditd storage (it holds %r)" % (study_name, self.name))
        return STUDY_ID

    def get_study_name_from_id(self, study_id: int) -> str:
        self._check_study(study_id)
        return self.name

    def get_study_directions(self, study_id: int) -> List[StudyDirection]:
        self._check_study(study_id)
        return list(self.directions)

    def get_study_user_attrs(self, study_id: int) -> Dict[str, Any]:
        self._check_study(study_id)
        out: Dict[str, Any] = {}
        if self._patch["studies"]:
            out.update(self.client.get_study(self.banditd_id).get("metadata") or {})
        with self._lock:
            out.update(self._study_user_attrs)
        return out

    def get_study_system_attrs(self, study_id: int) -> Dict[str, Any]:
        self._check_study(study_id)
        with self._lock:
            return dict(self._study_system_attrs)

    def get_all_studies(self) -> List[FrozenStudy]:
        return [FrozenStudy(self.name, None, self.get_study_user_attrs(STUDY_ID),
                                         self.get_study_system_attrs(STUDY_ID), STUDY_ID,
                                         directions=list(self.directions))]

    # ---- trial numbers ----

    def _number(self, trial_id: int) -> int:
        """The trial's position in the study's id order."""
        with self._lock:
            if trial_id not in self._numbers:
                self._sync()
            if trial_id not in self._numbers:
                raise KeyError("trial %d is not in banditd study %d" % (trial_id, self._bid()))
            return self._numbers[trial_id]

    def _sync(self) -> None:
        """Numbers the trials newer than the last one known (ids only grow, and
        trials are never removed, so the numbering only grows). Under _lock."""
        bid = self._bid()
        while True:
            after = self._ids[-1] if self._ids else 0
            page = self.client.request("GET", "/v1/studies/%d/trials" % bid, query={"after": after, "limit": _PAGE})
            self._remember([int(t["id"]) for t in page["trials"]])
            if page.get("next_after") is None or not page["trials"]:
                return

    def _remember(self, ids: List[int]) -> None:
        for i in ids:
            if i not in self._numbers and (not self._ids or i > self._ids[-1]):
                self._numbers[i] = len(self._ids)
                self._ids.append(i)

    def get_trial_id_from_study_id_trial_number(self, study_id: int, trial_number: int) -> int:
        self._check_study(study_id)
        with self._lock:
            if trial_number >= len(self._ids):
                self._sync()
            if 0 <= trial_number < len(self._ids):
                return self._ids[trial_number]
        raise KeyError("no trial number %d in study %r" % (trial_number, self.name))

    # ---- creating trials ----

    def create_new_trial(self, study_id: int, template_trial: Optional[FrozenTrial] = None) -> int:
        self._check_study(study_id)
        if template_trial is not None:
            return self._add(template_trial)
        bid = self._bid()
        worker = "%s/%s" % (self.worker, threading.current_thread().name)
        while True:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise StudyDone("optimize()'s timeout passed while banditd had no trial to hand out")
            answer = self.client.suggest(bid, worker=worker)
            trials = answer.get("trials") or []
            if trials:
                break
            if answer.get("done"):
                raise StudyDone("banditd study %d is done (its scheduler finished or a limit was reached)" % bid)
            nap = min(max(float(answer.get("retry_after_ms") or 500), 1.0) / 1000.0, MAX_RETRY_SLEEP)
            if self.deadline is not None:
                nap = min(nap, max(0.0, self.deadline - time.monotonic()))
            time.sleep(nap)
        for extra in trials[1:]:  # suggest without count answers one; never leave one running
            self.client.fail(int(extra["id"]), reason="not run: the Optuna bridge asked for one trial")
        t = trials[0]
        try:
            params, dists = self._params(t.get("config") or {})
            number = self._number(int(t["id"]))
        except BaseException:
            # Not registered yet: give the trial back now rather than hold its
            # rung slot until the lease ends.
            try:
                self.client.fail(int(t["id"]), reason="not run: the Optuna bridge could not start it")
            except Exception:
                pass
            raise
        run = _Run(t, number, params, dists)
        run.heartbeat = _Heartbeat(self.client, run.id, max(0.05, self._lease / 3.0))
        run.heartbeat.start()
        with self._lock:
            self._runs[run.id] = run
        return run.id

    def _params(self, config: Dict[str, Any], fetch: bool = True):
        """The params and distributions of a banditd config: each value as its
        distribution's suggest_* returns it. A name with no distribution known
        (an enqueued value not yet asked for) is left out."""
        dists = self._dists(list(config), fetch)
        params = {name: value_from_banditd(dists[name], value) for name, value in config.items() if name in dists}
        return params, {name: dists[name] for name in params}

    def _to_banditd(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """A user's params as banditd's config: a stepped parameter is a categorical of its
        grid (optuna_space._grid), whose values are computed (0.1 * 3 is 0.30000000000000004),
        so a value within rounding (1e-6 of a step) of a grid value becomes that value; one
        off the grid is refused by name."""
        out = {}
        for name, value in params.items():
            dist = self._dist(name)
            if dist is not None and grid_of(dist) is not None and isinstance(value, (int, float)):
                grid = grid_of(dist)
                step = dist.step if dist.step is not None else 1
                near = min(grid, key=lambda g: abs(g - value))
                if abs(near - value) > step * 1e-6:
                    raise ValueError("parameter %r: %r is not on its grid (low %r, step %r)"
                                     % (name, value, dist.low, step))
                value = near
            out[name] = value
        return out

    def _add(self, template: FrozenTrial) -> int:
        """enqueue_trial (a WAITING template: {"config"}) or add_trial (a COMPLETE
        one: {"config", "value"}) through POST /v1/studies/{id}/trials."""
        bid = self._bid()
        if template.state == TrialState.COMPLETE:
            with self._lock:
                for name, dist in template.distributions.items():
                    self._space.setdefault(name, dist)
        if template.state == TrialState.WAITING:
            body = {"config": self._to_banditd(template.system_attrs.get("fixed_params") or template.params)}
        elif template.state == TrialState.COMPLETE and (len(self.directions) > 1 or self.constraint_names):
            body = {"config": self._to_banditd(template.params)}
            if len(self.directions) > 1:
                body["values"] = dict(zip(self.objective_names, template.values))
            else:
                body["value"] = template.value
            if self.constraint_names:
                if template.system_attrs.get(_CONSTRAINTS_KEY) is None:
                    raise ValueError("add_trial to a study with constraints: give the trial's constraint values "
                                     "as system_attrs={%r: (...)}" % _CONSTRAINTS_KEY)
                body["values"] = dict(body.get("values") or {},
                                      **self.constraint_values(template.system_attrs[_CONSTRAINTS_KEY]))
        elif template.state == TrialState.COMPLETE:
            body = {"config": self._to_banditd(template.params), "value": template.value}
        else:
            raise ValueError("banditd takes added trials that are WAITING (enqueue_trial) or COMPLETE "
                             "(add_trial), not %s" % template.state.name)
        try:
            answer = self.client.request("POST", "/v1/studies/%d/trials" % bid, body)
        except BanditdError as e:
            if e.status in (404, 405):
                raise NotImplementedError("this banditd does not take added or enqueued trials (POST "
                                          "/v1/studies/{id}/trials answered %d)" % e.status) from e
            raise
        if template.state == TrialState.WAITING:
            # banditd queues the config ({"state": "enqueued", "position"}); it becomes a trial,
            # with an id, only when a suggest hands it out, so Optuna's enqueue_trial (which
            # ignores the id) gets a placeholder that names no trial. User attributes of an
            # enqueued template stay in this process.
            return -int(answer["position"])
        trial_id = int(answer["id"])
        for key, value in template.user_attrs.items():
            with self._lock:
                self._trial_user_attrs.setdefault(trial_id, {})[key] = value
            self._patch_attr("trials", trial_id, "user_attrs", key, value)
        return trial_id

    def ask_param(self, trial_id: int, name: str, dist: BaseDistribution) -> Any:
        """The value of parameter name for running trial trial_id: asked of the
        daemon (POST /v1/trials/{id}/parameters with dist as a banditd
        parameter), which draws it with the study's sampler, or answers the
        value the trial already has (declared up front, or enqueued). A
        distribution the study knows otherwise is a ValueError naming the
        differing key. A trial banditd no longer runs (stopped, its lease
        lost) gets a random value that stays in this process."""
        run = self._running(trial_id)
        with run.lock:
            if name in run.params:
                return run.params[name]
            body = to_parameter(name, dist)
            value: Any = None
            if run.ended is None:
                try:
                    value = self.client.request("POST", "/v1/trials/%d/parameters" % run.id, body)["value"]
                except BanditdError as e:
                    if e.status == 400:
                        raise ValueError("parameter %r: banditd study %r refuses %s: %s"
                                         % (name, self.name, body, e)) from e
                    if e.status in (404, 405) and e.field is None and "no route" in e.message:
                        raise NotImplementedError("this banditd has no define-by-run parameters (POST "
                                                  "/v1/trials/{id}/parameters: %s); give search_space=" % e) from e
                    if e.status not in (404, 409):
                        raise
                    log.warning("trial %d: banditd no longer runs it: %s", run.id, e)
                    run.ended = "lost"
            if run.ended is not None:
                value = dist.to_external_repr(
                    optuna.samplers.RandomSampler().sample_independent(None, None, name, dist))
            value = value_from_banditd(dist, value)
            run.params[name] = value
            run.distributions[name] = dist
        with self._lock:
            self._space[name] = dist
        return value

    def set_trial_param(self, trial_id: int, param_name: str, param_value_internal: float,
                        distribution: BaseDistribution) -> None:
        # Trial._suggest calls this for a name missing from the trial's params
        # after BanditdSampler asked for it (the value is recorded), or for one
        # Optuna decides itself (a single-valued distribution): asked here.
        run = self._running(trial_id)
        if param_name not in run.params:
            wanted = distribution.to_external_repr(param_value_internal)
            got = self.ask_param(trial_id, param_name, distribution)
            if got != wanted:
                raise ValueError("parameter %r: banditd's value %r differs from Optuna's %r"
                                 % (param_name, got, wanted))

    # ---- running trials ----

    def _running(self, trial_id: int) -> _Run:
        with self._lock:
            run = self._runs.get(trial_id)
        if run is not None:
            return run
        frozen = self.get_trial(trial_id)  # KeyError when unknown
        if not frozen.state.is_finished():
            raise RuntimeError("Trial#%d is not run by this process (banditd hands each trial to one worker): "
                               "only the process that asked for it reports it" % frozen.number)
        raise RuntimeError("Trial#%d has already finished and can not be updated." % frozen.number)

    def banditd_trial(self, trial_id: int) -> Dict[str, Any]:
        """The trial as banditd describes it (a copy)."""
        with self._lock:
            run = self._runs.get(trial_id)
        if run is not None:
            return dict(run.trial)
        t = self.client.get_trial(int(trial_id))
        if t.get("study_id") != self.banditd_id:
            raise KeyError("trial %r is not in banditd study %r" % (trial_id, self.banditd_id))
        return t

    def should_stop(self, trial_id: int) -> bool:
        """BanditdPruner's answer: banditd stopped the trial (or no longer runs it),
        or, with a resource, the last reported step reached the trial's budget."""
        with self._lock:
            run = self._runs.get(trial_id)
        if run is None:
            return False
        if run.ended is not None:
            return True
        return self.budget_stop and bool(run.intermediate) and self._at_budget(run)

    def _at_budget(self, run: _Run) -> bool:
        return max(run.intermediate) + self.step_offset >= run.budget - 1e-9

    def note_failure(self, trial_id: int, reason: str) -> None:
        """The objective's exception, sent as the fail reason when Optuna tells FAIL."""
        with self._lock:
            run = self._runs.get(trial_id)
        if run is not None:
            run.fail_reason = reason

    def set_trial_intermediate_value(self, trial_id: int, step: int, intermediate_value: float) -> None:
        run = self._running(trial_id)
        run.intermediate[step] = intermediate_value
        if run.ended is not None:
            return  # banditd no longer runs it: the value stays in this process
        elapsed = time.monotonic() - run.clock
        v = float(intermediate_value)
        if not math.isfinite(v):
            # banditd's convention for a diverged run: complete it with value null (the worst loss).
            reason = _cut("diverged: value %r at step %s" % (v, step))
            self._final(run, lambda: self.client.complete(run.id, value=None, reason=reason,
                                                          elapsed_seconds=elapsed))
            run.ended = "diverged"
            return
        try:
            answer = self.client.measure(run.id, step + self.step_offset, v, elapsed_seconds=elapsed)
        except BanditdError as e:
            if e.status not in (404, 409):
                raise
            log.warning("trial %d: banditd no longer runs it: %s", run.id, e)
            run.ended = "lost"
            return
        if answer.get("action") == "stop":
            run.ended = "stopped"
            run.system_attrs["banditd_reason"] = answer.get("reason") or "stopped by the scheduler"

    def set_trial_state_values(self, trial_id: int, state: TrialState,
                               values: Optional[Sequence[float]] = None) -> bool:
        with self._lock:
            run = self._runs.get(trial_id)
        if state == TrialState.RUNNING:
            # Running already, or a WAITING (enqueued) trial: banditd hands those out
            # through suggest, never to a claim.
            return False
        if run is None:
            self._running(trial_id)  # raises: unknown or finished
        elapsed = time.monotonic() - run.clock
        try:
            if run.ended is not None:
                pass  # stopped, diverged or lost on banditd: nothing more to send
            elif state == TrialState.COMPLETE:
                vals = [float(v) for v in values] if values else [float("nan")]
                if not all(math.isfinite(v) for v in vals):
                    # banditd's diverged run: every objective the worst, infeasible.
                    self._final(run, lambda: self.client.complete(
                        run.id, value=None, reason=_cut("the objective returned %r" % (values,)),
                        elapsed_seconds=elapsed))
                else:
                    self._complete(run, vals, elapsed)
            elif state == TrialState.PRUNED and self.budget_stop and run.intermediate and self._at_budget(run):
                # The budget banditd gave is used up: the last value is the result at that budget.
                self._complete(run, [run.intermediate[max(run.intermediate)]], elapsed)
            elif state == TrialState.PRUNED:
                self._final(run, lambda: self.client.fail(run.id, reason=PRUNED_REASON))
            elif state == TrialState.FAIL:
                reason = _cut(run.fail_reason or "the Optuna objective failed")
                self._final(run, lambda: self.client.fail(run.id, reason=reason))
            else:
                raise ValueError("cannot end a trial as %s" % state.name)
        finally:
            if run.heartbeat is not None:
                run.heartbeat.halt.set()
                run.heartbeat.join(1.0)
            with self._lock:
                self._runs.pop(trial_id, None)
                if run.user_attrs:
                    self._trial_user_attrs.setdefault(trial_id, {}).update(run.user_attrs)
                own = {k: v for k, v in run.system_attrs.items() if not k.startswith("banditd_")}
                if own:
                    self._trial_system_attrs[trial_id] = own
        return True

    def constraint_values(self, constraints: Sequence[float]) -> Dict[str, float]:
        """constraints_func's values (Optuna's rule: feasible when every one is
        <= 0) as the study's constraint metrics, each {"max": 0}: one metric per
        value when the study has as many, else, in a study with one constraint
        (create_study without n_constraints=), their aggregate: the largest
        when none is positive, else the sum of the positive ones, so the trial
        is feasible exactly when Optuna says so and banditd's violation is
        Optuna's (the sum of the positive values). ValueError otherwise."""
        names = self.constraint_names
        vals = [float(c) for c in constraints]
        if not all(math.isfinite(v) for v in vals):
            raise ValueError("constraints_func returned %r: banditd takes finite constraint values" % (vals,))
        if len(vals) == len(names):
            return dict(zip(names, vals))
        if len(names) == 1 and vals:
            positive = [v for v in vals if v > 0]
            return {names[0]: math.fsum(positive) if positive else max(vals)}
        raise ValueError("constraints_func returned %d values; banditd study %r has %d constraints (%s): give "
                         "create_study n_constraints=%d, or none" % (len(vals), self.name, len(names),
                                                                     ", ".join(names), len(vals)))

    def note_constraints_error(self, trial_id: int, error: BaseException) -> None:
        """BanditdSampler.after_trial: constraints_func raised, or its values do not
        fit the study's constraints; the error propagates from there (as Optuna's
        does) and the trial is completed as diverged (see _complete)."""
        with self._lock:
            run = self._runs.get(trial_id)
        if run is not None:
            run.constraints_error = "%s: %s" % (type(error).__name__, error)

    def _complete(self, run: _Run, vals: List[float], elapsed: float) -> None:
        """Completes the trial with its finite objective values: "value" in a
        one-objective study, "values" by metric otherwise, plus the constraint
        values (BanditdSampler.after_trial had constraints_func compute them) in
        a study with constraints. Without usable constraint values banditd
        cannot take the result: the trial completes as diverged (value null:
        every objective the worst, infeasible; Optuna stores a COMPLETE trial
        when constraints_func fails, and its _run_trial expects one) with the
        reason, and a ValueError is raised unless after_trial already raised."""
        out: Dict[str, Any] = {}
        if len(self.directions) > 1:
            if len(vals) != len(self.directions):
                raise ValueError("%d values for %d objectives" % (len(vals), len(self.directions)))
            out["values"] = dict(zip(self.objective_names, vals))
        else:
            out["value"] = vals[0]
        problem = run.constraints_error
        if self.constraint_names and problem is None:
            got = run.system_attrs.get(_CONSTRAINTS_KEY)
            try:
                if got is None:
                    raise ValueError("banditd study %r has constraints (%s) but no constraints_func gave values: "
                                     "give the sampler's constraints_func (load_study(sampler=...) too)"
                                     % (self.name, ", ".join(self.constraint_names)))
                out["values"] = dict(out.get("values") or {}, **self.constraint_values(got))
            except ValueError as e:
                problem = str(e)
        if self.constraint_names and problem is not None:
            reason = _cut("not stored as reported: %s" % problem)
            self._final(run, lambda: self.client.complete(run.id, value=None, reason=reason,
                                                          elapsed_seconds=elapsed))
            if run.constraints_error is None:
                raise ValueError(problem)
            return
        self._final(run, lambda: self.client.complete(run.id, elapsed_seconds=elapsed, **out))

    def _final(self, run: _Run, send) -> None:
        """Sends a trial's last report; a trial banditd no longer runs (409: its
        lease ran out) is left as banditd has it. Any report that did not get
        through (refused, or failed after the client's retries) reads back FAIL
        here, not RUNNING, until banditd expires the trial."""
        try:
            send()
        except BanditdError as e:
            with self._lock:
                self._refused.add(run.id)
            if e.status not in (404, 409):
                raise
            log.warning("trial %d: banditd refused the final report: %s", run.id, e)
        except Exception:
            with self._lock:
                self._refused.add(run.id)
            raise

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._running(trial_id).user_attrs[key] = value
        self._patch_attr("trials", trial_id, "user_attrs", key, value)

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._running(trial_id).system_attrs[key] = value

    # ---- reading trials ----

    def _frozen_run(self, run: _Run) -> FrozenTrial:
        return FrozenTrial(number=run.number, state=TrialState.RUNNING, value=None, datetime_start=run.started,
                           datetime_complete=None, params=dict(run.params), distributions=dict(run.distributions),
                           user_attrs=dict(run.user_attrs), system_attrs=dict(run.system_attrs),
                           intermediate_values=dict(run.intermediate), trial_id=run.id)

    def _frozen(self, t: Dict[str, Any], number: int, fetch: bool = True) -> FrozenTrial:
        """A banditd trial (with its measurements) as Optuna sees it."""
        tid = int(t["id"])
        reason = t.get("reason") or ""
        state = _STATES.get(t.get("state"), TrialState.WAITING)
        if state == TrialState.FAIL and t.get("state") == "failed" and reason == PRUNED_REASON:
            state = TrialState.PRUNED
        with self._lock:
            if state == TrialState.RUNNING and tid in self._refused:
                # Ended here, its report refused (the lease ran out): lost, though banditd
                # reads it running until it expires it.
                state = TrialState.FAIL
        intermediate = {}
        for m in sorted(t.get("measurements") or [], key=lambda m: m["step"]):
            intermediate[_step_key(m["step"] - self.step_offset)] = float(m["value"])
        value: Optional[float] = None
        values: Optional[List[float]] = None
        reported = t.get("values") or {}
        diverged = t.get("value") is None  # every objective the worst, every constraint failing
        if state == TrialState.COMPLETE and len(self.directions) > 1:
            values = [_worst(d) if diverged or reported.get(n) is None else float(reported[n])
                      for n, d in zip(self.objective_names, self.directions)]
        elif state == TrialState.COMPLETE:
            value = _worst(self.direction) if diverged else t.get("value")
        elif state == TrialState.PRUNED and intermediate and len(self.directions) == 1:
            value = intermediate[max(intermediate)]  # as Optuna records a pruned trial
        params, dists = self._params(t.get("config") or {}, fetch)
        with self._lock:
            user_attrs = dict(t.get("user_attrs") or {})
            user_attrs.update(self._trial_user_attrs.get(tid, {}))
            system_attrs = _banditd_attrs(t)
            if state == TrialState.COMPLETE and self.constraint_names:
                # constraints_func's values as banditd stored them (one aggregate when the study has one
                # constraint for several values; this process keeps its own trials' full tuples below)
                system_attrs[_CONSTRAINTS_KEY] = tuple(
                    math.inf if diverged or reported.get(n) is None else float(reported[n])
                    for n in self.constraint_names)
            system_attrs.update(self._trial_system_attrs.get(tid, {}))
        if values is not None:
            return FrozenTrial(number=number, state=state, value=None, values=values,
                               datetime_start=_when(t.get("created_at")),
                               datetime_complete=_when(t.get("finished_at")), params=params, distributions=dists,
                               user_attrs=user_attrs, system_attrs=system_attrs,
                               intermediate_values=intermediate, trial_id=tid)
        return FrozenTrial(number=number, state=state, value=value,
                           datetime_start=_when(t.get("created_at")) if state != TrialState.WAITING else None,
                           datetime_complete=_when(t.get("finished_at")) if state.is_finished() else None,
                           params=params, distributions=dists, user_attrs=user_attrs, system_attrs=system_attrs,
                           intermediate_values=intermediate, trial_id=tid)

    def get_trial(self, trial_id: int) -> FrozenTrial:
        with self._lock:
            run = self._runs.get(trial_id)
        if run is not None:
            return self._frozen_run(run)
        try:
            t = self.client.get_trial(int(trial_id))
        except BanditdError as e:
            if e.status == 404:
                raise KeyError("no trial %r in banditd study %d" % (trial_id, self.banditd_id)) from e
            raise
        if t.get("study_id") != self.banditd_id:
            raise KeyError("trial %r is not in banditd study %d" % (trial_id, self.banditd_id))
        return self._frozen(t, self._number(int(trial_id)))

    def get_all_trials(self, study_id: int, deepcopy: bool = True,
                       states: Optional[Container[TrialState]] = None) -> List[FrozenTrial]:
        self._check_study(study_id)
        # Study.ask() looks for WAITING trials to claim before each new one; banditd
        # hands enqueued trials out through suggest instead, so there are none to claim.
        if _only_waiting(states):
            return []
        trials = list(self.client.list_trials(self.banditd_id, limit=_PAGE, measurements=True))
        self._dists(sorted({name for t in trials for name in t.get("config") or {}}))  # one read of new names
        ids, out = [], []
        for t in trials:
            ids.append(int(t["id"]))
            with self._lock:
                run = self._runs.get(ids[-1])
            frozen = self._frozen_run(run) if run is not None else self._frozen(t, len(ids) - 1, fetch=False)
            if states is None or frozen.state in states:
                out.append(frozen)
        with self._lock:
            self._remember(ids)
        return out

    def get_best_trial(self, study_id: int) -> FrozenTrial:
        """Optuna's rule: the best COMPLETE trial (banditd's best completed
        trial by the study's goal; a stopped trial is PRUNED, never the best).
        Of several with the best value, banditd's incumbent when it is one of
        them (the first completed, as Optuna's in-memory storage), else the
        first created."""
        self._check_study(study_id)
        if self.constraint_names:
            # banditd's incumbent is the best feasible trial; before there is one, Optuna 3.1's rule (the
            # best of all), which Optuna's own logging after each trial counts on.
            incumbent = self.client.get_study(self.banditd_id).get("incumbent") or {}
            if incumbent.get("trial_id") is not None:
                return self.get_trial(int(incumbent["trial_id"]))
        best = self.client.best_trials(self.banditd_id, limit=1, measurements=True)
        if not best:
            raise ValueError("No trials are completed yet.")
        incumbent = self.client.get_study(self.banditd_id).get("incumbent") or {}
        if incumbent.get("trial_id") not in (None, best[0]["id"]) and incumbent.get("value") == best[0]["value"]:
            return self.get_trial(int(incumbent["trial_id"]))
        return self._frozen(best[0], self._number(int(best[0]["id"])))

    def pareto_front(self) -> List[FrozenTrial]:
        """banditd's Pareto front (GET /v1/studies/{id} "pareto_front": the
        feasible, non-dominated, completed trials, at their full budget), as
        COMPLETE FrozenTrials in number order. A front longer than the
        daemon lists (pareto_front_truncated, past 4096 members) is computed
        here by Optuna's rule over the feasible completed trials."""
        doc = self.client.get_study(self.banditd_id)
        complete = self.get_all_trials(STUDY_ID, states=(TrialState.COMPLETE,))
        if doc.get("pareto_front_truncated"):
            feasible = [t for t in complete if t.system_attrs.get("banditd_feasible") is not False]
            return sorted(_get_pareto_front_trials_by_trials(feasible, self.directions), key=lambda t: t.number)
        ids = {int(p["trial_id"]) for p in doc.get("pareto_front") or []}
        return [t for t in complete if t._trial_id in ids]

    def remove_session(self) -> None:
        # Optuna calls this at the end of each optimize thread's work: close that
        # thread's kept-alive connection (the Client keeps one per thread).
        self.client.close_thread()
