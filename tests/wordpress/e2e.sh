#!/usr/bin/env bash
# tests/wordpress/e2e.sh VERDICTD - the verdict-pipeline plugin inside a real WordPress (Debian's
# wordpress package): MariaDB initialised into a temp dir on a free loopback port, WordPress
# installed with wp_install() through php-cli and served by `php -S`; the plugin zip
# (scripts/package-wordpress.sh) uploaded and activated in headless chromium
# (tests/wordpress/screens.mjs); 5 posts published while verdict is down reach it exactly once
# from the outbox; posts registered as items from a callback, WP-Cron run (php wp-cron.php), and
# verdict asked over its HTTP API whether each item went where the callback decided; reprocess
# on update; every screen (Tools -> verdict's views, search, log, row and bulk actions, the
# outbox, Settings, Posts, Site Health) walked and screenshot in chromium with no console
# errors (screenshots in E2E_SHOTS, default build/wp-screenshots).
# ctest runs it (label slow); scripts/test.sh installs the Debian packages.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
source "$ROOT/scripts/lib.sh"
VERDICTD=$(realpath "$1")
MARIADBD=$(command -v mariadbd || echo /usr/sbin/mariadbd) # /usr/sbin is not on every PATH
for f in php "$MARIADBD" mariadb-install-db mariadb curl jq zip node /usr/share/wordpress/wp-load.php "${VERDICT_CHROMIUM:-/usr/bin/chromium}"; do
  command -v "$f" >/dev/null 2>&1 || [ -e "$f" ] || { echo "skip: $f is missing (scripts/test.sh installs it)"; exit 77; }
done
php -r 'exit(extension_loaded("mysqli") && function_exists("curl_init") ? 0 : 1);' ||
  { echo "skip: php-mysql or php-curl is missing"; exit 77; }
SHOTS=${E2E_SHOTS:-$(dirname "$VERDICTD")/wp-screenshots}
if [ ! -d "$ROOT/tests/ui/node_modules/playwright-core" ]; then
  (cd "$ROOT/tests/ui" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error) || { echo "e2e: npm ci in tests/ui failed" >&2; exit 1; }
