#!/bin/bash
# bench/historyprobe.sh [VERDICTD] [TRANSITIONS] [ITEMS]: what the history reads cost when the
# history is large. Starts a throwaway PostgreSQL (scripts/lib.sh; fsync off: reads are
# measured, not the disk; shared_buffers 512MB), migrates a database with VERDICTD, and seeds
# directly in SQL (generate_series) ITEMS items (default 1,000,000) in four flow steps, one
# finished job each (twenty workers; its claim and end on its row, sql/migrations/0039: two more rows of
# the history each), and TRANSITIONS transitions (default 10,000,000) spread
# over the items, made one millisecond apart up to now. Then starts verdictd on it and times
# each read REQS times (default 200) over HTTP with curl (time_total, one client, keep-alive
# off), printing p50 / p99 / max in milliseconds, and the statement's own mean and max
# execution time in PostgreSQL (pg_stat_statements; steadier than the HTTP times on a busy
# machine: it leaves out the HTTP round trip, curl's start and the scheduler's waits) and its
# shared buffers per call (hit + read: what the plan touches, whatever the load):
#   the change feed from the start, from the middle, from the newest 50 (and each of those
#   with a flow-step filter), and the item and job lists with each filter, in both orders.
# EXPLAIN=1 also prints the plans of the feed's statement (auto_explain of verdictd's session).
# KEEP=1 leaves the cluster running (its directory is printed). Needs curl and python3.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VD=${1:-$ROOT/build/verdictd}
NT=${2:-10000000}
NI=${3:-1000000}
REQS=${REQS:-200}
source "$ROOT/scripts/lib.sh"
D=$(mktemp -d /tmp/historyprobe.XXXXXX)
VP=
cleanup() {
  [ -n "$VP" ] && kill "$VP" 2>/dev/null
  if [ -z "${KEEP:-}" ]; then vd_pg_stop "$D"; rm -rf "$D"; else echo "kept: $D" >&2; fi
}
trap cleanup EXIT
vd_pg_start "$D" -c shared_buffers=512MB -c fsync=off -c synchronous_commit=off \
  -c full_page_writes=off -c max_wal_size=8GB -c max_parallel_maintenance_workers=0 \
  -c shared_preload_libraries=pg_stat_statements
URL="host=127.0.0.1 port=$VD_PG_PORT user=postgres dbname=postgres"
P() { psql -X -q -v ON_ERROR_STOP=1 "$URL" "$@"; }
VERDICT_DATABASE_URL="$URL" VERDICT_LOG_LEVEL=error "$VD" migrate
P -c "CREATE EXTENSION pg_stat_statements"
t0=$(date +%s)
P -v ni="$NI" -v nt="$NT" <<'SQL'
INSERT INTO flow_steps (flow_step_id) SELECT 'bench_' || g FROM generate_series(0, 3) g;
INSERT INTO item_sources (id, flow_step_id, source_type, item_identifier, payload, created_at)
SELECT g, 'bench_' || (g % 4), 'bench', 'https://bench.example/' || g,
       jsonb_build_object('title', 'bench item ' || g), now() - interval '4 hours'
FROM generate_series(1, :ni) g;
SELECT setval(pg_get_serial_sequence('item_sources', 'id'), :ni) \gset
-- one in 50 items still available, one in 100 rejected, the rest processed
INSERT INTO items (id, flow_step_id, state, max_attempts, max_defers, attempts, current_job_id,
                   last_reason_code, updated_at)
SELECT g, 'bench_' || (g % 4),
       CASE WHEN g % 50 = 0 THEN 'available' WHEN g % 100 = 1 THEN 'rejected' ELSE 'processed' END,
       3, 3, 1, g, CASE WHEN g % 100 = 1 THEN 'spam' END, now() - interval '3 hours'
FROM generate_series(1, :ni) g;
-- each job records its claim and its end (sql/migrations/0039): claims numbered 1..ni, ends ni+1..2ni,
-- the transitions after them (one sequence)
INSERT INTO jobs (id, item_id, flow_step_id, worker_id, attempt, status, claim_token, claimed_at,
                  lease_expires_at, finished_at, disposition, reason_code, claim_from,
                  claim_actor, finish_seq, finish_cause, finish_to, finish_actor, finish_forced,
                  finish_lint_overridden)
SELECT g, g, 'bench_' || (g % 4), 'w' || (g % 20), 1,
       CASE WHEN g % 100 = 1 THEN 'rejected' ELSE 'completed' END, gen_random_uuid(),
       now() - interval '4 hours' + g * interval '10 ms', now(),
       now() - interval '4 hours' + g * interval '10 ms',
       CASE WHEN g % 100 = 1 THEN 'reject_source' ELSE 'complete' END,
       CASE WHEN g % 100 = 1 THEN 'spam' END, 'available', 'bench', :ni + g,
       CASE WHEN g % 100 = 1 THEN 'reject_source' ELSE 'complete' END,
       CASE WHEN g % 100 = 1 THEN 'rejected' ELSE 'processed' END, 'bench', false, false
FROM generate_series(1, :ni) g;
UPDATE audit_floor SET job_id = 0;
SELECT setval('transitions_id_seq', 2 * :ni) \gset
INSERT INTO transitions (item_id, job_id, from_state, to_state, job_status, cause, actor, at,
                         logged_at)
