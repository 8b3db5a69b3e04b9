#!/usr/bin/python3
"""cash_worker: a real banditd worker for a CASH study (combined algorithm
selection and hyperparameter optimisation) that trains scikit-learn
classifiers and reports their cross-validated balanced accuracy.

The space (SPACE) has a top-level categorical `classifier` with six arms, and
each arm's hyperparameters as its conditional children, named
`<arm>.<hyperparameter>` (ranges after auto-sklearn's classification space
where it has the classifier, narrowed where a value would make one fit cost
minutes; see HYPER):
random_forest, extra_trees, hist_gradient_boosting (scikit-learn's
HistGradientBoostingClassifier), svc (libsvm, with `degree` and `coef0`
nested under the kernel), logistic_regression (liblinear, l1 or l2) and
k_nearest_neighbors. SVC, logistic regression and k-NN standardize their
input inside the pipeline, so each fold is scaled with its own statistics.

Data Debian ships: scikit-learn's bundled digits, breast_cancer and wine (a
stratified 25% held out for the test), and a Fashion-MNIST subset from the
package dataset-fashion-mnist (read with sklearn_worker.py's reader): a
stratified sample of the training images for the search, one of the test
images for the test, 2x2-average-pooled to 14x14 pixels so that a fit costs
seconds, not minutes. The split depends on --data-seed only, never on the
study seed, so every method of a benchmark sees the same data.

One trial: fit and score the trial's config with stratified k-fold cross
validation (balanced accuracy, mean over folds; estimators seeded with 0, so
a config's score is a function of the config) in a forked child process,
which the worker kills at the trial's time limit: the per-trial cap
(--trial-seconds, by default a tenth of the budget, auto-sklearn's default
per-run limit) or the end of the wall-clock budget (--seconds), whichever
comes first. A trial that reaches its cap, or whose fit raises, completes
with value null and a reason (a config that yields no model is a bad config,
and the schedulers learn that from a null value); a trial cut by the end of
the budget is failed (the run is over; the config is not to blame). Every
completion carries elapsed_seconds (the cost-aware rising_bandits divides
its time budget by them). The worker renews the trial's lease while the
child runs.

    /usr/bin/python3 clients/examples/cash_worker.py --url http://127.0.0.1:8080 \\
        --token-file ./banditd.db.admin-token --dataset digits \\
        --create-study rising_bandits --seconds 60 --out run.json

--create-study makes the study (rising_bandits: cost-aware, horizon = the
time budget; uniform: rising_bandits with a window no arm can fill, so the
rounds never eliminate an arm; gp_ucb: joint Bayesian optimisation over the
whole conditional space); --study joins an existing study created with SPACE
(several copies of the worker may share it). One process runs one trial at
a time; BLAS and OpenMP are held to one thread and every estimator has
n_jobs=1, so the cost of a trial is one core's.

Needs Debian's python3-sklearn (1.2) and python3-numpy; talks HTTP through
clients/python/banditd_client.py (stdlib only).
"""

import os

# One thread per BLAS and OpenMP runtime; they read these when numpy and
# scikit-learn load, so this comes before those imports.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
from banditd_client import BanditdError, Client, read_token  # noqa: E402
from sklearn_worker import read_fashion_mnist  # noqa: E402

log = logging.getLogger("cash_worker")

