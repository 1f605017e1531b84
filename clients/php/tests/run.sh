#!/usr/bin/env bash
# clients/php/tests/run.sh VERDICTD [PHPUNIT ARGS] - the PHP client's PHPUnit suite against a real verdictd
# and its own throwaway PostgreSQL (started here with scripts/lib.sh's vd_pg_start, so the
# outage test may stop and start it without touching anyone else's database). ctest runs it
# (tests/CMakeLists.txt, label slow); scripts/test.sh installs php-cli, php-curl and phpunit.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../../../scripts/lib.sh"
VERDICTD=$(realpath "$1")
for tool in php phpunit curl; do
  command -v "$tool" >/dev/null || { echo "skip: $tool is not installed (scripts/test.sh installs it)"; exit 77; }
done
php -r 'exit(function_exists("curl_init") ? 0 : 1);' || { echo "skip: php-curl is not installed"; exit 77; }

TMP=$(mktemp -d /tmp/verdict-php.XXXXXX)
chmod 755 "$TMP"
VD_PID=
cleanup() {
  [ -n "$VD_PID" ] && kill "$VD_PID" 2>/dev/null && wait "$VD_PID" 2>/dev/null
  vd_pg_stop "$TMP/pg" >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT

# every file of the client and the plugin must lint
find "$HERE/../src" "$HERE" "$HERE/../../wordpress" -name '*.php' -print0 | xargs -0 -n1 php -l >/dev/null

vd_pg_start "$TMP/pg"
pgctl="$VD_PG_BIN/pg_ctl -D $TMP/pg/data -l $TMP/pg/postgres.log -w -t 60"
pgopts="-p $VD_PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$TMP/pg -c fsync=off"
if [ "$(id -u)" = 0 ]; then run_as="runuser -u postgres --"; else run_as=""; fi
export VERDICT_PHP_PG_STOP="$run_as $pgctl -m fast stop"
export VERDICT_PHP_PG_START="$run_as $pgctl -o '$pgopts' start"

port=$(vd_free_port)
export VERDICT_PHP_ADMIN_KEY="php-admin-$RANDOM$RANDOM" VERDICT_PHP_WORKER_KEY="php-worker-$RANDOM$RANDOM" \
  VERDICT_PHP_READER_KEY="php-reader-$RANDOM$RANDOM"
VERDICT_DATABASE_URL="$VD_PG_URL" VERDICT_LISTEN="127.0.0.1:$port" VERDICT_THREADS=2 VERDICT_LOG_LEVEL=warn \
  VERDICT_API_KEYS="ops:admin:$VERDICT_PHP_ADMIN_KEY,bot:worker:$VERDICT_PHP_WORKER_KEY,dash:reader:$VERDICT_PHP_READER_KEY" \
  "$VERDICTD" serve >"$TMP/verdictd.log" 2>&1 &
VD_PID=$!
export VERDICT_PHP_BASE_URL="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
  curl -fsS "$VERDICT_PHP_BASE_URL/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "$VERDICT_PHP_BASE_URL/readyz" >/dev/null || { cat "$TMP/verdictd.log"; exit 1; }

status=0
phpunit --configuration "$HERE/../phpunit.xml" "${@:2}" || status=$?
[ $status -eq 0 ] || tail -30 "$TMP/verdictd.log"
# the Composer repository entries the README documents (skipped without composer)
crc=0
"$HERE/composer.sh" || crc=$?
[ $crc -eq 0 ] || [ $crc -eq 77 ] || status=1
exit $status
