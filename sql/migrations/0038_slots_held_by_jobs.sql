-- 0038_slots_held_by_jobs: a concurrency slot is held by the job that took it, and freed by
-- that job's end without a write (docs/decisions/0098-slots-held-by-jobs.md).
--
-- A slot cell (kind 'c') names the job that took it last (job_id, allocated by the claim
-- before the job's row is written). The slot is free when it names no job, or a job that is
-- visibly no longer 'processing': a job's end (any path) frees its slots without touching
-- them, and the release trigger only announces the flow step. A job not yet visible (its
-- claim has not committed, or committed after the reader's snapshot) counts as holding its
-- slot, so a reader errs only towards "full". The claim takes all of an item's cells in one
-- statement (verdict_limit_take with the job's id; verdict_limit_apply is gone), and the job
-- keeps only the token shards it reserved on (jobs.limit_cells), which its usage settles.

ALTER TABLE limit_cells ADD COLUMN job_id bigint;
UPDATE limit_cells c SET job_id = j.id
  FROM jobs j WHERE c.kind = 'c' AND c.held AND j.status = 'processing'
   AND c.id = ANY (j.limit_cells);
ALTER TABLE limit_cells DROP COLUMN held;

DROP FUNCTION verdict_limit_apply(bigint[], bigint);
DROP FUNCTION verdict_limit_take(text[], bigint);

-- The room of one claimed item on keys, taken for job p_job: one free cell of each kind of
-- each key with limits, locked SKIP LOCKED (never waiting for another claim) and written in
-- the same statement: a slot names the job, a rate token is usable again burst intervals from
-- now, a token shard reserves p_est in the current minute. Answers the token shards' ids (the
-- job keeps them to settle its usage; '{}' when it took none), NULL when a key has no room (then nothing is written; the cells locked
-- stay locked, unused, until the claim commits). The walk of the slots starts at a random one
-- and wraps, so that a claim does not walk past the slots in use (each a look-up of its job);
-- rate tokens and token shards are walked from the first, which keeps their writes on few
-- pages (a random start spread them and cost more WAL in pruning: measured).
CREATE FUNCTION verdict_limit_take(p_keys text[], p_est bigint, p_job bigint) RETURNS bigint[]
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    cells bigint[];
BEGIN
    WITH need AS (
        SELECT l.key, k.kind, l.concurrency, l.tokens_per_minute,
               l.rate_burst * verdict_limit_interval(l) AS pause,
               CASE k.kind WHEN 'c' THEN floor(random() * l.concurrency)::integer
                           ELSE 0 END AS start
          FROM limits l
         CROSS JOIN LATERAL (VALUES ('c'::"char"), ('r'), ('t'), ('x')) k(kind)
         WHERE l.key = ANY (p_keys)
           AND CASE k.kind WHEN 'c' THEN l.concurrency IS NOT NULL
                           WHEN 'r' THEN l.rate_count IS NOT NULL
                           WHEN 't' THEN l.tokens_per_minute IS NOT NULL
                           ELSE coalesce(l.throttled_until > now(), false) END),
    -- from the start to the last cell, then (only when none was free) from the first
    f AS MATERIALIZED (
        SELECT n.kind, n.pause, coalesce(x.id, y.id) AS id FROM need n
          LEFT JOIN LATERAL (SELECT c.id FROM limit_cells c
              WHERE c.key = n.key AND c.kind = n.kind AND c.n >= n.start
                AND CASE n.kind WHEN 'c' THEN c.n < n.concurrency AND (c.job_id IS NULL
                                OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                                            AND j.status <> 'processing'))
                            WHEN 'r' THEN c.free_at <= now()
                            ELSE verdict_shard_fits(c, n.tokens_per_minute, p_est) END
              ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) x ON true
          LEFT JOIN LATERAL (SELECT c.id FROM limit_cells c
              WHERE x.id IS NULL AND c.key = n.key AND c.kind = n.kind AND c.n < n.start
                AND CASE n.kind WHEN 'c' THEN c.n < n.concurrency AND (c.job_id IS NULL
                                OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                                            AND j.status <> 'processing'))
                            WHEN 'r' THEN c.free_at <= now()
                            ELSE verdict_shard_fits(c, n.tokens_per_minute, p_est) END
              ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) y ON true),
    w AS (
        UPDATE limit_cells c SET
            job_id = CASE WHEN c.kind = 'c' THEN p_job ELSE c.job_id END,
            free_at = CASE WHEN c.kind = 'r' THEN now() + f.pause ELSE c.free_at END,
            reserved = CASE WHEN c.kind <> 't' THEN c.reserved
                            WHEN c.minute = date_trunc('minute', now())
                            THEN c.reserved + coalesce(p_est, 0) ELSE coalesce(p_est, 0) END,
            used = CASE WHEN c.kind = 't'
                             AND c.minute IS DISTINCT FROM date_trunc('minute', now())
                        THEN 0 ELSE c.used END,
            minute = CASE WHEN c.kind = 't' THEN date_trunc('minute', now()) ELSE c.minute END
          FROM f WHERE c.id = f.id AND NOT EXISTS (SELECT 1 FROM f g WHERE g.id IS NULL)
        RETURNING c.id, c.kind)
    SELECT CASE WHEN EXISTS (SELECT 1 FROM f WHERE f.id IS NULL) THEN NULL
                ELSE coalesce((SELECT array_agg(w.id) FROM w WHERE w.kind = 't'), '{}')
           END INTO cells;
    RETURN cells;
