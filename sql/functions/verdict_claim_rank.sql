-- verdict_claim_rank: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 91eee72acdf1acdb998d1e11ba7fde2b
-- The claim rank (sql/migrations/0037_priority_fairness.sql): available_at, earlier by one
-- minute per point of priority. Computed on UTC wall time, where every operation is IMMUTABLE,
-- so PostgreSQL inlines it into the statements and the indexes; timestamptz - interval is only
-- STABLE, and the first body (the same values) was run as a function that parsed and planned
-- itself again in every statement evaluating it.
CREATE OR REPLACE FUNCTION public.verdict_claim_rank(available_at timestamp with time zone, priority integer)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT ((available_at AT TIME ZONE 'UTC') - priority * interval '1 minute') AT TIME ZONE 'UTC' $function$
;
