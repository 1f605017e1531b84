-- 0028_standard_tool_results: a kept answer whose tool_result text is the standard one for its
-- job keeps a flag instead of the text (issue 21, WAL per item).
--
-- The head of a kept answer (0021) is ~125 bytes for a plain `complete`, and ~100 of them are
-- the tool_result member: {"text" : "Recorded: completed. The item is processed. Stop now.",
-- "terminal" : true}. That text is a function of the job's disposition, its reason code and
-- the state the item went to (src/service/tool_result.c), all three in the job's row already,
-- for every state but `deferred` (whose text names the delay). Written by the finishing update
-- of every job, it was a third of that update's WAL record.
--
-- verdict_tool_result_std gives the standard text in SQL for those states (NULL for any other).
-- The finishing statements compare it with the text the service computed, in the same
-- statement: only when they are equal, byte for byte, and the result is terminal, the head is
-- kept without its tool_result and answer_tool_result_std is true; a replay appends the
-- standard text again (verdict_kept_answer). Any difference between the two texts — a wording
-- changed in C and not here, an unusual reason code — only keeps the whole head as before, so
-- a replay is always the answer the first call got.
ALTER TABLE jobs ADD COLUMN answer_tool_result_std boolean;

CREATE FUNCTION verdict_tool_result_std(p_disposition text, p_reason_code text,
                                        p_to_state text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 'Recorded: '
        || CASE p_disposition WHEN 'complete' THEN 'completed' WHEN 'reject_source' THEN 'rejected'
                              WHEN 'defer_item' THEN 'deferred' WHEN 'fail' THEN 'failed'
                              ELSE 'recorded' END
        || CASE WHEN p_reason_code <> '' AND p_disposition IS DISTINCT FROM 'complete'
                THEN ' (' || p_reason_code || ')' ELSE '' END
        || '.'
        || CASE p_to_state WHEN 'processed' THEN ' The item is processed.'
                           WHEN 'rejected' THEN ' The source is closed for good.'
                           WHEN 'manual_review' THEN ' The item waits for a person''s review.'
                           WHEN 'failed' THEN ' The item is not retried.' END
        || ' Stop now.';

-- Whether the finishing statement keeps the flag instead of the text (see above).
CREATE FUNCTION verdict_tool_result_is_std(p_text text, p_terminal boolean,
                                           p_disposition text, p_reason_code text,
                                           p_to_state text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce(p_terminal AND p_text = verdict_tool_result_std(p_disposition,
                                                                    p_reason_code, p_to_state),
                    false);

-- The head kept for replays: the standard tool_result appended again where only its flag was
-- kept (the same rendering as verdict_answer_head's, 0025).
CREATE FUNCTION verdict_kept_head(j jobs) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE WHEN j.answer_tool_result_std
                THEN concat_ws(',', nullif(j.answer_head, ''),
                     '"tool_result":' || json_build_object(
                         'text', verdict_tool_result_std(j.disposition, j.reason_code,
                                                         j.answer_item_state),
                         'terminal', true)::text)
                ELSE j.answer_head END;

-- 0026's, with the head from verdict_kept_head.
CREATE OR REPLACE FUNCTION verdict_kept_answer(j jobs) RETURNS text
    LANGUAGE plpgsql VOLATILE STRICT AS $$
DECLARE
    whole text;
BEGIN
    IF j.answer_response IS NOT NULL THEN
        RETURN verdict_kept_answer(j.answer_response);
    END IF;
    IF j.answer_head IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT verdict_answer_join(verdict_kept_head(j), verdict_job_json(j)::text,
               verdict_item_json(jsonb_populate_record(i, jsonb_build_object(
                   'state', j.answer_item_state, 'attempts', j.attempt,
                   'failures', j.answer_item_failures, 'defers', j.answer_item_defers,
                   'available_at', j.answer_item_available_at,
                   'lease_expires_at', NULL, 'current_job_id', j.id,
                   'last_reason_code', j.reason_code, 'last_reason', j.reason,
                   'updated_at', j.finished_at)), s)::text,
               j.answer_tail)
        INTO whole
        FROM items i JOIN item_sources s ON s.id = i.id WHERE i.id = j.item_id;
    RETURN verdict_kept_answer(whole);
END $$;
