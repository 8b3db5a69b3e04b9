#!/bin/sh
# Builds the libFuzzer targets in build-fuzz/ (clang, -fsanitize=fuzzer,
# address,undefined) and runs each one after the other for SECONDS (default
# 60), starting from its committed seed corpus tests/fuzz/corpus/<target>/.
# Fails (exit 1) on any crash, leak, timeout, out-of-memory or sanitizer
# report, naming the target and the saved input; prints each target's
# executions. tests/run-all.sh runs it with the default; run it longer by
# hand, e.g. tests/fuzz/run.sh 600.
#   tests/fuzz/run.sh [SECONDS] [TARGET...]     TARGET: fuzz_auth, fuzz_request, ...
# New inputs the fuzzer finds go to build-fuzz/corpus/<target>/ (not the
# repository); a failing input is saved as build-fuzz/artifacts/<target>-crash-*.
set -eu
cd "$(dirname "$0")/../.."
secs=${1:-60}
[ $# -gt 0 ] && shift
case "$secs" in
  ''|*[!0-9]*) echo "usage: tests/fuzz/run.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBD_TESTS=OFF -DBD_FUZZ=ON >/dev/null
cmake --build build-fuzz -j 2

targets=${*:-$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')}
failed=""
mkdir -p build-fuzz/artifacts build-fuzz/logs
for t in $targets; do
  mkdir -p "build-fuzz/corpus/$t"
  log="build-fuzz/logs/$t.log"
  dict=""
  [ -f "tests/fuzz/dict/$t.dict" ] && dict="-dict=tests/fuzz/dict/$t.dict"
  echo "== $t: ${secs}s"
  rc=0
  # shellcheck disable=SC2086 # $dict is one word or none
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-fuzz/tests/fuzz/$t" "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" $dict \
      -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -detect_leaks=1 \
      -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  echo "$t: ${execs:-?} executions (${speed:-?}/s), corpus $(ls "build-fuzz/corpus/$t" | wc -l) new inputs"
  if [ "$rc" -ne 0 ] || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|fuzz check failed' "$log"; then
    echo "$t FAILED (exit $rc); the end of $log:" >&2
    tail -n 40 "$log" >&2
    failed="$failed $t"
  fi
done
if [ -n "$failed" ]; then
  echo "fuzzing found problems in:$failed (inputs in build-fuzz/artifacts/)" >&2
  exit 1
fi
echo "== fuzzing: no crash, leak or sanitizer report"
