#!/usr/bin/env bash
# scripts/test.sh - the one test command (README, .ci/run): install what is missing, run the
# style checks (scripts/check.sh), build (plain and ASan+UBSan), start a throwaway PostgreSQL
# in a temp dir, run every CTest test in both builds, the concurrency tests in a
# ThreadSanitizer build, lint the OpenAPI document, test the container image when podman is
# there, and always stop the database. Exits non-zero on any failure.
#
# scripts/test.sh --quick [PROGRAM...] - the inner loop (docs/testing.md): the style checks,
# the plain build, the unit tests and the integration programs named (test_claims, claims or
# integration.test_claims), against a throwaway PostgreSQL of its own. CI runs the full suite.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$VD_ROOT"

# The ctest regex for --quick: every unit test and the integration programs named.
vd_quick_regex() {
  local re='^unit\.' n
  for n in "$@"; do
    n=${n#integration.}
    n=${n#test_}
    [[ $n =~ ^[A-Za-z0-9_]+$ ]] || { vd_log "--quick: not a test program name: $n"; return 1; }
    # no groups: CMake's regular expressions allow only a few parentheses
    re+="|^integration\.test_$n\$|^integration\.$n\$"
  done
  printf '%s' "$re"
}

vd_quick() {
  local re status=0 tmp
  re=$(vd_quick_regex "$@") || return 2
  vd_apt_install "${VD_BUILD_PACKAGES[@]}" clang-format git
  tmp=$(mktemp -d /tmp/verdict-quick.XXXXXX)
  chmod 755 "$tmp"
  # shellcheck disable=SC2064
  trap "vd_pg_stop '$tmp/pg'; rm -rf '$tmp'" EXIT
  vd_log "style checks (scripts/check.sh)"
  scripts/check.sh || status=1
  vd_log "building (plain) in build/"
  vd_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVERDICT_TESTS=ON
  vd_log "starting PostgreSQL (throwaway)"
  vd_pg_start "$tmp/pg" -c fsync=off -c synchronous_commit=off -c full_page_writes=off
  export VERDICT_TEST_DATABASE_URL="$VD_PG_URL"
  vd_log "ctest (plain): unit tests${*:+ and $*}"
  ctest --test-dir build --output-on-failure --no-tests=error -j2 -R "$re" || status=1
  if [ $status -eq 0 ]; then vd_log "quick run passed"; else vd_log "FAILED"; fi
  return $status
}

if [ "${1:-}" = --quick ]; then
  shift
  vd_quick "$@"
  exit $?
fi

vd_apt_install "${VD_BUILD_PACKAGES[@]}" prometheus gnutls-bin chromium pgbouncer
# the PHP client's PHPUnit suite and the WordPress end-to-end test (ctest label slow)
vd_apt_install php-cli php-curl php-mysql php-xml php-mbstring phpunit wordpress mariadb-server composer zip
command -v npm >/dev/null 2>&1 || vd_apt_install nodejs npm
vd_apt_install clang-format git

TMP=$(mktemp -d /tmp/verdict-test.XXXXXX)
chmod 755 "$TMP"
cleanup() { vd_pg_stop "$TMP/pg"; rm -rf "$TMP"; }
trap cleanup EXIT

status=0
vd_log "style checks (scripts/check.sh: format, banned, includes, assign, length, must_use)"
scripts/check.sh || status=1

vd_log "building (plain) in build/"
vd_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVERDICT_TESTS=ON
vd_log "building (address,undefined sanitizers) in build-asan/"
vd_build build-asan -DCMAKE_BUILD_TYPE=Debug -DVERDICT_SANITIZE=address,undefined -DVERDICT_TESTS=ON

vd_log "starting PostgreSQL (throwaway: fsync, synchronous_commit and full_page_writes off for speed)"
VD_PG_FAST=(-c fsync=off -c synchronous_commit=off -c full_page_writes=off)
vd_pg_start "$TMP/pg" "${VD_PG_FAST[@]}"
export VERDICT_TEST_DATABASE_URL="$VD_PG_URL"
pgctl="$VD_PG_BIN/pg_ctl -D $TMP/pg/data -l $TMP/pg/postgres.log -w -t 60"
pgopts="-p $VD_PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$TMP/pg -c fsync=off -c max_connections=300"
if [ "$(id -u)" = 0 ]; then run_as="runuser -u postgres --"; else run_as=""; fi
export VERDICT_TEST_PG_STOP="$run_as $pgctl -m fast stop"
export VERDICT_TEST_PG_START="$run_as $pgctl -o '$pgopts' start"

# the console's browser test (ctest slow.ui_console) drives this chromium with playwright-core
(cd tests/ui && [ -d node_modules/playwright-core ] || PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
  npm ci --no-audit --no-fund --loglevel=error) || status=1
# first: it installs the npm tools that the contract test (a ctest) uses too
vd_log "OpenAPI lint and sync"
scripts/openapi.sh check || status=1

vd_log "npm packages of the MCP test (tests/mcp)"
if [ ! -f tests/mcp/node_modules/@modelcontextprotocol/sdk/package.json ]; then
  (cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || status=1
fi

vd_log "ctest (plain)"
ctest --test-dir build --output-on-failure --no-tests=error -j2 || status=1
vd_log "ctest (address,undefined sanitizers)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure --no-tests=error -j2 -LE 'slow|fault' || status=1

# ThreadSanitizer: the thread pool, the sweeper thread, the shared connection pool and the
# long-poll registry (its tick and LISTEN threads) under the concurrency tests. Only what they need is built. Every report of any process (verdictd and
# the test programs) goes to $TMP/tsan/; one report fails the run. tests/tsan.supp names
# uninstrumented libraries only, never verdict's code (CONTRIBUTING.md, Tests).
vd_log "building (thread sanitizer) in build-tsan/"
cmake -S "$VD_ROOT" -B build-tsan -DVERDICT_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVERDICT_SANITIZE=thread -DVERDICT_TESTS=ON -DVERDICT_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$(nproc)" --target verdictd test_concurrency test_outage \
  test_limits test_longpoll test_shutdown test_flow_control test_fairness test_coalesce test_limits_coalesce \
  test_coalescer test_async_db >/dev/null
vd_log "ctest (thread sanitizer: concurrency, outage, limits, long-poll claims, shutdown, flow control, fairness, coalescing, the executor)"
mkdir -p "$TMP/tsan"
TSAN_OPTIONS="suppressions=$VD_ROOT/tests/tsan.supp log_path=$TMP/tsan/report history_size=4" \
  ctest --test-dir build-tsan --output-on-failure --no-tests=error \
  -R '^(integration\.test_(concurrency|outage|limits|longpoll|shutdown|flow_control|fairness|coalesce|limits_coalesce|async_db)|unit\.test_coalescer)$' || status=1
if compgen -G "$TMP/tsan/report*" >/dev/null; then
  vd_log "ThreadSanitizer reported:"
  cat "$TMP"/tsan/report* >&2
  status=1
fi

vd_log "fuzzing the stdout parser and adjudicator (bounded)"
scripts/fuzz.sh "${VERDICT_FUZZ_SECONDS:-60}" || status=1

# The image test needs root (debootstrap, rootful podman); it installs podman when it can.
if [ "${VERDICT_SKIP_IMAGE:-0}" != 1 ] && [ "$(id -u)" = 0 ]; then
  vd_apt_install podman runc debootstrap || true
fi
if command -v podman >/dev/null 2>&1 && [ "${VERDICT_SKIP_IMAGE:-0}" != 1 ] && [ "$(id -u)" = 0 ]; then
  vd_log "container image test"
  VERDICT_TEST_DATABASE_URL="$VD_PG_URL" docker/test-image.sh || status=1
else
  vd_log "container image test skipped (not root, no podman, or VERDICT_SKIP_IMAGE=1)"
fi

if [ $status -eq 0 ]; then vd_log "all tests passed"; else vd_log "FAILED"; fi
exit $status
