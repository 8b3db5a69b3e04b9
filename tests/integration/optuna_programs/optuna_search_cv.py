"""optuna.integration.OptunaSearchCV, scikit-learn's search interface, which
creates its study inside fit(): an SVC on the iris data with C and gamma
log-uniform, 3-fold cross-validation, 12 trials; then the refitted best
estimator scores the held-out part.

Written for banditd's tests in the style of Optuna's OptunaSearchCV example;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import warnings

import optuna
import sklearn.datasets
import sklearn.model_selection
import sklearn.svm
from optuna.distributions import FloatDistribution


def main():
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    x, y = sklearn.datasets.load_iris(return_X_y=True)
    x_train, x_test, y_train, y_test = sklearn.model_selection.train_test_split(x, y, test_size=0.3,
                                                                                random_state=0)
    search = optuna.integration.OptunaSearchCV(
        sklearn.svm.SVC(), {"C": FloatDistribution(1e-3, 1e3, log=True), "gamma": FloatDistribution(1e-4, 1.0,
                                                                                                     log=True)},
        n_trials=12, cv=3, random_state=0)
    search.fit(x_train, y_train)

    print("trials:", len(search.trials_))
    print("study is an optuna.Study:", isinstance(search.study_, optuna.Study))
    print("best params:", sorted(search.best_params_))
    print("best index is the best trial:", search.best_index_ == search.study_.best_trial.number)
    print("fold scores recorded:", all("split2_test_score" in t.user_attrs for t in search.trials_))
    print("cv score: %.4f" % search.best_score_)
    print("cv score above 0.9:", search.best_score_ > 0.9)
    print("test score above 0.9:", search.score(x_test, y_test) > 0.9)


if __name__ == "__main__":
    main()
