#!/bin/bash
# bench/walprobe.sh [VERDICTD] [CYCLES] [single|next]: where one claim + complete cycle's WAL
# goes, per relation and WAL record type. Starts a durable PostgreSQL (scripts/lib.sh: fsync,
# synchronous_commit, full_page_writes on), a verdictd on it, registers CYCLES + 50 items, runs
# CYCLES cycles with curl from one client (`single`: POST /v1/claims + complete; `next`:
# complete with claim_next 1), after a CHECKPOINT, and reads that LSN range with pg_waldump.
# Prints WAL bytes per cycle (insert LSN delta), PostgreSQL's CPU per cycle (its backends' user
# + system time), the statements per cycle (pg_stat_statements: WAL bytes and records, execution
# ms, calls) and the records per cycle by relation; counts
# include the full-page images the first touch of each page after the checkpoint pays, and
# whatever autovacuum wrote meanwhile (catalog relations such as pg_statistic). Stops and
# removes everything at the end. Needs curl and python3. PAYLOAD_BYTES=N pads each item's
# payload with a text member of N bytes (default 0: {"title": "bench item <n>"}, as the bench).
# HISTORY=N seeds about N transitions of history first, in SQL, shaped like verdict's own
# writes (flow step hist_0, three audit rows per item: its registration, and its job's row
# recording the claim and the end, decision 0109): per 1,000 items one registration (sources,
# items, register transitions), then 10 claims of 100 (the items updated, jobs inserted) and
# 10 finishes of 100 (the items and jobs updated), each its own transaction (synchronous_commit off for the seeding session only),
# autovacuum running meanwhile; then VACUUM. The probe's items come after that history.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VD=${1:-$ROOT/build/verdictd}; N=${2:-300}; MODE=${3:-single}
source "$ROOT/scripts/lib.sh"
D=$(mktemp -d /tmp/walprobe.XXXXXX)
VP=
cleanup() { [ -n "$VP" ] && kill "$VP" 2>/dev/null; vd_pg_stop "$D"; rm -rf "$D"; }
trap cleanup EXIT
vd_pg_start "$D" -c shared_buffers=256MB -c max_wal_size=2GB -c wal_compression=lz4 \
  -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all
PORT=$(vd_free_port)
TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
VERDICT_DATABASE_URL="$VD_PG_URL" VERDICT_API_KEYS="bench:admin:$TOKEN" \
  VERDICT_LISTEN="127.0.0.1:$PORT" VERDICT_LOG_LEVEL=error "$VD" serve >"$D/verdictd.log" 2>&1 &
