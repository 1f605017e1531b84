-- verdict_items_valid: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 620c0377efb8291a22d3d83d631653a7
CREATE OR REPLACE FUNCTION public.verdict_items_valid(i items)
 RETURNS boolean
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE
AS $function$
BEGIN
    RETURN i.state = ANY ('{available,claimed,deferred,processed,rejected,manual_review,failed}'::text[])
        AND (i.state = 'claimed') = (i.claim_token IS NOT NULL AND i.lease_expires_at IS NOT NULL
                                     AND i.current_job_id IS NOT NULL)
        AND i.priority >= -1000 AND i.priority <= 1000
        AND i.max_defers >= 1 AND i.max_defers <= 100
        AND i.max_attempts >= 1 AND i.max_attempts <= 100
        AND i.defers >= 0 AND i.failures >= 0 AND i.attempts >= 0;
END $function$
;
