#!/bin/bash
# run_load.sh: the load benchmark of issue 2, in one invocation.
#
#   tests/bench/run_load.sh [BUILD_DIR]        (default ./build; builds nothing)
#
# Starts a fresh banditd (temporary database, WAL, --sync normal) on a free port,
# runs bd_loadgen with 32 workers for ~20 s, repeats with a fresh daemon and
# --sync full, runs optuna_load.py (the same workload through Optuna 3.1 on SQLite),
# and prints a summary table with the ratio banditd/optuna.
#
# Environment (all optional): BENCH_WORKERS (32), BENCH_DURATION (20), BENCH_WARMUP (2),
# BENCH_LOG_LEVEL (warn: the per-request info log is not part of what is measured;
# set info to include it), BENCH_THREADS (passed as --threads when set),
# BENCH_OPTUNA_RUNS (threads:32,threads:1,processes:2,processes:2:wal; Optuna's
# figure is the best of them), BENCH_OPTUNA_DURATION (15),
# BENCH_OPTUNA_PRUNER (nop), BENCH_SKIP_OPTUNA=1, BENCH_TMPDIR (/tmp; must be on
# disk), BENCH_STRICT=1 (exit 3 when a target is missed), BENCH_KEEP=1 (keep the
# temporary directory with logs).
#
# Exit status: 0 done; 1 the daemon failed (did not start, died, or did not stop
# cleanly on SIGTERM) or bd_loadgen could not run; 2 some calls failed;
# 3 (BENCH_STRICT only) a target was missed.
set -u

BUILD=${1:-./build}
HERE=$(cd "$(dirname "$0")" && pwd)
BANDITD=$BUILD/banditd
LOADGEN=$BUILD/tests/bench/bd_loadgen
PY=/usr/bin/python3
WORKERS=${BENCH_WORKERS:-32}
DURATION=${BENCH_DURATION:-20}
WARMUP=${BENCH_WARMUP:-2}
LOG_LEVEL=${BENCH_LOG_LEVEL:-warn}
OPTUNA_RUNS=${BENCH_OPTUNA_RUNS:-threads:32,threads:1,processes:2,processes:2:wal}
OPTUNA_DURATION=${BENCH_OPTUNA_DURATION:-15}
OPTUNA_PRUNER=${BENCH_OPTUNA_PRUNER:-nop}
TARGET_CPS=5000
TARGET_RATIO=50

for f in "$BANDITD" "$LOADGEN"; do
    if [ ! -x "$f" ]; then
        echo "run_load.sh: $f not found; build first: cmake --build $BUILD" >&2
        exit 1
    fi
done

TMP=$(mktemp -d "${BENCH_TMPDIR:-/tmp}/bd-bench.XXXXXX")
if [ "$(stat -f -c %T "$TMP")" = tmpfs ]; then
    echo "run_load.sh: warning: $TMP is on tmpfs, so fsync costs nothing and --sync full measures nothing" \
        "(set BENCH_TMPDIR to a directory on disk)" >&2
