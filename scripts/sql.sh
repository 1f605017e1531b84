#!/usr/bin/env bash
# scripts/sql.sh - the SQL's generated files, made from a database migrated from zero.
#
#   scripts/sql.sh gen      write sql/schema.sql, sql/functions/<name>.sql (and statements);
#                           first scripts/transitions.sh gen (verdict_transition.sql)
#   scripts/sql.sh check    fail when one is stale (needs PostgreSQL; exit 77 without one
#                           when --need-url is given and VERDICT_TEST_DATABASE_URL is unset)
#   scripts/sql.sh check --verdictd PATH
#                           also migrate a fresh database with verdictd itself (embedded
#                           migrations, then the embedded functions/) and compare
#   scripts/sql.sh stamp    fast, no PostgreSQL: fail when sql/migrations/0*.sql changed since gen
#   --statements PROGRAM    (gen and check) also sql/statements/<name>.sql, written by the
#                           test build's sql_statements from src/store/statements.c; gen finds
#                           build/tests/sql_statements by itself (build it first)
#
# PostgreSQL: VERDICT_TEST_DATABASE_URL (a libpq keyword string, as scripts/test.sh exports
# it) or, without it, a throwaway cluster started here (scripts/lib.sh) and stopped at exit.
#
# The rules (CONTRIBUTING.md, "SQL"): every migration sql/NNNN_*.sql is applied in order, each
# in one transaction, to an empty database WITHOUT the files of sql/functions/ ("M" below).
# - sql/schema.sql is M's pg_dump --schema-only minus functions, the migrations' bookkeeping
#   tables, SET lines and version banners.
# - sql/functions/<name>.sql holds every overload of one function as CREATE OR REPLACE, after a
#   header line "-- from-migrations: <md5 of M's definition when gen last wrote it | none>".
#   A file may be edited by hand (that is how a function changes); gen keeps the edit. When a
#   migration changes the function after the file was written (M's md5 is not the header's),
#   the file is stale: verdictd applies functions/ after the migrations, so the stale file
#   would silently undo the migration. check fails on exactly that; gen takes M's version when
#   the file was not edited, and refuses (a conflict to merge by hand) when it was.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

SCHEMA=sql/schema.sql
FUNCS=sql/functions
TMPDIR_SQL=$(mktemp -d)
OWN_PG=""
BASE_URL=""
cleanup() {
  [ -n "$BASE_URL" ] && [ -z "$OWN_PG" ] && drop_all
  [ -n "$OWN_PG" ] && vd_pg_stop "$OWN_PG"
  rm -rf "$TMPDIR_SQL"
  [ -n "$OWN_PG" ] && rm -rf "$OWN_PG"
  return 0
}
trap cleanup EXIT

migrations() { ls sql/migrations/[0-9][0-9][0-9][0-9]_*.sql | LC_ALL=C sort; }
migrations_md5() { migrations | xargs cat | md5sum | cut -d' ' -f1; }

PSQL="$VD_PG_BIN/psql"
[ -x "$PSQL" ] || PSQL=psql
PG_DUMP="$VD_PG_BIN/pg_dump"
[ -x "$PG_DUMP" ] || PG_DUMP=pg_dump
PG_RESTORE="$VD_PG_BIN/pg_restore"
[ -x "$PG_RESTORE" ] || PG_RESTORE=pg_restore

pg_url() {
  if [ -n "${VERDICT_TEST_DATABASE_URL:-}" ]; then
    BASE_URL=$VERDICT_TEST_DATABASE_URL
    return
  fi
  OWN_PG=$(mktemp -d /tmp/verdict-sql-XXXXXX)
  vd_pg_start "$OWN_PG" -c fsync=off -c synchronous_commit=off -c full_page_writes=off
  BASE_URL=$VD_PG_URL
}

q() { PGOPTIONS="-c client_min_messages=warning" "$PSQL" -X -q -v ON_ERROR_STOP=1 "$@"; }

# fresh NAME: an empty database NAME (dropped at exit: cleanup)
DBS=()
fresh() {
  q "$BASE_URL" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1"
  DBS+=("$1")
}
drop_all() {
  local d
  for d in "${DBS[@]}"; do q "$BASE_URL" -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" || true; done
  DBS=()
}
url_of() { printf '%s dbname=%s' "$BASE_URL" "$1"; }

