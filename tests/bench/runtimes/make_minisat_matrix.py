#!/usr/bin/python3
"""make_minisat_matrix: a runtime matrix of Debian's minisat (/usr/bin/minisat),
CONFIGS configurations x the instances of INSTANCE_PLAN, measured on this
machine, in the format of ../shared/data/runtimes (spc_replay.py's Matrix):
a CSV `instance,solver,runtime,status` (status `ok` or `timeout`) and a JSON
header.

Recipe (one core, one solver process at a time; resumable):

    taskset -c 1 /usr/bin/python3 tests/bench/runtimes/make_minisat_matrix.py

    # calibration only (default + 10 random configs on candidate sizes):
    taskset -c 1 /usr/bin/python3 tests/bench/runtimes/make_minisat_matrix.py --pilot

Instances: uniform random 3-SAT at clause/variable ratio 4.26 (three distinct
variables per clause, each negated with probability 1/2), INSTANCE_PLAN's
sizes, generated from --instance-seed with Python's random.Random into
--work/instances (not stored: regenerated bit-identically on every run; the
SHA-256 of each file's content goes into the JSON header).

Calibration: a pilot (--pilot: default + 10 configs, 5 instances each of
150..275 variables, cap 2 s) gave mean capped CPU per run of 0.010 s (150
variables), 0.042 (175), 0.17 (200), 0.18 (225), 0.90 (250) and 1.8 (275,
mostly timeouts). A first full run with 150..250 variables (110/60/18/8/4)
projected ~150 min of wall time on this loaded two-core machine (the runs
were also slower than in the pilot), so after 2,072 cells it was stopped and
the plan made easier: INSTANCE_PLAN below. The 1,325 cells of that run on
instances that the new plan keeps (same names, same bytes) were kept; the
rest are counted in the JSON header's discarded_cells. The resulting 200
instances (125..200 variables) turned out easy (default at most 0.26 s, 37
CPU minutes in all), so 2 instances each of 225 and 250 variables were
added afterwards (resumed run, 1,158 more cells; the 42 cells of them from
the first run were kept): 204 instances.

Configurations: c000 is minisat's default (no options); c001.. are drawn from
--config-seed out of spc_live.py's 8-parameter space (-rnd-freq, -var-decay,
-cla-decay, -rinc, -rfirst, -luby/-no-luby, -phase-saving, -ccmin-mode;
floats uniform, -rinc and -rfirst log-uniform, as spc_live.py's PARAMETERS).

Measurement: `minisat -verb=0 -cpu-lim=<cap+1> <config> <instance>`, stdout
and stderr discarded, the script pinned to CPU 1 (children inherit it). The
runtime is the child's user+sys CPU seconds from os.wait4. While it runs the
parent waits on a pidfd and reads /proc/<pid>/stat, and kills the child
(SIGKILL) once its CPU time reaches the cap. Exit code 10 or 20 with CPU <=
cap: `ok`; over the cap or killed: `timeout` (runtime = the CPU time used, a
little above the cap); anything else is an error, rerun once and then
recorded as `error` (reported, and the matrix is then not written).

Cells are measured in a seeded random order and appended to
--work/partial.csv (flushed per row), so an interrupted run resumes where it
stopped; the final CSV (sorted by solver, instance) is gzipped to
tests/bench/runtimes/minisat-rand3sat.csv.gz and the header written next to it.
"""

import argparse
import csv
import gzip
import hashlib
import io
import json
import math
import os
import platform
import random
import select
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MINISAT = "/usr/bin/minisat"
SCENARIO = "minisat-rand3sat"
RATIO = 4.26
# (variables, count): the full matrix's instances.
INSTANCE_PLAN = [(125, 70), (150, 90), (175, 28), (200, 12), (225, 2), (250, 2)]
PILOT_PLAN = [(150, 5), (175, 5), (200, 5), (225, 5), (250, 5), (275, 5)]
CONFIGS = 300
CUTOFF = 2.0
TICK = os.sysconf("SC_CLK_TCK")