fi
DAEMON_PID=
cleanup() {
    if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -TERM "$DAEMON_PID" 2>/dev/null
        sleep 1
        kill -KILL "$DAEMON_PID" 2>/dev/null
    fi
    if [ -n "${LOADGEN_PID:-}" ]; then kill -TERM "$LOADGEN_PID" 2>/dev/null; fi
    if [ -n "${OPTUNA_PID:-}" ]; then kill -TERM "$OPTUNA_PID" 2>/dev/null; fi
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        echo "run_load.sh: logs kept in $TMP" >&2
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# field KEY FILE [PREFIX]: the value of KEY= on the file's last line starting
# with PREFIX (default "RESULT "); a file name of "-" reads the line from $LINE.
field() {
    if [ "$2" = - ]; then
        printf '%s\n' "$LINE"
    else
        grep "^${3:-RESULT }" "$2" | tail -n 1
    fi | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# CPU ticks (user + system) used so far by a process.
cpu_ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

daemon_failed() {
    echo "run_load.sh: banditd ($1) $2; last log lines:" >&2
    tail -n 20 "$TMP/banditd-$1.log" >&2
    exit 1
}

# start_daemon SYNC: a fresh daemon on a new database; sets DAEMON_PID, PORT, DB.
start_daemon() {
    local sync=$1
    DB=$TMP/banditd-$sync.db
    PORT=$(free_port)
    local extra=()
    if [ -n "${BENCH_THREADS:-}" ]; then extra=(--threads "$BENCH_THREADS"); fi
    "$BANDITD" --listen "127.0.0.1:$PORT" --db "$DB" --sync "$sync" --log-level "$LOG_LEVEL" "${extra[@]}" \
        2>"$TMP/banditd-$sync.log" &
    DAEMON_PID=$!
    for _ in $(seq 100); do
        if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
            wait "$DAEMON_PID"
            daemon_failed "$sync" "exited during start (status $?)"
        fi
        if [ -s "$DB.admin-token" ] && curl -fsS -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    daemon_failed "$sync" "did not answer /healthz within 10 s"
}

stop_daemon() {
    local sync=$1 status
    kill -TERM "$DAEMON_PID"
    for _ in $(seq 100); do
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -KILL "$DAEMON_PID"
        DAEMON_PID=
        daemon_failed "$sync" "did not stop within 10 s of SIGTERM"
    fi
    wait "$DAEMON_PID"
    status=$?
    DAEMON_PID=
    [ "$status" -eq 0 ] || daemon_failed "$sync" "exited with status $status after SIGTERM"
}

LOADGEN_FAILED=0
# bench SYNC: one daemon, one bd_loadgen run; output in $TMP/loadgen-SYNC.out.
bench() {
    local sync=$1 rc t0 t1 c0 c1 hz
    echo "=== banditd --sync $sync: $WORKERS workers, ${DURATION} s (+${WARMUP} s warm-up)"
    start_daemon "$sync"
    hz=$(getconf CLK_TCK)
    c0=$(cpu_ticks "$DAEMON_PID")
    t0=$(date +%s.%N)
    "$LOADGEN" --url "127.0.0.1:$PORT" --token-file "$DB.admin-token" --workers "$WORKERS" \
        --duration "$DURATION" --warmup "$WARMUP" >"$TMP/loadgen-$sync.out" &
    LOADGEN_PID=$!
    wait "$LOADGEN_PID"
    rc=$?
    LOADGEN_PID=
    t1=$(date +%s.%N)
    c1=$(cpu_ticks "$DAEMON_PID")
    cat "$TMP/loadgen-$sync.out"
    awk -v c="$((c1 - c0))" -v hz="$hz" -v t0="$t0" -v t1="$t1" \
        'BEGIN { printf "daemon cpu     %.1f s over %.1f s (%.0f%% of one core)\n", c / hz, t1 - t0, 100 * c / hz / (t1 - t0) }'
    ls -l "$DB" "$DB-wal" 2>/dev/null | awk '{ printf "database       %s %s bytes\n", $NF, $5 }'
    kill -0 "$DAEMON_PID" 2>/dev/null || { wait "$DAEMON_PID"; daemon_failed "$sync" "died under load (status $?)"; }
    stop_daemon "$sync"
    case $rc in
    0) ;;
    1) LOADGEN_FAILED=1 ;;
    *) echo "run_load.sh: bd_loadgen could not run (status $rc)" >&2; exit 1 ;;
    esac
    echo
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
bench normal
bench full

