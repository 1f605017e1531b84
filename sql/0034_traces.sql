-- 0034_traces: W3C trace ids on jobs (docs/decisions/0060-trace-context.md).
--
-- claim_trace_id: the trace id of the request that claimed the job (POST /v1/claims, or the
-- disposition whose claim_next claimed it); disposition_trace_id: of the request that finished
-- it (a disposition, a session outcome, a release; NULL when the sweeper or an admin's
-- release finished it without a request of the holder's). 32 lower-case hex digits.
-- No index: the job's finishing update stays a HOT update (sql/0018_index_diet.sql) and the
-- claim's insert writes no more index entries; GET /v1/jobs?trace_id= scans the jobs the
-- retention keeps (measured in docs/decisions/0060-trace-context.md).
ALTER TABLE jobs
    ADD COLUMN claim_trace_id text CHECK (claim_trace_id ~ '^[0-9a-f]{32}$'),
    ADD COLUMN disposition_trace_id text CHECK (disposition_trace_id ~ '^[0-9a-f]{32}$');

-- The job as every answer shows it: 0016's members and the two trace ids.
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
        'worker_version', j.worker_version,
        'claim_trace_id', j.claim_trace_id,
        'disposition_trace_id', j.disposition_trace_id) $$;
