#!/bin/bash
# run_load_pg.sh: the load benchmark of issue 2 on the stores of issue 16, in one run.
#
#   tests/bench/run_load_pg.sh [BUILD_DIR]        (default ./build; builds nothing)
#
# The same bd_loadgen workload (32 workers, suggest -> 3 measurements -> complete,
# random search) against, one after the other and each on a fresh database:
#   sqlite       one banditd on SQLite, --sync normal (run_load.sh's first row);
#   pg1          one banditd on PostgreSQL;
#   pg1-haproxy  the same behind haproxy, so the proxy's own cost is a row of its own;
#   pg1-cluster  one banditd in cluster mode (--advertise-url): a cluster of one, so the cost
#                of the ownership lease and its fence on every request is a row of its own;
#   pg2          two banditd on one PostgreSQL database (--advertise-url, a study owned by
#                one daemon under a --ownership-lease-seconds lease; a non-owner forwards)
#                behind haproxy balancing round-robin per request, so about half the calls
#                reach the daemon that does not own the study (and move it: i16-own's contract);
#   pg2-direct   the same two daemons with no proxy: bd_loadgen --via sends the workers of
#                study j to daemon j mod 2, so each study stays on one daemon (the round-robin
#                in the load generator, by study).
#   pg1-cluster-haproxy  one cluster daemon behind haproxy: what pg3 is compared with (issue 42);
#   pg3          three cluster daemons behind haproxy balancing round-robin per request (issue 42);
#   pg3-sticky   the same three, haproxy sticky per client connection (a stick table on the
#                client's source port: each bd_loadgen worker keeps one connection, so it stays
#                on one daemon; a study's workers are spread over the three).
# Each configuration runs once per BENCH_STUDIES variant ("1 8": the workers on one study,
# then round-robin over 8). Prints calls/s, trials/s, p50/p99/p99.9 and the CPU of the
# daemons and of haproxy per configuration, and the same as a Markdown table.
#
# PostgreSQL: the server of BENCH_PG_URL (a libpq URL whose user may CREATE DATABASE), else
# that of BD_TEST_PG_URL, else the script runs itself again inside a throwaway cluster
# (tests/pgcluster.sh: fsync off, so PostgreSQL's commits cost no disk flush, like SQLite's
# --sync normal, which does not fsync on commit either). Every configuration gets a new
# database (CREATE DATABASE bd_load_<pid>_<n>), dropped after its run.
#
# haproxy (Debian's haproxy 2.6) gets a config written here, not docker/haproxy.cfg: that one
# names compose's containers through Docker's DNS and makes the second daemon a backup
# (active/standby), which would measure one daemon. The timeouts and health checks are the
# same as there; `balance roundrobin` and no backup is the difference.
#
# Environment (all optional): BENCH_WORKERS (32), BENCH_DURATION (20), BENCH_WARMUP (2),
# BENCH_STUDIES ("1 8"), BENCH_CONFIGS ("sqlite pg1 pg1-haproxy pg1-cluster pg2 pg2-direct"; also
# pg1-cluster-haproxy pg3 pg3-sticky), BENCH_LOG_LEVEL (warn),
# BENCH_OWNERSHIP_LEASE (2: --ownership-lease-seconds of the pg2 daemons), BENCH_HAPROXY_BALANCE
# (roundrobin: haproxy's balance algorithm, e.g. "first" sends everything to the first daemon
# while it is up), BENCH_PG_URL,
# BENCH_TMPDIR (/tmp; the SQLite database goes there: on disk, not tmpfs), BENCH_KEEP=1 (keep
# the logs).
#
# Exit status: 0 done; 1 a daemon, haproxy or PostgreSQL failed (did not start, died, did not
# stop cleanly on SIGTERM) or bd_loadgen could not run; 2 some calls failed; 4 a
# configuration could not run (pg2 with a banditd that has no --advertise-url): its row says so.
set -u

BUILD=${1:-./build}
HERE=$(cd "$(dirname "$0")" && pwd)
SOURCE=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
. "$HERE/load_lib.sh"

if [ -z "${BENCH_PG_URL:-}" ] && [ -z "${BD_TEST_PG_URL:-}" ]; then
    exec "$SOURCE/tests/pgcluster.sh" "$0" "$@"
fi
PG_URL=${BENCH_PG_URL:-$BD_TEST_PG_URL}

