-- 0025_inline_answers: the SQL functions a disposition calls are inlined again (issue 21, CPU
-- per item; bench/README.md "Functions PostgreSQL would not inline").
--
-- PostgreSQL inlines a LANGUAGE sql function into the statement that calls it only when its
-- body is no more volatile than its declaration, and when an argument it uses twice is cheap.
-- Otherwise each call site is set up anew on every execution of the statement: its body
-- parsed (or its stored tree read back), analysed and planned (fmgr_sql). verdict_answer_head,
-- verdict_answer_tail and verdict_request_digest were declared IMMUTABLE over to_json,
-- json_build_object, concat_ws and convert_to, which are STABLE, and verdict_answer_join used
-- its head twice: six such set-ups per disposition (the lock statement's digest; the finish's
-- answer, its kept head and tail, and its digest), measured at 0.21 ms of PostgreSQL CPU per
-- disposition with pgbench (prepared, parameters as the service sends them). Declared STABLE
-- (what their bodies are; none is used in an index) and with the head used once, they are
-- inlined: the statements compute the same text, byte for byte.

CREATE OR REPLACE FUNCTION verdict_request_digest(r jsonb) RETURNS bytea
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN sha256(convert_to(r::text, 'UTF8'));

CREATE OR REPLACE FUNCTION verdict_answer_head(p_disposition text, p_with_adjudication boolean,
                                               p_adjudication text, p_tool_result_text text,
                                               p_tool_result_terminal boolean) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT concat_ws(',',
        CASE WHEN p_disposition IS NOT NULL
             THEN '"disposition":' || to_json(p_disposition)::text END,
        CASE WHEN p_with_adjudication
             THEN '"adjudication":' || coalesce(p_adjudication, 'null') END,
        CASE WHEN p_tool_result_text IS NOT NULL
             THEN '"tool_result":' || json_build_object(
                      'text', p_tool_result_text,
                      'terminal', coalesce(p_tool_result_terminal, false))::text END) $$;

CREATE OR REPLACE FUNCTION verdict_answer_tail(p_disposition text, p_deprecation_hint text)
    RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN p_deprecation_hint IS NOT NULL
             THEN ',"deprecated":true,"mapped_to":' || to_json(p_disposition)::text
                  || ',"hint":' || to_json(p_deprecation_hint)::text
             ELSE '' END $$;

-- p_head once: a head is never NULL (concat_ws), '' when the answer has no member before "job"
CREATE OR REPLACE FUNCTION verdict_answer_join(p_head text, p_job text, p_item text, p_tail text)
    RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT '{' || coalesce(nullif(p_head, '') || ',', '')
                 || '"job":' || p_job || ',"item":' || p_item || p_tail || '}' $$;

CREATE OR REPLACE FUNCTION verdict_job_answer(p_disposition text, p_with_adjudication boolean,
                                              p_adjudication text, p_job json, p_item json,
                                              p_deprecation_hint text,
                                              p_tool_result_text text DEFAULT NULL,
                                              p_tool_result_terminal boolean DEFAULT NULL)
    RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT verdict_answer_join(
        verdict_answer_head(p_disposition, p_with_adjudication, p_adjudication,
                            p_tool_result_text, p_tool_result_terminal),
        p_job::text, p_item::text, verdict_answer_tail(p_disposition, p_deprecation_hint)) $$;

-- claim_next's kept tail (the claimed job ids) reads a JSON array, which no SQL function
-- can inline: in PL/pgSQL its plan is kept for the session instead of being made again by
-- every disposition with claim_next.
CREATE OR REPLACE FUNCTION verdict_claimed_ids(p_claims text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    RETURN '[' || coalesce((SELECT string_agg(e->>'job_id', ',' ORDER BY k)
                            FROM json_array_elements(p_claims::json->'claims')
                                 WITH ORDINALITY AS c(e, k)), '') || ']';
END $$;
