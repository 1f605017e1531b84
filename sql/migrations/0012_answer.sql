-- 0012_answer: the answer a job write keeps for replays, built in one place from typed parts,
-- and every kept answer a closed JSON object.
--
-- Until now the callers handed the finishing statements raw JSON fragments (a "head" and a
-- "tail") and the statements kept {head,"job":…,"item":…,tail without its closing brace, so
-- that the service could append "replayed". verdict_job_answer builds the whole object from
-- typed values instead; the service adds "replayed" when it answers (service/jobs.c,
-- vd_job_answer_render). Answers kept by earlier versions are closed here, so a replay of a
-- job finished before this migration answers the same members as before.
CREATE FUNCTION verdict_job_answer(p_disposition text, p_with_adjudication boolean,
                                   p_adjudication text, p_job json, p_item json,
                                   p_deprecation_hint text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT '{' || concat_ws(',',
        CASE WHEN p_disposition IS NOT NULL
             THEN '"disposition":' || to_json(p_disposition)::text END,
        CASE WHEN p_with_adjudication
             THEN '"adjudication":' || coalesce(p_adjudication, 'null') END,
        '"job":' || p_job::text,
        '"item":' || p_item::text,
        CASE WHEN p_deprecation_hint IS NOT NULL
             THEN '"deprecated":true,"mapped_to":' || to_json(p_disposition)::text
                  || ',"hint":' || to_json(p_deprecation_hint)::text END) || '}' $$;

UPDATE job_answers SET response = response || '}';
