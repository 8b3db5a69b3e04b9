#!/bin/sh
# verify-cluster-local.sh: compose profile pg's topology without Docker
# (docker/README.md "PostgreSQL and three daemons"): three daemons in cluster
# mode on one database of a throwaway PostgreSQL (tests/pgcluster.sh) behind
# haproxy running docker/haproxy.cfg itself, with only the three server
# lines' names replaced by local ports and Docker's resolvers dropped. Then
# the unchanged clients drive it through haproxy's round robin: bdctl makes
# a study, clients/examples/bdctl_loop.sh runs it to the end (suggest,
# report, complete: each request to the next daemon), bdctl lists, shows and
# exports it, and the Python client (banditd.Client) makes and finishes a
# second study. Fails on any error; prints what each daemon served.
#   docker/verify-cluster-local.sh [BUILD_DIR]     (default ./build)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=$(cd "${1:-./build}" && pwd)
if [ -z "${BD_TEST_PG_URL:-}" ]; then
  exec "$ROOT/tests/pgcluster.sh" "$0" "$BUILD"
fi
command -v haproxy >/dev/null || { echo "verify-cluster-local.sh: needs haproxy (install-deps.sh --bench)" >&2; exit 1; }
TMP=$(mktemp -d /tmp/bd-verify-cluster.XXXXXX)
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null || true; done; sleep 1; rm -rf "$TMP"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
psql=/usr/lib/postgresql/15/bin/psql
$psql -X -q -d "$BD_TEST_PG_URL" -c "CREATE DATABASE bd_verify" >/dev/null
DB=$(echo "$BD_TEST_PG_URL" | sed 's|/postgres$|/bd_verify|')
printf 'bdt_1_%s\n' "$(od -An -vtx1 -N32 /dev/urandom | tr -d ' \n')" >"$TMP/admin-token"
chmod 600 "$TMP/admin-token"
P1=$(port) P2=$(port) P3=$(port) HP=$(port)
for p in $P1 $P2 $P3; do
  "$BUILD/banditd" --listen 127.0.0.1:$p --db "$DB" --admin-token-file "$TMP/admin-token" --log-level warn \
    --advertise-url http://127.0.0.1:$p 2>"$TMP/banditd-$p.log" &
  PIDS="$PIDS $!"
  for _ in $(seq 100); do curl -fsS -o /dev/null http://127.0.0.1:$p/healthz 2>/dev/null && break; sleep 0.1; done
done
# docker/haproxy.cfg as it is, but for the addresses.
sed -e "s|bind :8080|bind 127.0.0.1:$HP|" -e '/^resolvers docker/,/^$/d' \
    -e 's| resolvers docker init-addr last,libc,none||' -e 's|log stdout format raw local0 info|log stdout format raw local0 warning|' \
    -e "s|banditd-pg-1:8080|127.0.0.1:$P1|" -e "s|banditd-pg-2:8080|127.0.0.1:$P2|" \
    -e "s|banditd-pg-3:8080|127.0.0.1:$P3|" "$HERE/haproxy.cfg" >"$TMP/haproxy.cfg"
haproxy -c -q -f "$TMP/haproxy.cfg"
haproxy -db -f "$TMP/haproxy.cfg" >"$TMP/haproxy.log" 2>&1 &
PIDS="$PIDS $!"
sleep 3   # two good checks put each daemon in
export BANDITD_URL=http://127.0.0.1:$HP BANDITD_TOKEN_FILE=$TMP/admin-token PYTHONPATH=$ROOT/clients/python
BDCTL="python3 $ROOT/clients/bdctl"
sid=$($BDCTL create "$ROOT/clients/examples/bdctl_study.yaml")
echo "bdctl create: study $sid"
BDCTL="$BDCTL" sh "$ROOT/clients/examples/bdctl_loop.sh" "$sid" w1 >"$TMP/loop.out"
tail -n 1 "$TMP/loop.out"
$BDCTL studies | head -n 5
$BDCTL show "$sid" | head -n 12
$BDCTL export "$sid" -o "$TMP/trials.csv"
echo "bdctl export: $(($(wc -l <"$TMP/trials.csv") - 1)) trials"
python3 - "$BANDITD_URL" "$TMP/admin-token" <<'PY'
import sys
import banditd
c = banditd.Client(sys.argv[1], token=open(sys.argv[2]).read().strip())
s = c.create_study("verify-py", [{"name": "x", "type": "float", "low": 0, "high": 1}], "random",
                   options={"max_trials": 20}, objective={"metric": "loss", "goal": "minimize"})
n = 0
while True:
    got = c.suggest(s["id"], worker="py")
    if got.get("done"):
        break
    for t in got["trials"]:
        c.complete(t["id"], value=(t["config"]["x"] - 0.3) ** 2)
        n += 1
print("python client: study %d done after %d trials, best %.4f" % (s["id"], n, c.get_study(s["id"])["incumbent"]["value"]))
PY
for p in $P1 $P2 $P3; do
  echo "daemon :$p owns $(curl -fsS http://127.0.0.1:$p/metrics | sed -n 's/^banditd_studies_owned //p') studies," \
       "answered $(curl -fsS http://127.0.0.1:$p/metrics | awk '/^banditd_http_requests_total/ {n += $2} END {print n + 0}') requests"
done
if grep -v '^$' "$TMP"/banditd-*.log | grep -qi ' error '; then
  echo "verify-cluster-local.sh: errors in the daemons' logs:" >&2
  cat "$TMP"/banditd-*.log >&2
  exit 1
fi
echo "verify-cluster-local.sh: ok"
