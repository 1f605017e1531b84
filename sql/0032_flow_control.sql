-- 0032_flow_control: limits per key (concurrency, a GCRA rate, model tokens per minute),
-- provider backoff, and the claim that honours them (docs/decisions/0050-limits-in-the-claim.md).
--
-- A limit key ("provider:openai", "site:blog-3") is a row of `limits`. Items carry keys from
-- their registration (items.limit_keys), claims carry keys of their own; the job of a claim
-- holds the union of both (jobs.limit_keys), sorted. A claim that names keys, or that claims
-- in a flow step where an item with keys was ever registered (flow_steps.keyed), runs
-- verdict_claim_limited: one statement, in the claim's transaction, that locks the rows of
-- every key involved in key order (claims never deadlock on each other), hands out only
-- items whose every key has room, and takes the room. A key without a row has no limit.
-- The room a job holds is given back by a trigger when the job leaves 'processing' (any
-- disposition, release, expiry): every path that finishes a job frees its keys.

CREATE TABLE limits (
    key               text PRIMARY KEY CHECK (key ~ '^[A-Za-z0-9._:@-]{1,200}$'),
    concurrency       integer CHECK (concurrency BETWEEN 0 AND 1000000),
    rate_per_seconds  integer CHECK (rate_per_seconds IN (1, 60, 3600)),
    rate_count        integer CHECK (rate_count BETWEEN 1 AND 1000000),
    rate_burst        integer CHECK (rate_burst BETWEEN 1 AND 1000000),
    tokens_per_minute bigint CHECK (tokens_per_minute BETWEEN 1 AND 1000000000000),
    -- live use
    in_flight         integer NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
    rate_tat          timestamptz,               -- GCRA: the theoretical arrival time
    tok_minute        timestamptz,               -- the minute tok_* count
    tok_reserved      bigint NOT NULL DEFAULT 0, -- estimates and settled usage of that minute
    tok_used          bigint NOT NULL DEFAULT 0, -- reported usage of that minute
    tokens_used_total bigint NOT NULL DEFAULT 0,
    throttled_until   timestamptz,
    throttle_reason   text,
    backoff_streak    integer NOT NULL DEFAULT 0,
    backoffs_total    bigint NOT NULL DEFAULT 0,
    waiting           boolean NOT NULL DEFAULT false, -- a claim found it closed: announce frees
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((rate_count IS NULL) = (rate_per_seconds IS NULL)),
    CHECK ((rate_count IS NULL) = (rate_burst IS NULL))
);

ALTER TABLE items ADD COLUMN limit_keys text[],
                  ADD COLUMN usage_tokens bigint NOT NULL DEFAULT 0,
                  ADD COLUMN usage_cost_usd numeric NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN limit_keys text[],
                 ADD COLUMN estimated_tokens bigint,
                 ADD COLUMN usage_input_tokens bigint,
                 ADD COLUMN usage_output_tokens bigint,
                 ADD COLUMN usage_cost_usd numeric,
                 ADD COLUMN usage_model text;
ALTER TABLE flow_steps ADD COLUMN keyed boolean NOT NULL DEFAULT false,
                       ADD COLUMN max_item_tokens bigint,
                       ADD COLUMN max_item_cost_usd numeric;

