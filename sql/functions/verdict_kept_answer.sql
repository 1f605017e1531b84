-- verdict_kept_answer: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: b3b08b241961cd8d007e18e8ab8d0cfe
CREATE OR REPLACE FUNCTION public.verdict_kept_answer(j jobs)
 RETURNS text
 LANGUAGE plpgsql
 STRICT
AS $function$
DECLARE
    whole text;
BEGIN
    IF j.answer_response IS NOT NULL THEN
        RETURN verdict_kept_answer(j.answer_response);
    END IF;
    IF j.answer_head IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT verdict_answer_join(verdict_kept_head(j), verdict_job_json(j)::text,
               verdict_item_json(jsonb_populate_record(i, jsonb_build_object(
                   'state', j.answer_item_state, 'attempts', j.attempt,
                   'failures', j.answer_item_failures, 'defers', j.answer_item_defers,
                   'available_at', j.answer_item_available_at,
                   'lease_expires_at', NULL, 'current_job_id', j.id,
                   'last_reason_code', j.reason_code, 'last_reason', j.reason,
                   'updated_at', j.finished_at)), s)::text,
               j.answer_tail)
        INTO whole
        FROM items i JOIN item_sources s ON s.id = i.id WHERE i.id = j.item_id;
    RETURN verdict_kept_answer(whole);
END $function$
;
CREATE OR REPLACE FUNCTION public.verdict_kept_answer(p_response text)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE STRICT
AS $function$
    SELECT CASE WHEN m IS NULL THEN p_response
        ELSE left(p_response, length(p_response) - length(m[1]) - 1) || ',"claims" : '
             || coalesce((SELECT json_agg(json_build_object(
                    'job_id', j.id, 'claim_token', j.claim_token, 'attempt', j.attempt,
                    'lease_expires_at', verdict_ts(j.lease_expires_at),
                    'item', verdict_item_json(i, s),
                    'previous_checkpoint', (SELECT p.checkpoint FROM jobs p
                        WHERE p.item_id = i.id AND p.id < j.id AND p.checkpoint IS NOT NULL
                        ORDER BY p.id DESC LIMIT 1),
                    'review', verdict_item_review(i.id)) ORDER BY k.ord)
                  FROM unnest(string_to_array(m[2], ',')::bigint[]) WITH ORDINALITY AS k(id, ord)
                  JOIN jobs j ON j.id = k.id JOIN items i ON i.id = j.item_id
                  JOIN item_sources s ON s.id = j.item_id),
                 '[]'::json)::text || '}'
    END
    FROM (SELECT regexp_match(p_response, '(,"claimed":\[([0-9,]*)\])\}$') AS m) x $function$
;
