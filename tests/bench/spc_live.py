#!/usr/bin/python3
"""spc_live: configure minisat (Debian's package) for CPU time with banditd's
`spc` and clients/banditd-worker, on SATLIB uf175 / uuf175 instances
(../shared/data/sat), and check the result on instances it never saw.

1. Split the 100 instances with a seed: 35 SAT + 35 UNSAT to configure on,
   15 + 15 held back.
2. Start a daemon on a fresh database and create an spc study over eight of
   minisat's parameters (random frequency, variable and clause decay, restart
   increment and first restart, Luby restarts, phase saving, conflict-clause
   minimization), a whole space, so spc's doubling samples run; caps from
   --kappa0 doubling up to --cutoff CPU seconds.
3. Run `banditd-worker --parallel 2 --cap-kind cpu -- minisat ...` for
   --minutes, recording the incumbent (GET /v1/studies/{id}) at each of
   --snapshots minutes.
4. Measure minisat's default config, every snapshot's incumbent and each
   sample's own final incumbent on the training and the held-out instances,
   each run --repeats times (CPU seconds from wait4, capped at the cutoff,
   PAR1), one run at a time.

    /usr/bin/python3 tests/bench/spc_live.py --banditd build/banditd --minutes 30 \\
        --out tests/bench/results/spc_live.json
"""

import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from bobos_replay import Daemon  # noqa: E402
from replay_common import Client  # noqa: E402

SAT = os.path.abspath(os.path.join(SOURCE, "..", "shared", "data", "sat"))
PARAMETERS = [
    {"name": "rnd_freq", "type": "float", "low": 0.0, "high": 0.2},
    {"name": "var_decay", "type": "float", "low": 0.75, "high": 0.99},
    {"name": "cla_decay", "type": "float", "low": 0.99, "high": 0.99999},
    {"name": "rinc", "type": "float", "low": 1.1, "high": 4.0, "log": True},
    {"name": "rfirst", "type": "int", "low": 10, "high": 1000, "log": True},
    {"name": "luby", "type": "categorical", "choices": ["-luby", "-no-luby"]},
    {"name": "phase_saving", "type": "int", "low": 0, "high": 2},
    {"name": "ccmin_mode", "type": "int", "low": 0, "high": 2},
]
TEMPLATE = ["minisat", "-verb=0", "-rnd-freq={rnd_freq}", "-var-decay={var_decay}", "-cla-decay={cla_decay}",
            "-rinc={rinc}", "-rfirst={rfirst}", "{luby}", "-phase-saving={phase_saving}", "-ccmin-mode={ccmin_mode}",
            "{instance}"]
DEFAULT = {"rnd_freq": 0.0, "var_decay": 0.95, "cla_decay": 0.999, "rinc": 2.0, "rfirst": 100, "luby": "-luby",
           "phase_saving": 2, "ccmin_mode": 2}


def split(seed):
    train, test = [], []
    for folder in ("uf175-753", "uuf175-753"):
        files = sorted(os.path.join(folder, f) for f in os.listdir(os.path.join(SAT, folder)) if f.endswith(".cnf"))
        random.Random(seed).shuffle(files)
        train += files[:35]
        test += files[35:]
    return train, test


def cpu_run(config, instance, cutoff):
    """minisat's CPU seconds on instance (capped at cutoff: PAR1), one run."""
    argv = [w.format_map(dict(config, instance=os.path.join(SAT, instance))) for w in TEMPLATE]
    argv.insert(1, "-cpu-lim=%d" % max(1, int(cutoff + 1)))
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    if code not in (10, 20) or cpu > cutoff:
        return cutoff
    return cpu


def measure(config, instances, cutoff, repeats):
    per = [sum(cpu_run(config, i, cutoff) for _ in range(repeats)) / repeats for i in instances]
    return {"mean": sum(per) / len(per), "max": max(per), "timeouts": sum(v >= cutoff for v in per)}


def sample_incumbents(client, study_id):
    """Each sample's own incumbent (most active instances within it) at the end."""
    st = client.call("GET", "/v1/studies/%d" % study_id)["scheduler"]["state"]
    out = []
    for i, sm in enumerate(st["samples"]):
        k = sm.get("incumbent_tester", -1)
        if k >= 0:
            t = st["testers"][k]
            out.append({"sample": i, "size": sm["size"], "config": t["config"],
                        "active_instances": t["active_instances"], "mean_capped": t["mean_capped_runtime"]})
    return out


def measure_samples(result, samples, train, test, cutoff, repeats):
    result["sample_incumbents"] = []
    for s in samples:
        s = dict(s, train=measure(s["config"], train, cutoff, repeats), test=measure(s["config"], test, cutoff, repeats))
        result["sample_incumbents"].append(s)
        print("sample %d (%d configs): incumbent with %d active instances: train %.4f s, held-out %.4f s" % (
            s["sample"], s["size"], s["active_instances"], s["train"]["mean"], s["test"]["mean"]), flush=True)