-- The sorted union of two key lists; NULL when both are empty.
CREATE FUNCTION verdict_keys_union(a text[], b text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT array_agg(DISTINCT k ORDER BY k)
          FROM (SELECT unnest(a) UNION SELECT unnest(b)) x(k) $$;

-- GCRA's emission interval: per / count.
CREATE FUNCTION verdict_limit_interval(l limits) RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT l.rate_per_seconds * interval '1 second' / l.rate_count $$;

-- Whether key l has no room now for one more claim reserving est tokens: throttled, at its
-- concurrency, its rate bucket empty, or its token minute spent (an estimate alone larger
-- than the whole minute still passes in an empty minute: it is never starved).
CREATE FUNCTION verdict_limit_closed(l limits, est bigint) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT coalesce(l.throttled_until > now(), false)
              OR coalesce(l.in_flight >= l.concurrency, false)
              OR coalesce(l.rate_tat - now() > (l.rate_burst - 1) * verdict_limit_interval(l),
                          false)
              OR coalesce(l.tok_minute = date_trunc('minute', now())
                          AND (l.tok_reserved >= l.tokens_per_minute
                               OR (l.tok_reserved > 0
                                   AND l.tok_reserved + coalesce(est, 0) > l.tokens_per_minute)),
                          false) $$;

-- A limit as the API shows it: its settings and its live use.
CREATE FUNCTION verdict_limit_json(l limits) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'key', l.key, 'concurrency', l.concurrency,
        'rate', CASE WHEN l.rate_count IS NOT NULL THEN json_build_object(
            'per', CASE l.rate_per_seconds WHEN 1 THEN 'second' WHEN 60 THEN 'minute'
                   ELSE 'hour' END,
            'count', l.rate_count, 'burst', l.rate_burst) END,
        'tokens_per_minute', l.tokens_per_minute,
        'in_flight', l.in_flight,
        'rate_available', CASE WHEN l.rate_count IS NOT NULL THEN greatest(0, least(l.rate_burst,
            floor((l.rate_burst * extract(epoch FROM verdict_limit_interval(l))
                   - greatest(0, extract(epoch FROM coalesce(l.rate_tat, now()) - now())))
                  / extract(epoch FROM verdict_limit_interval(l)))::bigint)) END,
        'tokens_reserved', CASE WHEN l.tok_minute = date_trunc('minute', now())
                                THEN l.tok_reserved ELSE 0 END,
        'tokens_used', CASE WHEN l.tok_minute = date_trunc('minute', now())
                            THEN l.tok_used ELSE 0 END,
        'tokens_used_total', l.tokens_used_total,
        'throttled', coalesce(l.throttled_until > now(), false),
        'throttled_until', CASE WHEN l.throttled_until > now()
                                THEN verdict_ts(l.throttled_until) END,
        'throttle_reason', CASE WHEN l.throttled_until > now() THEN l.throttle_reason END,
        'backoff_streak', l.backoff_streak, 'backoffs_total', l.backoffs_total,
        'open', NOT verdict_limit_closed(l, 0),
        'updated_at', verdict_ts(l.updated_at)) $$;

-- A backoff (a provider's 429): the key is throttled for the pause, which grows with a streak
-- of backoffs: a backoff within 5 minutes after the previous pause ended doubles the pause
-- (pause = min(cap, retry_after * 2^(streak - 1))); a backoff while the key is still
-- throttled (other workers meeting the same 429) only extends it to its own retry_after and
-- does not grow the streak. The key's row is made when it has none.
CREATE FUNCTION verdict_limit_backoff(p_key text, p_after integer, p_reason text,
                                      p_cap integer) RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    l limits;
BEGIN
    INSERT INTO limits AS x (key) VALUES (p_key) ON CONFLICT (key) DO NOTHING;
    SELECT * INTO l FROM limits WHERE key = p_key FOR UPDATE;
    IF coalesce(l.throttled_until > now(), false) THEN
        UPDATE limits SET throttled_until = greatest(throttled_until,
                              now() + least(p_after, p_cap) * interval '1 second'),
                          throttle_reason = coalesce(p_reason, throttle_reason),
                          backoffs_total = backoffs_total + 1, updated_at = now()
         WHERE key = p_key RETURNING * INTO l;
    ELSE
        l.backoff_streak := CASE WHEN l.throttled_until > now() - interval '5 minutes'
                                 THEN l.backoff_streak + 1 ELSE 1 END;
        UPDATE limits SET backoff_streak = l.backoff_streak,
                          throttled_until = now() + least(p_cap::numeric,
                              p_after * power(2::numeric, least(l.backoff_streak - 1, 30)))
                              * interval '1 second',
                          throttle_reason = p_reason, waiting = true,
                          backoffs_total = backoffs_total + 1, updated_at = now()
         WHERE key = p_key RETURNING * INTO l;
    END IF;
    RETURN json_build_object('limit', verdict_limit_json(l))::text;
END $$;

-- How long until every key of a job is open again (0 when none is throttled): a rate_limited
-- deferral makes its item claimable then.
CREATE FUNCTION verdict_job_reopen_seconds(p_job bigint) RETURNS double precision
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce(greatest(0, max(extract(epoch FROM l.throttled_until - now()))), 0)
          FROM jobs j JOIN limits l ON l.key = ANY (j.limit_keys) WHERE j.id = p_job $$;

-- The claim with limits: see the head of this file. p_keys the claim's keys (sorted, or
-- NULL), p_est the tokens each claimed item reserves on every key (or NULL). Candidates are
-- locked SKIP LOCKED in claim order, skipping items whose own keys are visibly closed, up to
-- a window of 4 per wanted item; then the rows of every key involved are locked in key order
-- and each candidate is taken, in order, when every key it needs still has room.
CREATE FUNCTION verdict_claim_limited(p_fs text, p_worker text, p_limit integer,
                                      p_lease integer, p_actor text, p_version text,
                                      p_keys text[], p_est bigint) RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    cand bigint[];
    took bigint[] := '{}';
    c record;
    k text[];
