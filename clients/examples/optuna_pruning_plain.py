"""Optuna's pruning example (examples/simple_pruning.py in Optuna's repository)
on plain Optuna: an SGD classifier on scikit-learn's bundled digits, trained
epoch by epoch; the pruner stops unpromising trials. optuna_pruning.py is the
same program on banditd: only the imports and the create_study line differ."""

import optuna
import sklearn.datasets
import sklearn.linear_model
import sklearn.model_selection


def objective(trial):
    digits = sklearn.datasets.load_digits()
    classes = list(set(digits.target))
    train_x, valid_x, train_y, valid_y = sklearn.model_selection.train_test_split(
        digits.data / 16.0, digits.target, test_size=0.25, random_state=0)

    alpha = trial.suggest_float("alpha", 1e-6, 1e-1, log=True)
    eta0 = trial.suggest_float("eta0", 1e-4, 1.0, log=True)
    loss = trial.suggest_categorical("loss", ["hinge", "log_loss", "modified_huber"])
    clf = sklearn.linear_model.SGDClassifier(alpha=alpha, eta0=eta0, loss=loss, learning_rate="constant")

    for step in range(27):
        clf.partial_fit(train_x, train_y, classes=classes)

        # Report intermediate objective value.
        intermediate_value = clf.score(valid_x, valid_y)
        trial.report(intermediate_value, step)

        # Handle pruning based on the intermediate value.
        if trial.should_prune():
            raise optuna.TrialPruned()

    return clf.score(valid_x, valid_y)


if __name__ == "__main__":
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=100)
    print("best accuracy %.4f with %s" % (study.best_value, study.best_params))
