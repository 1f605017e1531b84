-- verdict_claim_pick: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: none
-- The items a limited claim of p_limit items takes in p_fs (by rank, or by the fair key's
-- passes), each with the job id its limit lanes name: took (in claim order) and tc
-- ({"<item id>": {"job", "cells"}}). The limit room (lanes) of every item is taken here; with
-- nothing taken, the claim's keys are marked waiting. p_not: items the statement took already
-- (another pick of claim_many_limited: its own locks are not skipped). Its callers plan generically (the SET of
-- verdict_claim_limited, claim_many_limited's SET LOCAL), so it has no SET clause of its own:
-- one costs a GUC nest level per call (about 0.1 M instructions of a limited claim's 4.4 M).
CREATE OR REPLACE FUNCTION public.verdict_claim_pick(p_fs text, p_limit integer, p_keys text[], p_est bigint, p_not bigint[] DEFAULT '{}'::bigint[], OUT took bigint[], OUT tc jsonb)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
    cur refcursor;
    c record;
    cells bigint[];
    keys text[];
    fair boolean;
    per integer;
    visited text[] := '{}';
    job bigint;
    pend bigint[] := '{}';
    jobs bigint[];
    granted jsonb;
    done boolean;
BEGIN
    took := '{}';
    tc := '{}';
    SELECT f.fair_key IS NOT NULL INTO fair FROM flow_steps f WHERE f.flow_step_id = p_fs;
    -- the passes (sql/migrations/0037_priority_fairness.sql): with a fair key, 1: the values no other
    -- claim is visiting, least recently visited first, up to ceil(limit / values) items of
    -- each by rank; 2: the same over the values the claim has not visited, locked or not;
    -- 3 (and the only one without a fair key): every item by rank
    IF fair THEN
        per := ceil(p_limit::numeric / greatest(1, (SELECT count(*) FROM fair_values fv
                                                    WHERE fv.flow_step_id = p_fs)));
    END IF;
    FOR pass IN CASE WHEN fair THEN 1 ELSE 3 END .. 3 LOOP
    EXIT WHEN cardinality(took) >= p_limit;
    IF pass < 3 THEN
    OPEN cur FOR SELECT x.id, x.limit_keys, v.value FROM (
               SELECT * FROM (SELECT fv.value, fv.visited_at FROM fair_values fv
                 WHERE fv.flow_step_id = p_fs AND pass = 1 ORDER BY fv.visited_at, fv.value
                 LIMIT least(p_limit * 4, 400) FOR UPDATE SKIP LOCKED) a
               UNION ALL
               SELECT * FROM (SELECT fv.value, fv.visited_at FROM fair_values fv
                 WHERE fv.flow_step_id = p_fs AND pass = 2 AND fv.value <> ALL (visited)
                 ORDER BY fv.visited_at, fv.value LIMIT least(p_limit * 4, 400)) b) v
             LEFT JOIN LATERAL (SELECT i.id, i.limit_keys FROM items i
               WHERE i.flow_step_id = p_fs AND i.fair_value = v.value
                 AND i.state IN ('available', 'deferred') AND i.available_at <= now()
                 AND i.id <> ALL (took) AND i.id <> ALL (p_not)
                 AND (i.limit_keys IS NULL OR NOT EXISTS (SELECT 1 FROM limits l
                        WHERE l.key = ANY (i.limit_keys) AND verdict_limit_closed(l, p_est)))
               ORDER BY verdict_claim_rank(i.available_at, i.priority), i.id
               LIMIT per FOR UPDATE OF i SKIP LOCKED) x ON true;
    ELSE
    -- a claim key that is closed is found by verdict_limit_take at the first candidate
    OPEN cur FOR SELECT i.id, i.limit_keys, NULL::text AS value FROM items i
             WHERE i.flow_step_id = p_fs AND i.state IN ('available', 'deferred')
               AND i.available_at <= now() AND i.id <> ALL (took) AND i.id <> ALL (p_not)
               AND (i.limit_keys IS NULL OR NOT EXISTS (SELECT 1 FROM limits l
                        WHERE l.key = ANY (i.limit_keys) AND verdict_limit_closed(l, p_est)))
             ORDER BY verdict_claim_rank(i.available_at, i.priority), i.id
             LIMIT least(p_limit * 4, 400) FOR UPDATE OF i SKIP LOCKED;
    END IF;
    LOOP
        done := cardinality(took) + cardinality(pend) >= p_limit;
        IF NOT done THEN
            FETCH cur INTO c;
            done := NOT FOUND;
        END IF;
        -- items without keys of their own under the claim's keys: their lanes in one
        -- statement for the run of them (verdict_limit_take_many), in claim order
        IF NOT done AND c.value IS NULL AND c.limit_keys IS NULL AND p_keys IS NOT NULL THEN
            pend := pend || c.id;
            CONTINUE;
        END IF;
        IF cardinality(pend) > 0 THEN
            jobs := ARRAY(SELECT nextval('transitions_id_seq')
                            FROM generate_series(1, cardinality(pend)));
            -- one item: the plain take, which costs half of the run's statement for one
            granted := CASE WHEN cardinality(pend) > 1
                            THEN verdict_limit_take_many(p_keys, p_est, jobs)
                            ELSE (SELECT CASE WHEN t IS NULL THEN '[]'::jsonb
                                              ELSE jsonb_build_array(to_jsonb(t)) END
                                    FROM verdict_limit_take(p_keys, p_est, jobs[1]) t) END;
            FOR k IN 1 .. jsonb_array_length(granted) LOOP
                took := took || pend[k];
                tc := tc || jsonb_build_object(pend[k]::text, jsonb_build_object('job', jobs[k],
                                               'cells', granted -> (k - 1)));
            END LOOP;
            -- the claim's own keys are closed when none fit: no other item can pass either
            -- (when some did, the next run may find lanes that were locked or too full)
            done := done OR jsonb_array_length(granted) = 0;
            pend := '{}';
        END IF;
        EXIT WHEN done;
        IF c.value IS NOT NULL THEN
            visited := visited || c.value;
            CONTINUE WHEN c.id IS NULL; -- nothing of that value to claim now
        END IF;
        keys := CASE WHEN c.limit_keys IS NULL THEN p_keys
                     ELSE verdict_keys_union(p_keys, c.limit_keys) END;
        -- the job's id comes first: its slots name it (sql/migrations/0038_slots_held_by_jobs.sql)
        job := nextval('transitions_id_seq'); -- the jobs' ids and the audit's share it
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
    END LOOP;
    IF fair THEN -- the values visited go to the back (one a claim is visiting is left to it)
        UPDATE fair_values fv SET visited_at = clock_timestamp()
         WHERE (fv.flow_step_id, fv.value) IN (SELECT x.flow_step_id, x.value FROM fair_values x
                WHERE x.flow_step_id = p_fs AND x.value = ANY (visited) FOR UPDATE SKIP LOCKED);
    END IF;
    IF cardinality(took) = 0 AND p_keys IS NOT NULL THEN
        PERFORM verdict_limits_mark_waiting(p_keys);
    END IF;
END $function$
;
