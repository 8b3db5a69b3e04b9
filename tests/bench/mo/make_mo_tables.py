#!/usr/bin/python3
"""make_mo_tables: the multi-objective replay tables of tests/bench/mo/ (issue 41, item 5),
written from real training records already in the repository and in ../shared/data.
No training is run: every metric is a recorded measurement (or, for n_params, a count that
follows from the recorded architecture). README.md in this directory gives the sources,
licences and the columns; mo_bench.py says which metrics are objectives and constraints.

- sgd_fmnist_cost.csv.gz: tests/bench/curves/sgd_fashion_mnist.csv.gz (512 configs of SGD
  logistic regression on a Fashion-MNIST subset): val_error = err_50, the validation error
  after the 50th and last epoch; train_seconds = sec_50, the recorded training CPU seconds
  of the 50 epochs. No config diverged.
- mlp_digits_size.csv.gz: tests/bench/curves/mlp_digits.csv.gz (512 configs of a
  one-hidden-layer MLP by Adam on sklearn's digits): val_error = err_50, train_seconds =
  sec_50, and n_params = the MLP's weights and biases, 64 inputs x hidden + hidden +
  hidden x 10 + 10 = 75 hidden + 10 (the table's network: 64 pixels in, 10 classes out).
  No config diverged.
- nlp_wikitext2_size.csv.gz: ../shared/data/curves/nasbench-nlp-wikitext2.jsonl
  (NAS-Bench-NLP, 345 recurrent language models on WikiText-2): the 341 runs that trained
  all 50 epochs (the 4 that diverged are left out), described by the counts of each
  operation in their cell (linear, sigmoid, tanh, leaky ReLU, elementwise sum and product,
  blend): the parameters a sampler proposes. Many cells share those counts (341 runs, 148
  distinct count vectors), and a replay answers a proposal with the nearest row, so only
  the first run of each count vector in file order is kept (148 rows). val_loss = the
  validation loss after epoch 50 (nats per token), train_seconds = the sum of the 50
  recorded epoch_seconds, n_params = the run's num_params.

Rows keep their order of origin; the files are one gzip member with mtime 0, floats as
written by repr, so a rerun writes the same bytes.

    /usr/bin/python3 tests/bench/mo/make_mo_tables.py          # writes the three files here
"""

import collections
import csv
import gzip
import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CURVES = os.path.join(HERE, "..", "curves")
NLP = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "shared", "data", "curves",
                                    "nasbench-nlp-wikitext2.jsonl"))
NLP_OPS = ["linear", "activation_sigm", "activation_tanh", "activation_leaky_relu",
           "elementwise_sum", "elementwise_prod", "blend"]
NLP_COLS = ["n_linear", "n_sigm", "n_tanh", "n_leaky_relu", "n_sum", "n_prod", "n_blend"]


def read_curves(name):
    with gzip.open(os.path.join(CURVES, name), "rt") as f:
        return list(csv.DictReader(f))


def write(name, header, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    path = os.path.join(HERE, name)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        f.write(buf.getvalue().encode())
    print("%s: %d rows" % (path, len(rows)))


def sgd():
    rows = []
    for r in read_curves("sgd_fashion_mnist.csv.gz"):
        assert r["diverged_epoch"] == "0"
        rows.append([r["config_id"], r["batch_size"], r["alpha"], r["eta0"], r["err_50"], r["sec_50"]])
    write("sgd_fmnist_cost.csv.gz", ["config_id", "batch_size", "alpha", "eta0", "val_error", "train_seconds"], rows)


def digits():
    rows = []
    for r in read_curves("mlp_digits.csv.gz"):
        assert r["diverged_epoch"] == "0"
        hidden = int(r["hidden"])
        rows.append([r["config_id"], r["hidden"], r["learning_rate_init"], r["alpha"], r["batch_size"],
                     r["beta_1"], r["err_50"], r["sec_50"], 64 * hidden + hidden + hidden * 10 + 10])
    write("mlp_digits_size.csv.gz", ["config_id", "hidden", "learning_rate_init", "alpha", "batch_size", "beta_1",
                                     "val_error", "train_seconds", "n_params"], rows)


def nlp():
    if not os.path.exists(NLP):
        sys.exit("make_mo_tables: no %s" % NLP)
    seen, rows = set(), []
    with open(NLP) as f:
        for line_no, line in enumerate(f):
            r = json.loads(line)
            if r["diverged"] or len(r["val_loss"]) != 50:
                continue
            c = collections.Counter(node["op"] for node in r["recipe"].values())
            unknown = set(c) - set(NLP_OPS)
            assert not unknown, unknown
            key = tuple(c[o] for o in NLP_OPS)
            if key in seen:
                continue
            seen.add(key)
            rows.append([line_no, r["id"]] + list(key) + [repr(r["val_loss"][-1]), repr(sum(r["epoch_seconds"])),
                                                         r["num_params"]])
    write("nlp_wikitext2_size.csv.gz", ["line", "run_id"] + NLP_COLS + ["val_loss", "train_seconds", "n_params"],
          rows)


if __name__ == "__main__":
    sgd()
    digits()
    nlp()
