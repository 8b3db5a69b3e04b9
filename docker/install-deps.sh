#!/bin/sh
# Installs the Debian 12 packages banditd needs. Shared by the README commands,
# the Dockerfile and .ci/run, so there is one list to keep current.
#   install-deps.sh           build + run the daemon (help2man makes banditd.1
#                             from banditd --help; python3-yaml lets bdctl read
#                             YAML study files; libpq-dev, the PostgreSQL client
#                             library the daemon links for --db postgresql://...)
#   install-deps.sh --test    also the test tools (Criterion; clang and its runtime
#                             libraries for libFuzzer and the sanitizers, whose
#                             libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev;
#                             minisat, the solver banditd-worker's test configures;
#                             python3-venv and python3-wheel, with which the Python
#                             package installs offline into a venv; python3-sklearn
#                             and python3-numpy, the training the optimize test runs and
#                             the datasets the C example worker's test trains on;
#                             nodejs and npm for the OpenAPI lint, tests/openapi/, only
#                             when node / npm are not on PATH: NodeSource's nodejs
#                             bundles npm, and Debian's npm would conflict with it);
#                             systemd for systemd-analyze, with which the install
#                             test verifies the unit; Debian's chromium and scikit-learn
#                             for the dashboard's browser test, tests/browser/
#                             (node drives chromium); python3-optuna and python3-pandas
#                             for the Optuna bridge's test (banditd.optuna against Optuna
#                             3.1; trials_dataframe() needs pandas); python3-xgboost,
#                             python3-matplotlib and python3-plotly, which the Optuna
#                             programs of tests/integration/optuna_programs/ use (the
#                             XGBoost pruning callback, optuna.visualization); postgresql-15,
#                             the server the tests run a throwaway cluster of
#                             (tests/pgcluster.sh: initdb, pg_ctl; its psql edits a
#                             stopped daemon's database as the SQLite tests do))
#   install-deps.sh --bench   also the benchmark peers (Optuna, plotting, sklearn) and
#                             haproxy, the proxy tests/bench/run_load_pg.sh puts in front
#                             of its clusters (bench only: no test needs it)
# Packages already present are skipped, so re-running it is cheap.
set -eu

build="build-essential cmake pkg-config libmicrohttpd-dev libjansson-dev \
libsqlite3-dev libgsl-dev libsodium-dev libcurl4-openssl-dev help2man python3-yaml libpq-dev"
test_pkgs="libcriterion-dev curl python3 python3-yaml clang libclang-rt-14-dev minisat systemd python3-venv \
python3-wheel python3-sklearn python3-numpy chromium python3-optuna python3-pandas \
python3-xgboost python3-matplotlib python3-plotly postgresql-15"
bench_pkgs="python3-optuna python3-matplotlib python3-sklearn python3-numpy dataset-fashion-mnist haproxy"

node_pkgs=""
command -v node >/dev/null 2>&1 || node_pkgs="nodejs"
command -v npm >/dev/null 2>&1 || node_pkgs="$node_pkgs npm"

want="$build"
for arg in "$@"; do
  case "$arg" in
    --test) want="$want $test_pkgs $node_pkgs" ;;
    --bench) want="$want $test_pkgs $node_pkgs $bench_pkgs" ;;
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
