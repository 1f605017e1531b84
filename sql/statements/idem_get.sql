-- idem_get: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
-- $3 text
-- $4 text
SELECT request_hash IN (md5($4::text::jsonb::text), md5($4::text)), response FROM idempotency_keys WHERE route = $1 AND key_name = $2 AND idem_key = $3   AND created_at >= now() - interval '24 hours'
