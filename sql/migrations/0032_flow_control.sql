-- 0032_flow_control: limits per key (concurrency, a rate with a burst, model tokens per
-- minute), provider backoff, and the claim that honours them
-- (docs/decisions/0050-limits-in-the-claim.md).
--
-- A limit key ("provider:openai", "site:blog-3") is a row of `limits`: its settings and its
-- throttle. Its room is a set of CELLS (`limit_cells`), never one counter: a concurrency
-- limit of N is N slot cells, a rate of `count` per `per` with burst B is B token cells each
-- usable again B * per/count after use, tokens per minute are 8 shards of the minute's
-- budget. A claim takes one free cell of each kind of each key it needs with
-- FOR UPDATE SKIP LOCKED, so concurrent claims never wait for each other and never take the
-- same room; a finished job gives its slot cells back (a trigger). No row is shared by every
-- claim of a key: a counter row would serialise them all at the speed of one commit (WAL
-- flush), which the first version of this file measured (bench/results/2026-11-27-limits.md).
--
-- Items carry keys from their registration (items.limit_keys), claims carry keys of their
-- own; the job of a claim holds the union of both (jobs.limit_keys) and the cells it took
-- (jobs.limit_cells). A claim that names keys, or that claims in a flow step where an item
-- with keys was ever registered (flow_steps.keyed), runs verdict_claim_limited: one
-- statement, in the claim's transaction. A key without a row has no limit.

CREATE TABLE limits (
    key               text PRIMARY KEY CHECK (key ~ '^[A-Za-z0-9._:@-]{1,200}$'),
    concurrency       integer CHECK (concurrency BETWEEN 0 AND 10000),
    rate_per_seconds  integer CHECK (rate_per_seconds IN (1, 60, 3600)),
    rate_count        integer CHECK (rate_count BETWEEN 1 AND 1000000),
    rate_burst        integer CHECK (rate_burst BETWEEN 1 AND 10000),
    tokens_per_minute bigint CHECK (tokens_per_minute BETWEEN 1 AND 1000000000000),
    throttled_until   timestamptz,
    throttle_reason   text,
    backoff_streak    integer NOT NULL DEFAULT 0,
    backoffs_total    bigint NOT NULL DEFAULT 0,
    -- a claim found the key closed (written at most once a second): a job freeing it is
    -- announced to the long-poll claims for a while
    waiting_at        timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((rate_count IS NULL) = (rate_per_seconds IS NULL)),
    CHECK ((rate_count IS NULL) = (rate_burst IS NULL))
);

-- kind 'c': a concurrency slot (held by a live job); 'r': a rate token (usable from
-- free_at); 't': a shard of the tokens of `minute` (reserved: estimates of claims, settled
-- against reported usage; used: reported usage).
CREATE TABLE limit_cells (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key        text NOT NULL REFERENCES limits (key) ON DELETE CASCADE,
    kind       "char" NOT NULL CHECK (kind IN ('c', 'r', 't')),
    n          integer NOT NULL,
    held       boolean NOT NULL DEFAULT false,
    free_at    timestamptz NOT NULL DEFAULT '-infinity',
    minute     timestamptz,
    reserved   bigint NOT NULL DEFAULT 0,
    used       bigint NOT NULL DEFAULT 0,
    used_total bigint NOT NULL DEFAULT 0,
    UNIQUE (key, kind, n)
) WITH (fillfactor = 50);
-- No index on held or free_at: a claim finds a free cell by walking the key's cells of one
-- kind (UNIQUE (key, kind, n)), and every write of a cell stays a HOT update (no index entry
-- to add), which halved the WAL of a claim with limits. Walking costs O(slots in use).

ALTER TABLE items ADD COLUMN limit_keys text[],
                  ADD COLUMN usage_tokens bigint NOT NULL DEFAULT 0,
                  ADD COLUMN usage_cost_usd numeric NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN limit_keys text[],
                 ADD COLUMN limit_cells bigint[],
                 ADD COLUMN estimated_tokens bigint,
                 ADD COLUMN usage_input_tokens bigint,
                 ADD COLUMN usage_output_tokens bigint,
                 ADD COLUMN usage_cost_usd numeric,
                 ADD COLUMN usage_model text;
ALTER TABLE flow_steps ADD COLUMN keyed boolean NOT NULL DEFAULT false,
                       ADD COLUMN max_item_tokens bigint,
                       ADD COLUMN max_item_cost_usd numeric;

