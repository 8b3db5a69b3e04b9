"""Two trials at a time: optimize(n_jobs=2) on a logistic regression for the
wine data (a stepped max_iter, a solver chosen among two), 3-fold
cross-validated accuracy; a user attribute records each trial's fold scores.

Written for banditd's tests in the style of Optuna's scikit-learn examples;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import threading
import warnings

import optuna
import sklearn.datasets
import sklearn.linear_model
import sklearn.model_selection
import sklearn.pipeline
import sklearn.preprocessing

THREADS = set()


def objective(trial):
    THREADS.add(threading.current_thread().name)
    x, y = sklearn.datasets.load_wine(return_X_y=True)
    model = sklearn.pipeline.make_pipeline(
        sklearn.preprocessing.StandardScaler(),
        sklearn.linear_model.LogisticRegression(
            C=trial.suggest_float("C", 1e-4, 1e2, log=True),
            solver=trial.suggest_categorical("solver", ["lbfgs", "liblinear"]),
            max_iter=trial.suggest_int("max_iter", 20, 200, step=20)))
    scores = sklearn.model_selection.cross_val_score(model, x, y, cv=3)
    trial.set_user_attr("fold_scores", [round(float(s), 4) for s in scores])
    return float(scores.mean())


def main():
    warnings.simplefilter("ignore")  # few iterations: convergence warnings
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=16, n_jobs=2)

    numbers = sorted(t.number for t in study.trials)
    print("trials:", len(study.trials))
    print("complete trials:", len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))))
    print("trial numbers are 0 to n-1:", numbers == list(range(16)))
    print("ran on two threads:", len(THREADS) == 2)
    print("stepped values on their grid:", all(t.params["max_iter"] in range(20, 201, 20) for t in study.trials))
    print("every trial has its fold scores:", all(len(t.user_attrs["fold_scores"]) == 3 for t in study.trials))
    print("best accuracy: %.4f" % study.best_value)
    print("best accuracy above 0.9:", study.best_value > 0.9)


if __name__ == "__main__":
    main()
