"""Optuna's pruning example (examples/simple_pruning.py in Optuna's repository)
on banditd, with Hyperband deciding budgets: the objective is unchanged from
optuna_pruning_plain.py; only the imports and the create_study line differ.
    python3 optuna_pruning.py http://127.0.0.1:8080 banditd.db.admin-token"""

import sys

import banditd
import banditd.optuna
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
    study = banditd.optuna.create_study(
        url=sys.argv[1], token=banditd.read_token(sys.argv[2]), study_name="optuna-pruning",
        scheduler={"name": "hyperband", "options": {"eta": 3}}, direction="maximize",
        resource={"name": "epochs", "min": 1, "max": 27, "integer": True}, load_if_exists=True)
    study.optimize(objective, n_trials=100)
    print("best accuracy %.4f with %s" % (study.best_value, study.best_params))
