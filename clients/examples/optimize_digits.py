"""The smallest complete tuning loop (clients/README.md): SGDClassifier on digits
under Hyperband, a report per epoch. Usage: optimize_digits.py URL TOKEN_FILE"""
import sys
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from banditd import Client, read_token

x, y = load_digits(return_X_y=True)
x_train, x_val, y_train, y_val = train_test_split(x / 16, y, random_state=0)

def objective(config, budget, report):
    model = SGDClassifier(alpha=config["alpha"], eta0=config["eta0"], learning_rate="constant")
    for epoch in range(1, int(budget) + 1):
        model.partial_fit(x_train, y_train, classes=list(range(10)))
        report(epoch, 1 - model.score(x_val, y_val))  # raises TrialStopped when the scheduler says stop
    return 1 - model.score(x_val, y_val)

client = Client(sys.argv[1], read_token(sys.argv[2]))  # url, token file
study = client.study("digits-sgd", [{"name": "alpha", "type": "float", "low": 1e-6, "high": 0.1, "log": True},
                                    {"name": "eta0", "type": "float", "low": 1e-4, "high": 1, "log": True}],
                     "hyperband", options={"eta": 3}, if_exists="load",
                     objective={"metric": "val_error", "goal": "minimize"},
                     resource={"name": "epochs", "min": 1, "max": 27, "integer": True})
result = study.optimize(objective, n_workers=2)
print("best validation error %.4f with %s" % (result.best_value, result.best_config))
