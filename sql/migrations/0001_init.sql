-- 0001_init: the whole schema of SPEC.md (items, jobs, transitions, idempotency records,
-- tool failures, flow steps) and the functions that render its resources as JSON, so the
-- shape of an item or a job is written once, here.

CREATE TABLE flow_steps (
    flow_step_id text PRIMARY KEY CHECK (octet_length(flow_step_id) BETWEEN 1 AND 200),
    paused       boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE items (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    flow_step_id     text NOT NULL REFERENCES flow_steps (flow_step_id),
    source_type      text NOT NULL CHECK (octet_length(source_type) BETWEEN 1 AND 100),
    item_identifier  text NOT NULL CHECK (octet_length(item_identifier) BETWEEN 1 AND 2000),
    state            text NOT NULL DEFAULT 'available' CHECK (state IN
                         ('available', 'claimed', 'deferred', 'processed', 'rejected',
                          'manual_review', 'failed')),
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    failures         integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    defers           integer NOT NULL DEFAULT 0 CHECK (defers >= 0),
    max_attempts     integer NOT NULL CHECK (max_attempts BETWEEN 1 AND 100),
    max_defers       integer NOT NULL CHECK (max_defers BETWEEN 1 AND 100),
    priority         integer NOT NULL DEFAULT 0,
    payload          jsonb CHECK (payload IS NULL OR jsonb_typeof(payload) = 'object'),
    available_at     timestamptz NOT NULL DEFAULT now(),
    lease_expires_at timestamptz,
    current_job_id   bigint,
    claim_token      uuid,
    last_reason_code text,
    last_reason      text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (flow_step_id, source_type, item_identifier),
    -- a claimed item always has its holder; no other state has one
    CHECK ((state = 'claimed') = (claim_token IS NOT NULL AND lease_expires_at IS NOT NULL
                                  AND current_job_id IS NOT NULL))
);

-- Serves the claim query: only claimable rows, in claim order.
CREATE INDEX items_claimable ON items (flow_step_id, priority DESC, available_at, id)
    WHERE state IN ('available', 'deferred');
-- Serves the sweeper: only live leases.
CREATE INDEX items_leases ON items (lease_expires_at) WHERE state = 'claimed';
-- Serves listing and counting by state.
CREATE INDEX items_flow_state ON items (flow_step_id, state, id);

CREATE TABLE jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id          bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    flow_step_id     text NOT NULL,
    worker_id        text NOT NULL CHECK (octet_length(worker_id) BETWEEN 1 AND 200),
    attempt          integer NOT NULL CHECK (attempt >= 1),
    status           text NOT NULL DEFAULT 'processing' CHECK (status IN
                         ('processing', 'completed', 'rejected', 'deferred', 'failed', 'expired')),
    claim_token      uuid NOT NULL,
    claimed_at       timestamptz NOT NULL DEFAULT now(),
    lease_expires_at timestamptz NOT NULL,
    finished_at      timestamptz,
    disposition      text CHECK (disposition IN
                         ('complete', 'reject_source', 'defer_item', 'fail', 'skip_item',
                          'session_outcome')),
    reason_code      text,
    reason           text,
    engine_data      jsonb NOT NULL DEFAULT '{}'::jsonb
                         CHECK (jsonb_typeof(engine_data) = 'object'),
    adjudication     jsonb,
    required_tool_failed boolean NOT NULL DEFAULT false,
    -- the call that finished the job and its answer, for replay-idempotency
    final_request    jsonb,
    final_response   text,
    CHECK ((status = 'processing') = (finished_at IS NULL))
);
CREATE INDEX jobs_item ON jobs (item_id, id DESC);
CREATE INDEX jobs_flow_status ON jobs (flow_step_id, status, id);
CREATE INDEX jobs_finished_at ON jobs (finished_at) WHERE finished_at IS NOT NULL;

ALTER TABLE items ADD CONSTRAINT items_current_job_fk
    FOREIGN KEY (current_job_id) REFERENCES jobs (id) ON DELETE SET NULL;

