-- 0015_rejection_lint: the rejection lint and the answers the model can act on (issue 17
-- parts 2 and 3).
--
-- - transitions.lint_overridden: a rejection the lint would have refused (409
--   rejection_suspect) went through because the caller sent force: true.
-- - transitions.evidence: the passage of the item's payload a rejection quoted (redacted, at
--   most 500 bytes); accepted in every mode, required in a flow step's strict mode.
-- - verdict_transition_json shows both.
-- - verdict_job_answer takes the tool_result (text, terminal) of a disposition answer, so the
--   kept answer (and every replay of it) carries the text the plugin hands to the model. The
--   two new parameters default to NULL, so callers with six arguments keep their answers.
-- - verdict_payload_quotes: whether a text is quoted in a payload (see the function).
ALTER TABLE transitions ADD COLUMN lint_overridden boolean NOT NULL DEFAULT false,
                        ADD COLUMN evidence text
                            CHECK (evidence IS NULL OR octet_length(evidence) <= 2000);

CREATE OR REPLACE FUNCTION verdict_transition_json(t transitions) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT json_build_object(
        'id', t.id, 'item_id', t.item_id, 'job_id', t.job_id, 'from_state', t.from_state,
        'to_state', t.to_state, 'job_status', t.job_status, 'cause', t.cause,
        'reason_code', t.reason_code, 'reason', t.reason, 'forced', t.forced,
        'lint_overridden', t.lint_overridden, 'evidence', t.evidence,
        'actor', t.actor, 'at', verdict_ts(t.at)) $$;

DROP FUNCTION verdict_job_answer(text, boolean, text, json, json, text);
CREATE FUNCTION verdict_job_answer(p_disposition text, p_with_adjudication boolean,
                                   p_adjudication text, p_job json, p_item json,
                                   p_deprecation_hint text,
                                   p_tool_result_text text DEFAULT NULL,
                                   p_tool_result_terminal boolean DEFAULT NULL) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT '{' || concat_ws(',',
        CASE WHEN p_disposition IS NOT NULL
             THEN '"disposition":' || to_json(p_disposition)::text END,
        CASE WHEN p_with_adjudication
             THEN '"adjudication":' || coalesce(p_adjudication, 'null') END,
        CASE WHEN p_tool_result_text IS NOT NULL
             THEN '"tool_result":' || json_build_object(
                      'text', p_tool_result_text,
                      'terminal', coalesce(p_tool_result_terminal, false))::text END,
        '"job":' || p_job::text,
        '"item":' || p_item::text,
        CASE WHEN p_deprecation_hint IS NOT NULL
             THEN '"deprecated":true,"mapped_to":' || to_json(p_disposition)::text
                  || ',"hint":' || to_json(p_deprecation_hint)::text END) || '}' $$;

-- Whether p_evidence is quoted in p_payload: a substring of one of its string values, at any
-- depth (not of its keys, numbers or JSON syntax, so escapes never get in the way), compared
-- case-sensitively after runs of white space on both sides are read as one space. An empty
-- or blank quote is never found.
CREATE FUNCTION verdict_payload_quotes(p_payload jsonb, p_evidence text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT coalesce(btrim(regexp_replace(p_evidence, '\s+', ' ', 'g')) <> ''
        AND EXISTS (
            SELECT 1 FROM jsonb_path_query(p_payload, 'strict $.**') v
            WHERE jsonb_typeof(v) = 'string'
              AND strpos(regexp_replace(v #>> '{}', '\s+', ' ', 'g'),
                         btrim(regexp_replace(p_evidence, '\s+', ' ', 'g'))) > 0), false) $$;
