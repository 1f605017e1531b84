-- verdict_kept_head: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: e8d98cb923ca6412693268ec61289858
CREATE OR REPLACE FUNCTION public.verdict_kept_head(j jobs)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE
RETURN CASE WHEN (j).answer_tool_result_std THEN concat_ws(','::text, NULLIF((j).answer_head, ''::text), ('"tool_result":'::text || (json_build_object('text', verdict_tool_result_std((j).disposition, (j).reason_code, (j).answer_item_state), 'terminal', true))::text)) ELSE (j).answer_head END
;
