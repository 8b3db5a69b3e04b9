"""A conditional search space, as Optuna users write one: the classifier is
chosen first and each classifier asks for its own parameters (SVC: C and
gamma; a random forest: depth and trees). Iris, 3-fold cross-validation, 20
trials, no pruning.

Written for banditd's tests in the style of Optuna's scikit-learn examples;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import optuna
import sklearn.datasets
import sklearn.ensemble
import sklearn.model_selection
import sklearn.svm

BRANCHES = {"SVC": {"classifier", "svc_c", "svc_gamma"},
            "RandomForest": {"classifier", "rf_max_depth", "rf_n_estimators"}}


def objective(trial):
    x, y = sklearn.datasets.load_iris(return_X_y=True)
    classifier = trial.suggest_categorical("classifier", ["SVC", "RandomForest"])
    if classifier == "SVC":
        c = trial.suggest_float("svc_c", 1e-3, 1e3, log=True)
        gamma = trial.suggest_float("svc_gamma", 1e-4, 1e1, log=True)
        model = sklearn.svm.SVC(C=c, gamma=gamma)
    else:
        depth = trial.suggest_int("rf_max_depth", 2, 32, log=True)
        trees = trial.suggest_int("rf_n_estimators", 5, 30)
        model = sklearn.ensemble.RandomForestClassifier(max_depth=depth, n_estimators=trees, random_state=0)
    return sklearn.model_selection.cross_val_score(model, x, y, cv=3).mean()


def main():
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=20)

    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    print("trials:", len(study.trials))
    print("complete trials:", len(complete))
    print("trial numbers count from 0:", [t.number for t in study.trials] == list(range(len(study.trials))))
    print("classifiers tried:", sorted({t.params["classifier"] for t in study.trials}))
    print("params are the branch taken:", all(set(t.params) == BRANCHES[t.params["classifier"]]
                                               for t in study.trials))
    print("best accuracy: %.4f" % study.best_value)
    print("best accuracy above 0.9:", study.best_value > 0.9)
    print("best is the best complete trial:", study.best_value == max(t.value for t in complete))
    print("best params are its branch:", set(study.best_params) == BRANCHES[study.best_params["classifier"]])


if __name__ == "__main__":
    main()
