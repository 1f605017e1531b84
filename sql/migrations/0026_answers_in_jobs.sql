-- 0026_answers_in_jobs: the answer a finished job keeps for replays is stored in the job's own
-- row again, written by the update that finishes the job (issue 21, WAL per item).
--
-- 0005 moved the kept answer out of jobs into job_answers: whole, it was the widest value of
-- the hot path (~1.2 kB with its item), and every later version of the job row would have
-- copied it. Since 0021 it is compact (its head and tail members and four item fields, ~100
-- bytes), and a finished job's row is not rewritten again. A row of its own then costs more
-- than the bytes it holds: a heap insert (~200 WAL bytes with its header) and a primary key
-- entry (~64) per job, against ~100 more bytes in the finishing update, which stays HOT (no
-- index covers these columns). The lock statements also read the answer from the job row they
-- lock instead of probing another table, and a lock that waited for a finisher re-reads that
-- row, answer included.
--
-- Columns (NULL until the job is finished by a disposition or a session outcome; a release or
-- an expiry keeps none, which is how the former holder learns its claim was taken):
--   answer_digest   SHA-256 of the request as jsonb text (verdict_request_digest)
--   answer_head, answer_tail, answer_item_*   the compact form of 0021
--   answer_response a whole answer kept before 0021 (moved here from job_answers)
ALTER TABLE jobs
    ADD COLUMN answer_digest bytea,
    ADD COLUMN answer_head text,
    ADD COLUMN answer_tail text,
    ADD COLUMN answer_item_state text,
    ADD COLUMN answer_item_failures integer,
    ADD COLUMN answer_item_defers integer,
    ADD COLUMN answer_item_available_at timestamptz,
    ADD COLUMN answer_response text,
    ADD CONSTRAINT jobs_answer_one_form CHECK (answer_head IS NULL OR answer_response IS NULL);

UPDATE jobs j SET answer_digest = a.request_digest, answer_head = a.head, answer_tail = a.tail,
    answer_item_state = a.item_state, answer_item_failures = a.item_failures,
    answer_item_defers = a.item_defers, answer_item_available_at = a.item_available_at,
    answer_response = a.response
FROM job_answers a WHERE a.job_id = j.id;

DROP FUNCTION verdict_kept_answer(job_answers);
DROP TABLE job_answers;

-- The answer a finished job replays (NULL: it keeps none): a whole one as it was kept, a
-- compact one rendered from the job and item rows (0021), then claim_next's claims rendered
-- (verdict_kept_answer(text), 0017). Statements call it only for a job that keeps one, so a
-- first disposition never enters PL/pgSQL. VOLATILE: its reads take a snapshot of their own.
-- A lock statement that waited for the finisher of the job gets the finished row (READ
-- COMMITTED re-reads a row it waited for), but its own snapshot predates that finisher; the
-- answer is rendered as of now, as the finisher's answer was (its item, the job's tool
-- failures, the jobs claim_next claimed).
CREATE FUNCTION verdict_kept_answer(j jobs) RETURNS text
    LANGUAGE plpgsql VOLATILE STRICT AS $$
DECLARE
    whole text;
BEGIN
    IF j.answer_response IS NOT NULL THEN
        RETURN verdict_kept_answer(j.answer_response);
    END IF;
    IF j.answer_head IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT verdict_answer_join(j.answer_head, verdict_job_json(j)::text,
               verdict_item_json(jsonb_populate_record(i, jsonb_build_object(
                   'state', j.answer_item_state, 'attempts', j.attempt,
                   'failures', j.answer_item_failures, 'defers', j.answer_item_defers,
                   'available_at', j.answer_item_available_at,
                   'lease_expires_at', NULL, 'current_job_id', j.id,
                   'last_reason_code', j.reason_code, 'last_reason', j.reason,
                   'updated_at', j.finished_at)), s)::text,
               j.answer_tail)
        INTO whole
        FROM items i JOIN item_sources s ON s.id = i.id WHERE i.id = j.item_id;
    RETURN verdict_kept_answer(whole);
END $$;
