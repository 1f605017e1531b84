-- verdict_tool_failure_version: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: cdc2c1cdc34691dd8bc8e9b970148288
CREATE OR REPLACE FUNCTION public.verdict_tool_failure_version()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF NEW.worker_version IS NULL THEN
        NEW.worker_version := (SELECT j.worker_version FROM jobs j WHERE j.id = NEW.job_id);
    END IF;
    RETURN NEW;
END $function$
;
