#!/usr/bin/python3
"""cash_replay: Rising Bandits on real CASH histories (issue 8, item 1).
banditd's rising_bandits (inner GP-UCB, and inner random), uniform allocation
(rising_bandits with a window no arm can fill), joint GP-UCB over the whole
conditional space, random search and Optuna 3.1 TPE, replayed on the
MindWare balanced-accuracy histories (41 datasets x 9 classifiers, up to 100
SMAC-proposed (config, balanced accuracy) records per classifier). See
tests/bench/README-cash.md for the setting and the results.

The space of a dataset is derived from its records: a top-level categorical
`algorithm` (the 9 classifiers); each classifier's hyperparameters are its
children, named `<arm>.<hyperparameter>`, with `when: {"algorithm": [arm]}`.
Numeric ones span the recorded [min, max] (log when max/min > 100 and
min > 0), strings are categoricals of the recorded values, hyperparameters
with a single recorded value are left out (constants). A hyperparameter that
is absent from some records of its arm (libsvm_svc's degree and coef0) gets
a nested condition on the arm's categorical whose values separate the
records that have it from those that do not (kernel: poly; poly, sigmoid),
so every method proposes exactly the hyperparameters the records have.

Oracle, per run (fresh for each method, dataset, seed):
- "nearest": a pull of arm k with config x is answered by the unused record
  of arm k nearest to x in the arm's unit cube (squared Euclidean; numeric
  coordinates scaled to [0, 1], log where log; a categorical mismatch, or a
  hyperparameter active in one of the two only, counts 1); ties go to the
  lower stored index. Each record is used once per run.
- "shuffle": the proposal is ignored; a pull of arm k takes the next record
  of a seeded shuffle of arm k's records (the same order for every method of
  a dataset and seed).
In both, a pull of an arm whose records are all used is answered with the
score of one of its records drawn at random (seeded) and counted as a
repeat. A repeat never raises a best score; it only feeds the optimizer.

Output: JSON lines, one per run: the best balanced accuracy, its improvement
points [pull, value], the arm of every pull (arm_seq, one digit per pull:
the index in the sorted arm names) and pulls per arm, repeats, and for
rising_bandits the scheduler's final per-arm state. Loops: budget, then
seed, then dataset, oracle and method, so a run cut short holds whole seeds.
--methods lists the methods of the nearest form, --shuffle-methods those of
the shuffle form (there the inner optimizer cannot matter, so
rising_bandits and uniform run with inner random: rb_random and
uniform_random make the same pulls as rb_gp and uniform).

    /usr/bin/python3 tests/bench/cash_replay.py --banditd build/banditd \\
        --datasets abalone,diabetes --seeds 0-1 --trials 200 --out runs.jsonl
"""

import argparse
import glob
import json
import math
import os
import random
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bobos_replay import Daemon, parse_range  # noqa: E402
from replay_common import Client  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data", "cash", "mindware-bal-acc"))
ARM_PARAM = "algorithm"

