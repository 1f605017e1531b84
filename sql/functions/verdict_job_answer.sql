-- verdict_job_answer: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 84a6406702728fcb6efa451fc891ea17
CREATE OR REPLACE FUNCTION public.verdict_job_answer(p_disposition text, p_with_adjudication boolean, p_adjudication text, p_job json, p_item json, p_deprecation_hint text, p_tool_result_text text DEFAULT NULL::text, p_tool_result_terminal boolean DEFAULT NULL::boolean)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT verdict_answer_join(
        verdict_answer_head(p_disposition, p_with_adjudication, p_adjudication,
                            p_tool_result_text, p_tool_result_terminal),
        p_job::text, p_item::text, verdict_answer_tail(p_disposition, p_deprecation_hint)) $function$
;
