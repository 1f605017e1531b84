-- verdict_limits_mark_waiting: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 049bdf9e873c299bebb1fa4e96c80587
CREATE OR REPLACE FUNCTION public.verdict_limits_mark_waiting(p_keys text[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    UPDATE limits SET waiting_at = now() WHERE key IN (SELECT x.key FROM limits x
        WHERE x.key = ANY (p_keys)
          AND (x.waiting_at IS NULL OR x.waiting_at < now() - interval '1 second')
        FOR UPDATE SKIP LOCKED);
END $function$
;
