-- 0027_retention_by_age: retention finds old rows by their age first (issue 21, PostgreSQL CPU
-- per sweep pass).
--
-- The retention statements (src/store/statements.c, retention_transitions, retention_jobs)
-- joined old transitions and jobs to their items with one condition, `logged_at IS NULL` (the
-- transitions written before 0008), that no index serves; their generic plans scanned the
-- whole items table on every sweeper pass, whether anything was old or not: 115 ms and 27 ms
-- per pass over 200,000 items (EXPLAIN ANALYZE), seen at 0.1–0.7 s per pass in the benchmark,
-- growing with the table. Now the transitions written before 0008 get their logged_at from
-- `at` (when they were made; the change feed's horizon only compares the newest rows), the
-- column is NOT NULL, and the statements start from the BRIN indexes on transitions.logged_at
-- and jobs.claimed_at, looking up each candidate's item by primary key: ~2–4 ms per pass when
-- nothing is old, the same rows deleted when something is.
UPDATE transitions SET logged_at = at WHERE logged_at IS NULL;
ALTER TABLE transitions ALTER COLUMN logged_at SET NOT NULL;

-- A BRIN scan reads every block range not summarised yet, and VACUUM summarises only whole
-- ranges, late: on a busy table that was every block written since the last vacuum (0.8 s per
-- pass in the benchmark). Summarised as each range fills (autovacuum's work items), a pass
-- reads the range being filled and those that may hold old rows.
ALTER INDEX transitions_logged_at SET (autosummarize = on);
ALTER INDEX jobs_claimed_at SET (autosummarize = on);
