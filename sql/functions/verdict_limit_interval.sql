-- verdict_limit_interval: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 518d05f6f78a76f18601bfd7b0fa5b79
CREATE OR REPLACE FUNCTION public.verdict_limit_interval(l limits)
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT l.rate_per_seconds * interval '1 second' / l.rate_count $function$
;
