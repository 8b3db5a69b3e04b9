#!/bin/sh
# The container's entrypoint: checks that the database's directory is
# writable by the user the container runs as, and says what to do when it is
# not (a host directory bind-mounted over /var/lib/banditd keeps the host's
# owner), then runs banditd with the container's arguments. A PostgreSQL
# database (--db postgresql://...) has no directory to check; its password,
# when BANDITD_PG_PASSWORD_FILE names a file (compose.yaml's profile pg: a
# secret), goes to libpq as PGPASSWORD, so it is in no URL, argument or log.
set -eu
db=${BANDITD_DB:-./banditd.db}
prev=""
for arg in "$@"; do
  case "$arg" in
    --db=*) db=${arg#--db=} ;;
    *) [ "$prev" = "--db" ] && db=$arg ;;
  esac
  prev=$arg
done
if [ -n "${BANDITD_PG_PASSWORD_FILE:-}" ]; then
  PGPASSWORD=$(cat -- "$BANDITD_PG_PASSWORD_FILE")
  export PGPASSWORD
fi
case "$db" in
  postgresql://*|postgres://*) exec /usr/local/bin/banditd "$@" ;;
esac
dir=$(dirname -- "$db")
if [ "$db" != ":memory:" ] && ! [ -w "$dir" ]; then
  cat >&2 <<MSG
banditd: the database directory $dir is not writable by uid $(id -u) (gid $(id -g)).
  A named volume (-v banditd-data:$dir) works as it is.
  For a host directory, run the container as its owner:
    docker run --user "\$(id -u):\$(id -g)" -v "\$PWD/data:$dir" ...
  or give the directory to the image's user: sudo chown 10001:10001 <host dir>.
MSG
  exit 1
fi
exec /usr/local/bin/banditd "$@"
