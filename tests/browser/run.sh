#!/bin/sh
# Runs the dashboard's browser test (dashboard.test.mjs) in Debian's headless
# Chromium. Installs the pinned npm packages (package.json +
# package-lock.json: playwright-core, and uplot, the source of
# api/ui/vendor/) with `npm ci` when node_modules is missing or older than
# the lock file. ctest runs it with BANDITD, BD_LOADGEN and BD_SOURCE_DIR set
# (tests/CMakeLists.txt). No browser is downloaded: a missing
# /usr/bin/chromium fails the test (docker/install-deps.sh --test installs it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
stamp=node_modules/.package-lock.json # npm writes it on every install
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
exec node dashboard.test.mjs "$@"
