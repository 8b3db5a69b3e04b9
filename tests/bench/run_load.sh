#!/bin/bash
# run_load.sh: the load benchmark of issue 2, in one invocation.
#
#   tests/bench/run_load.sh [BUILD_DIR]        (default ./build; builds nothing)
#
# Starts a fresh banditd (temporary database, WAL, --sync normal) on a free port,
# runs bd_loadgen with 32 workers for ~20 s, repeats with a fresh daemon and
# --sync full, runs optuna_load.py (the same workload through Optuna 3.1 on SQLite),
# then does all of it again with the 32 workers spread round-robin over 8 studies,
# and prints a summary table with the ratio banditd/optuna, the slow-call
# diagnostics, and the figures as a Markdown table for a dated file under
# tests/bench/results/ (the current headline goes to tests/bench/README.md).
#
# Environment (all optional): BENCH_WORKERS (32), BENCH_DURATION (20), BENCH_WARMUP (2),
# BENCH_STUDIES ("1 8": the variants run, each a number of studies),
# BENCH_LOG_LEVEL (warn: the per-request info log is not part of what is measured;
# set info to include it), BENCH_THREADS (passed as --threads when set),
# BENCH_OPTUNA_RUNS (threads:32,threads:1,processes:2,processes:2:wal; Optuna's
# figure is the best of them), BENCH_OPTUNA_DURATION (15),
# BENCH_OPTUNA_PRUNER (nop), BENCH_SKIP_OPTUNA=1, BENCH_PIN=1 (the daemon on CPU 1 and
# bd_loadgen on CPU 0, with taskset: each has a core of its own), BENCH_FLOOR=1 (also run
# bd_http_floor, libmicrohttpd answering fixed JSON with no storage: the ceiling of any daemon
# on these cores under this load), BENCH_TMPDIR (/tmp; must be on
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
FLOOR=$BUILD/tests/bench/bd_http_floor
PY=/usr/bin/python3
WORKERS=${BENCH_WORKERS:-32}
DURATION=${BENCH_DURATION:-20}
WARMUP=${BENCH_WARMUP:-2}
LOG_LEVEL=${BENCH_LOG_LEVEL:-warn}
OPTUNA_RUNS=${BENCH_OPTUNA_RUNS:-threads:32,threads:1,processes:2,processes:2:wal}
OPTUNA_DURATION=${BENCH_OPTUNA_DURATION:-15}
OPTUNA_PRUNER=${BENCH_OPTUNA_PRUNER:-nop}
STUDIES_LIST=${BENCH_STUDIES:-1 8}
PIN_DAEMON=()
PIN_LOADGEN=()
if [ "${BENCH_PIN:-0}" = 1 ]; then
    PIN_DAEMON=(taskset -c 1)
    PIN_LOADGEN=(taskset -c 0)
fi
TARGET_CPS=5000
TARGET_RATIO=50

NEEDED=("$BANDITD" "$LOADGEN")
[ "${BENCH_FLOOR:-0}" = 1 ] && NEEDED+=("$FLOOR")
for f in "${NEEDED[@]}"; do
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

# free_port, field, cpu_ticks
. "$HERE/load_lib.sh"

daemon_failed() {
    echo "run_load.sh: banditd ($1) $2; last log lines:" >&2
    tail -n 20 "$TMP/banditd-$1.log" >&2
    exit 1
}

