-- The row checks of items and jobs take the whole row (decision 0088, addendum). Each
-- statement that writes a table reads its CHECK constraint's stored expression from text;
-- a call with ten or thirteen column arguments cost about 39 k instructions to read and set
-- up per statement, a whole-row argument a fraction of that (callgrind: the claim -4.8 %, the
-- disposition -3.7 %). The rules are the same conjunction, over the row's fields.
CREATE FUNCTION verdict_items_valid(i items)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN i.state = ANY ('{available,claimed,deferred,processed,rejected,manual_review,failed}'::text[])
        AND (i.state = 'claimed') = (i.claim_token IS NOT NULL AND i.lease_expires_at IS NOT NULL
                                     AND i.current_job_id IS NOT NULL)
        AND i.priority >= -1000 AND i.priority <= 1000
        AND i.max_defers >= 1 AND i.max_defers <= 100
        AND i.max_attempts >= 1 AND i.max_attempts <= 100
        AND i.defers >= 0 AND i.failures >= 0 AND i.attempts >= 0;
END $$;

CREATE FUNCTION verdict_jobs_valid(j jobs)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN j.disposition = ANY ('{complete,reject_source,defer_item,fail,skip_item,session_outcome,request_review}'::text[])
        AND j.status = ANY ('{processing,completed,rejected,deferred,failed,expired,released}'::text[])
        AND (j.status = 'processing') = (j.finished_at IS NULL)
        AND (j.worker_version IS NULL
             OR (octet_length(j.worker_version) >= 1 AND octet_length(j.worker_version) <= 64))
        AND octet_length(j.worker_id) >= 1 AND octet_length(j.worker_id) <= 200
        AND (j.checkpoint IS NULL OR jsonb_typeof(j.checkpoint) = 'object')
        AND jsonb_typeof(j.engine_data) = 'object'
        AND j.disposition_trace_id ~ '^[0-9a-f]{32}$'
        AND j.claim_trace_id ~ '^[0-9a-f]{32}$'
        AND j.claim_span_id ~ '^[0-9a-f]{16}$'
        AND (j.answer_head IS NULL OR j.answer_response IS NULL)
        AND j.attempt >= 1;
END $$;

ALTER TABLE items DROP CONSTRAINT items_valid,
    ADD CONSTRAINT items_valid CHECK (verdict_items_valid(items));
ALTER TABLE jobs DROP CONSTRAINT jobs_valid,
    ADD CONSTRAINT jobs_valid CHECK (verdict_jobs_valid(jobs));

DROP FUNCTION verdict_items_valid(text, integer, integer, integer, integer, integer, integer,
                                  uuid, timestamptz, bigint);
DROP FUNCTION verdict_jobs_valid(text, timestamptz, text, text, text, jsonb, jsonb, text, text,
                                 text, text, text, integer);
