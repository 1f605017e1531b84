-- verdict_lane_alive: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: e7c2f203cfb9d0b60e99338a6806bbe4
-- The holders of a lane that still hold a slot: every job not visibly finished (a job whose
-- claim or end this snapshot does not see counts as holding: errs only towards full). Its
-- plan is made once per session, by whichever statement calls it first, and kept: with
-- sequential scans off it looks each holder up by key even when it was made while jobs was
-- empty (docs/decisions/0122-claims-planned-by-index.md).
CREATE OR REPLACE FUNCTION public.verdict_lane_alive(h bigint[])
 RETURNS bigint[]
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
    RETURN ARRAY(SELECT x FROM unnest(h) x WHERE NOT EXISTS (SELECT 1 FROM jobs j
                  WHERE j.id = x AND j.status <> 'processing'));
END $function$
;
