-- flow_step_fair_key: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
SELECT verdict_fair_key_set($1, $2) IS NULL
