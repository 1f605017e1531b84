-- 0016_checkpoints: progress checkpoints and the worker's version (issue 17 parts 4 and 5).
--
-- jobs.checkpoint: what the holder has done so far in this attempt (POST /v1/jobs/{id}/heartbeat
-- with "checkpoint", merged with jsonb || by the heartbeat's one statement). The next claim of
-- the item answers the last checkpoint of its most recent earlier job that has one, so a
-- retried attempt can update what the earlier one created instead of creating it twice.
-- jobs.worker_version: the semantic version the claimer said it runs (POST /v1/claims),
-- copied onto every tool failure of the job (tool_failures.worker_version) so that a bulk
-- requeue can redrive the items that failed under an older version.
ALTER TABLE jobs
    ADD COLUMN checkpoint jsonb CHECK (checkpoint IS NULL OR jsonb_typeof(checkpoint) = 'object'),
    ADD COLUMN worker_version text
        CHECK (worker_version IS NULL OR octet_length(worker_version) BETWEEN 1 AND 64);
ALTER TABLE tool_failures ADD COLUMN worker_version text;

-- Every tool failure carries its job's worker_version, set in the failure's own INSERT (and so
-- in its transaction) by this trigger: the statement that records failures stays as it is.
CREATE FUNCTION verdict_tool_failure_version() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.worker_version IS NULL THEN
        NEW.worker_version := (SELECT j.worker_version FROM jobs j WHERE j.id = NEW.job_id);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER tool_failures_version BEFORE INSERT ON tool_failures
    FOR EACH ROW EXECUTE FUNCTION verdict_tool_failure_version();

-- Semantic Versioning 2.0.0 precedence: -1, 0 or 1; NULL when either is not MAJOR.MINOR.PATCH
-- with an optional -pre-release and +build (the build is ignored). Numbers compare as numbers
-- (1.10.0 > 1.9.3), a pre-release is lower than its release (1.4.2-rc.1 < 1.4.2), pre-release
-- identifiers compare one by one: numeric ones numerically and lower than alphanumeric ones,
-- alphanumeric ones in ASCII order, and a shorter list that is a prefix is lower.
CREATE FUNCTION verdict_semver_cmp(a text, b text) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    rx constant text := '^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)'
                        '(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$';
    ma text[] := regexp_match(a, rx);
    mb text[] := regexp_match(b, rx);
    pa text[];
    pb text[];
    x text;
    y text;
BEGIN
    IF ma IS NULL OR mb IS NULL THEN
        RETURN NULL;
    END IF;
    FOR i IN 1..3 LOOP
        IF ma[i]::numeric <> mb[i]::numeric THEN
            RETURN sign(ma[i]::numeric - mb[i]::numeric)::integer;
        END IF;
    END LOOP;
    IF ma[4] IS NULL OR mb[4] IS NULL THEN -- a release is above its pre-releases
        RETURN CASE WHEN ma[4] IS NULL AND mb[4] IS NULL THEN 0
                    WHEN ma[4] IS NULL THEN 1 ELSE -1 END;
    END IF;
    pa := string_to_array(ma[4], '.');
    pb := string_to_array(mb[4], '.');
    FOR i IN 1..least(cardinality(pa), cardinality(pb)) LOOP
        x := pa[i];
        y := pb[i];
        CONTINUE WHEN x = y;
        IF x ~ '^[0-9]+$' AND y ~ '^[0-9]+$' THEN
            RETURN sign(x::numeric - y::numeric)::integer;
        ELSIF x ~ '^[0-9]+$' OR y ~ '^[0-9]+$' THEN
            RETURN CASE WHEN x ~ '^[0-9]+$' THEN -1 ELSE 1 END;
        END IF;
        RETURN CASE WHEN x COLLATE "C" < y COLLATE "C" THEN -1 ELSE 1 END;
    END LOOP;
    RETURN sign(cardinality(pa) - cardinality(pb))::integer;
END $$;

-- The job as every answer shows it: 0001's members and worker_version. The checkpoint (up to
-- 128 KiB) is left out of lists and answers; GET /v1/jobs/{id} shows it
-- (verdict_job_detail_json).
CREATE OR REPLACE FUNCTION verdict_job_json(j jobs) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'id', j.id, 'item_id', j.item_id, 'flow_step_id', j.flow_step_id,
        'worker_id', j.worker_id, 'attempt', j.attempt, 'status', j.status,
        'disposition', j.disposition, 'reason_code', j.reason_code, 'reason', j.reason,
        'claimed_at', verdict_ts(j.claimed_at), 'lease_expires_at', verdict_ts(j.lease_expires_at),
        'finished_at', verdict_ts(j.finished_at), 'engine_data', j.engine_data,
        'adjudication', j.adjudication,
        'tool_failures', verdict_tool_failures_json(j.id),
        'worker_version', j.worker_version) $$;

-- The job of GET /v1/jobs/{id}: verdict_job_json with "checkpoint" last (the object's closing
-- brace replaced, so the members keep their order).
CREATE FUNCTION verdict_job_detail_json(j jobs) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT (left(verdict_job_json(j)::text, -1) || ',"checkpoint":'
                  || coalesce(j.checkpoint::text, 'null') || '}')::json $$;
