-- verdict_claim_many_limited: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: none
-- The limited claims of one item each that p_n requests made at once (claim_many_limited), of
-- one or several flow steps, limit key sets and token estimates: for each flow step, key set
-- and estimate (p_rows' fs, keys and est, else p_fs, p_keys and p_est), in the order of its
-- first request, one pick of as many items as it has requests takes the limit room of all of
-- them, and its item k goes to its request k (p_rows: ord 0..n-1, fs, keys, est, worker,
-- version, lease, actor, trace, span), each with its own job and token and the answer a
-- limited claim of one gives. A request left without an item answers no claims; with keys,
-- they are marked waiting, as a claim alone that got nothing marks them.
CREATE OR REPLACE FUNCTION public.verdict_claim_many_limited(p_fs text, p_rows jsonb, p_n integer, p_keys text[], p_est bigint)
 RETURNS TABLE(req integer, answer text)
 LANGUAGE plpgsql
AS $function$
DECLARE
    took bigint[] := '{}'; -- the items taken, and the request each goes to
    ords integer[] := '{}';
    tc jsonb := '{}';
    f record;
    ft bigint[];
    ftc jsonb;
BEGIN
    FOR f IN SELECT x.fs, x.keys, x.est, array_agg(x.ord ORDER BY x.ord) AS ords
               FROM verdict_claim_rows(p_rows, p_fs, p_keys, p_est) x
              GROUP BY 1, 2, 3 ORDER BY min(x.ord) LOOP
        CONTINUE WHEN coalesce((SELECT fl.paused FROM flow_steps fl
                                 WHERE fl.flow_step_id = f.fs), false);
        SELECT p.took, p.tc INTO ft, ftc
          FROM verdict_claim_pick(f.fs, cardinality(f.ords), f.keys, f.est, took) p;
        IF cardinality(ft) BETWEEN 1 AND cardinality(f.ords) - 1 AND f.keys IS NOT NULL THEN
            PERFORM verdict_limits_mark_waiting(f.keys);
        END IF;
        took := took || ft;
        ords := ords || f.ords[1:cardinality(ft)];
        tc := tc || ftc;
    END LOOP;
    RETURN QUERY
    WITH r AS (SELECT x.ord, x.fs, x.keys AS rkeys, x.est AS rest, x.worker, x.version, x.lease,
                      x.actor, x.trace, x.span
                 FROM verdict_claim_rows(p_rows, p_fs, p_keys, p_est) x),
     cand AS MATERIALIZED (
      SELECT i.id, i.state, i.attempts,
             CASE WHEN i.limit_keys IS NULL THEN r.rkeys
                  ELSE verdict_keys_union(r.rkeys, i.limit_keys) END AS keys,
             (tc -> i.id::text ->> 'job')::bigint AS job,
             (SELECT array_agg(x::bigint)
                FROM jsonb_array_elements_text(tc -> i.id::text -> 'cells') x) AS cells,
             r.*
      FROM unnest(took, ords) u(id, ord) JOIN items i ON i.id = u.id
      JOIN r ON r.ord = u.ord),
     j AS (
      INSERT INTO jobs (id, item_id, flow_step_id, worker_id, attempt, claim_token,
                        lease_expires_at, worker_version, limit_keys, limit_cells,
                        estimated_tokens, lease_seconds, claim_trace_id, claim_span_id,
                        claim_from, claim_actor)
      SELECT coalesce(c.job, nextval('transitions_id_seq')), c.id, c.fs, c.worker,
             c.attempts + 1, gen_random_uuid(), now() + c.lease * interval '1 second',
             c.version, c.keys, c.cells, CASE WHEN c.keys IS NOT NULL THEN c.rest END, c.lease,
             c.trace, c.span, c.state, c.actor
      FROM cand c ORDER BY c.ord
      RETURNING id, item_id, claim_token, attempt, lease_expires_at),
     u AS (
      UPDATE items i SET state = verdict_transition(i.state, 'claim'), attempts = j.attempt,
        claim_token = j.claim_token, current_job_id = j.id,
        lease_expires_at = j.lease_expires_at, updated_at = now()
      FROM j JOIN item_sources s ON s.id = j.item_id
      WHERE i.id = j.item_id
      RETURNING i.id, verdict_item_json(i, s) AS item,
        CASE WHEN i.last_reason_code IN ('review_answered', 'lease_expired', 'admin_release')
          THEN verdict_item_review(i.id) END AS review)
    SELECT r.ord, CASE WHEN j.id IS NULL THEN '{"claims" : []}'
      ELSE json_build_object('claims', json_build_array(json_build_object(
       'job_id', j.id, 'claim_token', j.claim_token, 'attempt', j.attempt,
       'lease_expires_at', verdict_ts(j.lease_expires_at), 'item', u.item,
       'limit_keys', c.keys,
       'previous_checkpoint', (SELECT p.checkpoint FROM jobs p WHERE p.item_id = u.id
         AND p.id < j.id AND p.checkpoint IS NOT NULL ORDER BY p.id DESC LIMIT 1),
       'review', u.review)))::text END
    FROM r LEFT JOIN cand c ON c.ord = r.ord LEFT JOIN j ON j.item_id = c.id
    LEFT JOIN u ON u.id = c.id ORDER BY r.ord;
END $function$
;
