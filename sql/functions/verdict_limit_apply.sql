-- verdict_limit_apply: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 5364ddfb21c8606fe75744916eb1c9fc
CREATE OR REPLACE FUNCTION public.verdict_limit_apply(p_cells bigint[], p_est bigint)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    UPDATE limit_cells c SET
        held = c.held OR c.kind = 'c',
        free_at = CASE WHEN c.kind = 'r'
                       THEN now() + l.rate_burst * verdict_limit_interval(l) ELSE c.free_at END,
        reserved = CASE WHEN c.kind <> 't' THEN c.reserved
                        WHEN c.minute = date_trunc('minute', now())
                        THEN c.reserved + coalesce(p_est, 0) ELSE coalesce(p_est, 0) END,
        used = CASE WHEN c.kind = 't' AND c.minute IS DISTINCT FROM date_trunc('minute', now())
                    THEN 0 ELSE c.used END,
        minute = CASE WHEN c.kind = 't' THEN date_trunc('minute', now()) ELSE c.minute END
    FROM limits l WHERE c.id = ANY (p_cells) AND l.key = c.key;
END $function$
;
