"""banditd.optuna: run an unchanged Optuna program on a banditd study.

    import banditd.optuna
    study = banditd.optuna.create_study(url="http://127.0.0.1:8080", token=token, study_name="sgd",
                                        direction="maximize", pruner=optuna.pruners.MedianPruner())
    study.optimize(objective, n_trials=50, n_jobs=2)   # objective(trial) as for Optuna
    print(study.best_params)

create_study() takes Optuna's arguments (sampler=, pruner=, direction=,
load_if_exists=) plus url= and token=, and creates the banditd study at once:
with no parameters (a define-by-run study: each trial.suggest_*() asks the
daemon for that parameter's value, POST /v1/trials/{id}/parameters), or with
search_space= the parameters up front. The sampler and pruner become a banditd
scheduler through one table (_MAPPING below; clients/python/README.md says
what maps to what). patch_optuna() makes optuna.create_study and
optuna.load_study these, so a program runs on banditd with no change at all.

Several objectives (directions=[...]) make a study with "objectives"
(metrics "objective_0", "objective_1", ... unless metric= names them): a
trial's values go to banditd as "values", study.best_trials is banditd's
Pareto front, and NSGAIISampler() (Optuna's default there) maps to nsga2. A
sampler's constraints_func makes the study's "constraints" (Optuna's rule:
feasible when every value is <= 0), computed after the objective as Optuna
does and sent with the result; no infeasible trial is ever a best trial.

The study is a real optuna.Study (BanditdStudy subclasses it) on a
BanditdStorage (banditd.optuna_storage: its trials are banditd's trials), with
BanditdSampler (a parameter's value comes from the daemon) and BanditdPruner
(trial.should_prune() is banditd's stop answer, or the trial's budget reached).
"""

import logging
import math
import time
import uuid
import warnings
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers._base import _CONSTRAINTS_KEY, _process_constraints_after_trial
from optuna.study import StudyDirection
from optuna.trial import TrialState

from banditd.client import Client
from banditd.errors import BanditdError
from banditd.optuna_space import normalize_space, to_parameters
from banditd.optuna_storage import PRUNED_REASON, BanditdStorage, StudyDone

log = logging.getLogger("banditd")

__all__ = ["create_study", "load_study", "patch_optuna", "banditd_trial", "scheduler_for", "BanditdStudy",
           "BanditdSampler", "BanditdPruner", "BanditdStorage", "StudyDone", "PRUNED_REASON", "DEFAULT_MAX_STEPS",
           "MAX_OBJECTIVES"]

#: resource.max of a study whose pruner needs a resource that the program did
#: not bound (no resource=, no HyperbandPruner(max_resource=)): larger than any
#: training loop, so the objective's own loop decides where a trial ends; the
#: rungs above its last step never judge.
DEFAULT_MAX_STEPS = 1000000


# ---- what Optuna's samplers and pruners mean on banditd: ONE table ----

def _no_options(obj: Any) -> Dict[str, Any]:
    return {}


def _tpe_options(s: "optuna.samplers.TPESampler") -> Dict[str, Any]:
    """The TPESampler arguments banditd's TPE takes, where they differ from Optuna's defaults
    (constraints_func is the bridge's: it becomes the study's constraints, see create_study)."""
    out: Dict[str, Any] = {}
    if s._n_startup_trials != 10:
        out["n_startup_trials"] = int(s._n_startup_trials)
    if s._n_ei_candidates != 24:
        out["n_ei_candidates"] = int(s._n_ei_candidates)
    if s._multivariate:
        out["multivariate"] = True
    return out


def _nsga2_options(s: "optuna.samplers.NSGAIISampler") -> Dict[str, Any]:
    """The NSGAIISampler arguments banditd's nsga2 takes, where they differ from Optuna's defaults
    (population 50, crossover probability 0.9, swapping probability 0.5, mutation 1/parameters);
    a crossover other than the uniform one is refused."""
    crossover = type(s._crossover).__name__
    if crossover != "UniformCrossover":
        raise ValueError("sampler=NSGAIISampler(crossover=%s()): banditd's nsga2 crosses over uniformly; "
                         "drop crossover=" % crossover)
    out: Dict[str, Any] = {}
    if s._population_size != 50:
        out["population_size"] = int(s._population_size)
    if s._mutation_prob is not None:
        out["mutation_prob"] = float(s._mutation_prob)
    if s._crossover_prob != 0.9:
        out["crossover_prob"] = float(s._crossover_prob)
    if s._swapping_prob != 0.5:
        out["swapping_prob"] = float(s._swapping_prob)
    return out


