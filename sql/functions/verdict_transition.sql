-- verdict_transition: generated from src/service/include/verdict/transitions.def by scripts/transitions.sh
-- (scripts/sql.sh gen runs it); do not edit: change the table, then run scripts/sql.sh gen.
-- from-migrations: none
CREATE OR REPLACE FUNCTION public.verdict_transition(p_from text, p_event text, p_failures integer DEFAULT NULL::integer, p_max_attempts integer DEFAULT NULL::integer, p_defers integer DEFAULT NULL::integer, p_max_defers integer DEFAULT NULL::integer)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
SELECT CASE p_event
    WHEN 'register' THEN CASE
        WHEN p_from IS NULL THEN 'available' END
    WHEN 'claim' THEN CASE
        WHEN p_from = 'available' THEN 'claimed'
        WHEN p_from = 'deferred' THEN 'claimed' END
    WHEN 'complete' THEN CASE
        WHEN p_from = 'claimed' THEN 'processed' END
    WHEN 'reject_source' THEN CASE
        WHEN p_from = 'claimed' THEN 'rejected' END
    WHEN 'defer_item' THEN CASE
        WHEN p_from = 'claimed' AND p_defers + 1 < p_max_defers THEN 'deferred'
        WHEN p_from = 'claimed' AND p_defers + 1 >= p_max_defers THEN 'manual_review' END
    WHEN 'defer_review' THEN CASE
        WHEN p_from = 'claimed' THEN 'manual_review' END
    WHEN 'defer_rate_limited' THEN CASE
        WHEN p_from = 'claimed' THEN 'deferred' END
    WHEN 'fail' THEN CASE
        WHEN p_from = 'claimed' AND p_failures + 1 < p_max_attempts THEN 'deferred'
        WHEN p_from = 'claimed' AND p_failures + 1 >= p_max_attempts THEN 'failed' END
    WHEN 'fail_final' THEN CASE
        WHEN p_from = 'claimed' THEN 'failed' END
    WHEN 'session_succeeded' THEN CASE
        WHEN p_from = 'claimed' THEN 'processed' END
    WHEN 'session_retriable' THEN CASE
        WHEN p_from = 'claimed' AND p_failures + 1 < p_max_attempts THEN 'deferred'
        WHEN p_from = 'claimed' AND p_failures + 1 >= p_max_attempts THEN 'failed' END
    WHEN 'session_failed' THEN CASE
        WHEN p_from = 'claimed' THEN 'failed' END
    WHEN 'request_review' THEN CASE
        WHEN p_from = 'claimed' THEN 'manual_review' END
    WHEN 'release' THEN CASE
        WHEN p_from = 'claimed' THEN 'available' END
    WHEN 'release_churn' THEN CASE
        WHEN p_from = 'claimed' THEN 'manual_review' END
    WHEN 'admin_release' THEN CASE
        WHEN p_from = 'claimed' THEN 'available' END
    WHEN 'lease_expired' THEN CASE
        WHEN p_from = 'claimed' AND p_failures + 1 < p_max_attempts THEN 'deferred'
        WHEN p_from = 'claimed' AND p_failures + 1 >= p_max_attempts THEN 'failed' END
    WHEN 'requeue' THEN CASE
        WHEN p_from = 'available' THEN 'available'
        WHEN p_from = 'deferred' THEN 'available'
        WHEN p_from = 'processed' THEN 'available'
        WHEN p_from = 'rejected' THEN 'available'
        WHEN p_from = 'manual_review' THEN 'available'
        WHEN p_from = 'failed' THEN 'available' END
    WHEN 'resolve_processed' THEN CASE
        WHEN p_from = 'manual_review' THEN 'processed'
        WHEN p_from = 'failed' THEN 'processed' END
    WHEN 'resolve_rejected' THEN CASE
        WHEN p_from = 'manual_review' THEN 'rejected'
        WHEN p_from = 'failed' THEN 'rejected' END
    WHEN 'review_available' THEN CASE
        WHEN p_from = 'manual_review' THEN 'available' END
    WHEN 'review_processed' THEN CASE
        WHEN p_from = 'manual_review' THEN 'processed' END
    WHEN 'review_rejected' THEN CASE
        WHEN p_from = 'manual_review' THEN 'rejected' END
END
$function$
;
