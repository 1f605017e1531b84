-- The CHECK constraints of items and jobs become one constraint per table, a call of an
-- immutable PL/pgSQL function holding the same rules (decision 0088). PostgreSQL reads each
-- CHECK constraint's stored expression tree from text and plans it again for every statement
-- that inserts or updates the table: items' 8 and jobs' 12 cost about 0.3 M instructions per
-- statement, a fifth of a claim or of a disposition. One call of a function whose plan the
-- session keeps costs a fraction of that. The rules are the same conjunction: a row passes
-- when no rule is false (a rule that is NULL passes, as a CHECK constraint does).
CREATE FUNCTION verdict_items_valid(state text, attempts integer, failures integer,
                                    defers integer, max_attempts integer, max_defers integer,
                                    priority integer, claim_token uuid,
                                    lease_expires_at timestamptz, current_job_id bigint)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN state = ANY ('{available,claimed,deferred,processed,rejected,manual_review,failed}'::text[])
        AND (state = 'claimed') = (claim_token IS NOT NULL AND lease_expires_at IS NOT NULL
                                   AND current_job_id IS NOT NULL)
        AND priority >= -1000 AND priority <= 1000
        AND max_defers >= 1 AND max_defers <= 100
        AND max_attempts >= 1 AND max_attempts <= 100
        AND defers >= 0 AND failures >= 0 AND attempts >= 0;
END $$;

CREATE FUNCTION verdict_jobs_valid(status text, finished_at timestamptz, disposition text,
                                   worker_id text, worker_version text, checkpoint jsonb,
                                   engine_data jsonb, disposition_trace_id text,
                                   claim_trace_id text, claim_span_id text, answer_head text,
                                   answer_response text, attempt integer)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN disposition = ANY ('{complete,reject_source,defer_item,fail,skip_item,session_outcome,request_review}'::text[])
        AND status = ANY ('{processing,completed,rejected,deferred,failed,expired,released}'::text[])
        AND (status = 'processing') = (finished_at IS NULL)
        AND (worker_version IS NULL
             OR (octet_length(worker_version) >= 1 AND octet_length(worker_version) <= 64))
        AND octet_length(worker_id) >= 1 AND octet_length(worker_id) <= 200
        AND (checkpoint IS NULL OR jsonb_typeof(checkpoint) = 'object')
        AND jsonb_typeof(engine_data) = 'object'
        AND disposition_trace_id ~ '^[0-9a-f]{32}$'
        AND claim_trace_id ~ '^[0-9a-f]{32}$'
        AND claim_span_id ~ '^[0-9a-f]{16}$'
        AND (answer_head IS NULL OR answer_response IS NULL)
        AND attempt >= 1;
END $$;

ALTER TABLE items DROP CONSTRAINT items_state_check, DROP CONSTRAINT items_check,
    DROP CONSTRAINT items_priority_check, DROP CONSTRAINT items_max_defers_check,
    DROP CONSTRAINT items_max_attempts_check, DROP CONSTRAINT items_defers_check,
    DROP CONSTRAINT items_failures_check, DROP CONSTRAINT items_attempts_check,
    ADD CONSTRAINT items_valid CHECK (verdict_items_valid(state, attempts, failures, defers,
        max_attempts, max_defers, priority, claim_token, lease_expires_at, current_job_id));

ALTER TABLE jobs DROP CONSTRAINT jobs_disposition_check, DROP CONSTRAINT jobs_status_check,
    DROP CONSTRAINT jobs_worker_version_check, DROP CONSTRAINT jobs_worker_id_check,
    DROP CONSTRAINT jobs_checkpoint_check, DROP CONSTRAINT jobs_check,
    DROP CONSTRAINT jobs_engine_data_check, DROP CONSTRAINT jobs_disposition_trace_id_check,
    DROP CONSTRAINT jobs_claim_trace_id_check, DROP CONSTRAINT jobs_claim_span_id_check,
    DROP CONSTRAINT jobs_answer_one_form, DROP CONSTRAINT jobs_attempt_check,
    ADD CONSTRAINT jobs_valid CHECK (verdict_jobs_valid(status, finished_at, disposition,
        worker_id, worker_version, checkpoint, engine_data, disposition_trace_id,
        claim_trace_id, claim_span_id, answer_head, answer_response, attempt));
