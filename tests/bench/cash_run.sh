#!/bin/sh
# CASH replay benchmark (README-cash.md): four cash_replay.py processes in
# parallel (joint gp_ucb, the slowest, in the nearest form and in the
# shuffle form, each against its own daemon; the rising_bandits, uniform,
# random and oracle-arm runs against a third; Optuna TPE, which needs no
# daemon), then the report.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
py=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

datasets=${CASH_DATASETS:-all}
seeds=${CASH_SEEDS:-0-19}
trials=${CASH_TRIALS:-200,500}
outdir=${CASH_OUT:-$here/results}

if [ ! -x "$build/banditd" ]; then
    echo "cash_run.sh: no $build/banditd; build it first (README-cash.md)" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bd-cash-run.XXXXXX") # kept when a side fails: the partial runs are there
mkdir -p "$outdir"

common="--datasets $datasets --seeds $seeds --trials $trials"
t0=$(date +%s)
# shellcheck disable=SC2086
"$py" "$here/cash_replay.py" --banditd "$build/banditd" $common --oracles nearest --methods gp_ucb \
    --out "$tmp/joint_n.jsonl" >"$tmp/joint_n.log" 2>&1 &
joint_n_pid=$!
# shellcheck disable=SC2086
"$py" "$here/cash_replay.py" --banditd "$build/banditd" $common --oracles shuffle --shuffle-methods gp_ucb \
    --out "$tmp/joint_s.jsonl" >"$tmp/joint_s.log" 2>&1 &
joint_s_pid=$!
# shellcheck disable=SC2086
"$py" "$here/cash_replay.py" $common --methods tpe --shuffle-methods tpe \
    --out "$tmp/tpe.jsonl" >"$tmp/tpe.log" 2>&1 &
tpe_pid=$!
# shellcheck disable=SC2086
"$py" "$here/cash_replay.py" --banditd "$build/banditd" $common \
    --methods rb_gp,rb_random,uniform,random,oracle_arm --shuffle-methods rb_random,uniform_random,random,oracle_arm \
    --out "$tmp/bandits.jsonl"
status=0
for pid in $joint_n_pid $joint_s_pid $tpe_pid; do
    if ! wait "$pid"; then
        status=1
    fi
done
if [ "$status" -ne 0 ]; then
    echo "cash_run.sh: a parallel side failed (partial runs in $tmp):" >&2
    tail -5 "$tmp/joint_n.log" "$tmp/joint_s.log" "$tmp/tpe.log" >&2
    exit 1
fi
cat "$tmp/bandits.jsonl" "$tmp/joint_n.jsonl" "$tmp/joint_s.jsonl" "$tmp/tpe.jsonl" | gzip -n >"$outdir/cash_runs.jsonl.gz"
rm -rf "$tmp"
"$py" "$here/cash_report.py" "$outdir/cash_runs.jsonl.gz" --md "$outdir/cash.md" --png "$outdir/cash_anytime.png" >/dev/null
echo "cash_run.sh: $(($(date +%s) - t0)) s; tables in $outdir/cash.md, plot $outdir/cash_anytime.png" >&2
