-- 0024_one_pass_fold: the counters' fold (0019) reads the transitions it folds once (issue 21,
-- "fold"; measured with bench/foldprobe.sh, numbers in bench/README.md).
--
-- 0019's fold found its upper bound in one statement, then summed the three views
-- (item_count_deltas, job_count_deltas, transition_count_deltas) in three more: three scans of
-- the range, and two of them joined it to items and jobs by hash joins, each reading the whole
-- table (the range's size is not known when the statements are planned: the views compare with
-- a subquery on counts_folded). Its cost grew with the tables, not with the work.
--
-- Now one statement reads the range once, in transitions_pkey order, and looks up each
-- transition's item (items.id -> flow_step_id) and, when it has a job status, its job by their
-- primary keys: a cost that follows the number of transitions folded. One aggregation with
-- grouping sets makes the three sums and the largest id folded; the three counter tables and
-- counts_folded take them in the same statement. What is folded does not change:
--   * the rows: above counts_folded and below the first row made at or after the bound, or with
--     no logged_at (0019), found in the same snapshot as the rows themselves, so the largest id
--     folded is the one 0019 found;
--   * the sums: a transition whose item or job is missing adds nothing to that counter (0019's
--     inner joins), and still counts in transition_counts;
--   * the horizon read before the snapshot, the advisory lock, the 2-day deletion of job_counts
--     (its own statement, after the inserts, as before: it sees their rows).
-- The views stay: readers add them to the counters.
--
-- Memoize is off for the function: the planner put one over the job look-ups, keyed on a job
-- id that a fold meets at most twice (its claim and its end), and paid a hash table for a few
-- hits (on bench/foldprobe.sh's data, 20,000 transitions: 79 ms of CPU with it, 59 without).
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
        LEFT JOIN LATERAL (SELECT i.flow_step_id FROM items i WHERE i.id = t.item_id OFFSET 0)
            AS i ON true
        LEFT JOIN LATERAL (SELECT j.flow_step_id, date_trunc('minute', j.claimed_at) AS minute
                           FROM jobs j WHERE j.id = t.job_id AND t.job_status IS NOT NULL
                           OFFSET 0) AS j ON true
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
