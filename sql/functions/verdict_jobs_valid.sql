-- verdict_jobs_valid: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 6e5f76c638b7bab6948eccdc183e467a
CREATE OR REPLACE FUNCTION public.verdict_jobs_valid(status text, finished_at timestamp with time zone, disposition text, worker_id text, worker_version text, checkpoint jsonb, engine_data jsonb, disposition_trace_id text, claim_trace_id text, claim_span_id text, answer_head text, answer_response text, attempt integer)
 RETURNS boolean
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE
AS $function$
BEGIN
    RETURN disposition = ANY ('{complete,reject_source,defer_item,fail,skip_item,session_outcome,request_review}'::text[])
        AND status = ANY ('{processing,completed,rejected,deferred,failed,expired,released}'::text[])
        AND (status = 'processing') = (finished_at IS NULL)
        AND (worker_version IS NULL
             OR (octet_length(worker_version) >= 1 AND octet_length(worker_version) <= 64))
        AND octet_length(worker_id) >= 1 AND octet_length(worker_id) <= 200
        AND (checkpoint IS NULL OR jsonb_typeof(checkpoint) = 'object')
        AND jsonb_typeof(engine_data) = 'object'
        AND disposition_trace_id ~ '^[0-9a-f]{32}$'
        AND claim_trace_id ~ '^[0-9a-f]{32}$'
        AND claim_span_id ~ '^[0-9a-f]{16}$'
        AND (answer_head IS NULL OR answer_response IS NULL)
        AND attempt >= 1;
END $function$
;
