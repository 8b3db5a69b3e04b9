"""XGBoost with its pruning callback (optuna.integration.XGBoostPruningCallback),
which reports the validation log loss after each boosting round and prunes
through trial.should_prune(); a MedianPruner that waits 5 rounds. Breast
cancer data, 30 rounds, 20 trials.

Written for banditd's tests in the style of Optuna's xgboost_integration
example; run by tests/integration/test_optuna_programs.py on plain Optuna and
on banditd."""

import numpy as np
import optuna
import sklearn.datasets
import sklearn.metrics
import sklearn.model_selection
import xgboost as xgb

ROUNDS = 30


def objective(trial):
    x, y = sklearn.datasets.load_breast_cancer(return_X_y=True)
    x_train, x_valid, y_train, y_valid = sklearn.model_selection.train_test_split(x, y, test_size=0.25,
                                                                                  random_state=0)
    dtrain = xgb.DMatrix(x_train, label=y_train)
    dvalid = xgb.DMatrix(x_valid, label=y_valid)
    param = {
        "verbosity": 0, "objective": "binary:logistic", "eval_metric": "logloss", "nthread": 1,
        "booster": trial.suggest_categorical("booster", ["gbtree", "dart"]),
        "lambda": trial.suggest_float("lambda", 1e-8, 1.0, log=True),
        "alpha": trial.suggest_float("alpha", 1e-8, 1.0, log=True),
        "max_depth": trial.suggest_int("max_depth", 1, 9),
        "eta": trial.suggest_float("eta", 1e-3, 1.0, log=True),
    }
    if param["booster"] == "dart":
        param["rate_drop"] = trial.suggest_float("rate_drop", 1e-8, 1.0, log=True)
    callback = optuna.integration.XGBoostPruningCallback(trial, "validation-logloss")
    booster = xgb.train(param, dtrain, num_boost_round=ROUNDS, evals=[(dvalid, "validation")],
                        verbose_eval=False, callbacks=[callback])
    predictions = np.rint(booster.predict(dvalid))
    return sklearn.metrics.accuracy_score(y_valid, predictions)


def main():
    study = optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner(n_warmup_steps=5))
    study.optimize(objective, n_trials=20)

    pruned = study.get_trials(states=(optuna.trial.TrialState.PRUNED,))
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    print("trials:", len(study.trials))
    print("pruned trials:", len(pruned))
    print("complete trials:", len(complete))
    print("no pruning before round 5:", all(len(t.intermediate_values) > 5 for t in pruned))
    print("rate_drop only with dart:", all(("rate_drop" in t.params) == (t.params["booster"] == "dart")
                                           for t in study.trials))
    print("best accuracy: %.4f" % study.best_value)
    print("best is the best complete trial:", study.best_value == max(t.value for t in complete))


if __name__ == "__main__":
    main()