-- PL/pgSQL throughout the claim's path: a SQL function that PostgreSQL cannot inline (one
-- with a sub-select or an aggregate) is planned again on every call, which the first
-- measurement of this file showed as most of the claim's time.

-- The sorted union of two sorted, duplicate-free key lists; NULL when both are empty.
CREATE FUNCTION verdict_keys_union(a text[], b text[]) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
BEGIN
    IF b IS NULL THEN
        RETURN a;
    ELSIF a IS NULL THEN
        RETURN b;
    END IF;
    RETURN (SELECT array_agg(DISTINCT k ORDER BY k) FROM unnest(a || b) k);
END $$;

-- The rate's emission interval: per / count. A rate token is usable again burst intervals
-- after its use: over any window of length D at most burst + D / interval claims pass.
CREATE FUNCTION verdict_limit_interval(l limits) RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT l.rate_per_seconds * interval '1 second' / l.rate_count $$;

-- A token shard's share of the minute: a claim reserving est fits when the shard is of an
-- older minute, empty (an estimate larger than a share is never starved), or has room.
CREATE FUNCTION verdict_shard_fits(c limit_cells, tpm bigint, est bigint) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT c.minute IS DISTINCT FROM date_trunc('minute', now()) OR c.reserved = 0
              OR (c.reserved < ceil(tpm / 8.0)
                  AND c.reserved + coalesce(est, 0) <= ceil(tpm / 8.0)) $$;

-- Whether key l has no room now for one more claim reserving est tokens (a snapshot read,
-- no lock): throttled, no free slot, no rate token, no token shard with room.
CREATE FUNCTION verdict_limit_closed(l limits, est bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    AS $$
BEGIN
    RETURN coalesce(l.throttled_until > now(), false)
        OR (l.concurrency IS NOT NULL AND NOT EXISTS (SELECT 1 FROM limit_cells c
                WHERE c.key = l.key AND c.kind = 'c' AND NOT c.held AND c.n < l.concurrency))
        OR (l.rate_count IS NOT NULL AND NOT EXISTS (SELECT 1 FROM limit_cells c
                WHERE c.key = l.key AND c.kind = 'r' AND c.free_at <= now()))
        OR (l.tokens_per_minute IS NOT NULL AND NOT EXISTS (SELECT 1 FROM limit_cells c
                WHERE c.key = l.key AND c.kind = 't'
                  AND verdict_shard_fits(c, l.tokens_per_minute, est)));
END $$;

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
        'in_flight', (SELECT count(*) FROM limit_cells c
                      WHERE c.key = l.key AND c.kind = 'c' AND c.held),
        'rate_available', CASE WHEN l.rate_count IS NOT NULL THEN (SELECT count(*)
            FROM limit_cells c WHERE c.key = l.key AND c.kind = 'r' AND c.free_at <= now()) END,
        'tokens_reserved', (SELECT coalesce(sum(c.reserved), 0) FROM limit_cells c
            WHERE c.key = l.key AND c.kind = 't' AND c.minute = date_trunc('minute', now())),
        'tokens_used', (SELECT coalesce(sum(c.used), 0) FROM limit_cells c
            WHERE c.key = l.key AND c.kind = 't' AND c.minute = date_trunc('minute', now())),
        'tokens_used_total', (SELECT coalesce(sum(c.used_total), 0) FROM limit_cells c
            WHERE c.key = l.key AND c.kind = 't'),
        'throttled', coalesce(l.throttled_until > now(), false),
        'throttled_until', CASE WHEN l.throttled_until > now()
                                THEN verdict_ts(l.throttled_until) END,
        'throttle_reason', CASE WHEN l.throttled_until > now() THEN l.throttle_reason END,
        'backoff_streak', l.backoff_streak, 'backoffs_total', l.backoffs_total,
        'open', NOT verdict_limit_closed(l, 0),
        'updated_at', verdict_ts(l.updated_at)) $$;

-- PUT /v1/limits/{key}: every setting (NULL: none of that kind), and the cells to match. A
-- concurrency lowered below the slots in use takes effect as those jobs end (a slot at or
-- above the limit is never handed out again); a changed rate starts with a full bucket.
CREATE FUNCTION verdict_limit_put(p_key text, p_conc integer, p_per integer, p_count integer,
                                  p_burst integer, p_tpm bigint) RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    l limits;
    old limits;
