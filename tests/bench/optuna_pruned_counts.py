"""How many trials the pruning programs of tests/integration/optuna_programs/
prune, over seeds, on plain Optuna and on banditd: the measurement behind
MEDIAN_RULE_TOLERANCE in tests/integration/test_optuna_programs.py. Each run
is the unchanged program with the seed of every TPESampler / RandomSampler
set to the run's seed (on banditd also the study's seed), so the spread is
what chance gives on each side.

    BANDITD=$PWD/build/banditd /usr/bin/python3 tests/bench/optuna_pruned_counts.py 12 \\
        sgd_median_pruning.py mlp_layers_default_pruner.py xgboost_pruning.py

BD_CLIENT=<dir> runs banditd's side with another client package (e.g. an
older banditd.optuna, to measure a mapping it had); ONS=banditd runs only
that side. Two runs at a time; prints one line of counts per program and
side, in seed order."""

import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..")
PROGRAMS = os.path.join(SOURCE, "tests", "integration", "optuna_programs")
sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))
import bdtest  # noqa: E402

WRAPPER = '''
import os, runpy, sys
import optuna
seed = int(os.environ["SEED"])
for cls in (optuna.samplers.TPESampler, optuna.samplers.RandomSampler):
    def seeded(self, *a, _init=cls.__init__, **k):
        k["seed"] = seed
        _init(self, *a, **k)
    cls.__init__ = seeded
if os.environ.get("BANDITD_URL"):
    sys.path.insert(0, os.environ["BD_CLIENT"])
    import banditd, banditd.optuna
    banditd.optuna.patch_optuna(os.environ["BANDITD_URL"], banditd.read_token(os.environ["BANDITD_TOKEN_FILE"]),
                                seed=seed)
program = os.path.abspath(sys.argv[1])
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(program)
runpy.run_path(program, run_name="__main__")
'''


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n, programs = int(sys.argv[1]), sys.argv[2:]
    sides = os.environ.get("ONS", "optuna,banditd").split(",")
    client = os.environ.get("BD_CLIENT", os.path.join(SOURCE, "clients", "python"))
    d = bdtest.Daemon(lease_seconds=60)
    work = tempfile.mkdtemp(prefix="pruned-counts-", dir=d.tmpdir)
    wrapper = os.path.join(work, "seeded.py")
    with open(wrapper, "w") as f:
        f.write(WRAPPER)
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(d.token)

    def run(job):
        program, on, seed = job
        env = dict(os.environ, OMP_NUM_THREADS="1", SEED=str(seed), MPLCONFIGDIR=work, BD_CLIENT=client)
        env.pop("PYTHONPATH", None)
        if on == "banditd":
            env.update(BANDITD_URL="http://127.0.0.1:%d" % d.port, BANDITD_TOKEN_FILE=token)
        got = subprocess.run(["/usr/bin/python3", wrapper, program, work], cwd=PROGRAMS, env=env,
                             capture_output=True, text=True, timeout=300)
        m = re.search(r"^pruned trials: (\d+)", got.stdout, re.M)
        return job, int(m.group(1)) if m else None

    jobs = [(p, on, s) for p in programs for s in range(n) for on in sides]
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            counts = dict(pool.map(run, jobs))
    finally:
        d.cleanup()
    for p in programs:
        for on in sides:
            print(p, on, [counts[(p, on, s)] for s in range(n)])


if __name__ == "__main__":
    main()
