-- retention_jobs: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 double precision
-- $2 bigint
WITH d AS (DELETE FROM jobs WHERE id = ANY (ARRAY(  SELECT j.id FROM jobs j  WHERE j.claimed_at < now() - $1 * interval '1 day'    AND j.finished_at < now() - $1 * interval '1 day'    AND coalesce(j.finish_seq, 0) <= (SELECT transition_id FROM counts_folded)    AND (SELECT i.state IN ('processed', 'rejected')                AND i.updated_at < now() - $1 * interval '1 day'                AND NOT EXISTS (SELECT 1 FROM transitions t WHERE t.item_id = i.id)         FROM items i WHERE i.id = j.item_id)  LIMIT $2)) RETURNING id, item_id), u AS (UPDATE items SET current_job_id = NULL FROM d       WHERE items.id = d.item_id AND items.current_job_id = d.id), s AS (UPDATE limit_lanes SET holders = ARRAY(SELECT h FROM unnest(holders) h         WHERE h <> ALL (ARRAY(SELECT id FROM d)))       WHERE id IN (SELECT x.id FROM limit_lanes x         WHERE x.holders && ARRAY(SELECT id FROM d) ORDER BY x.id FOR UPDATE)) SELECT id FROM d
