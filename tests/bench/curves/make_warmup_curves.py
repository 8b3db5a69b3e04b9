#!/usr/bin/python3
"""make_warmup_curves: learning curves whose first epochs mislead (issue 40,
item 4), measured on real training: a one-hidden-layer MLP trained by SGD
with Nesterov momentum on the digits data bundled with scikit-learn, under
the schedule most modern training uses, a linear warm-up to a peak learning
rate and a cosine decay to zero at the last epoch. A config with a long
warm-up or a small peak stands badly after one epoch and may end best; one
with a short warm-up and a large peak stands well early and may end noisy.

Model: sklearn.neural_network.MLPClassifier(hidden_layer_sizes=(<hidden>,),
activation="relu", solver="sgd", momentum=<momentum>, nesterovs_momentum=True,
learning_rate="constant", alpha=1e-4, batch_size=64, shuffle=False,
random_state=<per config>); the learning rate of epoch e (1-based) is set on
the optimizer before the epoch's partial_fit call:
  peak * e / warmup                                  for e <= warmup
  peak * (1 + cos(pi (e - warmup) / (E - warmup))) / 2 + peak / E / 10   after
(E = 30 epochs; the small floor keeps the last epoch training).

Hyperparameters (a scrambled Sobol design, scipy.stats.qmc.Sobol(d=4,
scramble=True, seed=SEED).random_base2(8), point i is config_id i):
  hidden        [16, 128]    log, integer: round(16 * 8**u0)
  peak_lr       [1e-3, 1]    log: 10**(-3 + 3*u1)
  warmup        [1, 20]      linear, integer: 1 + floor(20*u2) clipped to 20
  momentum      [0.5, 0.99]  log of 1 - momentum: 1 - 10**(-0.3 - 1.7*u3)

One epoch = one partial_fit over the training rows in a fresh seeded shuffle
(numpy RandomState((SEED * 1000 + config_id) % 2**32)). Validation error =
1 - accuracy on the held-out rows after each epoch. A model whose weights or
loss become non-finite has diverged: error 1.0 from that epoch on, no
further seconds; diverged_epoch says where (0: never). Seconds are
time.process_time() of this single-threaded process, training only
(cumulative, sec_e), the validation scoring reported once (eval_seconds).

Data: sklearn.datasets.load_digits (1797 rows, 64 pixels scaled to [0, 1]),
split by train_test_split(test_size=500, random_state=SEED, stratify=y).

Output: a gzipped CSV (default tests/bench/curves/warmup_digits.csv.gz), one
row per config: config_id, hidden, peak_lr, warmup, momentum,
diverged_epoch, err_1..err_30, sec_1..sec_30, eval_seconds.

    OMP_NUM_THREADS=1 /usr/bin/python3 tests/bench/curves/make_warmup_curves.py [--configs 256] [--out F]
"""

import argparse
import csv
import gzip
import math
import os
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20261129
EPOCHS = 30


def design(n, seed):
    from scipy.stats import qmc
    m = int(np.ceil(np.log2(max(n, 1))))
    u = qmc.Sobol(d=4, scramble=True, seed=seed).random_base2(m)[:n]
    hidden = np.clip(np.rint(16.0 * 8.0 ** u[:, 0]), 16, 128).astype(int)
    peak = 10.0 ** (-3.0 + 3.0 * u[:, 1])
    warmup = np.clip(1 + np.floor(20 * u[:, 2]), 1, 20).astype(int)
    momentum = 1.0 - 10.0 ** (-0.3 - 1.7 * u[:, 3])
    return [(i, int(hidden[i]), float(peak[i]), int(warmup[i]), float(momentum[i])) for i in range(n)]


def lr_at(epoch, peak, warmup):
    if epoch <= warmup:
        return peak * epoch / warmup
    return peak * (1 + math.cos(math.pi * (epoch - warmup) / (EPOCHS - warmup))) / 2 + peak / EPOCHS / 10


def finite(model):
    return (all(np.all(np.isfinite(w)) for w in model.coefs_) and
            all(np.all(np.isfinite(b)) for b in model.intercepts_) and bool(np.isfinite(model.loss_)))


def run_config(data, cfg):
    from sklearn.neural_network import MLPClassifier
    cid, hidden, peak, warmup, momentum = cfg
    xtr, ytr, xva, yva = data
    rs = (SEED * 1000 + cid) % 2 ** 32
    model = MLPClassifier(hidden_layer_sizes=(hidden,), solver="sgd", momentum=momentum, nesterovs_momentum=True,
                          learning_rate="constant", learning_rate_init=lr_at(1, peak, warmup), alpha=1e-4,
                          batch_size=64, shuffle=False, random_state=rs)
    rng = np.random.RandomState(rs)
    classes = np.unique(ytr)
    errs, secs = [], []
    train_s = eval_s = 0.0
    diverged = 0
    for epoch in range(1, EPOCHS + 1):
        if diverged:
            errs.append(1.0)
            secs.append(train_s)
            continue
        order = rng.permutation(len(ytr))
        t0 = time.process_time()
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if epoch > 1:
                model._optimizer.learning_rate = lr_at(epoch, peak, warmup)
            model.partial_fit(xtr[order], ytr[order], classes=classes if epoch == 1 else None)
        train_s += time.process_time() - t0
        secs.append(train_s)
        if not finite(model):
            diverged = epoch
            errs.append(1.0)
            continue
        t0 = time.process_time()
        with np.errstate(all="ignore"):
            errs.append(float(1.0 - np.mean(model.predict(xva) == yva)))
        eval_s += time.process_time() - t0
    return [cid, hidden, repr(peak), warmup, repr(momentum), diverged] + errs + secs + [eval_s]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=int, default=256)
    ap.add_argument("--out", default=os.path.join(HERE, "warmup_digits.csv.gz"))
    args = ap.parse_args()
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    xtr, xva, ytr, yva = train_test_split(x, y, test_size=500, random_state=SEED % 2 ** 32, stratify=y)
    header = (["config_id", "hidden", "peak_lr", "warmup", "momentum", "diverged_epoch"] +
              ["err_%d" % k for k in range(1, EPOCHS + 1)] + ["sec_%d" % k for k in range(1, EPOCHS + 1)] +
              ["eval_seconds"])
    rows = []
    t0 = time.time()
    for cfg in design(args.configs, SEED):
        rows.append(run_config((xtr, ytr, xva, yva), cfg))
        if len(rows) % 32 == 0:
            print("%d configs, %.0f s" % (len(rows), time.time() - t0), flush=True)
    with gzip.open(args.out, "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    first = [r[6] for r in rows]
    final = [r[6 + EPOCHS - 1] for r in rows]
    from scipy.stats import spearmanr
    print("wrote %s: %d configs; Spearman(epoch 1, final) %.3f" % (args.out, len(rows),
                                                                  spearmanr(first, final).correlation))


if __name__ == "__main__":
    main()
