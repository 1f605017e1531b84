#!/bin/bash
# bench/foldprobe.sh [VERDICTD] [UNFOLDED...]: what one fold of the counters costs
# (verdict_compact_counts(), sql/migrations/0019 and sql/migrations/0024), 0019's function against the schema's own.
# Starts a throwaway PostgreSQL (scripts/lib.sh; no fsync: the fold's CPU is measured, not the
# disk), and for each UNFOLDED (default: 20000 100000) makes a database with VERDICTD migrate,
# seeds BASE (default 200000) done items with a job and two transitions each, all folded, then
# UNFOLDED transitions not folded yet, shaped like the bench's traffic: items in five flow
# steps, one in five registered in the window (no job status), each claimed (job status
# 'processing'), 19 in 20 finished a few items later (completed, rejected, deferred or failed),
# and 40 % more made after the fold's bound (the last 2 s), which the fold must leave. Then,
# in one session, RUNS (default 7) rounds of: 0019's fold (created as probe.compact_counts_0019)
# and the schema's verdict_compact_counts(), each in a subtransaction rolled back, so every
# run folds the same rows. Prints per function the median wall and CPU milliseconds (the
# backend's own CPU time, /proc/<pid>/schedstat: steady while other processes share the
# machine) and whether both left the same counters. EXPLAIN=1 also prints the plans of one
# run of each (auto_explain, nested statements). Stops and removes the cluster at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VD=${1:-$ROOT/build/verdictd}
shift || true
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(20000 100000)
BASE=${BASE:-200000}
RUNS=${RUNS:-7}
source "$ROOT/scripts/lib.sh"
D=$(mktemp -d /tmp/foldprobe.XXXXXX)
cleanup() { vd_pg_stop "$D"; rm -rf "$D"; }
trap cleanup EXIT
vd_pg_start "$D" -c shared_buffers=512MB -c fsync=off -c synchronous_commit=off \
  -c full_page_writes=off -c max_wal_size=4GB
url() { echo "host=127.0.0.1 port=$VD_PG_PORT user=postgres dbname=$1"; }
P() { psql -X -q -v ON_ERROR_STOP=1 "$(url "$1")" "${@:2}"; }

seed() {
  P "$1" -v base="$BASE" -v n="$2" -v tail=$(($2 * 2 / 5)) <<'SQL'
INSERT INTO flow_steps (flow_step_id) SELECT 'step_' || g FROM generate_series(0, 4) g;
-- the history, folded already: done items with a claim and a completion each
-- an item is two rows since sql/migrations/0023_item_sources.sql: its source, then its queue row
WITH s AS (
  INSERT INTO item_sources (flow_step_id, source_type, item_identifier, payload, created_at)
  SELECT 'step_' || (g % 5), 'bench', 'https://bench.example/' || g,
         jsonb_build_object('title', 'bench item ' || g), now() - interval '3 hours'
  FROM generate_series(1, :base) g ORDER BY g
  RETURNING id, flow_step_id)
INSERT INTO items (id, flow_step_id, state, max_attempts, max_defers, updated_at)
SELECT id, flow_step_id, 'processed', 3, 3, now() - interval '3 hours' FROM s ORDER BY id;
INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, status, claim_token, claimed_at,
                  lease_expires_at, finished_at, disposition)
SELECT i.id, i.flow_step_id, 'w1', 1, 'completed', gen_random_uuid(),
       now() - interval '3 hours', now() - interval '2 hours', now() - interval '3 hours',
       'complete'
FROM items i ORDER BY i.id;
INSERT INTO transitions (item_id, job_id, from_state, to_state, job_status, cause, actor, at,
                         logged_at)
SELECT j.item_id, j.id, s.f, s.t, s.js, s.c, 'w1', now() - interval '3 hours',
       now() - interval '3 hours'
FROM jobs j CROSS JOIN (VALUES (1, 'available', 'claimed', 'processing', 'claim'),
                               (2, 'claimed', 'processed', 'completed', 'complete'))
                       AS s(k, f, t, js, c)
ORDER BY j.id, s.k;
UPDATE counts_folded SET transition_id = (SELECT max(id) FROM transitions);
INSERT INTO item_counts SELECT flow_step_id, state, count(*) FROM items GROUP BY 1, 2;
INSERT INTO job_counts SELECT flow_step_id, status, date_trunc('hour', claimed_at), count(*)
    FROM jobs GROUP BY 1, 2, 3;
INSERT INTO transition_counts SELECT cause, to_state, count(*) FROM transitions GROUP BY 1, 2;

