-- 0029_fold_one_lookup: the counters' fold (0024) looks up one row per transition, not two
-- (issue 21, PostgreSQL CPU per item).
--
-- 0024 probed items (for the item's flow step) and, for a transition with a job status, jobs
-- (for the job's flow step and claim minute) by primary key: two look-ups for every claim and
-- every finish, the bulk of what a fold reads. A job's flow step is its item's (the claim
-- writes the item's; nothing changes either later), so the job's row answers both, and the
-- item is looked up only for a transition without a job (register, requeue, resolve) or whose
-- job is gone. What is folded and every sum stay those of 0024 (test_stats compares the
-- counters with the truth; bench/foldprobe.sh times it). Otherwise 0024's function, restated.
CREATE OR REPLACE FUNCTION verdict_compact_counts() RETURNS void LANGUAGE plpgsql
SET enable_memoize = off AS $$
DECLARE
    started timestamptz := clock_timestamp();
    bound   timestamptz;
    done    bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(7306153949216651922) THEN
        RETURN;
    END IF;
    PERFORM pg_stat_clear_snapshot(); /* pg_stat_activity as of now, not cached */
    bound := least(verdict_feed_horizon(), started) - interval '2 seconds';
    SELECT transition_id INTO done FROM counts_folded;
    -- g: one row per counter key of each kind (of_items, of_jobs, of_causes) and one row with
    -- the largest id folded (upto, NULL when there is nothing to fold). OFFSET 0 keeps each
    -- look-up a probe of the primary key, whatever the planner guesses of the range's size.
    WITH g AS MATERIALIZED (
        SELECT GROUPING(i.flow_step_id, t.from_state, t.to_state) = 0 AS of_items,
               GROUPING(j.flow_step_id, j.minute, t.job_status) = 0 AS of_jobs,
               GROUPING(t.cause, t.to_state) = 0 AS of_causes,
               i.flow_step_id AS item_flow, t.from_state, t.to_state,
               j.flow_step_id AS job_flow, j.minute, t.job_status, t.cause,
               count(*) AS n, max(t.id) AS upto
        FROM transitions t
        LEFT JOIN LATERAL (SELECT j.flow_step_id, date_trunc('minute', j.claimed_at) AS minute
                           FROM jobs j WHERE j.id = t.job_id AND t.job_status IS NOT NULL
                           OFFSET 0) AS j ON true
        -- the item's flow step is its job's; the item is looked up only without one
        CROSS JOIN LATERAL (SELECT coalesce(j.flow_step_id,
                                            (SELECT i.flow_step_id FROM items i
                                             WHERE i.id = t.item_id)) AS flow_step_id) AS i
        WHERE t.id > done
          AND t.id < coalesce((SELECT min(u.id) FROM transitions u
                               WHERE u.id > done
                                 AND (u.logged_at >= bound OR u.logged_at IS NULL)),
                              9223372036854775807)
        GROUP BY GROUPING SETS ((i.flow_step_id, t.from_state, t.to_state),
                                (j.flow_step_id, j.minute, t.job_status),
                                (t.cause, t.to_state), ())),
    fold_items AS (
        INSERT INTO item_counts AS c
            SELECT g.item_flow, s.state, sum(s.delta)
            FROM g CROSS JOIN LATERAL (VALUES (g.from_state, -g.n), (g.to_state, g.n))
                AS s(state, delta)
            WHERE g.of_items AND g.item_flow IS NOT NULL AND s.state IS NOT NULL
            GROUP BY 1, 2
        ON CONFLICT (flow_step_id, state) DO UPDATE SET n = c.n + EXCLUDED.n),
    fold_jobs AS (
        INSERT INTO job_counts AS c
            SELECT g.job_flow, s.status, g.minute, sum(s.delta)
            FROM g CROSS JOIN LATERAL (
                VALUES ('processing', CASE WHEN g.job_status = 'processing' THEN g.n
                                           ELSE -g.n END),
                       (CASE WHEN g.job_status <> 'processing' THEN g.job_status END, g.n))
                AS s(status, delta)
            WHERE g.of_jobs AND g.job_flow IS NOT NULL AND s.status IS NOT NULL
            GROUP BY 1, 2, 3
        ON CONFLICT (flow_step_id, minute, status) DO UPDATE SET n = c.n + EXCLUDED.n),
    fold_causes AS (
        INSERT INTO transition_counts AS c
            SELECT g.cause, g.to_state, g.n FROM g WHERE g.of_causes
        ON CONFLICT (cause, to_state) DO UPDATE SET n = c.n + EXCLUDED.n)
    UPDATE counts_folded SET transition_id = g.upto
    FROM g WHERE NOT (g.of_items OR g.of_jobs OR g.of_causes) AND g.upto IS NOT NULL;
    DELETE FROM job_counts WHERE minute < now() - interval '2 days';
END $$;