if [ "${BENCH_SKIP_OPTUNA:-0}" != 1 ]; then
    echo "=== optuna: $OPTUNA_RUNS, ${OPTUNA_DURATION} s each, pruner $OPTUNA_PRUNER"
    "$PY" "$HERE/optuna_load.py" --runs "$OPTUNA_RUNS" --duration "$OPTUNA_DURATION" --warmup "$WARMUP" \
        --pruner "$OPTUNA_PRUNER" >"$TMP/optuna.out" 2>"$TMP/optuna.err" &
    OPTUNA_PID=$!
    wait "$OPTUNA_PID"
    orc=$?
    OPTUNA_PID=
    cat "$TMP/optuna.out"
    if [ "$orc" -ne 0 ]; then
        echo "run_load.sh: optuna_load.py failed (status $orc):" >&2
        tail -n 20 "$TMP/optuna.err" >&2
    fi
    echo
fi

# ---- summary ----
MISSED=0
row() {
    printf '%-38s %10s %9s %9s %9s %7s\n' "$1" "$(field calls_per_s "$2")" "$(field trials_per_s "$2")" \
        "$(field p50_ms "$2")" "$(field p99_ms "$2")" "$(field errors "$2")"
}
echo "=== summary ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $WORKERS workers;" \
    "load average before $LOAD_BEFORE, after $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-38s %10s %9s %9s %9s %7s\n' "" "calls/s" "trials/s" "p50 ms" "p99 ms" "errors"
row "banditd --sync normal (WAL)" "$TMP/loadgen-normal.out"
row "banditd --sync full (WAL)" "$TMP/loadgen-full.out"
OCPS=
if [ -f "$TMP/optuna.out" ] && grep -q '^RESULT ' "$TMP/optuna.out"; then
    OCPS=$(field calls_per_s "$TMP/optuna.out")
    while IFS= read -r LINE; do
        name="optuna $(field mode -):$(field workers -)"
        [ "$(field journal -)" = wal ] && name="$name WAL/NORMAL"
        [ "$(field calls_per_s -)" = "$OCPS" ] && name="$name (best)"
        row "$name" -
    done < <(grep '^RUN ' "$TMP/optuna.out")
fi
# Two Optuna baselines: the same workload (as many threads as banditd has
# workers, Optuna's default SQLite storage), and the best Optuna configuration
# tried (fewer workers, WAL), which is the harder comparison.
SAME=
if [ -f "$TMP/optuna.out" ]; then
    SAME=$(grep '^RUN ' "$TMP/optuna.out" | grep " mode=threads workers=$WORKERS journal=default" |
           sed 's/.*calls_per_s=\([0-9.]*\).*/\1/' | head -n 1)
fi
verdict() {
    awk -v c="$1" -v o="${2:-0}" -v tc=$TARGET_CPS -v tr=$TARGET_RATIO 'BEGIN {
        ok = (c >= tc); ratio = "n/a"; want = "";
        if (o > 0) { r = c / o; ok = ok && (r >= tr); ratio = sprintf("%.1fx", r); want = sprintf(", >= %dx Optuna", tr) }
        word = ok ? "PASS" : "MISS";
        printf("ratio %s, %s (targets: >= %d calls/s%s)", ratio, word, tc, want);
        exit(ok ? 0 : 1) }'
}
for sync in normal full; do
    cps=$(field calls_per_s "$TMP/loadgen-$sync.out")
    if [ -n "$SAME" ]; then
        v=$(verdict "$cps" "$SAME") || MISSED=1
        printf 'banditd/optuna --sync %-6s vs the same workload (%s threads): %s\n' "$sync" "$WORKERS" "$v"
    fi
    v=$(verdict "$cps" "$OCPS") || MISSED=1
    printf 'banditd/optuna --sync %-6s vs Optuna'"'"'s best configuration:    %s\n' "$sync" "$v"
done

[ "$LOADGEN_FAILED" = 0 ] || { echo "run_load.sh: some calls failed (see 'error' lines above)" >&2; exit 2; }
if [ "${BENCH_STRICT:-0}" = 1 ] && [ "$MISSED" = 1 ]; then exit 3; fi
exit 0
