-- 0033_history_layout: the WAL a claim + complete cycle writes stays the same however much
-- history the tables hold.
--
-- A job row is inserted by the claim (~130 bytes) and updated in place by the finish (HOT,
-- ~210 bytes); an item row is updated twice per cycle, not in place (state and the lease are
-- indexed). With pages packed full (fillfactor 100) those updates leave slivers of free space
-- behind in every old page, the free space map hands them to new rows, and a database with
-- history scatters each cycle's new rows over old pages: every first touch of such a page
-- after a checkpoint writes a full-page image (bench/walprobe.sh with HISTORY=2000000: the
-- jobs insert alone paid 0.25 full-page images per cycle, WAL per cycle 2,312 -> 3,093 B).
-- Leaving room on each page for its rows' own updates keeps the updates on their page and
-- the old pages too full for a new row: inserts go to the end of the table, where the pages
-- are hot already. Existing pages are not rewritten (ALTER ... SET takes a SHARE UPDATE
-- EXCLUSIVE lock and returns at once); the setting applies to every page a row is put on.
ALTER TABLE jobs SET (fillfactor = 60);
ALTER TABLE items SET (fillfactor = 80);
