-- 0034_traces_reviews: W3C trace ids on jobs (docs/decisions/0060-trace-context.md) and an
-- editor's review that reaches the model (docs/decisions/0061-human-review.md).
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

-- Human review. A model's disposition request_review parks its item in manual_review with its
-- question (the transition's reason, cause request_review, job status deferred, no budget
-- spent); an editor's answer (POST /v1/items/{id}/review) is a transition of cause review
-- (its reason the answer; to available on retry, processed or rejected). No table of its own:
-- the question and the answer are the two transitions, audited like every change.
ALTER TABLE jobs DROP CONSTRAINT jobs_disposition_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_disposition_check CHECK (disposition IN
    ('complete', 'reject_source', 'defer_item', 'fail', 'skip_item', 'session_outcome',
     'request_review'));

ALTER TABLE transitions DROP CONSTRAINT transitions_cause_check;
ALTER TABLE transitions ADD CONSTRAINT transitions_cause_check CHECK (cause IN
    ('register', 'claim', 'complete', 'reject_source', 'defer_item', 'fail', 'skip_item',
     'session_outcome', 'lease_expired', 'requeue', 'release', 'admin_release', 'resolve',
     'request_review', 'review'));

-- The editor's answer an item carries to its next attempt: the newest review transition
-- that made it available (retry), as long as no worker decided the item since (a claim, an
-- expired lease or a release do not count: the model has not acted on it yet), with the
-- question of the request_review before it. NULL when none. Read by the claim and the
-- briefing (transitions_item: a few rows per item).
CREATE FUNCTION verdict_item_review(p_item bigint) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT json_build_object(
        'question', (SELECT q.reason FROM transitions q
                     WHERE q.item_id = p_item AND q.id < r.id AND q.cause = 'request_review'
                     ORDER BY q.id DESC LIMIT 1),
        'answer', r.reason, 'by', r.actor, 'at', verdict_ts(r.at))
    FROM (SELECT t.id, t.reason, t.actor, t.at FROM transitions t
          WHERE t.item_id = p_item AND t.cause = 'review' AND t.to_state = 'available'
          ORDER BY t.id DESC LIMIT 1) r
    WHERE NOT EXISTS (SELECT 1 FROM transitions x
                      WHERE x.item_id = p_item AND x.id > r.id
                        AND x.cause NOT IN ('claim', 'lease_expired', 'release', 'admin_release'))
    $$;

-- 0023's replay of claim_next's claims with the claim's new member `review` (rendered now:
-- the same as the claim's unless a worker decided the item since, when it is null).
CREATE OR REPLACE FUNCTION verdict_kept_answer(p_response text) RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    AS $$
    SELECT CASE WHEN m IS NULL THEN p_response
        ELSE left(p_response, length(p_response) - length(m[1]) - 1) || ',"claims" : '
             || coalesce((SELECT json_agg(json_build_object(
                    'job_id', j.id, 'claim_token', j.claim_token, 'attempt', j.attempt,
                    'lease_expires_at', verdict_ts(j.lease_expires_at),
                    'item', verdict_item_json(i, s),
                    'previous_checkpoint', (SELECT p.checkpoint FROM jobs p
                        WHERE p.item_id = i.id AND p.id < j.id AND p.checkpoint IS NOT NULL
                        ORDER BY p.id DESC LIMIT 1),
                    'review', verdict_item_review(i.id)) ORDER BY k.ord)
                  FROM unnest(string_to_array(m[2], ',')::bigint[]) WITH ORDINALITY AS k(id, ord)
                  JOIN jobs j ON j.id = k.id JOIN items i ON i.id = j.item_id
                  JOIN item_sources s ON s.id = j.item_id),
                 '[]'::json)::text || '}'
    END
    FROM (SELECT regexp_match(p_response, '(,"claimed":\[([0-9,]*)\])\}$') AS m) x $$;
