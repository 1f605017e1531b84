-- 0018_index_diet: fewer and narrower indexes on the hot tables, and HOT finishing updates of
-- jobs (issue 21, "Where the WAL goes" in bench/README.md).
--
-- Every state change of an item is a non-HOT update (its state is in index predicates), so
-- each writes a new entry in every index of items; every job was finished by a non-HOT update
-- (status and finished_at were indexed); every transition went into three indexes. Checked
-- statement by statement (src/store/statements.c) before dropping:
--
-- * items identity: UNIQUE (flow_step_id, source_type, item_identifier) held keys of up to
--   2,000 bytes. Replaced by a unique index on the identifier's SHA-256 (32 bytes); the
--   registration (ON CONFLICT), items_registered and items_lookup use the digest to find the
--   row AND compare the text, so a digest equality alone never names another item. The index
--   still leads with flow_step_id: GET /v1/items?flow_step_id=… and the bulk selections walk it.
-- * items_flow_state (flow_step_id, state, id): lists by state are keyset pages by id with a
--   filter (the identity index above serves the flow step), counts come from item_counts.
-- * jobs_flow_status, jobs_finished_at: GET /v1/jobs is a keyset page by id with filters;
--   counts come from job_counts; retention now finds old jobs by a BRIN index on claimed_at
--   (a job finished N days ago was claimed before that). With neither, the finishing update
--   (and the heartbeat) change no indexed column of jobs: with fillfactor 80 they are HOT.
-- * transitions_at: retention and incident_requeue (rejections since an incident opened) use
--   the BRIN index on logged_at (0008) instead (logged_at >= at for every row written since).
CREATE FUNCTION verdict_identity_digest(p_identifier text) RETURNS bytea
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT sha256(convert_to(p_identifier, 'UTF8')) $$;

CREATE UNIQUE INDEX items_identity
    ON items (flow_step_id, source_type, verdict_identity_digest(item_identifier));
ALTER TABLE items DROP CONSTRAINT items_flow_step_id_source_type_item_identifier_key;
DROP INDEX items_flow_state;

DROP INDEX jobs_flow_status;
DROP INDEX jobs_finished_at;
CREATE INDEX jobs_claimed_at ON jobs USING brin (claimed_at);
ALTER TABLE jobs SET (fillfactor = 80);

DROP INDEX transitions_at;
