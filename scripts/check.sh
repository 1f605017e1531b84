#!/usr/bin/env bash
# scripts/check.sh - the style guide's machine checks (CONTRIBUTING.md), fast and run by
# scripts/test.sh before anything is built. Each check prints what it found and the run fails
# when any check does. Usage:
# scripts/check.sh [format|banned|includes|layers|assign|length|must_use|docs|sql|php|js|js-ui]...
# (no argument: all of them). Needs git and clang-format 14 (scripts/test.sh installs
# it); php and js install their own tools when missing (Debian's php-codesniffer, ESLint from npm
# in tests/lint) and are skipped, with a message, only when that cannot be done.
set -uo pipefail
cd "$(dirname "$0")/.."

MAX_FUNCTION_LINES=60

files() { git ls-files -- "$@"; }
c_files() { files 'src/*.c' 'src/*.h' 'tests/*.c' 'tests/*.h' 'bench/*.c' 'bench/*.h'; }
src_files() { files 'src/*.c' 'src/*.h'; }

# .clang-format over src/ tests/ bench/
check_format() {
  local out
  out=$(c_files | xargs clang-format --dry-run -Werror 2>&1) && return 0
  printf '%s\n' "$out" | grep -E '^[^ ].*(warning|error):' | head -40
  echo "format: run clang-format -i on the files above (CONTRIBUTING.md, Shape)"
  return 1
}

# curl's list: no unbounded copies, no unchecked number parsing
check_banned() {
  local hits
  hits=$(c_files | xargs grep -nE '\b(atoi|atol|atoll|sprintf|vsprintf|strcpy|strcat|strtok|gets)[[:space:]]*\(')
  [ -z "$hits" ] && return 0
  printf '%s\n' "$hits"
  echo "banned: use strtol/strtoll, snprintf, vd_buf (CONTRIBUTING.md, Banned functions)"
  return 1
}

# Which layer may include which library (CONTRIBUTING.md, Layers). $1 header, $2 allowed
# path pattern (an extended regex on the path).
only_in() {
  local bad
  bad=$(src_files | xargs grep -lE "#include[[:space:]]*[<\"]([a-z0-9]+/)?$1[>\"]" |
    grep -vE "$2")
  [ -z "$bad" ] && return 0
  printf '%s\n' "$bad" | sed "s|\$|: includes $1|"
  return 1
}
check_includes() {
  local rc=0
  only_in 'microhttpd\.h' '^src/http/' || rc=1
  only_in 'libpq-fe\.h' '^src/store/' || rc=1
  only_in 'cJSON\.h' '^(src/http/|src/store/|src/service/(adjudicator_stream|adjudication_json|outcomes)\.c$|src/service/include/verdict/outcomes\.h$)' || rc=1
  only_in 'pcre2\.h' '^(src/service/adjudicator_internal\.h|src/common/redact\.c)$' || rc=1
  [ $rc -eq 0 ] || echo "includes: see CONTRIBUTING.md, Layers"
  return $rc
}

# The layers run one way (CONTRIBUTING.md, Layers): no include and no call upward
# (scripts/layers.sh; tests/layers/test_check.sh proves it fails).
check_layers() { scripts/layers.sh; }

# No assignment in a condition but the error chain `(rc = f(...))` (CONTRIBUTING.md).
check_assign() {
  local hits
  hits=$(src_files | xargs grep -nE '(^|[(!&|][[:space:]]*)\([[:space:]]*\**[A-Za-z_][A-Za-z0-9_.>[-]*\]?[[:space:]]*=[^=]' |
    grep -vE '\((rc|err)[[:space:]]*=[[:space:]]*[A-Za-z_][A-Za-z0-9_>.-]*\(' )
  [ -z "$hits" ] && return 0
  printf '%s\n' "$hits"
  echo "assign: assign first, then test (only (rc = f(...)) chains may assign in a condition)"
  return 1
}