BANDITD=$(cd "$(dirname "$BUILD/banditd")" 2>/dev/null && pwd)/banditd
LOADGEN=$BUILD/tests/bench/bd_loadgen
WORKERS=${BENCH_WORKERS:-32}
DURATION=${BENCH_DURATION:-20}
WARMUP=${BENCH_WARMUP:-2}
LOG_LEVEL=${BENCH_LOG_LEVEL:-warn}
STUDIES_LIST=${BENCH_STUDIES:-1 8}
CONFIGS=${BENCH_CONFIGS:-sqlite pg1 pg1-haproxy pg1-cluster pg2 pg2-direct}
OWN_LEASE=${BENCH_OWNERSHIP_LEASE:-2}
BALANCE=${BENCH_HAPROXY_BALANCE:-roundrobin}
PSQL=${BD_PG_BIN:-/usr/lib/postgresql/15/bin}/psql
[ -x "$PSQL" ] || PSQL=$(command -v psql)

for f in "$BANDITD" "$LOADGEN" "$PSQL"; do
    if [ ! -x "$f" ]; then
        echo "run_load_pg.sh: $f not found (build first: cmake --build $BUILD; psql: postgresql-15)" >&2
        exit 1
    fi
done
for c in $CONFIGS; do
    case $c in
    sqlite | pg1 | pg1-cluster | pg2-direct) ;;
    pg1-haproxy | pg2 | pg1-cluster-haproxy | pg3 | pg3-sticky) command -v haproxy >/dev/null || { echo "run_load_pg.sh: $c needs haproxy" >&2; exit 1; } ;;
    *) echo "run_load_pg.sh: unknown configuration $c in BENCH_CONFIGS" >&2; exit 1 ;;
    esac
done

