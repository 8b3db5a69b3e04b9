#!/bin/sh
# Issue 41's benchmark (README-mo.md): banditd's multi-objective schedulers
# over HTTP against Optuna 3.1's NSGA-II, multi-objective TPE and random
# search on the tables of tests/bench/mo/, 20 seeds, W = 1 and 4, one
# simulated clock (mo_bench.py); then a long pass (MO_LONG times each
# table's horizon) without Optuna's TPE, whose decisions cost too much CPU
# at several hundred trials. Three processes at once (Optuna's TPE,
# Optuna's other two, banditd's methods on one daemon), then the report.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
py=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

tables=${MO_TABLES:-all}
seeds=${MO_SEEDS:-0-19}
workers=${MO_WORKERS:-1,4}
outdir=${MO_OUT:-$here/results}
optuna_tpe=${MO_OPTUNA_TPE-optuna_tpe}
optuna=${MO_OPTUNA-optuna_nsga2,optuna_random}
bd=${MO_BANDITD-bd_auto,bd_nsga2,bd_tpe,bd_random}
long=${MO_LONG-4}
long_optuna=${MO_LONG_OPTUNA-optuna_nsga2,optuna_random}

if [ -n "$bd" ] && [ ! -x "$build/banditd" ]; then
    echo "mo_run.sh: no $build/banditd; build it first (README-mo.md)" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bd-mo-run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$outdir"
[ -n "$bd" ] && cp "$build/banditd" "$tmp/banditd"   # a rebuild during the run changes nothing

"$py" "$here/mo_bench.py" --check --tables "$tables"

run() { # name methods [options]
    name=$1
    shift
    "$py" "$here/mo_bench.py" --methods "$@" --tables "$tables" --seeds "$seeds" --workers "$workers" \
        --out "$tmp/$name.jsonl" >>"$tmp/$name.log" 2>&1
}
run_both() { # name methods long_methods [--banditd binary]: the pass, then the long pass
    name=$1 methods=$2 long_methods=$3
    shift 3
    [ -z "$methods" ] || run "$name" "$methods" "$@" || return 1
    [ -z "$long" ] || [ -z "$long_methods" ] || run "$name" "$long_methods" --horizon-scale "$long" "$@"
}

t0=$(date +%s)
pids=""
[ -n "$optuna_tpe" ] && { run optuna_tpe "$optuna_tpe" & pids="$pids $!"; }
[ -n "$optuna$long_optuna" ] && { run_both optuna "$optuna" "$long_optuna" & pids="$pids $!"; }
[ -n "$bd" ] && { run_both banditd "$bd" "$bd" --banditd "$tmp/banditd" & pids="$pids $!"; }
failed=0
for p in $pids; do
    wait "$p" || failed=1
done
if [ "$failed" = 1 ]; then
    tail -20 "$tmp"/*.log >&2
    echo "mo_run.sh: a run failed" >&2
    exit 1
fi
cat "$tmp"/*.jsonl | gzip -n >"$outdir/mo_runs.jsonl.gz"
"$py" "$here/mo_bench.py" --report "$outdir/mo_runs.jsonl.gz" --md "$outdir/mo.md" --png "$outdir/mo_anytime.png" \
    >/dev/null
echo "mo_run.sh: $(($(date +%s) - t0)) s; tables in $outdir/mo.md, plot $outdir/mo_anytime.png," \
    "runs $outdir/mo_runs.jsonl.gz" >&2