-- the last seconds, not folded: unit u is an item; its transitions are ordered by key
-- (registered 10 units before its claim, finished 8 units after it)
CREATE TEMP TABLE unit AS
SELECT u, 'step_' || (u * 7 % 5) AS step, u % 4 AS kind, u % 20 <> 0 AS finished
FROM generate_series(1, ceil((:n + :tail) / 2.15)::int) u;
WITH s AS (
  INSERT INTO item_sources (flow_step_id, source_type, item_identifier, payload)
  SELECT step, 'bench', 'https://bench.example/new/' || u,
         jsonb_build_object('title', 'bench item ' || u)
  FROM unit ORDER BY u
  RETURNING id, flow_step_id, item_identifier)
INSERT INTO items (id, flow_step_id, state, max_attempts, max_defers, attempts)
SELECT s.id, s.flow_step_id,
       CASE WHEN NOT finished THEN 'available'
            ELSE (ARRAY['processed', 'rejected', 'deferred', 'available'])[kind + 1] END,
       3, 3, 1
FROM s JOIN unit ON s.item_identifier = 'https://bench.example/new/' || unit.u ORDER BY s.id;
CREATE TEMP TABLE ev AS
SELECT u.u, i.id AS item_id, u.step, u.kind, u.finished, e.k, u.u * 3 + e.off AS key
FROM unit u JOIN item_sources i ON i.item_identifier = 'https://bench.example/new/' || u.u
CROSS JOIN (VALUES (0, -30), (1, 0), (2, 25)) AS e(k, off)
WHERE (e.k <> 0 OR u.u % 5 = 0) AND (e.k <> 2 OR u.finished);
INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, status, claim_token, claimed_at,
                  lease_expires_at, finished_at, disposition)
SELECT item_id, step, 'w1', 1,
       CASE WHEN NOT finished THEN 'processing'
            ELSE (ARRAY['completed', 'rejected', 'deferred', 'failed'])[kind + 1] END,
       gen_random_uuid(), now(), now() + interval '5 minutes',
       CASE WHEN finished THEN now() END,
       CASE WHEN finished
            THEN (ARRAY['complete', 'reject_source', 'defer_item', 'fail'])[kind + 1] END
FROM ev WHERE k = 1 ORDER BY u;
-- the first :n made a minute ago (before the fold's bound), the rest after the bound
INSERT INTO transitions (item_id, job_id, from_state, to_state, job_status, cause, actor,
                         logged_at)
SELECT e.item_id, CASE WHEN e.k > 0 THEN j.id END,
       CASE e.k WHEN 1 THEN 'available' WHEN 2 THEN 'claimed' END,
       CASE e.k WHEN 0 THEN 'available' WHEN 1 THEN 'claimed'
                ELSE (ARRAY['processed', 'rejected', 'deferred', 'available'])[e.kind + 1] END,
       CASE e.k WHEN 1 THEN 'processing' WHEN 2 THEN j.status END,
       CASE e.k WHEN 0 THEN 'register' WHEN 1 THEN 'claim'
                ELSE (ARRAY['complete', 'reject_source', 'defer_item', 'fail'])[e.kind + 1] END,
       'w1',
       CASE WHEN row_number() OVER w <= :n
            THEN now() - interval '1 minute' + row_number() OVER w * interval '1 microsecond'
            ELSE now() + interval '1 hour' END
FROM ev e JOIN jobs j ON j.item_id = e.item_id
WINDOW w AS (ORDER BY e.key, e.k)
ORDER BY e.key, e.k;
VACUUM ANALYZE;
SQL
}

# 0019's fold, as it was, under another name
old_fold() {
  P "$1" <<'SQL'
CREATE SCHEMA probe;
CREATE FUNCTION probe.compact_counts_0019() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    started timestamptz := clock_timestamp();
    bound   timestamptz;
    done    bigint;
    upto    bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(7306153949216651922) THEN
        RETURN;
    END IF;
    PERFORM pg_stat_clear_snapshot(); /* pg_stat_activity as of now, not cached */
    bound := least(verdict_feed_horizon(), started) - interval '2 seconds';
    SELECT transition_id INTO done FROM counts_folded;
    SELECT max(t.id) INTO upto FROM transitions t
    WHERE t.id > done
      AND t.id < coalesce((SELECT min(u.id) FROM transitions u
                           WHERE u.id > done AND (u.logged_at >= bound OR u.logged_at IS NULL)),
                          9223372036854775807);
    IF upto IS NULL THEN
        DELETE FROM job_counts WHERE minute < now() - interval '2 days';
        RETURN;
    END IF;
    INSERT INTO item_counts AS c
        SELECT flow_step_id, state, sum(delta) FROM item_count_deltas
        WHERE transition_id <= upto GROUP BY 1, 2
    ON CONFLICT (flow_step_id, state) DO UPDATE SET n = c.n + EXCLUDED.n;
    INSERT INTO job_counts AS c
        SELECT flow_step_id, status, minute, sum(delta) FROM job_count_deltas
        WHERE transition_id <= upto GROUP BY 1, 2, 3
    ON CONFLICT (flow_step_id, minute, status) DO UPDATE SET n = c.n + EXCLUDED.n;
    INSERT INTO transition_counts AS c
        SELECT cause, to_state, sum(delta) FROM transition_count_deltas
        WHERE transition_id <= upto GROUP BY 1, 2
    ON CONFLICT (cause, to_state) DO UPDATE SET n = c.n + EXCLUDED.n;
    UPDATE counts_folded SET transition_id = upto;
    DELETE FROM job_counts WHERE minute < now() - interval '2 days';
END $$;
SQL
}

