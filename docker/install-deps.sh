#!/bin/sh
# Installs the Debian 12 packages banditd needs. Shared by the README commands,
# the Dockerfile and .ci/run, so there is one list to keep current.
#   install-deps.sh           build + run the daemon (and bdctl: python3-yaml
#                             reads YAML study files)
#   install-deps.sh --test    also the test tools (Criterion; clang and its runtime
#                             libraries for libFuzzer and the sanitizers, whose
#                             libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev;
#                             minisat, the solver banditd-worker's test configures)
#   install-deps.sh --bench   also the benchmark peers (Optuna, plotting, sklearn)
# Packages already present are skipped, so re-running it is cheap.
set -eu

build="build-essential cmake pkg-config libmicrohttpd-dev libjansson-dev \
libsqlite3-dev libgsl-dev libsodium-dev python3-yaml"
test_pkgs="libcriterion-dev curl python3 python3-yaml clang libclang-rt-14-dev minisat"
bench_pkgs="python3-optuna python3-matplotlib python3-sklearn python3-numpy dataset-fashion-mnist"

want="$build"
for arg in "$@"; do
  case "$arg" in
    --test) want="$want $test_pkgs" ;;
    --bench) want="$want $test_pkgs $bench_pkgs" ;;
    *) echo "install-deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends $missing