def _rung_rule(eta: int) -> Dict[str, Any]:
    """A stopping-type ASHA judging by the value at the rung (Optuna's rule), keeping the top 1/eta."""
    return {"type": "stopping", "eta": int(eta), "promotion": "current", "promotion_fraction": "eta"}


def _percentile(p: "optuna.pruners.PercentilePruner") -> Tuple[Dict[str, Any], None, None]:
    """MedianPruner and PercentilePruner (MedianPruner is PercentilePruner(50.0)): the sampler's own
    scheduler with the option "stopping", the same rule on the server (server/sched/stopping_rule.h:
    Optuna 3.1's decisions). Its warmup_steps are Optuna's here; create_study adds step_offset."""
    median = type(p).__name__ == "MedianPruner" or float(p._percentile) == 50.0
    rule: Dict[str, Any] = {"rule": "median"} if median else {"rule": "percentile", "percentile": float(p._percentile)}
    rule.update(startup_trials=int(p._n_startup_trials), warmup_steps=int(p._n_warmup_steps),
                interval_steps=int(p._interval_steps), min_trials=int(p._n_min_trials))
    return {"stopping": rule}, None, None


def _successive_halving(p: "optuna.pruners.SuccessiveHalvingPruner") -> Tuple[Dict[str, Any], Optional[int], None]:
    opts = _rung_rule(p._reduction_factor)
    if p._min_early_stopping_rate:
        opts["s"] = int(p._min_early_stopping_rate)
    return opts, p._min_resource, None


def _hyperband(p: "optuna.pruners.HyperbandPruner") -> Tuple[Dict[str, Any], Optional[int], Optional[int]]:
    # iterations 0: brackets follow each other for as long as trials are asked for, as Optuna's pruner
    # serves any number of trials. Hyperband's rungs count down from the maximum (R / eta^k), so a
    # maximum of its own is min_resource * eta^k: the rungs then sit at min_resource * eta^i, as Optuna's.
    eta, low = int(p._reduction_factor), p._min_resource if isinstance(p._min_resource, int) else 1
    high = p._max_resource if isinstance(p._max_resource, int) else low
    while not isinstance(p._max_resource, int) and high < DEFAULT_MAX_STEPS:
        high *= eta
    return {"type": "stopping", "eta": eta, "iterations": 0}, low, high


_CMA = ("banditd has no CMA-ES sampler: use TPESampler() or RandomSampler(), or scheduler=\"gp_ucb\" for a "
        "Gaussian process")
#: class name -> ("sampler", banditd sampler, options of the object) | ("pruner", stopping-type
#: multi-fidelity scheduler, or "" for the sampler's own scheduler with these options (one budget),
#: or None for no early stopping, (options, resource min, resource max) of the object) | a str:
#: refused with that advice. A class not here is refused too.
_MAPPING: Dict[str, Any] = {
    "TPESampler": ("sampler", "tpe", _tpe_options),
    "RandomSampler": ("sampler", "random", _no_options),
    "CmaEsSampler": _CMA,
    "GridSampler": "banditd has no grid sampler: enqueue the grid's points with study.enqueue_trial(params), "
                   "or use RandomSampler() on the same choices",
    "QMCSampler": "banditd has no quasi-Monte Carlo sampler: use RandomSampler()",
    "BruteForceSampler": "banditd has no brute-force sampler: enqueue each config with study.enqueue_trial(params)",
    "PartialFixedSampler": "banditd has no partially fixed sampler: enqueue the fixed values with "
                           "study.enqueue_trial(params)",
    "NSGAIISampler": ("sampler", "nsga2", _nsga2_options),
    "MOTPESampler": ("sampler", "tpe", _tpe_options),
    "MedianPruner": ("pruner", "", _percentile),
    "SuccessiveHalvingPruner": ("pruner", "asha", _successive_halving),
    "HyperbandPruner": ("pruner", "hyperband", _hyperband),
    "NopPruner": ("pruner", None, lambda p: ({}, None, None)),
    "PercentilePruner": ("pruner", "", _percentile),
    "PatientPruner": "banditd has no patience rule: use MedianPruner(), SuccessiveHalvingPruner() or "
                     "HyperbandPruner()",
    "ThresholdPruner": "banditd has no threshold rule: check the value in the objective and raise "
                       "optuna.TrialPruned()",
}