# method -> (scheduler, options); "T" in an option is replaced by the budget.
BANDITD_METHODS = {
    # Every rising_bandits method names its inner optimizer and allocation, so that it means the same
    # whatever a new study's defaults are (since 2026-11-27: inner tpe, allocation thompson, tail bound).
    "rb_gp": ("rising_bandits", {"inner": "gp_ucb", "allocation": "rounds"}),  # the defaults of 2026-11-25
    "rb_random": ("rising_bandits", {"inner": "random", "allocation": "rounds"}),
    "rb_gp_ei": ("rising_bandits", {"inner": "gp_ucb", "allocation": "ei"}),
    "rb_random_ei": ("rising_bandits", {"allocation": "ei", "inner": "random"}),
    # issue 15, 2026-11-27: the arms' own TPE (Optuna 3.1's defaults on the arm's sub-space), Thompson allocation
    "rb_tpe": ("rising_bandits", {"inner": "tpe", "allocation": "rounds"}),
    "rb_tpe_ts": ("rising_bandits", {"inner": "tpe", "allocation": "thompson", "draw_horizon": "left"}),
    "rb_gp_ts": ("rising_bandits", {"inner": "gp_ucb", "allocation": "thompson", "draw_horizon": "left"}),
    "rb_random_ts": ("rising_bandits", {"inner": "random", "allocation": "thompson", "draw_horizon": "left"}),
    # the Thompson draws' horizon divided by the surviving arms (= {}, the new defaults since 2026-11-27)
    "rb_tpe_share": ("rising_bandits", {"inner": "tpe", "allocation": "thompson", "draw_horizon": "share"}),
    "rb_random_share": ("rising_bandits", {"inner": "random", "allocation": "thompson", "draw_horizon": "share"}),
    # the paper-exact rule (the defaults before 2026-11-25): Inequality 9 alone, a failed pull not retried
    "rb_gp_paper": ("rising_bandits", {"inner": "gp_ucb", "allocation": "rounds", "upper_bound": "paper",
                                       "max_retries": 0}),
    "rb_random_paper": ("rising_bandits", {"inner": "random", "allocation": "rounds", "upper_bound": "paper",
                                           "max_retries": 0}),
    # no arm ever fills the window: round robin
    "uniform": ("rising_bandits", {"inner": "gp_ucb", "allocation": "rounds", "window": "T"}),
    "uniform_random": ("rising_bandits", {"inner": "random", "allocation": "rounds", "window": "T"}),
    "uniform_tpe": ("rising_bandits", {"inner": "tpe", "allocation": "rounds", "window": "T"}),
    # UCB spelled out: new gp_ucb studies get log EI (since 2026-11-27), the committed runs had UCB
    "gp_ucb": ("gp_ucb", {"acquisition": "ucb"}),            # over the JOINT_KEEP sub-space, see below
    "gp_logei": ("gp_ucb", {"acquisition": "logei"}),        # the same with log EI, new studies' default
    "random": ("random", {}),
    "oracle_arm": ("gp_ucb", {"acquisition": "ucb"}),        # the best arm alone, see run_oracle_arm
}
OPTUNA_METHODS = ("tpe",)
# Joint gp_ucb searches the whole conditional space (50 parameters with the
# algorithm choice): banditd's acquisition takes up to 100 coordinates
# (server/model/acq.h: Sobol for the first 40, Latin hypercube columns past
# them). Until 2026-11-24 it took 40, and joint gp_ucb ran without 10
# solver settings (the tolerances, shrinking, dual, solver, max_iter and the
# forests' min_samples_split); JOINT_DROP is kept to rerun that form.
JOINT_DROP = ()
JOINT_DROP_40 = ("liblinear_svc.tol", "libsvm_svc.tol", "logistic_regression.tol", "libsvm_svc.shrinking",
                 "liblinear_svc.dual", "logistic_regression.solver", "logistic_regression.max_iter",
                 "extra_trees.min_samples_split", "gradient_boosting.min_samples_split",
                 "random_forest.min_samples_split")
JOINT_MAX = 100
RISING = ("rb_gp", "rb_random", "rb_gp_ei", "rb_random_ei", "rb_gp_paper", "rb_random_paper", "uniform", "uniform_random",
          "rb_tpe", "rb_tpe_ts", "rb_gp_ts", "rb_random_ts", "uniform_tpe", "rb_tpe_share", "rb_random_share")


