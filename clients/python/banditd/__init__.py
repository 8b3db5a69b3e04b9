"""banditd: the Python package for the banditd hyperparameter-suggestion daemon.

    from banditd import Client, read_token
    client = Client("http://127.0.0.1:8080", read_token("banditd.db.admin-token"))
    study = client.study("demo", parameters, "hyperband", if_exists="load", ...)
    result = study.optimize(fn, n_workers=2)   # fn(config, budget, report) -> value

banditd.client is the HTTP client, banditd.optimize the tuning loop, and
banditd.errors their error answer, BanditdError (standard library only).
The names below are the package's public interface.
banditd.optuna (import it by name; it needs Optuna 3.1) runs an Optuna
objective unchanged on a banditd study: banditd.optuna.create_study(...).
"""

from banditd.client import Client, read_token
from banditd.errors import BanditdError
from banditd.optimize import (MAX_RETRY_SLEEP, Objective, OptimizeResult, Reporter, Study, TooManyFailures,
                              TrialStopped)

__version__ = "0.1.0"  # keep equal to pyproject.toml
__all__ = ["Client", "BanditdError", "read_token", "Study", "Reporter", "TrialStopped", "TooManyFailures",
           "OptimizeResult", "Objective", "MAX_RETRY_SLEEP", "__version__"]
