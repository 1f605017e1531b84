-- 0008_feed: the change feed (GET /v1/transitions) must never pass over a transition that
-- commits later with a smaller id. Ids are taken at insert, and concurrent transactions commit
-- in any order, so a poller that saw id 11 could miss id 10 for ever. Each transition now
-- records when its row was made (clock_timestamp(), the moment its id was taken, unlike `at`,
-- which is its transaction's start); the feed returns only rows made before the oldest
-- transaction still open with a write in this database started: every id not visible yet was
-- taken inside one of those, so every row returned is below all of them.
--
-- Nullable with a default set afterwards: existing rows keep NULL (all committed: safe) and
-- the table is not rewritten.
ALTER TABLE transitions ADD COLUMN logged_at timestamptz;
ALTER TABLE transitions ALTER COLUMN logged_at SET DEFAULT clock_timestamp();

-- The start of the oldest transaction of this database that holds a transaction id (has
-- written) and is still open, other than the caller's; infinity when there is none. verdictd's
-- connections share one role, so pg_stat_activity shows them all whole.
CREATE FUNCTION verdict_feed_horizon() RETURNS timestamptz
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT coalesce(min(a.xact_start), 'infinity'::timestamptz)
          FROM pg_stat_activity a
          WHERE a.datname = current_database() AND a.backend_xid IS NOT NULL
            AND a.pid <> pg_backend_pid() $$;

-- The feed finds the first row made after that horizon: among the newest rows only. A BRIN
-- index costs next to nothing per insert (the table is appended in logged_at order) and
-- narrows the search to the last block ranges.
CREATE INDEX transitions_logged_at ON transitions USING brin (logged_at);
