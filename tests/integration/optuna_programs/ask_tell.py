"""The ask-and-tell interface: the program runs its own loop, asks for a
trial (two parameters given as fixed distributions to ask(), one suggested
afterwards), and tells the result: a value, a pruned trial (after a
report), or a failure.

Written for banditd's tests in the style of Optuna's ask-and-tell tutorial;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.trial import TrialState


def main():
    study = optuna.create_study(direction="minimize")
    given = {"x": FloatDistribution(-10.0, 10.0), "shape": CategoricalDistribution(["bowl", "ridge"])}
    told = {"complete": 0, "pruned": 0, "failed": 0}
    for i in range(18):
        trial = study.ask(given)
        x, shape = trial.params["x"], trial.params["shape"]
        y = trial.suggest_int("y", -5, 5)
        value = (x - 2) ** 2 + (y ** 2 if shape == "bowl" else abs(y))
        if i % 6 == 4:
            trial.report(value, 0)
            study.tell(trial, state=TrialState.PRUNED)
            told["pruned"] += 1
        elif i % 6 == 5:
            study.tell(trial, state=TrialState.FAIL)
            told["failed"] += 1
        else:
            study.tell(trial, value)
            told["complete"] += 1

    counts = {s: len(study.get_trials(states=(s,))) for s in (TrialState.COMPLETE, TrialState.PRUNED,
                                                                TrialState.FAIL)}
    print("trials:", len(study.trials))
    print("complete trials:", counts[TrialState.COMPLETE])
    print("pruned trials:", counts[TrialState.PRUNED])
    print("failed trials:", counts[TrialState.FAIL])
    print("states read back as told:", [counts[TrialState.COMPLETE], counts[TrialState.PRUNED],
                                         counts[TrialState.FAIL]] == [told["complete"], told["pruned"],
                                                                      told["failed"]])
    print("a pruned trial keeps its last report:", all(t.value == t.intermediate_values[0]
                                                       for t in study.get_trials(states=(TrialState.PRUNED,))))
    print("every trial has x, shape and y:", all(set(t.params) == {"x", "shape", "y"} for t in study.trials))
    print("best value: %.3f" % study.best_value)
    print("best is the best complete trial:", study.best_value == min(
        t.value for t in study.get_trials(states=(TrialState.COMPLETE,))))


if __name__ == "__main__":
    main()
