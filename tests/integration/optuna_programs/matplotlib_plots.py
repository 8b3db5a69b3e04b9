"""Optuna's matplotlib visualisation, saved to files as a headless script
does (Agg backend): the optimization history, the intermediate values of a
pruned search and the parameter importances, of a search over a
RandomForestRegressor grown tree by tree (warm_start) on the diabetes data,
its out-of-bag score reported as trees are added.

Written for banditd's tests in the style of Optuna's visualisation tutorial;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import os
import sys
import tempfile
import warnings

import matplotlib

matplotlib.use("Agg")

import optuna  # noqa: E402
import optuna.visualization.matplotlib as ovm  # noqa: E402
import sklearn.datasets  # noqa: E402
import sklearn.ensemble  # noqa: E402


def objective(trial):
    x, y = sklearn.datasets.load_diabetes(return_X_y=True)
    forest = sklearn.ensemble.RandomForestRegressor(
        n_estimators=4, warm_start=True, oob_score=True, random_state=0,
        max_depth=trial.suggest_int("max_depth", 2, 16, log=True),
        max_features=trial.suggest_float("max_features", 0.1, 1.0),
        min_samples_leaf=trial.suggest_int("min_samples_leaf", 1, 20))
    for step in range(6):
        forest.n_estimators = 4 * (step + 1)
        forest.fit(x, y)
        trial.report(forest.oob_score_, step)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return forest.oob_score_


def main():
    warnings.simplefilter("ignore")  # few trees: some samples have no out-of-bag estimate yet
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    study = optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner(n_warmup_steps=1))
    study.optimize(objective, n_trials=12)

    saved = []
    for name, plot in (("history", ovm.plot_optimization_history), ("intermediate", ovm.plot_intermediate_values),
                       ("importances", ovm.plot_param_importances)):
        ax = plot(study)
        path = os.path.join(out, "%s.png" % name)
        ax.figure.savefig(path)
        saved.append(os.path.getsize(path) > 1000)
    history = ovm.plot_optimization_history(study)
    print("trials:", len(study.trials))
    print("figures saved:", saved)
    print("history plots every complete trial:", len(history.collections[0].get_offsets()) == len(
        study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))))
    print("best oob score: %.4f" % study.best_value)


if __name__ == "__main__":
    main()
