#!/usr/bin/python3
"""make_fmnist_mlp_curves: learning curves of an MLP (one hidden layer; two with
--layers 2, the fourth table) trained by
SGD with Nesterov momentum on a stratified subset of Fashion-MNIST, measured on
real training (issue 14, item 6: a table with late bloomers), for a seeded
scrambled Sobol design over 5 hyperparameters.

Model: sklearn.neural_network.MLPClassifier(hidden_layer_sizes=(<hidden>,),
activation="relu" (the default), solver="sgd", learning_rate="constant",
learning_rate_init=<lr>, momentum=<momentum>, nesterovs_momentum=True (the
default), alpha=<alpha>, batch_size=<batch_size>, shuffle=False,
early_stopping=False, random_state=<per config>): softmax output over the 10
classes, cross-entropy loss plus alpha/2 * ||W||^2 / n_batch (sklearn's L2
term, on the weights, not the biases).  Why SGD with momentum and not Adam (the
digits table's optimiser): plain SGD's progress per step scales with the
learning rate, so a small learning rate (down to 1e-4) starts slowly, and the
effective step lr / (1 - momentum) spans five decades; the aim is a table in
which the ranking after one epoch is a poor predictor of the final ranking.

Hyperparameters (a scrambled Sobol design, scipy.stats.qmc.Sobol(d=5,
scramble=True, seed=SEED).random_base2(m) with 2^m >= --configs; point i of
the sequence is config_id i; the first 2^k points of a Sobol sequence are
balanced, so any power-of-two prefix of the table is itself a good design),
all on log scales:
  hidden              [16, 256]      integer: round(16 * 16**u0)
  learning_rate_init  [1e-4, 0.316]  10**(-4 + 3.5*u1)
  alpha (L2)          [1e-6, 1e-1]   10**(-6 + 5*u2)
  batch_size          [16, 256]      integer: round(16 * 16**u3)
  momentum            [0.499, 0.99]  1 - 10**(-0.3 - 1.7*u4), i.e. 1 - momentum
                                     in [0.01, 0.501], log scale

One epoch = one pass over the training rows in a fresh seeded shuffle
(numpy RandomState((SEED * 1000 + config_id) % 2**32).permutation, one draw per
epoch; the model gets the same number as its random_state, so a row depends
only on SEED and its config_id, not on which configs ran before it), given to
ONE partial_fit call per epoch (classes= on the first call only).  What sklearn
1.2.1 does inside that call (sklearn/neural_network/_multilayer_perceptron.py,
_fit_stochastic, as for make_mlp_curves.py): exactly one iteration over the
rows it was given (`if incremental: break`), in consecutive mini-batches
gen_batches(n_train, batch_size) -- with shuffle=False in the order we passed,
i.e. our shuffle; the last mini-batch holds the n_train mod batch_size
leftover rows -- and one SGD step per mini-batch on the mini-batch's mean
gradient: v <- momentum * v - lr * g, then (Nesterov) the parameters move by
momentum * v - lr * g (_stochastic_optimizers.SGDOptimizer).  The optimiser,
with its velocities, is created at the first call and kept across the
partial_fit calls, so the epochs are one continuous momentum run; with
learning_rate="constant" the learning rate stays learning_rate_init
(iteration_ends changes only "invscaling", and trigger_stopping divides it
only for "adaptive"; its stop only ends the one iteration, which ends
anyway).  The weights are Glorot-uniform from random_state at the first call.
max_iter (200) is never reached, so no ConvergenceWarning.

After every epoch: the validation error (1 - accuracy) on the fixed validation
rows.  The seconds are time.process_time() of this (single-threaded) process
accumulated over the training only -- the row gather X[order], the partial_fit
call and the finiteness check of the weights -- and cumulative per epoch; the
validation scoring is excluded and reported once, as the total eval_seconds.
CPU time rather than wall time, so another job on the machine does not
inflate it.

Divergence: if sklearn raises (it raises ValueError "Solver produced
non-finite parameter weights" itself; FloatingPointError/OverflowError are
caught too), or after the epoch a weight, bias or the training loss (loss_) is
not finite, that epoch and every later one get err = 1.0 and no more training
seconds (the diverging epoch's own seconds are counted); diverged_epoch says
when (0 = never).  Floating-point warnings are silenced (np.errstate ignore).

Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist, the
official Zalando Research IDX files, MIT license, Copyright 2017 Zalando SE).
From the official 60,000-row *training* split only (the official test split
is not read), a stratified split (sklearn.model_selection.train_test_split,
stratify=label, random_state=SEED, then SEED+1 for the validation draw from
the rest) takes --train-rows training rows and --val-rows validation rows
(both multiples of 10 give equal classes), disjoint -- the load_subset of
make_sgd_curves.py, with its IDX reader (clients/examples/sklearn_worker.py).
Pixels are scaled to [0, 1] and standardized with the training rows' mean and
standard deviation (the Data class of sklearn_worker.py).  The sizes and the
epoch count were chosen by timing (--time-one) to fit the table into about
45 minutes of one core; the README gives the measurements.

Output: a gzipped CSV (default tests/bench/curves/fmnist_mlp.csv.gz), one row
per config, columns:
  config_id           index of the point in the Sobol sequence (0-based)
  hidden              units in the single hidden layer (int)
  learning_rate_init  the (constant) SGD learning rate
  alpha               L2 penalty
  batch_size          int
  momentum            Nesterov momentum
  diverged_epoch      0, or the first epoch that diverged (see above)
  err_1..err_E        validation error after epoch k, a multiple of
                      1/val_rows written with 6 significant digits
  sec_1..sec_E        cumulative process-time seconds of training after epoch
                      k (4 decimals)
  eval_seconds        process-time seconds of the E validation scorings
The run's settings (seed, rows, epochs) are not in the file (no comment
header, so any CSV reader reads it); they are in the README.  Resuming trusts
the existing rows: give a run with other --seed/--train-rows/--val-rows its
own --out (another --epochs changes the columns, so it cannot resume).

Resumable: each finished config is appended at once (as its own gzip member;
gzip readers concatenate members); on start the rows already in the file are
read (a truncated last member from a killed run is dropped and the file
rewritten) and their config_ids are skipped.  At the end of a run (complete or
stopped by --stop-after) the file is rewritten as one gzip member (mtime 0)
sorted by config_id; --compact does only that.  The reader/writer is
curve_file.py, shared with the other two table scripts.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        nice -n 19 /usr/bin/python3 tests/bench/curves/make_fmnist_mlp_curves.py

Options: --configs 256 --epochs 50 --layers 1 (hidden layers of <hidden> units each;
the fourth table, fmnist_mlp2, has 2) --seed 20261123 --train-rows 2000
--val-rows 2000 --out PATH --stop-after SECONDS (finish the running config and
stop, for a deadline) --compact --time-one (train the first --configs configs,
print their seconds, write nothing; e.g. --time-one --configs 8) --summary
(read --out and print the rank correlations of the early errors with the
final error: Spearman of err_k with err_E for k = 1, 3, 10 over all rows, and
how many of the 10 best final configs were in the best third at epoch 1).
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
DEFAULT_OUT = os.path.join(HERE, "fmnist_mlp.csv.gz")
NLEAD = 7  # config_id .. diverged_epoch


def load_subset(train_rows, val_rows, seed):
    """Stratified train/validation rows from the official training split, standardized."""
    from sklearn.model_selection import train_test_split
    if not os.path.isdir(FASHION_DIR):
        raise SystemExit("%s not found: install the Debian package dataset-fashion-mnist "
                         "(docker/install-deps.sh --bench)" % FASHION_DIR)
    X = _read_idx(os.path.join(FASHION_DIR, "train-images-idx3-ubyte.gz")).reshape(60000, -1) / 255.0
    y = _read_idx(os.path.join(FASHION_DIR, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    idx_train, rest = train_test_split(np.arange(len(y)), train_size=train_rows, stratify=y,
                                       random_state=seed)
    idx_val, _ = train_test_split(rest, train_size=val_rows, stratify=y[rest], random_state=seed + 1)
    # Data wants a test split too; it gets the validation rows again, unused here (the official
    # test split is not read at all).
    return Data("fashion-mnist", X[idx_train], y[idx_train], X[idx_val], y[idx_val], X[idx_val], y[idx_val])


def design(n, seed):
    """The first n points of a seeded scrambled Sobol sequence, mapped to the 5 hyperparameters."""
    from scipy.stats import qmc
    m = int(np.ceil(np.log2(max(n, 1))))
    u = qmc.Sobol(d=5, scramble=True, seed=seed).random_base2(m)[:n]
    hidden = np.clip(np.rint(16.0 * 16.0 ** u[:, 0]), 16, 256).astype(int)
    lr = 10.0 ** (-4.0 + 3.5 * u[:, 1])
    alpha = 10.0 ** (-6.0 + 5.0 * u[:, 2])
    batch = np.clip(np.rint(16.0 * 16.0 ** u[:, 3]), 16, 256).astype(int)
    momentum = 1.0 - 10.0 ** (-0.3 - 1.7 * u[:, 4])
    return [(i, int(hidden[i]), float(lr[i]), float(alpha[i]), int(batch[i]), float(momentum[i]))
            for i in range(n)]


def columns(epochs):
    return (["config_id", "hidden", "learning_rate_init", "alpha", "batch_size", "momentum",
             "diverged_epoch"] +
            ["err_%d" % k for k in range(1, epochs + 1)] +
            ["sec_%d" % k for k in range(1, epochs + 1)] + ["eval_seconds"])


def config_seed(seed, cid):
    return (seed * 1000 + cid) % 2 ** 32


def finite(model):
    return (all(np.all(np.isfinite(w)) for w in model.coefs_) and
            all(np.all(np.isfinite(b)) for b in model.intercepts_) and
            bool(np.isfinite(model.loss_)))


def run_config(data, cfg, epochs, seed, layers=1):
    from sklearn.neural_network import MLPClassifier
    cid, hidden, lr, alpha, batch, momentum = cfg
    model = MLPClassifier(hidden_layer_sizes=(hidden,) * layers, solver="sgd", learning_rate="constant",
                          learning_rate_init=lr, momentum=momentum, nesterovs_momentum=True,
                          alpha=alpha, batch_size=batch, shuffle=False, early_stopping=False,
                          random_state=config_seed(seed, cid))
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
                Xe, ye = data.X_train[order], data.y_train[order]
                if epoch == 1:
                    model.partial_fit(Xe, ye, classes=data.classes)
                else:
                    model.partial_fit(Xe, ye)
                ok = finite(model)
        except (ValueError, FloatingPointError, OverflowError):
            ok = False
        train_s += time.process_time() - t0
        secs.append(train_s)
        if not ok:
            diverged = epoch
            errs.append(1.0)
            continue
        t0 = time.process_time()
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            errs.append(float(1.0 - model.score(data.X_val, data.y_val)))
        eval_s += time.process_time() - t0
    return [cid, hidden, repr(lr), repr(alpha), batch, repr(momentum), diverged] + \
        ["%.6g" % e for e in errs] + ["%.4f" % s for s in secs] + ["%.4f" % eval_s]


def summary(rows, epochs):
    """Rank correlations of the early errors with the final one, over the rows."""
    from scipy.stats import spearmanr
    err = np.array([[float(x) for x in r[NLEAD:NLEAD + epochs]] for r in rows])
    final = err[:, -1]
    out = ["%d rows x %d epochs; diverged %d; final error best %.4f median %.4f worst %.4f" % (
        len(rows), epochs, sum(1 for r in rows if int(r[6])), final.min(), np.median(final), final.max())]
    for k in (1, 3, 10):
        if k < epochs:
            out.append("Spearman(err_%d, err_%d) = %.3f" % (k, epochs, spearmanr(err[:, k - 1], final).correlation))
    # ranks with ties broken by config order; "best third" = rank < n/3 at epoch 1
    n = len(rows)
    top10 = np.argsort(final, kind="stable")[:10]
    r1 = np.argsort(np.argsort(err[:, 0], kind="stable"), kind="stable")
    out.append("top-10 final configs in the best third at epoch 1: %d (their epoch-1 ranks: %s of %d)" % (
        sum(1 for i in top10 if r1[i] < n / 3.0), ", ".join(str(int(r1[i]) + 1) for i in top10), n))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--layers", type=int, default=1, help="hidden layers, each of <hidden> units")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--train-rows", type=int, default=2000)
    ap.add_argument("--val-rows", type=int, default=2000)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--stop-after", type=float, default=0, help="seconds; 0 = no limit")
    ap.add_argument("--time-one", action="store_true")
    ap.add_argument("--compact", action="store_true", help="rewrite --out sorted as one gzip member; run nothing")
    ap.add_argument("--summary", action="store_true", help="print the rank correlations of --out; run nothing")
    args = ap.parse_args()

    wall0 = time.monotonic()
    E = args.epochs
    cols = columns(E)
    if args.compact:
        rows = sorted(read_rows(args.out, cols), key=lambda r: int(r[0]))
        write_all(args.out, rows, cols)
        print("%s: %d rows, rewritten as one gzip member sorted by config_id" % (args.out, len(rows)))
        return 0
    if args.summary:
        print(summary(sorted(read_rows(args.out, cols), key=lambda r: int(r[0])), E))
        return 0
    data = load_subset(args.train_rows, args.val_rows, args.seed)
    print("%s; loaded in %.1f s" % (data.describe(), time.monotonic() - wall0), flush=True)
    cfgs = design(args.configs, args.seed)

    def describe(cfg):
        return "config %d hidden %d lr %.2e alpha %.2e batch %d momentum %.3f" % cfg

    if args.time_one:
        for cfg in cfgs[:args.configs]:
            t = time.monotonic()
            row = run_config(data, cfg, E, args.seed, args.layers)
            print("%s: err@1 %s final err %s%s, train %s s, eval %s s, wall %.1f s"
                  % (describe(cfg), row[NLEAD], row[NLEAD + E - 1], " DIVERGED@%d" % row[6] if row[6] else "",
                     row[NLEAD + 2 * E - 1], row[-1], time.monotonic() - t), flush=True)
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
        row = run_config(data, cfg, E, args.seed, args.layers)
        with gzip.open(args.out, "at", newline="") as f:
            csv.writer(f, lineterminator="\n").writerow(row)
        done.add(cfg[0])
        el = time.monotonic() - t_start
        errs = [float(x) for x in row[NLEAD:NLEAD + E]]
        print("[%d/%d] %s: err@1 %.4f best %.4f final %.4f%s, train %s s cpu, %.1f s wall; ETA %.0f s" % (
            len(done), len(cfgs), describe(cfg), errs[0], min(errs), errs[-1],
            " DIVERGED@%d" % row[6] if row[6] else "", row[NLEAD + 2 * E - 1],
            time.monotonic() - t, el / k * (len(todo) - k)), flush=True)

    rows = sorted(read_rows(args.out, cols), key=lambda r: int(r[0]))
    write_all(args.out, rows, cols)
    print("%s: %d of %d configs, rewritten as one gzip member sorted by config_id" % (
        "complete" if len(done) == len(cfgs) else "INCOMPLETE", len(rows), len(cfgs)))
    if rows:
        print(summary(rows, E))
    print("wall time this run %.1f s" % (time.monotonic() - wall0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