class Param:
    """One hyperparameter of one arm."""

    def __init__(self, arm, key, values):
        self.arm, self.key, self.name = arm, key, "%s.%s" % (arm, key)
        self.cond = None  # (key of the arm's categorical, [values]) or None
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            self.kind = "int" if all(isinstance(v, int) for v in values) else "float"
            self.lo, self.hi = min(values), max(values)
            self.log = self.lo > 0 and self.hi / self.lo > 100
        else:
            self.kind = "cat"
            self.choices = sorted(set(str(v) for v in values))
        self.constant = (self.kind == "cat" and len(self.choices) == 1) or (self.kind != "cat" and self.lo == self.hi)

    def to_json(self):
        when = {ARM_PARAM: [self.arm]}
        if self.cond:
            when["%s.%s" % (self.arm, self.cond[0])] = self.cond[1]
        if self.kind == "cat":
            return {"name": self.name, "type": "categorical", "choices": self.choices, "when": when}
        return {"name": self.name, "type": self.kind, "low": self.lo, "high": self.hi, "log": self.log,
                "when": when}

    def unit(self, v):
        """Coordinate in [0, 1] of a numeric value (clamped)."""
        v = min(max(float(v), self.lo), self.hi)
        if self.log:
            return (math.log(v) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        return (v - self.lo) / (self.hi - self.lo)


class Dataset:
    """One dataset's records and the space derived from them."""

    def __init__(self, name):
        path = os.path.join(DATA, name + ".json")
        if not os.path.isfile(path):
            raise SystemExit("cash_replay: no dataset %r: %s does not exist" % (name, path))
        with open(path) as f:
            d = json.load(f)
        self.name = name
        self.arms = sorted(d["arms"])
        self.records = {a: d["arms"][a] for a in self.arms}
        self.params = {}  # arm -> [Param], parents before children
        for a in self.arms:
            recs = self.records[a]
            keys = []
            for r in recs:
                for k in r["config"]:
                    if k not in keys and k != "estimator":
                        keys.append(k)
            ps = [Param(a, k, [r["config"][k] for r in recs if k in r["config"]]) for k in keys]
            ps = [p for p in ps if not p.constant]
            by_key = {p.key: p for p in ps}
            for p in ps:
                have = [p.key in r["config"] for r in recs]
                if all(have):
                    continue
                p.cond = self._condition(a, p, have, by_key)
            ps.sort(key=lambda p: p.cond is not None)  # a parent is declared before its children
            self.params[a] = ps
        # unit coordinates of the records: per arm, per record, per param (None: inactive)
        self.units = {a: [self.encode(a, r["config"], prefix="") for r in self.records[a]] for a in self.arms}
        self.arm_best = {a: max(r["score"] for r in self.records[a]) for a in self.arms}
        self.best = max(self.arm_best.values())
        self.best_arms = [a for a in self.arms if self.arm_best[a] == self.best]

    def _condition(self, arm, p, have, by_key):
        """The arm's always-present categorical whose values split the records with p from those without."""
        recs = self.records[arm]
        for q in by_key.values():
            if q.kind != "cat" or q is p or not all(q.key in r["config"] for r in recs):
                continue
            on = set(str(r["config"][q.key]) for r, h in zip(recs, have) if h)
            off = set(str(r["config"][q.key]) for r, h in zip(recs, have) if not h)
            if not on & off:
                return (q.key, sorted(on))
        raise SystemExit("%s: %s is absent from some records of %s and no categorical of the arm explains it"
                         % (self.name, p.key, arm))

    def space(self, drop=()):
        out = [{"name": ARM_PARAM, "type": "categorical", "choices": self.arms}]
        for a in self.arms:
            out.extend(p.to_json() for p in self.params[a] if p.name not in drop)
        return out

    def joint_space(self):
        """The space joint gp_ucb runs over (see JOINT_DROP)."""
        out = self.space(JOINT_DROP)
        if len(out) > JOINT_MAX:
            raise SystemExit("%s: the joint space still has %d parameters" % (self.name, len(out)))
        return out

    def encode(self, arm, config, prefix=None):
        """Per param of the arm: a float in [0, 1] (numeric), the string (categorical) or None (absent)."""
        if prefix is None:
            prefix = arm + "."
        out = []
        for p in self.params[arm]:
            v = config.get(prefix + p.key)
            if v is None:
                out.append(None)
            elif p.kind == "cat":
                out.append(str(v))
            else:
                out.append(p.unit(v))
        return out


def distance(u, r):
    d = 0.0
    for a, b in zip(u, r):
        if a is None and b is None:
            continue
        if a is None or b is None:
            d += 1.0
        elif isinstance(a, str):
            d += 0.0 if a == b else 1.0
        else:
            d += (a - b) ** 2
    return d


class Oracle:
    """Answers pulls from the records: nearest unused record, or the next of a seeded shuffle."""

    def __init__(self, data, mode, seed):
        self.data, self.mode = data, mode
        self.used = {a: [False] * len(data.records[a]) for a in data.arms}
        self.used_list = {a: [] for a in data.arms}
        self.order = {}
        for a in data.arms:
            idx = list(range(len(data.records[a])))
            random.Random("shuffle:%s:%d:%s" % (data.name, seed, a)).shuffle(idx)
            self.order[a] = idx
        self.rng = random.Random("repeat:%s:%d" % (data.name, seed))
        self.repeats = 0
        self.repeats_by_arm = {}

    def pull(self, arm, config):
        """Score of a pull of arm with config (full banditd-style keys); config may be None in shuffle mode."""
        recs = self.data.records[arm]
        if len(self.used_list[arm]) == len(recs):
            self.repeats += 1
            self.repeats_by_arm[arm] = self.repeats_by_arm.get(arm, 0) + 1
            return recs[self.rng.choice(self.used_list[arm])]["score"]
        if self.mode == "shuffle":
            i = self.order[arm][len(self.used_list[arm])]
        else:
            u = self.data.encode(arm, config)
            i, best_d = -1, math.inf
            for j, r in enumerate(self.data.units[arm]):
                if self.used[arm][j]:
                    continue
                d = distance(u, r)
                if d < best_d:
                    i, best_d = j, d
        self.used[arm][i] = True
        self.used_list[arm].append(i)
        return recs[i]["score"]


class Run:
    """What one run records."""

    def __init__(self):
        self.best = -math.inf
        self.points = []  # [pull (1-based), best] at each improvement
        self.arms = []    # the arm of each pull

    def add(self, arm, score):
        self.arms.append(arm)
        if score > self.best:
            self.best = score
            self.points.append([len(self.arms), score])


def study_body(data, name, scheduler, options, seed, trials, params=None):
    return {
        "name": name,
        "parameters": params if params is not None else data.space(),
        "objective": {"metric": "balanced_accuracy", "goal": "maximize", "bounds": [0, 1]},
        "limits": {"trials": trials},
        "scheduler": {"name": scheduler, "options": options},
        "seed": seed,
        "lease_seconds": 86400,
    }


def run_banditd(client, data, oracle, method, seed, trials):
    scheduler, options = BANDITD_METHODS[method]
    options = {k: (trials if v == "T" else v) for k, v in options.items()}
    name = "cash-%s-%s-%s-%d-%d-%d" % (data.name, oracle.mode, method, seed, trials, int(time.time() * 1e6))
    params = data.joint_space() if method in ("gp_ucb", "gp_logei") else None
    sid = client.call("POST", "/v1/studies", study_body(data, name, scheduler, options, seed, trials, params))["id"]
    run, problems = Run(), []
    while len(run.arms) < trials:
        ans = client.call("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w0", "count": 1})
        if not ans["trials"]:
            problems.append("no trial after %d pulls (done=%s)" % (len(run.arms), ans.get("done")))
            break
        tr = ans["trials"][0]
        arm = tr["config"][ARM_PARAM]
        score = oracle.pull(arm, tr["config"])
        client.call("POST", "/v1/trials/%d/complete" % tr["id"], {"value": score})
        run.add(arm, score)
    study = client.call("GET", "/v1/studies/%d" % sid)
    extra = {}
    if method in RISING:
        st = study["scheduler"]["state"]
        extra["state"] = {"round": st.get("round"), "phase": st.get("phase"), "arms": st.get("arms"),
                          "incumbent_arm": (st.get("incumbent") or {}).get("config", {}).get(ARM_PARAM)}
    inc = study.get("incumbent") or {}
    if inc.get("value") is not None and abs(inc["value"] - run.best) > 1e-12:
        problems.append("incumbent %r != best pulled %r" % (inc.get("value"), run.best))
    return run, problems, extra