CREATE TABLE transitions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id     bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    job_id      bigint REFERENCES jobs (id) ON DELETE SET NULL,
    from_state  text CHECK (from_state IN ('available', 'claimed', 'deferred', 'processed',
                                           'rejected', 'manual_review', 'failed')),
    to_state    text NOT NULL CHECK (to_state IN ('available', 'claimed', 'deferred',
                                     'processed', 'rejected', 'manual_review', 'failed')),
    job_status  text CHECK (job_status IN ('processing', 'completed', 'rejected', 'deferred',
                                           'failed', 'expired')),
    cause       text NOT NULL CHECK (cause IN ('register', 'claim', 'complete', 'reject_source',
                                     'defer_item', 'fail', 'skip_item', 'session_outcome',
                                     'lease_expired', 'requeue')),
    reason_code text,
    reason      text,
    forced      boolean NOT NULL DEFAULT false,
    actor       text,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transitions_item ON transitions (item_id, id DESC);
CREATE INDEX transitions_at ON transitions (at);

CREATE TABLE tool_failures (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    tool        text NOT NULL CHECK (octet_length(tool) BETWEEN 1 AND 200),
    args        text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('deterministic', 'transient')),
    retryable   boolean NOT NULL,
    required    boolean NOT NULL DEFAULT false,
    error       text NOT NULL,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tool_failures_job ON tool_failures (job_id, tool, md5(args));

CREATE TABLE idempotency_keys (
    route        text NOT NULL,
    key_name     text NOT NULL,
    idem_key     text NOT NULL CHECK (octet_length(idem_key) BETWEEN 1 AND 255),
    request_hash text NOT NULL,
    status       integer,
    response     text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (route, key_name, idem_key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- RFC 3339 UTC with microseconds, the one time format of the API.
CREATE FUNCTION verdict_ts(t timestamptz) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

CREATE FUNCTION verdict_item_json(i items) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'id', i.id, 'flow_step_id', i.flow_step_id, 'source_type', i.source_type,
        'item_identifier', i.item_identifier, 'state', i.state, 'attempts', i.attempts,
        'failures', i.failures, 'defers', i.defers, 'max_attempts', i.max_attempts,
        'max_defers', i.max_defers, 'priority', i.priority, 'payload', i.payload,
        'available_at', verdict_ts(i.available_at),
        'lease_expires_at', verdict_ts(i.lease_expires_at),
        'current_job_id', i.current_job_id, 'last_reason_code', i.last_reason_code,
        'last_reason', i.last_reason, 'created_at', verdict_ts(i.created_at),
        'updated_at', verdict_ts(i.updated_at)) $$;

CREATE FUNCTION verdict_transition_json(t transitions) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'id', t.id, 'item_id', t.item_id, 'job_id', t.job_id, 'from_state', t.from_state,
        'to_state', t.to_state, 'job_status', t.job_status, 'cause', t.cause,
        'reason_code', t.reason_code, 'reason', t.reason, 'forced', t.forced,
        'actor', t.actor, 'at', verdict_ts(t.at)) $$;

CREATE FUNCTION verdict_tool_failures_json(p_job_id bigint) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'count', coalesce((SELECT count(*) FROM tool_failures f WHERE f.job_id = p_job_id), 0),
        'by_tool', coalesce((
            SELECT json_agg(json_build_object('tool', s.tool, 'count', s.n,
                                                'last_error', s.last_error,
                                                'retryable', s.retryable) ORDER BY s.tool)
            FROM (SELECT f.tool, count(*) AS n,
                         (array_agg(f.error ORDER BY f.id DESC))[1] AS last_error,
                         (array_agg(f.retryable ORDER BY f.id DESC))[1] AS retryable
                  FROM tool_failures f WHERE f.job_id = p_job_id GROUP BY f.tool) s),
            '[]'::json)) $$;

CREATE FUNCTION verdict_job_json(j jobs) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'id', j.id, 'item_id', j.item_id, 'flow_step_id', j.flow_step_id,
        'worker_id', j.worker_id, 'attempt', j.attempt, 'status', j.status,
        'disposition', j.disposition, 'reason_code', j.reason_code, 'reason', j.reason,
        'claimed_at', verdict_ts(j.claimed_at), 'lease_expires_at', verdict_ts(j.lease_expires_at),
        'finished_at', verdict_ts(j.finished_at), 'engine_data', j.engine_data,
        'adjudication', j.adjudication,
        'tool_failures', verdict_tool_failures_json(j.id)) $$;
