-- 0014_tool_incidents: tooling incidents (issue 17 part 1). Each tool failure keeps its item,
-- its flow step and its signature (the error text with numbers, paths, URLs, ids, hashes and
-- quoted values masked: service/incidents.c), so that "distinct items of one signature in the
-- last W minutes" is one scan of tool_failures_signature. A deterministic signature seen on
-- incident_min_items distinct items within incident_window_minutes (flow_steps, 0013) opens
-- one incident; the unique partial index keeps it one while it is open, however many failures
-- race to open it.
ALTER TABLE tool_failures
    ADD COLUMN item_id      bigint,
    ADD COLUMN flow_step_id text,
    ADD COLUMN signature    text;

CREATE INDEX tool_failures_signature
    ON tool_failures (flow_step_id, tool, signature, at) INCLUDE (item_id)
    WHERE kind = 'deterministic' AND signature IS NOT NULL;

CREATE TABLE tool_incidents (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    flow_step_id text NOT NULL REFERENCES flow_steps (flow_step_id),
    tool         text NOT NULL,
    signature    text NOT NULL,
    sample_error text NOT NULL,  -- redacted, like every stored error
    items        integer NOT NULL DEFAULT 0 CHECK (items >= 0),
    first_seen   timestamptz NOT NULL,
    last_seen    timestamptz NOT NULL DEFAULT now(),
    opened_at    timestamptz NOT NULL DEFAULT now(),
    -- not "IN (...)": tests/unit/test_domain.c reads those lists as the item states
    state        text NOT NULL DEFAULT 'open' CHECK (state = ANY (ARRAY['open', 'resolved'])),
    resolved_at  timestamptz,
    resolved_by  text,
    resolve_reason text,
    CHECK ((state = 'resolved') = (resolved_at IS NOT NULL))
);
-- One open incident per (flow step, tool, signature); also serves "open incidents of a flow
-- step" (the hint of every tool-failure envelope, the reject_source guard, the metric).
CREATE UNIQUE INDEX tool_incidents_one_open ON tool_incidents (flow_step_id, tool, signature)
    WHERE state = 'open';
CREATE INDEX tool_incidents_state ON tool_incidents (state, id);

CREATE TABLE tool_incident_items (
    incident_id bigint NOT NULL REFERENCES tool_incidents (id) ON DELETE CASCADE,
    item_id     bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    linked_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (incident_id, item_id)
);
CREATE INDEX tool_incident_items_item ON tool_incident_items (item_id);

CREATE FUNCTION verdict_tool_incident_json(t tool_incidents) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'id', t.id, 'flow_step_id', t.flow_step_id, 'tool', t.tool, 'signature', t.signature,
        'sample_error', t.sample_error, 'items', t.items,
        'first_seen', verdict_ts(t.first_seen), 'last_seen', verdict_ts(t.last_seen),
        'opened_at', verdict_ts(t.opened_at), 'state', t.state,
        'resolved_at', verdict_ts(t.resolved_at), 'resolved_by', t.resolved_by,
        'resolve_reason', t.resolve_reason) $$;