VP=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
H=(-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json')
URL=http://127.0.0.1:$PORT
P=(psql -X -qAt -h 127.0.0.1 -p "$VD_PG_PORT" -U postgres postgres)
seed_history() {
  local n=$(( (${HISTORY:-0} + 2999) / 3000 ))
  [ "$n" -gt 0 ] || return 0
  "${P[@]}" -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE PROCEDURE walprobe_seed(groups int) LANGUAGE plpgsql AS $$
DECLARE jids bigint[]; cnt int;
BEGIN
  INSERT INTO flow_steps (flow_step_id) VALUES ('hist_0') ON CONFLICT DO NOTHING;
  COMMIT;
  FOR g IN 1 .. groups LOOP
    -- one registration of 1,000 items: sources, items, register transitions
    WITH s AS (INSERT INTO item_sources (flow_step_id, source_type, item_identifier, payload)
               SELECT 'hist_0', 'bench', 'https://bench.example/hist/' || g || '/' || k,
                      jsonb_build_object('title', 'bench item ' || k)
               FROM generate_series(1, 1000) k RETURNING id, flow_step_id),
         i AS (INSERT INTO items (id, flow_step_id, max_attempts, max_defers)
               SELECT id, flow_step_id, 3, 3 FROM s)
    INSERT INTO transitions (item_id, to_state, cause, actor)
    SELECT id, 'available', 'register', 'bench' FROM s;
    COMMIT;
    -- then 10 claims of 100 and 10 finishes of 100, each its own transaction
    FOR k IN 1 .. 10 LOOP
      WITH c AS (SELECT id, flow_step_id FROM items
                 WHERE flow_step_id = 'hist_0' AND state = 'available'
                 ORDER BY priority DESC, available_at, id LIMIT 100 FOR UPDATE),
           j AS (INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, claim_token,
                                   lease_expires_at, lease_seconds, claim_from, claim_actor)
                 SELECT id, flow_step_id, 'w1', 1, gen_random_uuid(),
                        now() + interval '5 minutes', 300, 'available', 'w1' FROM c
                 RETURNING id, item_id, claim_token, lease_expires_at),
           u AS (UPDATE items i SET state = 'claimed', attempts = 1, current_job_id = j.id,
                   claim_token = j.claim_token, lease_expires_at = j.lease_expires_at,
                   updated_at = now() FROM j WHERE i.id = j.item_id)
      SELECT array_agg(id) INTO jids FROM j;
      COMMIT;
      WITH j AS (UPDATE jobs SET status = 'completed', finished_at = now(),
                   disposition = 'complete', finish_seq = nextval('transitions_id_seq'),
                   finish_cause = 'complete', finish_to = 'processed', finish_actor = 'w1'
                 WHERE id = ANY (jids) RETURNING id, item_id),
           u AS (UPDATE items i SET state = 'processed', claim_token = NULL,
                   lease_expires_at = NULL, updated_at = now()
                 FROM j WHERE i.id = j.item_id)
      SELECT count(*) INTO cnt FROM j;
      COMMIT;
    END LOOP;
  END LOOP;
END $$;
SQL
  "${P[@]}" -c "SET synchronous_commit = off" -c "SET enable_seqscan = off" -c "CALL walprobe_seed($n)" \
    -c "DROP PROCEDURE walprobe_seed" -c "VACUUM items, jobs, transitions, item_sources" >/dev/null
  echo "history: $("${P[@]}" -c "SELECT count(*) FROM audit") audit rows," \
    "$("${P[@]}" -c "SELECT pg_size_pretty(pg_database_size(current_database()))")"
}
seed_history
PAD=$(head -c "${PAYLOAD_BYTES:-0}" /dev/urandom | base64 -w0 | head -c "${PAYLOAD_BYTES:-0}")
body='{"items":['
for i in $(seq 1 $((N + 50))); do
  body+="{\"flow_step_id\":\"bench_0\",\"source_type\":\"bench\",\"item_identifier\":\"https://bench.example/bench_0/$i\",\"payload\":{\"title\":\"bench item $i\",\"text\":\"$PAD\"}},"
