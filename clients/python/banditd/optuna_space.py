"""banditd.optuna_space: Optuna distributions as banditd parameters, and the
search space of a define-by-run objective recorded from one probe run.

A banditd study needs its parameters when it is created, an Optuna objective
declares them while it runs. to_parameters() maps an explicit space
({name: optuna.distributions.*}) to the study definition's "parameters";
infer_space() runs the objective once on a throwaway in-memory Optuna trial
whose should_prune() is always true, and keeps the distributions it asked for.

Mapping (the Optuna distribution object itself is kept by the bridge, so a
trial's params and distributions read back exactly as the objective asked):
- FloatDistribution(low, high, log)      -> {"type": "float", low, high, log}
- IntDistribution(low, high, log, step=1) -> {"type": "int", low, high, log}
- a step grid (float step, int step > 1) -> {"type": "categorical", "choices":
  the grid}: banditd has no stepped numbers; the values stay exact, but a
  model-based scheduler no longer sees their order
- a single value (low == high)           -> a categorical of that one value
- CategoricalDistribution(choices)       -> {"type": "categorical", choices}:
  strings, booleans, finite numbers (not None: a JSON null is no choice)
"""

import math
from typing import Any, Callable, Dict, List, Mapping, Optional

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

__all__ = ["to_parameters", "normalize_space", "infer_space", "value_from_banditd", "grid_of", "MAX_GRID"]

MAX_GRID = 10000  # values of a step grid sent as a categorical; a finer grid is an error, not a silent cut


def _grid(dist: BaseDistribution) -> List[Any]:
    """Every value of a stepped or single-valued numeric distribution, as Optuna computes them."""
    step = dist.step if dist.step is not None else 1
    n = int(math.floor((dist.high - dist.low) / step + 1e-8)) + 1
    if n > MAX_GRID:
        raise ValueError("a step grid of %d values is too large for banditd (at most %d): drop step= or "
                         "widen it" % (n, MAX_GRID))
    if isinstance(dist, IntDistribution):
        return [int(dist.low + i * step) for i in range(n)]
    return [float(dist.low + i * step) for i in range(n)]


def grid_of(dist: BaseDistribution) -> Optional[List[Any]]:
    """The values banditd's categorical holds for a stepped or single-valued
    numeric distribution (as to_parameters sends them), else None."""
    return _grid(dist) if _is_grid(dist) else None


def _is_grid(dist: BaseDistribution) -> bool:
    if isinstance(dist, (FloatDistribution, IntDistribution)):
        if dist.low == dist.high:
            return True
        return dist.step is not None and not (isinstance(dist, IntDistribution) and dist.step == 1)
    return False


def normalize_space(space: Mapping[str, BaseDistribution]) -> Dict[str, BaseDistribution]:
    """The space with Optuna 2's distribution classes (UniformDistribution, ...)
    replaced by their Float/IntDistribution equivalents: the objective's
    suggest_* calls create the new classes, and Optuna refuses a parameter whose
    class changes."""
    out = {}
    for name, dist in space.items():
        if not isinstance(name, str) or not name:
            raise ValueError("search_space: parameter names must be non-empty strings: %r" % (name,))
        if not isinstance(dist, BaseDistribution):
            raise TypeError("search_space[%r] must be an optuna.distributions object, got %r" % (name, dist))
        if isinstance(dist, FloatDistribution) and type(dist) is not FloatDistribution:
            dist = FloatDistribution(dist.low, dist.high, log=dist.log, step=dist.step)
        elif isinstance(dist, IntDistribution) and type(dist) is not IntDistribution:
            dist = IntDistribution(dist.low, dist.high, log=dist.log, step=dist.step)
        out[name] = dist
    return out


def to_parameters(space: Mapping[str, BaseDistribution]) -> List[Dict[str, Any]]:
    """The banditd study definition's "parameters" for an Optuna space."""
    if not space:
        raise ValueError("the search space is empty: the objective asked for no parameter")
    params = []
    for name, dist in space.items():
        if _is_grid(dist):
            params.append({"name": name, "type": "categorical", "choices": _grid(dist)})
        elif isinstance(dist, FloatDistribution):
            params.append({"name": name, "type": "float", "low": float(dist.low), "high": float(dist.high),
                           "log": bool(dist.log)})
        elif isinstance(dist, IntDistribution):
            params.append({"name": name, "type": "int", "low": int(dist.low), "high": int(dist.high),
                           "log": bool(dist.log)})
        elif isinstance(dist, CategoricalDistribution):
            for c in dist.choices:
                if isinstance(c, float) and not math.isfinite(c) or not isinstance(c, (str, int, float, bool)):
                    raise ValueError("parameter %r: banditd's categorical choices are strings, booleans and "
                                     "finite numbers, not %r" % (name, c))
            params.append({"name": name, "type": "categorical", "choices": list(dist.choices)})
        else:
            raise TypeError("parameter %r: unsupported distribution %r" % (name, dist))
    return params


def value_from_banditd(dist: BaseDistribution, value: Any) -> Any:
    """A config value as the objective's suggest_* returns it: an int for an
    IntDistribution, a float for a FloatDistribution, and for a categorical the
    choice object itself (the JSON round trip keeps equal values only)."""
    if isinstance(dist, CategoricalDistribution):
        for c in dist.choices:
            if c == value and type(c) is type(value):
                return c
        for c in dist.choices:
            if c == value and isinstance(c, bool) == isinstance(value, bool):
                return c
        return value
    if isinstance(dist, IntDistribution):
        return int(value)
    return float(value)


class _PruneFirst(optuna.pruners.BasePruner):
    """The probe's pruner: should_prune() is true at once, so an objective with
    Optuna's pruning loop ends after its first step."""

    def prune(self, study: "optuna.Study", trial: "optuna.trial.FrozenTrial") -> bool:
        return True


def infer_space(objective: Callable[["optuna.Trial"], Any], seed: Any = None) -> Dict[str, BaseDistribution]:
    """The distributions the objective asks for in one probe run on an in-memory
    Optuna trial with random values (RandomSampler(seed)). The probe ends at its
    first should_prune() (raising TrialPruned, as pruning loops do); an objective
    that never asks runs to its end once, and its result is dropped.

    Limits: only the parameters of the branch the probe took are seen (a
    conditional parameter of another branch is missing, and a later trial that
    asks for it fails naming it); a space that changes between trials is
    recorded as the probe saw it. Give search_space= for those."""
    storage = optuna.storages.InMemoryStorage()
    storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "banditd-probe")
    probe = optuna.Study("banditd-probe", storage, sampler=optuna.samplers.RandomSampler(seed=seed),
                         pruner=_PruneFirst())
    trial = probe.ask()
    try:
        objective(trial)
    except optuna.TrialPruned:
        pass
    except Exception as e:
        raise RuntimeError("inferring the search space: the probe run of the objective raised %s: %s (give "
                           "search_space= to create the banditd study without a probe)"
                           % (type(e).__name__, e)) from e
    space = storage.get_trial(trial._trial_id).distributions
    if not space:
        raise ValueError("inferring the search space: the objective asked for no parameter")
    return dict(space)
