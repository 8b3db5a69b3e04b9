"""Pruning with HyperbandPruner(min_resource=1, max_resource=27,
reduction_factor=3): an SGDClassifier on the breast cancer data, trained
epoch by epoch with partial_fit, its validation log loss reported after each
of 27 epochs.

Written for banditd's tests in the style of Optuna's pruning examples;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import numpy as np
import optuna
import sklearn.datasets
import sklearn.linear_model
import sklearn.metrics
import sklearn.model_selection
import sklearn.preprocessing

EPOCHS = 27


def objective(trial):
    x, y = sklearn.datasets.load_breast_cancer(return_X_y=True)
    x_train, x_valid, y_train, y_valid = sklearn.model_selection.train_test_split(x, y, test_size=0.3,
                                                                                  random_state=0)
    scaler = sklearn.preprocessing.StandardScaler().fit(x_train)
    x_train, x_valid = scaler.transform(x_train), scaler.transform(x_valid)

    alpha = trial.suggest_float("alpha", 1e-5, 1.0, log=True)
    eta0 = trial.suggest_float("eta0", 1e-5, 1e-1, log=True)
    penalty = trial.suggest_categorical("penalty", ["l2", "l1", "elasticnet"])
    clf = sklearn.linear_model.SGDClassifier(loss="log_loss", alpha=alpha, eta0=eta0, penalty=penalty,
                                             learning_rate="constant", random_state=0)
    for epoch in range(EPOCHS):
        clf.partial_fit(x_train, y_train, classes=np.array([0, 1]))
        loss = sklearn.metrics.log_loss(y_valid, clf.predict_proba(x_valid))
        trial.report(loss, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return loss


def main():
    pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=EPOCHS, reduction_factor=3)
    study = optuna.create_study(direction="minimize", pruner=pruner)
    study.optimize(objective, n_trials=30)

    pruned = study.get_trials(states=(optuna.trial.TrialState.PRUNED,))
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    print("trials:", len(study.trials))
    print("pruned trials:", len(pruned))
    print("complete trials:", len(complete))
    print("pruned trials stopped early:", all(len(t.intermediate_values) < EPOCHS for t in pruned))
    print("best log loss: %.4f" % study.best_value)
    print("best is the best complete trial:", study.best_value == min(t.value for t in complete))


if __name__ == "__main__":
    main()
