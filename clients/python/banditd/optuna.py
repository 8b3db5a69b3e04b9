"""banditd.optuna: run an unchanged Optuna objective on a banditd study.

    import banditd.optuna
    study = banditd.optuna.create_study(url="http://127.0.0.1:8080", token=token, study_name="sgd",
                                        scheduler={"name": "hyperband", "options": {"eta": 3}},
                                        direction="maximize",
                                        resource={"name": "epochs", "min": 1, "max": 27, "integer": True})
    study.optimize(objective, n_trials=50, n_jobs=2)   # objective(trial) as for Optuna
    print(study.best_params)

The study is a real optuna.Study (BanditdStudy subclasses it) on a
BanditdStorage (banditd.optuna_storage: its trials are banditd's trials), with
BanditdSampler (trial.suggest_*() answer banditd's config) and BanditdPruner
(trial.should_prune() is banditd's stop decision, or the trial's budget
reached). See clients/python/README.md for the contract and its limits.
"""

import math
import time
import uuid
import weakref
from typing import Any, Callable, Dict, Optional, Union

import optuna
from optuna.distributions import BaseDistribution
from optuna.study import StudyDirection

from banditd.client import Client
from banditd.optuna_space import infer_space, normalize_space, to_parameters
from banditd.optuna_storage import PRUNED_REASON, BanditdStorage, StudyDone

__all__ = ["create_study", "banditd_trial", "BanditdStudy", "BanditdSampler", "BanditdPruner", "BanditdStorage",
           "StudyDone", "PRUNED_REASON"]


class BanditdSampler(optuna.samplers.BaseSampler):
    """banditd decides every parameter value: a trial's params are its banditd
    config from the start, so Optuna asks the sampler only for a parameter
    banditd's study does not have, which is an error naming it."""

    def __init__(self, storage: BanditdStorage) -> None:
        self._storage = storage

    def infer_relative_search_space(self, study: "optuna.Study", trial: "optuna.trial.FrozenTrial"):
        return {}

    def sample_relative(self, study: "optuna.Study", trial: "optuna.trial.FrozenTrial",
                        search_space: Dict[str, BaseDistribution]) -> Dict[str, Any]:
        return {}

    def sample_independent(self, study: "optuna.Study", trial: "optuna.trial.FrozenTrial", param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        known = ", ".join(sorted(self._storage.space or {}))
        raise ValueError("parameter %r is not in banditd study %r's search space (%s): a space inferred from "
                         "the probe run lacks the parameters of branches the probe did not take; give every "
                         "parameter in search_space=" % (param_name, self._storage.name, known))


class BanditdPruner(optuna.pruners.BasePruner):
    """should_prune(): banditd answered "stop" to a measurement (or no longer
    runs the trial), or, for a study with a resource, the trial's last reported
    step reached the budget banditd gave it."""

    def __init__(self, storage: BanditdStorage) -> None:
        self._storage = storage

    def prune(self, study: "optuna.Study", trial: "optuna.trial.FrozenTrial") -> bool:
        return self._storage.should_stop(trial._trial_id)


class BanditdStudy(optuna.Study):
    """An optuna.Study on one banditd study. optimize() creates the banditd
    study first when the space is to be inferred from the objective, ends
    quietly when banditd has no more trials (StudyDone), and sends the
    objective's exception as the failed trial's reason."""

    @property
    def banditd_id(self) -> Optional[int]:
        """The banditd study's id (None until the first optimize() infers the space)."""
        return self._storage.banditd_id

    def optimize(self, func: Callable[["optuna.Trial"], Any], n_trials: Optional[int] = None,
                 timeout: Optional[float] = None, n_jobs: int = 1, catch: tuple = (), callbacks: Any = None,
                 gc_after_trial: bool = False, show_progress_bar: bool = False) -> None:
        storage: BanditdStorage = self._storage
        if storage.banditd_id is None:
            storage.create(storage.space if storage.space is not None else infer_space(func, storage.seed))

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


def _direction(direction: Union[str, StudyDirection]) -> StudyDirection:
    if isinstance(direction, StudyDirection):
        if direction == StudyDirection.NOT_SET:
            raise ValueError("direction must be minimize or maximize")
        return direction
    if direction not in ("minimize", "maximize"):
        raise ValueError("direction must be \"minimize\" or \"maximize\", not %r" % (direction,))
    return StudyDirection.MINIMIZE if direction == "minimize" else StudyDirection.MAXIMIZE


def create_study(*, url: Optional[str] = None, token: Optional[str] = None, study_name: Optional[str] = None,
                 scheduler: Union[str, Dict[str, Any]], direction: Union[str, StudyDirection] = "minimize",
                 resource: Optional[Dict[str, Any]] = None,
                 search_space: Optional[Dict[str, BaseDistribution]] = None, metric: str = "value",
                 seed: Optional[int] = None, limits: Optional[Dict[str, Any]] = None,
                 lease_seconds: Optional[float] = None, load_if_exists: bool = False, step_offset: float = 1,
                 worker: Optional[str] = None, client: Optional[Client] = None) -> BanditdStudy:
    """Creates a banditd study and returns it as an optuna.Study (BanditdStudy).

    url, token: the daemon and a token (or client=, an existing banditd.Client);
    scheduler: {"name", "options"} or a name; direction: "minimize" or
    "maximize" (banditd's objective goal; metric names it); resource: exactly
    as in a banditd study definition, required by the multi-fidelity schedulers
    (with it, should_prune() is also true once a trial's budget is reached);
    search_space: {name: optuna.distributions.*}, or None to infer it from the
    objective at the first optimize() (one probe run; see optuna_space); seed,
    limits, lease_seconds: as in the study definition; load_if_exists: load the
    caller's study of that name when its definition is the same (else a
    DuplicatedStudyError); step_offset: banditd's step (resource used so far)
    = Optuna's step + step_offset (1 suits `for step in range(epochs)` loops
    that report after each epoch, as Optuna's examples do; 0 when the step
    counts epochs done); worker: the worker name prefix stored with trials."""
    own_client = client is None
    if client is None:
        if url is None:
            raise ValueError("give url= (and token=) or client=")
        client = Client(url, token)
    if isinstance(scheduler, str):
        scheduler = {"name": scheduler, "options": {}}
    if not (isinstance(step_offset, (int, float)) and math.isfinite(step_offset) and step_offset >= 0):
        raise ValueError("step_offset must be a finite number >= 0")
    d = _direction(direction)
    name = study_name or "optuna-%s" % uuid.uuid4()
    definition: Dict[str, Any] = {"name": name, "scheduler": scheduler,
                                  "objective": {"metric": metric, "goal": "minimize" if d == StudyDirection.MINIMIZE
                                                else "maximize"}}
    for key, value in (("resource", resource), ("seed", seed), ("limits", limits), ("lease_seconds", lease_seconds)):
        if value is not None:
            definition[key] = value
    if load_if_exists:
        definition["if_exists"] = "load"
    space = None
    if search_space is not None:
        space = normalize_space(search_space)
        to_parameters(space)  # a space banditd cannot take fails here, before anything is created
    storage = BanditdStorage(client, definition, d, space, step_offset, resource is not None, worker)
    if own_client:  # its kept-alive connections close when the study is dropped
        weakref.finalize(storage, client.close)
    if space is not None:
        storage.create(space)
    return BanditdStudy(name, storage, sampler=BanditdSampler(storage), pruner=BanditdPruner(storage))
