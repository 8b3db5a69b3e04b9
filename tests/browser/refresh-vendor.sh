#!/bin/sh
# Copies uPlot from the pinned npm install here into api/ui/vendor/ (the
# dashboard's only third-party code, compiled into banditd). To move to
# another uPlot: set its exact version in package.json, run
# `npm install --no-audit --no-fund` here (rewrites package-lock.json), run
# this script, rebuild, run the browser test (ctest -L browser), and commit
# package.json, package-lock.json and api/ui/vendor/ together.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
vendor="$here/../../api/ui/vendor"
cd "$here"
stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
mkdir -p "$vendor"
cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css node_modules/uplot/LICENSE "$vendor/"
echo "uPlot $(node -p "require('./node_modules/uplot/package.json').version") copied to api/ui/vendor/"