ARM = "classifier"
_CLASS_WEIGHT = {"name": "class_weight", "type": "categorical", "choices": ["none", "balanced"]}
_FOREST = [
    {"name": "criterion", "type": "categorical", "choices": ["gini", "entropy"]},
    # auto-sklearn's form: a split looks at n_features ** max_features features
    # (0: one, 0.5: the square root, 1: all).
    {"name": "max_features", "type": "float", "low": 0.0, "high": 1.0},
    {"name": "min_samples_split", "type": "int", "low": 2, "high": 20},
    {"name": "min_samples_leaf", "type": "int", "low": 1, "high": 20},
    {"name": "bootstrap", "type": "categorical", "choices": [True, False]},
    _CLASS_WEIGHT,
]
# arm -> its hyperparameters (names without the "<arm>." prefix); an extra
# "when" names a sibling hyperparameter the parameter is nested under.
HYPER = {
    "random_forest": _FOREST,
    "extra_trees": _FOREST,
    "hist_gradient_boosting": [
        {"name": "learning_rate", "type": "float", "low": 0.01, "high": 1.0, "log": True},
        # auto-sklearn fixes 512 iterations with early stopping; a tunable count up
        # to 200 (one tree per class each) keeps a 10-class fit within seconds.
        {"name": "max_iter", "type": "int", "low": 10, "high": 200, "log": True},
        {"name": "max_leaf_nodes", "type": "int", "low": 3, "high": 255, "log": True},
        {"name": "min_samples_leaf", "type": "int", "low": 1, "high": 200, "log": True},
        {"name": "l2_regularization", "type": "float", "low": 1e-10, "high": 1.0, "log": True},
        _CLASS_WEIGHT,
    ],
    "svc": [
        {"name": "C", "type": "float", "low": 0.03125, "high": 32768.0, "log": True},
        {"name": "kernel", "type": "categorical", "choices": ["rbf", "poly", "sigmoid"]},
        {"name": "gamma", "type": "float", "low": 3.0517578125e-05, "high": 8.0, "log": True},
        {"name": "degree", "type": "int", "low": 2, "high": 5, "when": {"kernel": ["poly"]}},
        {"name": "coef0", "type": "float", "low": -1.0, "high": 1.0, "when": {"kernel": ["poly", "sigmoid"]}},
        _CLASS_WEIGHT,
    ],
    "logistic_regression": [  # not in auto-sklearn's space: the usual C range
        {"name": "C", "type": "float", "low": 1e-4, "high": 1e4, "log": True},
        {"name": "penalty", "type": "categorical", "choices": ["l1", "l2"]},
        _CLASS_WEIGHT,
    ],
    "k_nearest_neighbors": [
        {"name": "n_neighbors", "type": "int", "low": 1, "high": 100, "log": True},
        {"name": "weights", "type": "categorical", "choices": ["uniform", "distance"]},
        {"name": "p", "type": "categorical", "choices": [1, 2]},
    ],
}
ARMS = tuple(HYPER)
FOREST_TREES = 100  # auto-sklearn's fixed forest size


def build_space():
    """The banditd parameters: `classifier`, then each arm's children (parents before children)."""
    space = [{"name": ARM, "type": "categorical", "choices": list(ARMS)}]
    for arm, params in HYPER.items():
        for p in params:
            q = dict(p, name="%s.%s" % (arm, p["name"]))
            when = {ARM: [arm]}
            for parent, values in p.get("when", {}).items():
                when["%s.%s" % (arm, parent)] = values
            q["when"] = when
            space.append(q)
    return space


SPACE = build_space()

# How --create-study sets up each method. Every study also gets
# limits.seconds = the budget and limits.trials = MAX_TRIALS (rising_bandits
# requires a trial horizon; the cost-aware variant uses the time budget
# instead, so MAX_TRIALS only has to be out of reach).
MAX_TRIALS = 100000
METHODS = {
    # the cost-aware variant: horizon = time left / the arm's mean trial time
    "rising_bandits": ("rising_bandits", {"cost_aware": True}),
    # an arm is only ever eliminated after window + 1 finished pulls, which no
    # arm can reach: the rounds pull every arm in turn, each with the inner
    # optimizer a new rising_bandits study gets (GP-UCB until 2026-11-27, TPE
    # since); "allocation": "rounds" keeps the rounds whatever the default
    "uniform": ("rising_bandits", {"cost_aware": True, "window": MAX_TRIALS, "allocation": "rounds"}),
    "gp_ucb": ("gp_ucb", {}),
}


# ---- data ----

class Data:
    """A search split (cross-validated) and a held-out test split."""

    def __init__(self, name, X, y, X_test, y_test, folds, note=""):
        self.name = name
        self.X, self.y = np.ascontiguousarray(X, dtype=np.float64), y
        self.X_test, self.y_test = np.ascontiguousarray(X_test, dtype=np.float64), y_test
        self.folds = folds
        self.note = note

    @property
    def fold_train_size(self):
        """Rows a cross-validation fit sees (the smallest fold's complement)."""
        return len(self.y) - int(math.ceil(len(self.y) / self.folds))

    def describe(self):
        return {"name": self.name, "search_rows": int(len(self.y)), "test_rows": int(len(self.y_test)),
                "features": int(self.X.shape[1]), "classes": int(len(np.unique(self.y))),
                "folds": self.folds, "note": self.note}


