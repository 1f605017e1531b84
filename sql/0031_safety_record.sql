-- 0031_safety_record: the job's own record decides (heartbeat lease, release churn, rejections
-- and completions after a tool failure).
--
-- jobs.lease_seconds: the lease length the claim asked for (or the server's default then). A
-- heartbeat without lease_seconds extends by it, not by the server's default of the moment.
-- NULL on jobs claimed before this migration: their heartbeats fall back to the default.
ALTER TABLE jobs ADD COLUMN lease_seconds integer;