BEGIN
    SELECT * INTO old FROM limits WHERE key = p_key FOR UPDATE;
    INSERT INTO limits AS x (key, concurrency, rate_per_seconds, rate_count, rate_burst,
                             tokens_per_minute)
    VALUES (p_key, p_conc, p_per, p_count, p_burst, p_tpm)
    ON CONFLICT (key) DO UPDATE SET concurrency = p_conc, rate_per_seconds = p_per,
        rate_count = p_count, rate_burst = p_burst, tokens_per_minute = p_tpm,
        updated_at = now()
    RETURNING * INTO l;
    INSERT INTO limit_cells (key, kind, n)
    SELECT p_key, 'c', g FROM generate_series(0, coalesce(p_conc, 0) - 1) g
    UNION ALL SELECT p_key, 'r', g FROM generate_series(0, coalesce(p_burst, 0) - 1) g
    UNION ALL SELECT p_key, 't', g FROM generate_series(0, 7) g WHERE p_tpm IS NOT NULL
    ON CONFLICT (key, kind, n) DO NOTHING;
    DELETE FROM limit_cells WHERE key = p_key
       AND ((kind = 'c' AND n >= coalesce(p_conc, 0) AND NOT held)
            OR (kind = 'r' AND n >= coalesce(p_burst, 0)) OR (kind = 't' AND p_tpm IS NULL));
    IF old.rate_per_seconds IS DISTINCT FROM p_per OR old.rate_count IS DISTINCT FROM p_count
    THEN
        UPDATE limit_cells SET free_at = '-infinity' WHERE key = p_key AND kind = 'r';
    END IF;
    RETURN json_build_object('limit', verdict_limit_json(l))::text;
END $$;

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
                          throttle_reason = p_reason, waiting_at = now(),
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

-- The room of one claimed item on keys: one free cell of each kind of each key with limits,
-- locked SKIP LOCKED (never waiting for another claim): their ids, '{}' when no key has
-- limits, NULL when a key has no room (the cells locked so far stay locked, unused, until
-- the claim commits).
CREATE FUNCTION verdict_limit_take(p_keys text[], p_est bigint) RETURNS bigint[]
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    r record;
    cells bigint[] := '{}';
BEGIN
    -- one row per (key, kind of limit it has), and 'x' for a throttled key (never a cell);
    -- one statement for all the keys of the item
    FOR r IN SELECT x.id FROM limits l
               CROSS JOIN LATERAL (VALUES ('c'::"char"), ('r'), ('t'), ('x')) k(kind)
               LEFT JOIN LATERAL (SELECT c.id FROM limit_cells c
                     WHERE c.key = l.key AND c.kind = k.kind
                       AND CASE k.kind WHEN 'c' THEN NOT c.held AND c.n < l.concurrency
                                       WHEN 'r' THEN c.free_at <= now()
                                       ELSE verdict_shard_fits(c, l.tokens_per_minute, p_est) END
                     LIMIT 1 FOR UPDATE SKIP LOCKED) x ON true
              WHERE l.key = ANY (p_keys)
                AND CASE k.kind WHEN 'c' THEN l.concurrency IS NOT NULL
                                WHEN 'r' THEN l.rate_count IS NOT NULL
                                WHEN 't' THEN l.tokens_per_minute IS NOT NULL
                                ELSE coalesce(l.throttled_until > now(), false) END LOOP
        IF r.id IS NULL THEN
            RETURN NULL;
        END IF;
        cells := cells || r.id;
    END LOOP;
    RETURN cells;
END $$;

-- Take the cells verdict_limit_take found: a slot is held, a rate token usable again burst
-- intervals from now, a token shard reserves est in the current minute.
CREATE FUNCTION verdict_limit_apply(p_cells bigint[], p_est bigint) RETURNS void
    LANGUAGE plpgsql VOLATILE
    AS $$
BEGIN
    UPDATE limit_cells c SET
        held = c.held OR c.kind = 'c',
        free_at = CASE WHEN c.kind = 'r'
                       THEN now() + l.rate_burst * verdict_limit_interval(l) ELSE c.free_at END,
        reserved = CASE WHEN c.kind <> 't' THEN c.reserved
                        WHEN c.minute = date_trunc('minute', now())
                        THEN c.reserved + coalesce(p_est, 0) ELSE coalesce(p_est, 0) END,
        used = CASE WHEN c.kind = 't' AND c.minute IS DISTINCT FROM date_trunc('minute', now())
                    THEN 0 ELSE c.used END,
        minute = CASE WHEN c.kind = 't' THEN date_trunc('minute', now()) ELSE c.minute END
    FROM limits l WHERE c.id = ANY (p_cells) AND l.key = c.key;