def run_oracle_arm(client, data, oracle, seed):
    """The best arm's own run: banditd gp_ucb over that arm's sub-space alone, one pull per record
    (nearest mode), or its records in the shuffled order (shuffle mode). Both reach the dataset's best
    by the last pull; the interesting figure is when."""
    arm = data.best_arms[0]
    n = len(data.records[arm])
    run = Run()
    if oracle.mode == "shuffle":
        for _ in range(n):
            run.add(arm, oracle.pull(arm, None))
        return run, [], {"arm": arm}
    params = [dict(p.to_json()) for p in data.params[arm]]
    for p in params:
        del p["when"][ARM_PARAM]
        if not p["when"]:
            del p["when"]
    if not params:
        raise SystemExit("%s: the best arm %s has no hyperparameters" % (data.name, arm))
    name = "cash-%s-oracle-%d-%d" % (data.name, seed, int(time.time() * 1e6))
    scheduler, options = BANDITD_METHODS["oracle_arm"]
    sid = client.call("POST", "/v1/studies", study_body(data, name, scheduler, options, seed, n, params))["id"]
    problems = []
    while len(run.arms) < n:
        ans = client.call("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w0", "count": 1})
        if not ans["trials"]:
            problems.append("no trial after %d pulls" % len(run.arms))
            break
        tr = ans["trials"][0]
        score = oracle.pull(arm, {arm + "." + k: v for k, v in tr["config"].items()})
        client.call("POST", "/v1/trials/%d/complete" % tr["id"], {"value": score})
        run.add(arm, score)
    return run, problems, {"arm": arm}


def run_tpe(data, oracle, seed, trials):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    run = Run()
    for _ in range(trials):
        trial = study.ask()
        arm = trial.suggest_categorical(ARM_PARAM, data.arms)
        config = {ARM_PARAM: arm}
        for p in data.params[arm]:
            if p.cond and config.get("%s.%s" % (arm, p.cond[0])) not in p.cond[1]:
                continue
            if p.kind == "cat":
                config[p.name] = trial.suggest_categorical(p.name, p.choices)
            elif p.kind == "int":
                config[p.name] = trial.suggest_int(p.name, p.lo, p.hi, log=p.log)
            else:
                config[p.name] = trial.suggest_float(p.name, p.lo, p.hi, log=p.log)
        score = oracle.pull(arm, config)
        study.tell(trial, score)
        run.add(arm, score)
    return run, [], {}


