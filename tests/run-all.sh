#!/bin/sh
# Installs what is missing, builds, and runs every test twice: a normal build
# with warnings as errors, and a build with AddressSanitizer +
# UndefinedBehaviorSanitizer; lints api/openapi.yaml (tests/openapi/lint.sh);
# runs the store's tests on PostgreSQL as well, on a throwaway cluster
# (tests/pgcluster.sh): in the normal build every integration test (bdtest's
# Daemon on a database of that cluster, BD_TEST_STORE=postgres) and
# unit/test_store (BD_TEST_PG_URL), in the sanitizer build unit/test_store and
# the integration tests that drive the store hardest (PG_SANITIZE below);
# then runs each libFuzzer target of tests/fuzz/
# for BD_FUZZ_SECONDS (default 60). This is the README's test command and what
# .ci/run executes.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
fuzz_seconds=${BD_FUZZ_SECONDS:-60}
# What runs on PostgreSQL: ctest -R patterns (tests/integration/bdtest.py says
# how the fixture picks the store; tests about SQLite files skip themselves).
PG_ALL='^(integration/|unit/test_store$)'
# ... but the real Optuna programs (~80 s of CPU): they exercise the Python
# bridge, which does not depend on the store, and run in the two other passes.
PG_SKIP='^integration/test_optuna_programs$'
# Under sanitizers, the tests that reach most of storage/pg_*.c: every store
# function, restarts that replay, users and tokens, enqueued configs, and
# test_engine's cluster case (a request run again after its study moved must
# leak nothing: LeakSanitizer) (about 40 s on 2 cores; the whole suite would
# add minutes for little more).
PG_SANITIZE='^(unit/test_store|unit/test_engine|integration/(test_crash_restart|test_lifecycle|test_study_lifecycle|test_enqueue|test_isolation|test_store_replay|test_multifidelity_restart))$'

docker/install-deps.sh --test

# build/ may have been configured by docker/run-local.sh with the tests off:
# every setting that matters here is given explicitly, and a build in which
# ctest finds no test fails instead of passing vacuously.
count_tests() {
  n=$(ctest --test-dir "$1" -N | sed -n 's/^Total Tests: *//p')
  if [ -z "$n" ] || [ "$n" -eq 0 ]; then
    echo "ctest finds no tests in $1 (configured with -DBD_TESTS=OFF?)" >&2
    exit 1
  fi
  echo "$n tests in $1"
}

echo "== build (Release, -Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBD_WERROR=ON -DBD_SANITIZE=OFF -DBD_TESTS=ON >/dev/null
cmake --build build -j "$jobs"
echo "== tests"
count_tests build
ctest --test-dir build --output-on-failure -j "$jobs"
echo "== integration tests and unit/test_store on PostgreSQL"
BD_TEST_STORE=postgres tests/pgcluster.sh \
  ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs" -R "$PG_ALL" -E "$PG_SKIP"

echo "== OpenAPI lint (Redocly, recommended-strict)"
tests/openapi/lint.sh

echo "== build (ASan + UBSan)"
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DBD_WERROR=ON -DBD_SANITIZE=ON -DBD_TESTS=ON >/dev/null
cmake --build build-sanitize -j "$jobs"
echo "== tests under sanitizers"
count_tests build-sanitize
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize --output-on-failure -j "$jobs"
# A sanitizer report that did not fail its test must still fail the run:
# search the output of every test, passed ones included.
sanitizer_reports() {
  if grep -E 'Sanitizer|runtime error' build-sanitize/Testing/Temporary/LastTest.log; then
    echo "sanitizer reports found (above)" >&2
    exit 1
  fi
}
sanitizer_reports
echo "== the store's tests on PostgreSQL under sanitizers"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  BD_TEST_STORE=postgres tests/pgcluster.sh \
  ctest --test-dir build-sanitize --output-on-failure --no-tests=error -j "$jobs" -R "$PG_SANITIZE"
sanitizer_reports  # LastTest.log is this run's now

echo "== fuzzing (${fuzz_seconds}s per target)"
tests/fuzz/run.sh "$fuzz_seconds"
echo "== all tests passed"
