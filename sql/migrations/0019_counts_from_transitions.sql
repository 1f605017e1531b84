-- 0019_counts_from_transitions: the dashboard counters are folded from the audit log itself,
-- not from delta rows written by triggers (issue 21, "Where the WAL goes" in bench/README.md).
--
-- Every change of an item's state, of a job's status, writes exactly one transition row in the
-- same transaction (the audit rule), and that row says everything the counters need: the item
-- (its flow step), from_state -> to_state, the cause, the job and its new status ('processing'
-- on a claim). The statement-level triggers of 0002 wrote ~6 delta rows per state-changing
-- statement (about 1,200 WAL bytes and 20 WAL records per item in a claim + complete cycle,
-- plus their deletion by the fold) and ran three PL/pgSQL functions per statement. Now the hot
-- path writes nothing for the counters: the sweeper folds the transitions made since the last
-- fold into the counter tables, and a read is the counters plus the transitions not folded yet
-- (the views below, named as the delta tables were), so it stays exact and transactional.
--
-- Which transitions a fold may take: ids are taken at insert and transactions commit in any
-- order, so a transition still invisible may hold a smaller id than a visible one. The fold
-- takes only rows made before the oldest open writing transaction began (the change feed's
-- horizon, 0008) and before the fold itself began, less a 2 s margin, and records the largest
-- id it took: every id not visible yet is above it. A long-open writing transaction in this
-- database holds folding back (reads stay exact; they sum more unfolded rows meanwhile).

-- Nothing writes while the counters change hands (old verdictd replicas wait here).
LOCK TABLE items, jobs, transitions IN EXCLUSIVE MODE;

-- The deltas written so far, folded for the last time.
WITH d AS (DELETE FROM item_count_deltas RETURNING *)
INSERT INTO item_counts AS c SELECT flow_step_id, state, sum(delta) FROM d GROUP BY 1, 2
ON CONFLICT (flow_step_id, state) DO UPDATE SET n = c.n + EXCLUDED.n;
WITH d AS (DELETE FROM job_count_deltas RETURNING *)
INSERT INTO job_counts AS c SELECT flow_step_id, status, minute, sum(delta) FROM d GROUP BY 1, 2, 3
ON CONFLICT (flow_step_id, minute, status) DO UPDATE SET n = c.n + EXCLUDED.n;
WITH d AS (DELETE FROM transition_count_deltas RETURNING *)
INSERT INTO transition_counts AS c SELECT cause, to_state, sum(delta) FROM d GROUP BY 1, 2
ON CONFLICT (cause, to_state) DO UPDATE SET n = c.n + EXCLUDED.n;

DROP TRIGGER items_counted_ins ON items;
DROP TRIGGER items_counted_upd ON items;
DROP TRIGGER items_counted_del ON items;
DROP TRIGGER jobs_counted_ins ON jobs;
DROP TRIGGER jobs_counted_upd ON jobs;
DROP TRIGGER transitions_counted ON transitions;
DROP FUNCTION verdict_items_counted();
DROP FUNCTION verdict_jobs_counted();
DROP FUNCTION verdict_transitions_counted();
DROP TABLE item_count_deltas, job_count_deltas, transition_count_deltas;

-- The largest transition id folded into the counters (one row).
CREATE TABLE counts_folded (
    one           boolean PRIMARY KEY DEFAULT true CHECK (one),
    transition_id bigint NOT NULL
);
INSERT INTO counts_folded VALUES (true, coalesce((SELECT max(id) FROM transitions), 0));

-- What the transitions not folded yet add to each counter (transition_id: the row's id, for
-- the fold's upper bound). An item's flow step never changes; a job's status goes from
-- 'processing' (its claim's transition) to one final status (the transition that ends it).
CREATE VIEW item_count_deltas AS
    SELECT t.id AS transition_id, i.flow_step_id, s.state, s.delta
    FROM transitions t JOIN items i ON i.id = t.item_id
    CROSS JOIN LATERAL (VALUES (t.from_state, -1), (t.to_state, 1)) AS s(state, delta)
    WHERE t.id > (SELECT transition_id FROM counts_folded) AND s.state IS NOT NULL;

CREATE VIEW job_count_deltas AS
    SELECT t.id AS transition_id, j.flow_step_id, s.status,
           date_trunc('minute', j.claimed_at) AS minute, s.delta
    FROM transitions t JOIN jobs j ON j.id = t.job_id
    CROSS JOIN LATERAL (VALUES ('processing', CASE WHEN t.job_status = 'processing' THEN 1
                                                  ELSE -1 END),
                               (CASE WHEN t.job_status <> 'processing' THEN t.job_status END, 1))
        AS s(status, delta)
    WHERE t.id > (SELECT transition_id FROM counts_folded) AND t.job_status IS NOT NULL
      AND s.status IS NOT NULL;

CREATE VIEW transition_count_deltas AS
    SELECT t.id AS transition_id, t.cause, t.to_state, 1 AS delta
    FROM transitions t
    WHERE t.id > (SELECT transition_id FROM counts_folded);

-- Fold the transitions that may be folded (see above); one folder at a time (advisory lock),
-- the others skip. Each statement below takes its own snapshot (READ COMMITTED): the horizon is
-- read before the snapshot that picks the rows, so a writer that got its transaction id after
-- the horizon was read made its rows after the bound.
CREATE OR REPLACE FUNCTION verdict_compact_counts() RETURNS void LANGUAGE plpgsql AS $$
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
