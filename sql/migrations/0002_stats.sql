-- 0002_stats: counters for dashboards that stay cheap as data grows (issue: 1,000,000 items
-- across 50 flow steps must answer /v1/stats and /metrics in well under 100 ms).
--
-- Mechanism: statement-level triggers append count *deltas* to insert-only tables (no hot
-- row: concurrent transactions never update the same counter row), and the sweeper folds
-- them into the counter tables every pass (verdict_compact_counts). A read is the counter
-- table plus the few deltas not folded yet, so it is exact, transactional and independent
-- of the number of items. Job counts are kept per minute of claimed_at, so "last hour" and
-- "last day" sum at most 1,440 buckets per flow step and status.

CREATE TABLE item_counts (
    flow_step_id text NOT NULL,
    state        text NOT NULL,
    n            bigint NOT NULL,
    PRIMARY KEY (flow_step_id, state)
);
CREATE TABLE item_count_deltas (
    flow_step_id text NOT NULL,
    state        text NOT NULL,
    delta        integer NOT NULL
);

CREATE TABLE job_counts (
    flow_step_id text NOT NULL,
    status       text NOT NULL,
    minute       timestamptz NOT NULL,
    n            bigint NOT NULL,
    PRIMARY KEY (flow_step_id, minute, status)
);
CREATE TABLE job_count_deltas (
    flow_step_id text NOT NULL,
    status       text NOT NULL,
    minute       timestamptz NOT NULL,
    delta        integer NOT NULL
);

CREATE TABLE transition_counts (
    cause    text NOT NULL,
    to_state text NOT NULL,
    n        bigint NOT NULL,
    PRIMARY KEY (cause, to_state)
);
CREATE TABLE transition_count_deltas (
    cause    text NOT NULL,
    to_state text NOT NULL,
    delta    integer NOT NULL
);

-- Serves oldest_claimable_age_seconds: one index probe per flow step.
CREATE INDEX items_claimable_age ON items (flow_step_id, available_at)
    WHERE state IN ('available', 'deferred');

CREATE FUNCTION verdict_items_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO item_count_deltas
            SELECT flow_step_id, state, count(*) FROM new_rows GROUP BY 1, 2;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO item_count_deltas
            SELECT flow_step_id, state, -count(*) FROM old_rows GROUP BY 1, 2;
    ELSE
        INSERT INTO item_count_deltas
            SELECT flow_step_id, state, sum(d) FROM (
                SELECT o.flow_step_id, o.state, -1 AS d FROM old_rows o JOIN new_rows n USING (id)
                 WHERE o.state <> n.state
                UNION ALL
                SELECT n.flow_step_id, n.state, 1 FROM old_rows o JOIN new_rows n USING (id)
                 WHERE o.state <> n.state) x
            GROUP BY 1, 2;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER items_counted_ins AFTER INSERT ON items REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION verdict_items_counted();
CREATE TRIGGER items_counted_upd AFTER UPDATE ON items
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION verdict_items_counted();
CREATE TRIGGER items_counted_del AFTER DELETE ON items REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION verdict_items_counted();

CREATE FUNCTION verdict_jobs_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO job_count_deltas
            SELECT flow_step_id, status, date_trunc('minute', claimed_at), count(*)
            FROM new_rows GROUP BY 1, 2, 3;
    ELSE
        INSERT INTO job_count_deltas
            SELECT flow_step_id, status, minute, sum(d) FROM (
                SELECT o.flow_step_id, o.status, date_trunc('minute', o.claimed_at) AS minute,
                       -1 AS d
                FROM old_rows o JOIN new_rows n USING (id) WHERE o.status <> n.status
                UNION ALL
                SELECT n.flow_step_id, n.status, date_trunc('minute', n.claimed_at), 1
                FROM old_rows o JOIN new_rows n USING (id) WHERE o.status <> n.status) x
            GROUP BY 1, 2, 3;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_counted_ins AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION verdict_jobs_counted();
CREATE TRIGGER jobs_counted_upd AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION verdict_jobs_counted();

CREATE FUNCTION verdict_transitions_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO transition_count_deltas
        SELECT cause, to_state, count(*) FROM new_rows GROUP BY 1, 2;
    RETURN NULL;
END $$;

CREATE TRIGGER transitions_counted AFTER INSERT ON transitions REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION verdict_transitions_counted();

-- Fold the deltas into the counters; one folder at a time (advisory lock), the others skip.
CREATE FUNCTION verdict_compact_counts() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(7306153949216651922) THEN
        RETURN;
    END IF;
    WITH d AS (DELETE FROM item_count_deltas RETURNING *)
    INSERT INTO item_counts AS c
        SELECT flow_step_id, state, sum(delta) FROM d GROUP BY 1, 2
    ON CONFLICT (flow_step_id, state) DO UPDATE SET n = c.n + EXCLUDED.n;
    WITH d AS (DELETE FROM job_count_deltas RETURNING *)
    INSERT INTO job_counts AS c
        SELECT flow_step_id, status, minute, sum(delta) FROM d GROUP BY 1, 2, 3
    ON CONFLICT (flow_step_id, minute, status) DO UPDATE SET n = c.n + EXCLUDED.n;
    WITH d AS (DELETE FROM transition_count_deltas RETURNING *)
    INSERT INTO transition_counts AS c
        SELECT cause, to_state, sum(delta) FROM d GROUP BY 1, 2
    ON CONFLICT (cause, to_state) DO UPDATE SET n = c.n + EXCLUDED.n;
    DELETE FROM job_counts WHERE minute < now() - interval '2 days';
END $$;

-- Count what exists already (a database migrated with data in it).
INSERT INTO item_counts SELECT flow_step_id, state, count(*) FROM items GROUP BY 1, 2;
INSERT INTO job_counts
    SELECT flow_step_id, status, date_trunc('minute', claimed_at), count(*) FROM jobs
    WHERE claimed_at > now() - interval '2 days' GROUP BY 1, 2, 3;
INSERT INTO transition_counts SELECT cause, to_state, count(*) FROM transitions GROUP BY 1, 2;
