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

The study is a real optuna.Study (BanditdStudy subclasses it) on a
BanditdStorage (banditd.optuna_storage: its trials are banditd's trials), with
BanditdSampler (a parameter's value comes from the daemon) and BanditdPruner
(trial.should_prune() is banditd's stop answer, or the trial's budget reached).
"""

import math
import time
import uuid
import weakref
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

import optuna
from optuna.distributions import BaseDistribution
from optuna.study import StudyDirection

from banditd.client import Client
from banditd.errors import BanditdError
from banditd.optuna_space import normalize_space, to_parameters
from banditd.optuna_storage import PRUNED_REASON, BanditdStorage, StudyDone

__all__ = ["create_study", "load_study", "patch_optuna", "banditd_trial", "scheduler_for", "BanditdStudy",
           "BanditdSampler", "BanditdPruner", "BanditdStorage", "StudyDone", "PRUNED_REASON", "DEFAULT_MAX_STEPS"]

#: resource.max of a study whose pruner needs a resource that the program did
#: not bound (no resource=, no HyperbandPruner(max_resource=)): larger than any
#: training loop, so the objective's own loop decides where a trial ends; the
#: rungs above its last step never judge.
DEFAULT_MAX_STEPS = 1000000


# ---- what Optuna's samplers and pruners mean on banditd: ONE table ----

def _no_options(obj: Any) -> Dict[str, Any]:
    return {}


def _tpe_options(s: "optuna.samplers.TPESampler") -> Dict[str, Any]:
    """The TPESampler arguments banditd's TPE takes, where they differ from Optuna's defaults."""
    if getattr(s, "_constraints_func", None) is not None:
        raise ValueError("sampler=TPESampler(constraints_func=...): banditd has no constrained optimization "
                         "yet; drop constraints_func")
    out: Dict[str, Any] = {}
    if s._n_startup_trials != 10:
        out["n_startup_trials"] = int(s._n_startup_trials)
    if s._n_ei_candidates != 24:
        out["n_ei_candidates"] = int(s._n_ei_candidates)
    if s._multivariate:
        out["multivariate"] = True
    return out


def _rung_rule(eta: int) -> Dict[str, Any]:
    """A stopping-type ASHA judging by the value at the rung (Optuna's rule), keeping the top 1/eta."""
    return {"type": "stopping", "eta": int(eta), "promotion": "current", "promotion_fraction": "eta"}


def _median(p: "optuna.pruners.MedianPruner") -> Tuple[Dict[str, Any], Optional[int], Optional[int]]:
    # ASHA's rung rule with eta 2 (the better half at steps 1, 2, 4, 8, ... goes on), not the
    # median rule at every step; warm-up steps are the first rung's budget.
    return _rung_rule(2), max(1, int(p._n_warmup_steps) + 1), None


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
_MULTI = "banditd optimizes one objective (several objectives come later): use TPESampler() or RandomSampler()"
#: class name -> ("sampler", banditd sampler, options of the object) | ("pruner", stopping-type
#: multi-fidelity scheduler or None for no early stopping, (options, resource min, resource max) of
#: the object) | a str: refused with that advice. A class not here is refused too.
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
    "NSGAIISampler": _MULTI,
    "MOTPESampler": _MULTI,
    "MedianPruner": ("pruner", "asha", _median),
    "SuccessiveHalvingPruner": ("pruner", "asha", _successive_halving),
    "HyperbandPruner": ("pruner", "hyperband", _hyperband),
    "NopPruner": ("pruner", None, lambda p: ({}, None, None)),
    "PercentilePruner": "banditd has no percentile rule: use MedianPruner() (ASHA's rung rule, eta 2) or "
                        "SuccessiveHalvingPruner(reduction_factor=...)",
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


def scheduler_for(sampler: Any = None, pruner: Any = None) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    """The banditd scheduler {"name", "options"} and the resource (None: not
    multi-fidelity) for an Optuna sampler and pruner. None means Optuna's
    default: TPESampler() and MedianPruner(). A pruner's resource is its step
    range: min its min_resource (1 when Optuna estimates it), max its
    max_resource, else DEFAULT_MAX_STEPS (for Hyperband, whose rungs count
    down from the maximum, min_resource * eta^k, the first at or above it)."""
    sampler = sampler or optuna.samplers.TPESampler()
    pruner = pruner or optuna.pruners.MedianPruner()
    sampler_name, sampler_options = _row("sampler", sampler)
    name, options_of = _row("pruner", pruner)
    options = sampler_options(sampler)
    if name is None:
        return {"name": sampler_name, "options": options}, None
    own, low, high = options_of(pruner)
    options.update(own)
    options["sampler"] = sampler_name
    low = int(low) if isinstance(low, int) and low >= 1 else 1
    high = int(high) if isinstance(high, int) and high >= low else max(DEFAULT_MAX_STEPS, low)
    return {"name": name, "options": options}, {"name": "steps", "min": low, "max": high, "integer": True}


# ---- the Optuna objects ----

class BanditdSampler(optuna.samplers.BaseSampler):
    """Every value comes from banditd: a trial's up-front params are its banditd
    config, and a parameter the objective asks for later is asked of the daemon
    (POST /v1/trials/{id}/parameters), which draws it with the study's sampler."""

    def __init__(self, storage: BanditdStorage) -> None:
        self._storage = storage

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


def _direction(direction: Any, directions: Optional[Sequence[Any]]) -> StudyDirection:
    if directions is not None:
        if direction is not None:
            raise ValueError("Specify only one of `direction` and `directions`.")
        if len(directions) != 1:
            raise NotImplementedError("directions=%r: banditd optimizes one objective (several objectives "
                                      "come later); give direction=" % (list(directions),))
        direction = directions[0]
    if direction is None:
        return StudyDirection.MINIMIZE
    if isinstance(direction, StudyDirection) and direction != StudyDirection.NOT_SET:
        return direction
    if direction not in ("minimize", "maximize"):
        raise ValueError("direction must be \"minimize\" or \"maximize\", not %r" % (direction,))
    return StudyDirection.MINIMIZE if direction == "minimize" else StudyDirection.MAXIMIZE


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
           step_offset: float, worker: Optional[str]) -> BanditdStudy:
    storage = BanditdStorage(client, doc, space, step_offset, worker)
    if own_client:  # its kept-alive connections close when the study is dropped
        weakref.finalize(storage, client.close)
    return BanditdStudy(storage.name, storage, sampler=BanditdSampler(storage), pruner=BanditdPruner(storage))


def _by_name(client: Client, name: str) -> Dict[str, Any]:
    found = client.list_studies(name=name)
    if not found:
        raise KeyError("Record does not exist: no banditd study named %r (of this token's user)" % (name,))
    return client.get_study(int(found[-1]["id"]))


def create_study(*, url: Optional[str] = None, token: Optional[str] = None, study_name: Optional[str] = None,
                 direction: Union[str, StudyDirection, None] = None, sampler: Any = None, pruner: Any = None,
                 load_if_exists: bool = False, directions: Optional[Sequence[Any]] = None, storage: Any = None,
                 scheduler: Union[str, Dict[str, Any], None] = None, resource: Optional[Dict[str, Any]] = None,
                 search_space: Optional[Dict[str, BaseDistribution]] = None, metric: str = "value",
                 seed: Optional[int] = None, limits: Optional[Dict[str, Any]] = None,
                 lease_seconds: Optional[float] = None, step_offset: float = 1, worker: Optional[str] = None,
                 client: Optional[Client] = None) -> BanditdStudy:
    """Creates a banditd study now and returns it as an optuna.Study (BanditdStudy).

    Optuna's arguments: study_name, direction (or directions= of one),
    sampler, pruner (mapped by scheduler_for; a sampler or pruner banditd has
    no counterpart of is a ValueError naming it), load_if_exists (load the
    caller's study of that name, as stored, with its trials; otherwise a taken
    name raises optuna.exceptions.DuplicatedStudyError). storage= is refused.

    banditd's: url, token (or client=, an existing banditd.Client);
    scheduler: {"name", "options"} or a name, instead of sampler/pruner;
    resource: as in a study definition (required by a multi-fidelity
    scheduler=; with it, should_prune() is also true once a trial's budget is
    reached); search_space: {name: optuna.distributions.*} declared up front
    (a scheduler's joint model sees them; each trial's params are then all of
    them), else none and each trial asks for what its code needs; metric,
    seed, limits, lease_seconds: as in the study definition; step_offset:
    banditd's step (resource used so far) = Optuna's step + step_offset (1
    suits `for step in range(epochs)` loops that report after each epoch, as
    Optuna's examples do; 0 when the step counts epochs done); worker: the
    worker name prefix stored with trials."""
    d = _direction(direction, directions)
    if not (isinstance(step_offset, (int, float)) and math.isfinite(step_offset) and step_offset >= 0):
        raise ValueError("step_offset must be a finite number >= 0")
    if scheduler is not None:
        if sampler is not None or pruner is not None:
            raise ValueError("give scheduler= (a banditd scheduler) or sampler=/pruner= (mapped to one), not both")
        if isinstance(scheduler, str):
            scheduler = {"name": scheduler, "options": {}}
        derived = None
    else:
        scheduler, derived = scheduler_for(sampler, pruner)
    space = normalize_space(search_space) if search_space is not None else None
    parameters = to_parameters(space) if space is not None else []  # a space banditd cannot take fails here
    client, own_client = _client(url, token, client, storage)
    name = study_name or "optuna-%s" % uuid.uuid4()
    definition: Dict[str, Any] = {"name": name, "parameters": parameters, "scheduler": scheduler,
                                  "objective": {"metric": metric, "goal": "minimize" if d == StudyDirection.MINIMIZE
                                                else "maximize"}}
    for key, value in (("resource", resource or derived), ("seed", seed), ("limits", limits),
                       ("lease_seconds", lease_seconds)):
        if value is not None:
            definition[key] = value
    try:
        try:
            doc = client.request("POST", "/v1/studies", definition)
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
    return _study(client, own_client, doc, space, step_offset, worker)


def load_study(*, study_name: Optional[str], url: Optional[str] = None, token: Optional[str] = None,
               storage: Any = None, sampler: Any = None, pruner: Any = None, step_offset: float = 1,
               worker: Optional[str] = None, client: Optional[Client] = None) -> BanditdStudy:
    """The caller's banditd study named study_name, with its trials, as an
    optuna.Study (optuna.load_study's arguments plus url= and token=). Its
    scheduler is the stored one: sampler= and pruner= are checked against
    the table (a refused one raises) but change nothing. study_name=None loads
    the caller's only study."""
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
    return _study(client, own_client, doc, None, step_offset, worker)


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
