-- verdict_shard_fits: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 3e7dec8b817628a6617aa42a871dc643
CREATE OR REPLACE FUNCTION public.verdict_shard_fits(c limit_cells, tpm bigint, est bigint)
 RETURNS boolean
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT c.minute IS DISTINCT FROM date_trunc('minute', now()) OR c.reserved = 0
              OR (c.reserved < ceil(tpm / 8.0)
                  AND c.reserved + coalesce(est, 0) <= ceil(tpm / 8.0)) $function$
;
