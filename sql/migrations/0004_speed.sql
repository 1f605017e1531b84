-- 0004_speed: cheaper per-call SQL, found with verdict-bench (bench/README.md).
--
-- verdict_ts was declared IMMUTABLE over to_char, which is only STABLE; PostgreSQL does not
-- inline a SQL function whose body is more volatile than its declaration, so every timestamp
-- of every rendered item or job was a separate function call (12 per claim + disposition).
-- Declared STABLE, it is inlined into the expression that uses it.
CREATE OR REPLACE FUNCTION verdict_ts(t timestamptz) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

-- Job counters: per-minute buckets are kept for the last two hours only; older ones are
-- folded into per-hour buckets (a bucket at hh:00 holds the whole hour). "Jobs in the last
-- day" then sums at most 50 + 24 buckets per flow step and status instead of 1,440, which
-- keeps /v1/stats flat with many flow steps. A status change of an old job still lands in
-- its minute's delta, which the next pass folds into the hour like any other. The sweeper
-- runs it right after verdict_compact_counts, under the same advisory lock.
CREATE FUNCTION verdict_rollup_job_counts() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(7306153949216651922) THEN
        RETURN;
    END IF;
    WITH d AS (DELETE FROM job_counts
               WHERE minute < date_trunc('hour', now()) - interval '1 hour'
                 AND minute <> date_trunc('hour', minute)
               RETURNING *)
    INSERT INTO job_counts AS c
        SELECT flow_step_id, status, date_trunc('hour', minute), sum(n) FROM d GROUP BY 1, 2, 3
    ON CONFLICT (flow_step_id, minute, status) DO UPDATE SET n = c.n + EXCLUDED.n;
END $$;