# spc_live.py's PARAMETERS (the same ranges).
PARAMETERS = [
    {"name": "rnd-freq", "type": "float", "low": 0.0, "high": 0.2},
    {"name": "var-decay", "type": "float", "low": 0.75, "high": 0.99},
    {"name": "cla-decay", "type": "float", "low": 0.99, "high": 0.99999},
    {"name": "rinc", "type": "float", "low": 1.1, "high": 4.0, "log": True},
    {"name": "rfirst", "type": "int", "low": 10, "high": 1000, "log": True},
    {"name": "luby", "type": "categorical", "choices": ["-luby", "-no-luby"]},
    {"name": "phase-saving", "type": "int", "low": 0, "high": 2},
    {"name": "ccmin-mode", "type": "int", "low": 0, "high": 2},
]


def draw_config(rng):
    args = []
    for p in PARAMETERS:
        if p["type"] == "categorical":
            args.append(rng.choice(p["choices"]))
            continue
        if p["type"] == "float":
            if p.get("log"):
                v = math.exp(rng.uniform(math.log(p["low"]), math.log(p["high"])))
            else:
                v = rng.uniform(p["low"], p["high"])
            v = float("%.6g" % v)
            v = min(max(v, p["low"]), p["high"])
            args.append("-%s=%s" % (p["name"], repr(v)))
        else:
            if p.get("log"):
                v = int(round(math.exp(rng.uniform(math.log(p["low"] - 0.5), math.log(p["high"] + 0.5)))))
            else:
                v = rng.randint(p["low"], p["high"])
            v = min(max(v, p["low"]), p["high"])
            args.append("-%s=%d" % (p["name"], v))
    return args


def make_configs(n, seed):
    rng = random.Random(seed)
    configs = {"c000": []}
    for k in range(1, n):
        configs["c%03d" % k] = draw_config(rng)
    return configs


def random_3sat(n, m, rng):
    lines = ["p cnf %d %d" % (n, m)]
    for _ in range(m):
        vs = rng.sample(range(1, n + 1), 3)
        lines.append(" ".join(str(v if rng.random() < 0.5 else -v) for v in vs) + " 0")
    return "\n".join(lines) + "\n"


def make_instances(plan, seed, folder, tag):
    """Write the plan's instances into folder; returns {name: sha256}."""
    os.makedirs(folder, exist_ok=True)
    out = {}
    for n, count in plan:
        m = int(round(RATIO * n))
        for k in range(count):
            name = "%s-n%d-m%d-%03d.cnf" % (tag, n, m, k)
            rng = random.Random("%s/%d/%d/%d" % (tag, seed, n, k))
            text = random_3sat(n, m, rng)
            path = os.path.join(folder, name)
            data = text.encode()
            with open(path + ".tmp", "wb") as f:
                f.write(data)
            os.replace(path + ".tmp", path)
            out[name] = hashlib.sha256(data).hexdigest()
    return out