TMP=$(mktemp -d "${BENCH_TMPDIR:-/tmp}/bd-loadpg.XXXXXX")
PIDS=()     # every banditd and haproxy running now
PG_DBS=()   # databases to drop at the end
cleanup() {
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    [ -n "${LOADGEN_PID:-}" ] && kill -TERM "$LOADGEN_PID" 2>/dev/null
    for db in "${PG_DBS[@]}"; do "$PSQL" -X -q -d "$PG_URL" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1; done
    if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "run_load_pg.sh: logs kept in $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The admin token of every PostgreSQL database (a new database reads it from this file).
TOKEN_FILE=$TMP/admin-token
(umask 077 && printf 'bdt_1_%s\n' "$(od -An -vtx1 -N32 /dev/urandom | tr -d ' \n')" >"$TOKEN_FILE")

failed() {
    echo "run_load_pg.sh: $1; last log lines of $2:" >&2
    tail -n 20 $2 >&2  # unquoted: a glob for several daemons' logs (TMP has no spaces)
    exit 1
}

# pg_new_db: creates a new database on PG_URL's server; sets PG_DB to its URL
# (not printed: a subshell would lose the count and the list to drop).
N_DB=0
pg_new_db() {
    N_DB=$((N_DB + 1))
    local name=bd_load_$$_$N_DB
    "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$PG_URL" -c "CREATE DATABASE $name" >/dev/null || exit 1
    PG_DBS+=("$name")
    PG_DB=$("$PY" -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit((p.scheme, p.netloc, "/" + sys.argv[2], p.query, p.fragment)))' \
        "$PG_URL" "$name")
}

# start_banditd LABEL PORT DB [ARG...]: starts a daemon, waits for GET /healthz; sets LAST_PID.
start_banditd() {
    local label=$1 port=$2 db=$3 log=$TMP/banditd-$1.log
    shift 3
    "$BANDITD" --listen "127.0.0.1:$port" --db "$db" --log-level "$LOG_LEVEL" "$@" 2>"$log" &
    LAST_PID=$!
    PIDS+=("$LAST_PID")
    for _ in $(seq 150); do
        kill -0 "$LAST_PID" 2>/dev/null || failed "banditd $label exited during start" "$log"
        curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && return 0
        sleep 0.1
    done
    failed "banditd $label did not answer /healthz within 15 s" "$log"
}

# start_haproxy LABEL PORT BACKEND_PORT...: round-robin over the backends; sets LAST_PID.
start_haproxy() {
    local label=$1 port=$2 cfg=$TMP/haproxy-$1.cfg log=$TMP/haproxy-$1.log i=0 ok=0
    shift 2
    {
        echo "# written by run_load_pg.sh; timeouts and checks as docker/haproxy.cfg, no request log"
        echo "global"
        echo "    maxconn 4096"
        echo "defaults"
        echo "    mode http"
        echo "    timeout connect 5s"
        echo "    timeout client 120s"
        echo "    timeout server 120s"
        echo "    timeout http-request 10s"
        echo "    retries 2"
        echo "    option redispatch"
        echo "frontend banditd"
        echo "    bind 127.0.0.1:$port"
        echo "    default_backend banditd"
        echo "backend banditd"
        echo "    balance $BALANCE"
        if [ "${STICKY:-0}" = 1 ]; then
            echo "    stick-table type integer size 100k expire 10m"
            echo "    stick on src_port"
        fi
        echo "    option httpchk"
        echo "    http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host banditd"
        echo "    http-check expect status 200"
        echo "    default-server check inter 2s fall 3 rise 2"
        for p in "$@"; do
            i=$((i + 1))
            echo "    server banditd-$i 127.0.0.1:$p"
        done
    } >"$cfg"
    haproxy -c -q -f "$cfg" >"$log" 2>&1 || failed "haproxy rejects $cfg" "$log"
    haproxy -db -f "$cfg" >>"$log" 2>&1 &
    LAST_PID=$!
    PIDS+=("$LAST_PID")
    # Ready when /healthz through it answers 200 several times in a row (every backend in turn).
    for _ in $(seq 150); do
        kill -0 "$LAST_PID" 2>/dev/null || failed "haproxy $label exited during start" "$log"
        if curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null; then
            ok=$((ok + 1))
            [ "$ok" -ge $((2 * $#)) ] && return 0
        else
            ok=0
        fi
        sleep 0.1
    done
    failed "haproxy $label did not pass /healthz within 15 s" "$log"
}

# stop_all LABEL: SIGTERM to every daemon and haproxy; a daemon must exit 0 within 10 s.
stop_all() {
    local p st
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$p" 2>/dev/null; then
            kill -KILL "$p"
            PIDS=()
            failed "process $p ($1) did not stop within 10 s of SIGTERM" "$TMP/banditd-$1*.log"
        fi
        wait "$p"
        st=$?
        # haproxy exits 0 or 143 on SIGTERM, depending on the version: only the daemons must exit 0.
        if [ "$st" -ne 0 ] && grep -qx "$p" "$TMP/daemons" 2>/dev/null; then
            PIDS=()
            failed "banditd $p ($1) exited with status $st after SIGTERM" "$TMP/banditd-$1*.log"
        fi
    done
    PIDS=()
    : >"$TMP/daemons"
}

LOADGEN_FAILED=0
NOT_RUN=0
# bench CONFIG STUDIES: starts CONFIG, runs bd_loadgen on it, stops it; output in $TMP/loadgen-CONFIG-sSTUDIES.out.
bench() {
    local config=$1 studies=$2 label=$1-s$2 out=$TMP/loadgen-$1-s$2.out
    local url token db pa pb pc hp daemons=() proxy= via=() rc t0 t1 hz c0 c1 h0 h1 p
    : >"$TMP/daemons"
    echo "=== $config: $WORKERS workers over $studies stud$([ "$studies" = 1 ] && echo y || echo ies)," \
        "${DURATION} s (+${WARMUP} s warm-up)"
    case $config in
    sqlite)
        db=$TMP/banditd-$label.db
        pa=$(free_port)
        start_banditd "$label" "$pa" "$db" --sync normal
        daemons=("$LAST_PID")
        url=127.0.0.1:$pa token=$db.admin-token
        ;;
    pg1 | pg1-haproxy)
        pg_new_db
        db=$PG_DB
        pa=$(free_port)
        start_banditd "$label" "$pa" "$db" --admin-token-file "$TOKEN_FILE"
        daemons=("$LAST_PID")
        url=127.0.0.1:$pa token=$TOKEN_FILE
        if [ "$config" = pg1-haproxy ]; then
            hp=$(free_port)
            start_haproxy "$label" "$hp" "$pa"
            proxy=$LAST_PID url=127.0.0.1:$hp
        fi
        ;;
    pg1-cluster | pg2 | pg2-direct | pg1-cluster-haproxy | pg3 | pg3-sticky)
        if ! "$BANDITD" --help 2>&1 | grep -q -- '--advertise-url'; then
            echo "not run: $BANDITD has no --advertise-url (multi-daemon clusters, branch i16-own)" | tee "$out"
            NOT_RUN=1
            echo
            return 0
        fi
        pg_new_db
        db=$PG_DB
        pa=$(free_port) pb=$(free_port) hp=$(free_port)
        start_banditd "$label-a" "$pa" "$db" --admin-token-file "$TOKEN_FILE" \
            --advertise-url "http://127.0.0.1:$pa" --ownership-lease-seconds "$OWN_LEASE"
        daemons+=("$LAST_PID")
        token=$TOKEN_FILE url=127.0.0.1:$pa
        if [ "$config" != pg1-cluster ] && [ "$config" != pg1-cluster-haproxy ]; then
            start_banditd "$label-b" "$pb" "$db" --admin-token-file "$TOKEN_FILE" \
                --advertise-url "http://127.0.0.1:$pb" --ownership-lease-seconds "$OWN_LEASE"
            daemons+=("$LAST_PID")
        fi
        if [ "$config" = pg3 ] || [ "$config" = pg3-sticky ]; then
            pc=$(free_port)
            start_banditd "$label-c" "$pc" "$db" --admin-token-file "$TOKEN_FILE" \
                --advertise-url "http://127.0.0.1:$pc" --ownership-lease-seconds "$OWN_LEASE"
            daemons+=("$LAST_PID")
        fi
        if [ "$config" = pg2 ]; then
            start_haproxy "$label" "$hp" "$pa" "$pb"
            proxy=$LAST_PID url=127.0.0.1:$hp
        elif [ "$config" = pg1-cluster-haproxy ]; then
            start_haproxy "$label" "$hp" "$pa"
            proxy=$LAST_PID url=127.0.0.1:$hp
        elif [ "$config" = pg3 ]; then
            start_haproxy "$label" "$hp" "$pa" "$pb" "$pc"
            proxy=$LAST_PID url=127.0.0.1:$hp
        elif [ "$config" = pg3-sticky ]; then
            STICKY=1 start_haproxy "$label" "$hp" "$pa" "$pb" "$pc"
            proxy=$LAST_PID url=127.0.0.1:$hp
        elif [ "$config" = pg2-direct ]; then
            via=(--via "127.0.0.1:$pa,127.0.0.1:$pb")
        fi
        ;;
    esac
    printf '%s\n' "${daemons[@]}" >"$TMP/daemons"
    hz=$(getconf CLK_TCK)
    c0=0 h0=0
    for p in "${daemons[@]}"; do c0=$((c0 + $(cpu_ticks "$p"))); done
    [ -n "$proxy" ] && h0=$(cpu_ticks "$proxy")
    t0=$(date +%s.%N)
    "$LOADGEN" --url "$url" --token-file "$token" --workers "$WORKERS" --duration "$DURATION" \
        --warmup "$WARMUP" --studies "$studies" "${via[@]}" >"$out" &
    LOADGEN_PID=$!
    wait "$LOADGEN_PID"
    rc=$?
    LOADGEN_PID=
    t1=$(date +%s.%N)
    c1=0 h1=0
    for p in "${daemons[@]}"; do c1=$((c1 + $(cpu_ticks "$p"))); done
    [ -n "$proxy" ] && h1=$(cpu_ticks "$proxy")
    awk -v c="$((c1 - c0))" -v h="$((h1 - h0))" -v n="${#daemons[@]}" -v hz="$hz" -v t0="$t0" -v t1="$t1" 'BEGIN {
        printf "daemon cpu     %.1f s over %.1f s (%.0f%% of one core, %d daemon(s))\n", c / hz, t1 - t0, 100 * c / hz / (t1 - t0), n
        printf "CPU daemons=%.0f haproxy=%.0f\n", 100 * c / hz / (t1 - t0), 100 * h / hz / (t1 - t0) }' >>"$out"
    cat "$out"
    for p in "${daemons[@]}"; do
        kill -0 "$p" 2>/dev/null || failed "banditd $p died under load" "$TMP/banditd-$label*.log"
    done
    stop_all "$label"
    case $rc in
    0) ;;
    1) LOADGEN_FAILED=1 ;;
    *) echo "run_load_pg.sh: bd_loadgen could not run (status $rc)" >&2; exit 1 ;;
    esac
    echo
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for studies in $STUDIES_LIST; do
    for config in $CONFIGS; do
        bench "$config" "$studies"
    done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- summary ----