# start_daemon SYNC [STUDIES]: a fresh daemon on a new database; sets DAEMON_PID, PORT, DB.
start_daemon() {
    local sync=$1 label=$1-s${2:-1}
    DB=$TMP/banditd-$label.db
    PORT=$(free_port)
    local extra=()
    if [ -n "${BENCH_THREADS:-}" ]; then extra=(--threads "$BENCH_THREADS"); fi
    "${PIN_DAEMON[@]}" "$BANDITD" --listen "127.0.0.1:$PORT" --db "$DB" --sync "$sync" --log-level "$LOG_LEVEL" \
        "${extra[@]}" \
        2>"$TMP/banditd-$label.log" &
    DAEMON_PID=$!
    for _ in $(seq 100); do
        if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
            wait "$DAEMON_PID"
            daemon_failed "$label" "exited during start (status $?)"
        fi
        if [ -s "$DB.admin-token" ] && curl -fsS -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    daemon_failed "$label" "did not answer /healthz within 10 s"
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
# bench SYNC STUDIES: one daemon, one bd_loadgen run; output in $TMP/loadgen-SYNC-sSTUDIES.out.
bench() {
    local sync=$1 studies=$2 rc t0 t1 c0 c1 hz out
    out=$TMP/loadgen-$sync-s$studies.out
    echo "=== banditd --sync $sync: $WORKERS workers over $studies stud$([ "$studies" = 1 ] && echo y || echo ies)," \
        "${DURATION} s (+${WARMUP} s warm-up)"
    start_daemon "$sync" "$studies"
    hz=$(getconf CLK_TCK)
    c0=$(cpu_ticks "$DAEMON_PID")
    t0=$(date +%s.%N)
    "${PIN_LOADGEN[@]}" "$LOADGEN" --url "127.0.0.1:$PORT" --token-file "$DB.admin-token" --workers "$WORKERS" \
        --duration "$DURATION" --warmup "$WARMUP" --studies "$studies" >"$out" &
    LOADGEN_PID=$!
    wait "$LOADGEN_PID"
    rc=$?
    LOADGEN_PID=
    t1=$(date +%s.%N)
    c1=$(cpu_ticks "$DAEMON_PID")
    awk -v c="$((c1 - c0))" -v hz="$hz" -v t0="$t0" -v t1="$t1" \
        'BEGIN { printf "daemon cpu     %.1f s over %.1f s (%.0f%% of one core)\n", c / hz, t1 - t0, 100 * c / hz / (t1 - t0) }' >>"$out"
    cat "$out"
    ls -l "$DB" "$DB-wal" 2>/dev/null | awk '{ printf "database       %s %s bytes\n", $NF, $5 }'
    kill -0 "$DAEMON_PID" 2>/dev/null || { wait "$DAEMON_PID"; daemon_failed "$sync-s$studies" "died under load (status $?)"; }
    stop_daemon "$sync-s$studies"
    case $rc in
    0) ;;
    1) LOADGEN_FAILED=1 ;;
    *) echo "run_load.sh: bd_loadgen could not run (status $rc)" >&2; exit 1 ;;
    esac
    echo
}

# bench_floor STUDIES: bd_http_floor (pinned as the daemon is) under the same bd_loadgen
# run; output in $TMP/loadgen-floor-sSTUDIES.out.
bench_floor() {
    local studies=$1 rc out=$TMP/loadgen-floor-s$1.out
    echo "=== bd_http_floor (libmicrohttpd alone, fixed answers): $WORKERS workers, ${DURATION} s"
    PORT=$(free_port)
    "${PIN_DAEMON[@]}" "$FLOOR" --listen "127.0.0.1:$PORT" 2>"$TMP/banditd-floor.log" &
    DAEMON_PID=$!
    local up=0
    for _ in $(seq 100); do
        curl -fsS -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null && { up=1; break; }
        kill -0 "$DAEMON_PID" 2>/dev/null || daemon_failed floor "exited during start"
        sleep 0.1
    done
    [ "$up" = 1 ] || daemon_failed floor "did not answer /healthz within 10 s"
    "${PIN_LOADGEN[@]}" "$LOADGEN" --url "127.0.0.1:$PORT" --token floor --workers "$WORKERS" \
        --duration "$DURATION" --warmup "$WARMUP" --studies "$studies" >"$out"
    rc=$?
    cat "$out"
    stop_daemon floor
    [ "$rc" = 0 ] || LOADGEN_FAILED=1
    echo
}

