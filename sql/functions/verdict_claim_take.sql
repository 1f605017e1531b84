-- verdict_claim_take: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: bf0d57de0405f9a9cea1af4f0a697ee7
CREATE OR REPLACE FUNCTION public.verdict_claim_take(p_fs text, p_worker text, p_lease integer, p_actor text, p_version text, p_keys text[], p_est bigint, p_took bigint[], p_cells jsonb, p_trace text, p_span text)
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
             (p_cells -> i.id::text ->> 'job')::bigint AS job,
             (SELECT array_agg(x::bigint)
                FROM jsonb_array_elements_text(p_cells -> i.id::text -> 'cells') x) AS cells,
             u.ord
      FROM unnest(p_took) WITH ORDINALITY u(id, ord) JOIN items i ON i.id = u.id),
     j AS (
      INSERT INTO jobs (id, item_id, flow_step_id, worker_id, attempt, claim_token,
                        lease_expires_at, worker_version, limit_keys, limit_cells,
                        estimated_tokens, lease_seconds, claim_trace_id, claim_span_id,
                        claim_from, claim_actor)
      -- the id the limited claim allocated (its slots name it), else the sequence's next
      SELECT coalesce(c.job, nextval('transitions_id_seq')), c.id, p_fs, p_worker, c.attempts + 1, gen_random_uuid(),
             now() + p_lease * interval '1 second', p_version, c.keys, c.cells,
             CASE WHEN c.keys IS NOT NULL THEN p_est END, p_lease, p_trace, p_span,
             c.state, p_actor
      FROM cand c ORDER BY c.ord
      RETURNING id, item_id, claim_token, attempt, lease_expires_at),
     u AS (
      UPDATE items i SET state = verdict_transition(i.state, 'claim'), attempts = j.attempt,
        claim_token = j.claim_token, current_job_id = j.id,
        lease_expires_at = j.lease_expires_at, updated_at = now()
      FROM j JOIN item_sources s ON s.id = j.item_id
      WHERE i.id = j.item_id
      -- an editor's answer reaches the next attempt, as in the plain claim
      RETURNING i.id, verdict_item_json(i, s) AS item,
        CASE WHEN i.last_reason_code IN ('review_answered', 'lease_expired', 'admin_release')
          THEN verdict_item_review(i.id) END AS review)
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
END $function$
;
