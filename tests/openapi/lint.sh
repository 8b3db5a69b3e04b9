#!/bin/sh
# Lints api/openapi.yaml with Redocly's recommended-strict ruleset (every
# rule an error). The pinned @redocly/cli (package.json + package-lock.json)
# is installed with `npm ci` into tests/openapi/node_modules, only when that
# is missing or older than the lock file. Needs node and npm
# (docker/install-deps.sh --test).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"
stamp=node_modules/.package-lock.json # npm writes it on every install
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
exec ./node_modules/.bin/redocly lint --extends=recommended-strict --format=codeframe "$root/api/openapi.yaml"