SELECT 1 + (g::bigint * 7919) % :ni, NULL, 'available', 'claimed', 'processing', 'claim', 'w1',
       now() - (:nt - g) * interval '1 ms', now() - (:nt - g) * interval '1 ms'
FROM generate_series(1, :nt) g;
UPDATE counts_folded SET transition_id = (SELECT max(id) FROM audit);
SQL
P -c "VACUUM ANALYZE" -c "CHECKPOINT"
sync # the seed's gigabytes reach the disk before any read is timed, not during the kernel's
# writeback of them
echo "seeded $NI items, $NT transitions in $(($(date +%s) - t0)) s" >&2
P -Atc "SELECT 'sizes: transitions ' || pg_size_pretty(pg_total_relation_size('transitions'))
        || ', jobs ' || pg_size_pretty(pg_total_relation_size('jobs'))
        || ', items ' || pg_size_pretty(pg_total_relation_size('items'))"
[ -n "${EXPLAIN:-}" ] && P -c "ALTER SYSTEM SET session_preload_libraries = 'auto_explain'" \
  -c "ALTER SYSTEM SET auto_explain.log_min_duration = 0" \
  -c "ALTER SYSTEM SET auto_explain.log_nested_statements = on" -c "SELECT pg_reload_conf()"
PORT=$(vd_free_port)
TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
VERDICT_DATABASE_URL="$URL" VERDICT_API_KEYS="bench:admin:$TOKEN" VERDICT_LOG_LEVEL=error \
  VERDICT_LISTEN="127.0.0.1:$PORT" "$VD" serve >"$D/verdictd.log" 2>&1 &
VP=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
LAST=$(P -Atc "SELECT max(id) FROM audit")
probe() {
  local name=$1 path=$2 f="$D/times"
  : >"$f"
  P -Atc "SELECT pg_stat_statements_reset()" >/dev/null
  for _ in $(seq "$REQS"); do
    curl -s -o "$D/body" -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $TOKEN" \
      "http://127.0.0.1:$PORT$path" >>"$f"
  done
  P -Atc "SELECT round(mean_exec_time::numeric, 2) || ' ' || round(max_exec_time::numeric, 2)
                 || ' ' || (shared_blks_hit + shared_blks_read) / calls
          FROM pg_stat_statements WHERE calls >= $REQS AND query NOT LIKE '%pg_stat_statements%'
          ORDER BY total_exec_time DESC LIMIT 1" >"$D/db"
  python3 - "$name" "$f" "$D/body" "$D/db" <<'PY'
import sys
name, f = sys.argv[1], sys.argv[2]
db = (open(sys.argv[4]).read().split() + ['-', '-', '-'])[:3]
rows = [l.split() for l in open(f)]
codes = sorted({r[0] for r in rows})
t = sorted(float(r[1]) * 1000 for r in rows)
q = lambda p: t[min(len(t) - 1, int(p * len(t)))]
print(f"{name:44s} p50 {q(0.5):7.2f} ms  p99 {q(0.99):7.2f} ms  max {t[-1]:7.2f} ms  db {db[0]} / {db[1]} ms  {db[2]} buf  ({len(t)} x {','.join(codes)}, {len(open(sys.argv[3]).read())} B)")
PY
}
probe "feed after=0" "/v1/transitions?after=0"
probe "feed after=middle" "/v1/transitions?after=$((LAST / 2))"
probe "feed after=last-50" "/v1/transitions?after=$((LAST - 50))"
probe "feed after=last (caught up)" "/v1/transitions?after=$LAST"
probe "feed after=0 flow_step_id" "/v1/transitions?after=0&flow_step_id=bench_1"
probe "feed after=middle flow_step_id" "/v1/transitions?after=$((LAST / 2))&flow_step_id=bench_1"
probe "feed after=last-50 flow_step_id" "/v1/transitions?after=$((LAST - 50))&flow_step_id=bench_1"
probe "items (no filter)" "/v1/items"
probe "items flow_step_id" "/v1/items?flow_step_id=bench_1"
probe "items state=available" "/v1/items?state=available"
probe "items reason_code=spam" "/v1/items?reason_code=spam"
probe "items worker_id=w7" "/v1/items?worker_id=w7"
probe "items order=desc worker_id=w7" "/v1/items?order=desc&worker_id=w7"
probe "items after=middle" "/v1/items?after=$((NI / 2))"
probe "items order=desc" "/v1/items?order=desc"
probe "items identifier" "/v1/items?identifier=https://bench.example/4242"
probe "items identifier_prefix" "/v1/items?identifier_prefix=https://bench.example/42"
probe "jobs (no filter)" "/v1/jobs"
probe "jobs flow_step_id" "/v1/jobs?flow_step_id=bench_1"
probe "jobs status=rejected" "/v1/jobs?status=rejected"
probe "jobs reason_code=spam" "/v1/jobs?reason_code=spam"
probe "jobs worker_id=w7" "/v1/jobs?worker_id=w7"
probe "jobs item_id" "/v1/jobs?item_id=4242"
probe "jobs order=desc" "/v1/jobs?order=desc"
probe "jobs trace_id" "/v1/jobs?trace_id=0123456789abcdef0123456789abcdef"
probe "jobs since=1h ago" "/v1/jobs?since=$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)"
[ -n "${EXPLAIN:-}" ] && grep -A30 'transitions_feed\|Query Text' "$D/postgres.log" | tail -80
exit 0
