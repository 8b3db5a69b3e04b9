#!/bin/sh
# SPC replay benchmark (README-spc.md): spc_replay.py on the three ASlib SAT
# matrices and the minisat matrix of runtimes/ (SPC_SCENARIOS), 20 instance
# orders each (SPC_SEEDS), the methods of SPC_METHODS, then the report. The
# configurators run in-process through bd_spc_replay (the daemon's scheduler
# code, no HTTP); seeds 0 and 1 also run through the daemon over HTTP on 1% of
# the horizon, checked to make the same decisions. One core.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
py=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1
outdir=${SPC_OUT:-$here/results}

if [ ! -x "$build/banditd" ] || [ ! -x "$build/tests/bench/bd_spc_replay" ]; then
    echo "spc_run.sh: build first: cmake --build $build -j2 (README-spc.md)" >&2
    exit 1
fi
mkdir -p "$outdir"
rm -f "$outdir/spc_runs.jsonl" "$outdir/spc_runs.jsonl.gz"
"$py" "$here/spc_replay.py" --banditd "$build/banditd" --seeds "${SPC_SEEDS:-0-19}" --daemon-seeds 0-1 \
    --scenarios "${SPC_SCENARIOS:-sat11-indu,sat18-exp,sat20-main,minisat-rand3sat}" \
    --methods "${SPC_METHODS:-spc,caps_race,spc_cycle,uniform,uniform_paper,hyperband,naive}" --out "$outdir/spc_runs.jsonl"
gzip -n -9 "$outdir/spc_runs.jsonl"
live=""
[ -f "$outdir/spc_live.json" ] && live="--live $outdir/spc_live.json" # spc_live.py's run, when made
# shellcheck disable=SC2086
"$py" "$here/spc_report.py" "$outdir/spc_runs.jsonl.gz" --md "$outdir/spc.md" --png "$outdir/spc_anytime.png" $live
