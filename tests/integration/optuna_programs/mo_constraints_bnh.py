"""Constraints: Optuna's own constrained example (its FAQ, "How can I
optimize a model with some constraints?"), the Binh and Korn function with
two constraints, computed in the objective, kept as a user attribute and
handed to NSGAIISampler(constraints_func=...), which Optuna calls after
each trial; a trial is feasible when every constraint value is <= 0. Then
the stored constraints, and plot_pareto_front (plotly) with the same
constraints_func, infeasible trials drawn apart, written to an HTML file.

Written for banditd's tests from Optuna's FAQ example (x and y over [-15, 30]
as there; 60 trials instead of 32, the FAQ's timeout dropped);
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import os
import sys
import tempfile
import warnings

import optuna
from optuna.trial import TrialState


def objective(trial):
    # Binh and Korn function with constraints.
    x = trial.suggest_float("x", -15, 30)
    y = trial.suggest_float("y", -15, 30)

    # Constraints which are considered feasible if less than or equal to zero.
    # The feasible region is basically the intersection of a circle centered at (x=5, y=0)
    # and the complement to a circle centered at (x=8, y=-3).
    c0 = (x - 5) ** 2 + y**2 - 25
    c1 = -((x - 8) ** 2) - (y + 3) ** 2 + 7.7

    # Store the constraints as user attributes so that they can be restored after optimization.
    trial.set_user_attr("constraint", (c0, c1))

    v0 = 4 * x**2 + 4 * y**2
    v1 = (x - 5) ** 2 + (y - 5) ** 2

    return v0, v1


def constraints(trial):
    return trial.user_attrs["constraint"]


def main():
    warnings.simplefilter("ignore")  # constraints_func is experimental in Optuna 3.1
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    sampler = optuna.samplers.NSGAIISampler(constraints_func=constraints)
    study = optuna.create_study(
        directions=["minimize", "minimize"],
        sampler=sampler,
    )
    study.optimize(objective, n_trials=60)

    complete = study.get_trials(states=(TrialState.COMPLETE,))
    stored = [t.system_attrs.get("constraints") for t in complete]
    print("trials:", len(study.trials))
    print("complete trials:", len(complete))
    print("constraints stored for every complete trial:", all(
        c is not None and len(c) == 2 for c in stored))
    print("stored constraints are the objective's:", all(
        tuple(c) == tuple(t.user_attrs["constraint"]) for c, t in zip(stored, complete)))
    infeasible = [t for t in complete if any(c > 0 for c in t.user_attrs["constraint"])]
    print("infeasible complete trials:", len(infeasible))

    fig = optuna.visualization.plot_pareto_front(study, constraints_func=constraints)
    apart = [trace for trace in fig.data if "Infeasible Trial" in (trace.hovertemplate or "")]
    print("pareto plot draws the infeasible trials apart:", len(apart) == 1 and len(apart[0].x) == len(infeasible))
    drawn = sum(len(trace.x) for trace in fig.data)
    print("pareto plot shows every complete trial:", drawn == len(complete))
    path = os.path.join(out, "pareto.html")
    fig.write_html(path, include_plotlyjs=False)
    print("pareto plot written:", os.path.getsize(path) > 1000)
    print("smallest v0: %.4f" % min(t.values[0] for t in complete))


if __name__ == "__main__":
    main()
