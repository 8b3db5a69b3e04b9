"""Pruning with trial.report / trial.should_prune and an explicit
MedianPruner: an SGDClassifier trained epoch by epoch with partial_fit on
the digits, its validation accuracy reported after each epoch.

Written for banditd's tests in the style of Optuna's simple_pruning example;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import numpy as np
import optuna
import sklearn.datasets
import sklearn.linear_model
import sklearn.model_selection

EPOCHS = 20


def objective(trial):
    digits = sklearn.datasets.load_digits()
    x_train, x_valid, y_train, y_valid = sklearn.model_selection.train_test_split(
        digits.data / 16.0, digits.target, train_size=400, test_size=300, random_state=0)
    classes = np.unique(digits.target)

    alpha = trial.suggest_float("alpha", 1e-6, 1e-1, log=True)
    eta0 = trial.suggest_float("eta0", 1e-4, 1.0, log=True)
    loss = trial.suggest_categorical("loss", ["hinge", "log_loss", "modified_huber"])
    clf = sklearn.linear_model.SGDClassifier(alpha=alpha, eta0=eta0, loss=loss, learning_rate="constant",
                                             random_state=0)
    for step in range(EPOCHS):
        clf.partial_fit(x_train, y_train, classes=classes)
        accuracy = clf.score(x_valid, y_valid)
        trial.report(accuracy, step)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return clf.score(x_valid, y_valid)


def main():
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=1),
                                pruner=optuna.pruners.MedianPruner())
    study.optimize(objective, n_trials=20)

    pruned = study.get_trials(states=(optuna.trial.TrialState.PRUNED,))
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    print("trials:", len(study.trials))
    print("pruned trials:", len(pruned))
    print("complete trials:", len(complete))
    print("pruned trials stopped early:", all(len(t.intermediate_values) < EPOCHS for t in pruned))
    print("complete trials ran every epoch:", all(len(t.intermediate_values) == EPOCHS for t in complete))
    print("best accuracy: %.4f" % study.best_value)
    print("best is the best complete trial:", study.best_value == max(t.value for t in complete))
    print("best trial is complete:", study.best_trial.state == optuna.trial.TrialState.COMPLETE)


if __name__ == "__main__":
    main()
