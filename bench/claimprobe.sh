#!/bin/bash
# bench/claimprobe.sh [VERDICTD] [ITEMS]: the latency of one claim over a backlog of ITEMS
# (default 100,000) waiting items, for the plain claim and the claim with limits, measured in
# SQL with pgbench (each claim in a transaction that is rolled back, so the backlog stays as
# it is). Migrates a fresh database `claimprobe` with VERDICTD on VERDICT_TEST_DATABASE_URL's
# server, registers ITEMS items over HTTP into flow step `plain` (priorities -3..3) and ITEMS
# into `keyed` (limit key site:big for 99 %, site:s-0..9 for the rest; with FAIR=1 the flow
# step is set to fair_key "site" first, where verdictd knows it), then runs pgbench: 2,000
# claims of 1 and 500 claims of 10, one client. Prints pgbench's average latency per case and
# the plan of the plain claim's candidate scan (CLAIM_SQL: another claim statement file, for
# a binary of an older commit). DB_NAME (default claimprobe) names the database; REUSE=1
# measures a database seeded by an earlier run again (to alternate two of them on a busy
# machine). Needs curl, python3, psql and pgbench.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VD=${1:-$ROOT/build/verdictd}; N=${2:-100000}
: "${VERDICT_TEST_DATABASE_URL:?a PostgreSQL to use (scripts/lib.sh vd_pg_start)}"
D=$(mktemp -d /tmp/claimprobe.XXXXXX)
VP=
cleanup() { [ -n "$VP" ] && kill "$VP" 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
source "$ROOT/scripts/lib.sh"
NAME=${DB_NAME:-claimprobe}
DB="$VERDICT_TEST_DATABASE_URL dbname=$NAME"
if [ "${REUSE:-0}" != 1 ]; then
psql -X -qAt "$VERDICT_TEST_DATABASE_URL" -c "DROP DATABASE IF EXISTS $NAME" \
  -c "CREATE DATABASE $NAME"
PORT=$(vd_free_port)
VERDICT_DATABASE_URL="$DB" VERDICT_LISTEN="127.0.0.1:$PORT" VERDICT_LOG_LEVEL=error \
  "$VD" serve >"$D/verdictd.log" 2>&1 &
VP=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
URL=http://127.0.0.1:$PORT
if [ "${FAIR:-0}" = 1 ]; then
  curl -s -X PATCH "$URL/v1/flow-steps/keyed" -H 'Content-Type: application/json' \
    -d '{"fair_key": "site"}' >/dev/null
fi
python3 - "$URL" "$N" <<'PY'
import json, sys, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
def post(items):
    req = urllib.request.Request(url + "/v1/items", json.dumps({"items": items}).encode(),
                                 {"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
for fs in ("plain", "keyed"):
    for base in range(0, n, 1000):
        items = []
        for g in range(base, min(n, base + 1000)):
            it = {"flow_step_id": fs, "source_type": "rss",
                  "item_identifier": "https://%s.example/%d" % (fs, g), "priority": g % 7 - 3}
            if fs == "keyed":
                it["limit_keys"] = ["site:big" if g % 100 else "site:s-%d" % (g // 100 % 10)]
            items.append(it)
        post(items)
PY
kill "$VP"; wait "$VP" 2>/dev/null || true; VP=
psql -X -qAt "$DB" -c "VACUUM ANALYZE"
fi
CLAIM=$(tail -n 1 "${CLAIM_SQL:-$ROOT/sql/statements/claim.sql}" | sed -e "s/\$8/NULL/g; s/\$7/NULL/g; \
  s/\$6/NULL/g; s/\$5/'bench'/g; s/\$4/60/g; s/\$3/LIMIT_N/g; s/\$2/'w'/g; s/\$1/'plain'/g")
run() { # name, limit, count, statement
  printf 'BEGIN;\n%s;\nROLLBACK;\n' "${4//LIMIT_N/$2}" >"$D/s.sql"
  printf '%-28s ' "$1"
  PGOPTIONS='-c plan_cache_mode=force_generic_plan' pgbench -n -M prepared -c 1 -t "$3" \
    -f "$D/s.sql" "$DB" 2>/dev/null | grep -E 'latency average'
}
run "plain claim of 1" 1 2000 "$CLAIM"
run "plain claim of 10" 10 500 "$CLAIM"
LIM="SELECT verdict_claim_limited('keyed', 'w', LIMIT_N, 60, 'bench', NULL, NULL, NULL, NULL, NULL)"
run "limited claim of 1" 1 2000 "$LIM"
run "limited claim of 10" 10 500 "$LIM"
echo "plan of the plain claim's candidates:"
psql -X -qAt "$DB" -c "BEGIN" \
  -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${CLAIM//LIMIT_N/1}" -c "ROLLBACK" \
  | grep -E 'Index|Sort|Seq Scan|Limit|LockRows' | head -8
