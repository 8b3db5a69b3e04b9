#!/bin/sh
# A throwaway PostgreSQL 15 cluster for the tests (issue 16):
#   tests/pgcluster.sh COMMAND [ARG...]
# makes a cluster in a new temporary directory, starts it on a free TCP port
# of 127.0.0.1 (and a unix socket in that directory), runs COMMAND with
# BD_TEST_PG_URL=postgresql://bd@127.0.0.1:PORT/postgres exported (also
# printed on stderr), then stops the server and removes the directory,
# whether COMMAND passed, failed or was interrupted. The exit status is
# COMMAND's.
#
# PostgreSQL refuses to run as root, so as root (CI) the directory is given to
# `nobody` and initdb and pg_ctl run as that user (runuser); a normal user runs
# them directly. Authentication is trust: the server listens on 127.0.0.1 only
# and lives for one test run, and every database in it is a test's. fsync is
# off because nothing here outlives the machine (the tests kill the daemon,
# never the server or the OS). BD_PG_BIN overrides where initdb and pg_ctl
# are (default /usr/lib/postgresql/15/bin, Debian's postgresql-15).
set -eu

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARG...]" >&2
  exit 2
fi
bin=${BD_PG_BIN:-/usr/lib/postgresql/15/bin}
if ! [ -x "$bin/initdb" ] || ! [ -x "$bin/pg_ctl" ]; then
  echo "pgcluster.sh: no initdb/pg_ctl in $bin (docker/install-deps.sh --test installs postgresql-15)" >&2
  exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/bd-pg-XXXXXX")
as_owner=""
if [ "$(id -u)" -eq 0 ]; then
  chown nobody:nogroup "$dir"
  as_owner="runuser -u nobody --"
fi
# initdb and postgres chdir around; the caller's directory may be closed to nobody.
run() { (cd "$dir" && $as_owner "$@"); }

started=""
cleanup() {
  if [ -n "$started" ]; then
    run "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

run "$bin/initdb" -D "$dir/data" -A trust -U bd -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 || {
  cat "$dir/initdb.log" >&2
  exit 1
}

# A port free now may be taken before the server binds it (other tests pick
# free ports too): try a few.
port=""
for attempt in 1 2 3 4 5; do
  try=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  if run "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
       -o "-p $try -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=300" \
       start >/dev/null 2>&1; then
    port=$try
    started=1
    break
  fi
  sleep 0.2
done
if [ -z "$port" ]; then
  echo "pgcluster.sh: the server did not start; its log:" >&2
  cat "$dir/server.log" >&2 || true
  exit 1
fi

BD_TEST_PG_URL="postgresql://bd@127.0.0.1:$port/postgres"
export BD_TEST_PG_URL
echo "pgcluster.sh: PostgreSQL at $BD_TEST_PG_URL (data in $dir)" >&2
status=0
"$@" || status=$?
exit $status