def add_sample_incumbents(args):
    """--db: a finished run's database; measure each sample's final incumbent
    and add them to --out (the run's JSON)."""
    with open(args.out) as f:
        result = json.load(f)
    daemon = Daemon(args.banditd, db=args.db)
    try:
        client = Client(daemon.url, daemon.token, timeout=60)
        study = client.call("GET", "/v1/studies")["studies"][0]
        samples = sample_incumbents(client, study["id"])
    finally:
        daemon.stop()
    measure_samples(result, samples, result["train"], result["test"], result["cutoff"], result["repeats"])
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--banditd", required=True)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--snapshots", default="5,15,30")
    ap.add_argument("--kappa0", type=float, default=0.02)
    ap.add_argument("--cutoff", type=float, default=5.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--db", help="only measure the sample incumbents of a finished run's database into --out")
    args = ap.parse_args()
    if args.db:
        return add_sample_incumbents(args)
    if not shutil.which("minisat"):
        sys.exit("minisat is not installed: docker/install-deps.sh --test")
    train, test = split(args.seed)
    daemon = Daemon(args.banditd)
    client = Client(daemon.url, daemon.token, timeout=60)
    study = client.call("POST", "/v1/studies", {
        "name": "minisat-live", "parameters": PARAMETERS,
        "objective": {"metric": "cpu_seconds", "goal": "minimize"},
        "resource": {"name": "cpu_seconds", "min": 0.005, "max": args.cutoff},
        "instances": train,
        "scheduler": {"name": "spc", "options": {"kappa0": args.kappa0}},
        "seed": args.seed})
    token = os.path.join(daemon.tmp, "token")
    with open(token, "w") as f:
        f.write(daemon.token)
    worker_log = open(os.path.join(daemon.tmp, "worker.log"), "w")
    worker = subprocess.Popen(["/usr/bin/python3", os.path.join(SOURCE, "clients", "banditd-worker"), "--url",
                               daemon.url, "--token-file", token, "--study", str(study["id"]), "--parallel", "2",
                               "--cap-kind", "cpu", "--instance-dir", SAT, "--"] + TEMPLATE,
                              stdout=worker_log, stderr=subprocess.STDOUT)
    started, snapshots = time.monotonic(), []
    wanted = [float(m) for m in args.snapshots.split(",")]
    try:
        for minute in wanted:
            time.sleep(max(0.0, started + 60 * minute - time.monotonic()))
            st = client.call("GET", "/v1/studies/%d" % study["id"])
            state = st["scheduler"]["state"]
            snapshots.append({"minute": minute, "incumbent": st["incumbent"], "runs": state["runs"],
                              "cpu_seconds": state["seconds"], "samples": len(state["samples"]),
                              "configs": len(state["testers"])})
            print("%4.0f min: %d runs, %.0f CPU s, %d configs; incumbent %r" % (
                minute, state["runs"], state["seconds"], len(state["testers"]), st["incumbent"]), flush=True)
        samples = sample_incumbents(client, study["id"])
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)
        daemon.stop()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print("configuration done; measuring on %d training and %d held-out instances" % (len(train), len(test)),
          flush=True)
    result = {"train": train, "test": test, "kappa0": args.kappa0, "cutoff": args.cutoff, "repeats": args.repeats,
              "minutes": args.minutes, "seed": args.seed, "snapshots": snapshots,
              "children_cpu_seconds": usage.ru_utime + usage.ru_stime, "configs": {}}
    result["configs"]["default"] = {"config": DEFAULT, "train": measure(DEFAULT, train, args.cutoff, args.repeats),
                                    "test": measure(DEFAULT, test, args.cutoff, args.repeats)}
    for snap in snapshots:
        if not snap["incumbent"]:
            continue
        cfg = snap["incumbent"]["config"]
        result["configs"]["incumbent at %g min" % snap["minute"]] = {
            "config": cfg, "spc_mean_capped": snap["incumbent"]["value"],
            "active_instances": snap["incumbent"].get("active_instances"),
            "train": measure(cfg, train, args.cutoff, args.repeats),
            "test": measure(cfg, test, args.cutoff, args.repeats)}
    measure_samples(result, samples, train, test, args.cutoff, args.repeats)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    for name, r in result["configs"].items():
        print("%-22s train mean %.4f s (max %.3f, %d timeouts), held-out mean %.4f s (max %.3f, %d timeouts)" % (
            name, r["train"]["mean"], r["train"]["max"], r["train"]["timeouts"], r["test"]["mean"],
            r["test"]["max"], r["test"]["timeouts"]))


if __name__ == "__main__":
    main()