def proc_cpu(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    except (OSError, IndexError, ValueError):
        return 0.0


def run(args, path, cap):
    """One minisat run: (cpu seconds, status ok/timeout/error, exit code)."""
    argv = [MINISAT, "-verb=0", "-cpu-lim=%d" % (int(cap) + 1)] + args + [path]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fd = os.pidfd_open(p.pid)
    killed = False
    try:
        while True:
            cpu = proc_cpu(p.pid)
            if cpu >= cap:
                os.kill(p.pid, signal.SIGKILL)
                killed = True
                break
            ready, _, _ = select.select([fd], [], [], max(cap - cpu, 0.02))
            if ready:
                break
    finally:
        os.close(fd)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    code = p.returncode
    cpu = usage.ru_utime + usage.ru_stime
    if killed or cpu > cap:
        return cpu, "timeout", code
    if code in (10, 20):
        return cpu, "ok", code
    if code == 1 and cpu >= int(cap) + 1 - 0.05:  # minisat's own -cpu-lim (SIGXCPU)
        return cpu, "timeout", code
    return cpu, "error", code


def measure(args, path, cap):
    cpu, status, code = run(args, path, cap)
    if status == "error":
        print("error: exit %d after %.3f s: %s %s; rerunning" % (code, cpu, " ".join(args), path), flush=True)
        cpu, status, code = run(args, path, cap)
    return cpu, status, code


def pin():
    try:
        os.sched_setaffinity(0, {1})
    except OSError as e:
        print("cannot pin to CPU 1: %s" % e, file=sys.stderr)


def pilot(args):
    folder = os.path.join(args.work, "pilot")
    inst = make_instances(PILOT_PLAN, args.instance_seed, folder, "pilot")
    configs = make_configs(11, args.config_seed)
    rows = []
    t0 = time.time()
    for name in sorted(inst):
        for c, cargs in configs.items():
            cpu, status, code = measure(cargs, os.path.join(folder, name), args.cutoff)
            rows.append((name, c, cpu, status))
    print("pilot: %d runs, %.0f s wall" % (len(rows), time.time() - t0))
    by_n = {}
    for name, c, cpu, status in rows:
        n = int(name.split("-n")[1].split("-")[0])
        by_n.setdefault(n, []).append((c, min(cpu, args.cutoff), status))
    print("%5s %8s %8s %8s %10s %10s %8s" % ("n", "def.med", "def.max", "def.mean", "all.mean", "rand.mean", "t/o"))
    per_n = {}
    for n, rs in sorted(by_n.items()):
        d = [v for c, v, s in rs if c == "c000"]
        a = [v for c, v, s in rs]
        r = [v for c, v, s in rs if c != "c000"]
        per_n[n] = statistics.mean(a)
        print("%5d %8.3f %8.3f %8.3f %10.3f %10.3f %8d" % (n, statistics.median(d), max(d), statistics.mean(d),
                                                         statistics.mean(a), statistics.mean(r),
                                                         sum(s != "ok" for c, v, s in rs)))
    est = sum(per_n.get(n, float("nan")) * count for n, count in INSTANCE_PLAN) * CONFIGS
    print("estimated naive total for INSTANCE_PLAN x %d configs: %.0f s (%.1f min)" % (CONFIGS, est, est / 60))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/banditd-minisat-matrix", help="instances and partial.csv")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--instance-seed", type=int, default=20261125)
    ap.add_argument("--config-seed", type=int, default=7)
    ap.add_argument("--order-seed", type=int, default=1)
    ap.add_argument("--configs", type=int, default=CONFIGS)
    ap.add_argument("--cutoff", type=float, default=CUTOFF)
    ap.add_argument("--pilot", action="store_true", help="calibrate: default + 10 configs on PILOT_PLAN's sizes")
    ap.add_argument("--summary", action="store_true", help="print the README's statistics of the written matrix")
    args = ap.parse_args()
    if args.summary:
        return summary(args)
    pin()
    if args.pilot:
        return pilot(args)

    folder = os.path.join(args.work, "instances")
    inst = make_instances(INSTANCE_PLAN, args.instance_seed, folder, "r3sat")
    configs = make_configs(args.configs, args.config_seed)
    cells = [(i, c) for c in configs for i in sorted(inst)]
    random.Random(args.order_seed).shuffle(cells)

    partial = os.path.join(args.work, "partial.csv")
    done = {}
    if os.path.exists(partial):
        with open(partial) as f:
            for row in csv.DictReader(f):
                done[(row["instance"], row["solver"])] = row
    todo = [cell for cell in cells if cell not in done]
    print("%d cells, %d done, %d to do" % (len(cells), len(done), len(todo)), flush=True)
    new = not os.path.exists(partial)
    t0 = time.time()
    spent = 0.0
    with open(partial, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["instance", "solver", "runtime", "status", "exit_code", "wall"])
        for k, (i, c) in enumerate(todo):
            s = time.time()
            cpu, status, code = measure(configs[c], os.path.join(folder, i), args.cutoff)
            wall = time.time() - s
            w.writerow([i, c, "%.4f" % cpu, status, code, "%.4f" % wall])
            f.flush()
            done[(i, c)] = {"instance": i, "solver": c, "runtime": "%.4f" % cpu, "status": status}
            spent += min(cpu, args.cutoff)
            if (k + 1) % 2000 == 0:
                el = time.time() - t0
                print("%s %d/%d cells, %.0f s wall, capped CPU %.0f s, ETA %.0f min" % (
                    time.strftime("%H:%M:%S"), k + 1, len(todo), el, spent, el / (k + 1) * (len(todo) - k - 1) / 60),
                    flush=True)
    wall_total = time.time() - t0

    rows = [done[(i, c)] for c in configs for i in sorted(inst)]
    errors = [r for r in rows if r["status"] not in ("ok", "timeout")]
    if errors:
        print("%d error cells, matrix not written:" % len(errors))
        for r in errors[:20]:
            print(r)
        return 1
    # Totals over the whole partial file (also cells measured before a resume).
    # Cells of instances outside the plan (measured under an earlier plan:
    # same generator and seeds, so shared instances are identical) are
    # counted separately.
    total_cpu, total_wall, other_cpu, other_cells = 0.0, 0.0, 0.0, 0
    with open(partial) as f:
        for row in csv.DictReader(f):
            if row["instance"] in inst and row["solver"] in configs:
                total_cpu += float(row["runtime"])
                total_wall += float(row["wall"])
            else:
                other_cpu += float(row["runtime"])
                other_cells += 1

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["instance", "solver", "runtime", "status"])
    for r in rows:
        w.writerow([r["instance"], r["solver"], r["runtime"], r["status"]])
    csv_name = SCENARIO + ".csv"
    with open(os.path.join(args.out, csv_name + ".gz"), "wb") as f:
        with gzip.GzipFile(filename=csv_name, mode="wb", fileobj=f, mtime=0) as g:
            g.write(buf.getvalue().encode())
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    naive = sum(min(float(r["runtime"]), args.cutoff) for r in rows)
    meta = {
        "scenario": SCENARIO,
        "csv": csv_name,
        "csv_gz": csv_name + ".gz",
        "columns": ["instance", "solver", "runtime", "status"],
        "cutoff_seconds": args.cutoff,
        "memory_cutoff_mb": None,
        "performance_measure": "runtime",
        "runtime_measure": "CPU seconds (user+sys, os.wait4) of one minisat process pinned to CPU 1",
        "n_rows": len(rows),
        "n_instances": len(inst),
        "n_solvers": len(configs),
        "complete_matrix": len(rows) == len(inst) * len(configs) == len(set((r["instance"], r["solver"]) for r in rows)),
        "status_counts": counts,
        "rows_with_runtime_above_cutoff": sum(float(r["runtime"]) > args.cutoff for r in rows),
        "missing_runtimes": 0,
        "solvers": list(configs),
        "configs": {c: " ".join(a) for c, a in configs.items()},
        "config_space": PARAMETERS,
        "solver_binary": MINISAT,
        "solver_version": solver_version(),
        "common_arguments": "-verb=0 -cpu-lim=%d" % (int(args.cutoff) + 1),
        "instances": {"generator": "uniform random 3-SAT, clause/variable ratio %.2f" % RATIO,
                      "plan": [{"variables": n, "clauses": int(round(RATIO * n)), "count": c} for n, c in INSTANCE_PLAN],
                      "sha256": inst},
        "seeds": {"instance_seed": args.instance_seed, "config_seed": args.config_seed, "order_seed": args.order_seed},
        "naive_total_capped_cpu_seconds": round(naive, 3),
        "total_cpu_seconds": round(total_cpu, 3),
        "total_wall_seconds_of_runs": round(total_wall, 3),
        "discarded_cells": {"count": other_cells, "cpu_seconds": round(other_cpu, 3),
                            "note": "measured for instances dropped from an earlier, harder plan; not in the matrix"},
        "machine": {"cpu": cpu_model(), "nproc": os.cpu_count(), "pinned_cpu": 1, "kernel": platform.release(),
                    "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "command": "taskset -c 1 /usr/bin/python3 tests/bench/runtimes/make_minisat_matrix.py",
    }
    with open(os.path.join(args.out, SCENARIO + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print("wrote %d rows; naive total %.0f s; CPU %.0f s; this session %.0f s wall" % (
        len(rows), naive, total_cpu, wall_total))
    return 0


def summary(args):
    """The README's statistics, from the written .csv.gz and .json."""
    with open(os.path.join(args.out, SCENARIO + ".json")) as f:
        meta = json.load(f)
    cutoff = float(meta["cutoff_seconds"])
    rt = {}
    with gzip.open(os.path.join(args.out, SCENARIO + ".csv.gz"), "rt") as f:
        for row in csv.DictReader(f):
            v = float(row["runtime"]) if row["status"] == "ok" else math.inf
            rt.setdefault(row["solver"], {})[row["instance"]] = min(v, cutoff) if v <= cutoff else cutoff
    status = meta["status_counts"]
    cells = sum(status.values())
    mean = {c: statistics.mean(r.values()) for c, r in rt.items()}
    order = sorted(mean, key=mean.get)
    best, second = order[0], order[1]
    d = sorted(rt["c000"].values())
    d_to = sum(1 for v in d if v >= cutoff)

    def q(p):
        return d[min(len(d) - 1, int(round(p * (len(d) - 1))))]

    print("default (c000) runtime quantiles over %d instances (s, PAR1, timeouts = cutoff):" % len(d))
    print("  min %.4f  p10 %.4f  p25 %.4f  median %.4f  p75 %.4f  p90 %.4f  p99 %.4f  max %.4f; timeouts %d" % (
        d[0], q(0.1), q(0.25), q(0.5), q(0.75), q(0.9), q(0.99), d[-1], d_to))
    print("timeouts: %d of %d cells (%.2f%%)" % (cells - status.get("ok", 0), cells,
                                                 100.0 * (cells - status.get("ok", 0)) / cells))
    med = statistics.median(mean.values())
    print("best %s mean %.4f s; 2nd %s %.4f s (gap %.4f s, %.2f%%); default %.4f s (rank %d of %d); median config %.4f s" % (
        best, mean[best], second, mean[second], mean[second] - mean[best],
        100.0 * (mean[second] - mean[best]) / mean[best], mean["c000"], order.index("c000") + 1, len(order), med))
    print("worst %s %.4f s" % (order[-1], mean[order[-1]]))
    print("configs within 10%% of the best: %d (incl. the best)" % sum(1 for v in mean.values() if v <= 1.1 * mean[best]))
    print("best config: %s" % meta["configs"][best])
    print("2nd config: %s" % meta["configs"][second])
    naive = sum(sum(r.values()) for r in rt.values())
    print("naive total (sum of capped runtimes): %.1f s (%.1f min); total CPU measured %.1f s" % (
        naive, naive / 60, meta["total_cpu_seconds"]))
    by_n = {}
    for i, v in rt["c000"].items():
        by_n.setdefault(i.split("-")[1], []).append(v)
    for n, vs in sorted(by_n.items(), key=lambda kv: int(kv[0][1:])):
        allv = [rt[c][i] for c in rt for i in rt[c] if i.split("-")[1] == n]
        print("  %s: %d instances; default median %.4f max %.4f; all configs mean %.4f, timeouts %d" % (
            n, len(vs), statistics.median(vs), max(vs), statistics.mean(allv), sum(v >= cutoff for v in allv)))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def solver_version():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "minisat"], capture_output=True, text=True)
        return "Debian minisat " + out.stdout.strip()
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main() or 0)