BEGIN
    IF EXISTS (SELECT 1 FROM flow_steps f WHERE f.flow_step_id = p_fs AND f.paused) THEN
        RETURN '{"claims" : []}';
    END IF;
    IF p_keys IS NOT NULL AND EXISTS (SELECT 1 FROM limits l WHERE l.key = ANY (p_keys)
                                       AND verdict_limit_closed(l, p_est)) THEN
        UPDATE limits l SET waiting = true WHERE l.key = ANY (p_keys) AND NOT l.waiting
           AND verdict_limit_closed(l, p_est);
        RETURN '{"claims" : []}';
    END IF;
    SELECT array_agg(s.id ORDER BY s.priority DESC, s.available_at, s.id) INTO cand
      FROM (SELECT i.id, i.priority, i.available_at FROM items i
             WHERE i.flow_step_id = p_fs AND i.state IN ('available', 'deferred')
               AND i.available_at <= now()
               AND (i.limit_keys IS NULL OR NOT EXISTS (SELECT 1 FROM limits l
                        WHERE l.key = ANY (i.limit_keys) AND verdict_limit_closed(l, p_est)))
             ORDER BY i.priority DESC, i.available_at, i.id
             LIMIT least(p_limit * 4, 400) FOR UPDATE OF i SKIP LOCKED) s;
    IF cand IS NULL THEN
        RETURN '{"claims" : []}';
    END IF;
    PERFORM 1 FROM limits l
      WHERE l.key = ANY (verdict_keys_union(p_keys, (SELECT array_agg(DISTINCT x)
                FROM items i, unnest(i.limit_keys) x WHERE i.id = ANY (cand))))
      ORDER BY l.key FOR UPDATE;
    FOR c IN SELECT i.id, verdict_keys_union(p_keys, i.limit_keys) AS keys
               FROM unnest(cand) WITH ORDINALITY u(id, ord) JOIN items i ON i.id = u.id
              ORDER BY u.ord LOOP
        EXIT WHEN cardinality(took) >= p_limit;
        k := c.keys;
        IF k IS NULL THEN
            took := took || c.id;
        ELSIF NOT EXISTS (SELECT 1 FROM limits l WHERE l.key = ANY (k)
                           AND verdict_limit_closed(l, p_est)) THEN
            UPDATE limits l SET in_flight = l.in_flight + 1,
                   rate_tat = CASE WHEN l.rate_count IS NOT NULL
                       THEN greatest(coalesce(l.rate_tat, now()), now())
                            + verdict_limit_interval(l) END,
                   tok_reserved = CASE WHEN l.tok_minute = date_trunc('minute', now())
                       THEN l.tok_reserved ELSE 0 END + coalesce(p_est, 0),
                   tok_used = CASE WHEN l.tok_minute = date_trunc('minute', now())
                       THEN l.tok_used ELSE 0 END,
                   tok_minute = date_trunc('minute', now()), waiting = false
             WHERE l.key = ANY (k);
            took := took || c.id;
        ELSE
            UPDATE limits l SET waiting = true WHERE l.key = ANY (k) AND NOT l.waiting
               AND verdict_limit_closed(l, p_est);
        END IF;
    END LOOP;
    RETURN verdict_claim_take(p_fs, p_worker, p_lease, p_actor, p_version, p_keys, p_est, took);
