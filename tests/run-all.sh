#!/bin/sh
# Installs what is missing, builds, and runs every test twice: a normal build
# with warnings as errors, and a build with AddressSanitizer +
# UndefinedBehaviorSanitizer. This is the README's test command and what
# .ci/run executes.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

docker/install-deps.sh --test

echo "== build (Release, -Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBD_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
echo "== tests"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build (ASan + UBSan)"
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DBD_WERROR=ON -DBD_SANITIZE=ON >/dev/null
cmake --build build-sanitize -j "$jobs"
echo "== tests under sanitizers"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize --output-on-failure -j "$jobs"
# A sanitizer report that did not fail its test must still fail the run:
# search the output of every test, passed ones included.
if grep -E 'Sanitizer|runtime error' build-sanitize/Testing/Temporary/LastTest.log; then
  echo "sanitizer reports found (above)" >&2
  exit 1
fi
echo "== all tests passed"