# migrate_plain DB: the migrations alone, in order, each in one transaction
migrate_plain() {
  local args=() m
  for m in $(migrations); do args+=(-c BEGIN -f "$m" -c COMMIT); done
  q "$(url_of "$1")" "${args[@]}" >/dev/null
}

# apply_files DB: every functions/ file, in name order, in one transaction
apply_files() {
  local args=() f
  for f in "$FUNCS"/*.sql; do args+=(-f "$f"); done
  [ ${#args[@]} -eq 0 ] || q "$(url_of "$1")" -1 "${args[@]}" >/dev/null
}

# schema_of DB: the dump, stable and without functions or bookkeeping
schema_of() {
  local u dump
  u=$(url_of "$1")
  dump="$TMPDIR_SQL/$1.dump"
  "$PG_DUMP" -d "$u" --schema-only --no-owner --no-privileges --no-tablespaces \
    --exclude-table=schema_migrations --exclude-table=schema_functions -Fc -f "$dump"
  "$PG_RESTORE" -l "$dump" | grep -vE '^[0-9]+; [0-9]+ [0-9]+ (FUNCTION|COMMENT - FUNCTION|PROCEDURE|AGGREGATE) ' \
    >"$TMPDIR_SQL/$1.list"
  "$PG_RESTORE" --no-owner --no-privileges -L "$TMPDIR_SQL/$1.list" -f - "$dump" |
    grep -vE '^(SET |SELECT pg_catalog\.set_config|-- Dumped (from|by) |\\(un)?restrict )' | cat -s
}

# functions_of DB: "name<TAB>md5" per function name, and $TMPDIR_SQL/DB.fn/<name>.sql its
# definitions (every overload, by identity arguments, each ending in ";")
FN_QUERY="SELECT p.proname, string_agg(pg_get_functiondef(p.oid) || ';', E'\n'
            ORDER BY pg_get_function_identity_arguments(p.oid))
          FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = 'public' AND p.prokind IN ('f', 'p')
            AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
          GROUP BY p.proname ORDER BY p.proname"
functions_of() {
  local dir="$TMPDIR_SQL/$1.fn" name script="$TMPDIR_SQL/$1.fn.psql"
  mkdir -p "$dir"
  : >"$script"
  for name in $(q "$(url_of "$1")" -At -c "SELECT DISTINCT p.proname FROM pg_proc p
      JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'
      AND p.prokind IN ('f', 'p') ORDER BY 1"); do
    printf '\\o %s\nSELECT def FROM (%s) AS f (name, def) WHERE name = '"'"'%s'"'"';\n' \
      "$dir/$name.sql" "$FN_QUERY" "$name" >>"$script"
  done
  q "$(url_of "$1")" -At -f "$script"
}

md5_of() { md5sum <"$1" | cut -d' ' -f1; }
header_of() { sed -n 's/^-- from-migrations: \([0-9a-f]*\|none\)$/\1/p' "$1" | head -1; }
body_of() { sed -n '/^-- from-migrations: /,$p' "$1" | tail -n +2; }

write_function() { # name definition-file md5
  {
    printf -- '-- %s: the current definition. Edit it here to change the function: verdictd\n' "$1"
    printf -- '-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).\n'
    printf -- '-- from-migrations: %s\n' "$3"
    cat "$2"
  } >"$FUNCS/$1.sql"
}

write_schema() { # dump-file [output]
  {
    printf -- '-- sql/schema.sql: the schema as the migrations leave it (tables, constraints, indexes,\n'
    printf -- '-- types, triggers, views). Generated by scripts/sql.sh gen; do not edit. Functions: sql/functions/.\n'
    printf -- '-- migrations-md5: %s\n' "$(migrations_md5)"
    cat "$1"
  } >"${2:-$SCHEMA}"
}

# One function name: $1 name, $2 M's definition file or "" (not made by the migrations).
# Prints what is wrong (check) or does it (gen); returns 1 on a problem gen cannot settle.
reconcile() {
  local mode=$1 name=$2 mdef=$3 file="$FUNCS/$2.sql" mmd5="none" head fmd5
  [ -n "$mdef" ] && mmd5=$(md5_of "$mdef")
  if [ ! -f "$file" ]; then
    [ "$mode" = gen ] && { write_function "$name" "$mdef" "$mmd5"; echo "sql.sh: wrote $file"; return 0; }
    echo "$file: missing (a migration made $name): run scripts/sql.sh gen"
    return 1
  fi
  head=$(header_of "$file")
  [ "$head" = "$mmd5" ] && return 0 # the migrations did not change it since gen: file wins
  fmd5=$(body_of "$file" | md5sum | cut -d' ' -f1)
  if [ "$mode" = gen ] && [ "$fmd5" = "$head" ]; then # file untouched: take the migration's
    if [ -n "$mdef" ]; then write_function "$name" "$mdef" "$mmd5"; echo "sql.sh: updated $file"
    else rm -f "$file"; echo "sql.sh: removed $file (dropped by a migration)"; fi
    return 0
  fi
  if [ -n "$mdef" ] && [ "$(md5_of "$mdef")" = "$fmd5" ]; then # both say the same
    [ "$mode" = gen ] && { write_function "$name" "$mdef" "$mmd5"; return 0; }
  fi
  if [ "$mode" = gen ]; then
    echo "$file: CONFLICT: edited by hand and changed by a migration since gen. Merge the"
    echo "  migration's version (CREATE FUNCTION ... $name in the newest sql/NNNN_*.sql) into the"
    echo "  file by hand, then set its header line to: -- from-migrations: $mmd5"
  else
    echo "$file: stale: a migration changed (or dropped) $name after this file was written;"
    echo "  verdictd applies functions/ after the migrations, so this file would undo it."
    echo "  Run scripts/sql.sh gen (it takes the migration's version unless the file was edited)."
  fi
  return 1
}

reconcile_all() { # mode db
  local rc=0 name mdir="$TMPDIR_SQL/$2.fn" f
  mkdir -p "$FUNCS"
  for f in "$mdir"/*.sql; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .sql)
    reconcile "$1" "$name" "$f" || rc=1
  done
  for f in "$FUNCS"/*.sql; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .sql)
    [ -e "$mdir/$name.sql" ] || reconcile "$1" "$name" "" || rc=1
  done
  return $rc
}

STATEMENTS=sql/statements
# statements_into DIR DB PROGRAM: every statement of statements.c, prepared against DB
statements_into() {
  rm -rf "$1"
  mkdir -p "$1"
  q "$(url_of "$2")" -c "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,
      name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())" # as migrate.c makes it
  "$3" "$1" "$(url_of "$2")"
}

cmd_gen() {
  local prog=""
  [ "${1:-}" = --statements ] && prog=$2
  [ -z "$prog" ] && [ -x build/tests/sql_statements ] && prog=build/tests/sql_statements
  scripts/transitions.sh gen # sql/functions/verdict_transition.sql from transitions.def
  pg_url
  local db="vd_sqlgen_$$"
  fresh "$db"
  migrate_plain "$db"
  functions_of "$db"
  schema_of "$db" >"$TMPDIR_SQL/schema"
  local rc=0
  reconcile_all gen "$db" || rc=1
  write_schema "$TMPDIR_SQL/schema"
  if [ -n "$prog" ] && [ $rc -eq 0 ]; then
    apply_files "$db"
    statements_into "$STATEMENTS" "$db" "$prog" || rc=1
  elif [ -z "$prog" ]; then
    echo "sql.sh: sql/statements/ not written: build the tests (build/tests/sql_statements)"
  fi
  drop_all
  [ $rc -eq 0 ] && echo "sql.sh: sql/schema.sql and sql/functions/ are current"
  return $rc
}

vd_migrate_again() { # verdictd url
  VERDICT_DATABASE_URL="$2" VERDICT_API_KEYS="sqlcheck:admin:sql-check-token-0123456789abcdef" \
    "$1" migrate >"$TMPDIR_SQL/verdictd.log" 2>&1 || { cat "$TMPDIR_SQL/verdictd.log"; return 1; }
}

# check_verdictd PATH want-schema-file files-db: verdictd's own migrate from zero must give the
# same schema and the same functions as the migrations followed by the files, must leave a
# file in place alone, and re-apply one whose recorded MD5 or live definition differs.
check_verdictd() {
  local db="vd_sqlchk_d_$$" rc=0 u
  fresh "$db"
  u=$(url_of "$db")
  VERDICT_DATABASE_URL="$u" VERDICT_API_KEYS="sqlcheck:admin:sql-check-token-0123456789abcdef" "$1" migrate \
    >"$TMPDIR_SQL/verdictd.log" 2>&1 || { cat "$TMPDIR_SQL/verdictd.log"; return 1; }
  schema_of "$db" >"$TMPDIR_SQL/d.schema"
  diff -u "$2" "$TMPDIR_SQL/d.schema" || { echo "verdictd migrate: schema differs"; rc=1; }
  q "$u" -At -c "$FN_QUERY" >"$TMPDIR_SQL/d.fn"
  q "$(url_of "$3")" -At -c "$FN_QUERY" >"$TMPDIR_SQL/f.fn"
  diff -u "$TMPDIR_SQL/f.fn" "$TMPDIR_SQL/d.fn" >/dev/null ||
    { echo "verdictd migrate: functions differ from migrations + sql/functions/"; rc=1; }
  # a file in place is left alone; a changed MD5 or a definition changed behind it is re-applied
  local probe=verdict_ts at0 at1 at2
  [ -f "$FUNCS/$probe.sql" ] || return $rc
  at0=$(q "$u" -At -c "SELECT applied_at FROM schema_functions WHERE name = '$probe'")
  vd_migrate_again "$1" "$u"
  at1=$(q "$u" -At -c "SELECT applied_at FROM schema_functions WHERE name = '$probe'")
  [ -n "$at0" ] && [ "$at0" = "$at1" ] ||
    { echo "verdictd migrate: re-applied $probe although it was in place"; rc=1; }
  q "$u" -c "CREATE OR REPLACE FUNCTION verdict_ts(t timestamptz) RETURNS text
      LANGUAGE sql IMMUTABLE AS \$\$ SELECT 'tampered' \$\$"
  vd_migrate_again "$1" "$u"
  [ "$(q "$u" -At -c "SELECT verdict_ts(now())")" != tampered ] ||
    { echo "verdictd migrate: left $probe replaced behind its file"; rc=1; }
  at1=$(q "$u" -At -c "SELECT applied_at FROM schema_functions WHERE name = '$probe'")
  q "$u" -c "UPDATE schema_functions SET md5 = 'changed' WHERE name = '$probe'"
  vd_migrate_again "$1" "$u"
  at2=$(q "$u" -At -c "SELECT applied_at FROM schema_functions WHERE name = '$probe'")
  [ "$(q "$u" -At -c "SELECT md5 FROM schema_functions WHERE name = '$probe'")" != changed ] &&
    [ "$at2" != "$at1" ] || { echo "verdictd migrate: did not re-apply $probe after its MD5 changed"; rc=1; }
  return $rc
}

# check_upgrade PATH want-schema-file files-functions: the oldest schema a user can have
# (0001 only, as verdictd recorded it) with an item and its register transition, upgraded by
# verdictd to the newest migration and the function files: the same schema and functions as a
# database made from zero, and the item still there and rendered by the functions.
check_upgrade() {
  local db="vd_sqlchk_u_$$" rc=0 u first
  fresh "$db"
  u=$(url_of "$db")
  first=$(migrations | head -1)
  q "$u" -c "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())" \
    -c BEGIN -f "$first" -c "INSERT INTO schema_migrations VALUES (1, '$(basename "$first")')" \
    -c COMMIT -c "INSERT INTO flow_steps (flow_step_id) VALUES ('up')" \
    -c "INSERT INTO items (flow_step_id, source_type, item_identifier, max_attempts, max_defers)
        VALUES ('up', 'rss', 'kept-from-0001', 3, 3)" \
    -c "INSERT INTO transitions (item_id, to_state, cause, actor)
        SELECT id, 'available', 'register', 'w' FROM items" >/dev/null
  vd_migrate_again "$1" "$u" || { echo "verdictd migrate: the upgrade from $first failed"; return 1; }
  schema_of "$db" >"$TMPDIR_SQL/u.schema"
  diff -u "$2" "$TMPDIR_SQL/u.schema" || { echo "upgrade from $first: schema differs"; rc=1; }
  q "$u" -At -c "$FN_QUERY" >"$TMPDIR_SQL/u.fn"
  diff -u "$3" "$TMPDIR_SQL/u.fn" >/dev/null || { echo "upgrade from $first: functions differ"; rc=1; }
  [ "$(q "$u" -At -c "SELECT verdict_item_json(i, s)::jsonb ->> 'item_identifier'
      FROM items i JOIN item_sources s ON s.id = i.id")" = kept-from-0001 ] ||
    { echo "upgrade from $first: the item is lost or not rendered"; rc=1; }
  return $rc
}

cmd_check() {
  local verdictd="" need_url=0 statements=""
  while [ $# -gt 0 ]; do
    case $1 in
      --verdictd) verdictd=$2; shift 2 ;;
      --need-url) need_url=1; shift ;;
      --statements) statements=$2; shift 2 ;;
      *) echo "sql.sh check: unknown argument $1" >&2; return 2 ;;
    esac
  done
  if [ $need_url = 1 ] && [ -z "${VERDICT_TEST_DATABASE_URL:-}" ]; then
    echo "sql.sh check: VERDICT_TEST_DATABASE_URL unset: skipped"
    return 77
  fi
  pg_url
  local db="vd_sqlchk_m_$$" fdb="vd_sqlchk_f_$$" rc=0
  fresh "$db"
  migrate_plain "$db"
  functions_of "$db"
  schema_of "$db" >"$TMPDIR_SQL/want"
  write_schema "$TMPDIR_SQL/want" "$TMPDIR_SQL/schema.sql"
  diff -u "$SCHEMA" "$TMPDIR_SQL/schema.sql" ||
    { echo "$SCHEMA: stale (differs from a database migrated from zero): run scripts/sql.sh gen"; rc=1; }
  reconcile_all check "$db" || rc=1
  scripts/transitions.sh check || rc=1
  fresh "$fdb"
  migrate_plain "$fdb"
  apply_files "$fdb" || { echo "sql/functions/: a file does not apply after the migrations"; rc=1; }
  schema_of "$fdb" >"$TMPDIR_SQL/f.schema"
  q "$(url_of "$fdb")" -At -c "$FN_QUERY" >"$TMPDIR_SQL/f.fn"
  diff -u "$TMPDIR_SQL/want" "$TMPDIR_SQL/f.schema" ||
    { echo "sql/functions/ changes the schema (tables, views, triggers) beyond functions"; rc=1; }
  if [ -n "$statements" ]; then
    statements_into "$TMPDIR_SQL/statements" "$fdb" "$statements" || rc=1
    diff -ru "$STATEMENTS" "$TMPDIR_SQL/statements" ||
      { echo "$STATEMENTS: stale (src/store/statements.c differs): run scripts/sql.sh gen"; rc=1; }
  fi
  if [ -n "$verdictd" ]; then
    check_verdictd "$verdictd" "$TMPDIR_SQL/want" "$fdb" || rc=1
    check_upgrade "$verdictd" "$TMPDIR_SQL/want" "$TMPDIR_SQL/f.fn" || rc=1
  fi
  drop_all
  [ $rc -eq 0 ] && echo "sql.sh check: sql/schema.sql and sql/functions/ are current"
  return $rc
}

cmd_stamp() {
  local want have
  want=$(migrations_md5)
  have=$(sed -n 's/^-- migrations-md5: //p' "$SCHEMA" 2>/dev/null | head -1)
  [ "$want" = "$have" ] && return 0
  echo "$SCHEMA: made from other migrations than sql/migrations/0*.sql now: run scripts/sql.sh gen"
  return 1
}

case ${1:-} in
  gen) shift; cmd_gen "$@" ;;
  check) shift; cmd_check "$@" ;;
  stamp) cmd_stamp ;;
  *) sed -n '2,17p' "$0" >&2; exit 2 ;;
esac