# run_optuna STUDIES: optuna_load.py's runs; output in $TMP/optuna-sSTUDIES.out.
run_optuna() {
    local studies=$1 orc
    echo "=== optuna: $OPTUNA_RUNS, ${OPTUNA_DURATION} s each, pruner $OPTUNA_PRUNER, $studies stud$([ "$studies" = 1 ] && echo y || echo ies)"
    "$PY" "$HERE/optuna_load.py" --runs "$OPTUNA_RUNS" --duration "$OPTUNA_DURATION" --warmup "$WARMUP" \
        --pruner "$OPTUNA_PRUNER" --studies "$studies" >"$TMP/optuna-s$studies.out" 2>"$TMP/optuna-s$studies.err" &
    OPTUNA_PID=$!
    wait "$OPTUNA_PID"
    orc=$?
    OPTUNA_PID=
    cat "$TMP/optuna-s$studies.out"
    if [ "$orc" -ne 0 ]; then
        echo "run_load.sh: optuna_load.py failed (status $orc):" >&2
        tail -n 20 "$TMP/optuna-s$studies.err" >&2
    fi
    echo
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for studies in $STUDIES_LIST; do
    bench normal "$studies"
    bench full "$studies"
    [ "${BENCH_FLOOR:-0}" = 1 ] && bench_floor "$studies"
    [ "${BENCH_SKIP_OPTUNA:-0}" = 1 ] || run_optuna "$studies"
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- summary ----
MISSED=0
MD_ROWS=()
# suffix STUDIES: "" for one study (the names of the original table), else ", N studies".
suffix() { [ "$1" = 1 ] || printf ', %s studies' "$1"; }
row() {
    printf '%-48s %10s %9s %9s %9s %7s %9s\n' "$1" "$(field calls_per_s "$2")" "$(field trials_per_s "$2")" \
        "$(field p50_ms "$2")" "$(field p99_ms "$2")" "$(field errors "$2")" "$(field p999_ms "$2")"
    MD_ROWS+=("$3 | $(field calls_per_s "$2") | $(field trials_per_s "$2") | $(field p50_ms "$2") | $(field p99_ms "$2") | $(field errors "$2") | $(field p999_ms "$2")")
}
echo "=== summary ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $WORKERS workers;" \
    "load average before $LOAD_BEFORE, after $LOAD_AFTER)"
printf '%-48s %10s %9s %9s %9s %7s %9s\n' "" "calls/s" "trials/s" "p50 ms" "p99 ms" "errors" "p99.9 ms"
# Two Optuna baselines: the same workload (as many threads as banditd has
# workers, Optuna's default SQLite storage), and the best Optuna configuration
# tried (fewer workers, WAL), which is the harder comparison.
verdict() {
    awk -v c="$1" -v o="${2:-0}" -v tc=$TARGET_CPS -v tr=$TARGET_RATIO 'BEGIN {
        ok = (c >= tc); ratio = "n/a"; want = "";
        if (o > 0) { r = c / o; ok = ok && (r >= tr); ratio = sprintf("%.1fx", r); want = sprintf(", >= %dx Optuna", tr) }
        word = ok ? "PASS" : "MISS";
        printf("ratio %s, %s (targets: >= %d calls/s%s)", ratio, word, tc, want);
        exit(ok ? 0 : 1) }'
}
VERDICTS=()
for studies in $STUDIES_LIST; do
    sfx=$(suffix "$studies")
    nst="$studies stud$([ "$studies" = 1 ] && echo y || echo ies)"
    row "banditd --sync normal (WAL)$sfx" "$TMP/loadgen-normal-s$studies.out" "banditd --sync normal, $WORKERS workers, $nst"
    row "banditd --sync full (WAL)$sfx" "$TMP/loadgen-full-s$studies.out" "banditd --sync full, $WORKERS workers, $nst"
    ffile=$TMP/loadgen-floor-s$studies.out
    if [ -f "$ffile" ]; then
        row "libmicrohttpd alone (bd_http_floor)$sfx" "$ffile" "bd_http_floor (libmicrohttpd alone), $nst"
        for sync in normal full; do
            MD_ROWS+=("ratio $sync / libmicrohttpd alone, $nst | $(awk -v c="$(field calls_per_s "$TMP/loadgen-$sync-s$studies.out")" \
                -v f="$(field calls_per_s "$ffile")" 'BEGIN { printf "%.2f", c / f }') | | | | | ")
        done
    fi
    OCPS= SAME=
    ofile=$TMP/optuna-s$studies.out
    if [ -f "$ofile" ] && grep -q '^RESULT ' "$ofile"; then
        OCPS=$(field calls_per_s "$ofile")
        while IFS= read -r LINE; do
            name="optuna $(field mode -):$(field workers -)"
            [ "$(field journal -)" = wal ] && name="$name WAL/NORMAL"
            same=
            [ "$(field mode -)" = threads ] && [ "$(field workers -)" = "$WORKERS" ] && [ "$(field journal -)" = default ] &&
                same=" (the same workload)"
            [ "$(field calls_per_s -)" = "$OCPS" ] && name="$name (best)"
            row "$name$sfx" - "Optuna ${name#optuna }$same, $nst"
        done < <(grep '^RUN ' "$ofile")
        SAME=$(grep '^RUN ' "$ofile" | grep " mode=threads workers=$WORKERS journal=default" |
               sed 's/.*calls_per_s=\([0-9.]*\).*/\1/' | head -n 1)
    fi
    for sync in normal full; do
        cps=$(field calls_per_s "$TMP/loadgen-$sync-s$studies.out")
        if [ -n "$SAME" ]; then
            v=$(verdict "$cps" "$SAME") || MISSED=1
            VERDICTS+=("$(printf 'banditd/optuna --sync %-6s vs the same workload (%s threads)%s: %s' "$sync" "$WORKERS" "$sfx" "$v")")
            MD_ROWS+=("ratio $sync / same workload, $nst | $(awk -v c="$cps" -v o="$SAME" 'BEGIN { printf "%.1fx", c / o }') | | | | | ")
        fi
        v=$(verdict "$cps" "$OCPS") || MISSED=1
        VERDICTS+=("$(printf 'banditd/optuna --sync %-6s vs Optuna'"'"'s best configuration%s:    %s' "$sync" "$sfx" "$v")")
        if [ -n "$OCPS" ]; then
            MD_ROWS+=("ratio $sync / Optuna best, $nst | $(awk -v c="$cps" -v o="$OCPS" 'BEGIN { printf "%.1fx", c / o }') | | | | | ")
        fi
    done
done
printf '%s\n' "${VERDICTS[@]}"

# The tail: calls above 10 ms, and whether they come in a few stalls (the five
# worst 100-ms windows hold most of them: checkpoints, fsync, a long lock) or
# spread over the run (queueing behind the study's mutex or the commit).
echo
echo "=== tail (bd_loadgen: calls above 10 ms by 100-ms window)"
for studies in $STUDIES_LIST; do
    for sync in normal full; do
        f=$TMP/loadgen-$sync-s$studies.out
        printf '%-48s %s\n' "banditd --sync $sync$(suffix "$studies")" \
            "$(sed -n 's/^slow calls *//p' "$f"); $(sed -n 's/^daemon cpu *//p' "$f")"
    done
done

# The same figures as a Markdown table for tests/bench/results/.
echo
echo "=== Markdown (for a dated file tests/bench/results/YYYY-MM-DD-load.md; fill in the machine's disk and the source state if not shown)"
MACHINE="$(nproc)-core $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(df --output=fstype "$TMP" | tail -n 1)"
SOURCE="$(git -C "$HERE" log -1 --format='%h "%s"' 2>/dev/null | cut -c1-70)"
[ -n "$(git -C "$HERE" status --porcelain --untracked-files=no 2>/dev/null)" ] && SOURCE="$SOURCE + uncommitted changes"
echo "| date | machine | source | load avg before/after | config | calls/s | trials/s | p50 ms | p99 ms | errors | p99.9 ms |"
echo "|------|---------|--------|-----------------------|--------|---------|----------|--------|--------|--------|----------|"
first=1
for r in "${MD_ROWS[@]}"; do
    if [ "$first" = 1 ]; then
        echo "| $(date -u +%Y-%m-%d\ %H:%MZ) | $MACHINE | $SOURCE | ${LOAD_BEFORE%% *} / ${LOAD_AFTER%% *} | $r |"
        first=0
    else
        echo "| same | same | same | same run | $r |"
    fi
done
echo

[ "$LOADGEN_FAILED" = 0 ] || { echo "run_load.sh: some calls failed (see 'error' lines above)" >&2; exit 2; }
if [ "${BENCH_STRICT:-0}" = 1 ] && [ "$MISSED" = 1 ]; then exit 3; fi
exit 0
