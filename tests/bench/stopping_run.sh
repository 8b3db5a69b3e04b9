#!/bin/sh
# Issue 39, item 2 (README-stopping.md): the stopping type of asha and
# hyperband against their promotion type run by workers that keep no
# checkpoint (a promotion retrains from scratch), on every learning-curve
# table, 20 seeds, W = 1 and 4, on bobos_replay.py's simulated clock; two
# processes at once (asha's pair, hyperband's pair; one daemon each), then
# mf_report.py --stopping.
#
#     sh tests/bench/stopping_run.sh [build-dir]
#
# STOP_TABLES, STOP_SEEDS, STOP_WORKERS and STOP_OUT narrow a run;
# STOP_ASHA and STOP_HB are the two processes' method lists (bobos_replay.py's
# names; one may be empty) and STOP_NAME the results' name (default
# "stopping": results/stopping_runs.jsonl.gz and results/stopping.md).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
py=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

tables=${STOP_TABLES:-sgd_fashion_mnist,mlp_digits,fmnist_mlp,fmnist_mlp2}
seeds=${STOP_SEEDS:-0-19}
workers=${STOP_WORKERS:-1,4}
outdir=${STOP_OUT:-$here/results}
asha=${STOP_ASHA-asha_stop,asha_scratch}
hb=${STOP_HB-hyperband_stop,hyperband_scratch}
name=${STOP_NAME:-stopping}

if [ ! -x "$build/banditd" ]; then
    echo "stopping_run.sh: no $build/banditd; build it first" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bd-stop-run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$outdir"
cp "$build/banditd" "$tmp/banditd" # a rebuild during the run changes nothing

run() { # name methods
    "$py" "$here/bobos_replay.py" --methods "$2" --banditd "$tmp/banditd" --tables "$tables" --seeds "$seeds" \
        --workers "$workers" --out "$tmp/$1.jsonl" >"$tmp/$1.log" 2>&1
}

t0=$(date +%s)
pids=""
[ -n "$asha" ] && { run asha "$asha" & pids="$pids $!"; }
[ -n "$hb" ] && { run hyperband "$hb" & pids="$pids $!"; }
failed=0
for p in $pids; do
    wait "$p" || failed=1
done
if [ "$failed" = 1 ]; then
    tail -20 "$tmp"/*.log >&2
    echo "stopping_run.sh: a replay failed" >&2
    exit 1
fi
cat "$tmp"/*.jsonl | gzip -n >"$outdir/${name}_runs.jsonl.gz"
"$py" "$here/mf_report.py" --stopping "$outdir/${name}_runs.jsonl.gz" >"$outdir/$name.md"
echo "stopping_run.sh: $(($(date +%s) - t0)) s; tables in $outdir/$name.md" >&2
