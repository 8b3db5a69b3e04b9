"""Two objectives and a constraint with TPE (Optuna 3.1's TPESampler with
several directions is MOTPE; constraints_func as in its documentation): a
random forest on the breast-cancer data, its validation error and its size
(nodes in all trees) both minimized, under a constraint a clinic would set:
at most 5% of the malignant tumours missed (false-negative rate - 0.05 <= 0).
Then the feasible trials of the Pareto front (Optuna 3.1's
study.best_trials ignores constraints, so the program keeps the feasible
ones itself), both plot_pareto_front figures (plotly to HTML, matplotlib to
PNG) with infeasible trials drawn apart, and trials_dataframe.

Written for banditd's tests in the style of Optuna's multi-objective and
visualisation tutorials; run by tests/integration/test_optuna_programs.py on
plain Optuna and on banditd."""

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
import sklearn.metrics  # noqa: E402
import sklearn.model_selection  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

MAX_MISSED = 0.05


def objective(trial):
    x, y = sklearn.datasets.load_breast_cancer(return_X_y=True)
    x_train, x_valid, y_train, y_valid = sklearn.model_selection.train_test_split(x, y, test_size=0.4,
                                                                                  random_state=1, stratify=y)
    forest = sklearn.ensemble.RandomForestClassifier(
        n_estimators=trial.suggest_int("n_estimators", 2, 40, log=True),
        max_depth=trial.suggest_int("max_depth", 1, 12),
        min_samples_leaf=trial.suggest_int("min_samples_leaf", 1, 40, log=True),
        criterion=trial.suggest_categorical("criterion", ["gini", "entropy"]),
        class_weight=trial.suggest_categorical("class_weight", ["balanced", "balanced_subsample"]), random_state=0)
    forest.fit(x_train, y_train)
    predicted = forest.predict(x_valid)
    # In this data 0 is malignant: a missed one is a malignant tumour predicted benign.
    missed = float(((y_valid == 0) & (predicted == 1)).sum()) / float((y_valid == 0).sum())
    trial.set_user_attr("missed_malignant", missed)
    nodes = sum(tree.tree_.node_count for tree in forest.estimators_)
    return 1.0 - sklearn.metrics.accuracy_score(y_valid, predicted), nodes


def constraints(trial):
    return (trial.user_attrs["missed_malignant"] - MAX_MISSED,)


def feasible(trial):
    return all(c <= 0 for c in constraints(trial))


def main():
    warnings.simplefilter("ignore")  # multivariate TPE and constraints_func are experimental in Optuna 3.1
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    sampler = optuna.samplers.TPESampler(n_startup_trials=8, constraints_func=constraints)
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    study.optimize(objective, n_trials=24)

    complete = study.get_trials(states=(TrialState.COMPLETE,))
    print("trials:", len(study.trials))
    print("directions:", [d.name for d in study.directions])
    print("feasible complete trials:", sum(feasible(t) for t in complete))
    print("infeasible complete trials:", sum(not feasible(t) for t in complete))
    front = [t for t in study.best_trials if feasible(t)]
    print("feasible pareto trials complete:", len(front))
    print("smallest feasible error: %.4f" % min(t.values[0] for t in complete if feasible(t)))

    fig = optuna.visualization.plot_pareto_front(study, target_names=["error", "nodes"],
                                                 constraints_func=constraints)
    apart = [trace for trace in fig.data if "Infeasible Trial" in (trace.hovertemplate or "")]
    print("plotly draws the infeasible trials apart:", len(apart) == 1 and len(apart[0].x) == sum(
        not feasible(t) for t in complete))
    print("plotly names the axes:", [fig.layout.xaxis.title.text, fig.layout.yaxis.title.text])
    html = os.path.join(out, "pareto.html")
    fig.write_html(html, include_plotlyjs=False)
    print("plotly figure written:", os.path.getsize(html) > 1000)

    ax = ovm.plot_pareto_front(study, target_names=["error", "nodes"], constraints_func=constraints)
    png = os.path.join(out, "pareto.png")
    ax.figure.savefig(png)
    drawn = sum(len(c.get_offsets()) for c in ax.collections)
    print("matplotlib draws every complete trial:", drawn == len(complete))
    print("matplotlib figure saved:", os.path.getsize(png) > 1000)

    df = study.trials_dataframe()
    print("dataframe columns:", sorted(c for c in df.columns if c.startswith("values") or c.startswith("user_attrs")))
    print("rows:", len(df))


if __name__ == "__main__":
    main()