END $$;

-- Mark keys found closed (at most once a second each, never waiting for a row lock).
CREATE FUNCTION verdict_limits_mark_waiting(p_keys text[]) RETURNS void
    LANGUAGE plpgsql VOLATILE
    AS $$
BEGIN
    UPDATE limits SET waiting_at = now() WHERE key IN (SELECT x.key FROM limits x
        WHERE x.key = ANY (p_keys)
          AND (x.waiting_at IS NULL OR x.waiting_at < now() - interval '1 second')
        FOR UPDATE SKIP LOCKED);
END $$;

-- The claim with limits: see the head of this file. p_keys the claim's keys (sorted, or
-- NULL), p_est the tokens each claimed item reserves (or NULL). Candidates are fetched one at
-- a time from a cursor (each locked SKIP LOCKED as it is fetched: a claim whose keys have
-- room locks no more items than it takes) in claim order, skipping items whose own keys are
-- visibly closed, at most 4 per wanted item; each is taken when every key it needs has a
-- free cell of each kind.
CREATE FUNCTION verdict_claim_limited(p_fs text, p_worker text, p_limit integer,
                                      p_lease integer, p_actor text, p_version text,
                                      p_keys text[], p_est bigint) RETURNS text
    LANGUAGE plpgsql VOLATILE
    -- as the plain claim (decision 0003): a custom plan of these statements costs about as
    -- much to make as to run, on every call
    SET plan_cache_mode = force_generic_plan
    AS $$
DECLARE
    cur refcursor;
    took bigint[] := '{}';
    tc jsonb := '{}';
    c record;
    cells bigint[];
    keys text[];
BEGIN
    IF EXISTS (SELECT 1 FROM flow_steps f WHERE f.flow_step_id = p_fs AND f.paused) THEN
        RETURN '{"claims" : []}';
    END IF;
    -- a claim key that is closed is found by verdict_limit_take at the first candidate
    OPEN cur FOR SELECT i.id, i.limit_keys FROM items i
             WHERE i.flow_step_id = p_fs AND i.state IN ('available', 'deferred')
               AND i.available_at <= now()
               AND (i.limit_keys IS NULL OR NOT EXISTS (SELECT 1 FROM limits l
                        WHERE l.key = ANY (i.limit_keys) AND verdict_limit_closed(l, p_est)))
             ORDER BY i.priority DESC, i.available_at, i.id
             LIMIT least(p_limit * 4, 400) FOR UPDATE OF i SKIP LOCKED;
    LOOP
        EXIT WHEN cardinality(took) >= p_limit;
        FETCH cur INTO c;
        EXIT WHEN NOT FOUND;
        keys := CASE WHEN c.limit_keys IS NULL THEN p_keys
                     ELSE verdict_keys_union(p_keys, c.limit_keys) END;
        cells := CASE WHEN keys IS NULL THEN '{}' ELSE verdict_limit_take(keys, p_est) END;
        IF cells IS NULL AND c.limit_keys IS NULL THEN
            EXIT; -- the claim's own keys are closed: no other item can pass either
        ELSIF cells IS NULL THEN
            PERFORM verdict_limits_mark_waiting(keys);
        ELSE
            PERFORM verdict_limit_apply(cells, p_est);
            took := took || c.id;
            tc := tc || jsonb_build_object(c.id::text, to_jsonb(cells));
        END IF;
    END LOOP;
    CLOSE cur;
    IF cardinality(took) = 0 AND p_keys IS NOT NULL THEN
        PERFORM verdict_limits_mark_waiting(p_keys);
    END IF;
    RETURN verdict_claim_take(p_fs, p_worker, p_lease, p_actor, p_version, p_keys, p_est, took,
                              tc);
END $$;

-- The jobs, item updates and transitions of the items a limited claim took (in that order),
-- with the cells each took (p_cells: item id -> cell ids), and its answer, as the plain claim
-- statement renders it (src/store/statements.c).
CREATE FUNCTION verdict_claim_take(p_fs text, p_worker text, p_lease integer, p_actor text,
                                   p_version text, p_keys text[], p_est bigint,
                                   p_took bigint[], p_cells jsonb) RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    answer text;
