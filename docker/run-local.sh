#!/bin/sh
# Installs what is missing, builds, and starts banditd on 127.0.0.1:8080 with
# its SQLite database in ./banditd.db (the README's first command). Extra
# arguments go to banditd, e.g. docker/run-local.sh --log-level debug.
set -eu
cd "$(dirname "$0")/.."
docker/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBD_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target banditd
exec ./build/banditd --listen 127.0.0.1:8080 --db ./banditd.db "$@"
