#!/bin/sh
# The container's entrypoint: checks that the database's directory is
# writable by the user the container runs as, and says what to do when it is
# not (a host directory bind-mounted over /var/lib/banditd keeps the host's
# owner), then runs banditd with the container's arguments.
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
