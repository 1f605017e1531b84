-- 0030_failure_templates: failure templates replace the regex mask as the incident key. Each
-- flow step keeps the templates its tool failures were mined into (service/templates.c: a
-- Drain-class miner); a template's shape is its token count and leading token, the tree path
-- under which a new failure looks for the most similar template. Two replicas serialise the
-- join of one (flow step, shape) on an advisory lock (statements.c TEMPLATE_LOCK).
-- A tool failure keeps its template and whether it counts toward incidents (every failure
-- whose own text shows no transient evidence, whatever the plugin labelled it); an incident
-- is keyed by (flow step, template) and lists the tools the failures came through.
CREATE TABLE failure_templates (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    flow_step_id text NOT NULL REFERENCES flow_steps (flow_step_id),
    shape        text NOT NULL,
    template     text NOT NULL,
    -- no per-failure counter: a failure that joins a template without changing it writes
    -- nothing here (tool_failures.template_id counts them)
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()  -- the text last changed
);
CREATE INDEX failure_templates_shape ON failure_templates (flow_step_id, shape, id);

ALTER TABLE tool_failures
    ADD COLUMN template_id bigint,
    ADD COLUMN counted     boolean NOT NULL DEFAULT false;
-- distinct items of one template in the window: one scan
CREATE INDEX tool_failures_template ON tool_failures (flow_step_id, template_id, at)
    INCLUDE (item_id) WHERE counted;
-- the regex signature is still written on each failure but no longer keys anything
DROP INDEX tool_failures_signature;
-- the loop guard and recurrence in a job: (job, template), then tool
CREATE INDEX tool_failures_job_template ON tool_failures (job_id, template_id) INCLUDE (tool);

ALTER TABLE tool_incidents
    ADD COLUMN template_id bigint,
    ADD COLUMN template    text,
    ADD COLUMN tools       text[] NOT NULL DEFAULT '{}';
-- One open incident per (flow step, template); incidents opened before this migration have
-- no template and keep their rows. Also serves "open incidents of a flow step".
DROP INDEX tool_incidents_one_open;
CREATE UNIQUE INDEX tool_incidents_open_template ON tool_incidents (flow_step_id, template_id)
    WHERE state = 'open';

CREATE OR REPLACE FUNCTION verdict_tool_incident_json(t tool_incidents) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'id', t.id, 'flow_step_id', t.flow_step_id, 'tool', t.tool,
        'tools', to_json(CASE WHEN cardinality(t.tools) = 0 THEN ARRAY[t.tool] ELSE t.tools END),
        'template_id', t.template_id, 'template', coalesce(t.template, t.signature),
        'signature', t.signature,
        'sample_error', t.sample_error, 'items', t.items,
        'first_seen', verdict_ts(t.first_seen), 'last_seen', verdict_ts(t.last_seen),
        'opened_at', verdict_ts(t.opened_at), 'state', t.state,
        'resolved_at', verdict_ts(t.resolved_at), 'resolved_by', t.resolved_by,
        'resolve_reason', t.resolve_reason) $$;
