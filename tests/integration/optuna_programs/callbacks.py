"""Callbacks: optimize(callbacks=[...]) with a callback of the program's own
that records each finished trial and the best value after it,
and Optuna's MaxTrialsCallback, which stops the study after 25 complete
trials although optimize() was asked for 60. The objective is a plain
function of two parameters (the Rosenbrock function).

Written for banditd's tests in the style of Optuna's callback examples;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import optuna
from optuna.trial import TrialState


class Recorder:
    def __init__(self):
        self.numbers = []
        self.states = []
        self.bests = []

    def __call__(self, study, trial):
        self.numbers.append(trial.number)
        self.states.append(trial.state)
        self.bests.append(study.best_value)


def objective(trial):
    x = trial.suggest_float("x", -2.0, 2.0)
    y = trial.suggest_float("y", -1.0, 3.0)
    return (1 - x) ** 2 + 100 * (y - x * x) ** 2


def main():
    recorder = Recorder()
    study = optuna.create_study(direction="minimize")
    study.optimize(objective, n_trials=60,
                   callbacks=[recorder, optuna.study.MaxTrialsCallback(25, states=(TrialState.COMPLETE,))])

    print("trials:", len(study.trials))
    print("callback calls:", len(recorder.numbers))
    print("callback saw trials in order:", recorder.numbers == list(range(len(study.trials))))
    print("callback saw complete trials:", set(recorder.states) == {TrialState.COMPLETE})
    print("best value never got worse:", recorder.bests == sorted(recorder.bests, reverse=True))
    print("best value is the best trial's so far:", all(
        b == min(t.value for t in study.trials[:i + 1]) for i, b in enumerate(recorder.bests)))
    print("callback's last best is the study's:", recorder.bests[-1] == study.best_value)
    print("best value: %.4f" % study.best_value)


if __name__ == "__main__":
    main()
