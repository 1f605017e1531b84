-- 0021_compact_answers: the answer a finished job keeps for replays, stored without the job
-- and the item it embeds (issue 21, "the kept answer stored compactly").
--
-- A disposition's answer is {<head members>,"job":{...},"item":{...}<tail members>}: the job as
-- the finishing statement left it and the item likewise, item payload included. job_answers
-- held that whole text, the widest row of the hot path (~1,200 WAL bytes per item with a
-- one-line payload; a 10 KB payload cost 10 KB more per job). Now it holds the head and the
-- tail members as text, and of the item only what the finish set that neither the job row nor
-- the item's unchanging columns say: its state, failures, defers and available_at. A replay
-- renders the job from its row (a finished job never changes again) and the item from its row
-- with those fields and the ones the job row says (attempts = the job's attempt,
-- current_job_id = the job, last_reason_code/last_reason = the job's reason_code/reason,
-- updated_at = the job's finished_at, no lease): byte for byte the answer first given.
-- Answers kept before this migration stay whole (response) and replay as they were.
ALTER TABLE job_answers ALTER COLUMN response DROP NOT NULL,
    ADD COLUMN head text,
    ADD COLUMN tail text,
    ADD COLUMN item_state text,
    ADD COLUMN item_failures integer,
    ADD COLUMN item_defers integer,
    ADD COLUMN item_available_at timestamptz,
    ADD CONSTRAINT job_answers_one_form CHECK ((response IS NULL) = (head IS NOT NULL));

-- The members before "job" (none: ''), and those after "item" ('' when none; each begins
-- with a comma), of verdict_job_answer.
CREATE FUNCTION verdict_answer_head(p_disposition text, p_with_adjudication boolean,
                                    p_adjudication text, p_tool_result_text text,
                                    p_tool_result_terminal boolean) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT concat_ws(',',
        CASE WHEN p_disposition IS NOT NULL
             THEN '"disposition":' || to_json(p_disposition)::text END,
        CASE WHEN p_with_adjudication
             THEN '"adjudication":' || coalesce(p_adjudication, 'null') END,
        CASE WHEN p_tool_result_text IS NOT NULL
             THEN '"tool_result":' || json_build_object(
                      'text', p_tool_result_text,
                      'terminal', coalesce(p_tool_result_terminal, false))::text END) $$;

CREATE FUNCTION verdict_answer_tail(p_disposition text, p_deprecation_hint text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN p_deprecation_hint IS NOT NULL
             THEN ',"deprecated":true,"mapped_to":' || to_json(p_disposition)::text
                  || ',"hint":' || to_json(p_deprecation_hint)::text
             ELSE '' END $$;

-- The whole answer from its parts (the same text as 0015's verdict_job_answer).
CREATE FUNCTION verdict_answer_join(p_head text, p_job text, p_item text, p_tail text)
    RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT '{' || CASE WHEN p_head = '' THEN '' ELSE p_head || ',' END
                 || '"job":' || p_job || ',"item":' || p_item || p_tail || '}' $$;

CREATE OR REPLACE FUNCTION verdict_job_answer(p_disposition text, p_with_adjudication boolean,
                                              p_adjudication text, p_job json, p_item json,
                                              p_deprecation_hint text,
                                              p_tool_result_text text DEFAULT NULL,
                                              p_tool_result_terminal boolean DEFAULT NULL)
    RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT verdict_answer_join(
        verdict_answer_head(p_disposition, p_with_adjudication, p_adjudication,
                            p_tool_result_text, p_tool_result_terminal),
        p_job::text, p_item::text, verdict_answer_tail(p_disposition, p_deprecation_hint)) $$;

-- The answer a kept row replays: a whole one as it was kept, a compact one rendered from the
-- job and item rows as described above; either then goes through verdict_kept_answer(text)
-- (0017), which renders claim_next's claims. STRICT: the lock statements of a first
-- disposition (most calls) join no row, and the function is not called at all. PL/pgSQL keeps
-- its plan for the session.
CREATE FUNCTION verdict_kept_answer(a job_answers) RETURNS text
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    whole text;
BEGIN
    IF a.head IS NULL THEN
        RETURN verdict_kept_answer(a.response);
    END IF;
    SELECT verdict_answer_join(a.head, verdict_job_json(j)::text,
               verdict_item_json(jsonb_populate_record(i, jsonb_build_object(
                   'state', a.item_state, 'attempts', j.attempt, 'failures', a.item_failures,
                   'defers', a.item_defers, 'available_at', a.item_available_at,
                   'lease_expires_at', NULL, 'current_job_id', j.id,
                   'last_reason_code', j.reason_code, 'last_reason', j.reason,
                   'updated_at', j.finished_at)))::text,
               a.tail)
        INTO whole
        FROM jobs j JOIN items i ON i.id = j.item_id WHERE j.id = a.job_id;
    RETURN verdict_kept_answer(whole);
END $$;