# probe.compare(fns, runs): rounds of each fold once, rolled back; medians per fold
harness() {
  P "$1" <<'SQL'
CREATE FUNCTION probe.counters() RETURNS text LANGUAGE sql AS $$
    SELECT md5(concat_ws('|',
        (SELECT string_agg(concat_ws(',', flow_step_id, state, n), ';'
                           ORDER BY flow_step_id, state) FROM item_counts),
        (SELECT string_agg(concat_ws(',', flow_step_id, status, minute, n), ';'
                           ORDER BY flow_step_id, minute, status) FROM job_counts),
        (SELECT string_agg(concat_ws(',', cause, to_state, n), ';' ORDER BY cause, to_state)
         FROM transition_counts),
        (SELECT transition_id FROM counts_folded))) $$;
CREATE FUNCTION probe.cpu_ms() RETURNS numeric LANGUAGE sql AS $$
    SELECT split_part(pg_read_file('/proc/' || pg_backend_pid() || '/schedstat'), ' ', 1)::numeric
           / 1e6 $$;
CREATE FUNCTION probe.time_fold(fn text, OUT wall numeric, OUT cpu numeric, OUT sums text)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; c0 numeric;
BEGIN
    BEGIN
        c0 := probe.cpu_ms();
        t0 := clock_timestamp();
        EXECUTE format('SELECT %s()', fn);
        wall := round(extract(epoch FROM clock_timestamp() - t0) * 1000, 1);
        cpu := round(probe.cpu_ms() - c0, 1);
        sums := probe.counters();
        RAISE EXCEPTION USING ERRCODE = 'P0004'; /* undo the fold */
    EXCEPTION WHEN assert_failure THEN NULL;
    END;
END $$;
CREATE FUNCTION probe.compare(fns text[], runs int)
RETURNS TABLE (fold text, folded bigint, wall_ms numeric, cpu_ms numeric, cpu_each numeric[],
               counters text)
LANGUAGE plpgsql AS $$
BEGIN
    CREATE TEMP TABLE run (fn text, r int, wall numeric, cpu numeric, sums text);
    FOR r IN 1..runs LOOP
        FOR k IN 1..array_length(fns, 1) LOOP
            INSERT INTO run SELECT fns[k], r, f.* FROM probe.time_fold(fns[k]) f;
        END LOOP;
    END LOOP;
    RETURN QUERY
        SELECT p.fn, (SELECT count(*) FROM transitions WHERE logged_at < now()
                      AND id > (SELECT transition_id FROM counts_folded)),
               percentile_disc(0.5) WITHIN GROUP (ORDER BY p.wall),
               percentile_disc(0.5) WITHIN GROUP (ORDER BY p.cpu), array_agg(p.cpu ORDER BY p.r),
               string_agg(DISTINCT left(p.sums, 12), ' ')
        FROM run p GROUP BY p.fn ORDER BY array_position(fns, p.fn);
END $$;
SQL
}

explain() {
  P "$1" <<SQL
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_analyze = on;
SET auto_explain.log_buffers = on;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_level = notice;
SELECT probe.time_fold('$2');
SQL
}

for n in "${SIZES[@]}"; do
  db=fold_$n
  P postgres -c "CREATE DATABASE $db"
  VERDICT_DATABASE_URL=$(url "$db") "$VD" migrate >/dev/null 2>&1 ||
    { echo "foldprobe: $VD migrate failed" >&2; exit 1; }
  seed "$db" "$n"
  old_fold "$db"
  harness "$db"
  echo "== $n unfolded transitions (+$((n * 2 / 5)) after the bound), $BASE done items before them, $RUNS runs each"
  psql -X -P footer=off "$(url "$db")" \
    -c "SELECT * FROM probe.compare('{probe.compact_counts_0019,verdict_compact_counts}', $RUNS)"
  if [ "${EXPLAIN:-0}" = 1 ]; then
    explain "$db" probe.compact_counts_0019 2>&1
    explain "$db" verdict_compact_counts 2>&1
  fi
done
