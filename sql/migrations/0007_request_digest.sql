-- 0007_request_digest: a finished job keeps a digest of its finishing request, not the
-- request. The request of a session outcome carries the whole session report (up to the body
-- cap, 1 MiB by default, with whatever credentials the transcript holds), and it was kept for
-- as long as the job (forever for items that never finish). A replay only needs to recognise
-- the identical call: the SHA-256 of the request's canonical jsonb text (keys sorted, spacing
-- normalised, as jsonb prints it), so key order and whitespace still do not matter, and a
-- batch entry (stored without its job_id) and the single call still replay each other.
CREATE FUNCTION verdict_request_digest(r jsonb) RETURNS bytea
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN sha256(convert_to(r::text, 'UTF8'));

ALTER TABLE job_answers ADD COLUMN request_digest bytea;
UPDATE job_answers SET request_digest = verdict_request_digest(request);
ALTER TABLE job_answers DROP COLUMN request;
