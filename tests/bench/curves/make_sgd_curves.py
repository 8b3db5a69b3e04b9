#!/usr/bin/python3
"""make_sgd_curves: learning curves of logistic regression trained by SGD on
Fashion-MNIST, measured on real training (issue 7), for a seeded scrambled
Sobol design over 3 hyperparameters (the paper's LR/MNIST setting).

Model: sklearn.linear_model.SGDClassifier(loss="log_loss", penalty="l2",
learning_rate="constant", eta0=<eta0>, alpha=<alpha>, random_state=<per config>),
i.e. one-vs-rest L2-regularised logistic regression.

Hyperparameters (a scrambled Sobol design, scipy.stats.qmc.Sobol(d=3,
scramble=True, seed=SEED); point i of the sequence is config_id i; the first
2^m points of a Sobol sequence are balanced, so any power-of-two prefix of the
table is itself a good design):
  batch_size  [16, 512]    log scale, integer: round(16 * 32**u0)
  alpha (L2)  [1e-6, 1e-1] log scale: 10**(-6 + 5*u1)
  eta0        [1e-4, 1]    log scale: 10**(-4 + 4*u2)
learning_rate="constant": the learning rate IS eta0 for the whole run, so eta0
keeps the meaning of the paper's "learning rate" hyperparameter.  (With
"invscaling" sklearn divides eta0 by t**0.5 with t counted in *samples*, so
over 50 epochs of 500 rows every eta0 shrinks 22x to 158x and the low end of
the range learns nothing: eta0 and the schedule would be confounded.)

One epoch = one pass over the training rows in a fresh seeded shuffle
(numpy RandomState((SEED * 1000 + config_id) % 2**32); the model gets
the same number as its random_state, independent of the order in
which configs run), cut into consecutive mini-batches of batch_size rows, one
partial_fit call per mini-batch.  Caveat, stated plainly: sklearn's SGD updates
the weights once per *sample* inside partial_fit (it has no gradient averaging
over a mini-batch), so batch_size does not change the optimisation the way a
mini-batch in a neural-net framework does; it changes the order of the
updates (partial_fit shuffles inside each call) and, strongly, the measured
seconds (per-call overhead: 625 calls per epoch at 16 vs 20 at 512).

After every epoch: the validation error (1 - accuracy) on a fixed held-out
split.  The seconds are time.process_time() of this (single-threaded) process
accumulated over the partial_fit calls only (the validation scoring is
excluded and reported as one total, eval_seconds): CPU time rather than wall
time, so another job on the machine does not inflate it.

Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist, the
official Zalando IDX files, MIT license).  From the official 60,000-row
*training* split only (the official test split is not read), a stratified split
(sklearn.model_selection.train_test_split, stratify=label, random_state=SEED,
then SEED+1 for the validation draw from the rest) takes --train-rows (500: 50
of each class) training rows and --val-rows (1,000: 100 of each class)
validation rows, disjoint.  Pixels are scaled to [0, 1] and standardized with
the training rows' mean and standard deviation (the Data class of
clients/examples/sklearn_worker.py, whose IDX reader is reused too).

Why so small (measured on the 2-core reference machine, Debian 12, sklearn
1.2.1, reference BLAS, single thread, nice 19 beside a test suite): one
SGDClassifier.partial_fit call costs about 4.4 ms of CPU whatever its size (10
one-vs-rest binary fits, each with its own argument checks and dataset set-up)
plus about 27 us per row; scoring costs about 9 us per validation row.  A log-
uniform batch size in [16, 512] averages 0.0175 calls per training row, so an
epoch costs about 104 us per training row.  With 10,000 training and 5,000
validation rows the first four configs took 23, 80, 44 and 17 s of CPU for 50
epochs (about 50 s on average: 512 configs would need about 7 hours).  To fit
512 configs x 50 epochs into about 35 minutes of one core (about 4 s per
config) the training set has to be about 500 rows; 1,000 validation rows keep
the error resolution at 0.001.  Pass --train-rows/--val-rows to make a larger
table when more time is available.

Output: a gzipped CSV (default tests/bench/curves/sgd_fashion_mnist.csv.gz),
one row per config, columns:
  config_id        index of the point in the Sobol sequence (0-based)
  batch_size       int
  alpha            L2 penalty
  eta0             the (constant) learning rate
  diverged_epoch   0, or the first epoch after which the weights were not finite
                   (or sklearn raised a floating-point error); that epoch and
                   every later one get err = 1.0 and no more training time
  err_1..err_50    validation error after epoch k (multiples of 1/val_rows)
  sec_1..sec_50    cumulative process-time seconds of training after epoch k
  eval_seconds     process-time seconds spent on the 50 validation scorings
The run's settings (seed, rows) are not in the file (no comment header, so any
CSV reader reads it); they are in the README.  Resuming trusts the existing
rows: give a run with other --seed/--train-rows/--val-rows its own --out.

Resumable: each finished config is appended at once (as its own gzip member;
gzip readers concatenate members); on start the rows already in the file are
read (a truncated last member from a killed run is dropped and the file
rewritten) and their config_ids are skipped.  At the end of a run (complete or
stopped by --stop-after) the file is rewritten as one gzip member sorted by
config_id; --compact does only that.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        nice -n 19 /usr/bin/python3 tests/bench/curves/make_sgd_curves.py

Options: --configs 512 --epochs 50 --seed 20261123 --train-rows 500
--val-rows 1000 --out PATH --stop-after SECONDS (finish the running config and
stop, for a deadline) --compact --time-one (train the first --configs configs, print their
seconds, write nothing; e.g. --time-one --configs 4).
"""

