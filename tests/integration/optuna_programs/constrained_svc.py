"""One objective under a constraint: a support-vector classifier on the
digits data, its validation error minimized by TPESampler(constraints_func=...)
while its prediction cost, the number of support vectors, must stay at most
600 (constraint value: support vectors - 600 <= 0, kept as a user attribute).
Optuna 3.1's best_trial ignores constraints, so the program also finds the
best feasible trial itself, and checks the stored constraint values.

Written for banditd's tests in the style of Optuna's constraint examples;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import warnings

import optuna
import sklearn.datasets
import sklearn.model_selection
import sklearn.svm
from optuna.trial import TrialState

MAX_SUPPORT = 600


def objective(trial):
    x, y = sklearn.datasets.load_digits(return_X_y=True)
    x_train, x_valid, y_train, y_valid = sklearn.model_selection.train_test_split(x / 16.0, y, test_size=0.5,
                                                                                  random_state=0)
    svc = sklearn.svm.SVC(C=trial.suggest_float("C", 1e-2, 1e2, log=True),
                          gamma=trial.suggest_float("gamma", 1e-4, 1.0, log=True))
    svc.fit(x_train, y_train)
    trial.set_user_attr("support_vectors", int(svc.n_support_.sum()))
    return 1.0 - svc.score(x_valid, y_valid)


def constraints(trial):
    return [trial.user_attrs["support_vectors"] - MAX_SUPPORT]


def main():
    warnings.simplefilter("ignore")  # constraints_func is experimental in Optuna 3.1
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(constraints_func=constraints))
    study.optimize(objective, n_trials=20)

    complete = study.get_trials(states=(TrialState.COMPLETE,))
    feasible = [t for t in complete if t.user_attrs["support_vectors"] <= MAX_SUPPORT]
    print("trials:", len(study.trials))
    print("feasible complete trials:", len(feasible))
    print("infeasible complete trials:", len(complete) - len(feasible))
    print("constraints stored:", all(t.system_attrs.get("constraints") == (t.user_attrs["support_vectors"]
                                                                         - MAX_SUPPORT,) for t in complete))
    best_feasible = min(feasible, key=lambda t: t.value)
    print("best feasible error: %.4f" % best_feasible.value)
    print("best error: %.4f" % study.best_value)


if __name__ == "__main__":
    main()