END $$;

-- The jobs, item updates and transitions of the items a limited claim took (in that order),
-- and its answer, as the plain claim statement renders it (src/store/statements.c).
CREATE FUNCTION verdict_claim_take(p_fs text, p_worker text, p_lease integer, p_actor text,
                                   p_version text, p_keys text[], p_est bigint,
                                   p_took bigint[]) RETURNS text
    LANGUAGE sql VOLATILE
    AS $$
    WITH cand AS (
      SELECT i.id, i.state, i.attempts, verdict_keys_union(p_keys, i.limit_keys) AS keys, u.ord
      FROM unnest(p_took) WITH ORDINALITY u(id, ord) JOIN items i ON i.id = u.id),
     j AS (
      INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, claim_token,
                        lease_expires_at, worker_version, limit_keys, estimated_tokens)
      SELECT c.id, p_fs, p_worker, c.attempts + 1, gen_random_uuid(),
             now() + p_lease * interval '1 second', p_version, c.keys,
             CASE WHEN c.keys IS NOT NULL THEN p_est END
      FROM cand c ORDER BY c.ord
      RETURNING id, item_id, claim_token, attempt, lease_expires_at),
     u AS (
      UPDATE items i SET state = 'claimed', attempts = j.attempt,
        claim_token = j.claim_token, current_job_id = j.id,
        lease_expires_at = j.lease_expires_at, updated_at = now()
      FROM j JOIN item_sources s ON s.id = j.item_id
      WHERE i.id = j.item_id
      RETURNING i.id, verdict_item_json(i, s) AS item),
     t AS (
      INSERT INTO transitions (item_id, job_id, from_state, to_state, job_status, cause, actor)
      SELECT c.id, j.id, c.state, 'claimed', 'processing', 'claim', p_actor
      FROM cand c JOIN j ON j.item_id = c.id)
    SELECT json_build_object('claims', coalesce(json_agg(json_build_object(
       'job_id', j.id, 'claim_token', j.claim_token, 'attempt', j.attempt,
       'lease_expires_at', verdict_ts(j.lease_expires_at), 'item', u.item,
       'limit_keys', c.keys,
       'previous_checkpoint', (SELECT p.checkpoint FROM jobs p WHERE p.item_id = u.id
         AND p.id < j.id AND p.checkpoint IS NOT NULL ORDER BY p.id DESC LIMIT 1))
       ORDER BY c.ord), '[]'::json))::text
    FROM u JOIN j ON j.item_id = u.id JOIN cand c ON c.id = u.id $$;

-- A job that leaves 'processing' gives its keys' room back. When a claim found one of them
-- closed (waiting), the flow step is announced on verdict_claimable so its long-poll claims
-- try again (listen.c): "0 <flow_step_id>", as the statements' announcements read.
CREATE FUNCTION verdict_limits_release() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    w boolean;
BEGIN
    SELECT bool_or(l.waiting) INTO w FROM limits l WHERE l.key = ANY (NEW.limit_keys);
    UPDATE limits l SET in_flight = greatest(l.in_flight - 1, 0), waiting = false
     WHERE l.key = ANY (NEW.limit_keys);
    IF w THEN
        PERFORM pg_notify('verdict_claimable', '0 ' || NEW.flow_step_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_limits_release AFTER UPDATE OF status ON jobs FOR EACH ROW
    WHEN (OLD.status = 'processing' AND NEW.status <> 'processing'
          AND NEW.limit_keys IS NOT NULL)
    EXECUTE FUNCTION verdict_limits_release();
