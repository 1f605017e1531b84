-- 0022_fewer_locks: fewer row locks per item (issue 21, WAL per item; each is a WAL record).
--
-- Foreign-key checks lock the referenced row FOR KEY SHARE unless the transaction already holds
-- a stronger lock on that very row version. items.current_job_id -> jobs (set by every claim to
-- the job the claim has just inserted), transitions.job_id -> jobs (the claim's transition) and
-- transitions.item_id -> items (the finishing transition, whose item version the finish has
-- just written) each cost a lock record and a trigger call per item, for rows the same
-- statement made or holds. Every one of these rows is written by verdict's own statements from
-- the ids they have just written, items are never deleted, and the keys' only actions were
-- for retention: ON DELETE SET NULL on a job deleted by retention (for transitions.job_id,
-- a sequential scan of transitions per deleted job: there is no index on it). Retention now
-- forgets an item's current job itself and deletes a job only once no transition of its item
-- is left (src/store/statements.c, retention_jobs). jobs.item_id and job_answers.job_id keep
-- their keys: their checks find the row locked already and write nothing.
ALTER TABLE items DROP CONSTRAINT items_current_job_fk;
ALTER TABLE transitions DROP CONSTRAINT transitions_item_id_fkey;
ALTER TABLE transitions DROP CONSTRAINT transitions_job_id_fkey;

-- An item is rewritten twice per job (claim, finish: non-HOT, its state is in the predicates of
-- the queue's partial indexes). On a full page the new version goes to another page: PostgreSQL
-- then first locks the old version with a WAL record of its own, and logs the whole new
-- version (an update on the same page may leave out what the two versions share). Room on every
-- page (pruning frees the old versions) keeps most rewrites on their page.
ALTER TABLE items SET (fillfactor = 70);
