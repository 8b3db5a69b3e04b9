#!/usr/bin/python3
"""sklearn_worker: a real banditd worker that tunes a linear classifier trained
epoch by epoch (SGDClassifier.partial_fit, one epoch = one pass over the
training set) on Fashion-MNIST (Debian package dataset-fashion-mnist) or on
scikit-learn's bundled digits.

Each worker loops: suggest -> if the trial has resume_from, load that trial's
checkpoint (a pickle keyed by trial id that records how many epochs the model
has seen) -> train up to the trial's budget (cumulative epochs), reporting the
validation error (1 - accuracy) after every epoch and stopping when the daemon
answers "stop" -> save a checkpoint under the trial's own id -> complete with
the final validation error. At the end it checks on the daemon's records that
every promoted trial resumed where its parent stopped and that no trial saw
more epochs than its budget, then evaluates the best config on a held-out test
split.

    /usr/bin/python3 clients/examples/sklearn_worker.py --url http://127.0.0.1:8080 \
        --token-file ./banditd.db.admin-token --create-study hyperband 27 3 --workers 2

Needs Debian's python3-sklearn and python3-numpy; talks HTTP through
clients/python/banditd_client.py (stdlib only).
"""

import argparse
import concurrent.futures
import gzip
import logging
import multiprocessing
import os
import pickle
import socket
import sys
import threading
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from banditd_client import BanditdError, Client, read_token  # noqa: E402

FASHION_DIR = "/usr/share/datasets/fashion-mnist"
log = logging.getLogger("worker")
DATA = None  # the loaded Data; forked worker processes inherit it

SPACE = [
    {"name": "loss", "type": "categorical", "choices": ["hinge", "log_loss", "modified_huber"]},
    {"name": "penalty", "type": "categorical", "choices": ["l2", "l1", "elasticnet"]},
    {"name": "l1_ratio", "type": "float", "low": 0.05, "high": 0.95, "when": {"penalty": ["elasticnet"]}},
    {"name": "alpha", "type": "float", "low": 1e-7, "high": 1e-1, "log": True},
    {"name": "learning_rate", "type": "categorical", "choices": ["constant", "invscaling"]},
    {"name": "eta0", "type": "float", "low": 1e-5, "high": 1.0, "log": True},
    {"name": "power_t", "type": "float", "low": 0.1, "high": 0.9, "when": {"learning_rate": ["invscaling"]}},
]


# ---- data ----

class Data:
    """Train / validation / test splits, standardized with the training statistics."""

    def __init__(self, name, X_train, y_train, X_val, y_val, X_test, y_test):
        from sklearn.preprocessing import StandardScaler
        scaler = StandardScaler().fit(X_train)
        self.name = name
        self.X_train, self.y_train = scaler.transform(X_train).astype(np.float64), y_train
        self.X_val, self.y_val = scaler.transform(X_val).astype(np.float64), y_val
        self.X_test, self.y_test = scaler.transform(X_test).astype(np.float64), y_test
        self.classes = np.unique(y_train)

    def describe(self):
        return "%s: %d train, %d validation, %d test, %d features, %d classes" % (
            self.name, len(self.y_train), len(self.y_val), len(self.y_test), self.X_train.shape[1],
            len(self.classes))


