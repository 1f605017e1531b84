-- verdict_claim_limited: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 480e8c37e60b9476a71668f238e296c1
CREATE OR REPLACE FUNCTION public.verdict_claim_limited(p_fs text, p_worker text, p_limit integer, p_lease integer, p_actor text, p_version text, p_keys text[], p_est bigint, p_trace text, p_span text)
 RETURNS text
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    took bigint[];
    tc jsonb;
BEGIN
    IF (SELECT f.paused FROM flow_steps f WHERE f.flow_step_id = p_fs) THEN
        RETURN '{"claims" : []}';
    END IF;
    SELECT p.took, p.tc INTO took, tc FROM verdict_claim_pick(p_fs, p_limit, p_keys, p_est) p;
    RETURN verdict_claim_take(p_fs, p_worker, p_lease, p_actor, p_version, p_keys, p_est, took,
                              tc, p_trace, p_span);
END $function$
;
