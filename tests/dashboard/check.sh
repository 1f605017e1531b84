#!/usr/bin/env bash
# tests/dashboard/check.sh VERDICTD_PATH - the Grafana dashboard, the Prometheus config and the
# compose file (docker/) checked against the real server:
#   1. start verdictd on a fresh database in VERDICT_TEST_DATABASE_URL and drive a small real
#      workload over HTTP (register, claim, complete/reject/defer/fail, tool failures, session
#      outcomes, a lease that expires, a requeue, a 503 while its database refuses
#      connections) so every family and the series the panels select have samples;
#   2. run a real Prometheus with docker/prometheus/prometheus.yml (target, interval and the
#      token's content changed for the test; its bearer-token-file scheme kept) against it;
#   3. scrape /metrics with a reader key: `promtool check metrics` passes;
#   4. `promtool check config docker/prometheus/prometheus.yml` and `promtool check rules
#      docker/prometheus/alerts.yml` pass (the live Prometheus evaluates every rule too);
#   5. check.mjs static: the dashboard parses, every query names only series and labels of the
#      scrape (matcher values too), the template variables, datasource uids, compose mounts and
#      the default scrape token are consistent;
#   6. check.mjs live: Prometheus scraped verdictd with the config's auth (target up) and every
#      panel query answers at least one non-NaN series with its legend labels.
# VERDICT_DASHBOARD_SCRAPE_OUT=FILE keeps a copy of the scrape (to run `check.mjs static` on).
# Exit 0 all passed, 1 a check failed, 77 skipped (no database, promtool, prometheus or node).
# Always stops verdictd and Prometheus and drops the database.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VERDICTD=${1:?usage: check.sh VERDICTD_PATH}
VERDICTD=$(cd "$(dirname "$VERDICTD")" && pwd)/$(basename "$VERDICTD")

skip() { echo "SKIP $*"; exit 77; }
[ -n "${VERDICT_TEST_DATABASE_URL:-}" ] || skip "VERDICT_TEST_DATABASE_URL is not set"
for tool in promtool prometheus node psql curl; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (Debian packages prometheus, nodejs, postgresql-client, curl)"
done
if [ ! -d "$ROOT/tests/openapi/node_modules/js-yaml" ] && ! python3 -c 'import yaml' 2>/dev/null; then
  skip "no YAML parser: run scripts/openapi.sh check (installs js-yaml) or install python3-yaml"
fi
[ -x "$VERDICTD" ] || { echo "FAIL $VERDICTD is not an executable"; exit 1; }

# shellcheck source=../../scripts/lib.sh
source "$ROOT/scripts/lib.sh"   # vd_free_port

TMP=$(mktemp -d /tmp/verdict-dashboard.XXXXXX)
DB="verdict_dash_$$_$RANDOM"
VPID="" PPID_PROM=""
status=0
pass() { echo "PASS $*"; }
failc() { echo "FAIL $*"; status=1; }
die() { echo "FAIL $*"; exit 1; }

psql_admin() { psql "$VERDICT_TEST_DATABASE_URL" -XqAt -v ON_ERROR_STOP=1 -c "$1"; }
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local rc=$?
  set +e
  if [ -n "$PPID_PROM" ]; then kill "$PPID_PROM" 2>/dev/null; wait "$PPID_PROM" 2>/dev/null; fi
  if [ -n "$VPID" ]; then kill "$VPID" 2>/dev/null; wait "$VPID" 2>/dev/null; fi
  psql_admin "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 \
    || echo "WARN could not drop database $DB"
  if [ "$rc" -ne 0 ]; then
    for f in verdictd.log prometheus.log; do
      [ -s "$TMP/$f" ] && { echo "--- last lines of $f"; tail -n 20 "$TMP/$f"; }
    done
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ADMIN_TOKEN="dash-admin-$RANDOM$RANDOM$RANDOM-token"
READER_TOKEN="dash-reader-$RANDOM$RANDOM$RANDOM-token"

