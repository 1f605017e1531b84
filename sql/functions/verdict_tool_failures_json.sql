-- verdict_tool_failures_json: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 7e0e110d0f10e6a318b6c142630a3500
CREATE OR REPLACE FUNCTION public.verdict_tool_failures_json(p_job_id bigint)
 RETURNS json
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
AS $function$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM tool_failures f WHERE f.job_id = p_job_id) THEN
        RETURN json_build_object('count', 0, 'by_tool', '[]'::json);
    END IF;
    RETURN json_build_object(
        'count', (SELECT count(*) FROM tool_failures f WHERE f.job_id = p_job_id),
        'by_tool', (
            SELECT json_agg(json_build_object('tool', s.tool, 'count', s.n,
                                              'last_error', s.last_error,
                                              'retryable', s.retryable) ORDER BY s.tool)
            FROM (SELECT f.tool, count(*) AS n,
                         (array_agg(f.error ORDER BY f.id DESC))[1] AS last_error,
                         (array_agg(f.retryable ORDER BY f.id DESC))[1] AS retryable
                  FROM tool_failures f WHERE f.job_id = p_job_id GROUP BY f.tool) s));
END $function$
;
