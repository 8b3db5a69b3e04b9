"""Reading a study back: trials_dataframe() as a pandas table and
optuna.importance.get_param_importances (fANOVA) over three parameters of a
k-nearest-neighbours classifier on the wine data.

Written for banditd's tests in the style of Optuna's analysis tutorials;
run by tests/integration/test_optuna_programs.py on plain Optuna and on banditd."""

import math

import optuna
import sklearn.datasets
import sklearn.model_selection
import sklearn.neighbors
import sklearn.pipeline
import sklearn.preprocessing


def objective(trial):
    x, y = sklearn.datasets.load_wine(return_X_y=True)
    knn = sklearn.neighbors.KNeighborsClassifier(
        n_neighbors=trial.suggest_int("n_neighbors", 1, 40),
        weights=trial.suggest_categorical("weights", ["uniform", "distance"]),
        p=trial.suggest_float("p", 1.0, 3.0))
    model = sklearn.pipeline.make_pipeline(sklearn.preprocessing.StandardScaler(), knn)
    return sklearn.model_selection.cross_val_score(model, x, y, cv=3).mean()


def main():
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=16)

    df = study.trials_dataframe()
    print("rows:", len(df))
    print("param columns:", sorted(c for c in df.columns if c.startswith("params_")))
    print("has number, value, state, duration:", {"number", "value", "state", "duration"} <= set(df.columns))
    print("numbers:", list(df["number"]) == list(range(16)))
    print("states:", sorted(set(df["state"])))
    print("best row is the best trial:", int(df.loc[df["value"].idxmax(), "number"]) == study.best_trial.number)
    small = study.trials_dataframe(attrs=("number", "value", "params"))
    print("chosen columns:", sorted(small.columns))

    importances = optuna.importance.get_param_importances(study)
    print("importance keys:", sorted(importances))
    print("importances sum to 1:", math.isclose(sum(importances.values()), 1.0, abs_tol=1e-6))
    print("best accuracy: %.4f" % study.best_value)


if __name__ == "__main__":
    main()
