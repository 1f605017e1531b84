-- idem_save: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
-- $3 text
-- $4 text
UPDATE idempotency_keys SET status = 200, response = $4 WHERE route = $1 AND key_name = $2 AND idem_key = $3
