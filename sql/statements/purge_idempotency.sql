-- purge_idempotency: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- (no parameters)
DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'
