"""enqueue_trial: two configurations known to be reasonable are tried
first, then the sampler takes over; after the search, enqueueing a
configuration already tried with skip_if_exists=True enqueues nothing. A
Ridge or Lasso regression on the diabetes data (a conditional parameter:
Lasso's max_iter), 5-fold cross-validated mean squared error.

Written for banditd's tests in the style of Optuna's enqueue_trial example;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import warnings

import optuna
import sklearn.datasets
import sklearn.linear_model
import sklearn.model_selection

FIRST = [{"model": "ridge", "alpha": 1.0}, {"model": "lasso", "alpha": 0.1, "max_iter": 1000}]


def objective(trial):
    x, y = sklearn.datasets.load_diabetes(return_X_y=True)
    model = trial.suggest_categorical("model", ["ridge", "lasso"])
    alpha = trial.suggest_float("alpha", 1e-3, 10.0, log=True)
    if model == "ridge":
        reg = sklearn.linear_model.Ridge(alpha=alpha)
    else:
        reg = sklearn.linear_model.Lasso(alpha=alpha, max_iter=trial.suggest_int("max_iter", 100, 2000, log=True))
    scores = sklearn.model_selection.cross_val_score(reg, x, y, cv=5, scoring="neg_mean_squared_error")
    return -scores.mean()


def main():
    warnings.simplefilter("ignore")  # Lasso's convergence warnings
    study = optuna.create_study(direction="minimize")
    for params in FIRST:
        study.enqueue_trial(params)
    study.optimize(objective, n_trials=12)
    study.enqueue_trial(FIRST[0], skip_if_exists=True)  # tried already: skipped
    study.optimize(objective, n_trials=2)

    print("trials:", len(study.trials))
    print("first trials are the enqueued ones:", [t.params for t in study.trials[:2]] == FIRST)
    print("enqueued values kept exactly:", study.trials[0].params["alpha"] == 1.0)
    print("a tried config is not enqueued again:", study.trials[-2].params != FIRST[0])
    print("best mse: %.1f" % study.best_value)
    print("best mse below 3200:", study.best_value < 3200)
    print("best is the best complete trial:", study.best_value == min(t.value for t in study.trials))


if __name__ == "__main__":
    main()
