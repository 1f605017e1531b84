-- verdict_claim_limited: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 480e8c37e60b9476a71668f238e296c1
CREATE OR REPLACE FUNCTION public.verdict_claim_limited(p_fs text, p_worker text, p_limit integer, p_lease integer, p_actor text, p_version text, p_keys text[], p_est bigint, p_trace text, p_span text)
 RETURNS text
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    cur refcursor;
    took bigint[] := '{}';
    tc jsonb := '{}';
    c record;
    cells bigint[];
    keys text[];
    job bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM flow_steps f WHERE f.flow_step_id = p_fs AND f.paused) THEN
        RETURN '{"claims" : []}';
    END IF;
    -- a claim key that is closed is found by verdict_limit_take at the first candidate
    OPEN cur FOR SELECT i.id, i.limit_keys FROM items i
             WHERE i.flow_step_id = p_fs AND i.state IN ('available', 'deferred')
               AND i.available_at <= now()
               AND (i.limit_keys IS NULL OR NOT EXISTS (SELECT 1 FROM limits l
                        WHERE l.key = ANY (i.limit_keys) AND verdict_limit_closed(l, p_est)))
             ORDER BY i.priority DESC, i.available_at, i.id
             LIMIT least(p_limit * 4, 400) FOR UPDATE OF i SKIP LOCKED;
    LOOP
        EXIT WHEN cardinality(took) >= p_limit;
        FETCH cur INTO c;
        EXIT WHEN NOT FOUND;
        keys := CASE WHEN c.limit_keys IS NULL THEN p_keys
                     ELSE verdict_keys_union(p_keys, c.limit_keys) END;
        -- the job's id comes first: its slots name it (sql/0038_slots_held_by_jobs.sql)
        job := nextval(pg_get_serial_sequence('jobs', 'id'));
        cells := CASE WHEN keys IS NULL THEN '{}' ELSE verdict_limit_take(keys, p_est, job) END;
        IF cells IS NULL AND c.limit_keys IS NULL THEN
            EXIT; -- the claim's own keys are closed: no other item can pass either
        ELSIF cells IS NULL THEN
            PERFORM verdict_limits_mark_waiting(keys);
        ELSE
            took := took || c.id;
            tc := tc || jsonb_build_object(c.id::text, jsonb_build_object('job', job,
                                                                          'cells', cells));
        END IF;
    END LOOP;
    CLOSE cur;
    IF cardinality(took) = 0 AND p_keys IS NOT NULL THEN
        PERFORM verdict_limits_mark_waiting(p_keys);
    END IF;
    RETURN verdict_claim_take(p_fs, p_worker, p_lease, p_actor, p_version, p_keys, p_est, took,
                              tc, p_trace, p_span);
END $function$
;
