-- tool_failure_final: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
UPDATE tool_failures SET kind = 'deterministic', retryable = false WHERE id = $1::bigint
