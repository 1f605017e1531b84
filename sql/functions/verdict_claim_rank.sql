-- verdict_claim_rank: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 91eee72acdf1acdb998d1e11ba7fde2b
CREATE OR REPLACE FUNCTION public.verdict_claim_rank(available_at timestamp with time zone, priority integer)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT available_at - priority * interval '1 minute' $function$
;