describe() {
    case $1 in
    sqlite) echo "SQLite, 1 daemon, --sync normal" ;;
    pg1) echo "PostgreSQL, 1 daemon" ;;
    pg1-haproxy) echo "PostgreSQL, 1 daemon, haproxy" ;;
    pg1-cluster) echo "PostgreSQL, 1 daemon in cluster mode" ;;
    pg2) echo "PostgreSQL, 2 daemons, haproxy $BALANCE" ;;
    pg2-direct) echo "PostgreSQL, 2 daemons, a study's workers on one" ;;
    pg1-cluster-haproxy) echo "PostgreSQL, 1 cluster daemon, haproxy" ;;
    pg3) echo "PostgreSQL, 3 cluster daemons, haproxy $BALANCE" ;;
    pg3-sticky) echo "PostgreSQL, 3 cluster daemons, haproxy sticky per connection" ;;
    esac
}
echo "=== summary ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $WORKERS workers;" \
    "load average before $LOAD_BEFORE, after $LOAD_AFTER; PostgreSQL ${PG_URL%%@*}@...)"
HEAD=$(printf '%-58s %9s %9s %8s %8s %7s %9s %8s %8s' "" "calls/s" "trials/s" "p50 ms" "p99 ms" "errors" \
    "p99.9 ms" "cpu bd%" "cpu hap%")