fi
t0=$(date +%s.%N)
# every PHP file of the test and the plugin lints
find "$HERE" "$ROOT/clients/wordpress" -name '*.php' -print0 | xargs -0 -n1 php -l >/dev/null
TMP=$(mktemp -d /tmp/verdict-wp.XXXXXX)
chmod 755 "$TMP"
VD_PID= DB_PID= WEB_PID=
cleanup() {
  [ -n "$VD_PID" ] && kill "$VD_PID" 2>/dev/null && wait "$VD_PID" 2>/dev/null
  [ -n "$WEB_PID" ] && kill "$WEB_PID" 2>/dev/null && wait "$WEB_PID" 2>/dev/null || true # php -S ends with 143
  [ -n "$DB_PID" ] && kill "$DB_PID" 2>/dev/null && wait "$DB_PID" 2>/dev/null
  vd_pg_stop "$TMP/pg" >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "e2e: $*" >&2; for f in "$TMP"/*.log; do echo "--- $f"; tail -20 "$f"; done >&2; exit 1; }

# verdict, on its own PostgreSQL
vd_pg_start "$TMP/pg"
VPORT=$(vd_free_port)
KEY="wp-e2e-admin-$RANDOM$RANDOM"
vd_up() {
  VERDICT_DATABASE_URL="$VD_PG_URL" VERDICT_LISTEN="127.0.0.1:$VPORT" VERDICT_THREADS=2 VERDICT_LOG_LEVEL=warn \
    VERDICT_API_KEYS="wordpress:admin:$KEY" "$VERDICTD" serve >>"$TMP/verdictd.log" 2>&1 &
  VD_PID=$!
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$VPORT/readyz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "verdictd did not come up"
}
vd_down() { kill "$VD_PID" && wait "$VD_PID" 2>/dev/null; VD_PID=; }
vd_up

# MariaDB in a temp dir, on a free loopback port (as the mysql user when we are root)
mkdir -p "$TMP/db"
user_opt=()
if [ "$(id -u)" = 0 ]; then chown mysql:mysql "$TMP/db"; user_opt=(--user=mysql); fi
mariadb-install-db --no-defaults --datadir="$TMP/db" "${user_opt[@]}" --auth-root-authentication-method=normal \
  --skip-test-db >"$TMP/mariadb-install.log" 2>&1 || fail "mariadb-install-db failed"
DBPORT=$(vd_free_port)
"$MARIADBD" --no-defaults --datadir="$TMP/db" "${user_opt[@]}" --port="$DBPORT" --bind-address=127.0.0.1 \
  --socket="$TMP/db/mysqld.sock" --pid-file="$TMP/db/mysqld.pid" --skip-name-resolve --skip-log-bin \
  --innodb-buffer-pool-size=32M --innodb-log-file-size=8M --innodb-flush-log-at-trx-commit=0 \
  >"$TMP/mariadbd.log" 2>&1 &
DB_PID=$!
for _ in $(seq 1 150); do
  mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$DBPORT" -u root -e 'SELECT 1' >/dev/null 2>&1 && break
  sleep 0.1
done
mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$DBPORT" -u root -e 'CREATE DATABASE wp' || fail "MariaDB did not come up"

# WordPress: a copy of Debian's with our own wp-config.php, served by php -S; the plugin comes
# as the zip, through the upload form
cp -a /usr/share/wordpress "$TMP/wp"
WP="$TMP/wp"
# Debian links WordPress's bundled scripts (underscore, jQuery, ...) relatively into
# /usr/share/javascript: point the copy's links at the real files
(cd /usr/share/wordpress && find . -type l) | while read -r l; do
  t=$(readlink -f "/usr/share/wordpress/$l") && [ -e "$t" ] && ln -sfn "$t" "$WP/$l"
done
mkdir -p "$WP/wp-content/mu-plugins" "$WP/wp-content/uploads" "$WP/wp-content/upgrade"
cp "$HERE/verdict-e2e.php" "$WP/wp-content/mu-plugins/"
cp "$WP/wp-includes/images/w-logo-blue-white-bg.png" "$WP/favicon.ico" # php -S has no rewrite to WordPress's own /favicon.ico
ZIP=$("$ROOT/scripts/package-wordpress.sh" "$TMP/verdict-pipeline.zip")
WPPORT=$(vd_free_port)
WPURL="http://127.0.0.1:$WPPORT"
salt() { head -c 32 /dev/urandom | base64 | tr -d '\n/+='; }
cat >"$WP/wp-config.php" <<CONF
<?php
define('DB_NAME', 'wp');
define('DB_USER', 'root');
define('DB_PASSWORD', '');
define('DB_HOST', '127.0.0.1:$DBPORT');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
\$table_prefix = 'wp_';
foreach (['AUTH_KEY', 'SECURE_AUTH_KEY', 'LOGGED_IN_KEY', 'NONCE_KEY', 'AUTH_SALT', 'SECURE_AUTH_SALT', 'LOGGED_IN_SALT', 'NONCE_SALT'] as \$k) {
    define(\$k, '$(salt)' . \$k);
}
define('WP_HOME', '$WPURL');
define('WP_SITEURL', '$WPURL');
define('WP_CONTENT_DIR', __DIR__ . '/wp-content');
define('WP_CONTENT_URL', '$WPURL/wp-content');
define('FS_METHOD', 'direct');
define('DISABLE_WP_CRON', true); // no loopback spawn: the test runs php wp-cron.php itself
define('WP_DEBUG', true);
define('WP_DEBUG_DISPLAY', false);
define('WP_DEBUG_LOG', '$TMP/wp-debug.log');
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true); // loopback only: no update checks to wordpress.org
define('WP_ACCESSIBLE_HOSTS', '127.0.0.1');
define('VERDICT_BASE_URL', 'http://127.0.0.1:$VPORT');
define('VERDICT_API_KEY', '$KEY');
if (!defined('ABSPATH')) {
    define('ABSPATH', __DIR__ . '/');
}
require_once ABSPATH . 'wp-settings.php';
CONF
export E2E_FLOW="wp-e2e" E2E_PASS="e2e-$RANDOM$RANDOM$RANDOM" E2E_WP_URL="$WPURL" E2E_VERDICT_URL="http://127.0.0.1:$VPORT" E2E_KEY="$KEY" \
  E2E_SHOTS="$SHOTS" E2E_CHROME_PROFILE="$TMP/chrome" E2E_ZIP="$ZIP"
step() { php "$HERE/wp.php" "$WP" "$@"; }
screens() { node "$HERE/screens.mjs" "$1" || fail "the $1 screens failed"; }
step install >"$TMP/install.log" 2>&1 || fail "wp_install failed"
rm -rf "$SHOTS"
# php -S with a few workers: WordPress's own loopback requests (Site Health) need a second one
PHP_CLI_SERVER_WORKERS=4 php -d upload_max_filesize=16M -d post_max_size=16M -S "127.0.0.1:$WPPORT" -t "$WP" >"$TMP/web.log" 2>&1 &
WEB_PID=$!
for _ in $(seq 1 50); do curl -fsS -o /dev/null "$WPURL/wp-login.php" 2>/dev/null && break; sleep 0.1; done
screens install
step activate || fail "the plugin is not active, or not set up"

# the outbox: verdict hangs (SIGSTOP: connections are accepted, nothing answers) while 5 posts
# are published, then goes down; nothing is lost, nothing doubled
kill -STOP "$VD_PID"
out=$(step outage-posts) || { kill -CONT "$VD_PID"; fail "publishing with verdict hanging failed"; }
echo "verdict hanging, 5 posts published: $out"
jq -e '.pending == 5 and .slowest_publish_s < 1.5 and .first_publish_s >= 0.9' <<<"$out" >/dev/null ||
  { kill -CONT "$VD_PID"; fail "the outbox does not hold the 5 registrations, or a publish did not wait its 1 s (or waited longer)"; }
# verdict wakes up: it may still register the first post from the request whose answer the
# editor no longer waited for; the outbox's resend must then be replayed, not doubled
kill -CONT "$VD_PID"
sleep 0.5
vd_down
step cron >"$TMP/cron-down.log" 2>&1 || fail "wp-cron.php failed (verdict down)"
out=$(step outbox)
echo "after a cron run with verdict down: $out"
jq -e '.pending == 5 and .failures == 1 and .next_attempt_at > 0 and (.last_error | test("verdict|connect|Connection|refused"; "i"))' <<<"$out" >/dev/null ||
  fail "a failed resend is not recorded with a pause"
vd_up
step cron >"$TMP/cron-pause.log" 2>&1 || fail "wp-cron.php failed (paused)"
jq -e '.pending == 5' <<<"$(step outbox)" >/dev/null || fail "the outbox was sent during its pause"
step time-passes
step cron >"$TMP/cron-up.log" 2>&1 || fail "wp-cron.php failed (verdict up)"
out=$(step outbox)
echo "verdict up again, after the pause: $out"
jq -e '.pending == 0 and .failed == 0 and .failures == 0' <<<"$out" >/dev/null || fail "the outbox was not emptied"
step outage-check >"$TMP/outage.txt" || fail "an outage post did not reach verdict exactly once"
php "$HERE/check.php" "http://127.0.0.1:$VPORT" "$KEY" "$E2E_FLOW" "$TMP/outage.txt" outage || fail "verdict disagrees about the outage posts"
step posts | tee "$TMP/posts.txt" || fail "posts failed"
step time-passes
t_cron=$(date +%s.%N)
step cron >"$TMP/cron.log" 2>&1 || fail "wp-cron.php failed"
t_cron_end=$(date +%s.%N)
step report
php "$HERE/check.php" "http://127.0.0.1:$VPORT" "$KEY" "$E2E_FLOW" "$TMP/posts.txt" || fail "verdict disagrees"

# Site Health, and WP_Error from the facade
health=$(step health)
echo "$health"
grep -q '"status":"good"' <<<"$health" || fail "Site Health: /readyz test not good"
grep -q '"wp_error":"verdict_transport_error"' <<<"$health" || fail "the facade did not return WP_Error"

# reprocess on update is off: an edit leaves the processed item alone
good_post=$(awk '/good news/ {print $1}' "$TMP/posts.txt")
step edit "$good_post" processed || fail "an edit requeued the item with reprocess on update off"

# the Tools -> verdict page, rendered by wp-admin/tools.php through php-cli (the same page the browser walks below)
step admin >"$TMP/admin.html" 2>"$TMP/admin.log" || fail "the admin page did not render"
html="$TMP/admin.html"
for want in '<h1 class="wp-heading-inline">verdict</h1>' 'class="wp-list-table' 'data-state="processed"[^>]*>processed <span class="count">\(6\)' \
  'data-state="manual_review"[^>]*>manual_review <span class="count">\(1\)' 'data-state="failed"[^>]*>failed <span class="count">\(1\)' \
  'class="notice inline notice-success verdict-outbox"' 'details class="verdict-log"' 'name="_wpnonce"' '</html>'; do
  grep -Eq "$want" "$html" || { grep -o "wrap verdict-pipeline.*" "$html" | head -c 3000; fail "the admin page lacks: $want"; }
done
review_post=$(awk '/needs review/ {print $1}' "$TMP/posts.txt")
spam_post=$(awk '/spam offer/ {print $1}' "$TMP/posts.txt")
echo "admin page: $(wc -c <"$html") bytes of HTML"

# verdict down, and a registration waiting for 20 minutes: the outbox on Tools -> verdict, Site Health's warning
vd_down
step late-post || fail "the late post"
screens down
vd_up
# one live claim, for the release row action
curl -fsS -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' "http://127.0.0.1:$VPORT/v1/claims" \
  -d "{\"flow_step_id\":\"$E2E_FLOW\",\"worker_id\":\"e2e@shell\",\"limit\":1}" | jq -e '.claims | length == 1' >/dev/null || fail "no claim for the release action"
E2E_REVIEW_POST=$review_post E2E_SPAM_POST=$spam_post screens main
# the browser turned reprocess on update on: an edit now requeues the processed item
step edit "$good_post" available || fail "an edit did not requeue the item with reprocess on update on"
if [ -f "$TMP/wp-debug.log" ] && grep -E 'plugins/verdict-pipeline|mu-plugins/verdict-e2e|Verdict.(Client|Worker|Transport|Model|WordPress)' "$TMP/wp-debug.log"; then fail "PHP notices from the plugin"; fi
t1=$(date +%s.%N)
printf 'e2e: passed in %.1f s (WP-Cron run %.1f s); %d screenshots in %s\n' "$(echo "$t1 - $t0" | bc)" "$(echo "$t_cron_end - $t_cron" | bc)" \
  "$(ls "$SHOTS" | wc -l)" "$SHOTS"
