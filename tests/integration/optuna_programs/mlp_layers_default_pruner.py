"""A define-by-run architecture and Optuna's default pruner: the number of
hidden layers is chosen first and each layer asks for its width
(n_units_l0, n_units_l1, ...), as in Optuna's PyTorch examples; a
scikit-learn MLPClassifier trained epoch by epoch with partial_fit on part
of the digits, its validation error reported after each epoch. create_study
has no pruner=, so should_prune() uses Optuna's default (MedianPruner).

Written for banditd's tests in the style of Optuna's pytorch_simple example;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import warnings

import numpy as np
import optuna
import sklearn.datasets
import sklearn.model_selection
import sklearn.neural_network

EPOCHS = 15


def objective(trial):
    digits = sklearn.datasets.load_digits()
    x_train, x_valid, y_train, y_valid = sklearn.model_selection.train_test_split(
        digits.data / 16.0, digits.target, train_size=500, test_size=300, random_state=1)
    classes = np.unique(digits.target)

    n_layers = trial.suggest_int("n_layers", 1, 3)
    layers = tuple(trial.suggest_int("n_units_l%d" % i, 4, 64, log=True) for i in range(n_layers))
    lr = trial.suggest_float("learning_rate_init", 1e-4, 1e-1, log=True)
    model = sklearn.neural_network.MLPClassifier(hidden_layer_sizes=layers, learning_rate_init=lr, random_state=0)
    for epoch in range(EPOCHS):
        model.partial_fit(x_train, y_train, classes=classes)
        error = 1.0 - model.score(x_valid, y_valid)
        trial.report(error, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return error


def main():
    warnings.simplefilter("ignore")  # partial_fit's convergence warnings
    study = optuna.create_study(direction="minimize")
    study.optimize(objective, n_trials=20)

    pruned = study.get_trials(states=(optuna.trial.TrialState.PRUNED,))
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    print("trials:", len(study.trials))
    print("pruned trials:", len(pruned))
    print("complete trials:", len(complete))
    print("each trial has the layers it asked for:", all(
        set(t.params) == {"n_layers", "learning_rate_init"} | {"n_units_l%d" % i for i in range(t.params["n_layers"])}
        for t in study.trials))
    print("layer counts tried:", len({t.params["n_layers"] for t in study.trials}) > 1)
    print("best error: %.4f" % study.best_value)
    print("best is the best complete trial:", study.best_value == min(t.value for t in complete))


if __name__ == "__main__":
    main()