def _stratified_sample(y, n, rng):
    """Indices of a stratified sample of n rows of y (n = len(y): all of them, shuffled)."""
    from sklearn.model_selection import train_test_split
    idx = np.arange(len(y))
    if n >= len(y):
        return rng.permutation(idx)
    return train_test_split(idx, train_size=n, stratify=y, random_state=rng)[0]


def _pool(X, side, k):
    """k x k average pooling of square images stored as rows of side*side pixels."""
    return X.reshape(-1, side // k, k, side // k, k).mean(axis=(2, 4)).reshape(len(X), -1)


def load_data(name, seed, folds, fashion_train, fashion_test, fashion_pool):
    """The named dataset split into search and test rows by a generator seeded with seed."""
    rng = np.random.RandomState(seed)
    if name == "fashion-mnist":
        X, y, Xt, yt = read_fashion_mnist()
        tr, te = _stratified_sample(y, fashion_train, rng), _stratified_sample(yt, fashion_test, rng)
        X, Xt = X[tr], Xt[te]
        if fashion_pool > 1:
            X, Xt = _pool(X, 28, fashion_pool), _pool(Xt, 28, fashion_pool)
        note = "stratified %d of the 60,000 training and %d of the 10,000 test images, %dx%d average pooling" % (
            len(tr), len(te), fashion_pool, fashion_pool)
        return Data(name, X, y[tr], Xt, yt[te], folds, note)
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    loaders = {"digits": datasets.load_digits, "breast_cancer": datasets.load_breast_cancer,
               "wine": datasets.load_wine}
    if name not in loaders:
        raise SystemExit("unknown dataset %r (digits, breast_cancer, wine, fashion-mnist)" % name)
    d = loaders[name]()
    X, Xt, y, yt = train_test_split(d.data, d.target, test_size=0.25, stratify=d.target, random_state=rng)
    return Data(name, X, y, Xt, yt, folds, "scikit-learn's bundled copy, stratified 25% held out")


# ---- models ----

def _class_weight(hp):
    return None if hp["class_weight"] == "none" else hp["class_weight"]


def _scaled(model):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    return make_pipeline(StandardScaler(), model)


def _forest(cls, hp, data):
    n_features = data.X.shape[1]
    return cls(n_estimators=FOREST_TREES, criterion=hp["criterion"],
               max_features=max(1, int(round(n_features ** hp["max_features"]))),
               min_samples_split=hp["min_samples_split"], min_samples_leaf=hp["min_samples_leaf"],
               bootstrap=hp["bootstrap"], class_weight=_class_weight(hp), n_jobs=1, random_state=0)


def _random_forest(hp, data):
    from sklearn.ensemble import RandomForestClassifier
    return _forest(RandomForestClassifier, hp, data)


def _extra_trees(hp, data):
    from sklearn.ensemble import ExtraTreesClassifier
    return _forest(ExtraTreesClassifier, hp, data)


def _hist_gradient_boosting(hp, data):
    from sklearn.ensemble import HistGradientBoostingClassifier
    # No early stopping: it would carve a validation set out of each fold.
    return HistGradientBoostingClassifier(
        learning_rate=hp["learning_rate"], max_iter=hp["max_iter"], max_leaf_nodes=hp["max_leaf_nodes"],
        min_samples_leaf=hp["min_samples_leaf"], l2_regularization=hp["l2_regularization"],
        class_weight=_class_weight(hp), early_stopping=False, random_state=0)


def _svc(hp, data):
    from sklearn.svm import SVC
    return _scaled(SVC(C=hp["C"], kernel=hp["kernel"], gamma=hp["gamma"], degree=hp.get("degree", 3),
                       coef0=hp.get("coef0", 0.0), class_weight=_class_weight(hp), random_state=0))


def _logistic_regression(hp, data):
    from sklearn.linear_model import LogisticRegression
    # liblinear: both penalties, one-vs-rest for several classes, fast on small data
    return _scaled(LogisticRegression(C=hp["C"], penalty=hp["penalty"], solver="liblinear",
                                      class_weight=_class_weight(hp), random_state=0))


def _k_nearest_neighbors(hp, data):
    from sklearn.neighbors import KNeighborsClassifier
    # More neighbours than a fold's training rows is an error; clamp (wine has ~89).
    k = min(hp["n_neighbors"], data.fold_train_size)
    return _scaled(KNeighborsClassifier(n_neighbors=k, weights=hp["weights"], p=int(hp["p"]), n_jobs=1))


BUILDERS = {"random_forest": _random_forest, "extra_trees": _extra_trees,
            "hist_gradient_boosting": _hist_gradient_boosting, "svc": _svc,
            "logistic_regression": _logistic_regression, "k_nearest_neighbors": _k_nearest_neighbors}
assert set(BUILDERS) == set(HYPER)


def arm_config(config):
    """(arm, its hyperparameters without the prefix) of a trial's config."""
    arm = config[ARM]
    prefix = arm + "."
    return arm, {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}


def make_model(config, data):
    arm, hp = arm_config(config)
    return BUILDERS[arm](hp, data)


def cv_balanced_accuracy(config, data):
    """Mean balanced accuracy over stratified folds (the folds depend on the data only)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    cv = StratifiedKFold(n_splits=data.folds, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings are part of the search
        scores = cross_val_score(make_model(config, data), data.X, data.y, cv=cv, scoring="balanced_accuracy",
                                 n_jobs=1, error_score="raise")
    return float(np.mean(scores))


def test_balanced_accuracy(config, data):
    """Refits on every search row; balanced accuracy on the held-out test rows, and the seconds it took."""
    from sklearn.metrics import balanced_accuracy_score
    t0 = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_model(config, data).fit(data.X, data.y)
        score = balanced_accuracy_score(data.y_test, model.predict(data.X_test))
    return float(score), time.monotonic() - t0


# ---- one trial in a child process ----

DATA = None  # the loaded Data; a forked child inherits it


def _child(conn, config):
    """Runs in the forked child: sends ("ok", score) or ("error", message)."""
    try:
        score = cv_balanced_accuracy(config, DATA)
        if not math.isfinite(score):
            conn.send(("error", "the score is %r" % score))
        else:
            conn.send(("ok", score))
    except Exception as e:  # any failure of the fit is the config's result
        conn.send(("error", "%s: %s" % (type(e).__name__, str(e)[:300])))
    finally:
        conn.close()


def evaluate(config, limit, keep_alive, keep_alive_every):
    """Scores config in a forked child, killed after limit seconds (None: no limit);
    keep_alive() is called every keep_alive_every seconds meanwhile.
    Returns ("ok", score), ("error", message) or ("timeout", None)."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, config), daemon=True)
    child.start()
    send.close()  # the child holds the only writer, so its death reads as EOF
    end = None if limit is None else time.monotonic() + limit
    try:
        while True:
            wait = keep_alive_every if end is None else min(keep_alive_every, end - time.monotonic())
            if wait <= 0:
                return "timeout", None
            if recv.poll(wait):
                try:
                    return recv.recv()
                except EOFError:
                    child.join()
                    return "error", "the process fitting the model died (exit code %s)" % child.exitcode
            keep_alive()
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        recv.close()


# ---- the worker loop ----

class Run:
    """The trials this worker ran, timed from the start of its loop."""

    def __init__(self, budget, trial_cap):
        self.t0 = time.monotonic()
        self.deadline = None if budget is None else self.t0 + budget
        self.trial_cap = trial_cap
        self.trials = []
        self.seconds = None  # the loop's wall time, once it ended

    def finish(self):
        self.seconds = self.now()

    def now(self):
        return time.monotonic() - self.t0

    def left(self):
        return None if self.deadline is None else self.deadline - time.monotonic()

    def limit(self):
        """(seconds the next trial may run, whether the budget's end is what limits it)."""
        left = self.left()
        if self.trial_cap is None or (left is not None and left <= self.trial_cap):
            return left, left is not None
        return self.trial_cap, False


def run_trial(client, run, trial, lease_seconds):
    """Evaluates one trial, reports it, and appends its record to run.trials."""
    tid, config = trial["id"], trial["config"]
    arm, hp = arm_config(config)
    limit, by_budget = run.limit()
    start = run.now()
    status, result = evaluate(config, limit, lambda: client.heartbeat(tid), max(1.0, lease_seconds / 3.0))
    elapsed = run.now() - start
    rec = {"trial": tid, "arm": arm, "config": hp, "start": start, "end": start + elapsed, "seconds": elapsed,
           "value": None, "status": status}
    if status == "ok":
        rec["value"] = result
        client.complete(tid, value=result, elapsed_seconds=elapsed)
    elif status == "timeout" and by_budget:
        rec["status"] = "cut"
        client.fail(tid, reason="the worker's wall-clock budget ended after %.1f s of this trial" % elapsed)
    else:
        reason = result if status == "error" else "over the per-trial cap of %.1f s" % limit
        rec["reason"] = reason
        client.complete(tid, value=None, reason=reason, elapsed_seconds=elapsed)
    run.trials.append(rec)
    log.info("trial %d %-22s %-7s %s %.1f s", tid, arm, rec["status"],
             "%.4f" % rec["value"] if rec["value"] is not None else "-", elapsed)


def work(client, study_id, run, lease_seconds):
    """Suggest / evaluate / report until the study is done or the budget is spent.
    Returns why it stopped: "budget" or "done"."""
    name = "%s-%d" % (socket.gethostname(), os.getpid())
    while True:
        left = run.left()
        if left is not None and left <= 0:
            return "budget"
        got = client.suggest(study_id, worker=name)
        if got.get("done"):
            return "done"
        if not got["trials"]:  # another worker holds this round's pulls
            wait = got.get("retry_after_ms", 500) / 1000.0
            time.sleep(wait if left is None else max(0.0, min(wait, left)))
            continue
        for trial in got["trials"]:
            try:
                run_trial(client, run, trial, lease_seconds)
            except BanditdError as e:
                if e.status != 409:
                    raise
                log.warning("trial %d is no longer running (%s); skipping it", trial["id"], e.message)


# ---- the study and the summary ----

def create_study(client, method, data, budget, seed, lease_seconds, extra_options):
    scheduler, options = METHODS[method]
    options = dict(options, **extra_options)
    limits = {"trials": MAX_TRIALS}
    if budget is not None:
        limits["seconds"] = budget
    return client.create_study(
        "cash-%s-%s-seed%d-%d" % (data.name, method, seed, int(time.time())), SPACE, scheduler, options=options,
        objective={"metric": "balanced_accuracy", "goal": "maximize", "bounds": [0, 1]},
        seed=seed, lease_seconds=lease_seconds, limits=limits)


def summarize(run, study, data, stopped, test):
    """The run as one JSON document (see cash_live.py for its use)."""
    ok = [t for t in run.trials if t["value"] is not None]
    best = max(ok, key=lambda t: t["value"]) if ok else None
    inc = study.get("incumbent")
    problems = []
    # Checkable only when this worker ran every trial of the study.
    alone = len(run.trials) == (study.get("used") or {}).get("trials")
    if alone and inc and best and abs(inc["value"] - best["value"]) > 1e-12:
        problems.append("the daemon's incumbent %.6f is not the best result %.6f" % (inc["value"], best["value"]))
    return {
        "study": study["id"], "scheduler": study["scheduler"]["name"], "options": study["scheduler"]["options"],
        "seed": study["seed"], "data": data.describe(), "budget": run.deadline and run.deadline - run.t0,
        "trial_cap": run.trial_cap, "stopped": stopped, "loop_seconds": run.seconds, "trials": run.trials,
        "best": best and {"trial": best["trial"], "arm": best["arm"], "value": best["value"], "end": best["end"]},
        "incumbent": inc and {"trial": inc["trial_id"], "arm": inc["config"][ARM], "value": inc["value"]},
        "state": study["scheduler"].get("state"), "used": study.get("used"), "test": test, "problems": problems,
    }


def evaluate_incumbent(study, data):
    """Test balanced accuracy of the daemon's incumbent refitted on the search rows, or None."""
    inc = study.get("incumbent")
    if not inc:
        return None
    score, seconds = test_balanced_accuracy(inc["config"], data)
    return {"balanced_accuracy": score, "refit_seconds": seconds, "arm": inc["config"][ARM]}


def print_summary(s):
    by_arm = {}
    for t in s["trials"]:
        n, secs = by_arm.get(t["arm"], (0, 0.0))
        by_arm[t["arm"]] = (n + 1, secs + t["seconds"])
    print("\n==== study %d, %s %s, %s: %d trials in %.1f s (stopped: %s) ====" % (
        s["study"], s["scheduler"], json.dumps(s["options"]), s["data"]["name"], len(s["trials"]),
        s["loop_seconds"], s["stopped"]))
    arms = {a["arm"]: a for a in (s["state"] or {}).get("arms", [])}
    for arm in ARMS:
        n, secs = by_arm.get(arm, (0, 0.0))
        el = arms.get(arm, {}).get("eliminated_round")
        print("  %-24s %3d trials %7.1f s%s" % (arm, n, secs, ", eliminated in round %d" % el if el else ""))
    if s["best"]:
        print("best cross-validated balanced accuracy %.4f (%s, trial %d, at %.1f s)" % (
            s["best"]["value"], s["best"]["arm"], s["best"]["trial"], s["best"]["end"]))
    if s["test"]:
        print("test balanced accuracy of the incumbent: %.4f (refit %.1f s)" % (
            s["test"]["balanced_accuracy"], s["test"]["refit_seconds"]))
    for p in s["problems"]:
        print("PROBLEM: %s" % p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=os.environ.get("BANDITD_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--token-file", default=os.environ.get("BANDITD_TOKEN_FILE", "banditd.db.admin-token"))
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--study", type=int, help="the id of an existing study (created with SPACE)")
    g.add_argument("--create-study", choices=sorted(METHODS), help="create a study for this method")
    ap.add_argument("--options", type=json.loads, default={},
                    help="JSON object merged into the scheduler options of --create-study")
    ap.add_argument("--dataset", default="digits", help="digits, breast_cancer, wine or fashion-mnist")
    ap.add_argument("--seconds", type=float, help="wall-clock budget of the loop (and the study's limits.seconds)")
    ap.add_argument("--trial-seconds", type=float,
                    help="per-trial cap (default: a tenth of --seconds; none without --seconds)")
    ap.add_argument("--folds", type=int, default=3, help="cross-validation folds (default 3)")
    ap.add_argument("--fashion-train", type=int, default=1000, help="Fashion-MNIST search rows (default 1000)")
    ap.add_argument("--fashion-test", type=int, default=1000, help="Fashion-MNIST test rows (default 1000)")
    ap.add_argument("--fashion-pool", type=int, default=2, choices=(1, 2, 4, 7, 14),
                    help="average-pool Fashion-MNIST images by this factor (default 2: 14x14 pixels)")
    ap.add_argument("--data-seed", type=int, default=0, help="seed of the data split (default 0)")
    ap.add_argument("--seed", type=int, default=1, help="the created study's seed")
    ap.add_argument("--lease-seconds", type=int, default=300, help="the created study's lease (default 300)")
    ap.add_argument("--no-test", action="store_true", help="skip the incumbent's test-set evaluation")
    ap.add_argument("--out", help="write the run (every trial, the final scheduler state) as JSON here")
    ap.add_argument("--log-level", default="info")
    args = ap.parse_args()
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stdout,
                        format="%(asctime)s.%(msecs)03d %(message)s", datefmt="%H:%M:%S")
    if args.seconds is not None and args.seconds <= 0:
        ap.error("--seconds must be positive")
    cap = args.trial_seconds if args.trial_seconds else (args.seconds / 10.0 if args.seconds else None)

    global DATA
    t_load = time.monotonic()
    DATA = load_data(args.dataset, args.data_seed, args.folds, args.fashion_train, args.fashion_test,
                     args.fashion_pool)
    log.info("%s (loaded in %.1f s)", DATA.describe(), time.monotonic() - t_load)

    client = Client(args.url, read_token(args.token_file))
    if args.create_study:
        study = create_study(client, args.create_study, DATA, args.seconds, args.seed, args.lease_seconds,
                             args.options)
        log.info("created study %d (%s, options %s)", study["id"], study["scheduler"]["name"],
                 study["scheduler"]["options"])
    else:
        study = client.get_study(args.study)
    run = Run(args.seconds, cap)
    stopped = work(client, study["id"], run, study["lease_seconds"])
    run.finish()
    final = client.get_study(study["id"])
    test = None if args.no_test else evaluate_incumbent(final, DATA)
    summary = summarize(run, final, DATA, stopped, test)
    client.close()
    print_summary(summary)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f)
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