def _row(kind: str, obj: Any) -> Tuple[Any, Callable[[Any], Any]]:
    """The table's answer for a sampler or pruner object (through its classes, so a subclass of
    TPESampler is TPE); refused with a ValueError naming the argument."""
    for cls in type(obj).__mro__:
        row = _MAPPING.get(cls.__name__)
        if row is None or not cls.__module__.startswith("optuna."):
            continue
        if isinstance(row, str):
            raise ValueError("%s=%s(): %s" % (kind, type(obj).__name__, row))
        if row[0] != kind:
            raise ValueError("%s=%s(): that is a %s, not a %s" % (kind, type(obj).__name__, row[0], kind))
        return row[1], row[2]
    mapped = ", ".join(k for k, v in _MAPPING.items() if not isinstance(v, str) and v[0] == kind)
    raise ValueError("%s=%s(): banditd maps only %s (or give scheduler= with a banditd scheduler)"
                     % (kind, type(obj).__name__, mapped))


def scheduler_for(sampler: Any = None, pruner: Any = None, n_objectives: int = 1,
                  constrained: bool = False) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    """The banditd scheduler {"name", "options"} and the resource (None: not
    multi-fidelity) for an Optuna sampler and pruner. None means Optuna's
    default: TPESampler() and MedianPruner() for one objective,
    NSGAIISampler() for several. A pruner's resource is its step range: min
    its min_resource (1 when Optuna estimates it), max its max_resource, else
    DEFAULT_MAX_STEPS (for Hyperband, whose rungs count down from the
    maximum, min_resource * eta^k, the first at or above it). With several
    objectives the pruner is never used (Optuna's trial.report() and
    should_prune() raise NotImplementedError there), so the study is not
    multi-fidelity; a pruner given is only checked against the table. With
    constraints (the sampler has a constraints_func: constrained) and no
    pruner given, the default pruner when it maps to the sampler's own
    scheduler, else none (banditd's multi-fidelity schedulers take no
    constraints); a pruner given is mapped, and the daemon says whether it
    takes them."""
    several = n_objectives > 1
    sampler = sampler or (optuna.samplers.NSGAIISampler() if several else optuna.samplers.TPESampler())
    sampler_name, sampler_options = _row("sampler", sampler)
    options = sampler_options(sampler)
    if several:
        if pruner is not None:
            _row("pruner", pruner)
        return {"name": sampler_name, "options": options}, None
    if pruner is None and constrained and _row("pruner", optuna.pruners.MedianPruner())[0]:
        pruner = optuna.pruners.NopPruner()  # the default's multi-fidelity scheduler takes no constraints
    pruner = pruner or optuna.pruners.MedianPruner()
    name, options_of = _row("pruner", pruner)
    if name is None:
        return {"name": sampler_name, "options": options}, None
    own, low, high = options_of(pruner)
    options.update(own)
    if not name:  # the sampler's scheduler carries the pruner's rule: one budget, no resource
        return {"name": sampler_name, "options": options}, None
    options["sampler"] = sampler_name
    low = int(low) if isinstance(low, int) and low >= 1 else 1
    high = int(high) if isinstance(high, int) and high >= low else max(DEFAULT_MAX_STEPS, low)
    return {"name": name, "options": options}, {"name": "steps", "min": low, "max": high, "integer": True}


# ---- the Optuna objects ----