done
printf '%s]}' "${body%,}" >"$D/items.json"
curl -sf "${H[@]}" -d @"$D/items.json" "$URL/v1/items" >/dev/null
num() { grep -o "\"$1\" *: *[0-9]*" | head -1 | grep -o '[0-9]*$'; }
str() { grep -o "\"$1\" *: *\"[^\"]*\"" | head -1 | cut -d'"' -f4; }
claim() {
  local c; c=$(curl -sf "${H[@]}" -d '{"flow_step_id":"bench_0","worker_id":"w1","limit":1}' "$URL/v1/claims")
  JOB=$(num job_id <<<"$c"); TOK=$(str claim_token <<<"$c")
}
cycle() {
  if [ "$MODE" = next ]; then
    local a; a=$(curl -sf "${H[@]}" -d "{\"claim_token\":\"$TOK\",\"disposition\":\"complete\",\"claim_next\":1}" \
      "$URL/v1/jobs/$JOB/disposition" | grep -o '"claims" *: *\[.*')
    JOB=$(num job_id <<<"$a"); TOK=$(str claim_token <<<"$a")
  else
    claim
    curl -sf "${H[@]}" -d "{\"claim_token\":\"$TOK\",\"disposition\":\"complete\"}" \
      "$URL/v1/jobs/$JOB/disposition" >/dev/null
  fi
}
"${P[@]}" -c "VACUUM ANALYZE" >/dev/null
MODE_SAVED=$MODE; MODE=single; for _ in 1 2 3; do cycle; done; MODE=$MODE_SAVED  # warm
[ "$MODE" = next ] && claim
"${P[@]}" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
# PostgreSQL's CPU: user + system ticks of the postmaster's children (verdictd keeps its
# connections, so its backends live through the run)
pg_ticks() {
  local pm; pm=$(head -1 "$D/data/postmaster.pid")
  local t=0 p
  for p in $(pgrep -P "$pm"); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
"${P[@]}" -c "CHECKPOINT" >/dev/null
"${P[@]}" -c "SELECT pg_stat_statements_reset()" >/dev/null
C0=$(pg_ticks)
L0=$("${P[@]}" -c "SELECT pg_current_wal_insert_lsn()")
for _ in $(seq "$N"); do cycle; done
L1=$("${P[@]}" -c "SELECT pg_current_wal_insert_lsn()")
C1=$(pg_ticks)
echo "PostgreSQL CPU per cycle (backends' user+system):" \
  "$(awk -v t=$((C1 - C0)) -v hz="$(getconf CLK_TCK)" -v n="$N" 'BEGIN { printf "%.2f", t * 1000 / hz / n }') ms" \
  "($(( (C1 - C0) * 1000 / $(getconf CLK_TCK) )) ms over $N cycles)"
echo "statements per cycle (pg_stat_statements, top level and nested, by WAL bytes):"
"${P[@]}" -F ' ' <<SQL | awk '{printf "%8s %6s %7s %7s  %s\n", $1, $2, $3, $4, substr($0, index($0, $5))}'
SELECT 'B/cycle', 'rec', 'ms', 'calls', 'statement'
UNION ALL (SELECT round(wal_bytes / $N)::text, round(wal_records::numeric / $N, 2)::text,
  round((total_exec_time / $N)::numeric, 3)::text, round(calls::numeric / $N, 2)::text,
  left(regexp_replace(query, '\s+', ' ', 'g'), 90)
  FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'
   AND query NOT LIKE '%pg_current_wal%' AND (wal_bytes > 0 OR total_exec_time / $N > 0.01)
  ORDER BY wal_bytes DESC, total_exec_time DESC LIMIT 14)
SQL
"${P[@]}" -c "SELECT pg_switch_wal()" >/dev/null
"${P[@]}" -c "SELECT relfilenode || ' ' || relname FROM pg_class WHERE relfilenode <> 0" >"$D/rel.txt"
vd_pg_as "$VD_PG_BIN/pg_waldump" -p "$D/data/pg_wal" -s "$L0" -e "$L1" >"$D/dump.txt" 2>/dev/null || true
echo "WAL bytes per cycle (insert LSN delta): $("${P[@]}" -c "SELECT round(pg_wal_lsn_diff('$L1', '$L0') / $N)")"
python3 - "$D/dump.txt" "$D/rel.txt" "$N" <<'PY'
import collections, re, sys
dump, relf, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rel = dict(l.split() for l in open(relf) if len(l.split()) == 2)
agg = collections.defaultdict(lambda: [0, 0, 0])
total = 0
for line in open(dump):
    m = re.search(r'rmgr: (\w+)\s+len \(rec/tot\):\s+\d+/\s*(\d+).*?desc: (\w+)', line)
    if not m:
        continue
    r = re.search(r'rel \d+/\d+/(\d+)', line)
    key = (rel.get(r.group(1), r.group(1)) if r else '-', m.group(1) + '/' + m.group(3))
    a = agg[key]
    a[0] += 1; a[1] += int(m.group(2)); a[2] += 'FPW' in line
    total += int(m.group(2))
own = sum(b for (name, kind), (c, b, f) in agg.items()
          if name != '-' and not name.isdigit() and not name.startswith('pg_'))
print(f"records per cycle by relation (pg_waldump; {total / n:.0f} B per cycle in records,"
      f" {own / n:.0f} B to verdict's own relations)")
print(f"{'B/cycle':>8} {'rec':>6} {'FPI':>5}  relation / record")
for (name, kind), (c, b, f) in sorted(agg.items(), key=lambda x: -x[1][1]):
    if b / n >= 5:
        print(f"{b / n:8.0f} {c / n:6.2f} {f / n:5.2f}  {name} {kind}")
PY