echo "$HEAD"
MD_ROWS=()
for studies in $STUDIES_LIST; do
    for config in $CONFIGS; do
        f=$TMP/loadgen-$config-s$studies.out
        name="$(describe "$config"), $studies stud$([ "$studies" = 1 ] && echo y || echo ies)"
        if ! grep -q '^RESULT ' "$f" 2>/dev/null; then
            printf '%-58s %s\n' "$name" "$(head -n 1 "$f" 2>/dev/null)"
            MD_ROWS+=("$name | $(head -n 1 "$f" 2>/dev/null) | | | | | | | ")
            continue
        fi
        printf '%-58s %9s %9s %8s %8s %7s %9s %8s %8s\n' "$name" "$(field calls_per_s "$f")" "$(field trials_per_s "$f")" \
            "$(field p50_ms "$f")" "$(field p99_ms "$f")" "$(field errors "$f")" "$(field p999_ms "$f")" \
            "$(field daemons "$f" 'CPU ')" "$(field haproxy "$f" 'CPU ')"
        MD_ROWS+=("$name | $(field calls_per_s "$f") | $(field trials_per_s "$f") | $(field p50_ms "$f") | $(field p99_ms "$f") | $(field errors "$f") | $(field p999_ms "$f") | $(field daemons "$f" 'CPU ') | $(field haproxy "$f" 'CPU ')")
    done
done

echo
echo "=== Markdown (for a dated file tests/bench/results/YYYY-MM-DD-<topic>.md; the current headline goes to tests/bench/README.md)"
MACHINE="$(nproc)-core $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(df --output=fstype "$TMP" | tail -n 1)"
SRC="$(git -C "$HERE" log -1 --format='%h "%s"' 2>/dev/null | cut -c1-70)"
[ -n "$(git -C "$HERE" status --porcelain --untracked-files=no 2>/dev/null)" ] && SRC="$SRC + uncommitted changes"
echo "| date | machine | source | load avg before/after | config | calls/s | trials/s | p50 ms | p99 ms | errors | p99.9 ms | daemons' CPU % | haproxy CPU % |"
echo "|------|---------|--------|-----------------------|--------|---------|----------|--------|--------|--------|----------|----------------|---------------|"
first=1
for r in "${MD_ROWS[@]}"; do
    if [ "$first" = 1 ]; then
        echo "| $(date -u +%Y-%m-%d\ %H:%MZ) | $MACHINE | $SRC | ${LOAD_BEFORE%% *} / ${LOAD_AFTER%% *} | $r |"
        first=0
    else
        echo "| same | same | same | same run | $r |"
    fi
done
echo

[ "$LOADGEN_FAILED" = 0 ] || { echo "run_load_pg.sh: some calls failed (see 'error' lines above)" >&2; exit 2; }
[ "$NOT_RUN" = 0 ] || exit 4
exit 0