# ---- verdictd on a fresh database ---------------------------------------------------------------
psql_admin "CREATE DATABASE $DB" >/dev/null || die "cannot create database $DB"
# wait_up URL PID: 0 once URL answers 2xx; 1 when PID exits first or 15 s pass.
wait_up() {
  for _ in $(seq 1 150); do
    curl -fs "$1" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
# start_on_free_port PIDVAR PORTVAR READY_PATH LOG CMD...: start CMD, every "@PORT@" in its words
# replaced by a free loopback port, until http://127.0.0.1:PORT/READY_PATH answers; three ports
# at most (one taken between choosing and binding costs a try). Sets PIDVAR and PORTVAR.
start_on_free_port() {
  local pidvar=$1 portvar=$2 ready=$3 log=$4 port pid
  shift 4
  for _ in 1 2 3; do
    port=$(vd_free_port)
    "${@//@PORT@/$port}" >"$log" 2>&1 &
    pid=$!
    printf -v "$pidvar" '%s' "$pid"; printf -v "$portvar" '%s' "$port"
    wait_up "http://127.0.0.1:$port/$ready" "$pid" && return 0
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; printf -v "$pidvar" '%s' ""
  done
  return 1
}
start_verdictd() {
  start_on_free_port VPID PORT readyz "$TMP/verdictd.log" env \
    VERDICT_DATABASE_URL="$VERDICT_TEST_DATABASE_URL dbname=$DB" \
    VERDICT_LISTEN="127.0.0.1:@PORT@" \
    VERDICT_API_KEYS="ops:admin:$ADMIN_TOKEN,dashboard:reader:$READER_TOKEN" \
    VERDICT_SWEEP_INTERVAL_SECONDS=1 VERDICT_LOG_LEVEL=warn VERDICT_THREADS=4 \
    "$VERDICTD" serve
}
start_verdictd || die "verdictd did not become ready"
BASE="http://127.0.0.1:$PORT"
pass "verdictd ready on $BASE (database $DB)"

# api METHOD PATH [BODY] -> the response body on stdout; any status but 200 fails the test
api() {
  local out code
  out=$(curl -s -w '\n%{http_code}' -X "$1" -H "Authorization: Bearer $ADMIN_TOKEN" \
        -H 'Content-Type: application/json' ${3:+--data-binary "$3"} "$BASE$2") || die "curl $1 $2"
  code=${out##*$'\n'}
  [ "$code" = 200 ] || die "$1 $2 answered $code: ${out%$'\n'*}"
  printf '%s' "${out%$'\n'*}"
}
# json EXPR: evaluate a JS expression over the JSON on stdin (bound to o)
json() { node -e 'const o = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(eval(process.argv[1]))' "$1"; }
# claims FLOW_STEP LIMIT [LEASE] -> "job_id token" lines
claims() {
  api POST /v1/claims "{\"flow_step_id\":\"$1\",\"worker_id\":\"dash-worker\",\"limit\":$2${3:+,\"lease_seconds\":$3}}" \
    | json 'o.claims.map(c => c.job_id + " " + c.claim_token).join("\n")'
}
register() { # FLOW_STEP PREFIX N
  local items="" i
  for i in $(seq 1 "$3"); do items+="${items:+,}{\"flow_step_id\":\"$1\",\"source_type\":\"rss\",\"item_identifier\":\"$2-$i\"}"; done
  api POST /v1/items "{\"items\":[$items]}" >/dev/null
}
disp() { api POST "/v1/jobs/$1/disposition" "{\"claim_token\":\"$2\",$3}" >/dev/null; }
toolfail() { api POST "/v1/jobs/$1/tool-failures" "{\"claim_token\":\"$2\",$3}" >/dev/null; }
MARKER='%%ORDER_UP%%'
SUCCEEDED='{"returncode":0,"completion_marker":"'$MARKER'","stdout":"{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"Task done. '$MARKER'\"}"}'
EARLY_STOP='{"returncode":0,"completion_marker":"'$MARKER'","stdout":"{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"I did the work but forgot the marker.\"}"}'
outcome() { api POST "/v1/jobs/$1/session-outcome" "{\"claim_token\":\"$2\",\"apply\":true,\"session\":$3}" >/dev/null; }

# ---- workload, phase A (before Prometheus starts) -----------------------------------------------
register dash_a a 8
register dash_b b 3
mapfile -t J < <(claims dash_a 6)
[ ${#J[@]} -eq 6 ] || die "claimed ${#J[@]} of 6 items"
read -r j1 t1 <<<"${J[0]}"; read -r j2 t2 <<<"${J[1]}"; read -r j3 t3 <<<"${J[2]}"
read -r j4 t4 <<<"${J[3]}"; read -r j5 t5 <<<"${J[4]}"; read -r j6 t6 <<<"${J[5]}"
disp "$j1" "$t1" '"disposition":"complete"'
disp "$j2" "$t2" '"disposition":"reject_source","reason_code":"too_thin","reason":"one-line post"'
toolfail "$j3" "$t3" '"tool":"web_fetch","args":{"url":"https://example.org/a"},"error":"HTTP 503 from upstream"'
disp "$j3" "$t3" '"disposition":"defer_item","reason_code":"tool_error","reason":"fetch failed"'
toolfail "$j4" "$t4" '"tool":"skills__tldr","error":"iteration_cap","kind":"deterministic"'
disp "$j4" "$t4" '"disposition":"fail","error":"upsert failed: constraint violation"'
outcome "$j5" "$t5" "$EARLY_STOP"
outcome "$j6" "$t6" "$SUCCEEDED"
read -r jx _ < <(claims dash_b 1 5)   # never finished: its lease passes, the sweeper closes it
# a tooling incident (one item is enough here): verdict_tool_incidents_open has a sample
api PATCH /v1/flow-steps/dash_inc '{"incident_min_items":1}' >/dev/null
# a limit key, so the flow-control families (verdict_limit_*) have series to check
api PUT /v1/limits/provider:dash '{"concurrency":4}' >/dev/null
register dash_inc i 1
read -r ji ti < <(claims dash_inc 1)
toolfail "$ji" "$ti" '"tool":"wiki_upsert","error":"target_path '"'"'/srv/wiki/1.md'"'"' must stay inside root"'
disp "$ji" "$ti" '"disposition":"defer_item","reason_code":"tool_error"'
REJECTED_ITEM=$(api GET "/v1/jobs/$j2" | json 'o.item_id ?? o.job?.item_id')
pass "workload phase A: 6 dispositions and outcomes, 2 tool failures, a 5 s lease left to expire (job $jx)"

# ---- a real Prometheus with the repository's config ----------------------------------------------
mkdir -p "$TMP/prom" "$TMP/tsdb"
node "$HERE/check.mjs" promcfg "$ROOT" "$TMP/prom" "127.0.0.1:$PORT" "$READER_TOKEN" \
  || die "cannot derive a Prometheus config from docker/prometheus/prometheus.yml"
start_prometheus() {
  start_on_free_port PPID_PROM PROM_PORT -/ready "$TMP/prometheus.log" \
    prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
    --web.listen-address="127.0.0.1:@PORT@" --log.level=warn
}
start_prometheus || die "Prometheus did not start"
PROM="http://127.0.0.1:$PROM_PORT"
# the first scrapes: the baseline the rates below are computed against
for _ in $(seq 1 100); do
  n=$(curl -fs "$PROM/api/v1/query?query=count(verdict_up)" | json 'o.data.result.length' 2>/dev/null || echo 0)
  [ "$n" = 1 ] && break
  sleep 0.2
done
sleep 2
pass "Prometheus on $PROM scraping verdictd every 1 s"

# ---- workload, phase B (while Prometheus scrapes) ------------------------------------------------
register dash_a a2 3
mapfile -t J < <(claims dash_a 3)
[ ${#J[@]} -eq 3 ] || die "phase B claimed ${#J[@]} of 3 items"
read -r j7 t7 <<<"${J[0]}"; read -r j8 t8 <<<"${J[1]}"; read -r j9 t9 <<<"${J[2]}"
disp "$j7" "$t7" '"disposition":"complete"'
toolfail "$j8" "$t8" '"tool":"web_fetch","error":"connection reset by peer"'
outcome "$j8" "$t8" "$EARLY_STOP"
toolfail "$j9" "$t9" '"tool":"validator","error":"schema mismatch","kind":"deterministic","required":true'
disp "$j9" "$t9" '"disposition":"defer_item","reason_code":"quality_gate","manual_review":true'
api POST "/v1/items/$REJECTED_ITEM/requeue" '{"reason":"dashboard test"}' >/dev/null
api GET /v1/stats >/dev/null
# a real database outage of our own database, so the 5xx series exist: refuse new connections,
# close verdictd's, and read (503 database_unavailable); then let it reconnect
psql_admin "ALTER DATABASE $DB ALLOW_CONNECTIONS false" >/dev/null
psql_admin "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '$DB'" >/dev/null
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" "$BASE/v1/stats")
dbup=$(curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$BASE/metrics" | grep '^verdict_db_up ' || true)
psql_admin "ALTER DATABASE $DB ALLOW_CONNECTIONS true" >/dev/null
[ "$dbup" = "verdict_db_up 0" ] || die "/metrics during the database outage said '$dbup', not verdict_db_up 0"
[ "$code" = 503 ] || die "GET /v1/stats during the database outage answered $code, not 503"
for _ in $(seq 1 100); do curl -fs "$BASE/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
api GET /v1/stats >/dev/null
# wait for the sweeper to close the 5 s lease, then for Prometheus to scrape it a few times
for _ in $(seq 1 150); do
  curl -fs -H "Authorization: Bearer $READER_TOKEN" "$BASE/metrics" | grep -q '^verdict_transitions_total{cause="lease_expired"' && break
  sleep 0.1
done
sleep 3
pass "workload phase B: more dispositions, outcomes and tool failures, a requeue, a 503 in a database outage, the lease expired"

# ---- the scrape -----------------------------------------------------------------------------------
code=$(curl -s -o "$TMP/metrics.txt" -w '%{http_code}' -H "Authorization: Bearer $READER_TOKEN" "$BASE/metrics")
[ "$code" = 200 ] || die "GET /metrics with a reader key answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/metrics")
[ "$code" = 401 ] || failc "GET /metrics without a key answered $code, not 401 (so Prometheus needs its token)"
pass "GET /metrics with a reader key: $(grep -vc '^#' "$TMP/metrics.txt") samples"
[ -z "${VERDICT_DASHBOARD_SCRAPE_OUT:-}" ] || cp "$TMP/metrics.txt" "$VERDICT_DASHBOARD_SCRAPE_OUT"

if out=$(promtool check metrics <"$TMP/metrics.txt" 2>&1); then pass "promtool check metrics on the real scrape"
else failc "promtool check metrics: $out"; fi
# the config as the container has it: beside its rule file and the operator's token file
# (docker/ ships only an example token: compose mounts VERDICT_METRICS_TOKEN_FILE over it)
mkdir -p "$TMP/promcheck"
cp "$ROOT/docker/prometheus/prometheus.yml" "$ROOT/docker/prometheus/alerts.yml" "$TMP/promcheck/"
echo "$READER_TOKEN" >"$TMP/promcheck/verdict-token"
if out=$(cd / && promtool check config "$TMP/promcheck/prometheus.yml" 2>&1); then
  pass "promtool check config docker/prometheus/prometheus.yml"
else failc "promtool check config: $out"; fi

# and in the repository as it is, with the example token file docker/prometheus/verdict-token
if out=$(cd "$ROOT" && promtool check config docker/prometheus/prometheus.yml 2>&1); then
  pass "promtool check config docker/prometheus/prometheus.yml in the repository"
else failc "promtool check config in the repository: $out"; fi

if out=$(promtool check rules "$ROOT/docker/prometheus/alerts.yml" 2>&1); then
  pass "promtool check rules docker/prometheus/alerts.yml"
else failc "promtool check rules: $out"; fi
grep -q '^verdict_db_up 1$' "$TMP/metrics.txt" || failc "the scrape has no verdict_db_up 1"

node "$HERE/check.mjs" static "$ROOT" "$TMP/metrics.txt" || status=1
node "$HERE/check.mjs" live "$ROOT" "$PROM" || status=1

if [ $status -eq 0 ]; then echo "dashboard check: all passed"; else echo "dashboard check: FAILED"; fi
exit $status
