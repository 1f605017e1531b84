#!/bin/bash
# bench/transitionprobe.sh [VERDICTD] [BEFORE_REF]: what the claim and the lease sweep pay for
# taking their target state from verdict_transition (sql/functions/verdict_transition.sql,
# written from src/service/include/verdict/transitions.def) instead of a literal or a CASE of their own.
# Starts a DURABLE PostgreSQL (scripts/lib.sh; fsync, synchronous_commit and full_page_writes
# on; shared_buffers 256MB, max_wal_size 2GB as verdict-bench), migrates one database with
# VERDICTD (its functions, verdict_transition among them), and runs the statement texts of
# sql/statements/ as BEFORE_REF (default: where HEAD left main) has them and as the work tree
# has them, with pgbench -M prepared (a prepared statement, as verdictd's), alternating before
# and after (ABBA), RUNS (default 6) rounds of SECS (default 15) seconds each, VACUUM (ANALYZE) and
# CHECKPOINT before every run:
#   claim  CLIENTS (default 8) clients, each: BEGIN, SET LOCAL plan_cache_mode =
#          force_generic_plan (as verdictd sends a claim), the claim of one item of flow step c
#          (200,000 available), the item back to available at the end of the queue (a
#          statement of the probe's own: every claim takes another item),
#          COMMIT (the statement's latency is then its own, the commit's flush apart);
#   sweep  one client (a replica's sweeper), each: BEGIN, the sweep (planned as verdictd's: the
#          default plan_cache_mode) of 500 passed leases (20,000
#          claimed items of flow step s, half of them with their last failure left), ROLLBACK,
#          so every run sweeps the same rows.
# Prints per run the transactions/s and pgbench's latency of the claim or sweep statement, and
# the medians. Then, as the wall clock of a loaded machine moves with other work, the same
# cycles in one psql session each (CPU_CLAIMS, default 2000, claim cycles committed; CPU_SWEEPS,
# default 40, sweeps rolled back), the backend's own CPU time per cycle (/proc/PID/schedstat,
# read by pg_read_file), RUNS rounds alternating the same way, and the medians. Stops and
# removes the cluster at the end (KEEP=1 keeps its directory).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VD=${1:-$ROOT/build/verdictd}
REF=${2:-$(git -C "$ROOT" merge-base HEAD main)}
RUNS=${RUNS:-6}
SECS=${SECS:-15}
CLIENTS=${CLIENTS:-8}
source "$ROOT/scripts/lib.sh"
D=$(mktemp -d /tmp/transitionprobe.XXXXXX)
cleanup() { vd_pg_stop "$D"; [ -n "${KEEP:-}" ] || rm -rf "$D"; }
trap cleanup EXIT
vd_pg_start "$D" -c shared_buffers=256MB -c max_wal_size=2GB
URL="host=127.0.0.1 port=$VD_PG_PORT user=postgres dbname=probe"
P() { psql -X -q -v ON_ERROR_STOP=1 "$URL" "$@"; }
psql -X -q "host=127.0.0.1 port=$VD_PG_PORT user=postgres dbname=postgres" -c "CREATE DATABASE probe"
VERDICT_DATABASE_URL="$URL" VERDICT_API_KEYS="probe:admin:probe-token-0123456789abcdef" \
  "$VD" migrate >"$D/migrate.log" 2>&1 || { cat "$D/migrate.log"; exit 1; }

# a statement's text (sql/statements/NAME.sql) at REF or in the tree, $N -> :pN, $7/$8 -> NULL
text() { # NAME before|after
  if [ "$2" = before ]; then git -C "$ROOT" show "$REF:sql/statements/$1.sql"; else cat "$ROOT/sql/statements/$1.sql"; fi |
    grep -v '^--' | sed -E 's/\$([78])\b/NULL/g; s/\$([0-9]+)/:p\1/g'
}

P <<'SQL'
INSERT INTO flow_steps (flow_step_id) VALUES ('c'), ('s');
WITH s AS (INSERT INTO item_sources (flow_step_id, source_type, item_identifier)
           SELECT CASE WHEN g <= 200000 THEN 'c' ELSE 's' END, 'rss', 'p' || g
           FROM generate_series(1, 220000) g RETURNING id, flow_step_id)
INSERT INTO items (id, flow_step_id, max_attempts, max_defers) SELECT id, flow_step_id, 3, 3 FROM s;
SQL
# flow step s: every item claimed through the claim itself (a job each), its lease passed
P -c "PREPARE c (text, text, bigint, double precision, text, text) AS $(text claim after | sed -E 's/:p([0-9]+)/$\1/g')" \
  -c "EXECUTE c ('s', 'seed', 20000, 1, 'seed', NULL)" >/dev/null
P -c "UPDATE items SET lease_expires_at = now() - interval '1 hour',
        failures = CASE WHEN id % 2 = 0 THEN 2 ELSE 0 END WHERE flow_step_id = 's'"
P -At -c "SELECT state, count(*) FROM items GROUP BY 1 ORDER BY 1"

for v in before after; do
  { echo 'BEGIN;'
    echo 'SET LOCAL plan_cache_mode = force_generic_plan;' # as verdictd claims (vd_sql_exec_generic)
    echo "$(text claim $v) \\gset"
    echo "UPDATE items SET state = 'available', claim_token = NULL, lease_expires_at = NULL,"
    echo "  available_at = now() WHERE id = (:case::json #>> '{claims,0,item,id}')::bigint;"
    echo 'COMMIT;'; } >"$D/claim_$v.sql"
  { echo 'BEGIN;'; echo "$(text sweep_leases $v);"; echo 'ROLLBACK;'; } >"$D/sweep_$v.sql"
