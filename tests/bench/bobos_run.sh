#!/bin/sh
# BO-BOS replay benchmark (README-bobos.md): banditd's methods against one
# daemon, Optuna's in a parallel process (no daemon), then the report.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
py=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

tables=${BOBOS_TABLES:-sgd_fashion_mnist,mlp_digits}
seeds=${BOBOS_SEEDS:-0-19}
workers=${BOBOS_WORKERS:-1,4}
horizon=${BOBOS_HORIZON:+--horizon $BOBOS_HORIZON}
outdir=${BOBOS_OUT:-$here/results}

if [ ! -x "$build/banditd" ]; then
    echo "bobos_run.sh: no $build/banditd; build it first (README-bobos.md)" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bd-bobos-run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$outdir"

t0=$(date +%s)
"$py" "$here/bobos_replay.py" --methods tpe,tpe_hyperband,tpe_median --tables "$tables" --seeds "$seeds" \
    --workers "$workers" $horizon --out "$tmp/optuna.jsonl" >"$tmp/optuna.log" 2>&1 &
optuna_pid=$!
"$py" "$here/bobos_replay.py" --banditd "$build/banditd" --methods bo_bos,gp_ucb,random,hyperband,asha \
    --tables "$tables" --seeds "$seeds" --workers "$workers" $horizon --out "$tmp/banditd.jsonl"
if ! wait "$optuna_pid"; then
    echo "bobos_run.sh: the Optuna side failed:" >&2
    tail -20 "$tmp/optuna.log" >&2
    exit 1
fi
cat "$tmp/banditd.jsonl" "$tmp/optuna.jsonl" >"$outdir/bobos_runs.jsonl"
"$py" "$here/bobos_report.py" "$outdir/bobos_runs.jsonl" --md "$outdir/bobos.md" --png "$outdir/bobos_anytime.png"
echo "bobos_run.sh: $(($(date +%s) - t0)) s; tables in $outdir/bobos.md, plot $outdir/bobos_anytime.png" >&2