# Functions in src/ of at most MAX_FUNCTION_LINES lines between their braces (clang-format
# puts a function's braces alone at column 0, and nothing else there).
check_length() {
  local hits
  hits=$(src_files | grep '\.c$' | xargs awk -v MAX="$MAX_FUNCTION_LINES" '
    FNR == 1 { start = 0 }
    /^\{[[:space:]]*$/ { start = FNR; name = prev; next }
    /^\}/ && start { n = FNR - start - 1
                     if (n > MAX) printf "%s:%d: %s: %d lines (max %d)\n", FILENAME, start, name, n, MAX
                     start = 0 }
    /^[A-Za-z]/ { prev = $0 }')
  [ -z "$hits" ] && return 0
  printf '%s\n' "$hits"
  echo "length: split these functions (CONTRIBUTING.md, Shape)"
  return 1
}

# Every function of a layer's public headers (src/*/include/) that returns vd_error is VD_MUST_USE.
check_must_use() {
  local hits
  hits=$(files 'src/*/include/*.h' | xargs grep -nE '^(static inline )?vd_error[[:space:]]+\*?vd_[a-z0-9_]+\(')
  [ -z "$hits" ] && return 0
  printf '%s\n' "$hits"
  echo "must_use: mark fallible functions VD_MUST_USE (error.h)"
  return 1
}

# The front door stays a front door (CONTRIBUTING.md, Documentation): README.md at most
# MAX_README_LINES lines, and neither it nor docs/ (but docs/pending/, the integrator's inbox)
# names a work session (the word stop and a number) or heads a section with an issue number.
MAX_README_LINES=250
check_docs() {
  local rc=0 n hits
  n=$(wc -l <README.md)
  if [ "$n" -gt "$MAX_README_LINES" ]; then
    echo "README.md: $n lines (max $MAX_README_LINES): move reference into docs/, history into CHANGELOG.md"
    rc=1
  fi
  hits=$(files README.md 'docs/*.md' ':!docs/pending/*' | xargs grep -nE \
    '\b[Ss]top [0-9]+\b|^#+ .*([Ii]ssue[s]? #?[0-9]+|#[0-9]+\b)')
  if [ -n "$hits" ]; then
    printf '%s\n' "$hits"
    echo "docs: no \"stop N\" and no issue numbers in headings (history goes to CHANGELOG.md)"
    rc=1
  fi
  return $rc
}

# PHP (CONTRIBUTING.md, PHP and JavaScript): every file parses (tests/lint/parse.php), and PSR-12 by
# PHP_CodeSniffer with tests/lint/phpcs.xml (WordPress's conventions in the plugin). A check
# returns 77 when its tool cannot be installed: it is skipped, not failed.
LINT=tests/lint
have_apt_tool() { # TOOL PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  (source scripts/lib.sh && vd_apt_install "$2") >/dev/null 2>&1
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "$1: not installed and the Debian package $2 could not be installed: skipped"
  return 77
}
check_php() {
  have_apt_tool php php-cli || return 77
  have_apt_tool phpcs php-codesniffer || return 77
  local rc=0
  php "$LINT/parse.php" $(files '*.php') || rc=1
  mkdir -p "$LINT/.cache"
  phpcs -q --report-width=100 --standard="$LINT/phpcs.xml" --cache="$LINT/.cache/phpcs" \
    $(files '*.php') || rc=1
  [ $rc -eq 0 ] || echo "php: phpcbf --standard=$LINT/phpcs.xml FILE fixes most layout (CONTRIBUTING.md)"
  return $rc
}

# JavaScript: ESLint (tests/lint/eslint.config.js) over the node scripts of tests/ and bench/
# (js) and over the console, ui/ (js-ui).
have_eslint() {
  if [ ! -x "$LINT/node_modules/.bin/eslint" ] ||
    [ "$LINT/package-lock.json" -nt "$LINT/node_modules/.package-lock.json" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      (source scripts/lib.sh && vd_apt_install nodejs npm) >/dev/null 2>&1
    fi
    (cd "$LINT" && npm ci --no-audit --no-fund --loglevel=error) >/dev/null 2>&1
  fi
  [ -x "$LINT/node_modules/.bin/eslint" ] && return 0
  echo "eslint: npm ci in $LINT failed (no npm or no registry): skipped"
  return 77
}
eslint_files() {
  have_eslint || return 77
  mkdir -p "$LINT/.cache"
  # the cache (by content) keeps a run over unchanged files well under a second
  "$LINT/node_modules/.bin/eslint" --config "$LINT/eslint.config.js" --max-warnings 0 \
    --cache --cache-strategy content --cache-location "$LINT/.cache/eslint" "$@"
}
check_js() { eslint_files $(files 'tests/*.js' 'tests/*.mjs' 'tests/*.cjs' 'bench/*.js' 'bench/*.mjs'); }
check_js_ui() { eslint_files $(files 'ui/*.js' 'ui/*.mjs'); }

# sql/schema.sql made from the migrations there are now (no PostgreSQL: the MD5 of sql/migrations/0*.sql
# it records; the full comparison is scripts/sql.sh check, the ctest integration.sql_schema),
# and what transitions.def makes (verdict_transition.sql, docs/architecture.md's drawing)
check_sql() {
  scripts/sql.sh stamp && scripts/transitions.sh check
}

checks=("$@")
[ ${#checks[@]} -eq 0 ] && checks=(format banned includes layers assign length must_use docs sql php js js-ui)
# The checks run side by side; each one's findings are printed together, in the order asked.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for c in "${checks[@]}"; do
  ("check_${c//-/_}" >"$out/$c" 2>&1; echo $? >"$out/$c.rc") &
done
wait
status=0
for c in "${checks[@]}"; do
  cat "$out/$c"
  rc=$(cat "$out/$c.rc")
  if [ $rc -eq 0 ]; then
    printf '[check] %-9s ok\n' "$c"
  elif [ $rc -eq 77 ]; then
    printf '[check] %-9s skipped\n' "$c"
  else
    printf '[check] %-9s FAILED\n' "$c"
    status=1
  fi
done
exit $status
