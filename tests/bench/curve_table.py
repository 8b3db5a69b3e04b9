"""curve_table: the learning-curve tables of tests/bench/curves/ (real SGD and
MLP training, one row per config of a Sobol design, a fixed number of epochs
per table), and NAS-Bench-NLP's curves read from ../shared/data, as a replay
oracle: a proposed config is answered with the curve of the nearest row in the
unit cube of the table's hyperparameters (log-scaled unless a table says
otherwise).

Python 3 standard library only.
"""

import csv
import gzip
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CURVES = os.path.join(HERE, "curves")
NLP_FILE = os.path.join(HERE, "..", "..", "..", "shared", "data", "curves", "nasbench-nlp-wikitext2.jsonl")
# WikiText-2's vocabulary: a validation loss in nats over ln(33,278), the loss of a
# uniform guess, is 1 for that guess and below 1 for every model better than it
WIKITEXT2_LN_VOCAB = math.log(33278)


def nlp_rows(path, epochs):
    """NAS-Bench-NLP's runs as table rows: those that trained every epoch without
    diverging (341 of 345; two stopped after one epoch, two after 19 and 23),
    the validation loss over ln(vocabulary) as err_i (final values 0.44-0.71;
    a few first epochs are above 1, worse than a uniform guess), cumulative
    epoch seconds."""
    if not os.path.exists(path):
        raise SystemExit("curve_table: no %s (the NAS-Bench-NLP curves of ../shared/data)" % path)
    rows = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["diverged"] or len(r["val_loss"]) != epochs:
                continue
            row, t = {"arch": str(len(rows)), "diverged_epoch": "0"}, 0.0
            for i, (loss, sec) in enumerate(zip(r["val_loss"], r["epoch_seconds"]), 1):
                t += sec
                row["err_%d" % i], row["sec_%d" % i] = str(loss / WIKITEXT2_LN_VOCAB), str(t)
            rows.append(row)
    return rows


def is_log(param):
    """Whether a TABLES parameter is log-scaled (its optional seventh field)."""
    return len(param) < 7 or param[6]


# The hyperparameters of make_fmnist_mlp_curves.py's tables (one or two hidden layers).
FMNIST_MLP_PARAMS = [
    ("hidden", "int", 16, 256, "hidden", float),
    ("learning_rate_init", "float", 1e-4, 10 ** -0.5, "learning_rate_init", float),
    ("alpha", "float", 1e-6, 1e-1, "alpha", float),
    ("batch_size", "int", 16, 256, "batch_size", float),
    # momentum near 1 matters on a log scale of 1 - momentum
    ("one_minus_momentum", "float", 0.01, 0.5, "momentum", lambda s: 1.0 - float(s)),
]

# name -> (file, epochs, [(parameter, type, low, high, column, to_parameter[, log])]);
# a parameter is log-scaled unless its seventh field is False (as in the scripts
# that made the tables); each row has err_1 .. err_<epochs> and sec_1 ..
# sec_<epochs> (cumulative seconds).
TABLES = {
    "sgd_fashion_mnist": ("sgd_fashion_mnist.csv.gz", 50, [
        ("batch_size", "int", 16, 512, "batch_size", float),
        ("alpha", "float", 1e-6, 1e-1, "alpha", float),
        ("eta0", "float", 1e-4, 1.0, "eta0", float),
    ]),
    "mlp_digits": ("mlp_digits.csv.gz", 50, [
        ("hidden", "int", 16, 256, "hidden", float),
        ("learning_rate_init", "float", 1e-4, 10 ** -0.5, "learning_rate_init", float),
        ("alpha", "float", 1e-6, 1e-1, "alpha", float),
        ("batch_size", "int", 16, 256, "batch_size", float),
        # Adam's beta_1 near 1 matters on a log scale of 1 - beta_1
        ("one_minus_beta1", "float", 0.01, 0.5, "beta_1", lambda s: 1.0 - float(s)),
    ]),
    # SGD with Nesterov momentum on a Fashion-MNIST subset (issue 14): late bloomers
    "fmnist_mlp": ("fmnist_mlp.csv.gz", 50, FMNIST_MLP_PARAMS),
    # The same network with two hidden layers, 30 epochs, another design and data split
    # (curves/README.md): made after every default was chosen, to check them on a table
    # none of them was tuned on.
    "fmnist_mlp2": ("fmnist_mlp2.csv.gz", 30, FMNIST_MLP_PARAMS),
    # 341 recurrent language models of NAS-Bench-NLP on WikiText-2, read from
    # ../shared/data/curves (README there: source, licence): a curve set of another
    # kind (RNN cells, not training hyperparameters) that no default was chosen on.
    # Its one parameter is the run's index (linear scale: the cells have no
    # coordinates, so only samplers that need none, random proposals, mean anything).
    "nasbench_nlp": (NLP_FILE, 50, [("arch", "int", 0, 340, "arch", float, False)]),
    # issue 40: an MLP on digits by SGD under a linear warm-up and a cosine decay
    # (curves/make_warmup_curves.py): long warm-ups stand badly after one epoch and may end best
    "warmup_digits": ("warmup_digits.csv.gz", 30, [
        ("hidden", "int", 16, 128, "hidden", float),
        ("peak_lr", "float", 1e-3, 1.0, "peak_lr", float),
        ("warmup", "int", 1, 20, "warmup", float, False),
        ("one_minus_momentum", "float", 0.01, 0.5, "momentum", lambda s: 1.0 - float(s)),
    ]),
}


