-- verdict_limits_release: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: fa8e1fbbad96df6f60b3a80b16d81535
CREATE OR REPLACE FUNCTION public.verdict_limits_release()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    -- its slots are free now without a write: they name this job (sql/migrations/0038)
    IF EXISTS (SELECT 1 FROM limits l WHERE l.key = ANY (NEW.limit_keys)
                AND l.waiting_at > now() - interval '30 seconds') THEN
        PERFORM pg_notify('verdict_claimable', '0 ' || NEW.flow_step_id);
    END IF;
    RETURN NULL;
END $function$
;
