-- item_releases: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
SELECT count(*) FROM audit t WHERE t.item_id = $1 AND t.cause = 'release'   AND t.id > coalesce((SELECT max(v.id) FROM audit v WHERE v.item_id = $1     AND v.cause NOT IN ('register', 'claim', 'release', 'admin_release',                         'lease_expired')), 0)
