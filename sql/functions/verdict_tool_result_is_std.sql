-- verdict_tool_result_is_std: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 398eb6eb184d0995c22ee706cffe6dda
CREATE OR REPLACE FUNCTION public.verdict_tool_result_is_std(p_text text, p_terminal boolean, p_disposition text, p_reason_code text, p_to_state text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
RETURN COALESCE((p_terminal AND (p_text = verdict_tool_result_std(p_disposition, p_reason_code, p_to_state))), false)
;