import argparse
import csv
import gzip
import os
import sys
import time
import warnings

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "clients", "examples"))
from sklearn_worker import FASHION_DIR, Data, _read_idx  # noqa: E402

sys.path.insert(0, HERE)
from curve_file import read_rows, write_all  # noqa: E402

SEED = 20261123
DEFAULT_OUT = os.path.join(HERE, "sgd_fashion_mnist.csv.gz")


def load_subset(train_rows, val_rows, seed):
    """Stratified train/validation rows from the official training split, standardized."""
    from sklearn.model_selection import train_test_split
    X = _read_idx(os.path.join(FASHION_DIR, "train-images-idx3-ubyte.gz")).reshape(60000, -1) / 255.0
    y = _read_idx(os.path.join(FASHION_DIR, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    idx_train, rest = train_test_split(np.arange(len(y)), train_size=train_rows, stratify=y,
                                       random_state=seed)
    idx_val, _ = train_test_split(rest, train_size=val_rows, stratify=y[rest], random_state=seed + 1)
    # Data wants a test split too; it gets the validation rows again, unused here (the official
    # test split is not read at all).
    return Data("fashion-mnist", X[idx_train], y[idx_train], X[idx_val], y[idx_val], X[idx_val], y[idx_val])


def design(n, seed):
    """The first n points of a seeded scrambled Sobol sequence, mapped to (batch, alpha, eta0)."""
    from scipy.stats import qmc
    m = int(np.ceil(np.log2(max(n, 1))))
    u = qmc.Sobol(d=3, scramble=True, seed=seed).random_base2(m)[:n]
    batch = np.clip(np.rint(16.0 * 32.0 ** u[:, 0]), 16, 512).astype(int)
    alpha = 10.0 ** (-6.0 + 5.0 * u[:, 1])
    eta0 = 10.0 ** (-4.0 + 4.0 * u[:, 2])
    return [(i, int(batch[i]), float(alpha[i]), float(eta0[i])) for i in range(n)]


def columns(epochs):
    return (["config_id", "batch_size", "alpha", "eta0", "diverged_epoch"] +
            ["err_%d" % k for k in range(1, epochs + 1)] +
            ["sec_%d" % k for k in range(1, epochs + 1)] + ["eval_seconds"])


def config_seed(seed, cid):
    return (seed * 1000 + cid) % 2 ** 32


def run_config(data, cfg, epochs, seed):
    from sklearn.linear_model import SGDClassifier
    cid, batch, alpha, eta0 = cfg
    model = SGDClassifier(loss="log_loss", penalty="l2", alpha=alpha, learning_rate="constant",
                          eta0=eta0, random_state=config_seed(seed, cid))
    rng = np.random.RandomState(config_seed(seed, cid))
    n = len(data.y_train)
    errs, secs = [], []
    train_s = eval_s = 0.0
    diverged = 0
    for epoch in range(1, epochs + 1):
        if diverged:
            errs.append(1.0)
            secs.append(train_s)
            continue
        order = rng.permutation(n)
        t0 = time.process_time()
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                for s in range(0, n, batch):
                    b = order[s:s + batch]
                    model.partial_fit(data.X_train[b], data.y_train[b], classes=data.classes)
            ok = np.all(np.isfinite(model.coef_)) and np.all(np.isfinite(model.intercept_))
        except (ValueError, FloatingPointError, OverflowError):
            ok = False
        train_s += time.process_time() - t0
        secs.append(train_s)
        if not ok:
            diverged = epoch
            errs.append(1.0)
            continue
        t0 = time.process_time()
        errs.append(float(1.0 - model.score(data.X_val, data.y_val)))
        eval_s += time.process_time() - t0
    return [cid, batch, repr(alpha), repr(eta0), diverged] + \
        ["%.6g" % e for e in errs] + ["%.4f" % s for s in secs] + ["%.4f" % eval_s]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=512)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--train-rows", type=int, default=500)
    ap.add_argument("--val-rows", type=int, default=1000)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--stop-after", type=float, default=0, help="seconds; 0 = no limit")
    ap.add_argument("--time-one", action="store_true")
    ap.add_argument("--compact", action="store_true", help="rewrite --out sorted as one gzip member; run nothing")
    args = ap.parse_args()

    wall0 = time.monotonic()
    cols = columns(args.epochs)
    if args.compact:
        rows = sorted(read_rows(args.out, cols), key=lambda r: int(r[0]))
        write_all(args.out, rows, cols)
        print("%s: %d rows, rewritten as one gzip member sorted by config_id" % (args.out, len(rows)))
        return 0
    data = load_subset(args.train_rows, args.val_rows, args.seed)
    print("%s; loaded in %.1f s" % (data.describe(), time.monotonic() - wall0), flush=True)
    cfgs = design(args.configs, args.seed)

    if args.time_one:
        for cfg in cfgs[:args.configs]:
            t = time.monotonic()
            row = run_config(data, cfg, args.epochs, args.seed)
            print("config %d batch %d alpha %.3g eta0 %.3g: final err %s, train %s s, eval %s s, wall %.1f s"
                  % (cfg[0], cfg[1], cfg[2], cfg[3], row[4 + args.epochs], row[4 + 2 * args.epochs],
                     row[-1], time.monotonic() - t), flush=True)
        return 0

    have = read_rows(args.out, cols)
    done = {int(r[0]) for r in have}
    todo = [c for c in cfgs if c[0] not in done]
    print("%d configs in the design, %d already in %s, %d to run" % (
        len(cfgs), len(done), args.out, len(todo)), flush=True)
    if not os.path.exists(args.out):
        write_all(args.out, [], cols)
    t_start = time.monotonic()
    for k, cfg in enumerate(todo, 1):
        if args.stop_after and time.monotonic() - wall0 > args.stop_after:
            print("--stop-after %.0f s reached; stopping with %d configs left" % (
                args.stop_after, len(todo) - k + 1), flush=True)
            break
        t = time.monotonic()
        row = run_config(data, cfg, args.epochs, args.seed)
        with gzip.open(args.out, "at", newline="") as f:
            csv.writer(f, lineterminator="\n").writerow(row)
        done.add(cfg[0])
        el = time.monotonic() - t_start
        errs = [float(x) for x in row[5:5 + args.epochs]]
        print("[%d/%d] config %d batch %d alpha %.2e eta0 %.2e: err@1 %.4f best %.4f final %.4f%s, "
              "train %s s cpu, %.1f s wall; ETA %.0f s" % (
                  len(done), len(cfgs), cfg[0], cfg[1], cfg[2], cfg[3], errs[0], min(errs), errs[-1],
                  " DIVERGED@%d" % row[4] if row[4] else "", row[4 + 2 * args.epochs],
                  time.monotonic() - t, el / k * (len(todo) - k)), flush=True)

    rows = sorted(read_rows(args.out, cols), key=lambda r: int(r[0]))
    write_all(args.out, rows, cols)
    print("%s: %d of %d configs, rewritten as one gzip member sorted by config_id" % (
        "complete" if len(done) == len(cfgs) else "INCOMPLETE", len(rows), len(cfgs)))
    print("wall time this run %.1f s" % (time.monotonic() - wall0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
