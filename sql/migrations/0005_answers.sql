-- 0005_answers: a disposition in two round trips instead of three, and no planning per
-- rendered job (both found with verdict-bench and pg_stat_statements, bench/README.md).
--
-- The answer a finished job replays used to be written by a second UPDATE of the job row
-- after the finishing statement (the answer embeds the job as that statement left it, so the
-- statement could not write it into the same row): a second row version, its index entries
-- and a second firing of the jobs counter trigger per disposition, 0.21 ms of PostgreSQL
-- time each. The finishing request and its answer now live in their own table, written by
-- the finishing statement itself, which is then sent in one pipeline with its COMMIT.
CREATE TABLE job_answers (
    job_id   bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    request  jsonb,
    response text NOT NULL
);
INSERT INTO job_answers (job_id, request, response)
    SELECT id, final_request, final_response FROM jobs WHERE final_response IS NOT NULL;
ALTER TABLE jobs DROP COLUMN final_request, DROP COLUMN final_response;

-- verdict_tool_failures_json was a SQL function with sub-selects, which PostgreSQL cannot
-- inline and plans again on every call (0.18 ms, the largest single cost of a disposition).
-- PL/pgSQL keeps its plans for the session, and most jobs have no tool failure at all.
-- Same JSON, byte for byte.
CREATE OR REPLACE FUNCTION verdict_tool_failures_json(p_job_id bigint) RETURNS json
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
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
END $$;
