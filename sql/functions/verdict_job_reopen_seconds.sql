-- verdict_job_reopen_seconds: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 0d110d9c1bab88a825a70ebed8bfa78e
CREATE OR REPLACE FUNCTION public.verdict_job_reopen_seconds(p_job bigint)
 RETURNS double precision
 LANGUAGE sql
 STABLE
AS $function$ SELECT coalesce(greatest(0, max(extract(epoch FROM l.throttled_until - now()))), 0)
          FROM jobs j JOIN limits l ON l.key = ANY (j.limit_keys) WHERE j.id = p_job $function$
;