def spearman(xs, ys):
    """Spearman's rank correlation of two equally long sequences (ties get
    their average rank, as scipy.stats.spearmanr); nan when either is constant."""
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2.0 + 1.0
            i = j + 1
        return r
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("spearman needs two sequences of the same length >= 2")
    a, b = ranks(xs), ranks(ys)
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    sab = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    saa = sum((x - ma) ** 2 for x in a)
    sbb = sum((y - mb) ** 2 for y in b)
    return sab / math.sqrt(saa * sbb) if saa > 0 and sbb > 0 else math.nan


class CurveTable:
    def __init__(self, name):
        fname, self.epochs, self.params = TABLES[name]
        self.name = name
        if fname.endswith(".jsonl"):
            rows = nlp_rows(fname, self.epochs)
            if len(rows) != self.params[0][3] + 1:  # the index parameter must cover the rows
                raise SystemExit("curve_table: %s has %d usable runs, the table expects %d"
                                 % (fname, len(rows), self.params[0][3] + 1))
        else:
            with gzip.open(os.path.join(CURVES, fname), "rt") as f:
                rows = list(csv.DictReader(f))
        self.n = len(rows)
        self.err, self.cum, self.diverged, self.units = [], [], [], []
        for r in rows:
            e = [float(r["err_%d" % i]) for i in range(1, self.epochs + 1)]
            c = [0.0] + [float(r["sec_%d" % i]) for i in range(1, self.epochs + 1)]
            for i in range(1, len(c)):  # "no further seconds" after a divergence: keep the clock monotone
                if not c[i] >= c[i - 1]:
                    c[i] = c[i - 1]
            self.err.append(e)
            self.cum.append(c)
            self.diverged.append(int(r["diverged_epoch"]))
            self.units.append(self.unit({p[0]: p[5](r[p[4]]) for p in self.params}))
        finals = [e[-1] for e in self.err]
        self.best = min(finals)
        self.final = finals

    def space(self):
        """The study's parameters (banditd JSON)."""
        return [{"name": p[0], "type": p[1], "low": p[2], "high": p[3], "log": is_log(p)} for p in self.params]

    def unit(self, config):
        out = []
        for p in self.params:
            n, lo, hi = p[0], p[2], p[3]
            v = min(max(float(config[n]), lo), hi)
            out.append((math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo)) if is_log(p) else
                       (v - lo) / (hi - lo))
        return out

    def nearest(self, config):
        u = self.unit(config)
        best, best_d = 0, math.inf
        for i, r in enumerate(self.units):
            d = sum((a - b) ** 2 for a, b in zip(u, r))
            if d < best_d:
                best, best_d = i, d
        return best

    def rank_correlation(self, epoch=1):
        """Spearman rank correlation, over the rows, of the validation error
        after `epoch` with the final one (after self.epochs): near 1 when the
        early ranking predicts the final one, lower when there are late
        bloomers (diverged rows count with their recorded error 1.0)."""
        return spearman([e[epoch - 1] for e in self.err], self.final)

    def diverges_at(self, row, epoch):
        """True when row's training diverged at or before epoch."""
        d = self.diverged[row]
        return d > 0 and epoch >= d
