-- 0017_claim_next: the answer a disposition with claim_next keeps for replays (issue 21).
--
-- A single disposition with `claim_next` claims the next items in its own transaction and
-- answers them as `claims` (exactly as POST /v1/claims). The identical call again must answer
-- the same claims, so they belong to the kept answer; but each claim carries its whole item
-- (identifier, payload, ...), which would make job_answers, the widest row of the hot path,
-- about a kilobyte wider per claim. The kept answer therefore ends with only the claimed job
-- ids, `,"claimed":[<job id>,...]}` (job_finish writes it), and a replay renders the claims
-- from those jobs as they stand when it is read (verdict_kept_answer, used by every statement
-- that reads job_answers.response): the same jobs and claim tokens (their current lease and
-- item, and the same previous_checkpoint as the claim statement renders). An answer without
-- that tail is returned unchanged.
CREATE FUNCTION verdict_kept_answer(p_response text) RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    AS $$
    SELECT CASE WHEN m IS NULL THEN p_response
        ELSE left(p_response, length(p_response) - length(m[1]) - 1) || ',"claims" : '
             || coalesce((SELECT json_agg(json_build_object(
                    'job_id', j.id, 'claim_token', j.claim_token, 'attempt', j.attempt,
                    'lease_expires_at', verdict_ts(j.lease_expires_at),
                    'item', verdict_item_json(i),
                    'previous_checkpoint', (SELECT p.checkpoint FROM jobs p
                        WHERE p.item_id = i.id AND p.id < j.id AND p.checkpoint IS NOT NULL
                        ORDER BY p.id DESC LIMIT 1)) ORDER BY k.ord)
                  FROM unnest(string_to_array(m[2], ',')::bigint[]) WITH ORDINALITY AS k(id, ord)
                  JOIN jobs j ON j.id = k.id JOIN items i ON i.id = j.item_id),
                 '[]'::json)::text || '}'
    END
    FROM (SELECT regexp_match(p_response, '(,"claimed":\[([0-9,]*)\])\}$') AS m) x $$;

-- The kept form of a claim's answer {"claims" : [...]}: its job ids, `[1,2]`.
CREATE FUNCTION verdict_claimed_ids(p_claims text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT '[' || coalesce(string_agg(e->>'job_id', ',' ORDER BY k), '') || ']'
          FROM json_array_elements(p_claims::json->'claims') WITH ORDINALITY AS c(e, k) $$;
