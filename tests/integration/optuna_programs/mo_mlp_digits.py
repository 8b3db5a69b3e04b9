"""Two objectives, as in Optuna's multi-objective tutorial: a multilayer
perceptron (scikit-learn's MLPClassifier) on the digits data, its validation
accuracy maximized and its number of weights (the model's size, exact and
deterministic, in place of the tutorial's FLOPS) minimized, by Optuna's
default sampler for several objectives (NSGAIISampler); then
study.best_trials, study.directions, trial.values and trials_dataframe.

Written for banditd's tests in the style of Optuna's multi-objective tutorial;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import warnings

import optuna
import sklearn.datasets
import sklearn.model_selection
import sklearn.neural_network
from optuna.trial import TrialState

N_TRIALS = 14


def n_weights(layers, n_in, n_out):
    sizes = [n_in] + layers + [n_out]
    return sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))


def objective(trial):
    x, y = sklearn.datasets.load_digits(return_X_y=True)
    x_train, x_valid, y_train, y_valid = sklearn.model_selection.train_test_split(x / 16.0, y, test_size=0.3,
                                                                                  random_state=0)
    layers = [trial.suggest_int("n_units_l%d" % i, 4, 64, log=True)
              for i in range(trial.suggest_int("n_layers", 1, 2))]
    mlp = sklearn.neural_network.MLPClassifier(
        hidden_layer_sizes=layers, learning_rate_init=trial.suggest_float("lr", 1e-3, 1e-1, log=True),
        max_iter=30, random_state=0)
    mlp.fit(x_train, y_train)
    return mlp.score(x_valid, y_valid), n_weights(layers, x.shape[1], 10)


class ValuesSeen:
    def __init__(self):
        self.lengths = []

    def __call__(self, study, trial):
        self.lengths.append(len(trial.values) if trial.values is not None else 0)


def dominates(a, b):
    """a is at least as good as b in both objectives and better in one (accuracy up, size down)."""
    return a[0] >= b[0] and a[1] <= b[1] and (a[0] > b[0] or a[1] < b[1])


def main():
    warnings.simplefilter("ignore")  # 30 iterations: the MLP has not converged
    seen = ValuesSeen()
    study = optuna.create_study(directions=["maximize", "minimize"])
    study.optimize(objective, n_trials=N_TRIALS, callbacks=[seen])

    complete = study.get_trials(states=(TrialState.COMPLETE,))
    print("trials:", len(study.trials))
    print("directions:", [d.name for d in study.directions])
    print("callback saw two values each time:", seen.lengths == [2] * N_TRIALS)
    print("every complete trial has two values:", all(len(t.values) == 2 for t in complete))
    print("sizes are the weights of the layers chosen:", all(t.values[1] == n_weights(
        [t.params["n_units_l%d" % i] for i in range(t.params["n_layers"])], 64, 10) for t in complete))
    front = study.best_trials
    print("pareto front is not empty:", len(front) > 0)
    print("no complete trial dominates a best trial:", not any(
        dominates(o.values, b.values) for b in front for o in complete))
    print("best trials are complete trials:", {t.number for t in front} <= {t.number for t in complete})
    try:
        study.best_trial
        print("best_trial refused with several objectives:", False)
    except RuntimeError:
        print("best_trial refused with several objectives:", True)

    df = study.trials_dataframe()
    print("rows:", len(df))
    print("value columns:", sorted(c for c in df.columns if c.startswith("values")))
    print("values_0 is the first value:", all(df.loc[df["number"] == t.number, "values_0"].iloc[0] == t.values[0]
                                               for t in complete))
    best = max(front, key=lambda t: t.values[0])
    print("best accuracy on the front: %.4f" % best.values[0])


if __name__ == "__main__":
    main()