def _read_idx(path):
    """Reads an IDX file (the MNIST format), gzipped."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def read_fashion_mnist():
    """Returns (X, y, X_test, y_test): the 60,000 training and 10,000 test images of the
    Debian package dataset-fashion-mnist as rows of 784 pixels in [0, 1], and int64 labels.
    Also used by cash_worker.py."""
    if not os.path.isdir(FASHION_DIR):
        raise SystemExit("%s not found: install the Debian package dataset-fashion-mnist "
                         "(docker/install-deps.sh --bench)" % FASHION_DIR)
    X = _read_idx(os.path.join(FASHION_DIR, "train-images-idx3-ubyte.gz")).reshape(60000, -1) / 255.0
    y = _read_idx(os.path.join(FASHION_DIR, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    Xt = _read_idx(os.path.join(FASHION_DIR, "t10k-images-idx3-ubyte.gz")).reshape(10000, -1) / 255.0
    yt = _read_idx(os.path.join(FASHION_DIR, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    return X, y, Xt, yt


def load_data(name, train_size, seed):
    rng = np.random.RandomState(seed)
    if name == "auto":
        name = "fashion-mnist" if os.path.isdir(FASHION_DIR) else "digits"
    if name == "fashion-mnist":
        X, y, Xt, yt = read_fashion_mnist()
        perm = rng.permutation(len(y))
        val, train = perm[:10000], perm[10000:10000 + (train_size or 50000)]
        return Data(name, X[train], y[train], X[val], y[val], Xt, yt)
    if name == "digits":
        from sklearn.datasets import load_digits
        d = load_digits()
        perm = rng.permutation(len(d.target))
        n = len(perm)
        test, val, train = perm[:n // 5], perm[n // 5:2 * n // 5], perm[2 * n // 5:]
        if train_size:
            train = train[:train_size]
        X = d.data / 16.0
        return Data(name, X[train], d.target[train], X[val], d.target[val], X[test], d.target[test])
    raise SystemExit("unknown dataset %r (fashion-mnist, digits, auto)" % name)


# ---- model and checkpoints ----

def make_model(config, seed):
    from sklearn.linear_model import SGDClassifier
    return SGDClassifier(loss=config["loss"], penalty=config["penalty"],
                         l1_ratio=config.get("l1_ratio", 0.15), alpha=config["alpha"],
                         learning_rate=config["learning_rate"], eta0=config["eta0"],
                         power_t=config.get("power_t", 0.5), random_state=seed)


def val_error(model, X, y):
    return float(1.0 - model.score(X, y))


def diverged(model):
    return hasattr(model, "coef_") and not (np.all(np.isfinite(model.coef_)) and
                                            np.all(np.isfinite(model.intercept_)))


def ckpt_path(ckdir, trial_id):
    return os.path.join(ckdir, "trial-%d.pkl" % trial_id)


def save_checkpoint(ckdir, trial, model, epochs):
    path = ckpt_path(ckdir, trial["id"])
    tmp = "%s.tmp-%d-%d" % (path, os.getpid(), threading.get_ident())
    with open(tmp, "wb") as f:
        pickle.dump({"trial_id": trial["id"], "config_id": trial["config_id"], "config": trial["config"],
                     "epochs": epochs, "model": model}, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)


def load_checkpoint(ckdir, trial_id):
    """Returns the checkpoint dict of trial_id, or None when there is none."""
    try:
        with open(ckpt_path(ckdir, trial_id), "rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        return None


# ---- the worker loop ----

class Stats:
    def __init__(self):
        self.trials = 0
        self.completed = 0
        self.stopped = 0
        self.diverged = 0
        self.failed = 0
        self.resumed = 0
        self.from_scratch = 0   # promotions whose checkpoint was missing
        self.epochs = 0         # epochs actually trained
        self.budget_epochs = 0  # sum of budgets: what training without resumption would cost

    def add(self, other):
        for k, v in vars(other).items():
            setattr(self, k, getattr(self, k) + v)


def run_trial(client, data, trial, args, stats):
    """Trains one trial to its budget; returns nothing, reports everything to the daemon."""
    tid, cfg = trial["id"], trial["config"]
    budget = int(round(trial["budget"]))
    where = "".join(", %s %s" % kv for kv in (trial.get("scheduler") or {}).items())
    start, model = 0, None
    parent = trial.get("resume_from")
    if parent is not None:
        ck = load_checkpoint(args.checkpoint_dir, parent)
        if ck is None:
            log.warning("trial %d: no checkpoint of trial %d in %s; training from scratch",
                        tid, parent, args.checkpoint_dir)
            stats.from_scratch += 1
        else:
            assert ck["config"] == cfg, "trial %d resumes trial %d with another config" % (tid, parent)
            assert ck["epochs"] <= budget, "checkpoint of trial %d has %d epochs > budget %d of trial %d" % (
                parent, ck["epochs"], budget, tid)
            model, start = ck["model"], ck["epochs"]
            stats.resumed += 1
            log.info("resumed trial %d from %d at epoch %d (budget %d%s)", tid, parent, start, budget, where)
    if model is None:
        model = make_model(cfg, seed=trial["config_id"])
        log.info("trial %d: new config %d, budget %d%s: %s", tid, trial["config_id"], budget, where, cfg)
    stats.trials += 1
    stats.budget_epochs += budget

    t0 = time.monotonic()
    epochs, err, action = start, None, {"action": "continue"}
    while epochs < budget:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            model.partial_fit(data.X_train, data.y_train, classes=data.classes)
        epochs += 1
        stats.epochs += 1
        assert epochs <= budget, "trial %d trained %d epochs > budget %d" % (tid, epochs, budget)
        if diverged(model):
            save_checkpoint(args.checkpoint_dir, trial, model, epochs)
            log.info("trial %d diverged at epoch %d", tid, epochs)
            stats.diverged += 1
            client.complete(tid, value=None, reason="diverged at epoch %d" % epochs,
                            elapsed_seconds=time.monotonic() - t0)
            return
        err = val_error(model, data.X_val, data.y_val)
        action = client.measure(tid, epochs, err, elapsed_seconds=time.monotonic() - t0)
        if action.get("action") == "stop":
            break
    save_checkpoint(args.checkpoint_dir, trial, model, epochs)
    if action.get("action") == "stop":
        stats.stopped += 1
        log.info("trial %d stopped by the scheduler at epoch %d: %s", tid, epochs, action.get("reason"))
        return
    if err is None:  # the checkpoint already had the whole budget (a re-offered trial)
        err = val_error(model, data.X_val, data.y_val)
    client.complete(tid, value=err, elapsed_seconds=time.monotonic() - t0, runtime=time.monotonic() - t0)
    stats.completed += 1
    log.info("trial %d done: %d epochs (%d here), validation error %.4f", tid, epochs, epochs - start, err)


def worker_loop(n, url, token, study_id, args):
    """One worker: suggest / train / complete until the study is done. Returns its Stats."""
    data = DATA
    name = "%s-%d-w%d" % (socket.gethostname(), os.getpid(), n)
    client = Client(url, token)
    stats = Stats()
    try:
        while True:
            got = client.suggest(study_id, worker=name)
            if got.get("done"):
                log.info("%s: the study is done", name)
                return stats
            if not got["trials"]:
                time.sleep(got.get("retry_after_ms", 500) / 1000.0)
                continue
            for trial in got["trials"]:
                try:
                    run_trial(client, data, trial, args, stats)
                except BanditdError as e:
                    if e.status != 409:
                        raise
                    log.warning("trial %d is no longer running (%s); skipping it", trial["id"], e.message)
                except Exception as e:
                    stats.failed += 1
                    log.exception("trial %d failed", trial["id"])
                    client.fail(trial["id"], reason="%s: %s" % (type(e).__name__, e))
                    if isinstance(e, AssertionError):
                        raise
    finally:
        client.close()


# ---- after the run ----

def verify_resumption(client, study_id):
    """Checks the daemon's records: each trial measured epochs up to at most its budget, and a
    trial with resume_from started right after its parent's last epoch. Returns
    (trials checked, promotions that resumed, promotions that restarted from epoch 1)."""
    trials = {t["id"]: t for t in client.list_trials(study_id)}
    steps = {}
    for tid, t in trials.items():
        if t["state"] in ("completed", "stopped"):
            steps[tid] = [int(m["step"]) for m in client.get_trial(tid)["measurements"]]
    resumed = restarted = 0
    for tid, s in steps.items():
        t = trials[tid]
        if not s:
            continue
        assert s == list(range(s[0], s[-1] + 1)), "trial %d: steps not consecutive: %s" % (tid, s)
        assert s[-1] <= t["budget"] + 1e-9, "trial %d: epoch %d > budget %s" % (tid, s[-1], t["budget"])
        parent = t.get("resume_from")
        if parent is None:
            assert s[0] == 1, "trial %d: new config starts at epoch %d" % (tid, s[0])
        elif parent in steps and steps[parent] and s[0] == steps[parent][-1] + 1:
            resumed += 1
        else:
            assert s[0] == 1, "trial %d: starts at epoch %d, parent %s ended at %s" % (
                tid, s[0], parent, steps.get(parent))
            restarted += 1
    return len(steps), resumed, restarted


def best_and_test(client, study_id, data, args):
    """Prints the incumbent and its test accuracy (from its checkpoint, else retrained)."""
    study = client.get_study(study_id)
    inc = study.get("incumbent_full_budget") or study.get("incumbent")
    if not inc:
        print("no completed trial: no best config")
        return None
    ck = load_checkpoint(args.checkpoint_dir, inc["trial_id"])
    budget = int(round(inc["budget"]))
    if ck is not None:
        model, how = ck["model"], "checkpoint of trial %d (%d epochs)" % (inc["trial_id"], ck["epochs"])
    else:
        model = make_model(inc["config"], seed=inc["config_id"])
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            for _ in range(budget):
                model.partial_fit(data.X_train, data.y_train, classes=data.classes)
        how = "retrained for %d epochs" % budget
    test_acc = float(model.score(data.X_test, data.y_test))
    print("best trial %d (config %d, budget %d epochs): validation error %.4f" % (
        inc["trial_id"], inc["config_id"], budget, inc["value"]))
    print("best config: %s" % inc["config"])
    print("test accuracy %.4f on %d held-out examples (%s)" % (test_acc, len(data.y_test), how))
    return study


def create_study(client, args, data):
    sched, R, eta = args.create_study
    R, eta = int(R), int(eta)
    options = {"eta": eta}
    if sched == "random":
        options = {"max_trials": args.max_trials or 50}
    elif sched in ("bo_bos", "gp_ucb"):  # model-based: no eta; BO-BOS stops trials by its own rule
        options = {"max_trials": args.max_trials or 40}
    elif sched == "asha" and args.max_trials:
        options["max_trials"] = args.max_trials
    return client.create_study(
        "sgd-%s-%s-R%d-eta%d" % (data.name, sched, R, eta), SPACE, sched, options=options,
        objective={"metric": "val_error", "goal": "minimize"},
        resource={"name": "epochs", "min": 1, "max": R, "integer": True},
        seed=args.seed, if_exists="create")  # every run its own study, even with the same settings


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=os.environ.get("BANDITD_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--token-file", default=os.environ.get("BANDITD_TOKEN_FILE", "banditd.db.admin-token"))
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--study", type=int, help="the id of an existing study (created with SPACE)")
    g.add_argument("--create-study", nargs=3, metavar=("SCHEDULER", "R", "ETA"),
                   help="create a study: scheduler name, max epochs R, eta (e.g. hyperband 27 3, or bo_bos 50 0: "
                        "eta is ignored by bo_bos and gp_ucb)")
    ap.add_argument("--workers", type=int, default=2, help="parallel workers (default 2)")
    ap.add_argument("--processes", action="store_true", help="run workers as processes, not threads")
    ap.add_argument("--checkpoint-dir", default="checkpoints")
    ap.add_argument("--dataset", default="auto", help="fashion-mnist, digits or auto (default)")
    ap.add_argument("--train-size", type=int, default=20000,
                    help="training examples (fashion-mnist default 20000 of 50000; 0 = all)")
    ap.add_argument("--max-trials", type=int, default=0,
                    help="with --create-study random (default 50), bo_bos or gp_ucb (default 40), or asha "
                         "(default unlimited): the study's cap")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log-level", default="info")
    args = ap.parse_args()
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stdout,
                        format="%(asctime)s.%(msecs)03d %(processName)s/%(threadName)s %(message)s",
                        datefmt="%H:%M:%S")

    token = read_token(args.token_file)
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    t_load = time.monotonic()
    global DATA
    data = DATA = load_data(args.dataset, args.train_size, args.seed)
    log.info("%s (loaded in %.1f s)", data.describe(), time.monotonic() - t_load)

    client = Client(args.url, token)
    if args.create_study:
        study = create_study(client, args, data)
        log.info("created study %d (%s, options %s)", study["id"], study["scheduler"]["name"],
                 study["scheduler"]["options"])
    else:
        study = client.get_study(args.study)
    study_id = study["id"]
    sched_name = study["scheduler"]["name"]

    t0 = time.monotonic()
    if args.processes:
        pool = concurrent.futures.ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("fork"))
    else:
        pool = concurrent.futures.ThreadPoolExecutor(args.workers)
    total = Stats()
    with pool:
        futures = [pool.submit(worker_loop, i, args.url, token, study_id, args)
                   for i in range(args.workers)]
        for f in concurrent.futures.as_completed(futures):
            total.add(f.result())
    wall = time.monotonic() - t0

    checked, resumed, restarted = verify_resumption(client, study_id)
    final = client.get_study(study_id)
    print()
    print("==== study %d, scheduler %s (options %s), dataset %s ====" % (
        study_id, sched_name, final["scheduler"]["options"], data.describe()))
    print("wall time %.1f s with %d %s" % (wall, args.workers, "processes" if args.processes else "threads"))
    print("trials by state: %s" % {k: v for k, v in final["trials"].items() if v})
    print("this run: %d trials, %d completed, %d stopped, %d diverged, %d failed" % (
        total.trials, total.completed, total.stopped, total.diverged, total.failed))
    # The budgets add up to what training every trial from scratch to its
    # budget would cost; resumed checkpoints and stopped trials save the rest.
    print("epochs trained %d of %d budgeted (%.0f%% saved by resumed checkpoints and stopped trials)" % (
        total.epochs, total.budget_epochs,
        100.0 * (1 - total.epochs / total.budget_epochs) if total.budget_epochs else 0.0))
    print("promotions resumed from a checkpoint: %d (worker count %d); restarted from scratch: %d" % (
        resumed, total.resumed, restarted))
    print("checked on the daemon's records: %d trials, no epoch beyond a budget, every resume "
          "continues at its parent's last epoch + 1" % checked)
    best_and_test(client, study_id, data, args)
    client.close()
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main())
