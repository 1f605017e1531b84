-- retention_transitions: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 double precision
-- $2 bigint
DELETE FROM transitions WHERE id = ANY (ARRAY(  SELECT t.id FROM transitions t  WHERE t.logged_at < now() - $1 * interval '1 day'    AND t.at < now() - $1 * interval '1 day'    AND (SELECT i.state IN ('processed', 'rejected')                AND i.updated_at < now() - $1 * interval '1 day'         FROM items i WHERE i.id = t.item_id)  LIMIT $2))  AND id <= (SELECT transition_id FROM counts_folded)
