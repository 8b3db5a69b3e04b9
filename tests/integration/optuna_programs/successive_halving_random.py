"""Pruning with SuccessiveHalvingPruner() (its defaults: min_resource
"auto", reduction_factor 4) and RandomSampler: an SGDRegressor on the
diabetes data trained epoch by epoch with partial_fit, its validation mean
squared error reported after each epoch.

Written for banditd's tests in the style of Optuna's pruning examples;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import optuna
import sklearn.datasets
import sklearn.linear_model
import sklearn.metrics
import sklearn.model_selection
import sklearn.preprocessing

EPOCHS = 20


def objective(trial):
    x, y = sklearn.datasets.load_diabetes(return_X_y=True)
    x_train, x_valid, y_train, y_valid = sklearn.model_selection.train_test_split(x, y, test_size=0.3,
                                                                                  random_state=0)
    scaler = sklearn.preprocessing.StandardScaler().fit(x_train)
    x_train, x_valid = scaler.transform(x_train), scaler.transform(x_valid)

    alpha = trial.suggest_float("alpha", 1e-6, 10.0, log=True)
    eta0 = trial.suggest_float("eta0", 1e-5, 1e-2, log=True)
    reg = sklearn.linear_model.SGDRegressor(alpha=alpha, eta0=eta0, learning_rate="constant", random_state=0)
    for epoch in range(EPOCHS):
        reg.partial_fit(x_train, y_train)
        mse = sklearn.metrics.mean_squared_error(y_valid, reg.predict(x_valid))
        trial.report(mse, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return mse


def main():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3),
                                pruner=optuna.pruners.SuccessiveHalvingPruner())
    study.optimize(objective, n_trials=30)

    pruned = study.get_trials(states=(optuna.trial.TrialState.PRUNED,))
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    print("trials:", len(study.trials))
    print("pruned trials:", len(pruned))
    print("complete trials:", len(complete))
    print("best mse: %.1f" % study.best_value)
    print("best is the best complete trial:", study.best_value == min(t.value for t in complete))


if __name__ == "__main__":
    main()