BEGIN
    IF cardinality(p_took) = 0 THEN
        RETURN '{"claims" : []}';
    END IF;
    WITH cand AS (
      SELECT i.id, i.state, i.attempts,
             CASE WHEN i.limit_keys IS NULL THEN p_keys
                  ELSE verdict_keys_union(p_keys, i.limit_keys) END AS keys,
             (SELECT array_agg(x::bigint) FROM jsonb_array_elements_text(p_cells -> i.id::text) x)
               AS cells, u.ord
      FROM unnest(p_took) WITH ORDINALITY u(id, ord) JOIN items i ON i.id = u.id),
     j AS (
      INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, claim_token,
                        lease_expires_at, worker_version, limit_keys, limit_cells,
                        estimated_tokens)
      SELECT c.id, p_fs, p_worker, c.attempts + 1, gen_random_uuid(),
             now() + p_lease * interval '1 second', p_version, c.keys, c.cells,
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
       ORDER BY c.ord), '[]'::json))::text INTO answer
    FROM u JOIN j ON j.item_id = u.id JOIN cand c ON c.id = u.id;
    RETURN answer;
END $$;

-- A job that leaves 'processing' gives its slots back (its own cells only: no row every
-- claim shares). When a claim lately found one of its keys closed, the flow step is
-- announced on verdict_claimable so its long-poll claims try again (listen.c):
-- "0 <flow_step_id>", as the statements' announcements read.
CREATE FUNCTION verdict_limits_release() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE limit_cells SET held = false
     WHERE id = ANY (NEW.limit_cells) AND kind = 'c' AND held;
    IF EXISTS (SELECT 1 FROM limits l WHERE l.key = ANY (NEW.limit_keys)
                AND l.waiting_at > now() - interval '30 seconds') THEN
        PERFORM pg_notify('verdict_claimable', '0 ' || NEW.flow_step_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_limits_release AFTER UPDATE OF status ON jobs FOR EACH ROW
    WHEN (OLD.status = 'processing' AND NEW.status <> 'processing'
          AND NEW.limit_keys IS NOT NULL)
    EXECUTE FUNCTION verdict_limits_release();

-- The usage a disposition reports for its job (input and output tokens, cost, model): kept
-- on the job, summed on the item, and settled on the token shards the job's claim took: the
-- tokens it reserved in the minute it was made are replaced by what was really used (usage
-- reported in a later minute counts there). Answers whether the item's summed usage now
-- passes its flow step's budget (max_item_tokens, max_item_cost_usd). Runs inside the
-- disposition's transaction, which holds the job's lock.
CREATE FUNCTION verdict_job_usage(p_job bigint, p_in bigint, p_out bigint, p_cost numeric,
                                  p_model text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    j jobs;
    tot bigint := p_in + p_out;
    over boolean;
BEGIN
    UPDATE jobs SET usage_input_tokens = p_in, usage_output_tokens = p_out,
                    usage_cost_usd = p_cost, usage_model = p_model
     WHERE id = p_job RETURNING * INTO j;
    UPDATE items i SET usage_tokens = i.usage_tokens + tot,
                       usage_cost_usd = i.usage_cost_usd + coalesce(p_cost, 0)
     WHERE i.id = j.item_id;
    UPDATE limit_cells c SET
        reserved = greatest(0, CASE WHEN c.minute = date_trunc('minute', now())
            THEN c.reserved + tot
                 - CASE WHEN date_trunc('minute', j.claimed_at) = c.minute
                        THEN coalesce(j.estimated_tokens, 0) ELSE 0 END
            ELSE tot END),
        used = CASE WHEN c.minute = date_trunc('minute', now()) THEN c.used ELSE 0 END + tot,
        minute = date_trunc('minute', now()), used_total = c.used_total + tot
     WHERE c.id = ANY (j.limit_cells) AND c.kind = 't';
    SELECT coalesce(i.usage_tokens > f.max_item_tokens, false)
           OR coalesce(i.usage_cost_usd > f.max_item_cost_usd, false) INTO over
      FROM items i JOIN flow_steps f ON f.flow_step_id = i.flow_step_id
     WHERE i.id = j.item_id;
    RETURN coalesce(over, false);
END $$;
