-- verdict_jobs_valid: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: e189aace112adab19627d9b3caba6b11
CREATE OR REPLACE FUNCTION public.verdict_jobs_valid(j jobs)
 RETURNS boolean
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE
AS $function$
BEGIN
    RETURN j.disposition = ANY ('{complete,reject_source,defer_item,fail,skip_item,session_outcome,request_review}'::text[])
        AND j.status = ANY ('{processing,completed,rejected,deferred,failed,expired,released}'::text[])
        AND (j.status = 'processing') = (j.finished_at IS NULL)
        AND (j.worker_version IS NULL
             OR (octet_length(j.worker_version) >= 1 AND octet_length(j.worker_version) <= 64))
        AND octet_length(j.worker_id) >= 1 AND octet_length(j.worker_id) <= 200
        AND (j.checkpoint IS NULL OR jsonb_typeof(j.checkpoint) = 'object')
        AND jsonb_typeof(j.engine_data) = 'object'
        AND j.disposition_trace_id ~ '^[0-9a-f]{32}$'
        AND j.claim_trace_id ~ '^[0-9a-f]{32}$'
        AND j.claim_span_id ~ '^[0-9a-f]{16}$'
        AND (j.answer_head IS NULL OR j.answer_response IS NULL)
        AND j.attempt >= 1;
END $function$
;
