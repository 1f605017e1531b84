-- verdict_items_valid: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 15c582a9d80febea4a125686b8358c95
CREATE OR REPLACE FUNCTION public.verdict_items_valid(state text, attempts integer, failures integer, defers integer, max_attempts integer, max_defers integer, priority integer, claim_token uuid, lease_expires_at timestamp with time zone, current_job_id bigint)
 RETURNS boolean
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE
AS $function$
BEGIN
    RETURN state = ANY ('{available,claimed,deferred,processed,rejected,manual_review,failed}'::text[])
        AND (state = 'claimed') = (claim_token IS NOT NULL AND lease_expires_at IS NOT NULL
                                   AND current_job_id IS NOT NULL)
        AND priority >= -1000 AND priority <= 1000
        AND max_defers >= 1 AND max_defers <= 100
        AND max_attempts >= 1 AND max_attempts <= 100
        AND defers >= 0 AND failures >= 0 AND attempts >= 0;
END $function$
;
