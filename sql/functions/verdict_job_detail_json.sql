-- verdict_job_detail_json: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: a1dec0ca1b1bfa29cb2f000dc6945bd0
CREATE OR REPLACE FUNCTION public.verdict_job_detail_json(j jobs)
 RETURNS json
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT (left(verdict_job_json(j)::text, -1) || ',"checkpoint":'
                  || coalesce(j.checkpoint::text, 'null') || '}')::json $function$
;