done

run() { # claim|sweep before|after -> "tps latency_ms"
  local out args=(-c "$CLIENTS" -D p1=c -D p2=w -D p3=1 -D p4=300 -D p5=probe -D p6=v1)
  [ "$1" = sweep ] && args=(-c 1 -D p1=500)
  P -c "VACUUM (ANALYZE) items, jobs, transitions, item_sources" -c CHECKPOINT
  out=$(pgbench -n -M prepared -r -j 2 -T "$SECS" "${args[@]}" -f "$D/$1_$2.sql" "$URL" 2>&1) ||
    { echo "$out" >&2; return 1; }
  local tps lat
  tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1)
  lat=$(awk '/ WITH / && $1 ~ /^[0-9.]+$/ {print $1; exit}' <<<"$out")
  echo "$tps $lat"
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

for s in claim sweep; do
  [ "${PGBENCH:-1}" = 1 ] || break
  : >"$D/$s.before"; : >"$D/$s.after"
  for r in $(seq 1 "$RUNS"); do
    if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
    for v in $order; do
      res=$(run $s $v)
      echo "$res" >>"$D/$s.$v"
      printf '%s run %d %-6s tps %s  statement ms %s\n' "$s" "$r" "$v" $res
    done
  done
  for v in before after; do
    printf '%s %-6s median tps %s  median statement ms %s\n' "$s" "$v" \
      "$(cut -d' ' -f1 "$D/$s.$v" | median)" "$(cut -d' ' -f2 "$D/$s.$v" | median)"
  done
done

# the backend's CPU time (ns) since it started
SCHED="split_part(pg_read_file('/proc/' || pg_backend_pid() || '/schedstat'), ' ', 1)::bigint"
cpu() { # claim|sweep before|after -> CPU microseconds per cycle
  local n i f="$D/cpu_$1_$2.psql"
  if [ "$1" = claim ]; then n=${CPU_CLAIMS:-2000}; else n=${CPU_SWEEPS:-40}; fi
  {
    if [ "$1" = claim ]; then
      echo "PREPARE c (text, text, bigint, double precision, text, text) AS $(text claim "$2" | sed -E 's/:p([0-9]+)/$\1/g');"
      # the one item of c this session holds (items_leases: the leases of s have passed)
      echo "PREPARE r AS UPDATE items SET state = 'available', claim_token = NULL,"
      echo "  lease_expires_at = NULL, available_at = now()"
      echo "  WHERE state = 'claimed' AND lease_expires_at > now();"
      cycle="BEGIN; SET LOCAL plan_cache_mode = force_generic_plan;
EXECUTE c ('c', 'w', 1, 300, 'probe', 'v1'); EXECUTE r; COMMIT;"
    else
      echo "PREPARE s (bigint) AS $(text sweep_leases "$2" | sed -E 's/:p([0-9]+)/$\1/g');"
      cycle="BEGIN; EXECUTE s (500); ROLLBACK;"
    fi
    echo '\o /dev/null'
    for i in $(seq 1 10); do echo "$cycle"; done # past the custom plans, as a pooled connection
    echo "SELECT $SCHED AS t0 \\gset"
    for i in $(seq 1 "$n"); do echo "$cycle"; done
    echo "SELECT round(($SCHED - :t0) / 1000.0 / $n, 1) AS us \\gset"
    echo '\echo :us'
  } >"$f"
  P -c "VACUUM (ANALYZE) items, jobs, transitions, item_sources" -c CHECKPOINT
  P -f "$f" | tail -1
}

for s in claim sweep; do
  : >"$D/cpu_$s.before"; : >"$D/cpu_$s.after"
  for r in $(seq 1 "$RUNS"); do
    if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
    for v in $order; do
      us=$(cpu $s $v)
      echo "$us" >>"$D/cpu_$s.$v"
      printf 'cpu %s run %d %-6s us per cycle %s\n' "$s" "$r" "$v" "$us"
    done
  done
  for v in before after; do
    printf 'cpu %s %-6s median us per cycle %s\n' "$s" "$v" "$(median <"$D/cpu_$s.$v")"
  done
done

# which plans the claim gets when the session leaves the choice to PostgreSQL (plan_cache_mode
# auto, pgbench's default; verdictd forces the generic plan): 20 claim cycles, then
# pg_prepared_statements' counts
for v in before after; do
  {
    echo "PREPARE c (text, text, bigint, double precision, text, text) AS $(text claim "$v" | sed -E 's/:p([0-9]+)/$\1/g');"
    echo "PREPARE r AS UPDATE items SET state = 'available', claim_token = NULL,"
    echo "  lease_expires_at = NULL, available_at = now()"
    echo "  WHERE state = 'claimed' AND lease_expires_at > now();"
    echo '\o /dev/null'
    for i in $(seq 1 20); do
      echo "BEGIN; EXECUTE c ('c', 'w', 1, 300, 'probe', 'v1'); EXECUTE r; COMMIT;"
    done
    echo '\o'
    echo "SELECT 'auto plan_cache_mode, claim $v: ' || generic_plans || ' generic, ' || custom_plans"
    echo "  || ' custom plans of 20' FROM pg_prepared_statements WHERE name = 'c';"
  } >"$D/plans_$v.psql"
  P -At -f "$D/plans_$v.psql" | tail -1
done
