-- schema_version: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- (no parameters)
SELECT coalesce(max(version), 0) FROM schema_migrations