class BanditdSampler(optuna.samplers.BaseSampler):
    """Every value comes from banditd: a trial's up-front params are its banditd
    config, and a parameter the objective asks for later is asked of the daemon
    (POST /v1/trials/{id}/parameters), which draws it with the study's sampler.
    constraints_func (the Optuna sampler's) is called after the objective, as
    Optuna's samplers do (after_trial, before the trial's state is stored),
    and its values kept as the trial's system attribute "constraints", which
    the storage sends with the result."""

    def __init__(self, storage: BanditdStorage,
                 constraints_func: Optional[Callable[["optuna.trial.FrozenTrial"], Sequence[float]]] = None) -> None:
        self._storage = storage
        self._constraints_func = constraints_func

    def after_trial(self, study: "optuna.Study", trial: "optuna.trial.FrozenTrial", state: TrialState,
                    values: Optional[Sequence[float]]) -> None:
        if self._constraints_func is None:
            return
        try:
            _process_constraints_after_trial(self._constraints_func, study, trial, state)
            got = study._storage.get_trial(trial._trial_id).system_attrs.get(_CONSTRAINTS_KEY)
            if got is not None and self._storage.constraint_names:
                self._storage.constraint_values(got)  # a count or value banditd cannot take raises here
        except Exception as e:
            self._storage.note_constraints_error(trial._trial_id, e)
            raise

    def infer_relative_search_space(self, study: "optuna.Study", trial: "optuna.trial.FrozenTrial"):
        return {}

    def sample_relative(self, study: "optuna.Study", trial: "optuna.trial.FrozenTrial",
                        search_space: Dict[str, BaseDistribution]) -> Dict[str, Any]:
        return {}

    def sample_independent(self, study: "optuna.Study", trial: "optuna.trial.FrozenTrial", param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._storage.ask_param(trial._trial_id, param_name, param_distribution)


class BanditdPruner(optuna.pruners.BasePruner):
    """should_prune(): banditd answered "stop" to a measurement (or no longer
    runs the trial), or, with a promoting multi-fidelity scheduler, the
    trial's last reported step reached the budget banditd gave it."""

    def __init__(self, storage: BanditdStorage) -> None:
        self._storage = storage

    def prune(self, study: "optuna.Study", trial: "optuna.trial.FrozenTrial") -> bool:
        return self._storage.should_stop(trial._trial_id)


class BanditdStudy(optuna.Study):
    """An optuna.Study on one banditd study. optimize() ends quietly when
    banditd has no more trials (StudyDone), and sends the objective's exception
    as the failed trial's reason."""

    @property
    def banditd_id(self) -> int:
        """The banditd study's id."""
        return self._storage.banditd_id

    @property
    def best_trials(self) -> List["optuna.trial.FrozenTrial"]:
        """With several objectives: banditd's Pareto front (the feasible,
        non-dominated, completed trials; Optuna 3.1 lists infeasible ones too).
        With one and constraints: the best feasible trial, if any. Otherwise
        Optuna's answer."""
        storage: BanditdStorage = self._storage
        if len(storage.directions) > 1:
            return storage.pareto_front()
        if storage.constraint_names:
            incumbent = storage.client.get_study(storage.banditd_id).get("incumbent") or {}
            return [] if incumbent.get("trial_id") is None else [storage.get_trial(int(incumbent["trial_id"]))]
        return super().best_trials

    def optimize(self, func: Callable[["optuna.Trial"], Any], n_trials: Optional[int] = None,
                 timeout: Optional[float] = None, n_jobs: int = 1, catch: tuple = (), callbacks: Any = None,
                 gc_after_trial: bool = False, show_progress_bar: bool = False) -> None:
        storage: BanditdStorage = self._storage

        def objective(trial: "optuna.Trial") -> Any:
            try:
                return func(trial)
            except optuna.TrialPruned:
                raise
            except BaseException as e:
                storage.note_failure(trial._trial_id, "%s: %s" % (type(e).__name__, e))
                raise

        if timeout is not None:
            storage.deadline = time.monotonic() + timeout
        try:
            super().optimize(objective, n_trials=n_trials, timeout=timeout, n_jobs=n_jobs, catch=catch,
                             callbacks=callbacks, gc_after_trial=gc_after_trial, show_progress_bar=show_progress_bar)
        except StudyDone:
            pass
        finally:
            storage.deadline = None


def banditd_trial(trial: "optuna.Trial") -> Dict[str, Any]:
    """The banditd trial behind an Optuna trial of a BanditdStudy, as banditd
    describes it (id, config_id, budget, resume_from, scheduler, ...): for an
    objective that keeps checkpoints and continues a promotion from the trial
    resume_from names."""
    return trial.study._storage.banditd_trial(trial._trial_id)


#: the most objectives a banditd study takes (api/openapi.yaml: "objectives", 2..8 entries)
MAX_OBJECTIVES = 8


def _one_direction(direction: Any) -> StudyDirection:
    if isinstance(direction, StudyDirection) and direction != StudyDirection.NOT_SET:
        return direction
    if direction not in ("minimize", "maximize"):
        raise ValueError("direction must be \"minimize\" or \"maximize\", not %r" % (direction,))
    return StudyDirection.MINIMIZE if direction == "minimize" else StudyDirection.MAXIMIZE


def _directions(direction: Any, directions: Optional[Sequence[Any]]) -> List[StudyDirection]:
    """Optuna's direction= / directions= as a list (one entry: one objective)."""
    if directions is None:
        return [StudyDirection.MINIMIZE if direction is None else _one_direction(direction)]
    if direction is not None:
        raise ValueError("Specify only one of `direction` and `directions`.")
    if isinstance(directions, (str, StudyDirection)) or not directions:
        raise ValueError("directions must be a non-empty list of \"minimize\" / \"maximize\", not %r"
                         % (directions,))
    if len(directions) > MAX_OBJECTIVES:
        raise ValueError("directions=%r: a banditd study takes at most %d objectives" % (list(directions),
                                                                                         MAX_OBJECTIVES))
    return [_one_direction(d) for d in directions]


def _metrics(metric: Union[str, Sequence[str], None], n: int) -> List[str]:
    """The objectives' metric names: metric for one objective ("value" by
    default); for several, "objective_0", "objective_1", ... by default,
    "<metric>_0", ... for a str, or the names given."""
    if metric is None:
        return ["value"] if n == 1 else ["objective_%d" % i for i in range(n)]
    if isinstance(metric, str):
        return [metric] if n == 1 else ["%s_%d" % (metric, i) for i in range(n)]
    names = [str(m) for m in metric]
    if len(names) != n or len(set(names)) != n:
        raise ValueError("metric=%r: give %d distinct names, one per direction" % (list(metric), n))
    return names


def _client(url: Optional[str], token: Optional[str], client: Optional[Client], storage: Any) -> Tuple[Client, bool]:
    if storage is not None:
        raise ValueError("storage=%r: a banditd study is stored by the daemon; give url= and token= (or "
                         "client=) instead" % (storage,))
    if client is not None:
        return client, False
    if url is None:
        raise ValueError("give url= (and token=) or client=")
    return Client(url, token), True


def _study(client: Client, own_client: bool, doc: Dict[str, Any], space: Optional[Dict[str, BaseDistribution]],
           step_offset: float, worker: Optional[str], constraints_func: Any = None) -> BanditdStudy:
    storage = BanditdStorage(client, doc, space, step_offset, worker)
    if own_client:  # its kept-alive connections close when the study is dropped
        weakref.finalize(storage, client.close)
    return BanditdStudy(storage.name, storage, sampler=BanditdSampler(storage, constraints_func),
                        pruner=BanditdPruner(storage))


def _constraints_func(sampler: Any) -> Any:
    """The Optuna sampler's constraints_func (TPESampler's, NSGAIISampler's), or None."""
    return getattr(sampler, "_constraints_func", None) if sampler is not None else None


def _constraints(n_constraints: Optional[int]) -> List[Dict[str, Any]]:
    """The study's constraints for a constraints_func: "c_0" .. "c_<k-1>" of
    n_constraints=k, else one, "c", the aggregate (BanditdStorage.constraint_values)."""
    if n_constraints is None:
        return [{"metric": "c", "max": 0}]
    if not isinstance(n_constraints, int) or isinstance(n_constraints, bool) or not 1 <= n_constraints <= 16:
        raise ValueError("n_constraints must be a whole number from 1 to 16 (how many values constraints_func "
                         "returns), not %r" % (n_constraints,))
    return [{"metric": "c_%d" % i, "max": 0} for i in range(n_constraints)]


def _by_name(client: Client, name: str) -> Dict[str, Any]:
    found = client.list_studies(name=name)
    if not found:
        raise KeyError("Record does not exist: no banditd study named %r (of this token's user)" % (name,))
    return client.get_study(int(found[-1]["id"]))


#: A scheduler that needs its parameters declared, in a study that declares none (define-by-run, as
#: Optuna programs are), is replaced by the first of these the daemon takes for the study's shape.
_DEFINE_BY_RUN_FALLBACK = {"nsga2": ("tpe", "random")}


def _post_study(client: Client, definition: Dict[str, Any], derived_from_sampler: bool) -> Dict[str, Any]:
    """POST /v1/studies. When the sampler's scheduler needs declared parameters
    and the study has none (banditd's 400 naming "parameters"), the study is
    created with the first scheduler of _DEFINE_BY_RUN_FALLBACK that takes its
    objectives and constraints, with a warning naming both (search_space= keeps
    the sampler's own)."""
    try:
        return client.request("POST", "/v1/studies", definition)
    except BanditdError as e:
        name = definition["scheduler"]["name"]
        if not (derived_from_sampler and e.status == 400 and e.field == "parameters" and not definition["parameters"]
                and name in _DEFINE_BY_RUN_FALLBACK):
            raise
        refused = e
    for other in _DEFINE_BY_RUN_FALLBACK[name]:
        try:
            doc = client.request("POST", "/v1/studies", dict(definition, scheduler={"name": other, "options": {}}))
        except BanditdError as e:
            if e.status == 400 and e.field in ("objectives", "constraints"):
                continue
            raise
        msg = ("this define-by-run study uses %s instead of %s: banditd's %s needs the parameters declared up "
               "front; give search_space= for %s" % (other, name, name, name))
        warnings.warn(msg)
        log.warning("%s", msg)
        return doc
    raise refused


def create_study(*, url: Optional[str] = None, token: Optional[str] = None, study_name: Optional[str] = None,
                 direction: Union[str, StudyDirection, None] = None, sampler: Any = None, pruner: Any = None,
                 load_if_exists: bool = False, directions: Optional[Sequence[Any]] = None, storage: Any = None,
                 scheduler: Union[str, Dict[str, Any], None] = None, resource: Optional[Dict[str, Any]] = None,
                 search_space: Optional[Dict[str, BaseDistribution]] = None,
                 metric: Union[str, Sequence[str], None] = None, n_constraints: Optional[int] = None,
                 seed: Optional[int] = None, limits: Optional[Dict[str, Any]] = None,
                 lease_seconds: Optional[float] = None, step_offset: float = 1, worker: Optional[str] = None,
                 client: Optional[Client] = None) -> BanditdStudy:
    """Creates a banditd study now and returns it as an optuna.Study (BanditdStudy).

    Optuna's arguments: study_name, direction or directions (several: a
    study with "objectives", in order), sampler, pruner (mapped by
    scheduler_for; a sampler or pruner banditd has no counterpart of is a
    ValueError naming it; with several directions the pruner is unused, as
    Optuna's report() refuses them), load_if_exists (load the caller's study
    of that name, as stored, with its trials; otherwise a taken name raises
    optuna.exceptions.DuplicatedStudyError). storage= is refused. The
    sampler's constraints_func becomes the study's "constraints": each value
    it returns must be <= 0 (Optuna's rule), called after the objective as
    Optuna does; n_constraints=k (how many values it returns) stores them as
    "c_0" .. "c_<k-1>", each {"max": 0}; without it one constraint "c"
    holds their aggregate (BanditdStorage.constraint_values: feasible and
    violation exactly as Optuna's rules).

    banditd's: url, token (or client=, an existing banditd.Client);
    scheduler: {"name", "options"} or a name, instead of sampler/pruner;
    resource: as in a study definition (required by a multi-fidelity
    scheduler=; with it, should_prune() is also true once a trial's budget is
    reached); search_space: {name: optuna.distributions.*} declared up front
    (a scheduler's joint model sees them; each trial's params are then all of
    them), else none and each trial asks for what its code needs; metric:
    the objective's metric ("value"), or with several directions a list of
    names or a prefix ("objective" gives "objective_0", "objective_1", ...);
    seed, limits, lease_seconds: as in the study definition; step_offset:
    banditd's step (resource used so far) = Optuna's step + step_offset (1
    suits `for step in range(epochs)` loops that report after each epoch, as
    Optuna's examples do; 0 when the step counts epochs done); worker: the
    worker name prefix stored with trials."""
    ds = _directions(direction, directions)
    metrics = _metrics(metric, len(ds))
    scheduler_given = scheduler
    if not (isinstance(step_offset, (int, float)) and math.isfinite(step_offset) and step_offset >= 0):
        raise ValueError("step_offset must be a finite number >= 0")
    if scheduler is not None:
        if sampler is not None or pruner is not None:
            raise ValueError("give scheduler= (a banditd scheduler) or sampler=/pruner= (mapped to one), not both")
        if isinstance(scheduler, str):
            scheduler = {"name": scheduler, "options": {}}
        derived = None
    constraints_func = _constraints_func(sampler)
    if scheduler is None:
        scheduler, derived = scheduler_for(sampler, pruner, len(ds), constraints_func is not None)
        if "stopping" in scheduler["options"]:  # the pruner counts Optuna's steps, banditd step + step_offset
            scheduler["options"]["stopping"]["warmup_steps"] += step_offset
    if n_constraints is not None and constraints_func is None:
        raise ValueError("n_constraints=%r without a sampler with constraints_func" % (n_constraints,))
    space = normalize_space(search_space) if search_space is not None else None
    parameters = to_parameters(space) if space is not None else []  # a space banditd cannot take fails here
    client, own_client = _client(url, token, client, storage)
    name = study_name or "optuna-%s" % uuid.uuid4()
    goals = [{"metric": m, "goal": "minimize" if d == StudyDirection.MINIMIZE else "maximize"}
             for m, d in zip(metrics, ds)]
    definition: Dict[str, Any] = {"name": name, "parameters": parameters, "scheduler": scheduler}
    if len(goals) == 1:
        definition["objective"] = goals[0]
    else:
        definition["objectives"] = goals
    if constraints_func is not None:
        definition["constraints"] = _constraints(n_constraints)
    for key, value in (("resource", resource or derived), ("seed", seed), ("limits", limits),
                       ("lease_seconds", lease_seconds)):
        if value is not None:
            definition[key] = value
    try:
        try:
            doc = _post_study(client, definition, derived_from_sampler=scheduler_given is None)
        except BanditdError as e:
            if not (e.status == 409 and e.field == "name"):
                raise
            if not load_if_exists:
                raise optuna.exceptions.DuplicatedStudyError(
                    "Another study with name '%s' already exists (banditd: %s). Please specify a different "
                    "name, or reuse the existing one by setting `load_if_exists`." % (name, e)) from e
            doc = _by_name(client, name)  # as stored: its scheduler, space and trials
    except BaseException:
        if own_client:
            client.close()
        raise
    return _study(client, own_client, doc, space, step_offset, worker, constraints_func)


def load_study(*, study_name: Optional[str], url: Optional[str] = None, token: Optional[str] = None,
               storage: Any = None, sampler: Any = None, pruner: Any = None, step_offset: float = 1,
               worker: Optional[str] = None, client: Optional[Client] = None) -> BanditdStudy:
    """The caller's banditd study named study_name, with its trials, as an
    optuna.Study (optuna.load_study's arguments plus url= and token=). Its
    scheduler is the stored one: sampler= and pruner= are checked against
    the table (a refused one raises) but change nothing, except the sampler's
    constraints_func, which computes the constraint values of a study with
    constraints. study_name=None loads the caller's only study."""
    for kind, obj in (("sampler", sampler), ("pruner", pruner)):
        if obj is not None:
            _row(kind, obj)
    client, own_client = _client(url, token, client, storage)
    try:
        if study_name is None:
            found = client.list_studies()
            if len(found) != 1:
                raise ValueError("Could not determine the study name: this token's user has %d banditd studies, "
                                 "not 1. Specify `study_name`." % len(found))
            doc = client.get_study(int(found[0]["id"]))
        else:
            doc = _by_name(client, study_name)
    except BaseException:
        if own_client:
            client.close()
        raise
    return _study(client, own_client, doc, None, step_offset, worker, _constraints_func(sampler))


def patch_optuna(url: str, token: Optional[str], **defaults: Any) -> Callable[[], None]:
    """Makes optuna.create_study and optuna.load_study (and optuna.study's,
    which OptunaSearchCV calls) this module's, with url, token and defaults
    (any create_study argument) filled in, so an unchanged Optuna program runs
    on banditd. Returns a function that puts Optuna's back."""
    saved = [(mod, attr, getattr(mod, attr)) for mod in (optuna, optuna.study)
             for attr in ("create_study", "load_study")]

    def created(**kwargs: Any) -> BanditdStudy:
        return create_study(**dict(defaults, url=url, token=token, **kwargs))

    def loaded(**kwargs: Any) -> BanditdStudy:
        keep = {k: v for k, v in defaults.items() if k in ("step_offset", "worker", "client")}
        return load_study(**dict(keep, url=url, token=token, **kwargs))

    for mod, attr, _ in saved:
        setattr(mod, attr, created if attr == "create_study" else loaded)

    def undo() -> None:
        for mod, attr, fn in saved:
            setattr(mod, attr, fn)

    return undo
