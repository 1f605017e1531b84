-- verdict_answer_join: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 705d85b5479a5fb3c615edbfbd201f47
CREATE OR REPLACE FUNCTION public.verdict_answer_join(p_head text, p_job text, p_item text, p_tail text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT '{' || coalesce(nullif(p_head, '') || ',', '')
                 || '"job":' || p_job || ',"item":' || p_item || p_tail || '}' $function$
;
