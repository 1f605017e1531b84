-- verdict_fair_value: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 6cd370170943d8a89e4cdf8822ad996c
CREATE OR REPLACE FUNCTION public.verdict_fair_value(keys text[], k text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT CASE WHEN k IS NOT NULL THEN coalesce((SELECT min(x) FROM unnest(keys) x
                                                         WHERE split_part(x, ':', 1) = k), '')
                 END $function$
;
