-- sql/0036_limited_claim_traces.sql: the claim with limit keys records the request's trace and
-- span on its jobs, as the plain claim does (0034, 0035), and keeps the claim's lease length
-- and an editor's answer (review). The two functions take the trace and the span as two more
-- arguments: the old signatures are dropped first so that no overload is left behind.

DROP FUNCTION verdict_claim_limited(text, text, integer, integer, text, text, text[], bigint);
DROP FUNCTION verdict_claim_take(text, text, integer, text, text, text[], bigint, bigint[], jsonb);

CREATE FUNCTION verdict_claim_take(p_fs text, p_worker text, p_lease integer, p_actor text,
    p_version text, p_keys text[], p_est bigint, p_took bigint[], p_cells jsonb, p_trace text,
    p_span text)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
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
                        estimated_tokens, lease_seconds, claim_trace_id, claim_span_id)
      SELECT c.id, p_fs, p_worker, c.attempts + 1, gen_random_uuid(),
             now() + p_lease * interval '1 second', p_version, c.keys, c.cells,
             CASE WHEN c.keys IS NOT NULL THEN p_est END, p_lease, p_trace, p_span
      FROM cand c ORDER BY c.ord
      RETURNING id, item_id, claim_token, attempt, lease_expires_at),
     u AS (
      UPDATE items i SET state = 'claimed', attempts = j.attempt,
        claim_token = j.claim_token, current_job_id = j.id,
        lease_expires_at = j.lease_expires_at, updated_at = now()
      FROM j JOIN item_sources s ON s.id = j.item_id
      WHERE i.id = j.item_id
      -- an editor's answer reaches the next attempt, as in the plain claim
      RETURNING i.id, verdict_item_json(i, s) AS item,
        CASE WHEN i.last_reason_code IN ('review_answered', 'lease_expired', 'admin_release')
          THEN verdict_item_review(i.id) END AS review),
     t AS (
      INSERT INTO transitions (item_id, job_id, from_state, to_state, job_status, cause, actor)
      SELECT c.id, j.id, c.state, 'claimed', 'processing', 'claim', p_actor
      FROM cand c JOIN j ON j.item_id = c.id)
    SELECT json_build_object('claims', coalesce(json_agg(json_build_object(
       'job_id', j.id, 'claim_token', j.claim_token, 'attempt', j.attempt,
       'lease_expires_at', verdict_ts(j.lease_expires_at), 'item', u.item,
       'limit_keys', c.keys,
       'previous_checkpoint', (SELECT p.checkpoint FROM jobs p WHERE p.item_id = u.id
         AND p.id < j.id AND p.checkpoint IS NOT NULL ORDER BY p.id DESC LIMIT 1),
       'review', u.review)
       ORDER BY c.ord), '[]'::json))::text INTO answer
    FROM u JOIN j ON j.item_id = u.id JOIN cand c ON c.id = u.id;
    RETURN answer;
END $function$;

CREATE FUNCTION verdict_claim_limited(p_fs text, p_worker text, p_limit integer, p_lease integer,
    p_actor text, p_version text, p_keys text[], p_est bigint, p_trace text, p_span text)
 RETURNS text
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
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
                              tc, p_trace, p_span);
END $function$;
