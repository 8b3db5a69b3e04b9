"""banditd.optuna_space: Optuna distributions as banditd parameters and back.

A banditd study may declare its parameters up front (search_space= of
banditd.optuna.create_study: to_parameters) or none: then each trial asks
for a parameter when the objective's suggest_* first needs it (POST
/v1/trials/{id}/parameters with to_parameter's definition), so a
conditional, define-by-run space is learned from use as in Optuna.

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
from_parameter maps a definition read from the daemon back (a grid comes
back as a categorical: the process that asked keeps the original).
"""

import math
from typing import Any, Dict, List, Mapping, Optional

from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

__all__ = ["to_parameter", "to_parameters", "from_parameter", "normalize_space", "normalize_distribution",
           "value_from_banditd", "grid_of", "MAX_GRID"]

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


def normalize_distribution(name: str, dist: BaseDistribution) -> BaseDistribution:
    """dist with Optuna 2's distribution classes (UniformDistribution, ...)
    replaced by their Float/IntDistribution equivalents: the objective's
    suggest_* calls create the new classes, and Optuna refuses a parameter
    whose class changes."""
    if not isinstance(name, str) or not name:
        raise ValueError("search_space: parameter names must be non-empty strings: %r" % (name,))
    if not isinstance(dist, BaseDistribution):
        raise TypeError("search_space[%r] must be an optuna.distributions object, got %r" % (name, dist))
    if isinstance(dist, FloatDistribution) and type(dist) is not FloatDistribution:
        return FloatDistribution(dist.low, dist.high, log=dist.log, step=dist.step)
    if isinstance(dist, IntDistribution) and type(dist) is not IntDistribution:
        return IntDistribution(dist.low, dist.high, log=dist.log, step=dist.step)
    return dist


def normalize_space(space: Mapping[str, BaseDistribution]) -> Dict[str, BaseDistribution]:
    """Every distribution of space through normalize_distribution."""
    return {name: normalize_distribution(name, dist) for name, dist in space.items()}


def to_parameter(name: str, dist: BaseDistribution) -> Dict[str, Any]:
    """One parameter of a banditd study definition (without "when") for an
    Optuna distribution: the body of POST /v1/trials/{id}/parameters."""
    if _is_grid(dist):
        return {"name": name, "type": "categorical", "choices": _grid(dist)}
    if isinstance(dist, FloatDistribution):
        return {"name": name, "type": "float", "low": float(dist.low), "high": float(dist.high),
                "log": bool(dist.log)}
    if isinstance(dist, IntDistribution):
        return {"name": name, "type": "int", "low": int(dist.low), "high": int(dist.high), "log": bool(dist.log)}
    if isinstance(dist, CategoricalDistribution):
        for c in dist.choices:
            if isinstance(c, float) and not math.isfinite(c) or not isinstance(c, (str, int, float, bool)):
                raise ValueError("parameter %r: banditd's categorical choices are strings, booleans and "
                                 "finite numbers, not %r" % (name, c))
        return {"name": name, "type": "categorical", "choices": list(dist.choices)}
    raise TypeError("parameter %r: unsupported distribution %r" % (name, dist))


def to_parameters(space: Mapping[str, BaseDistribution]) -> List[Dict[str, Any]]:
    """The banditd study definition's "parameters" for an Optuna space (empty:
    a define-by-run study, whose trials ask for their parameters)."""
    return [to_parameter(name, dist) for name, dist in space.items()]


def from_parameter(p: Mapping[str, Any]) -> BaseDistribution:
    """The Optuna distribution of a banditd parameter definition, as the
    daemon holds it (a step grid sent as a categorical reads back as one)."""
    kind = p.get("type")
    if kind == "float":
        return FloatDistribution(float(p["low"]), float(p["high"]), log=bool(p.get("log")))
    if kind == "int":
        return IntDistribution(int(p["low"]), int(p["high"]), log=bool(p.get("log")))
    if kind == "categorical":
        return CategoricalDistribution(list(p["choices"]))
    raise ValueError("parameter %r: unknown banditd parameter type %r" % (p.get("name"), kind))


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
