-- 0006_vocabulary: the words round 2 adds to the state machine's audit, in one place so the
-- features that use them (issues 19 and 20) do not each restate the same CHECK constraints.
--
-- - job status 'released': the holder (POST /v1/jobs/{id}/release) or an admin
--   (POST /v1/items/{id}/release) gave the claim back without a verdict; no budget is spent.
-- - transition causes 'release' (the holder), 'admin_release' (an admin), 'resolve' (an admin
--   decided a parked item: manual_review or failed -> processed or rejected).
ALTER TABLE jobs DROP CONSTRAINT jobs_status_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_check CHECK (status IN
    ('processing', 'completed', 'rejected', 'deferred', 'failed', 'expired', 'released'));

ALTER TABLE transitions DROP CONSTRAINT transitions_job_status_check;
ALTER TABLE transitions ADD CONSTRAINT transitions_job_status_check CHECK (job_status IN
    ('processing', 'completed', 'rejected', 'deferred', 'failed', 'expired', 'released'));

ALTER TABLE transitions DROP CONSTRAINT transitions_cause_check;
ALTER TABLE transitions ADD CONSTRAINT transitions_cause_check CHECK (cause IN
    ('register', 'claim', 'complete', 'reject_source', 'defer_item', 'fail', 'skip_item',
     'session_outcome', 'lease_expired', 'requeue', 'release', 'admin_release', 'resolve'));