END $$;

-- Usage in stats (docs/decisions/0099-usage-counters.md): the model usage dispositions report,
-- summed per flow step (key '') and per (flow step, limit key of the job). A report appends
-- one row per sum it adds to (usage_deltas: no row every disposition shares); the sweeper
-- folds them into usage_counts (verdict_fold_usage, with the other counters); a reader adds
-- the two, so stats cost what the counters and the unfolded rows cost, not the jobs.
CREATE TABLE usage_counts (
    flow_step_id  text NOT NULL,
    key           text NOT NULL,
    jobs          bigint NOT NULL DEFAULT 0,
    input_tokens  bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cost_usd      numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (flow_step_id, key)
);
CREATE TABLE usage_deltas (
    flow_step_id  text NOT NULL,
    key           text NOT NULL,
    input_tokens  bigint NOT NULL,
    output_tokens bigint NOT NULL,
    cost_usd      numeric
);
-- the usage reported before this migration, from the jobs that kept it
INSERT INTO usage_counts (flow_step_id, key, jobs, input_tokens, output_tokens, cost_usd)
SELECT j.flow_step_id, k.key, count(*), sum(j.usage_input_tokens),
       sum(j.usage_output_tokens), coalesce(sum(j.usage_cost_usd), 0)
  FROM jobs j CROSS JOIN LATERAL unnest(ARRAY[''] || coalesce(j.limit_keys, '{}')) k(key)
 WHERE j.usage_input_tokens IS NOT NULL
 GROUP BY 1, 2;

CREATE FUNCTION verdict_fold_usage() RETURNS void
    LANGUAGE plpgsql VOLATILE
    AS $$
BEGIN
    WITH d AS (DELETE FROM usage_deltas RETURNING *)
    INSERT INTO usage_counts AS u (flow_step_id, key, jobs, input_tokens, output_tokens,
                                   cost_usd)
    SELECT d.flow_step_id, d.key, count(*), sum(d.input_tokens), sum(d.output_tokens),
           coalesce(sum(d.cost_usd), 0)
      FROM d GROUP BY 1, 2
    ON CONFLICT (flow_step_id, key) DO UPDATE SET jobs = u.jobs + EXCLUDED.jobs,
        input_tokens = u.input_tokens + EXCLUDED.input_tokens,
        output_tokens = u.output_tokens + EXCLUDED.output_tokens,
        cost_usd = u.cost_usd + EXCLUDED.cost_usd;
END $$;

-- The usage as stats show it: (flow_step_id, key, jobs, input, output, cost), counters and
-- unfolded rows added; p_fs NULL for every flow step.
CREATE FUNCTION verdict_usage_sums(p_fs text)
    RETURNS TABLE (flow_step_id text, key text, jobs bigint, input_tokens bigint,
                   output_tokens bigint, cost_usd numeric)
    LANGUAGE sql STABLE
    AS $$ SELECT x.flow_step_id, x.key, sum(x.jobs)::bigint, sum(x.input_tokens)::bigint,
                 sum(x.output_tokens)::bigint, sum(x.cost_usd)
            FROM (SELECT u.flow_step_id, u.key, u.jobs, u.input_tokens, u.output_tokens,
                         u.cost_usd FROM usage_counts u
                  UNION ALL SELECT d.flow_step_id, d.key, 1, d.input_tokens, d.output_tokens,
                         coalesce(d.cost_usd, 0) FROM usage_deltas d) x
           WHERE p_fs IS NULL OR x.flow_step_id = p_fs
           GROUP BY 1, 2 $$;
