-- verdict_answer_head: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 4cd375284a87e3331ae8fc39f0c60201
CREATE OR REPLACE FUNCTION public.verdict_answer_head(p_disposition text, p_with_adjudication boolean, p_adjudication text, p_tool_result_text text, p_tool_result_terminal boolean)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT concat_ws(',',
        CASE WHEN p_disposition IS NOT NULL
             THEN '"disposition":' || to_json(p_disposition)::text END,
        CASE WHEN p_with_adjudication
             THEN '"adjudication":' || coalesce(p_adjudication, 'null') END,
        CASE WHEN p_tool_result_text IS NOT NULL
             THEN '"tool_result":' || json_build_object(
                      'text', p_tool_result_text,
                      'terminal', coalesce(p_tool_result_terminal, false))::text END) $function$
;