def run_one(out, client, data, mode, method, seed, trials):
    oracle = Oracle(data, mode, seed)
    wall = time.monotonic()
    if method == "tpe":
        run, problems, extra = run_tpe(data, oracle, seed, trials)
    elif method == "oracle_arm":
        run, problems, extra = run_oracle_arm(client, data, oracle, seed)
    else:
        run, problems, extra = run_banditd(client, data, oracle, method, seed, trials)
    wall = time.monotonic() - wall
    line = {
        "dataset": data.name, "oracle": mode, "method": method, "seed": seed, "trials": trials,
        "best": run.best, "points": run.points,
        "arm_seq": "".join(str(data.arms.index(a)) for a in run.arms),  # digit i: data.arms[i] (sorted names)
        "arm_pulls": {a: run.arms.count(a) for a in data.arms},
        "dataset_best": data.best, "best_arms": data.best_arms, "arm_best": data.arm_best,
        "records": {a: len(data.records[a]) for a in data.arms},
        "repeats": oracle.repeats, "repeats_by_arm": oracle.repeats_by_arm,
        "wall_seconds": wall, "problems": problems,
    }
    line.update(extra)
    out.write(json.dumps(line) + "\n")
    out.flush()
    print("%-22s %-7s T=%d %-14s seed %2d: best %.4f (dataset %.4f), %d repeats, %.1f s"
          % (data.name, mode, trials, method, seed, run.best, data.best, oracle.repeats, wall), flush=True)


def datasets_arg(text):
    """The dataset names; exits with a message when there is none to replay."""
    if not os.path.isdir(DATA):
        raise SystemExit("cash_replay: the data directory %s does not exist (--data)" % DATA)
    if text == "all":
        names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(DATA, "*.json")))
        if not names:
            raise SystemExit("cash_replay: no *.json dataset in %s (--data)" % DATA)
        return names
    names = [d for d in text.split(",") if d]
    if not names:
        raise SystemExit("cash_replay: --datasets names no dataset")
    return names


def main():
    global DATA
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--banditd", help="the daemon binary (needed for banditd methods)")
    ap.add_argument("--datasets", default="all", help="comma-separated names, or all")
    ap.add_argument("--methods", default="rb_gp,rb_random,uniform,gp_ucb,random,oracle_arm,tpe",
                    help="methods of the nearest form")
    ap.add_argument("--shuffle-methods", default="rb_random,uniform_random,gp_ucb,random,oracle_arm,tpe",
                    help="methods of the shuffle form")
    ap.add_argument("--oracles", default="nearest,shuffle")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--trials", default="200,500", help="budgets T (pulls)")
    ap.add_argument("--data", default=DATA, help="the directory of <dataset>.json histories (default: %(default)s)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    DATA = os.path.abspath(args.data)
    oracles = [o for o in args.oracles.split(",") if o]
    if set(oracles) - {"nearest", "shuffle"}:
        raise SystemExit("unknown oracles: %s" % sorted(set(oracles) - {"nearest", "shuffle"}))
    methods = {"nearest": [m for m in args.methods.split(",") if m],
               "shuffle": [m for m in args.shuffle_methods.split(",") if m]}
    used = set(m for o in oracles for m in methods[o])
    unknown = [m for m in used if m not in BANDITD_METHODS and m not in OPTUNA_METHODS]
    if unknown:
        raise SystemExit("unknown methods: %s" % unknown)
    datasets = [Dataset(ds) for ds in datasets_arg(args.datasets)]
    budgets = parse_range(args.trials)
    if not budgets or not parse_range(args.seeds) or not any(methods[o] for o in oracles):
        raise SystemExit("cash_replay: nothing to run (no budget, seed, oracle or method)")
    daemon = client = None
    if used & set(BANDITD_METHODS):
        if not args.banditd:
            raise SystemExit("--banditd is needed for %s" % sorted(used & set(BANDITD_METHODS)))
        daemon = Daemon(args.banditd)
        client = Client(daemon.url, daemon.token, timeout=300)
    try:
        with open(args.out, "a") as out:
            # budgets outermost, then seeds: a run cut short still holds whole seeds over every dataset
            for trials in budgets:
                for seed in parse_range(args.seeds):
                    for data in datasets:
                        for mode in oracles:
                            for method in methods[mode]:
                                if method == "oracle_arm" and trials != min(budgets):
                                    continue  # independent of T: once per (dataset, seed, oracle)
                                run_one(out, client, data, mode, method, seed, trials)
    finally:
        if client:
            client.close()
        if daemon:
            daemon.stop()


if __name__ == "__main__":
    main()
