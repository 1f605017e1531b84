-- verdict_answer_tail: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 957ef6cb4efd78bbffffd4edb198631a
CREATE OR REPLACE FUNCTION public.verdict_answer_tail(p_disposition text, p_deprecation_hint text)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT CASE WHEN p_deprecation_hint IS NOT NULL
             THEN ',"deprecated":true,"mapped_to":' || to_json(p_disposition)::text
                  || ',"hint":' || to_json(p_deprecation_hint)::text
             ELSE '' END $function$
;
