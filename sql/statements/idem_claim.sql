-- idem_claim: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
-- $3 text
-- $4 text
INSERT INTO idempotency_keys AS k (route, key_name, idem_key, request_hash) VALUES ($1, $2, $3, md5($4::text::jsonb::text)) ON CONFLICT (route, key_name, idem_key) DO UPDATE  SET request_hash = excluded.request_hash, status = NULL, response = NULL,      created_at = now()  WHERE k.created_at < now() - interval '24 hours' RETURNING 1
