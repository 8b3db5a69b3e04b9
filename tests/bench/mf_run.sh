#!/bin/sh
# Issue 14's benchmark (README-mf.md): every method on every learning-curve
# table, 20 seeds, W = 1 and 4, on bobos_replay.py's simulated clock; three
# processes at once (Optuna's methods, banditd's fast ones, banditd's GP
# ones, one daemon each), then mf_report.py.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
py=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

tables=${MF_TABLES:-sgd_fashion_mnist,mlp_digits,fmnist_mlp,fmnist_mlp2}
seeds=${MF_SEEDS:-0-19}
workers=${MF_WORKERS:-1,4}
outdir=${MF_OUT:-$here/results}
optuna=${MF_OPTUNA-tpe,tpe_hyperband,tpe_median}
fast=${MF_FAST-random,bd_tpe,bd_tpe_nocost,bd_tpe_mv,hyperband,bohb,bohb_nocost,asha,asha_tpe,asha_tpe_nocost,asha_hb,asha_pred,asha_rel,asha_cur_rel,asha_floor,asha_learned}
gp=${MF_GP-gp_ucb,gp_logei,bo_bos,bo_bos_logei}

if [ ! -x "$build/banditd" ]; then
    echo "mf_run.sh: no $build/banditd; build it first (README-mf.md)" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bd-mf-run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$outdir"
# the daemon binary is copied so that a rebuild during the run changes nothing
cp "$build/banditd" "$tmp/banditd"

run() { # name methods [--banditd]
    name=$1
    shift
    "$py" "$here/bobos_replay.py" "$@" --tables "$tables" --seeds "$seeds" --workers "$workers" \
        --out "$tmp/$name.jsonl" >"$tmp/$name.log" 2>&1
}

t0=$(date +%s)
pids=""
[ -n "$optuna" ] && { run optuna --methods "$optuna" & pids="$pids $!"; }
[ -n "$fast" ] && { run fast --methods "$fast" --banditd "$tmp/banditd" & pids="$pids $!"; }
[ -n "$gp" ] && { run gp --methods "$gp" --banditd "$tmp/banditd" & pids="$pids $!"; }
failed=0
for p in $pids; do
    wait "$p" || failed=1
done
if [ "$failed" = 1 ]; then
    tail -20 "$tmp"/*.log >&2
    echo "mf_run.sh: a replay failed" >&2
    exit 1
fi
cat "$tmp"/*.jsonl | gzip -n >"$outdir/mf_runs.jsonl.gz"
gunzip -c "$outdir/mf_runs.jsonl.gz" >"$tmp/all.jsonl"
"$py" "$here/mf_report.py" "$tmp/all.jsonl" --md "$outdir/mf.md" --png "$outdir/mf_anytime.png"
echo "mf_run.sh: $(($(date +%s) - t0)) s; tables in $outdir/mf.md, plot $outdir/mf_anytime.png" >&2
